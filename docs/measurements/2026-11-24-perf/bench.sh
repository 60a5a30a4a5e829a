#!/bin/bash
# Static files over plain HTTP/1.1: tern beside nginx, lighttpd, h2o and the
# floor (crates/tern-bench/examples/floor.rs, a bare epoll loop answering
# fixed bytes), interleaved: each round runs every server in turn.
# usage: bench.sh TERN_BIN FLOOR_BIN [ROUNDS] [SECS] [SERVERS]
# With BEFORE=OTHER_TERN_BIN set, the server "before" is that binary with
# tern's configuration: before and after in one interleaved run.
#
# Rows (the server's CPU, user+system of its process tree, per request):
# - keep-alive: wrk -t1 -c1 and -c10 on 0 B; -c10 on 64 KB and 3.9 MB;
# - a new connection per request: ab -c10 (no -k) on 0 B and 64 KB.
# The floor serves only the 0 B rows (it answers every path the same).
# NEW_CONCS (default "10") sets the ab concurrencies of the new-connection
# rows; KA=0 leaves out the keep-alive rows; PATHS limits the files.
# "tern1" is tern with one worker (as lighttpd runs one process).
# "nocache" is tern with its file cache off (`cache = false`), 0 B and 64 KB.
# "ternh1" is tern on its own HTTP/1 loop (`[server] http1 = "tern"`, the
# default since 2026-11-25); "beforeh1" is the BEFORE binary on it;
# "ternhyper" is tern on hyper's (`http1 = "hyper"`).
set -u
tern=$(realpath "$1"); floor=$(realpath "$2"); rounds=${3:-2}; secs=${4:-5}
servers=${5:-"tern floor lighttpd nginx h2o"}
here=$(cd "$(dirname "$0")" && pwd)
w=/tmp/perfpeers
rm -rf $w; mkdir -p $w/www
cd $w
: > www/0k.html
head -c 65536 /dev/urandom > www/64k.bin
head -c 4089446 /dev/urandom > www/3.9m.bin

cat > tern.toml <<T
[server]
workers = 2
[[listen]]
address = "127.0.0.1:18501"
[[site]]
root = "$w/www"
T
cat > nginx.conf <<T
worker_processes 2;
daemon off;
pid $w/nginx.pid;
error_log $w/nginx-error.log;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    open_file_cache max=1000;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:18502;
        root $w/www;
    }
}
T
cat > lighttpd.conf <<T
server.document-root = "$w/www"
server.port = 18503
server.bind = "127.0.0.1"
server.max-keep-alive-requests = 1000000
server.max-fds = 16384
T
cat > h2o.conf <<T
num-threads: 2
listen:
  host: 127.0.0.1
  port: 18504
hosts:
  default:
    paths:
      /:
        file.dir: $w/www
T

cpu() { python3 "$here/../2026-11-24-tls/cpu.py" "$1"; }
per() { python3 -c "import sys; a,b,n=map(float,sys.argv[1:]); print(round((b-a)*1e6/max(n,1),1))" "$@"; }

ka() { # name pid port c path label: one wrk keep-alive row
  local c0 c1 out
  c0=$(cpu $2)
  out=$(wrk -t1 -c$4 -d${secs}s --latency http://127.0.0.1:$3/$5 2>/dev/null)
  c1=$(cpu $2)
  rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  echo "$1 ka-c$4-$6 rps=$rps p99=$p99 cpu_us=$(per $c0 $c1 $reqs)"
}

measure() { # name pid port
  local name=$1 pid=$2 port=$3
  local paths=${PATHS:-"0k.html 64k.bin 3.9m.bin"}
  [ $name = floor ] && paths=0k.html
  case $name in nocache*) paths=${PATHS:-"0k.html 64k.bin"} ;; esac
  if [ "${KA:-1}" != 0 ]; then
    ka $name $pid $port 1 0k.html 0k
    ka $name $pid $port 10 0k.html 0k
    for path in $paths; do
      [ $path = 0k.html ] || ka $name $pid $port 10 $path $path
    done
  fi
  for path in $paths; do
    [ $path = 3.9m.bin ] && continue
    for c in ${NEW_CONCS:-10}; do
      c0=$(cpu $pid)
      out=$(ab -q -c$c -t$secs -n 10000000 http://127.0.0.1:$port/$path 2>/dev/null)
      c1=$(cpu $pid)
      rps=$(echo "$out" | awk '/Requests per second/{print $4}')
      reqs=$(echo "$out" | awk '/Complete requests/{print $3}')
      p99=$(echo "$out" | awk '$1=="99%"{print $2}')
      echo "$name new-c$c-$path rps=$rps p99=${p99}ms cpu_us=$(per $c0 $c1 $reqs)"
    done
  done
}

start() { # name: the server, started in the background ($! is its pid)
  case $1 in
    tern) "$tern" serve --config $w/tern.toml > $w/tern.out 2> $w/tern.log & ;;
    floor) "$floor" 127.0.0.1:18505 > $w/floor.log 2>&1 & ;;
    tern1) "$tern" serve --config $w/tern1.toml > $w/tern1.out 2> $w/tern1.log & ;;
    ternh1) "$tern" serve --config $w/ternh1.toml > $w/ternh1.out 2> $w/ternh1.log & ;;
    nocache) "$tern" serve --config $w/nocache.toml > $w/nocache.out 2> $w/nocache.log & ;;
    nocache-before) "$BEFORE" serve --config $w/nocache-before.toml > $w/nocache-before.out 2> $w/nocache-before.log & ;;
    before) "$BEFORE" serve --config $w/before.toml > $w/before.out 2> $w/before.log & ;;
    ternhyper) "$tern" serve --config $w/ternhyper.toml > $w/ternhyper.out 2> $w/ternhyper.log & ;;
    beforeh1) "$BEFORE" serve --config $w/beforeh1.toml > $w/beforeh1.out 2> $w/beforeh1.log & ;;
    nginx) nginx -c $w/nginx.conf > $w/nginx.out 2>&1 & ;;
    lighttpd) lighttpd -D -f $w/lighttpd.conf > $w/lighttpd.log 2>&1 & ;;
    h2o) h2o -c $w/h2o.conf > $w/h2o.log 2>&1 & ;;
  esac
}
sed 's/18501/18506/' tern.toml > before.toml
sed 's/18501/18509/; s/workers = 2/workers = 1/' tern.toml > tern1.toml
sed 's/18501/18510/; s/workers = 2/workers = 2\nhttp1 = "tern"/' tern.toml > ternh1.toml
sed 's/18510/18511/' ternh1.toml > beforeh1.toml
sed 's/18510/18512/; s/http1 = "tern"/http1 = "hyper"/' ternh1.toml > ternhyper.toml
sed 's/18501/18507/' tern.toml > nocache.toml && echo 'cache = false' >> nocache.toml
sed 's/18507/18508/' nocache.toml > nocache-before.toml
declare -A port=([nocache-before]=18508 [nocache]=18507 [before]=18506 [tern]=18501 [nginx]=18502 [lighttpd]=18503 [h2o]=18504 [floor]=18505 [tern1]=18509 [ternh1]=18510 [beforeh1]=18511 [ternhyper]=18512)
for r in $(seq 1 $rounds); do
  for s in $servers; do
    start $s; pid=$!
    sleep 1
    measure $s $pid ${port[$s]}
    kill $pid; wait $pid 2>/dev/null
    sleep 0.5
  done
done
