#!/usr/bin/env bash
# kernel time per system call (perf trace -s) of the server's processes, ab -c 1 /64k.bin on core 0
path=$1; n=$2
. "$(dirname "$0")/pinned.sh"
for srv in nginx tern; do
  start $srv
  pids=$(pgrep -g $pid | paste -sd,)
  perf trace -s -p $pids -o /tmp/s43/pt-$srv.txt -- taskset -c 0 ab -q -c 1 -n $n "http://127.0.0.1:$port$path" >/dev/null 2>&1
  stop
  echo "== $srv"; grep -E "^\s+[a-z_0-9]+\s+[0-9]+" /tmp/s43/pt-$srv.txt | awk -v n=$n '{calls[$1]+=$2; tot[$1]+=$2*$5} END {for (k in calls) printf "%-14s %6.2f calls %7.2f µs a request\n", k, calls[k]/n, tot[k]/n*1000}' | sort -k4 -rn | head -12
done
