#!/bin/bash
# TLS: tern against nginx, h2o and Caddy on the same ECDSA P-256 certificate,
# interleaved (each round runs every server in turn), 2 workers each.
# usage: bench.sh TERN_BIN [ROUNDS] [SECS]
#
# Rows, each with the server's CPU (user+system of its process tree, ../2026-11-24-tls/cpu.py)
# per connection or per request:
# - full handshakes: `openssl s_time -new` (a new connection and a full
#   handshake per request), 1 client and 10 clients at once;
# - resumed handshakes: `openssl s_time -reuse`, 1 client;
# - keep-alive over TLS 1.3, HTTP/1.1: `wrk -t2 -c10` on 0 B, 64 KB, 3.9 MB;
# - HTTP/2 over TLS: `h2load -c10 -m10` (10 streams per connection), 0 B.
set -u
tern=$(realpath "$1"); rounds=${2:-2}; secs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
w=/tmp/tlspeers
rm -rf $w; mkdir -p $w/www $w/caddy-data
cd $w
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem -out cert.pem \
  -days 30 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
: > www/empty.html
head -c 65536 /dev/urandom > www/64k.bin
head -c 4089446 /dev/urandom > www/3.9m.bin

cat > tern.toml <<T
[server]
workers = 2
[[listen]]
address = "127.0.0.1:18443"
[listen.tls]
certificates = [{ cert = "$w/cert.pem", key = "$w/key.pem" }]
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
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:18444 ssl http2;
        ssl_certificate $w/cert.pem;
        ssl_certificate_key $w/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        root $w/www;
    }
}
T
cat > h2o.conf <<T
num-threads: 2
listen:
  host: 127.0.0.1
  port: 18445
  ssl:
    certificate-file: $w/cert.pem
    key-file: $w/key.pem
    minimum-version: TLSv1.2
hosts:
  default:
    paths:
      /:
        file.dir: $w/www
T
cat > Caddyfile <<T
{
	admin off
	auto_https off
	default_sni localhost
	storage file_system $w/caddy-data
}
https://localhost:18446, https://127.0.0.1:18446 {
	tls $w/cert.pem $w/key.pem
	root * $w/www
	file_server
}
T

cpu() { python3 "$here/../2026-11-24-tls/cpu.py" "$1"; }
per() { python3 -c "import sys; a,b,n=map(float,sys.argv[1:]); print(round((b-a)*1e6/max(n,1),1))" "$@"; }

measure() { # name pid port
  local name=$1 pid=$2 port=$3
  for kind in full full10 resumed; do
    local flag=-new clients=1
    [ $kind = resumed ] && flag=-reuse
    [ $kind = full10 ] && clients=10
    c0=$(cpu $pid)
    local jobs=()
    for i in $(seq 1 $clients); do
      openssl s_time -connect 127.0.0.1:$port $flag -www /empty.html -time $secs 2>/dev/null \
        | grep -m1 'connections in' > $w/stime.$i &
      jobs+=($!)
    done
    wait "${jobs[@]}"
    c1=$(cpu $pid)
    n=$(cat $w/stime.* | awk '{s+=$1} END {print s+0}')
    rm -f $w/stime.*
    echo "$name handshakes-$kind conns=$n rate=$((n / secs)) cpu_us=$(per $c0 $c1 $n)"
  done
  for path in empty.html 64k.bin 3.9m.bin; do
    c0=$(cpu $pid)
    out=$(wrk -t2 -c10 -d${secs}s https://127.0.0.1:$port/$path 2>/dev/null)
    c1=$(cpu $pid)
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    reqs=$(echo "$out" | awk '/requests in/{print $1}')
    echo "$name keepalive-$path rps=$rps cpu_us=$(per $c0 $c1 $reqs)"
  done
  c0=$(cpu $pid)
  out=$(h2load -c10 -m10 -D $secs https://127.0.0.1:$port/empty.html 2>/dev/null)
  c1=$(cpu $pid)
  rps=$(echo "$out" | awk '/^finished in/{gsub(",","",$4); print $4}')
  reqs=$(echo "$out" | awk '/^requests:/{print $8}')
  proto=$(echo "$out" | awk '/Application protocol/{print $3}')
  echo "$name h2-10streams rps=$rps ok=$reqs proto=$proto cpu_us=$(per $c0 $c1 $reqs)"
}

start() { # name: the server, started in the background ($! is its pid)
  case $1 in
    tern) "$tern" serve --config $w/tern.toml > $w/tern.out 2> $w/tern.log & ;;
    nginx) nginx -c $w/nginx.conf > $w/nginx.out 2>&1 & ;;
    h2o) h2o -c $w/h2o.conf > $w/h2o.log 2>&1 & ;;
    caddy) env GOMAXPROCS=2 HOME=$w/caddy-data XDG_DATA_HOME=$w/caddy-data caddy run --config $w/Caddyfile --adapter caddyfile > $w/caddy.log 2>&1 & ;;
  esac
}
declare -A port=([tern]=18443 [nginx]=18444 [h2o]=18445 [caddy]=18446)
for r in $(seq 1 $rounds); do
  for s in tern nginx h2o caddy; do
    start $s; pid=$!
    sleep 1.5
    measure $s $pid ${port[$s]}
    kill $pid; wait $pid 2>/dev/null
    sleep 0.5
  done
done
