#!/usr/bin/env bash
# wrk-ticks.sh: builds of tern, and lighttpd with peers.sh's configuration,
# on peers.sh's 0 B file with keep-alive (wrk -t1 -c C), in turn for ROUNDS
# rounds: req/s and the server's user and system CPU µs a request (/proc
# ticks). Every server runs throughout; each run is 5 s after 1 s of
# warm-up. Needs peers.sh's docroot (/tmp/peerbench/www) and its
# lighttpd.conf (run peers.sh once). TERN_BINARY@N runs that build with
# N workers ([server] workers; tern's default is one a core).
# Usage: wrk-ticks.sh [-c C] [-n ROUNDS] TERN_BINARY[@N]...
set -euo pipefail
c=10 rounds=8
while getopts "c:n:" o; do
  case $o in c) c=$OPTARG ;; n) rounds=$OPTARG ;; *) sed -n '2,8p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
w=$(mktemp -d /tmp/wrk-ticks.XXXXXX)
pids=() names=() ports=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$w"; }
trap stop EXIT
port=18821
for arg in "$@"; do
  bin=${arg%@*} workers=
  [ "$bin" != "$arg" ] && workers=${arg##*@}
  { [ -n "$workers" ] && printf '[server]\nworkers = %s\n' "$workers"
    printf '[[listen]]\naddress = "127.0.0.1:%s"\n[[site]]\nroot = "/tmp/peerbench/www"\n' $port; } > "$w/$port.toml"
  "$bin" serve --config "$w/$port.toml" > "$w/$port.log" 2>&1 & pids+=($!)
  names+=("$(basename "$(dirname "$bin")")/$(basename "$arg")") ports+=($port)
  port=$((port + 1))
done
sed -e "s/^server.port.*/server.port = $port/" -e '/^server.username/d' -e '/^server.groupname/d' \
  -e "s#^server.pid-file.*#server.pid-file = \"$w/l.pid\"#" -e "s#^server.errorlog.*#server.errorlog = \"$w/l.err\"#" \
  /tmp/peerbench/conf/lighttpd.conf > "$w/l.conf"
lighttpd -D -f "$w/l.conf" & pids+=($!)
names+=(lighttpd) ports+=($port)
for p in "${ports[@]}"; do
  for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$p/empty.html" && break; sleep 0.1; done
done
tck=$(getconf CLK_TCK)
for r in $(seq 1 "$rounds"); do
  for i in "${!pids[@]}"; do
    url="http://127.0.0.1:${ports[$i]}/empty.html" pid=${pids[$i]}
    wrk -t1 -c "$c" -d1 "$url" > /dev/null
    a=$(awk '{print $14, $15}' /proc/$pid/stat)
    out=$(wrk -t1 -c "$c" -d5 "$url")
    b=$(awk '{print $14, $15}' /proc/$pid/stat)
    n=$(echo "$out" | awk '/requests in/{print $1}')
    echo "$a $b" | awk -v r="$r" -v s="${names[$i]}" -v n="$n" -v k="$tck" '{
      u = ($3 - $1) / k / n * 1e6; y = ($4 - $2) / k / n * 1e6
      printf "round %s %-20s %9.0f req/s  user %5.2f  sys %5.2f  total %5.2f us/req\n", r, s, n / 5, u, y, u + y }'
  done
done
