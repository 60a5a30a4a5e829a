#!/usr/bin/env bash
# ab -c C -n N on 64k.bin: h2o, tern (sendfile), tern copy (XSFMAX=0); req/s, client CPU us/req, server CPU us/req
C=${C:-10}; N=${N:-30000}; F=${F:-64k.bin}; K=${K:-}
for r in $(seq ${ROUNDS:-4}); do for srv in ${SRVS:-h2o tern-sf tern-copy}; do
  case $srv in
    h2o) setsid h2o -c /tmp/peerbench/conf/h2o.yaml >/dev/null 2>&1 & pid=$!; port=18086 ;;
    tern-sf) setsid /tmp/s46/tern-x serve --config /tmp/s46/static.toml >/dev/null 2>&1 & pid=$!; port=18091 ;;
    tern-nocork) XNOCORK=1 setsid /tmp/s46/tern-x serve --config /tmp/s46/static.toml >/dev/null 2>&1 & pid=$!; port=18091 ;;
    tern-copy) XSFMAX=0 setsid /tmp/s46/tern-x serve --config /tmp/s46/static.toml >/dev/null 2>&1 & pid=$!; port=18091 ;;
  esac
  sleep 1
  ab $K -n 3000 -c $C http://127.0.0.1:$port/$F >/dev/null 2>&1
  pids=$(pgrep -g $pid | tr '\n' ' ')
  s0=0; for p in $pids; do s0=$((s0 + $(awk '{print $14+$15}' /proc/$p/stat))); done
  /usr/bin/time -f "%U %S" -o /tmp/s46/abtime ab $K -n $N -c $C http://127.0.0.1:$port/$F > /tmp/s46/ab.out 2>&1
  s1=0; for p in $pids; do s1=$((s1 + $(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null || echo 0))); done
  rps=$(awk '/Requests per second/ {print $4}' /tmp/s46/ab.out)
  cl=$(awk -v n=$N '{printf "%.1f", ($1+$2)*1e6/n}' /tmp/s46/abtime)
  echo "$r $srv $rps req/s client ${cl} us/req server $(( (s1-s0)*10000000/N/1000 )) us/req"
  kill -- -$pid 2>/dev/null; wait $pid 2>/dev/null; sleep 0.3
done; done
