#!/bin/bash
# usage: instructions.sh TERN_BIN [SERVERS]: user-space instructions per
# request (scripts/instructions.sh: callgrind, ab -k -c 1, 2000 requests
# after 300 of warm-up) of each server on a cached empty file and on the
# FastCGI C application's "Hello!" (peers.sh's, /tmp/peerbench/bin/fcgi-app,
# 4 processes on a Unix socket, started once outside valgrind: only the
# server is counted), each also with a browser's twelve header fields. SERVERS (default "tern lighttpd nginx"; h2o accepts under valgrind but never answers); with
# BEFORE=OTHER_TERN_BIN, "before" is that binary with tern's config.
# Each server runs with one worker (one process or thread), as the count
# is per request and the client keeps one connection.
set -u
here=$(cd "$(dirname "$0")" && pwd)
count=$(realpath "$here/../../../scripts/instructions.sh")
tern=$(realpath "$1"); servers=${2:-"tern lighttpd nginx"}
app=/tmp/peerbench/bin/fcgi-app
[ -x $app ] || { echo "no $app: run ../shared/bench/peers.sh fcgi once" >&2; exit 1; }
w=/tmp/instr-peers
rm -rf $w; mkdir -p $w/www/fcgi $w/logs; chmod 755 $w; : > $w/www/0k.html
cat > $w/tern.toml <<T
[server]
workers = 1
[[listen]]
address = "127.0.0.1:18701"
[[site]]
root = "$w/www"
[[site.route]]
prefix = "/fcgi"
handler = "fastcgi"
connect = "unix:$w/app.sock"
max_connections = 4
T
cat > $w/lighttpd.conf <<T
server.document-root = "$w/www"
server.port = 18702
server.bind = "127.0.0.1"
server.modules = ( "mod_fastcgi" )
server.max-keep-alive-requests = 1000000
fastcgi.server = ( "/fcgi/" => (( "socket" => "$w/app.sock", "check-local" => "disable" )) )
T
cat > $w/nginx.conf <<T
daemon off;
master_process off;
worker_processes 1;
error_log $w/logs/nginx-error.log;
pid $w/logs/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  open_file_cache max=1000;
  keepalive_requests 1000000;
  client_body_temp_path $w/logs; proxy_temp_path $w/logs; fastcgi_temp_path $w/logs;
  uwsgi_temp_path $w/logs; scgi_temp_path $w/logs;
  server {
    listen 127.0.0.1:18703;
    root $w/www;
    location /fcgi/ {
      fastcgi_pass unix:$w/app.sock;
      include /etc/nginx/fastcgi_params;
    }
  }
}
T
cat > $w/h2o.conf <<T
num-threads: 1
pid-file: $w/logs/h2o.pid
error-log: $w/logs/h2o-error.log
listen:
  host: 127.0.0.1
  port: 18704
hosts:
  default:
    paths:
      /fcgi:
        fastcgi.connect:
          port: $w/app.sock
          type: unix
      /:
        file.dir: $w/www
T
env FCGI_WORKERS=4 spawn-fcgi -n -s $w/app.sock -M 0666 -u nobody -g nogroup -- $app > $w/logs/app.log 2>&1 &
spawner=$!
sleep 1
sed 's/18701/18705/' $w/tern.toml > $w/before.toml
# The eight fields a browser adds to ab's four (Host, User-Agent, Accept,
# Connection): the "browser" rows.
browser=(-H "Accept-Language: en-US,en;q=0.9" -H "Accept-Encoding: gzip, deflate, br"
  -H "Referer: http://127.0.0.1/index.html" -H "Cookie: session=0123456789abcdef; theme=dark"
  -H "Upgrade-Insecure-Requests: 1" -H "Sec-Fetch-Dest: document"
  -H "Sec-Fetch-Mode: navigate" -H "Cache-Control: max-age=0")
for s in $servers; do
  case $s in
    tern) port=18701; cmd="$tern serve --config $w/tern.toml" ;;
    before) port=18705; cmd="$BEFORE serve --config $w/before.toml" ;;
    lighttpd) port=18702; cmd="lighttpd -D -f $w/lighttpd.conf" ;;
    nginx) port=18703; cmd="nginx -c $w/nginx.conf" ;;
    h2o) port=18704; cmd="h2o -c $w/h2o.conf" ;;
  esac
  for path in /0k.html /fcgi/hello; do
    echo "$s $(bash $count http://127.0.0.1:$port$path -- $cmd)"
    echo "$s browser $(bash $count "${browser[@]}" http://127.0.0.1:$port$path -- $cmd)"
  done
done
kids=$(pgrep -P $spawner); kill $spawner $kids 2>/dev/null; wait 2>/dev/null
