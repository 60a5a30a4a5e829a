#!/bin/sh
# usage: measure.sh TERN_BIN ; runs tern (release) and nginx with the same cert.

T=$1
cd /tmp/benchtls
$T serve --root www --listen 127.0.0.1:28443 --tls-cert cert.pem --tls-key key.pem --workers 2 > serve.log 2>&1 &
TP=$!
nginx -p /tmp/benchtls/nginx/run/ -c /tmp/benchtls/nginx/nginx.conf -e /tmp/benchtls/nginx/logs/error.log -g 'daemon off;' &
NP=$!
sleep 2
for round in 1 2; do
for name in tern nginx; do
  if [ $name = tern ]; then PID=$TP; PORT=28443; else PID=$NP; PORT=28444; fi
  for c in 1 10; do
    for mode in "" "--no-resume" "-k"; do
      out=$($T bench -q --cacert ca.pem -d 3s --warmup 500ms -c $c $mode --server-pid $PID https://127.0.0.1:$PORT/8k.bin)
      rps=$(echo "$out" | grep -o '[0-9.]* req/s' | head -1)
      tls=$(echo "$out" | grep 'TLS   ' | sed 's/^ *TLS *//')
      cpu=$(echo "$out" | grep 'server CPU' | sed 's/^ *server CPU *//; s/ (pid.*//')
      hs=$(echo "$out" | grep '^  handshake' | awk '{print $3}')
      echo "round $round | $name | c=$c | ${mode:-resume} | $rps | $tls | handshake p50 ${hs} ms | $cpu"
    done
  done
done
done
kill $TP $NP
wait 2>/dev/null || true
