#!/usr/bin/env bash
# per run: req/s, worker CPU us/req, worker voluntary/involuntary switches per request, wrk's
path=${1:-/empty.html}; cfg=${CFG:-static}
port=$(awk -F'[:"]' '/address/ {print $3; exit}' /tmp/s46/$cfg.toml)
cs() { awk '/^voluntary/ {v=$2} /^nonvoluntary/ {n=$2} END {print v, n}' $1/status; }
for r in $(seq ${ROUNDS:-4}); do
  setsid ${BIN:-/tmp/s46/tern-base} serve --config /tmp/s46/$cfg.toml >/dev/null 2>&1 & pid=$!
  sleep 1
  wrk -t1 -c10 -d1 http://127.0.0.1:$port$path >/dev/null 2>&1
  wk=$(grep -l "worker-0" /proc/$pid/task/*/comm | head -1 | xargs dirname)
  read v0 n0 < <(cs $wk); t0=$(awk '{print $14+$15}' $wk/stat)
  wrk -t1 -c10 -d4 http://127.0.0.1:$port$path > /tmp/s46/wrk.txt 2>&1 & w=$!
  sleep 0.2; wt=$(ls -d /proc/$w/task/* | tail -1); read wv0 wn0 < <(cs $wt)
  sleep 3.5; read wv1 wn1 < <(cs $wt)
  wait $w
  read v1 n1 < <(cs $wk); t1=$(awk '{print $14+$15}' $wk/stat)
  n=$(awk '/requests in/ {print $1}' /tmp/s46/wrk.txt)
  echo "$r $(awk '/Requests\/sec/ {print $2}' /tmp/s46/wrk.txt) req/s | worker $(( (t1-t0)*10000000/n )) ns/req vol $(awk -v a=$((v1-v0)) -v n=$n 'BEGIN{printf "%.3f", a/n}') invol $(awk -v a=$((n1-n0)) -v n=$n 'BEGIN{printf "%.4f", a/n}') | wrk vol/3.5s $((wv1-wv0)) invol $((wn1-wn0))"
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done
