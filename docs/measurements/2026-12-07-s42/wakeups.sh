#!/bin/bash
# wakeups.sh PORT URL_PATH [CONC]: during an ab run (no keep-alive) against PORT, two seconds of the
# whole machine's wake-ups (sched:sched_wakeup: who woke whom, where the wakee runs) and of the
# function-call IPIs a wake-up of a halted CPU takes (irq_vectors:call_function*_entry), counted by
# context and CPU. A wake-up shown under "swapper" was carried out by the idle CPU itself, after an
# IPI or without one when the CPU was polling (cpuidle-haltpoll here) instead of halted.
p=$1 path=$2 c=${3:-10}
ab -q -r -c "$c" -t 4 -n 1000000 "http://127.0.0.1:$p/$path" > ao.txt 2>&1 &
sleep 1
perf record -q -e sched:sched_wakeup,irq_vectors:call_function_entry,irq_vectors:call_function_single_entry,irq_vectors:reschedule_entry -a -o sw.data sleep 2 2>/dev/null
wait
echo "== port $p: $(awk '/Requests per/{print $4}' ao.txt) req/s (ab over 4 s; the count below is 2 s of it)"
perf script -i sw.data -F comm,cpu,event,trace 2>/dev/null | awk '{
  if ($3 ~ /sched_wakeup/) { for (i = 4; i <= NF; i++) { if ($i ~ /^comm=/) w = $i; if ($i ~ /^target_cpu=/) t = $i }; k = $1 " " $2 " -> " w " " t }
  else k = $1 " " $2 " " $3; n[k]++ } END { for (k in n) print n[k], k }' | sort -rn | head -8
