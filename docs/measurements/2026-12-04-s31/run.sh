#!/usr/bin/env bash
# Session 31's run: tern (scripts/pgo.sh at the session's end: fewer
# instructions on the FastCGI and static paths) beside nginx, lighttpd and
# h2o on the rows session 29's run left trailing or level (static 0 B,
# FastCGI on the Unix socket, php-fpm) and FastCGI 64 KB over TCP, five
# interleaved rounds of 3 s, as session 29's run.sh.
# Usage: run.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
set -euo pipefail
tern=$(realpath "$1")
ROUNDS=5 DURATION=3 SERVERS="nginx lighttpd h2o" \
  CASES='^(static:0K|fcgi:unix-(hello|64K)|fcgi:tcp-64K|php:fpm-hello)$' \
  EXTRA_SERVER_SECTIONS="static fcgi php" EXTRA_SERVER_NAME=tern EXTRA_SERVER_PORT=18090 \
  EXTRA_SERVER_CMD="scripts/peers-tern.sh $tern {port} {docroot}" RESULTS_DIR="$2" \
  bash ../shared/bench/peers.sh static fcgi php
