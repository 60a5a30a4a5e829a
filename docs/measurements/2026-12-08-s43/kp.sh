#!/usr/bin/env bash
# kernel profile of the server's core (1) while ab -c 1 (core 0) runs: cpu-clock samples, by symbol
path=$1; n=$2
for srv in nginx tern; do
  case $srv in
    nginx) setsid taskset -c 1 nginx -c /tmp/peerbench/conf/nginx.conf -g 'daemon off;' >/dev/null 2>&1 & pid=$!; port=18081 ;;
    tern) setsid taskset -c 1 ${TERN:-/tmp/s43/tern-pgo} serve --config ${TERN_CONF:-/tmp/s43/ptern.toml} >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1; taskset -c 0 ab -q -c 1 -n 2000 "http://127.0.0.1:$port$path" >/dev/null 2>&1
  perf record -q -e cpu-clock -C 1 -o /tmp/s43/kp-$srv.data -- taskset -c 0 ab -q -c 1 -n $n "http://127.0.0.1:$port$path" >/dev/null 2>&1
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
  echo "== $srv"; perf report -q -i /tmp/s43/kp-$srv.data --sort sym --stdio 2>/dev/null | head -40
done
