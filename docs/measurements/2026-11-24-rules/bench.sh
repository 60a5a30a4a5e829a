#!/bin/bash
# What rules cost: tern on the static 0 B keep-alive row (wrk -t1 -c10),
# three ways, interleaved: each round runs every configuration in turn.
# - none:   no rules (the phases are one branch each);
# - rules50: 50 [[site.rules]] that do not match the request (25 regexes
#            with captures, 25 globs);
# - auth:   a realm over every path, HTTP Basic against a bcrypt htpasswd
#           (cost 10), the client sending the right password every time;
# - authoff: the same realm on a path not requested, the client sending the
#           same header: what the realm's work costs, apart from the
#           request's extra header.
# usage: [WORKERS=N] [RATE=R] bench.sh TERN_BIN [ROUNDS] [SECS]   (workers: 2 unless set)
# Prints one line per run: config, req/s, server CPU µs per request, p99.
# With RATE, each configuration is also loaded open loop at RATE req/s
# (tern bench --rate, 10 connections): the same work at the same pace, so
# that CPU per request compares what each configuration adds, not how a
# saturated server's batching and wake-ups shift.
set -u
tern=$(realpath "$1"); rounds=${2:-3}; secs=${3:-4}
here=$(cd "$(dirname "$0")" && pwd)
w=/tmp/rulesbench
rm -rf $w; mkdir -p $w/www
cd $w
: > www/0k.html
htpasswd -bcB -C 10 $w/users alice secret 2>/dev/null

base() {
  cat <<T
[server]
workers = ${WORKERS:-2}
[[listen]]
address = "127.0.0.1:$1"
[[site]]
root = "$w/www"
T
}
base 18601 > none.toml
{ base 18602
  for i in $(seq 1 25); do
    printf '[[site.rules]]\nregex = %s\nredirect = "/moved-%d/$1"\n' "'^/old-$i/(.*)\$'" "$i"
    printf '[[site.rules]]\npath = "/gone-%d/**"\nreturn = 410\n' "$i"
  done
} > rules50.toml
{ base 18603
  printf '[[site.access]]\npath = "/**"\nrealm = "bench"\nhtpasswd = "%s/users"\n' "$w"
} > auth.toml
{ base 18604
  printf '[[site.access]]\npath = "/elsewhere/**"\nrealm = "bench"\nhtpasswd = "%s/users"\n' "$w"
} > authoff.toml
for c in none rules50 auth authoff; do "$tern" check -c $c.toml >/dev/null || exit 1; done

cpu() { python3 "$here/../2026-11-24-tls/cpu.py" "$1"; }
per() { python3 -c "import sys; a,b,n=map(float,sys.argv[1:]); print(round((b-a)*1e6/max(n,1),1))" "$@"; }

run() { # name port [wrk args...]
  local name=$1 port=$2; shift 2
  "$tern" serve --config $w/$name.toml > $w/$name.out 2> $w/$name.err &
  local pid=$!
  for _ in $(seq 1 50); do curl -s -o /dev/null http://127.0.0.1:$port/0k.html -H 'Authorization: Basic YWxpY2U6c2VjcmV0' && break; sleep 0.1; done
  wrk -t1 -c10 -d1s "$@" http://127.0.0.1:$port/0k.html > /dev/null 2>&1  # warm up
  local c0 c1 out
  c0=$(cpu $pid)
  out=$(wrk -t1 -c10 -d${secs}s --latency "$@" http://127.0.0.1:$port/0k.html 2>/dev/null)
  c1=$(cpu $pid)
  kill $pid; wait $pid 2>/dev/null
  local rps reqs p99 non2xx
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  printf '%-8s %10s req/s  %6s µs/req  p99 %-8s %s\n' "$name" "$rps" "$(per $c0 $c1 $reqs)" "$p99" "${non2xx:+non-2xx $non2xx}"
}

rated() { # name port [-H header]
  local name=$1 port=$2; shift 2
  "$tern" serve --config $w/$name.toml > $w/$name.out 2> $w/$name.err &
  local pid=$!
  for _ in $(seq 1 50); do curl -s -o /dev/null http://127.0.0.1:$port/0k.html -H 'Authorization: Basic YWxpY2U6c2VjcmV0' && break; sleep 0.1; done
  local out
  out=$("$tern" bench -k -c 10 --rate $RATE -d ${secs}s --warmup 1s --server-pid $pid "$@" http://127.0.0.1:$port/0k.html 2>&1)
  kill $pid; wait $pid 2>/dev/null
  printf '%-8s %10s req/s  %6s µs/req  p99 %s ms (open loop)\n' "$name" \
    "$(echo "$out" | awk '/responses in/{print $6}')" \
    "$(echo "$out" | awk '/server CPU/{print $6}')" \
    "$(echo "$out" | awk '$1=="corrected"{print $5}')"
}

for r in $(seq 1 $rounds); do
  echo "# round $r"
  run none 18601
  run rules50 18602
  run auth 18603 -H 'Authorization: Basic YWxpY2U6c2VjcmV0'
  run authoff 18604 -H 'Authorization: Basic YWxpY2U6c2VjcmV0'
  if [ -n "${RATE:-}" ]; then
    rated none 18601
    rated rules50 18602
    rated auth 18603 -H 'Authorization: Basic YWxpY2U6c2VjcmV0'
    rated authoff 18604 -H 'Authorization: Basic YWxpY2U6c2VjcmV0'
  fi
done
