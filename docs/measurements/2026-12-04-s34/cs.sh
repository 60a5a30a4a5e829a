#!/bin/bash
# usage: cs.sh NAME PORT KEEPALIVE SERVER_COMMAND...   (KEEPALIVE: "" or -k)
# ab -c1 -n 20000 on http://127.0.0.1:PORT/0k.html (after 2,000): the server's voluntary and involuntary context
# switches and its user and system CPU (/proc ticks) per request, all its threads. The server must serve an empty
# 0k.html at PORT; the session's configs:
#   lighttpd: server.document-root = DIR, server.port = PORT, server.bind = "127.0.0.1"
#   tern:     [[listen]] address = "127.0.0.1:PORT"  [[site]] root = DIR
set -u
name=$1; port=$2; ka=$3; shift 3
"$@" > /tmp/cs-$name.out 2>&1 & pid=$!
sleep 1.5
ab $ka -n 2000 -c 1 http://127.0.0.1:$port/0k.html > /dev/null 2>&1
cs() { cat /proc/$pid/task/*/status | awk '/^voluntary_ctxt/{v+=$2} /^nonvoluntary/{n+=$2} END{print v, n}'; }
cpu() { cat /proc/$pid/task/*/stat | awk '{u+=$14; s+=$15} END{print u, s}'; }
read v0 n0 < <(cs); read u0 s0 < <(cpu)
N=20000
r=$(ab $ka -n $N -c 1 http://127.0.0.1:$port/0k.html 2>&1 | awk '/Requests per/{print $4}')
read v1 n1 < <(cs); read u1 s1 < <(cpu)
echo "$name $ka: $r req/s, voluntary $(echo "scale=3; ($v1-$v0)/$N" | bc)/req, involuntary $(echo "scale=3; ($n1-$n0)/$N" | bc)/req, cpu us/req user $(echo "scale=2; ($u1-$u0)*10000/$N" | bc) sys $(echo "scale=2; ($s1-$s0)*10000/$N" | bc)"
kill $pid; wait $pid 2>/dev/null
