#!/bin/bash
# usage: ins64.sh BIN... (from the repository root; ROUNDS, default 2)
# The 64 KB FastCGI row of session 31's instructions.sh alone, ROUNDS times
# for each build in turn: its count moves with how the answer falls over reads.
set -eu
. docs/measurements/2026-12-03-s28/common.sh
workdir /tmp/fcgiins
tern_conf 18711 "unix:$w/app.sock" > $w/unix.toml
start_app -s $w/app.sock -M 0666
sleep 1
for r in $(seq ${ROUNDS:-2}); do for bin in "$@"; do
  echo "$bin: $(scripts/instructions.sh -n 1000 http://127.0.0.1:18711/fcgi/64k -- "$bin" serve --config $w/unix.toml 2>&1 | tail -1)"
done; done
stop_app "$spawner"
