#!/usr/bin/env bash
# kernel profile of the server's core (1) while ab -c 1 (core 0) runs: cpu-clock samples, by symbol
path=$1; n=$2
. "$(dirname "$0")/pinned.sh"
for srv in nginx tern; do
  start $srv
  perf record -q -e cpu-clock -C 1 -o /tmp/s43/kp-$srv.data -- taskset -c 0 ab -q -c 1 -n $n "http://127.0.0.1:$port$path" >/dev/null 2>&1
  stop
  echo "== $srv"; perf report -q -i /tmp/s43/kp-$srv.data --sort sym --stdio 2>/dev/null | head -40
done
