#!/bin/bash
# ab-rounds.sh FILE CONC ROUNDS PORT...: ab against each port in turn: req/s, ab's CPU us a request,
# the server's CPU us and context switches a request, and IPIs a request (RES: rescheduling, CAL:
# function calls, which a remote wake-up of an idle CPU uses) from /proc/interrupts.
# Started by hand beside it, from ../shared/bench/peers.sh's generated configs (/tmp/peerbench/conf):
# h2o on 18086, nginx on 18081, lighttpd on 18083, and tern through scripts/peers-tern.sh on any other
# port (found by its config's name, /tmp/tern-peers-PORT.toml). Scratch files go in the working directory.
f=$1 c=$2 rounds=$3; shift 3
irq() { awk '/CAL:|RES:/{print $1, $2+$3}' /proc/interrupts; }
for r in $(seq 1 $rounds); do for p in "$@"; do
  pids=$(case $p in 18086) pgrep -d, -x h2o;; 18081) pgrep -d, -x nginx;; 18083) pgrep -d, -x lighttpd;; *) pgrep -d, -f "tern-.* serve --config /tmp/tern-peers-$p.toml";; esac)
  irq > i0
  perf stat -x, -e task-clock,context-switches -p $pids -o srv.txt -- sleep 3.3 & sleep 0.1
  perf stat -x, -e task-clock,context-switches,cpu-migrations -o cli.txt ab -q -r -c $c -t 3 -n 1000000 http://127.0.0.1:$p/$f > o.txt 2>&1; wait
  irq > i1
  n=$(awk '/Complete requests/{print $3}' o.txt)
  ipi=$(paste i0 i1 | awk -v n=$n '{printf "%s%.2f ", $1, ($4-$2)/n}')
  echo "$f c=$c r$r $p rps=$(awk '/Requests per/{print $4}' o.txt) ab_us=$(awk -F, -v n=$n '/task-clock/{printf "%.1f",$1*1000/n}' cli.txt) srv_us=$(awk -F, -v n=$n '/task-clock/{printf "%.1f",$1*1000/n}' srv.txt) srv_cs=$(awk -F, -v n=$n '/context-sw/{printf "%.1f",$1/n}' srv.txt) $ipi"
done; done
