#!/usr/bin/env bash
# FastCGI app (4 processes) on the peers' socket; each server in turn, wrk -t1 -cC unpinned;
# system-wide events per request
path=$1; c=$2; d=$3; shift 3
rm -f /tmp/peerbench/run/fcgi-c.sock
setsid env FCGI_WORKERS=4 spawn-fcgi -n -s /tmp/peerbench/run/fcgi-c.sock -M 0666 -u www-data -g www-data -- /tmp/peerbench/bin/fcgi-app >/dev/null 2>&1 & app=$!
sleep 0.5
EV='syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_sendfile64,syscalls:sys_enter_connect,syscalls:sys_enter_accept,syscalls:sys_enter_accept4,syscalls:sys_enter_close,syscalls:sys_enter_socket,syscalls:sys_enter_poll,syscalls:sys_enter_futex,sched:sched_wakeup,sched:sched_switch,sched:sched_migrate_task,irq:softirq_entry,net:net_dev_xmit'
for srv in "$@"; do
  case $srv in
    lighttpd) setsid lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
    *) setsid $srv serve --config ${TERN_CONF:-/tmp/s45/fterm.toml} >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1
  wrk -t1 -c${WARMC:-$c} -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  perf stat -x, -a -e "$EV" -o /tmp/s45/ev.txt -- wrk -t1 -c$c -d$d http://127.0.0.1:$port$path > /tmp/s45/wrk.txt 2>&1
  n=$(awk '/requests in/ {print $1}' /tmp/s45/wrk.txt)
  echo "== $(basename $srv) $n requests $(awk '/Requests\/sec/ {print $2}' /tmp/s45/wrk.txt) req/s"
  awk -F, -v n=$n 'NF>3 && $1+0>0 {printf "%-36s %8.3f\n", $3, $1/n}' /tmp/s45/ev.txt
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done
kill -- -$app; wait $app 2>/dev/null
