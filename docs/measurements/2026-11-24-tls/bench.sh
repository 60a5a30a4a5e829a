#!/bin/bash
# TLS: tern against nginx on the same ECDSA P-256 certificate, interleaved.
# usage: bench.sh TERN_BIN ROUNDS
set -u
tern=$1; rounds=${2:-2}
cd /tmp/tlsbench
measure() { # name pid port
  local name=$1 pid=$2 port=$3
  for kind in full resumed; do
    flag=-new; [ $kind = resumed ] && flag=-reuse
    c0=$(python3 cpu.py $pid)
    out=$(openssl s_time -connect 127.0.0.1:$port $flag -www /empty.html -time 5 2>/dev/null | grep -m1 'connections in')
    c1=$(python3 cpu.py $pid)
    n=$(echo "$out" | awk '{print $1}'); secs=$(echo "$out" | awk '{print $4}' | tr -d 's;')
    echo "$name handshakes-$kind conns=$n secs=$secs rate=$(python3 -c "print(round($n/$secs))") cpu_us=$(python3 -c "print(round(($c1-$c0)*1e6/max($n,1),1))")"
  done
  for path in empty.html 64k.bin; do
    c0=$(python3 cpu.py $pid)
    out=$(wrk -t2 -c10 -d5s https://127.0.0.1:$port/$path 2>/dev/null)
    c1=$(python3 cpu.py $pid)
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    reqs=$(echo "$out" | awk '/requests in/{print $1}')
    echo "$name keepalive-$path rps=$rps cpu_us=$(python3 -c "print(round(($c1-$c0)*1e6/max($reqs,1),1))")"
  done
}
for r in $(seq 1 $rounds); do
  $tern serve --config /tmp/tlsbench/tern.toml > /tmp/tlsbench/tern.out 2>/tmp/tlsbench/tern.log &
  tp=$!; sleep 1
  measure tern $tp 18443
  kill $tp; wait $tp 2>/dev/null
  nginx -c /tmp/tlsbench/nginx.conf &
  np=$!; sleep 1
  measure nginx $np 18444
  kill $np; wait $np 2>/dev/null
done
