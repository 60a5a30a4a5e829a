#!/bin/bash
# usage: wakeups.sh TERN_BIN [N] [hello|64k]: how often the FastCGI application sleeps per
# request (its processes' voluntary context switches, /proc/PID/status), at
# one connection (ab -k -c1 -n N, "Hello!" or 64 KB), behind tern on a Unix socket with
# a connection per request ("once", the default while quiet), on a Unix socket
# with kept connections ("keep": TERN_EXP_UNIX_KEEP=1, the experiment's
# switch), over TCP (kept), and behind lighttpd on the Unix socket. A count,
# so the machine's noise does not move it.
set -u
tern=$(realpath "$1"); n=${2:-5000}; path=${3:-hello}
. "$(dirname "$0")/common.sh"
workdir /tmp/fcgiwake
tern_conf 18661 "unix:$w/app.sock" > $w/unix.toml
tern_conf 18662 "127.0.0.1:18669" > $w/tcp.toml
lighttpd_conf 18663 > $w/lighttpd.conf
start_app -s $w/app.sock -M 0666; s_unix=$spawner
start_app -a 127.0.0.1 -p 18669; s_tcp=$spawner
sleep 1
vol() { for p in "$@"; do awk '/^voluntary_ctxt_switches/{print $2}' /proc/$p/status; done | awk '{s+=$1} END {print s}'; }
run() { # NAME PORT SPAWNER
  local pids="$3 $(pgrep -P $3)" url=http://127.0.0.1:$2/fcgi/$path
  ab -k -c1 -n 1000 $url > /dev/null 2>&1
  local v0; v0=$(vol $pids)
  ab -k -c1 -n "$n" $url > /dev/null 2>&1
  echo "$1: the application's sleeps per request $(echo "($(vol $pids) - $v0) / $n" | bc -l | cut -c1-5)"
}
"$tern" serve --config $w/unix.toml > $w/once.log 2>&1 & p=$!; sleep 1; run "unix, once" 18661 $s_unix; kill $p; wait $p 2>/dev/null
env TERN_EXP_UNIX_KEEP=1 "$tern" serve --config $w/unix.toml > $w/keep.log 2>&1 & p=$!; sleep 1; run "unix, keep" 18661 $s_unix; kill $p; wait $p 2>/dev/null
"$tern" serve --config $w/tcp.toml > $w/tcp.log 2>&1 & p=$!; sleep 1; run "tcp, kept" 18662 $s_tcp; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; run "lighttpd, unix" 18663 $s_unix; kill $p; wait $p 2>/dev/null
stop_app $s_unix; stop_app $s_tcp; wait 2>/dev/null
