#!/usr/bin/env bash
# a timeline of one server's requests: perf record of syscalls and scheduler events, all cores, 0.3 s of wrk -c1
srv=$1; path=$2
rm -f /tmp/peerbench/run/fcgi-c.sock
setsid env FCGI_WORKERS=4 spawn-fcgi -n -s /tmp/peerbench/run/fcgi-c.sock -M 0666 -u www-data -g www-data -- /tmp/peerbench/bin/fcgi-app >/dev/null 2>&1 & app=$!
sleep 0.5
case $srv in
  lighttpd) setsid lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
  *) setsid $srv serve --config ${TERN_CONF:-/tmp/s45/fterm.toml} >/dev/null 2>&1 & pid=$!; port=18090 ;;
esac
sleep 1
wrk -t1 -c10 -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
wrk -t1 -c1 -d3 http://127.0.0.1:$port$path >/dev/null 2>&1 &
w=$!
sleep 1.5
perf record -q -m 16M -a -o /tmp/s45/$(basename $srv)-x.data -e 'raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,sched:sched_wakeup,irq_vectors:call_function_single_entry,irq_vectors:reschedule_entry,irq_vectors:local_timer_entry,power:cpu_idle,timer:hrtimer_start,timer:hrtimer_cancel,timer:hrtimer_expire_entry,timer:tick_stop,timer:timer_start,irq:softirq_entry' --exclude-perf -- sleep 0.05 2>/dev/null
wait $w
kill -- -$pid; wait $pid 2>/dev/null
kill -- -$app; wait $app 2>/dev/null
perf script -i /tmp/s45/$(basename $srv)-x.data -F comm,tid,cpu,time,event,trace 2>/dev/null > /tmp/s45/$(basename $srv)-x.trace
wc -l /tmp/s45/$(basename $srv)-x.trace
