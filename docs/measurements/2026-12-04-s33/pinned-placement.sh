#!/bin/bash
# usage: pinned-placement.sh TERN_BIN [ROUNDS] [PATH]   (from the repository root)
# Whether the 64 KB row's two states are where the scheduler puts the
# server and the application: tern and lighttpd, each in front of its own
# C application (common.sh), pinned with taskset: the server on CPU 0 and
# wrk -t1 -c1 on CPU 1, the application on CPU 0 beside the server
# ("together") or on CPU 1 beside wrk ("apart"); 2 s a turn, the order
# rotated. Per turn: req/s, and the server's and the application's CPU µs
# a request (/proc ticks).
set -u
tern=$(realpath "$1"); rounds=${2:-4}; path=${3:-64k}
. "$(dirname "$0")/../2026-12-03-s28/common.sh"
workdir /tmp/fcgipin
us() { for p in "$@"; do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | awk '{s+=$1} END {print s+0}'; }
turn() { # SERVER APPCPU
  local s=$1 cpu=$2 port sp app
  rm -f $w/app.sock
  env FCGI_WORKERS=4 taskset -c $cpu spawn-fcgi -n -s $w/app.sock -M 0666 -u nobody -g nogroup -- "$app_bin" >> "$w/app.log" 2>&1 & sp=$!
  sleep 0.5
  if [ $s = tern ]; then
    tern_conf 18671 "unix:$w/app.sock" > $w/t.toml; port=18671
    taskset -c 0 "$tern" serve --config $w/t.toml > $w/t.log 2>&1 & app=$!
  else
    lighttpd_conf 18672 > $w/l.conf; port=18672
    taskset -c 0 lighttpd -D -f $w/l.conf > $w/l.log 2>&1 & app=$!
  fi
  sleep 0.5
  local url=http://127.0.0.1:$port/fcgi/$path procs="$app $sp $(pgrep -P $sp)"
  taskset -c 1 wrk -t1 -c1 -d1s $url > /dev/null 2>&1
  local s0 a0 s1 a1 out n
  s0=$(us $app); a0=$(us $sp $(pgrep -P $sp))
  out=$(taskset -c 1 wrk -t1 -c1 -d2s $url 2>/dev/null)
  s1=$(us $app); a1=$(us $sp $(pgrep -P $sp))
  n=$(echo "$out" | awk '/requests in/{print $1}')
  echo "$s $([ $cpu = 0 ] && echo together || echo apart) $(echo "$out" | awk '/Requests\/sec/{print $2}') req/s server $(( (s1-s0)*10000/n )) app $(( (a1-a0)*10000/n )) µs/req"
  kill $app; wait $app 2>/dev/null; stop_app $sp; wait $sp 2>/dev/null
}
app_bin=$app
for r in $(seq 1 "$rounds"); do
  turn tern 0; turn lighttpd 1; turn tern 1; turn lighttpd 0
done
