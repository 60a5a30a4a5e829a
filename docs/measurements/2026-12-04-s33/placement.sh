#!/bin/bash
# usage: placement.sh TERN_BIN [PATH]   (from the repository root)
# tern alone in front of its own C application (common.sh), wrk -t1 -c1 for
# 3 s at a time on /fcgi/PATH (64k): twice, then three times a 1 s burst at
# c=10 (peers.sh's warm-up) followed by two such runs. Per run and per
# thread or process that ran: voluntary and involuntary switches and CPU
# µs a request (/proc ticks), to see which state a run is in.
set -u
tern=$1; path=${2:-64k}

. docs/measurements/2026-12-03-s28/common.sh
workdir /tmp/fcgiwarm
tern_conf 18651 "unix:$w/app.sock" > $w/t.toml
start_app -s $w/app.sock -M 0666
sleep 1
"$tern" serve --config $w/t.toml > $w/t.log 2>&1 & tp=$!
sleep 1
url=http://127.0.0.1:18651/fcgi/$path
snap() { # per thread: name vol nonvol utime stime
  for t in /proc/$tp/task/*; do
    printf "%s %s %s %s\n" "$(cat $t/comm | tr ' ' _)" "$(awk '/^voluntary/{print $2}' $t/status)" "$(awk '/^nonvoluntary/{print $2}' $t/status)" "$(awk '{print $14+$15}' $t/stat)"
  done | sort
  for p in $(pgrep -P $spawner); do
    printf "app%s %s %s %s\n" "$p" "$(awk '/^voluntary/{print $2}' /proc/$p/status)" "$(awk '/^nonvoluntary/{print $2}' /proc/$p/status)" "$(awk '{print $14+$15}' /proc/$p/stat)"
  done
}
run() {
  snap > $w/a; out=$(wrk -t1 -c1 -d3s $url); snap > $w/b
  n=$(echo "$out" | awk '/requests in/{print $1}')
  echo "== $1: $(echo "$out" | awk '/Requests\/sec/{print $2}') req/s"
  paste $w/a $w/b | awk -v n=$n '($8-$4)>0 { printf "%-18s vol %.2f nonvol %.2f cpu %.1f us/req\n", $1, ($6-$2)/n, ($7-$3)/n, ($8-$4)*10000/n }'
}
run cold1
run cold2
for i in 1 2 3; do
wrk -t1 -c10 -d1s $url > /dev/null
run warm$i-1
run warm$i-2
done
kill $tp; wait $tp 2>/dev/null; stop_app $spawner; wait 2>/dev/null
