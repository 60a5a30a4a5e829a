#!/usr/bin/env bash
# run.sh's static 0 B and 64 KB rows again, four more rounds: a second look
# at the rows that were within a run's spread.
# Usage: run-static.sh TERN_BINARY RESULTS_DIR   (from the repository's root)
CASES='^static:(0K|64K)$' SECTIONS=static exec "$(dirname "$0")/run.sh" "$@"
