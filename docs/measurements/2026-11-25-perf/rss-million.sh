#!/bin/bash
# usage: rss-million.sh TERN_BIN: tern's resident memory after a warm-up and
# after each further million-odd requests (wrk -c10, keep-alive, over four
# paths: a 0 B and a 64 KB file cached, the same two with the cache off), so
# growth per request shows. Prints RSS in KiB.
set -u
tern=$(realpath "$1")
w=/tmp/rssmillion
rm -rf $w; mkdir -p $w/www/on $w/www/off
: > $w/www/on/0k.html; head -c 65536 /dev/urandom > $w/www/on/64k.bin
cp $w/www/on/* $w/www/off/
cat > $w/tern.toml <<T
[[listen]]
address = "127.0.0.1:18701"
[[site]]
root = "$w/www"
[[site.route]]
prefix = "/off"
handler = "static"
root = "$w/www"
cache = false
T
"$tern" serve --config $w/tern.toml > $w/tern.log 2>&1 & pid=$!
sleep 1
rss() { awk '/VmRSS/{print $2}' /proc/$pid/status; }
load() { # seconds: the four paths in turn, wrk -c10
  for p in on/0k.html on/64k.bin off/0k.html off/64k.bin; do
    wrk -t1 -c10 -d$1s http://127.0.0.1:18701/$p | awk -v p=$p '/requests in/{print "  " p ": " $1 " requests"}'
  done
}
load 1; echo "after warm-up: $(rss) KiB"
for i in 1 2 3; do load 4; echo "after round $i: $(rss) KiB"; done
kill $pid; wait $pid 2>/dev/null
