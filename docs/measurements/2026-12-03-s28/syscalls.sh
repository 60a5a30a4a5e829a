#!/bin/bash
# usage: syscalls.sh TERN_BIN [N] [hello|64k]: system calls and context
# switches per request of the server and the FastCGI application together
# (perf stat -p on their processes, for the run of ab -k -c1 -n N:
# raw_syscalls:sys_enter, context-switches), in four setups: TERN_BIN on
# the Unix socket as configured by default ("once": before 3a05bdf, a
# connection per request while quiet), KEEP_BIN with KEEP_ENV on the Unix
# socket ("keep"; by default TERN_BIN with the experiment's switch
# TERN_EXP_UNIX_KEEP=1, exp.patch), the same over TCP (kept), and lighttpd
# on the Unix socket. Counts: the machine's noise hardly moves them.
set -u
tern=$(realpath "$1"); n=${2:-5000}; path=${3:-hello}
keep_bin=${KEEP_BIN:-$tern}; keep_env=${KEEP_ENV:-TERN_EXP_UNIX_KEEP=1}
. "$(dirname "$0")/common.sh"
workdir /tmp/fcgisys
tern_conf 18671 "unix:$w/app.sock" > $w/unix.toml
tern_conf 18672 "127.0.0.1:18679" > $w/tcp.toml
lighttpd_conf 18673 > $w/lighttpd.conf
start_app -s $w/app.sock -M 0666; s_unix=$spawner
start_app -a 127.0.0.1 -p 18679; s_tcp=$spawner
sleep 1
run() { # NAME PORT SERVER_PID SPAWNER
  local url=http://127.0.0.1:$2/fcgi/$path pids
  ab -k -c1 -n 1000 $url > /dev/null 2>&1
  pids=$(echo $3 $4 $(pgrep -P $4) | tr ' ' ',')
  perf stat -x, -o $w/perf.out -e raw_syscalls:sys_enter,context-switches -p "$pids" \
    -- ab -k -c1 -n "$n" $url > /dev/null 2>&1
  awk -F, -v n="$n" -v name="$1" '$3 ~ /sys_enter/ {s=$1} $3 ~ /context/ {c=$1}
    END {printf "%s: %.2f system calls, %.2f context switches per request\n", name, s/n, c/n}' $w/perf.out
}
"$tern" serve --config $w/unix.toml > $w/once.log 2>&1 & p=$!; sleep 1; run "unix, once" 18671 $p $s_unix; kill $p; wait $p 2>/dev/null
env $keep_env "$keep_bin" serve --config $w/unix.toml > $w/keep.log 2>&1 & p=$!; sleep 1; run "unix, keep" 18671 $p $s_unix; kill $p; wait $p 2>/dev/null
env $keep_env "$keep_bin" serve --config $w/tcp.toml > $w/tcp.log 2>&1 & p=$!; sleep 1; run "tcp, kept" 18672 $p $s_tcp; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; run "lighttpd, unix" 18673 $p $s_unix; kill $p; wait $p 2>/dev/null
stop_app $s_unix; stop_app $s_tcp; wait 2>/dev/null
