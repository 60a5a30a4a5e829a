#!/bin/bash
# usage: timehist.sh TERN_BIN [PATH] [SECS]   (OUT=DIR for its files, /tmp/s30/timehist)
# Session 29's pinned FastCGI row (pinned.sh: every thread of the server
# and the application on CPU 1, wrk -t1 -c1 alone on CPU 0, /fcgi/PATH on
# the Unix socket), tern then lighttpd, each under `perf sched record -a`
# for SECS seconds; then `perf sched timehist` of each: the requests, how
# many times and how long CPU 1 was idle (the guest halts at once when
# idle: haltpoll, guest_halt_poll_ns 0), and each process's scheduling
# delay (from its wake-up to its run: a halted CPU's wake is in it).
set -u
here=$(cd "$(dirname "$0")" && pwd)
tern=$(realpath "$1"); path=${2:-64k}; secs=${3:-2}
. "$(dirname "$0")/../2026-12-03-s29/common.sh"
out=${OUT:-/tmp/s30/timehist}; mkdir -p "$out"
unix_pair /tmp/fcgitime 18681 18683; s_unix=$app_pid
one() { # NAME PORT SERVER_PID
  local url=http://127.0.0.1:$2/fcgi/$path req
  taskset -a -pc 1 $3 > /dev/null
  for a in $s_unix $(pgrep -P $s_unix); do taskset -pc 1 $a > /dev/null; done
  wrk -t1 -c1 -d1s $url > /dev/null 2>&1
  perf sched record -a -o "$out/$1.data" -- taskset -c 0 wrk -t1 -c1 -d${secs}s $url > "$out/$1.wrk" 2> /dev/null
  req=$(awk '/requests in/ {print $1}' "$out/$1.wrk")
  perf sched timehist -i "$out/$1.data" > "$out/$1.timehist" 2> /dev/null
  perf sched timehist -s -i "$out/$1.data" > "$out/$1.summary" 2> /dev/null
  perf sched timehist -w -i "$out/$1.data" 2> /dev/null | grep -v "perf\[" > "$out/$1.w"
  # timehist's rows: time, [cpu], the task (its name may hold spaces),
  # then wait time, sch delay and run time in ms: CPU 1's idle periods
  # are the rows of <idle> on [0001].
  awk -v req=$req -v name=$1 '
    NR > 3 { c = $3; for (i = 4; i <= NF - 3; i++) c = c " " $i; sub(/\[[0-9\/]+\]$/, "", c)
      if (c ~ /^<idle>/) { if ($2 == "[0001]") { n++; t += $NF } ; next }
      k = c " " $2; runs[k]++; d[k] += $(NF-1); r[k] += $NF }
    END { printf "%s: %d requests; CPU 1 idle %.2f times a request, %.1f us a request (%.1f us each)\n", name, req, n/req, t*1000/req, t*1000/n
      for (k in runs) if (runs[k] > req/4) printf "  %-22s %5.2f runs a request, sch delay %5.1f us, run %5.1f us a run\n", k, runs[k]/req, d[k]*1000/runs[k], r[k]*1000/runs[k] }' "$out/$1.timehist"
}
"$tern" serve --config $w/unix.toml > $w/t.log 2>&1 & p=$!; sleep 1; one tern 18681 $p; kill $p; wait $p 2>/dev/null
lighttpd -D -f $w/lighttpd.conf > $w/l.log 2>&1 & p=$!; sleep 1; one lighttpd 18683 $p; kill $p; wait $p 2>/dev/null
stop_app $s_unix; wait 2>/dev/null
(cd "$out" && python3 "$here/wakes.py" tern lighttpd)
