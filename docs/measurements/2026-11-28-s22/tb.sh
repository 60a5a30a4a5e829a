#!/bin/bash
# tb.sh ROUNDS C URLPATH name:pid:port ... : tern bench -k, server CPU µs per request
R=$1 C=$2 P=$3; shift 3
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for r in $(seq 1 $R); do for s in "$@"; do IFS=: read n p port <<< "$s"; c0=$(cpu $p); out=$(/tmp/tern-pgo6 bench -k -c $C -d 3s http://127.0.0.1:$port$P 2>&1); c1=$(cpu $p); n_=$(echo "$out" | grep -o "[0-9]* responses" | head -1 | awk '{print $1}'); rps=$(echo "$out" | grep -o "[0-9.]* req/s" | head -1); echo "$r $n $rps srv_us=$(( (c1-c0)*10000000/(n_>0?n_:1)/1000 ))"; done; done
