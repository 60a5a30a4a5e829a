#!/usr/bin/env bash
# ab1.sh: builds of tern side by side on a cached file (0 B unless -s), a
# new connection per request (ab -c C, no keep-alive), in turn for ROUNDS
# rounds: req/s and the server's CPU µs a request (/proc ticks, user +
# system).
# Usage: ab1.sh [-c C] [-n ROUNDS] [-t SECONDS] [-s BYTES] [-k] TERN_BINARY...
#   -k  keep-alive (ab -k) instead
set -euo pipefail
c=1 rounds=5 secs=3 size=0 alive=""
while getopts "c:n:t:s:k" o; do
  case $o in c) c=$OPTARG ;; n) rounds=$OPTARG ;; t) secs=$OPTARG ;; s) size=$OPTARG ;; k) alive=-k ;; *) sed -n '2,8p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
w=$(mktemp -d /tmp/ab1.XXXXXX); trap 'rm -rf "$w"' EXIT
mkdir -p "$w/www"; head -c "$size" /dev/zero > "$w/www/0k.html"
printf '[[listen]]\naddress = "127.0.0.1:18811"\n[[site]]\nroot = "%s/www"\n' "$w" > "$w/t.toml"
tck=$(getconf CLK_TCK)
for r in $(seq 1 "$rounds"); do
  for bin in "$@"; do
    "$bin" serve --config "$w/t.toml" > "$w/log" 2>&1 & pid=$!
    for _ in $(seq 1 100); do curl -fs -o /dev/null http://127.0.0.1:18811/0k.html && break; sleep 0.1; done
    ab $alive -n 2000 -c "$c" http://127.0.0.1:18811/0k.html > /dev/null 2>&1
    t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    out=$(ab $alive -t "$secs" -n 10000000 -c "$c" http://127.0.0.1:18811/0k.html 2>&1)
    t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    kill $pid; wait $pid 2>/dev/null || true
    n=$(echo "$out" | awk '/^Complete requests/{print $3}')
    rps=$(echo "$out" | awk '/^Requests per second/{print $4}')
    awk -v r="$r" -v b="$(basename "$bin")" -v n="$n" -v rps="$rps" -v t="$((t1 - t0))" -v k="$tck" \
      'BEGIN { printf "round %s %-12s %9.0f req/s %6.1f us/req\n", r, b, rps, t / k / n * 1e6 }'
  done
done
