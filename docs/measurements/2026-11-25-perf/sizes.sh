#!/bin/bash
# usage: TERN=BIN sizes.sh ROUNDS: "copy" (tern with http1 = "hyper": the body copied
# into the socket) against "ternh1" (tern's loop: sendfile), by body size.
# Needs the files and configurations bench.sh leaves in /tmp/perfpeers, plus
# 128k.bin, 256k.bin and 1m.bin (head -c N /dev/urandom) and copy.toml
# (tern.toml with http1 = "hyper").
tern=$(realpath "${TERN:?set TERN to the tern binary}")
cd /tmp/perfpeers
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for r in $(seq 1 $1); do
for s in copy ternh1; do
  "$tern" serve --config $s.toml > /dev/null 2>&1 & pid=$!
  port=$( [ $s = copy ] && echo 18501 || echo 18510 )
  sleep 1
  for f in 64k.bin 128k.bin 256k.bin 1m.bin 3.9m.bin; do
    c0=$(cpu $pid); out=$(wrk -t1 -c10 -d3s http://127.0.0.1:$port/$f); c1=$(cpu $pid)
    n=$(echo "$out" | awk '/requests in/{print $1}'); rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    echo "$s $f rps=$rps cpu_us=$(echo "($c1-$c0)*10000/$n" | bc -l | cut -c1-6)"
  done
  kill $pid; wait $pid 2>/dev/null
done; done
