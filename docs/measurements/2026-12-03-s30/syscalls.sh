#!/bin/bash
# usage: syscalls.sh TERN_BIN [PATH] [SECS]
# As timehist.sh (the pinned row), recorded with every system call's entry
# and exit beside the scheduler's switches and wake-ups (`perf record -a`),
# for a timeline of single requests: `perf script -i OUT/NAME.sys.data`.
set -u
tern=$(realpath "$1"); path=${2:-64k}; secs=${3:-1}
. "$(dirname "$0")/../2026-12-03-s29/common.sh"
out=${OUT:-/tmp/s30/timehist}; mkdir -p "$out"
unix_pair /tmp/fcgitime 18681 18683; s_unix=$app_pid
one() { # NAME PORT SERVER_PID
  local url=http://127.0.0.1:$2/fcgi/$path
  taskset -a -pc 1 $3 > /dev/null
  for a in $s_unix $(pgrep -P $s_unix); do taskset -pc 1 $a > /dev/null; done
  wrk -t1 -c1 -d1s $url > /dev/null 2>&1
  perf record -a -o "$out/$1.sys.data" -e sched:sched_switch,sched:sched_wakeup,raw_syscalls:sys_enter,raw_syscalls:sys_exit \
    -- taskset -c 0 wrk -t1 -c1 -d${secs}s $url > "$out/$1.sys.wrk" 2> /dev/null
  perf script -i "$out/$1.sys.data" -F comm,tid,cpu,time,event,trace > "$out/$1.sys.txt" 2> /dev/null
}
"$tern" serve --config $w/unix.toml > $w/t.log 2>&1 & p=$!; sleep 1; one tern 18681 $p; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; one lighttpd 18683 $p; kill $p; wait $p 2>/dev/null
stop_app $s_unix; wait 2>/dev/null
