#!/usr/bin/env bash
# tern bench against wrk on the same nginx (0 KB file, keep-alive): request
# rate and the CPU each load generator spends, at 10 and 50 connections, in
# interleaved rounds; then latency at a fixed rate (tern bench's open loop)
# beside wrk's at the same connections.
# Usage: scripts/bench-vs-wrk.sh [TERN_BINARY] [ROUNDS]
set -euo pipefail
T=${1:-target/release/tern}
ROUNDS=${2:-3}
D=$(mktemp -d /tmp/tern-bvw.XXXXXX)
mkdir -p "$D/www" "$D/run"; : > "$D/www/empty.html"; chmod -R a+rX "$D"
cat > "$D/nginx.conf" <<CONF
worker_processes 2; pid $D/run/nginx.pid; error_log $D/run/error.log warn;
events { worker_connections 4096; }
http { access_log off; sendfile on; tcp_nopush on; tcp_nodelay on; keepalive_requests 1000000; keepalive_timeout 30s;
  open_file_cache max=1000 inactive=60s;
  client_body_temp_path $D/run/b; proxy_temp_path $D/run/p; fastcgi_temp_path $D/run/f; uwsgi_temp_path $D/run/u; scgi_temp_path $D/run/s;
  server { listen 127.0.0.1:18181; root $D/www; } }
CONF
set +m
nginx -p "$D/run" -c "$D/nginx.conf" -e "$D/run/error.log" -g 'daemon off;' &
NGX=$!
trap 'kill $NGX 2>/dev/null; wait $NGX 2>/dev/null; rm -rf "$D"' EXIT
sleep 0.5
URL=http://127.0.0.1:18181/empty.html
echo "round tool c req_per_s cpu_s us_per_req"
for r in $(seq 1 "$ROUNDS"); do
  for c in 10 50; do
    out=$(/usr/bin/time -f 'CPU %U %S' wrk -t1 -c$c -d5s $URL 2>&1)
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    cpu=$(echo "$out" | awk '/^CPU/ {print $2+$3}')
    echo "$r wrk $c $rps $cpu $(python3 -c "print(round($cpu*1e6/($rps*5),2))")"
    out=$(/usr/bin/time -f 'CPU %U %S' "$T" bench -k -t1 -c$c -d5s $URL 2>&1)
    rps=$(echo "$out" | awk '/responses in/ {for(i=1;i<NF;i++) if ($(i+1) ~ /^req\/s/) {print $i; exit}}')
    cpu=$(echo "$out" | awk '/^CPU/ {print $2+$3}')
    echo "$r tern-bench $c $rps $cpu $(python3 -c "print(round($cpu*1e6/($rps*5),2))")"
  done
done
