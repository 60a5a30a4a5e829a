#!/usr/bin/env bash
# wake-up IPIs per request (RES and CAL received by each core), server on core 1, ab -c 1 on core 0
path=$1; n=$2
. "$(dirname "$0")/pinned.sh"
irq() { awk '/RES:|CAL:|TLB:/ {r0+=$2; r1+=$3} END {print r0, r1}' /proc/interrupts; }
for r in 1 2; do for srv in nginx tern; do
  start $srv
  read -r a0 a1 < <(irq)
  taskset -c 0 ab -q -c 1 -n $n "http://127.0.0.1:$port$path" >/dev/null 2>&1
  read -r b0 b1 < <(irq)
  awk -v x=$((b0-a0)) -v y=$((b1-a1)) -v n=$n -v who="$r $srv" 'BEGIN {printf "%s: IPIs received by the client core %.2f, by the server core %.2f a request\n", who, x/n, y/n}'
  stop
done; done
