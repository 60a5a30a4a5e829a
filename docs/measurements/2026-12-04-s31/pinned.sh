#!/bin/bash
# usage: [PIN_SRV=CPU] [PIN_APP=CPU] [WRK_PIN="taskset -c CPU"] pinned.sh SECS PATH ROUNDS TERN_BIN...
# Session 29's pinned.sh with several tern builds: wrk -t1 -c1 on /fcgi/PATH
# (64k or hello) through each build in turn and then lighttpd, ROUNDS
# times: req/s, the CPU µs a request of the server and the FastCGI
# application together, the application's alone, and wrk's p50. Session 31
# ran it as
#   PIN_SRV=1 PIN_APP=1 WRK_PIN="taskset -c 0" pinned.sh 3 hello 3 BEFORE AFTER
set -u
secs=$1; path=$2; rounds=$3; shift 3
bins=(); for b in "$@"; do bins+=("$(realpath "$b")"); done
. "$(dirname "$0")/../2026-12-03-s29/common.sh"
unix_pair /tmp/fcgicpu 18681 18683; s_unix=$app_pid
for r in $(seq $rounds); do
  for b in "${bins[@]}"; do
    "$b" serve --config $w/unix.toml > $w/t.log 2>&1 & p=$!; sleep 1; pinned_run "$(basename "$b")" 18681 $p $s_unix; kill $p; wait $p 2>/dev/null
  done
  lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; pinned_run "lighttpd" 18683 $p $s_unix; kill $p; wait $p 2>/dev/null
done
stop_app $s_unix; wait 2>/dev/null
