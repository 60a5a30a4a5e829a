#!/usr/bin/env bash
# req/s of wrk -t1 -cC PATH after a warm-up at WARMC connections, unpinned, ROUNDS rounds
path=$1; c=$2; d=$3; shift 3
rm -f /tmp/peerbench/run/fcgi-c.sock
setsid env FCGI_WORKERS=4 spawn-fcgi -n -s /tmp/peerbench/run/fcgi-c.sock -M 0666 -u www-data -g www-data -- /tmp/peerbench/bin/fcgi-app >/dev/null 2>&1 & app=$!
sleep 0.5
for r in $(seq ${ROUNDS:-3}); do for srv in "$@"; do
  case $srv in
    lighttpd) setsid lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
    *) setsid $srv serve --config ${TERN_CONF:-/tmp/s45/fterm.toml} >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1
  wrk -t1 -c${WARMC:-10} -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  wrk -t1 -c$c -d$d http://127.0.0.1:$port$path > /tmp/s45/wrk.txt 2>&1
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  n=$(awk '/requests in/ {print $1}' /tmp/s45/wrk.txt)
  echo "$r $(basename $srv) $(awk '/Requests\/sec/ {print $2}' /tmp/s45/wrk.txt) req/s, server $(( (t1-t0)*10000000/n )) ns/req (main thread ticks only for tern)"
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
kill -- -$app; wait $app 2>/dev/null
