#!/usr/bin/env bash
# The static rows of run.sh again, four more rounds: a second look at the
# rows that were within a run's spread (0 B keep-alive at c=10).
# Usage: run-static.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
set -euo pipefail
tern=$(realpath "$1")
ROUNDS=${ROUNDS:-4} DURATION=3 SERVERS="nginx lighttpd h2o" \
  CASES='^static:(0K|64K)$' \
  EXTRA_SERVER_SECTIONS="static" EXTRA_SERVER_NAME=tern EXTRA_SERVER_PORT=18090 \
  EXTRA_SERVER_CMD="scripts/peers-tern.sh $tern {port} {docroot}" RESULTS_DIR="$2" \
  bash ../shared/bench/peers.sh static
