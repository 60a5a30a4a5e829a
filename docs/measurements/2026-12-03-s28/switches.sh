#!/bin/bash
# usage: switches.sh TERN_BIN [ROUNDS] [N]: context switches and CPU per
# request at one connection (ab -k -c1 -n N), the FastCGI C application on a
# Unix socket behind tern ("once", as configured by default; "keep", KEEP_BIN
# with KEEP_ENV) and lighttpd, interleaved. Context switches are the whole
# machine's (perf stat -a -e context-switches) over the run, per request: a
# count the machine's noise does not move much, where req/s moves 2x.
set -u
tern=$(realpath "$1"); rounds=${2:-3}; n=${3:-20000}
keep_bin=${KEEP_BIN:-$tern}; keep_env=${KEEP_ENV:-TERN_EXP_UNIX_KEEP=1}
. "$(dirname "$0")/common.sh"
workdir /tmp/fcgisw
tern_conf 18621 "unix:$w/app.sock" > $w/once.toml
tern_conf 18623 "unix:$w/app.sock" > $w/keep.toml
lighttpd_conf 18622 > $w/lighttpd.conf
start_app -s $w/app.sock -M 0666
sleep 1
declare -A port=([once]=18621 [lighttpd]=18622 [keep]=18623)
for r in $(seq 1 "$rounds"); do for s in once keep lighttpd; do
  case $s in
    once) "$tern" serve --config $w/once.toml > $w/once.log 2>&1 & ;;
    keep) env $keep_env "$keep_bin" serve --config $w/keep.toml > $w/keep.log 2>&1 & ;;
    lighttpd) lighttpd -D -f $w/lighttpd.conf > $w/lighttpd.log 2>&1 & ;;
  esac
  pid=$!; sleep 1
  for path in hello 64k; do
    url=http://127.0.0.1:${port[$s]}/fcgi/$path
    ab -k -c1 -n 2000 $url > /dev/null 2>&1
    pids="$pid $spawner $(pgrep -P $spawner)"
    t0=$(ticks $pids)
    sw=$(perf stat -a -x, -e context-switches,cpu-migrations -- ab -k -c1 -n $n $url 2>&1 >$w/ab.out | awk -F, '{printf "%s=%s ", $3, $1}')
    t1=$(ticks $pids)
    rps=$(awk '/Requests per/{print $4}' $w/ab.out)
    echo "$r $s $path rps=$rps cpu_us=$(( (t1-t0)*10000/n )) per_req: $(echo $sw | awk -v n=$n '{for(i=1;i<=NF;i++){split($i,a,"="); printf "%s=%.2f ", a[1], a[2]/n}}')"
  done
  kill $pid; wait $pid 2>/dev/null; sleep 0.5
done; done
stop_app $spawner; wait 2>/dev/null
