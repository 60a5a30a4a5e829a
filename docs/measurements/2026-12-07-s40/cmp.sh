#!/bin/bash
# cmp.sh FILE CONC ROUNDS: ab against h2o (18086), tern-old (18090), tern-new (18091) in turn
# Started by hand beside it: h2o with peers.sh's h2o.yaml on 18086, and tern through
# scripts/peers-tern.sh (the binary named as pgrep below) on 18090 (and 18091 for cmp.sh).
mkdir -p /tmp/s40
f=$1 c=$2 rounds=$3
for r in $(seq 1 $rounds); do for p in 18086 18090 18091; do
  pids=$(case $p in 18086) pgrep -d, -x h2o;; 18090) pgrep -f "tern-old serve";; 18091) pgrep -f "tern-new serve";; esac)
  perf stat -x, -e task-clock -p $pids -o /tmp/s40/srv.txt -- sleep 3.3 & sleep 0.1
  perf stat -x, -e task-clock -o /tmp/s40/cli.txt ab -q -r -c $c -t 3 -n 1000000 http://127.0.0.1:$p/$f > /tmp/s40/o.txt 2>&1; wait
  n=$(awk '/Complete requests/{print $3}' /tmp/s40/o.txt)
  echo "$f c=$c r$r $p rps=$(awk '/Requests per/{print $4}' /tmp/s40/o.txt) ab_us=$(awk -F, -v n=$n '/task-clock/{printf "%.1f",$1*1000/n}' /tmp/s40/cli.txt) srv_us=$(awk -F, -v n=$n '/task-clock/{printf "%.1f",$1*1000/n}' /tmp/s40/srv.txt)"
done; done
