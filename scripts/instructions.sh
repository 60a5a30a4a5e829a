#!/usr/bin/env bash
# instructions.sh: user-space instructions per request of a server, counted
# by valgrind's callgrind. On a shared, noisy machine a socket benchmark moves
# 5-10% between runs; this count repeats to within a few instructions, so a
# change of 1% in what the server's own code costs per request shows. Not so
# where tern waits on an application outside it (FastCGI): under valgrind
# its answer may take more reads and parks from one run to the next (the 64
# KB FastCGI row counted 40,546-46,050 in session 46): count such a row
# three times and compare the lowest.
#
# Usage: scripts/instructions.sh [-n REQUESTS] [-H FIELD]... [-p FILE] [-N] [-b] [-k] [-o PREFIX] URL -- COMMAND...
#   COMMAND runs the server in the foreground (it is run under callgrind, with
#   its children); URL is a path it serves (http://127.0.0.1:PORT/PATH).
#   -n  requests counted (2000); 300 more warm the server first
#   -H  a request header field ("Name: value"), as ab's -H; repeat it for a
#       browser's head (ab alone sends four fields)
#   -p  POST the file as each request's body (ab -p, Content-Type
#       application/x-www-form-urlencoded)
#   -N  a new connection per request (ab without -k): the accept, the
#       connection's setup and its close are counted with each request
#   -b  count locked instructions too (callgrind --collect-bus: atomic
#       read-modify-writes, each 20 or more cycles that an instruction
#       count does not show); by function with scripts/callgrind-costs.py
#       -e Ge
#   -k  keep the callgrind files (PREFIX.PID.1): read them with
#       callgrind_annotate --inclusive=yes PREFIX.PID.1, or by function's own
#       cost and by caller with scripts/callgrind-costs.py PREFIX.PID.1 -n N
#   -o  where those files go (/tmp/instructions)
# The client is `ab -k -c 1` (keep-alive, one connection, HTTP/1.0; -N: ab -c 1), outside
# valgrind; what is counted is every instruction the server's processes run
# in user space between the warm-up and the end: its runtime, its parsing,
# its handlers, its allocator and libc, and the application behind it when
# that is one of its children. The kernel's share is not counted: compare it
# with `perf` or the CPU seconds per request of a benchmark.
# Examples (docs/PERFORMANCE.md, "Instructions per request"):
#   scripts/instructions.sh http://127.0.0.1:18601/0k.html -- target/release/tern serve --config t.toml
#   scripts/instructions.sh http://127.0.0.1:18602/0k.html -- lighttpd -D -f lighttpd.conf
set -euo pipefail
n=2000 keep=0 prefix=/tmp/instructions fields=() alive=-k bus=()
while getopts "n:H:p:Nbko:" opt; do
  case $opt in
    n) n=$OPTARG ;;
    H) fields+=(-H "$OPTARG") ;;
    p) fields+=(-p "$OPTARG" -T application/x-www-form-urlencoded) ;;
    N) alive="" ;;
    b) bus=(--collect-bus=yes) ;;
    k) keep=1 ;;
    o) prefix=$OPTARG ;;
    *) sed -n '2,33p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
url=${1:?URL}; shift
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "no server command" >&2; exit 2; }
for tool in valgrind callgrind_control ab curl; do
  command -v $tool >/dev/null || { echo "$tool is needed (apt-get install valgrind apache2-utils curl)" >&2; exit 2; }
done
rm -f "$prefix".*
valgrind --tool=callgrind --trace-children=yes "${bus[@]}" --callgrind-out-file="$prefix.%p" "$@" >"$prefix.log" 2>&1 &
vg=$!
# The processes valgrind runs: the server and any children it started.
servers() { pgrep -f -- "--callgrind-out-file=$prefix" || true; }
stop() { for p in $(servers); do kill "$p" 2>/dev/null || true; done; kill $vg 2>/dev/null || true; wait $vg 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 1 240); do
  curl -fs -o /dev/null "$url" && break
  kill -0 $vg 2>/dev/null || { echo "the server exited: $prefix.log" >&2; exit 1; }
  sleep 0.25
done
ab $alive -n 300 -c 1 "${fields[@]}" "$url" >/dev/null 2>&1
for p in $(servers); do callgrind_control -z "$p" >/dev/null 2>&1; done
out=$(ab $alive -n "$n" -c 1 "${fields[@]}" "$url" 2>&1)
for p in $(servers); do callgrind_control -d "$p" >/dev/null 2>&1; done
failed=$(echo "$out" | awk '/^Failed requests/{print $3}')
non2xx=$(echo "$out" | awk '/^Non-2xx/{print $3}')
# A dump is written once valgrind next runs the process: wait for every file.
for _ in $(seq 1 120); do
  [ "$(ls "$prefix".*.1 2>/dev/null | wc -l)" -ge "$(servers | wc -l)" ] && break
  sleep 0.5
done
sleep 1
total=0 locked=0
for f in "$prefix".*.1; do
  [ -f "$f" ] || continue
  read -r t g < <(awk '/^totals:/{print $2, ($3 == "" ? 0 : $3); exit}' "$f")
  total=$((total + ${t:-0})) locked=$((locked + ${g:-0}))
done
echo "$url: $((total / n)) instructions per request ($n requests, failed ${failed:-?}${non2xx:+, non-2xx $non2xx})"
[ ${#bus[@]} -gt 0 ] && awk -v g=$locked -v n=$n 'BEGIN { printf "locked instructions per request: %.1f\n", g / n }' || true
[ $keep = 1 ] && echo "callgrind files: $(ls "$prefix".*.1 | tr '\n' ' ')" || rm -f "$prefix".*
