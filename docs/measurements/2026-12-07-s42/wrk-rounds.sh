#!/bin/bash
# wrk-rounds.sh FILE CONC ROUNDS PORT...: wrk (one thread, keep-alive) against each port in turn:
# req/s, wrk's CPU us a request and its system calls a request (epoll_wait, read, ioctl), the
# server's CPU us and context switches a request, and IPIs a request (RES: rescheduling, CAL:
# function calls, which a remote wake-up of an idle CPU uses) from /proc/interrupts.
# The servers are started by hand beside it, as for ../2026-12-07-s41/ab-rounds.sh: h2o on 18086,
# nginx on 18081, lighttpd on 18083 from ../shared/bench/peers.sh's configs (/tmp/peerbench/conf),
# tern through scripts/peers-tern.sh on any other port (found by its config's name,
# /tmp/tern-peers-PORT.toml). Scratch files go in the working directory.
f=$1 c=$2 rounds=$3; shift 3
irq() { awk '/CAL:|RES:/{print $1, $2+$3}' /proc/interrupts; }
ev=task-clock,context-switches,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_read,syscalls:sys_enter_ioctl
for r in $(seq 1 "$rounds"); do for p in "$@"; do
  pids=$(case $p in 18086) pgrep -d, -x h2o;; 18081) pgrep -d, -x nginx;; 18083) pgrep -d, -x lighttpd;; *) pgrep -d, -f "tern.* serve --config /tmp/tern-peers-$p.toml";; esac)
  wrk -t1 -c"$c" -d1 "http://127.0.0.1:$p/$f" > /dev/null 2>&1
  irq > i0
  perf stat -x, -e task-clock,context-switches -p "$pids" -o srv.txt -- sleep 3.3 & sleep 0.1
  perf stat -x, -e $ev -o cli.txt wrk -t1 -c"$c" -d3 "http://127.0.0.1:$p/$f" > o.txt 2>&1; wait
  irq > i1
  n=$(awk '/requests in/{print $1}' o.txt)
  ipi=$(paste i0 i1 | awk -v n="$n" '{printf "%s%.2f ", $1, ($4-$2)/n}')
  per() { awk -F, -v n="$n" -v k="$2" -v s="$3" '$3 ~ k {printf "%.*f", s, $1*(k=="task-clock"?1000:1)/n}' "$1"; }
  echo "$f c=$c r$r $p rps=$(awk '/Requests\/sec/{print $2}' o.txt) wrk_us=$(per cli.txt task-clock 2) wrk_cs=$(per cli.txt context-sw 2) epoll=$(per cli.txt epoll_wait 2) read=$(per cli.txt sys_enter_read 2) ioctl=$(per cli.txt ioctl 2) srv_us=$(per srv.txt task-clock 2) srv_cs=$(per srv.txt context-sw 2) $ipi"
done; done
