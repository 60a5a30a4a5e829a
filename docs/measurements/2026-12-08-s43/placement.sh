#!/usr/bin/env bash
# placement.sh: the one-connection ab rows with the server's and the client's
# cores fixed. Each server (nginx with peers.sh's config, tern with
# scripts/peers-tern.sh) runs pinned to core 1 (all its processes and
# threads) and ab to core 0 ("apart"), or both on core 0 ("together"),
# alternating, ROUNDS rounds of N requests; server CPU per request from
# /proc (utime + stime of every process of the server, children included).
# Usage: placement.sh TERN_BINARY PATH N ROUNDS   (from the repository's root;
# needs ../shared/bench/install-peers.sh and one peers.sh run for /tmp/peerbench)
set -euo pipefail
tern=$(realpath "$1"); path=$2; n=$3; rounds=$4
hz=$(getconf CLK_TCK)
cpu_of() { # total utime+stime (ticks) of the processes in the group led by $1
  local t=0
  for p in $(pgrep -g "$1" 2>/dev/null || true); do
    [ -r /proc/$p/stat ] || continue
    t=$((t + $(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null || echo 0)))
  done
  echo $t
}
start() { # server core -> sets pid, port
  case $1 in
    nginx) setsid taskset -c "$2" nginx -c /tmp/peerbench/conf/nginx.conf -g 'daemon off;' >/dev/null 2>&1 & pid=$!; port=18081 ;;
    tern)  setsid taskset -c "$2" scripts/peers-tern.sh "$tern" 18090 /tmp/peerbench/www >/dev/null 2>&1 & pid=$!; port=18090 ;;
  esac
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port$path" && return; sleep 0.1; done
  echo "$1 did not start" >&2; exit 1
}
for r in $(seq "$rounds"); do
  for placing in apart together; do
    for s in nginx tern; do
      if [ $placing = apart ]; then score=1; else score=0; fi
      start $s $score
      taskset -c 0 ab -q -c 1 -n 2000 "http://127.0.0.1:$port$path" >/dev/null 2>&1
      before=$(cpu_of $pid)
      out=$(taskset -c 0 ab -c 1 -n "$n" "http://127.0.0.1:$port$path" 2>&1)
      after=$(cpu_of $pid)
      rps=$(echo "$out" | awk '/Requests per second/ {print $4}')
      us=$(awk -v d=$((after - before)) -v hz=$hz -v n=$n 'BEGIN {printf "%.1f", d / hz * 1e6 / n}')
      echo "round $r $placing $s: $rps req/s, server CPU $us µs a request"
      kill -- -$pid 2>/dev/null || kill $pid; wait $pid 2>/dev/null || true; sleep 0.3
    done
  done
done
