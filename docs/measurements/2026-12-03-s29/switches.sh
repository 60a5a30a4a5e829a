#!/bin/bash
# usage: switches.sh TERN_BIN [PATH]: voluntary and involuntary context switches per
# request of wrk, the server's threads and the application (/proc/PID/task/*/status),
# server and application pinned to CPU 1 and wrk to CPU 0, tern then lighttpd, twice
set -u
tern=$(realpath "$1"); path=${2:-64k}
. "$(dirname "$0")/common.sh"
unix_pair /tmp/fcgisw2 18751 18753; s=$app_pid
sw() { for p in "$@"; do for t in /proc/$p/task/*; do awk '/^voluntary/{v=$2} /^nonvoluntary/{n=$2} END{print v, n}' $t/status; done; done | awk '{v+=$1; n+=$2} END {print v, n}'; }
run() { # NAME PORT PID
  taskset -a -pc 1 $3 > /dev/null; for a in $s $(pgrep -P $s); do taskset -pc 1 $a > /dev/null; done
  wrk -t1 -c1 -d1s http://127.0.0.1:$2/fcgi/$path > /dev/null
  taskset -c 0 wrk -t1 -c1 -d4s http://127.0.0.1:$2/fcgi/$path > $w/wrk.out & wp=$!; sleep 0.5
  local a0 s0 w0 a1 s1 w1; a0=$(sw $s $(pgrep -P $s)); s0=$(sw $3); w0=$(sw $wp)
  sleep 3
  a1=$(sw $s $(pgrep -P $s)); s1=$(sw $3); w1=$(sw $wp)
  wait $wp; n=$(awk '/Requests\/sec/ {print $2}' $w/wrk.out)
  echo "$1: $n req/s; per request over 3 s (voluntary involuntary): wrk $(echo $w0 $w1 | awk -v n=$n '{printf "%.2f %.2f", ($3-$1)/n/3, ($4-$2)/n/3}'), server $(echo $s0 $s1 | awk -v n=$n '{printf "%.2f %.2f", ($3-$1)/n/3, ($4-$2)/n/3}'), app $(echo $a0 $a1 | awk -v n=$n '{printf "%.2f %.2f", ($3-$1)/n/3, ($4-$2)/n/3}')"
}
for r in 1 2; do
"$tern" serve --config $w/unix.toml > $w/t.log 2>&1 & p=$!; sleep 1; run tern 18751 $p; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; run lighttpd 18753 $p; kill $p; wait $p 2>/dev/null
done
stop_app $s; wait 2>/dev/null
