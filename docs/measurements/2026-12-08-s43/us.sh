#!/usr/bin/env bash
# user and system CPU per request, server pinned to core 1, ab to core 0
path=$1; n=$2
. "$(dirname "$0")/pinned.sh"
hz=$(getconf CLK_TCK)
ut() { local u=0 s=0; for p in $(pgrep -g "$1"); do read -r a b < <(awk '{print $14, $15}' /proc/$p/stat); u=$((u+a)); s=$((s+b)); done; echo "$u $s"; }
for r in 1 2 3; do for srv in nginx tern; do
  start $srv
  read -r u0 s0 < <(ut $pid)
  taskset -c 0 ab -q -c 1 -n $n "http://127.0.0.1:$port$path" >/dev/null 2>&1
  read -r u1 s1 < <(ut $pid)
  awk -v u=$((u1-u0)) -v s=$((s1-s0)) -v hz=$hz -v n=$n -v who="$r $srv" 'BEGIN {printf "%s: user %.1f sys %.1f µs a request\n", who, u/hz*1e6/n, s/hz*1e6/n}'
  stop
done; done
