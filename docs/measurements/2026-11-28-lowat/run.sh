#!/bin/bash
# usage: run.sh NAME PID URL [C] [D]
name=$1 pid=$2 url=$3 c=${4:-10} d=${5:-3}
st() { awk '{print $14+$15}' /proc/$pid/stat; }
cpu() { head -1 /proc/stat; }
s0=$(st); c0=$(cpu)
out=$( { /usr/bin/time -f "WRKCPU %U %S" ${WRKPIN:-} wrk -t1 -c$c -d${d}s $url; } 2>&1 )
s1=$(st); c1=$(cpu)
rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
wrk=$(echo "$out" | awk '/WRKCPU/ {print $2+$3}')
python3 - "$name" "$rps" "$wrk" "$s0" "$s1" "$c0" "$c1" "$d" <<'PY'
import sys
name,rps,wrk,s0,s1,c0,c1,d=sys.argv[1:]
rps=float(rps); d=float(d)
n=rps*d
srv=(int(s1)-int(s0))*10000/n  # ticks 10ms -> us
a=[int(x) for x in c0.split()[1:]]; b=[int(x) for x in c1.split()[1:]]
dd=[y-x for x,y in zip(a,b)]; tot=sum(dd)
# user nice system idle iowait irq softirq
print(f"{name} rps={rps:.0f} srv_us={srv:.0f} wrk_us={float(wrk)*1e6/n:.0f} idle={100*dd[3]/tot:.1f}% sys={100*dd[2]/tot:.1f}% soft={100*dd[6]/tot:.1f}% user={100*dd[0]/tot:.1f}%")
PY
