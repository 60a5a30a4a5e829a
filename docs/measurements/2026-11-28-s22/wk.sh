#!/bin/bash
# wk.sh ROUNDS C URLPATH name:pid:port ... : wrk -t1, server CPU µs per request
R=$1 C=$2 P=$3; shift 3
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
for r in $(seq 1 $R); do for s in "$@"; do IFS=: read n p port <<< "$s"; c0=$(cpu $p); out=$(wrk -t1 -c $C -d 3s http://127.0.0.1:$port$P 2>&1); c1=$(cpu $p); n_=$(echo "$out" | awk '/requests in/{print $1}'); rps=$(echo "$out" | awk '/Requests\/sec/{print $2}'); echo "$r $n wrk rps=$rps srv_us=$(( (c1-c0)*10000000/(n_>0?n_:1)/1000 ))"; done; done
