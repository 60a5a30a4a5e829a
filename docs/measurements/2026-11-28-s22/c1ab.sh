#!/bin/bash
# usage: c1ab.sh ROUNDS N C name:pid:url ...
R=$1; N=$2; C=$3; shift 3
app=$(cat /tmp/instr-peers/app.pid)
cpu() { local t=0; for p in "$@"; do for tp in /proc/$p/task/*/stat; do t=$((t + $(awk '{print $14+$15}' $tp))); done; done; echo $t; }
apps() { pgrep -f /tmp/peerbench/bin/fcgi-app | tr '\n' ' '; }
for r in $(seq 1 $R); do
  for s in "$@"; do
    IFS=: read name pid url <<< "$s"; url="${s#*:*:}"
    a0=$(cpu $(apps)); s0=$(cpu $pid)
    out=$(ab -k -c $C -n $N "$url" 2>&1)
    a1=$(cpu $(apps)); s1=$(cpu $pid)
    rps=$(echo "$out" | awk '/Requests per/{print $4}')
    echo "$r $name rps=$rps server_us=$(( (s1-s0)*10000000/N/1000 )) app_us=$(( (a1-a0)*10000000/N/1000 ))"
  done
done
