#!/usr/bin/env bash
# task-clock (precise) of the server's processes and cpu-clock samples of core 1, ab -c 1 on core 0
path=$1; n=$2
. "$(dirname "$0")/pinned.sh"
for r in 1 2; do for srv in nginx tern; do
  start $srv
  pids=$(pgrep -g $pid | paste -sd,)
  perf stat -x, -e task-clock,context-switches -p $pids -o /tmp/s43/ts-$srv.txt -- taskset -c 0 ab -q -c 1 -n $n "http://127.0.0.1:$port$path" >/dev/null 2>&1
  awk -F, -v n=$n -v who="$r $srv" '/task-clock/ {tc=$1} /context-switches/ {cs=$1} END {printf "%s: task-clock %.1f µs a request, %.2f switches a request\n", who, tc*1000/n, cs/n}' /tmp/s43/ts-$srv.txt
  stop
done; done
