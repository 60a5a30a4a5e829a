#!/usr/bin/env bash
# Session 33's run: session 29's run.sh (the same rows, five interleaved
# rounds of 3 s beside nginx, lighttpd and h2o), with tern built by
# scripts/pgo.sh at 270d1da (the events a read brought taken in one pass).
# Usage: run.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
exec "$(dirname "$0")/../2026-12-03-s29/run.sh" "$@"
