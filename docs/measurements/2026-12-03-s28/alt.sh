#!/bin/bash
# usage: alt.sh TERN_BIN [ROUNDS] [PATHS] [C]: like fcgi-keep.sh, but the
# three servers ("once": tern as configured by default; "keep": KEEP_BIN
# with KEEP_ENV; lighttpd) run all along, and each round gives each of them
# 2 s of wrk -t1 in turn, the order rotated: on a machine whose speed moves
# 2x from minute to minute, many short turns side by side, read by the
# median, compare better than a few long ones.
set -u
tern=$(realpath "$1"); rounds=${2:-10}; paths=${3:-"hello 64k"}; c=${4:-1}
keep_bin=${KEEP_BIN:-$tern}; keep_env=${KEEP_ENV:-TERN_EXP_UNIX_KEEP=1}
. "$(dirname "$0")/common.sh"
workdir /tmp/fcgialt
tern_conf 18631 "unix:$w/app.sock" > $w/once.toml
tern_conf 18633 "unix:$w/app.sock" > $w/keep.toml
lighttpd_conf 18632 > $w/lighttpd.conf
start_app -s $w/app.sock -M 0666
sleep 1
"$tern" serve --config $w/once.toml > $w/once.log 2>&1 & p_once=$!
env $keep_env "$keep_bin" serve --config $w/keep.toml > $w/keep.log 2>&1 & p_keep=$!
lighttpd -D -f $w/lighttpd.conf > $w/lighttpd.log 2>&1 & p_l=$!
sleep 1
declare -A port=([once]=18631 [lighttpd]=18632 [keep]=18633) pid=([once]=$p_once [keep]=$p_keep [lighttpd]=$p_l)
set -- once keep lighttpd
for r in $(seq 1 "$rounds"); do
  for s in "$@"; do for path in $paths; do
    url=http://127.0.0.1:${port[$s]}/fcgi/$path
    pids="${pid[$s]} $spawner $(pgrep -P $spawner)"
    t0=$(ticks $pids)
    out=$(wrk -t1 -c"$c" -d2s $url 2>/dev/null)
    t1=$(ticks $pids)
    reqs=$(echo "$out" | awk '/requests in/{print $1}')
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    echo "$r $s $path c$c rps=$rps cpu_us=$(( (t1-t0)*10000/reqs ))"
  done; done
  set -- "${@:2}" "$1"
done
kill $p_once $p_keep $p_l; wait $p_once $p_keep $p_l 2>/dev/null
stop_app $spawner; wait 2>/dev/null
