file=$1; n=$2; shift 2
for r in 1 2 3; do for m in "$@"; do
  setsid taskset -c 1 /tmp/s44/mini2 18095 $m $file >/dev/null 2>&1 &
  sleep 0.3; pid=$(pgrep -n -f "mini2 18095")
  taskset -c 0 ab -q -c 1 -n 2000 http://127.0.0.1:18095/x >/dev/null 2>&1
  perf stat -x, -e task-clock -p $pid -o /tmp/s44/mini-ts.txt -- taskset -c 0 ab -q -c 1 -n $n http://127.0.0.1:18095/x > /tmp/s44/mini-ab.txt 2>&1
  rps=$(awk '/Requests per second/ {print $4}' /tmp/s44/mini-ab.txt)
  awk -F, -v n=$n -v who="$r $m" -v rps=$rps '/task-clock/ {tc=$1} END {printf "%s: task-clock %.1f µs a request, %s req/s\n", who, tc*1000/n, rps}' /tmp/s44/mini-ts.txt
  kill $pid; sleep 0.2
done; done
