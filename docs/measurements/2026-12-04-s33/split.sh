#!/bin/bash
# usage: split.sh BEFORE_BIN AFTER_BIN [ROUNDS] [PATH] [C]   (from the repository's root)
# Where a FastCGI request's CPU goes, server and application apart, user
# and system apart: two tern builds and lighttpd run all along in front
# of their own C application each (session 28's common.sh: peers.sh's
# fcgi-app.c, 4 processes under spawn-fcgi, on a Unix socket: tern keeps
# its connections, and a libfcgi process serves one connection at a time,
# so one application shared would be held from the others), and each round
# gives each server 2 s of `wrk -t1 -cC` on /fcgi/PATH in turn, the order
# rotated.
# Per request: the server's user and system µs, the application's user and
# system µs (its processes' /proc ticks), and req/s. Read the medians.
# WARMUP=1: each turn starts with 1 s of `wrk -t1 -c10`, as peers.sh
# warms each case (not counted).
set -u
before=$(realpath "$1"); after=$(realpath "$2"); rounds=${3:-10}; path=${4:-64k}; c=${5:-1}
. "$(dirname "$0")/../2026-12-03-s28/common.sh"
workdir /tmp/fcgisplit
declare -A port=([before]=18641 [lighttpd]=18642 [after]=18643) pid spawners
for s in before after lighttpd; do
  if [ $s = lighttpd ]; then
    lighttpd_conf ${port[$s]} | sed "s|$w/app.sock|$w/$s.sock|" > $w/$s.conf
  else
    tern_conf ${port[$s]} "unix:$w/$s.sock" > $w/$s.conf
  fi
  start_app -s $w/$s.sock -M 0666; spawners[$s]=$spawner
done
sleep 1
"$before" serve --config $w/before.conf > $w/before.log 2>&1 & pid[before]=$!
"$after" serve --config $w/after.conf > $w/after.log 2>&1 & pid[after]=$!
lighttpd -D -f $w/lighttpd.conf > $w/lighttpd.log 2>&1 & pid[lighttpd]=$!
sleep 1
# user and system ticks of PIDS, "U S"
us() { for p in "$@"; do awk '{print $14, $15}' /proc/$p/stat 2>/dev/null; done | awk '{u+=$1; s+=$2} END {print u+0, s+0}'; }
set -- before after lighttpd
echo "round server req/s srv_user srv_sys app_user app_sys (µs a request)"
for r in $(seq 1 "$rounds"); do
  for s in "$@"; do
    url=http://127.0.0.1:${port[$s]}/fcgi/$path
    apps="$(pgrep -P ${spawners[$s]}) ${spawners[$s]}"
    [ "${WARMUP:-0}" = 1 ] && wrk -t1 -c10 -d1s $url > /dev/null 2>&1
    read -r su0 ss0 <<<"$(us ${pid[$s]})"; read -r au0 as0 <<<"$(us $apps)"
    out=$(wrk -t1 -c"$c" -d2s $url 2>/dev/null)
    read -r su1 ss1 <<<"$(us ${pid[$s]})"; read -r au1 as1 <<<"$(us $apps)"
    n=$(echo "$out" | awk '/requests in/{print $1}')
    [ -n "$n" ] && [ "$n" -gt 0 ] || { echo "$r $s: wrk failed: $out"; continue; }
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    echo "$r $s $rps $(( (su1-su0)*10000/n )) $(( (ss1-ss0)*10000/n )) $(( (au1-au0)*10000/n )) $(( (as1-as0)*10000/n ))"
  done
  set -- "${@:2}" "$1"
done
kill ${pid[before]} ${pid[after]} ${pid[lighttpd]}; wait ${pid[before]} ${pid[after]} ${pid[lighttpd]} 2>/dev/null
for s in before after lighttpd; do stop_app ${spawners[$s]}; done; wait 2>/dev/null
