#!/bin/bash
# ab64.sh ROUNDS N C KEEP(-k or "") name:pid:port ...
R=$1 N=$2 C=$3 K=$4; shift 4
cpu() { local t=0; for p in "$@"; do for tp in /proc/$p/task/*/stat; do t=$((t + $(awk '{print $14+$15}' $tp))); done; done; echo $t; }
for r in $(seq 1 $R); do for s in "$@"; do IFS=: read name pid port <<< "$s"
  pids="$pid $(pgrep -P $pid | tr '\n' ' ')"
  c0=$(cpu $pids)
  /usr/bin/time -f "%U %S" -o /tmp/abt.txt ab $K -c $C -n $N http://127.0.0.1:$port/64k.bin > /tmp/abo.txt 2>&1
  c1=$(cpu $pids); read u s < /tmp/abt.txt
  echo "$r $name rps=$(awk '/Requests per/{print $4}' /tmp/abo.txt) srv_us=$(( (c1-c0)*10000000/N/1000 )) ab_us=$(echo "($u+$s)*1000000/$N" | bc)"
done; done
