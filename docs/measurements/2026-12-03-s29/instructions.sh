#!/bin/bash
# usage: instructions.sh [PATH] TERN_BIN...: user-space instructions per
# FastCGI request of each tern binary (scripts/instructions.sh: callgrind,
# ab -k -c1, 1,000 requests after 300), on the Unix socket to peers.sh's C
# application (4 processes; not tern's child, so not counted). PATH is the
# application's path (64k or hello; default 64k). Run from the repository.
set -eu
path=64k
case "${1:-}" in 64k|hello) path=$1; shift ;; esac
. "$(dirname "$0")/../2026-12-03-s28/common.sh"
workdir /tmp/fcgiins
tern_conf 18711 "unix:$w/app.sock" > $w/unix.toml
start_app -s $w/app.sock -M 0666
sleep 1
for bin in "$@"; do
  echo "$bin: $(scripts/instructions.sh -n 1000 http://127.0.0.1:18711/fcgi/$path -- "$bin" serve --config $w/unix.toml 2>&1 | tail -1)"
done
stop_app "$spawner"
