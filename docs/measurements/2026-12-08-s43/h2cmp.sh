#!/bin/sh
# old vs new tern over h2c, interleaved: 3.9 MB and 100 B cached files
cd /tmp/s43/probe
for round in 1 2 3; do for v in old new; do
  setsid /tmp/s43/tern-$v serve --config t.toml > logs/tern-$v.out 2>&1 & pid=$!
  sleep 0.7
  for f in f39.bin f100.bin; do
    printf "%s %s %s " $round $v $f
    /tmp/s43/tern-new bench --http2 -c 4 -d 3s http://127.0.0.1:18701/$f 2>&1 | grep -E "responses in" | sed 's/.*s: //'
  done
  kill $pid; wait $pid 2>/dev/null; sleep 0.5
done; done
