#!/bin/bash
# ctx.sh N C name:pid:url ... -> voluntary/involuntary ctx switches per request of server threads and apps
N=$1; C=$2; shift 2
cs() { local v=0 i=0; for p in "$@"; do for f in /proc/$p/task/*/status; do v=$((v + $(awk '/^voluntary_ctxt/{print $2}' $f))); i=$((i + $(awk '/^nonvoluntary_ctxt/{print $2}' $f))); done; done; echo "$v $i"; }
apps() { pgrep -f /tmp/peerbench/bin/fcgi-app | tr '\n' ' '; }
for s in "$@"; do
  IFS=: read name pid rest <<< "$s"; url="${s#*:*:}"
  read v0 i0 <<< "$(cs $pid)"; read av0 ai0 <<< "$(cs $(apps))"
  rps=$(ab -k -c $C -n $N "$url" 2>&1 | awk '/Requests per/{print $4}')
  read v1 i1 <<< "$(cs $pid)"; read av1 ai1 <<< "$(cs $(apps))"
  echo "$name rps=$rps server vol=$(echo "scale=2; ($v1-$v0)/$N" | bc) invol=$(echo "scale=2; ($i1-$i0)/$N" | bc) app vol=$(echo "scale=2; ($av1-$av0)/$N" | bc) invol=$(echo "scale=2; ($ai1-$ai0)/$N" | bc)"
done
