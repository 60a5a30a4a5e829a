#!/usr/bin/env bash
# Runs every test binary of the workspace (or those whose path contains
# FILTER) while stopping and continuing it every PERIOD seconds (default
# 0.3), as a CI host's freezer or a shell's ^Z and fg do. A stopped and
# continued process gets EINTR from a blocking read or write that has a
# timeout, even with no signal handler (signal(7)); a test or a client that
# takes that for an answer fails for nothing the server did. Not part of
# test-all (it takes about ten minutes); run it after changing how tests or
# clients read.
# usage: scripts/stop-continue.sh [FILTER] [PERIOD]
set -uo pipefail
cd "$(dirname "$0")/.."
filter=${1:-}
period=${2:-0.3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cargo test --workspace --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"], m["manifest_path"].rsplit("/", 1)[0])
' >"$out/bins"

failed=0
while read -r bin dir; do
  case "$bin" in *"$filter"*) ;; *) continue ;; esac
  log="$out/$(basename "$bin").log"
  (cd "$dir" && exec "$bin" --test-threads 8) >"$log" 2>&1 &
  pid=$!
  # At most 20 minutes a binary.
  for _ in $(seq 1 3000); do
    sleep "$period"
    kill -0 "$pid" 2>/dev/null || break
    kill -STOP "$pid" 2>/dev/null
    sleep 0.05
    kill -CONT "$pid" 2>/dev/null
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  if wait "$pid"; then
    echo "ok     $bin"
  else
    failed=1
    echo "FAILED $bin"
    grep -E '^test .* FAILED$|panicked at' "$log" | head -20
  fi
done <"$out/bins"
exit $failed
