#!/bin/bash
# usage: cs2.sh NAME PORT SERVER_COMMAND...
# cs.sh with the server's CPU from perf stat's task-clock over the server process and its children (nginx forks its
# workers): ab -c1 -n 20000 on http://127.0.0.1:PORT/0k.html after 2,000, a new connection per request. The
# session's nginx config: worker_processes 2; access_log off; sendfile, tcp_nopush and tcp_nodelay on;
# open_file_cache max=1000; listen 127.0.0.1:PORT; root DIR (peers.sh's nginx without its other locations).
set -u
name=$1; port=$2; shift 2
"$@" > /tmp/cs2-$name.out 2>&1 & pid=$!
sleep 1.5
ab -n 2000 -c 1 http://127.0.0.1:$port/0k.html > /dev/null 2>&1
pids=$(echo $pid $(pgrep -P $pid) | tr ' ' ',')
N=20000
perf stat -x, -e task-clock,context-switches,cpu-migrations -p $pids -o /tmp/cs2-$name.txt & pp=$!
sleep 0.2
r=$(ab -n $N -c 1 http://127.0.0.1:$port/0k.html 2>&1 | awk '/Requests per/{print $4}')
kill -INT $pp; wait $pp
tc=$(awk -F, '/task-clock/{print $1}' /tmp/cs2-$name.txt); cs=$(awk -F, '/context-switches/{print $1}' /tmp/cs2-$name.txt); mg=$(awk -F, '/migrations/{print $1}' /tmp/cs2-$name.txt)
printf "%-9s %9s req/s  %.2f us/req  switches %.2f  migrations %.3f\n" $name $r "$(echo "$tc*1000/$N" | bc -l)" "$(echo "$cs/$N" | bc -l)" "$(echo "$mg/$N" | bc -l)"
kill $pid; wait $pid 2>/dev/null
