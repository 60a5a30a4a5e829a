#!/bin/bash
# usage: levels.sh ROUNDS PATH BIN... (from the repository root; BIN "lighttpd" runs lighttpd): each round, each server
# started fresh before peers.sh's C application (common.sh), 1 s of wrk -t1 -c1 on /fcgi/PATH, then 3 s counted:
# req/s and the CPU of the server and the application processes (/proc ticks) per request.
set -u
rounds=$1; path=$2; shift 2
. docs/measurements/2026-12-04-s34/common.sh
setup /tmp/fcgilev 18651
url=http://127.0.0.1:$port/fcgi/$path
for r in $(seq $rounds); do for bin in "$@"; do
  serve "$bin" $url
  wrk -t1 -c1 -d1s $url > /dev/null
  apps=$(pgrep -P $spawner)
  a0=$(ticks $sp $apps); out=$(wrk -t1 -c1 -d3s $url); a1=$(ticks $sp $apps)
  n=$(echo "$out" | awk '/requests in/{print $1}')
  printf "%s %-22s %8s req/s  server+app %.1f us/req\n" $r "$(basename $bin)" "$(echo "$out" | awk '/Requests\/sec/{print $2}')" "$(echo "($a1-$a0)*10000/$n" | bc -l)"
  unserve
done; done
stop_app $spawner; wait 2>/dev/null
