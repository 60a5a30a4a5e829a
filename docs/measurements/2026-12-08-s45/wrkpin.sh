#!/usr/bin/env bash
# server pinned to core 1, wrk -t1 -cC on core 0; CPU a request of each (task-clock) and req/s
path=$1; c=$2; d=$3; shift 3
for r in $(seq ${ROUNDS:-3}); do for srv in "$@"; do
  case $srv in
    nginx) setsid taskset -c 1 nginx -c /tmp/peerbench/conf/nginx.conf -g 'daemon off;' >/dev/null 2>&1 & pid=$!; port=18081 ;;
    lighttpd) setsid taskset -c 1 lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
    h2o) setsid taskset -c 1 h2o -c /tmp/peerbench/conf/h2o.conf >/dev/null 2>&1 & pid=$!; port=18084 ;;
    *) setsid taskset -c 1 $srv serve --config /tmp/s45/ptern.toml >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1
  taskset -c 0 wrk -t1 -c$c -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  pids=$(pgrep -g $pid | paste -sd,)
  taskset -c 0 perf stat -x, -e task-clock -o /tmp/s45/wrk-ts.txt -- wrk -t1 -c$c -d$d http://127.0.0.1:$port$path > /tmp/s45/wrk.txt 2>&1 &
  wp=$!
  perf stat -x, -e task-clock,context-switches -p $pids -o /tmp/s45/srv-ts.txt -- sleep $((d-1))
  wait $wp
  n=$(awk '/requests in/ {print $1}' /tmp/s45/wrk.txt); rps=$(awk '/Requests\/sec/ {print $2}' /tmp/s45/wrk.txt)
  secs=$((d-1))
  stc=$(awk -F, '/task-clock/ {print $1}' /tmp/s45/srv-ts.txt); scs=$(awk -F, '/context-switches/ {print $1}' /tmp/s45/srv-ts.txt)
  wtc=$(awk -F, '/task-clock/ {print $1}' /tmp/s45/wrk-ts.txt)
  awk -v who="$r $(basename $srv)" -v rps=$rps -v n=$n -v stc=$stc -v wtc=$wtc -v scs=$scs -v s=$secs 'BEGIN {printf "%-12s %9.0f req/s  server %6.2f µs/req  cs %.3f/req  wrk %6.2f µs/req\n", who, rps, stc*1000/(rps*s), scs/(rps*s), wtc*1000/n}'
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
