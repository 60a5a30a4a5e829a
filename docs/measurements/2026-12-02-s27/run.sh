#!/usr/bin/env bash
# Session 27's proof run: tern (scripts/pgo.sh at 6021173) beside nginx, lighttpd and h2o on every static,
# FastCGI and PHP row of peers.sh, three interleaved rounds of 3 s.
# Usage: run.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
set -euo pipefail
tern=$(realpath "$1")
ROUNDS=3 DURATION=3 SERVERS="nginx lighttpd h2o" \
  EXTRA_SERVER_SECTIONS="static fcgi php" EXTRA_SERVER_NAME=tern EXTRA_SERVER_PORT=18090 \
  EXTRA_SERVER_CMD="scripts/peers-tern.sh $tern {port} {docroot}" RESULTS_DIR="$2" \
  bash ../shared/bench/peers.sh static fcgi php
