#!/usr/bin/env bash
# events counted on each core per request: server pinned to core 1, wrk -t1 -cC on core 0
path=$1; c=$2; d=$3; shift 3
EV='syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendfile64,syscalls:sys_enter_sendto,net:net_dev_xmit,net:netif_receive_skb,sched:sched_wakeup,sched:sched_switch,irq:softirq_entry,tcp:tcp_probe'
for srv in "$@"; do
  case $srv in
    lighttpd) setsid taskset -c 1 lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
    *) setsid taskset -c 1 $srv serve --config /tmp/s45/ptern.toml >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1
  taskset -c 0 wrk -t1 -c$c -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  perf stat -x, -A -C 0,1 -e "$EV" -o /tmp/s45/ev.txt -- taskset -c 0 wrk -t1 -c$c -d$d http://127.0.0.1:$port$path > /tmp/s45/wrk.txt 2>&1
  n=$(awk '/requests in/ {print $1}' /tmp/s45/wrk.txt)
  echo "== $(basename $srv) $n requests"
  awk -F, -v n=$n '{printf "%s %-32s %8.3f\n", $1, $4, $2/n}' /tmp/s45/ev.txt | grep -v '^#' | sort -k2,2 -k1,1
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done
