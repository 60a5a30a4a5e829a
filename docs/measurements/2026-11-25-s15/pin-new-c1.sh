#!/bin/bash
# pin-new-c1.sh: new connection per request, c=1, 0 B: the server on CPU 1, ab on CPU 0
# Kept as run in session 15: /tmp/tern-bin2 is the build under test; /tmp/perfpeers
# holds the configurations bench.sh (../../2026-11-24-perf/bench.sh) writes.
w=/tmp/perfpeers
cpu() { local s=0; for p in $(pgrep -g $(ps -o pgid= $1 | tr -d ' ')); do s=$((s + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $s; }
for r in 1 2 3; do for s in tern floor nginx lighttpd h2o; do
  case $s in
    tern) setsid taskset -c 1 /tmp/tern-bin2 serve --config $w/tern.toml > /dev/null 2>&1 & port=18501;;
    floor) setsid taskset -c 1 /work/main/target/release/examples/floor 127.0.0.1:18505 > /dev/null 2>&1 & port=18505;;
    nginx) setsid taskset -c 1 nginx -c $w/nginx.conf > /dev/null 2>&1 & port=18502;;
    lighttpd) setsid taskset -c 1 lighttpd -D -f $w/lighttpd.conf > /dev/null 2>&1 & port=18503;;
    h2o) setsid taskset -c 1 h2o -c $w/h2o.conf > /dev/null 2>&1 & port=18504;;
  esac
  P=$!; sleep 1
  c0=$(cpu $P); out=$(taskset -c 0 ab -q -c1 -t3 -n 1000000 http://127.0.0.1:$port/0k.html 2>/dev/null); c1=$(cpu $P)
  n=$(echo "$out" | awk '/Complete requests/{print $3}'); rps=$(echo "$out" | awk '/Requests per second/{print $4}')
  echo "$s pinned new-c1 rps=$rps cpu_us=$(echo "($c1-$c0)*10000/$n" | bc -l | cut -c1-5)"
  kill -- -$(ps -o pgid= $P | tr -d ' ') 2>/dev/null; sleep 0.7
done; done
