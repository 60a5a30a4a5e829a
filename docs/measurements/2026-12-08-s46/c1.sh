#!/usr/bin/env bash
# wrk -t1 -c1 on PATH: tern cache on vs off (and lighttpd), CPU us/req of the server's process
path=${1:-/empty.html}; d=${D:-5}
for r in $(seq ${ROUNDS:-4}); do for srv in on off lighttpd; do
  case $srv in
    on) setsid /tmp/s46/tern-base serve --config /tmp/s46/static.toml >/dev/null 2>&1 & pid=$!; port=18091 ;;
    off) setsid /tmp/s46/tern-base serve --config /tmp/s46/nocache.toml >/dev/null 2>&1 & pid=$!; port=18092 ;;
    lighttpd) setsid lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
  esac
  sleep 1
  wrk -t1 -c10 -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  wrk -t1 -c${C:-1} -d$d http://127.0.0.1:$port$path > /tmp/s46/wrk.txt 2>&1
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  n=$(awk '/requests in/ {print $1}' /tmp/s46/wrk.txt)
  echo "$r $srv $(awk '/Requests\/sec/ {print $2}' /tmp/s46/wrk.txt) req/s, $(( (t1-t0)*10000000/n )) ns/req"
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
