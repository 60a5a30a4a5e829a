#!/usr/bin/env bash
# Session 35's proof run: tern (scripts/pgo.sh at adf4268: a new
# connection's task runs before the listener is asked again) beside nginx,
# lighttpd and h2o on every static size (0 B, 64 KB, 3.9 MB), FastCGI on
# the Unix socket ("Hello!", 64 KB) and over TCP (64 KB), and php-fpm, four
# interleaved rounds of 3 s. scripts/ratios.py RESULTS_DIR/results.tsv
# SECTION [--rounds] reads it. CASES and SECTIONS narrow it (run-static.sh).
# Usage: run.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
set -euo pipefail
tern=$(realpath "$1")
sections=${SECTIONS:-static fcgi php}
ROUNDS=${ROUNDS:-4} DURATION=3 SERVERS="nginx lighttpd h2o" \
  CASES=${CASES:-'^(static:(0K|64K|3\.9MB)|fcgi:unix-(hello|64K)|fcgi:tcp-64K|php:fpm-hello)$'} \
  EXTRA_SERVER_SECTIONS="$sections" EXTRA_SERVER_NAME=tern EXTRA_SERVER_PORT=18090 \
  EXTRA_SERVER_CMD="scripts/peers-tern.sh $tern {port} {docroot}" RESULTS_DIR="$2" \
  bash ../shared/bench/peers.sh $sections
