#!/usr/bin/env bash
# wrk-ticks.sh: builds of tern, and lighttpd with peers.sh's configuration,
# on peers.sh's 0 B file with keep-alive (wrk -t1 -c C), in turn for ROUNDS
# rounds: req/s and the server's user and system CPU µs a request (/proc
# ticks). Session 37's copy does the same and takes TERN_BINARY@N for a
# build with N workers; this one runs it.
# Usage: wrk-ticks.sh [-c C] [-n ROUNDS] TERN_BINARY...
exec bash "$(dirname "$0")/../2026-12-07-s37/wrk-ticks.sh" "$@"
