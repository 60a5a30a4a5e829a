#!/bin/bash
# Kept as run in session 14 (paths under /tmp/fcgiunix; the configurations
# tern.toml, tern1.toml (workers = 1) and ternclose.toml (keep_connections =
# false) written by hand beside fcgi-unix.sh's). Per request: the server's and
# the application's CPU, and their voluntary context switches.
# split.sh PATH C: server vs app CPU and context switches, tern and lighttpd
w=/tmp/fcgiunix; app=/tmp/peerbench/bin/fcgi-app
env FCGI_WORKERS=4 spawn-fcgi -n -s $w/app.sock -M 0666 -u nobody -g nogroup -- $app > $w/app.log 2>&1 & SP=$!
sleep 1
apps="$SP $(pgrep -P $SP)"
ticks() { for p in "$@"; do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | awk '{s+=$1} END {print s}'; }
csw() { for p in "$@"; do for t in /proc/$p/task/*; do awk '/voluntary_ctxt_switches/{s+=$2} END {print s}' $t/status; done; done | awk '{s+=$1} END {print s}'; }
for s in ${SERVERS:-tern ternclose lighttpd}; do
  if [ $s = tern1 ]; then /work/main/target/release/tern serve --config $w/tern1.toml > /dev/null 2>&1 & P=$!; port=18605
  elif [ $s = ternclose ]; then /work/main/target/release/tern serve --config $w/ternclose.toml > /dev/null 2>&1 & P=$!; port=18604
  elif [ $s = tern ]; then /work/main/target/release/tern serve --config $w/tern.toml > /dev/null 2>&1 & P=$!; port=18601
  else lighttpd -D -f $w/lighttpd.conf > /dev/null 2>&1 & P=$!; port=18602; fi
  sleep 1.5
  a0=$(ticks $apps); s0=$(ticks $P); ca0=$(csw $apps); cs0=$(csw $P)
  out=$(wrk -t1 -c$2 -d3s http://127.0.0.1:$port/fcgi/$1)
  a1=$(ticks $apps); s1=$(ticks $P); ca1=$(csw $apps); cs1=$(csw $P)
  n=$(echo "$out" | awk '/requests in/{print $1}')
  echo "$s $1 c$2 n=$n server_us=$(echo "($s1-$s0)*10000/$n" | bc -l | cut -c1-5) app_us=$(echo "($a1-$a0)*10000/$n" | bc -l | cut -c1-5) server_csw=$(echo "($cs1-$cs0)/$n" | bc -l | cut -c1-4) app_csw=$(echo "($ca1-$ca0)/$n" | bc -l | cut -c1-4)"
  kill $P; wait $P 2>/dev/null; sleep 1
done
kill $SP $(pgrep -P $SP) 2>/dev/null; wait 2>/dev/null
