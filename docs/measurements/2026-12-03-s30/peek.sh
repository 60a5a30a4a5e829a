#!/bin/bash
# usage: peek.sh BEFORE_BIN AFTER_BIN [ROUNDS] [N]
# ab -n N -c 1 (a connection per request) on a cached 64 KB file, the two
# builds in turn, ROUNDS times: req/s and the server's CPU µs a request
# (/proc/PID/stat ticks). What the peek after a large answer costs
# (c86918c).
set -u
before=$(realpath "$1"); after=$(realpath "$2"); rounds=${3:-3}; n=${4:-20000}
w=/tmp/s30-peek; rm -rf $w; mkdir -p $w/www; head -c 65536 /dev/zero > $w/www/64k.bin
printf '[[listen]]\naddress = "127.0.0.1:18710"\n[[site]]\nroot = "%s/www"\n' $w > $w/t.toml
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
for r in $(seq $rounds); do
  for b in before after; do
    bin=$before; [ $b = after ] && bin=$after
    "$bin" serve --config $w/t.toml > $w/$b.log 2>&1 & p=$!; sleep 1
    ab -q -n 2000 -c 1 http://127.0.0.1:18710/64k.bin > /dev/null 2>&1
    t0=$(ticks $p)
    rps=$(ab -q -n $n -c 1 http://127.0.0.1:18710/64k.bin 2>&1 | awk '/Requests per second/ {print $4}')
    t1=$(ticks $p)
    echo "$b: $rps req/s, $(echo "($t1 - $t0) * 10000 / $n" | bc -l | cut -c1-5) us CPU/request"
    kill $p; wait $p 2>/dev/null
  done
done
