#!/usr/bin/env bash
# FastCGI 64 KB, wrk -t1 -c1: lighttpd, tern (settling), tern streaming at once (XWHOLEMAX=1); req/s and server+app CPU
path=${1:-/fcgi/64k}; d=${D:-4}
app=$(cat /tmp/s46/app.pid)
for r in $(seq ${ROUNDS:-4}); do for srv in lighttpd tern stream; do
  case $srv in
    lighttpd) setsid lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
    tern) setsid /tmp/s46/tern-w serve --config /tmp/s46/fterm.toml >/dev/null 2>&1 & pid=$!; port=18090 ;;
    stream) XWHOLEMAX=1 setsid /tmp/s46/tern-w serve --config /tmp/s46/fterm.toml >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1; wrk -t1 -c1 -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  cpu() { local s=0; for p in $(pgrep -g $pid) $(pgrep -g $app); do s=$((s + $(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null || echo 0))); done; echo $s; }
  c0=$(cpu); wrk -t1 -c1 -d$d http://127.0.0.1:$port$path > /tmp/s46/wrk.txt 2>&1; c1=$(cpu)
  n=$(awk '/requests in/ {print $1}' /tmp/s46/wrk.txt)
  echo "$r $srv $(awk '/Requests\/sec/ {print $2}' /tmp/s46/wrk.txt) req/s, server+app $(( (c1-c0)*10000000/n/1000 )) us/req"
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
