#!/usr/bin/env bash
# FastCGI 64 KB at one connection: system calls and context switches a request of the server and of the application
path=${1:-/fcgi/64k}; d=${D:-4}
ev=syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait,syscalls:sys_enter_poll,syscalls:sys_enter_accept4,syscalls:sys_enter_connect,syscalls:sys_enter_close,context-switches,cpu-migrations
app=$(cat /tmp/s46/app.pid)
for r in $(seq ${ROUNDS:-2}); do for srv in lighttpd tern; do
  case $srv in
    lighttpd) setsid lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf >/dev/null 2>&1 & pid=$!; port=18083 ;;
    tern) setsid ${BIN:-/tmp/s46/tern-pgo} serve --config /tmp/s46/fterm.toml >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  sleep 1; wrk -t1 -c1 -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  apps=$(pgrep -g $app | tr '\n' ',' | sed 's/,$//')
  perf stat -x, -e $ev -p $pid -o /tmp/s46/ps.srv -- sleep $d & p1=$!
  perf stat -x, -e $ev -p $apps -o /tmp/s46/ps.app -- sleep $d & p2=$!
  sleep 0.1; wrk -t1 -c1 -d$((d-1)) http://127.0.0.1:$port$path > /tmp/s46/wrk.txt 2>&1
  wait $p1 $p2
  n=$(awk '/requests in/ {print $1}' /tmp/s46/wrk.txt)
  echo "$r $srv $(awk '/Requests\/sec/ {print $2}' /tmp/s46/wrk.txt) req/s"
  for who in srv app; do printf "   %s:" $who; awk -F, -v n=$n '$3 ~ /./ {split($3,a,":"); e=a[2]; if (e=="") e=$3; printf " %s %.2f", e, $1/n}' /tmp/s46/ps.$who; echo; done
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done; done
