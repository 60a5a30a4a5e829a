which=$1; n=$2
if [ $which = mini ]; then setsid taskset -c 1 /tmp/s44/mini2 18095 T /tmp/peerbench/www/64k.bin >/dev/null 2>&1 & sleep 0.3; pid=$(pgrep -n -f "mini2 18095"); port=18095; path=/x
elif [ $which = nginx ]; then setsid taskset -c 1 nginx -c /tmp/peerbench/conf/nginx.conf -g 'daemon off;' >/dev/null 2>&1 & sleep 1; pid=$(pgrep -o -f "nginx -c /tmp/peerbench"); port=18081; path=/64k.bin
else setsid taskset -c 1 /tmp/s44/$which serve --config /tmp/s44/ptern.toml >/dev/null 2>&1 & sleep 1; pid=$(pgrep -n -f "$which serve"); port=18090; path=/64k.bin; fi
taskset -c 0 ab -q -c 1 -n 2000 http://127.0.0.1:$port$path >/dev/null 2>&1
perf stat -x, -C 1 -e 'irq:*,timer:*,net:*,skb:*,sock:*,tcp:*,sched:sched_wakeup,sched:sched_switch,raw_syscalls:sys_enter,exceptions:*,tlb:*,workqueue:workqueue_execute_start,rcu:rcu_utilization' -o /tmp/s44/pstat-$which.txt -- taskset -c 0 ab -q -c 1 -n $n http://127.0.0.1:$port$path >/dev/null 2>&1
kill $pid; sleep 0.5
