#!/bin/bash
# usage: [PIN_SRV=CPU] [PIN_APP=CPU] [WRK_PIN="taskset -c CPU"] pinned.sh TERN_BIN [SECS] [PATH] [ROUNDS]
# wrk -t1 -c1 on /fcgi/PATH (64k or hello), tern then lighttpd in turn,
# ROUNDS times: req/s, the CPU µs per request of the server and the
# FastCGI application together (/proc/PID/stat ticks), the application's
# alone, and wrk's p50. PIN_SRV and PIN_APP pin every thread of the server
# and the application's processes (taskset) before each run; WRK_PIN runs
# wrk under the given command. Session 29 ran it as
#   PIN_SRV=1 PIN_APP=1 WRK_PIN="taskset -c 0" pinned.sh BIN 3 64k 3
# (server and application sharing CPU 1, wrk alone on CPU 0; pinned.txt).
set -u
tern=$(realpath "$1"); secs=${2:-5}; path=${3:-64k}; rounds=${4:-3}
. "$(dirname "$0")/common.sh"
unix_pair /tmp/fcgicpu 18681 18683; s_unix=$app_pid
for r in $(seq $rounds); do
"$tern" serve --config $w/unix.toml > $w/t.log 2>&1 & p=$!; sleep 1; pinned_run "tern" 18681 $p $s_unix; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; pinned_run "lighttpd" 18683 $p $s_unix; kill $p; wait $p 2>/dev/null
done
stop_app $s_unix; wait 2>/dev/null
