#!/usr/bin/env bash
# ab -c10 64k: server threads' voluntary switches per request (how often the server slept), client CPU/req
N=${N:-30000}; F=${F:-64k.bin}
vsum() { local s=0; for t in /proc/$1/task/*; do s=$((s + $(awk '/^voluntary/ {print $2}' $t/status))); done; echo $s; }
for r in $(seq ${ROUNDS:-3}); do for srv in ${SRVS:-h2o tern}; do
  case $srv in
    h2o) setsid h2o -c /tmp/peerbench/conf/h2o.yaml >/dev/null 2>&1 & pid=$!; port=18086 ;;
    tern) setsid /tmp/s46/tern-x serve --config /tmp/s46/static.toml >/dev/null 2>&1 & pid=$!; port=18091 ;;
  esac
  sleep 1; ab -n 3000 -c 10 http://127.0.0.1:$port/$F >/dev/null 2>&1
  sps=$(pgrep -g $pid)
  v0=0; for sp in $sps; do v0=$((v0 + $(vsum $sp))); done
  /usr/bin/time -f "%U %S %w %c" -o /tmp/s46/abtime ab -n $N -c 10 http://127.0.0.1:$port/$F > /tmp/s46/ab.out 2>&1
  v1=0; for sp in $sps; do v1=$((v1 + $(vsum $sp))); done
  echo "$r $srv $(awk '/Requests per second/ {print $4}' /tmp/s46/ab.out) req/s, server sleeps/req $(awk -v a=$((v1-v0)) -v n=$N 'BEGIN{printf "%.3f", a/n}'), client $(awk -v n=$N '{printf "%.1f us/req, client sleeps/req %.3f invol %.3f", ($1+$2)*1e6/n, $3/n, $4/n}' /tmp/s46/abtime)"
  kill -- -$pid 2>/dev/null; wait $pid 2>/dev/null; sleep 0.3
done; done
