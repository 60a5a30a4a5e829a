#!/bin/bash
# What watching costs: tern with the admin listener off, on, on with a
# live-trace watcher of every request attached (`watched`, the worst case:
# six events a request, each written out), and on with a watcher whose
# filter admits none of the requests (`filtered`, a watch of one path
# while others are served), interleaved (each round runs every
# configuration in turn), on two rows:
# - static 0 B keep-alive, 10 connections, open loop at $RATE req/s
#   (default 30000): the cheapest request tern serves, where a fixed cost
#   per request shows most;
# - FastCGI "Hello!" (tern's own FastCGI responder, 2 processes), keep-alive,
#   10 connections, open loop at $FRATE req/s (default 5000).
# Open loop at a fixed rate: the same work at the same pace, so CPU per
# request compares what each configuration adds (see the rules
# measurement's note on saturated rows).
# usage: [WORKERS=N] [RATE=R] [FRATE=R] bench.sh TERN_BIN [ROUNDS] [SECS]
# Prints one line per run: row, config, req/s, server CPU µs per request,
# corrected p99.
set -u
tern=$(realpath "$1"); rounds=${2:-3}; secs=${3:-4}
rate=${RATE:-30000}; frate=${FRATE:-5000}
w=/tmp/observebench
rm -rf $w; mkdir -p $w/www
cd $w
: > www/0k.html
ln -f "$tern" $w/hello.fcgi 2>/dev/null || cp "$tern" $w/hello.fcgi

conf() { # port admin(yes/no)
  cat <<T
[server]
workers = ${WORKERS:-2}
[[listen]]
address = "127.0.0.1:$1"
[[site]]
root = "$w/www"
[[site.route]]
prefix = "/fcgi"
handler = "fastcgi"
command = ["$w/hello.fcgi"]
min_processes = 2
max_processes = 2
T
  if [ "$2" = yes ]; then
    printf '[admin]\nlisten = "127.0.0.1:%d"\nactivity_file = "%s/activity-%d.bin"\n' $(( $1 + 100 )) "$w" "$1"
  fi
}
conf 18701 no > off.toml
conf 18702 yes > on.toml
conf 18703 yes > watched.toml
conf 18704 yes > filtered.toml
for c in off on watched filtered; do "$tern" check -c $c.toml >/dev/null || exit 1; done

rated() { # row name port path rate
  local row=$1 name=$2 port=$3 path=$4 r=$5
  "$tern" serve --config $w/$name.toml > $w/$name.out 2> $w/$name.err &
  local pid=$! watcher=
  for _ in $(seq 1 50); do curl -s -o /dev/null http://127.0.0.1:$port/fcgi/x && break; sleep 0.1; done
  if [ "$name" = watched ]; then
    "$tern" watch --admin 127.0.0.1:$(( port + 100 )) > /dev/null &
    watcher=$!
    sleep 0.3
  elif [ "$name" = filtered ]; then
    "$tern" watch --admin 127.0.0.1:$(( port + 100 )) --path '/elsewhere/**' > /dev/null &
    watcher=$!
    sleep 0.3
  fi
  local out
  out=$("$tern" bench -k -c 10 --rate $r -d ${secs}s --warmup 1s --server-pid $pid http://127.0.0.1:$port$path 2>&1)
  [ -n "$watcher" ] && kill $watcher
  kill $pid; wait $pid 2>/dev/null
  printf '%-7s %-8s %10s req/s  %6s µs/req  p99 %s ms\n' "$row" "$name" \
    "$(echo "$out" | awk '/responses in/{print $6}')" \
    "$(echo "$out" | awk '/server CPU/{print $6}')" \
    "$(echo "$out" | awk '$1=="corrected"{print $5}')"
}

for r in $(seq 1 $rounds); do
  echo "# round $r"
  for c in off on watched filtered; do
    port=$(case $c in off) echo 18701;; on) echo 18702;; watched) echo 18703;; filtered) echo 18704;; esac)
    rated static $c $port /0k.html $rate
  done
  for c in off on watched filtered; do
    port=$(case $c in off) echo 18701;; on) echo 18702;; watched) echo 18703;; filtered) echo 18704;; esac)
    rated fcgi $c $port /fcgi/hello-only $frate
  done
done
