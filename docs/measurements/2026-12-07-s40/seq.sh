#!/bin/bash
# seq.sh PORT NAME FILE [direct]: peers.sh's order on one case (warm-up, wrk c=1, wrk c=10, ab c=1, ab c=10), or ab c=10 alone
# Started by hand beside it: h2o with peers.sh's h2o.yaml on 18086, and tern through
# scripts/peers-tern.sh (the binary named as pgrep below) on 18090 (and 18091 for cmp.sh).
mkdir -p /tmp/s40
port=$1 name=$2 f=$3 mode=${4:-seq}
url=http://127.0.0.1:$port/$f
if [ "$mode" = seq ]; then
  wrk -t1 -c10 -d1s $url >/dev/null 2>&1
  wrk -t1 -c1 -d3s $url >/dev/null 2>&1
  wrk -t1 -c10 -d3s $url >/dev/null 2>&1
  ab -q -r -c 1 -t 3 -n 1000000 $url >/dev/null 2>&1
fi
pid=$(pgrep -d' ' -f "$name")
threads() { for p in $pid; do for t in /proc/$p/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done; done; }
threads > /tmp/s40/t0
h0=$(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)
perf stat -x, -e task-clock,cpu-migrations -o /tmp/s40/cli.txt ab -q -r -c 10 -t 3 -n 1000000 $url > /tmp/s40/o.txt 2>&1
h1=$(awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat)
threads > /tmp/s40/t1
n=$(awk '/Complete requests/{print $3}' /tmp/s40/o.txt)
busy=$(paste /tmp/s40/t0 /tmp/s40/t1 | awk '$4-$2>0 {printf "%s:%d ",$1,$4-$2}')
echo "$name $f $mode rps=$(awk '/Requests per/{print $4}' /tmp/s40/o.txt) ab_us=$(awk -F, -v n=$n '/task-clock/{printf "%.1f",$1*1000/n}' /tmp/s40/cli.txt) ab_migr=$(awk -F, '/migr/{print $1}' /tmp/s40/cli.txt) host_ticks=$((h1-h0)) threads[$busy]"
