#!/bin/bash
# counts.sh TOOL PATH CONC PORT...: per request, the load generator's system calls (perf's syscall
# tracepoints) and the machine's TCP segments (nstat), for each port in turn. TOOL is wrk (one
# thread, keep-alive) or ab (a new connection per request). Counts, not times: they do not move
# with the host's noise.
tool=$1 path=$2 c=$3; shift 3
ev=$(for s in read write ioctl epoll_wait epoll_ctl connect close; do printf "syscalls:sys_enter_%s," $s; done)
for p in "$@"; do
  url=http://127.0.0.1:$p/$path
  run() { if [ "$tool" = wrk ]; then wrk -t1 -c"$c" -d2 "$url"; else ab -q -r -c "$c" -t 2 -n 1000000 "$url"; fi; }
  count() { awk '/requests in/{print $1} /Complete requests/{print $3}' "$1"; }
  perf stat -x, -e "${ev%,}" -o calls.txt bash -c "$(declare -f run); tool=$tool c=$c url=$url run" > o.txt 2>&1
  n=$(count o.txt)
  echo "$tool $path c=$c port $p syscalls/request: $(awk -F, -v n="$n" '/sys_enter/{sub("syscalls:sys_enter_","",$3); printf "%s=%.2f ", $3, $1/n}' calls.txt)"
  nstat -n > /dev/null; run > o.txt 2>&1; n=$(count o.txt)
  echo "$tool $path c=$c port $p segments/request: $(nstat | awk -v n="$n" '/TcpInSegs|TcpOutSegs|TCPPureAcks|TCPOrigDataSent/{printf "%s=%.2f ", $1, $2/n}')"
done
