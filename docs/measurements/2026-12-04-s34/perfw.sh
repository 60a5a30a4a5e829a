#!/bin/bash
# usage: perfw.sh TERN_BIN [PATH]   (from the repository root; PATH 64k)
# The stacks of tern's 8-byte writes (eventfd wake-ups of a runtime's driver) while wrk -t1 -c1 runs 1 s on
# /fcgi/PATH against peers.sh's C application: perf record -e syscalls:sys_enter_write --filter 'count == 8' --call-graph dwarf.
set -u
bin=$1; path=${2:-64k}
. docs/measurements/2026-12-04-s34/common.sh
setup /tmp/fcgiperf 18656
"$bin" serve --config $w/t.toml > $w/s.log 2>&1 & sp=$!
sleep 1
for i in 1 2 3 4 5; do curl -s -o /dev/null http://127.0.0.1:$port/fcgi/$path; done
perf record -e syscalls:sys_enter_write --filter 'count == 8' --call-graph dwarf -p $sp -o $w/perf.data > $w/perf.log 2>&1 & pp=$!
sleep 2
wrk -t1 -c1 -d1s http://127.0.0.1:$port/fcgi/$path | grep Requests
sleep 0.5; kill -INT $pp; wait $pp
kill $sp; wait $sp 2>/dev/null; stop_app $spawner
perf report -i $w/perf.data --stdio --no-children -G 2>/dev/null | grep -v "^$" | head -90
