#!/usr/bin/env bash
# The WebStone-SS seed experiment on this machine: one model drawn from an
# access log (gen-log.py, a synthetic news site with a CGI search), replayed
# against tern serving the same materialized site four ways: the search as
# a static file (the static-only baseline), and as a Perl CGI script that
# is trivial, takes a locked counter, or searches 4 MB of text. The
# question of the report: how does the script model change the latency of
# every page, not only of the scripted one?
#
# Rounds are interleaved (static trivial counter cpu, static trivial ...),
# each variant replayed with the same seed per round; the rounds of a
# variant are merged exactly (`tern bench merge`), and summary.py prints
# the table.
#
# Usage: run.sh TERN [ROUNDS] [SECONDS] [SESSIONS_PER_SECOND] [THINK_SCALE]
set -euo pipefail
tern=$(realpath "$1")
rounds=${2:-2}
secs=${3:-30}
rate=${4:-10}
think=${5:-0.1}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

python3 "$here/gen-log.py" >"$work/access.log"
"$tern" bench model "$work/access.log" -o "$work/model.toml" >"$work/model.txt"
variants="static trivial counter cpu"
for cost in $variants; do
  "$tern" bench model --from "$work/model.toml" --materialize "$work/$cost" --cost "$cost" >/dev/null
done

for round in $(seq "$rounds"); do
  for cost in $variants; do
    (cd "$work/$cost" && exec "$tern" serve --config routes.toml --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve-$cost.log") &
    pid=$!
    for _ in $(seq 100); do grep -q '://' "$work/serve.out" 2>/dev/null && break; sleep 0.05; done
    url=$(grep -o 'http://[0-9.:]*/' "$work/serve.out" | head -1)
    [ -n "$url" ] || { cat "$work/serve-$cost.log" >&2; exit 1; }
    echo "round $round: $cost at $url" >&2
    "$tern" bench --model "$work/model.toml" --users-per-second "$rate" --think-scale "$think" \
      -d "${secs}s" --seed "$round" --server-pid "$pid" --json -q "$url" >"$work/$cost-$round.json"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  done
done

for cost in $variants; do
  "$tern" bench merge --json "$work/$cost"-*.json >"$work/$cost.json"
done
cat "$work/model.txt"
echo
echo "replay: $rate sessions/s (poisson), think time x$think, ${secs} s per run, $rounds rounds interleaved"
python3 "$here/summary.py" "$work" $variants
