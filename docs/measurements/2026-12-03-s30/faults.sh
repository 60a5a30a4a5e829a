#!/bin/bash
# usage: faults.sh TERN_BIN [PATH] [SECS]
# Page faults (minor) a request of the server, tern then lighttpd, on
# session 29's FastCGI row (Unix socket, wrk -t1 -c1, unpinned): from
# /proc/PID/stat's minflt before and after.
set -u
tern=$(realpath "$1"); path=${2:-64k}; secs=${3:-3}
. "$(dirname "$0")/../2026-12-03-s29/common.sh"
unix_pair /tmp/fcgifaults 18681 18683; s_unix=$app_pid
minflt() { awk '{print $10}' /proc/$1/stat; }
one() { # NAME PORT SERVER_PID
  local url=http://127.0.0.1:$2/fcgi/$path f0 f1 req
  wrk -t1 -c1 -d1s $url > /dev/null 2>&1
  f0=$(minflt $3)
  req=$(wrk -t1 -c1 -d${secs}s $url | awk '/requests in/ {print $1}')
  f1=$(minflt $3)
  echo "$1: $req requests, $(echo "scale=2; ($f1 - $f0) / $req" | bc) minor faults a request"
}
"$tern" serve --config $w/unix.toml > $w/t.log 2>&1 & p=$!; sleep 1; one tern 18681 $p; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; one lighttpd 18683 $p; kill $p; wait $p 2>/dev/null
stop_app $s_unix; wait 2>/dev/null
