#!/usr/bin/env bash
# Session 29's run: tern (scripts/pgo.sh at a296edd: a script's answer sent
# in the pieces it came in, and the FastCGI first read sized by the last
# answer) beside nginx, lighttpd and h2o on the rows session 28's run left
# trailing or level (static 0 B, FastCGI on the Unix socket, php-fpm) and
# FastCGI 64 KB over TCP, five interleaved rounds of 3 s.
# Usage: run.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
set -euo pipefail
tern=$(realpath "$1")
ROUNDS=5 DURATION=3 SERVERS="nginx lighttpd h2o" \
  CASES='^(static:0K|fcgi:unix-(hello|64K)|fcgi:tcp-64K|php:fpm-hello)$' \
  EXTRA_SERVER_SECTIONS="static fcgi php" EXTRA_SERVER_NAME=tern EXTRA_SERVER_PORT=18090 \
  EXTRA_SERVER_CMD="scripts/peers-tern.sh $tern {port} {docroot}" RESULTS_DIR="$2" \
  bash ../shared/bench/peers.sh static fcgi php
