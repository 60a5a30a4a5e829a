#!/usr/bin/env bash
# post.sh: requests with a body (a 1 KB form POST) to a FastCGI application,
# tern on its own HTTP/1 loop against tern on hyper's (`[server] http1 =
# "hyper"`: where every request with a body went before), nginx and
# lighttpd; wrk, keep-alive, servers interleaved in each round. Each server
# has applications of its own (four C processes, four php-fpm children: a
# server that keeps its FastCGI connections holds a libfcgi process or a
# php-fpm child for itself, and servers sharing them would wait on each
# other). Server CPU per request counts the server's processes and its
# applications'.
#
# Usage: post.sh TERN_BINARY [ROUNDS] [DURATION]
# Needs: ../shared/bench/peers.sh run once before (it builds the C FastCGI
# application, $PB_ROOT/bin/fcgi-app), nginx, lighttpd, spawn-fcgi, php-fpm,
# wrk. Environment: CONCS="1 10", TARGETS="fcgi php", BODY=1024,
# SERVERS="tern tern-hyper nginx lighttpd" (those measured; all are started).
set -euo pipefail
tern=$(realpath "$1"); rounds=${2:-3}; dur=${3:-3}
concs=${CONCS:-1 10}; targets=${TARGETS:-fcgi php}; body=${BODY:-1024}
pb=${PB_ROOT:-/tmp/peerbench}
app=$pb/bin/fcgi-app
[ -x "$app" ] || { echo "no $app: run ../shared/bench/peers.sh fcgi once first" >&2; exit 2; }
w=$(mktemp -d /tmp/postbench.XXXXXX)
chmod 755 "$w"  # nginx's workers and php-fpm run as nobody
pids=()
cleanup() { for p in "${pids[@]}"; do kill -- -"$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$w"; }
trap cleanup EXIT
mkdir -p "$w/www/php" "$w/www/fcgi" "$w/run"
printf '<?php $b = file_get_contents("php://input"); echo "Hello! ", strlen($b), "\\n";\n' > "$w/www/php/post.php"
head -c "$body" /dev/zero | tr '\0' 'a' | sed 's/^/field=/' > "$w/body"
names="tern tern-hyper nginx lighttpd"
# For each server: the C application on a Unix socket, four processes, and
# a php-fpm master with four children, each in a session of its own.
declare -A app_sid fpm_sid
for n in $names; do
  setsid env FCGI_WORKERS=4 spawn-fcgi -n -s "$w/run/app-$n.sock" -M 0666 -- "$app" >/dev/null 2>&1 &
  pids+=($!); app_sid[$n]=$!
  cat > "$w/fpm-$n.conf" <<CONF
[global]
error_log = $w/run/fpm-$n.log
pid = $w/run/fpm-$n.pid
daemonize = no
[www]
listen = $w/run/php-$n.sock
listen.mode = 0666
pm = static
pm.max_children = 4
user = nobody
group = nogroup
CONF
  setsid php-fpm8.2 -F -y "$w/fpm-$n.conf" -R >/dev/null 2>&1 &
  pids+=($!); fpm_sid[$n]=$!
done
for n in $names; do
  for _ in $(seq 50); do [ -S "$w/run/app-$n.sock" ] && [ -S "$w/run/php-$n.sock" ] && break; sleep 0.1; done
