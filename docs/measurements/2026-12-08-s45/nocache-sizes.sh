#!/bin/bash
# usage: TERN=BIN nocache-sizes.sh ROUNDS: tern with its cache on ("tern")
# and with bodies off ("nocache": open files kept), by body size, wrk -c10,
# 3 s, interleaved. Needs the configurations that
# docs/measurements/2026-11-24-perf/bench.sh leaves in /tmp/perfpeers.
tern=$(realpath "${TERN:?set TERN to the tern binary}")
cd /tmp/perfpeers
for n in 1024 4096 16384 262144; do head -c $n /dev/urandom > www/s$n.bin; done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for r in $(seq 1 "$1"); do
for s in tern nocache; do
  "$tern" serve --config $s.toml > /dev/null 2>&1 & pid=$!
  case $s in tern) port=18501;; *) port=18507;; esac
  sleep 1
  for n in 1024 4096 16384 262144; do
    c0=$(cpu $pid); out=$(wrk -t1 -c10 -d3s http://127.0.0.1:$port/s$n.bin); c1=$(cpu $pid)
    reqs=$(echo "$out" | awk '/requests in/{print $1}'); rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    echo "$r $s $n rps=$rps cpu_us=$(echo "($c1-$c0)*10000/$reqs" | bc -l | cut -c1-6)"
  done
  kill $pid; wait $pid 2>/dev/null
done; done
