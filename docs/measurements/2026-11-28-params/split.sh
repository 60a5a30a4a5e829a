#!/bin/bash
# split2.sh ROUNDS PATH C: user and system CPU per request of the server and of
# the application (4 processes), tern and lighttpd, interleaved.
w=/tmp/fcgiunix; app=/tmp/peerbench/bin/fcgi-app
rounds=${1:-3}; path=${2:-hello}; c=${3:-1}
env FCGI_WORKERS=4 spawn-fcgi -n -s $w/app.sock -M 0666 -u nobody -g nogroup -- $app > $w/app.log 2>&1 & SP=$!
sleep 1
apps="$SP $(pgrep -P $SP)"
ut() { for p in "$@"; do awk '{print $14}' /proc/$p/stat; done | awk '{s+=$1} END {print s}'; }
st() { for p in "$@"; do awk '{print $15}' /proc/$p/stat; done | awk '{s+=$1} END {print s}'; }
for r in $(seq 1 $rounds); do
for s in ${SERVERS:-tern lighttpd}; do
  case $s in
    tern) ${TERN:-/work/main/target/release/tern} serve --config $w/tern.toml > /dev/null 2>&1 & P=$!; port=18601 ;;
    before) $BEFORE serve --config $w/before.toml > /dev/null 2>&1 & P=$!; port=18603 ;;
    lighttpd) lighttpd -D -f $w/lighttpd.conf > /dev/null 2>&1 & P=$!; port=18602 ;;
  esac
  sleep 1
  wrk -t1 -c$c -d1s http://127.0.0.1:$port/fcgi/$path > /dev/null 2>&1
  a0=$(ut $P); b0=$(st $P); c0=$(ut $apps); d0=$(st $apps)
  out=$(wrk -t1 -c$c -d4s http://127.0.0.1:$port/fcgi/$path 2>/dev/null)
  a1=$(ut $P); b1=$(st $P); c1=$(ut $apps); d1=$(st $apps)
  n=$(echo "$out" | awk '/requests in/{print $1}')
  printf "%s %s c%s rps=%s server_user=%.1f server_sys=%.1f app_user=%.1f app_sys=%.1f\n" $s $path $c \
    $(echo "$out" | awk '/Requests\/sec/{print $2}') \
    $(echo "($a1-$a0)*10000/$n" | bc -l) $(echo "($b1-$b0)*10000/$n" | bc -l) \
    $(echo "($c1-$c0)*10000/$n" | bc -l) $(echo "($d1-$d0)*10000/$n" | bc -l)
  kill $P; wait $P 2>/dev/null; sleep 0.5
done; done
kill $SP $(pgrep -P $SP) 2>/dev/null; wait 2>/dev/null
