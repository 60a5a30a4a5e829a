#!/usr/bin/env bash
# Session 28's run: tern (scripts/pgo.sh at 3a05bdf, Unix-socket FastCGI
# connections kept) beside nginx, lighttpd and h2o on the rows session 27's
# proof run left trailing or level (static 0 B, FastCGI on the Unix socket,
# php-fpm), four interleaved rounds of 3 s.
# Usage: run.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
set -euo pipefail
tern=$(realpath "$1")
ROUNDS=4 DURATION=3 SERVERS="nginx lighttpd h2o" \
  CASES='^(static:0K|fcgi:unix-(hello|64K)|php:fpm-hello)$' \
  EXTRA_SERVER_SECTIONS="static fcgi php" EXTRA_SERVER_NAME=tern EXTRA_SERVER_PORT=18090 \
  EXTRA_SERVER_CMD="scripts/peers-tern.sh $tern {port} {docroot}" RESULTS_DIR="$2" \
  bash ../shared/bench/peers.sh static fcgi php
