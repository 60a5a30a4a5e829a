#!/usr/bin/env bash
# task-clock per request, pinned: nginx and tern binaries given, ab -c 1 path n
path=$1; n=$2; shift 2
TERN_CONF=/tmp/s44/ptern.toml
. "$(dirname "$0")/../2026-12-08-s43/pinned.sh"
for r in 1 2 3; do for srv in nginx "$@"; do
  if [ $srv = nginx ]; then start nginx; else TERN=$srv start tern; fi
  pids=$(pgrep -g $pid | paste -sd,)
  perf stat -x, -e task-clock,page-faults,cpu-migrations -p $pids -o /tmp/s44/ts.txt -- taskset -c 0 ab -q -c 1 -n $n "http://127.0.0.1:$port$path" > /tmp/s44/ab.txt 2>&1
  rps=$(awk '/Requests per second/ {print $4}' /tmp/s44/ab.txt)
  awk -F, -v n=$n -v who="$r $(basename $srv)" -v rps=$rps '/task-clock/ {tc=$1} /page-faults/ {pf=$1} END {printf "%s: task-clock %.1f µs a request, %.3f faults a request, %s req/s\n", who, tc*1000/n, pf/n, rps}' /tmp/s44/ts.txt
  stop
done; done
