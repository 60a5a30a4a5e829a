#!/bin/bash
# usage: sched.sh PATH BIN...   (from the repository root; BIN "lighttpd" runs lighttpd)
# perf sched record for 1 s inside 3 s of wrk -t1 -c1 on /fcgi/PATH (peers.sh's C application, common.sh); per task
# and per request: switches, time run, time runnable but waiting (sched delay), time asleep, from perf sched timehist.
set -u
path=$1; shift
. docs/measurements/2026-12-04-s34/common.sh
setup /tmp/fcgisched 18658
url=http://127.0.0.1:$port/fcgi/$path
for bin in "$@"; do
  serve "$bin" $url
  wrk -t1 -c1 -d1s $url > /dev/null
  wrk -t1 -c1 -d3s $url > $w/wrk.out & wp=$!
  sleep 1
  perf sched record -o $w/sched.data -- sleep 1 > /dev/null 2>&1
  wait $wp
  n=$(awk '/requests in/{print $1}' $w/wrk.out); rps=$(awk '/Requests\/sec/{print $2}' $w/wrk.out)
  echo "== $(basename $bin): $rps req/s"
  perf sched timehist -i $w/sched.data 2>/dev/null | awk -v rps=$rps 'NR>3 { task=$3; sub(/\[[0-9]+\/?[0-9]*\]$/,"",task); if (task ~ /idle/) next; w[task]+=$4; d[task]+=$5; r[task]+=$6; c[task]++ } END { for (t in c) if (r[t] > 5) printf "  %-20s switches %6.2f/req  run %6.1f us/req  sched-delay %5.1f us/req  wait %6.1f\n", t, c[t]/rps, r[t]*1000/rps, d[t]*1000/rps, w[t]*1000/rps }' | sort
  perf sched timehist -i $w/sched.data -M 2>/dev/null | grep -c migrated | sed 's/^/  migrations: /'
  unserve
done
stop_app $spawner; wait 2>/dev/null
