#!/bin/bash
# paired.sh R N C: R rounds of ab -k (N requests, C concurrency) on php-cgi,
# tern and lighttpd in alternating order; each server's own CPU and its
# children's per request, from /proc/PID/stat (10 ms ticks). Set up after
# run.sh, on its docroot and configs:
#   setsid bash scripts/peers-tern.sh /tmp/tern-pgo27 18095 /tmp/peerbench/www &
#   echo $! > /tmp/probe27/tern.pid
#   setsid lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf &   # port 18083
#   echo $! > /tmp/probe27/l.pid
# paired1.txt: paired.sh 6 300 1; paired10.txt: paired.sh 8 400 10.
R=$1 N=$2 C=$3
st() { awk '{print $14+$15, $16+$17}' /proc/$1/stat; }
one() { name=$1 port=$2; pid=$(cat /tmp/probe27/$name.pid)
  read a0 c0 <<< "$(st $pid)"
  rps=$(ab -k -c $C -n $N http://127.0.0.1:$port/phpcgi/hello.php 2>&1 | awk '/Requests per/{print $4}')
  read a1 c1 <<< "$(st $pid)"
  echo "$r $name rps=$rps self_us=$(( (a1-a0)*10000/N )) children_us=$(( (c1-c0)*10000/N ))"; }
for r in $(seq 1 $R); do if [ $((r%2)) = 1 ]; then one tern 18095; one l 18083; else one l 18083; one tern 18095; fi; done
