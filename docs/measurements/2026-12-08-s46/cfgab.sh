#!/usr/bin/env bash
# wrk -t1 -cC on PATH against tern with several configs; CPU us/req of the server's processes
path=${1:-/empty.html}; d=${D:-5}; shift; cfgs=${CFGS:-"static fterm nocache"}
for r in $(seq ${ROUNDS:-4}); do for cfg in $cfgs; do
  port=$(awk -F'[:"]' '/address/ {print $3; exit}' /tmp/s46/$cfg.toml)
  setsid ${BIN:-/tmp/s46/tern-base} serve --config /tmp/s46/$cfg.toml >/dev/null 2>&1 & pid=$!
  sleep 1
  wrk -t1 -c10 -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  t0=$(awk '{print $14+$15}' /proc/$pid/stat)
  wrk -t1 -c${C:-10} -d$d http://127.0.0.1:$port$path > /tmp/s46/wrk.txt 2>&1
  t1=$(awk '{print $14+$15}' /proc/$pid/stat)
  n=$(awk '/requests in/ {print $1}' /tmp/s46/wrk.txt)
  echo "$r $cfg $(awk '/Requests\/sec/ {print $2}' /tmp/s46/wrk.txt) req/s, $(( (t1-t0)*10000000/n )) ns/req"
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
