#!/bin/bash
# usage: run2.sh NAME PID URL TOOL C [D]
name=$1 pid=$2 url=$3 tool=$4 c=$5 d=${6:-3}
st() { awk '{print $14+$15}' /proc/$pid/stat; }
s0=$(st)
if [ $tool = wrk ]; then
out=$( { /usr/bin/time -f "WRKCPU %U %S" wrk -t1 -c$c -d${d}s $url; } 2>&1 )
rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
else
out=$( { /usr/bin/time -f "WRKCPU %U %S" ab -q -t $d -n 1000000 -c $c $url; } 2>&1 )
rps=$(echo "$out" | awk '/Requests per second/ {print $4}')
fi
s1=$(st)
wrk=$(echo "$out" | awk '/WRKCPU/ {print $2+$3}')
python3 -c "
import sys
rps=float('$rps'); n=rps*$d
print('$name-$tool-c$c rps=%.0f srv_us=%.0f wrk_us=%.0f x=0' % (rps, ($s1-$s0)*10000/n, float('$wrk')*1e6/n))"
