#!/bin/bash
# usage: pstat.sh ROUNDS PATH C BIN...   (from the repository root; BIN "lighttpd" runs lighttpd)
# ab -k -c C -n N (20000) on /fcgi/PATH; the server's task-clock and switches (perf stat) per request.
# URLPATH=URL measures that URL instead (the docroot has an empty 0k.html: http://127.0.0.1:18657/0k.html).
set -u
rounds=$1; path=$2; c=$3; shift 3
. docs/measurements/2026-12-04-s34/common.sh
setup /tmp/fcgipstat 18657
url=${URLPATH:-http://127.0.0.1:$port/fcgi/$path}
N=${N:-20000}
for r in $(seq $rounds); do for bin in "$@"; do
  serve "$bin" $url
  ab -k -c $c -n 2000 $url > /dev/null 2>&1
  perf stat -x, -e task-clock,context-switches,cpu-migrations -p $sp -o $w/ps.txt & pp=$!
  sleep 0.2
  rps=$(ab -k -c $c -n $N $url 2>&1 | awk '/Requests per/{print $4}')
  kill -INT $pp; wait $pp
  tc=$(awk -F, '/task-clock/{print $1}' $w/ps.txt); cs=$(awk -F, '/context-switches/{print $1}' $w/ps.txt)
  printf "%s %-14s c=%s %8s req/s  server %.2f us/req  switches %.2f/req\n" $r "$(basename $bin)" $c $rps "$(echo "$tc*1000/$N" | bc -l)" "$(echo "$cs/$N" | bc -l)"
  unserve
done; done
stop_app $spawner; wait 2>/dev/null
