#!/bin/bash
# usage: fcgi-keep.sh TERN_BIN [ROUNDS] [SERVERS] [PATHS] [CONCS]
# The FastCGI C application (peers.sh's fcgi-app.c, 4 processes) on a Unix
# socket behind tern and lighttpd, wrk -t1 for 3 s, servers interleaved and
# their order turned each round. CPU µs per request: the server's processes
# and the application's together (/proc/PID/stat, 10 ms ticks).
# Servers: "once" is tern as configured by default; "keep" is
# KEEP_BIN (default TERN_BIN) with KEEP_ENV set (the experiment's switch,
# or nothing once the change is in); lighttpd a connection per request.
set -u
tern=$(realpath "$1"); rounds=${2:-3}; servers=${3:-"once keep lighttpd"}
paths=${4:-"hello 64k"}; concs=${5:-"1 10"}
keep_bin=${KEEP_BIN:-$tern}; keep_env=${KEEP_ENV:-TERN_EXP_UNIX_KEEP=1}
. "$(dirname "$0")/common.sh"
workdir /tmp/fcgikeep
tern_conf 18611 "unix:$w/app.sock" > $w/once.toml
tern_conf 18613 "unix:$w/app.sock" > $w/keep.toml
lighttpd_conf 18612 > $w/lighttpd.conf
start_app -s $w/app.sock -M 0666
sleep 1
apps() { echo $spawner $(pgrep -P $spawner); }
declare -A port=([once]=18611 [lighttpd]=18612 [keep]=18613)
for r in $(seq 1 "$rounds"); do
  order=$servers
  [ $((r % 2)) = 0 ] && order=$(echo $servers | tr ' ' '\n' | tac | tr '\n' ' ')
  for s in $order; do
    case $s in
      once) "$tern" serve --config $w/once.toml > $w/once.log 2>&1 & ;;
      keep) env $keep_env "$keep_bin" serve --config $w/keep.toml > $w/keep.log 2>&1 & ;;
      lighttpd) lighttpd -D -f $w/lighttpd.conf > $w/lighttpd.log 2>&1 & ;;
    esac
    pid=$!
    sleep 1
    for path in $paths; do for c in $concs; do
      pids="$pid $(apps)"
      t0=$(ticks $pids)
      out=$(wrk -t1 -c"$c" -d3s --latency http://127.0.0.1:${port[$s]}/fcgi/$path 2>/dev/null)
      t1=$(ticks $pids)
      reqs=$(echo "$out" | awk '/requests in/{print $1}')
      rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
      p99=$(echo "$out" | awk '$1=="99%"{print $2}')
      echo "$r $s $path c$c rps=$rps p99=$p99 cpu_us=$(echo "($t1-$t0)*10000/$reqs" | bc -l | cut -c1-6)"
    done; done
    kill $pid; wait $pid 2>/dev/null
    sleep 0.5
  done
done
stop_app $spawner; wait 2>/dev/null