done
tern_conf() { # PORT HTTP1 NAME
  cat <<CONF
[server]
http1 = "$2"
[[listen]]
address = "127.0.0.1:$1"
[[site]]
root = "$w/www"
[[site.route]]
prefix = "/fcgi"
handler = "fastcgi"
connect = "unix:$w/run/app-$3.sock"
max_connections = 4
[[site.route]]
prefix = "/php"
handler = "fastcgi"
connect = "unix:$w/run/php-$3.sock"
dir = "$w/www/php"
max_connections = 4
CONF
}
tern_conf 18301 tern tern > "$w/tern.toml"
tern_conf 18302 hyper tern-hyper > "$w/tern-hyper.toml"
mkdir -p "$w/run/nginx"
cat > "$w/nginx.conf" <<CONF
worker_processes 2;
pid $w/run/nginx.pid;
error_log $w/run/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $w/run/nginx/body;
  fastcgi_temp_path $w/run/nginx/fastcgi;
  proxy_temp_path $w/run/nginx/proxy;
  uwsgi_temp_path $w/run/nginx/uwsgi;
  scgi_temp_path $w/run/nginx/scgi;
  server {
    listen 127.0.0.1:18303;
    root $w/www;
    location /fcgi/ { include /etc/nginx/fastcgi_params; fastcgi_pass unix:$w/run/app-nginx.sock; }
    location ~ ^/php/.*\.php\$ { include /etc/nginx/fastcgi_params; fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name; fastcgi_pass unix:$w/run/php-nginx.sock; }
  }
}
CONF
cat > "$w/lighttpd.conf" <<CONF
server.document-root = "$w/www"
server.bind = "127.0.0.1"
server.port = 18304
server.pid-file = "$w/run/lighttpd.pid"
server.errorlog = "$w/run/lighttpd-error.log"
server.modules = ( "mod_fastcgi" )
server.max-keep-alive-requests = 65535
fastcgi.server = (
  "/fcgi/" => (( "socket" => "$w/run/app-lighttpd.sock", "check-local" => "disable" )),
  ".php" => (( "socket" => "$w/run/php-lighttpd.sock" ))
)
CONF
setsid "$tern" serve --config "$w/tern.toml" >"$w/run/tern.log" 2>&1 & pids+=($!)
setsid "$tern" serve --config "$w/tern-hyper.toml" >"$w/run/tern-hyper.log" 2>&1 & pids+=($!)
setsid nginx -g 'daemon off;' -c "$w/nginx.conf" >/dev/null 2>&1 & pids+=($!)
setsid lighttpd -D -f "$w/lighttpd.conf" >/dev/null 2>&1 & pids+=($!)
servers=""
for s in tern:18301 tern-hyper:18302 nginx:18303 lighttpd:18304; do
  [[ " ${SERVERS:-$names} " == *" ${s%%:*} "* ]] && servers="$servers $s"
done
for s in $servers; do
  for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:${s#*:}/fcgi/hello" && break; sleep 0.1; done
done
cat > "$w/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local f = io.open("$w/body", "rb"); wrk.body = f:read("*a"); f:close()
LUA
# CPU ticks (utime+stime) of every process in the session of $1.
ticks() { local t=0; for p in $(ps -o pid= -s "$1" 2>/dev/null); do [ -r /proc/$p/stat ] && t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; }
sess() { ps -o sid= -p "$(ss -ltnpH "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)" | tr -d ' '; }
hz=$(getconf CLK_TCK)
echo "round server target c req_per_s p99_ms cpu_us_per_req"
for r in $(seq "$rounds"); do
  for t in $targets; do
    case $t in fcgi) path=/fcgi/post;; php) path=/php/post.php;; esac
    for c in $concs; do
      for s in $servers; do
        name=${s%%:*} port=${s#*:}
        sid=$(sess "$port")
        url="http://127.0.0.1:$port$path"
        # Each server answers the POST with 200 before it is measured.
        code=$(curl -s -o "$w/answer" -w '%{http_code}' --data-binary @"$w/body" "$url")
        [ "$code" = 200 ] || { echo "$name $t: $code $(head -c 300 "$w/answer")" >&2; exit 1; }
        wrk -t1 -c"$c" -d1s -s "$w/post.lua" "$url" >/dev/null 2>&1
        a0=$(ticks "${app_sid[$name]}"); f0=$(ticks "${fpm_sid[$name]}"); s0=$(ticks "$sid")
        out=$(wrk -t1 -c"$c" -d"${dur}s" --latency -s "$w/post.lua" "$url")
        a1=$(ticks "${app_sid[$name]}"); f1=$(ticks "${fpm_sid[$name]}"); s1=$(ticks "$sid")
        rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
        p99=$(echo "$out" | awk '$1=="99%"{v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) sub(/ms/,"",v); else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}')
        reqs=$(echo "$out" | awk '/requests in/{print $1}')
        bad=$(echo "$out" | awk '/Non-2xx/{print $4}')
        [ -n "$bad" ] && echo "warning: $name $t: $bad non-2xx answers" >&2
        cpu=$(( (s1 - s0 + a1 - a0 + f1 - f0) * 1000000 / hz ))
        echo "$r $name $t $c $rps $p99 $(awk -v c="$cpu" -v n="$reqs" 'BEGIN{printf "%.1f", c/n}')"
      done
    done
  done
done
