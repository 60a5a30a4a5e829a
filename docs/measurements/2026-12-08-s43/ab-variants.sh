#!/usr/bin/env bash
# task-clock per request of tern builds (and nginx), pinned to core 1, ab -c 1 on core 0, alternating
path=$1; n=$2; shift 2
for r in 1 2 3; do for b in nginx "$@"; do
  case $b in
    nginx) setsid taskset -c 1 nginx -c /tmp/peerbench/conf/nginx.conf -g 'daemon off;' >/dev/null 2>&1 & pid=$!; port=18081 ;;
    A1) setsid taskset -c 1 /tmp/s43/tern-A serve --config /tmp/s43/ptern1.toml >/dev/null 2>&1 & pid=$!; port=18090 ;;
    *) setsid taskset -c 1 /tmp/s43/tern-$b serve --config /tmp/s43/ptern.toml >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1; taskset -c 0 ab -q -c 1 -n 2000 "http://127.0.0.1:$port$path" >/dev/null 2>&1
  pids=$(pgrep -g $pid | paste -sd,)
  perf stat -x, -e task-clock -p $pids -o /tmp/s43/abv.txt -- taskset -c 0 ab -c 1 -n $n "http://127.0.0.1:$port$path" > /tmp/s43/abv-ab.txt 2>&1
  rps=$(awk '/Requests per second/ {print $4}' /tmp/s43/abv-ab.txt)
  awk -F, -v n=$n -v who="$r $b" -v rps=$rps '/task-clock/ {printf "%s: %s req/s, task-clock %.1f µs a request\n", who, rps, $1*1000/n}' /tmp/s43/abv.txt
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
