#!/bin/bash
# fraction of samples where the busiest server thread and wrk's thread share a CPU
same=0; n=0
for i in $(seq 1 25); do
  w=$(pgrep -x wrk | head -1); [ -z "$w" ] && { sleep 0.1; continue; }
  wt=$(ls /proc/$w/task | sort -n | tail -1)
  wp=$(awk '{print $39}' /proc/$w/task/$wt/stat 2>/dev/null)
  for t in /proc/$1/task/*; do c=$(cat $t/comm); case $c in tern-worker-*) tp=$(awk '{print $39}' $t/stat); echo "$c $tp" ;; esac; done > /tmp/big/psr.now
  sp=$(awk '$1=="tern-worker-0"{print $2}' /tmp/big/psr.now)
  [ "$sp" = "$wp" ] && same=$((same+1)); n=$((n+1))
  sleep 0.1
done
echo "same=$same/$n"
