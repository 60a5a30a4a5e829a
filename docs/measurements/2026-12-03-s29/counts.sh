#!/bin/bash
# usage: counts.sh TERN_BIN [path] [SECS]: system calls, context switches,
# migrations and task-clock per request of the server and the FastCGI
# application together (perf stat -p), under wrk -t1 -c1 (keep-alive) for
# SECS seconds after one of warm-up, tern then lighttpd, on the Unix socket
# (common.sh: session 28's configs and peers.sh's C application).
# The counts repeat; task-clock moves with the machine.
set -u
tern=$(realpath "$1"); path=${2:-64k}; secs=${3:-5}
. "$(dirname "$0")/common.sh"
unix_pair /tmp/fcgisysw 18691 18693; s_unix=$app_pid
run() { # NAME PORT SERVER_PID SPAWNER
  local url=http://127.0.0.1:$2/fcgi/$path pids
  wrk -t1 -c1 -d1s $url > /dev/null 2>&1
  pids=$(echo $3 $4 $(pgrep -P $4) | tr ' ' ',')
  perf stat -x, -o $w/perf.out -e raw_syscalls:sys_enter,context-switches,cpu-migrations,task-clock -p "$pids" \
    -- wrk -t1 -c1 -d${secs}s $url > $w/wrk.out 2>&1
  n=$(awk '/requests in/ {print $1}' $w/wrk.out)
  awk -F, -v n="$n" -v name="$1" '$3 ~ /sys_enter/ {s=$1} $3 ~ /context/ {c=$1}
    $3 ~ /migrations/ {m=$1} $3 ~ /task-clock/ {t=$1} END {printf "%s: %d requests, %.2f system calls, %.2f context switches, %.3f migrations, %.1f us task-clock per request\n", name, n, s/n, c/n, m/n, t*1000/n}' $w/perf.out
}
"$tern" serve --config $w/unix.toml > $w/t.log 2>&1 & p=$!; sleep 1; run "tern" 18691 $p $s_unix; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; run "lighttpd" 18693 $p $s_unix; kill $p; wait $p 2>/dev/null
stop_app $s_unix; wait 2>/dev/null
