#!/usr/bin/env bash
# tern, FastCGI 64 KB, wrk -c1, run after run: req/s, and where tern's busy worker and the busiest app process ran (sampled)
path=${1:-/fcgi/64k}; app=$(cat /tmp/s46/app.pid)
for r in $(seq ${ROUNDS:-6}); do
  setsid /tmp/s46/tern-w serve --config /tmp/s46/fterm.toml >/dev/null 2>&1 & pid=$!
  sleep 1; wrk -t1 -c1 -d1 http://127.0.0.1:18090$path >/dev/null 2>&1
  declare -A a0; for t in /proc/$pid/task/* $(for p in $(pgrep -g $app); do echo /proc/$p; done); do a0[$t]=$(awk '{print $14+$15}' $t/stat); done
  wrk -t1 -c1 -d4 http://127.0.0.1:18090$path > /tmp/s46/wrk.txt 2>&1 & w=$!
  samples=""
  for i in 1 2 3 4 5 6 7 8; do sleep 0.4
    wk=""; for t in /proc/$pid/task/*; do [ "$(cat $t/comm)" != "${t##*/}" ] && case $(cat $t/comm) in tern-worker-*) wk="$wk$(awk '{print $39}' $t/stat)";; esac; done
    ap=""; for p in $(pgrep -g $app); do ap="$ap$(awk '{print $39}' /proc/$p/stat)"; done
    wr=$(awk '{print $39}' /proc/$(pgrep -n wrk)/stat 2>/dev/null)
    samples="$samples w$wk/a$ap/c$wr"
  done
  wait $w
  busy=""; for t in /proc/$pid/task/* $(for p in $(pgrep -g $app); do echo /proc/$p; done); do d=$(( $(awk '{print $14+$15}' $t/stat) - ${a0[$t]} )); [ $d -gt 5 ] && busy="$busy $(cat $t/comm | cut -c1-13):$d"; done
  echo "$r $(awk '/Requests\/sec/ {print $2}' /tmp/s46/wrk.txt) req/s |$busy |$samples"
  kill -- -$pid; wait $pid 2>/dev/null; sleep 0.3
done
