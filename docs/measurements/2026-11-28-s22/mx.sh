#!/bin/bash
# mx.sh ROUNDS PATH name:pid:port ... : every client row (wrk -k, ab new conn, tern bench -k and new conn; c=1, 10), servers interleaved per row
R=$1 P=$2; shift 2
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
run() { # tool c port -> "rps n"
  case $1 in
    wrk) out=$(wrk -t1 -c $2 -d 3s http://127.0.0.1:$3$P 2>&1); echo "$(echo "$out" | awk '/Requests\/sec/{print $2}') $(echo "$out" | awk '/requests in/{print $1}')";;
    ab) out=$(ab -q -t 3 -n 1000000 -c $2 http://127.0.0.1:$3$P 2>&1); echo "$(echo "$out" | awk '/Requests per/{print $4}') $(echo "$out" | awk '/Complete requests/{print $3}')";;
    tbk) out=$(/tmp/tern-pgo6 bench -k -c $2 -d 3s http://127.0.0.1:$3$P 2>&1); echo "$(echo "$out" | grep -o "[0-9.]* req/s" | head -1 | awk '{print $1}') $(echo "$out" | grep -o "[0-9]* responses" | head -1 | awk '{print $1}')";;
    tb) out=$(/tmp/tern-pgo6 bench -c $2 -d 3s http://127.0.0.1:$3$P 2>&1); echo "$(echo "$out" | grep -o "[0-9.]* req/s" | head -1 | awk '{print $1}') $(echo "$out" | grep -o "[0-9]* responses" | head -1 | awk '{print $1}')";;
  esac; }
for r in $(seq 1 $R); do for row in "wrk 1" "wrk 10" "ab 1" "ab 10" "tbk 1" "tbk 10" "tb 1" "tb 10"; do set -- $row; tool=$1 c=$2
  for s in $SERVERS; do IFS=: read n p port <<< "$s"; c0=$(cpu $p); read rps cnt <<< "$(run $tool $c $port)"; c1=$(cpu $p); echo "$r $tool c=$c $n rps=$rps srv_us=$(( (c1-c0)*10000000/(${cnt:-1}>0?${cnt:-1}:1)/1000 ))"; done
done; done
