#!/bin/bash
# usage: fcgi-unix.sh TERN_BIN [ROUNDS] [SERVERS]: the FastCGI C application
# (peers.sh's, /tmp/peerbench/bin/fcgi-app; run peers.sh fcgi once to build
# it) on a Unix socket with 4 processes, behind tern and lighttpd, wrk -t1
# -c1/-c10 for 3 s on "Hello!" and 64 KB, interleaved. CPU µs per request is
# the server's and the application's processes' together.
# With BEFORE=OTHER_TERN_BIN, "before" is that binary with tern's config.
set -u
tern=$(realpath "$1"); rounds=${2:-2}; servers=${3:-"tern lighttpd"}
app=/tmp/peerbench/bin/fcgi-app
[ -x $app ] || { echo "no $app: run ../shared/bench/peers.sh fcgi once" >&2; exit 1; }
w=/tmp/fcgiunix
rm -rf $w; mkdir -p $w/www; chmod 755 $w
cat > $w/tern.toml <<T
[[listen]]
address = "127.0.0.1:18601"
[[site]]
root = "$w/www"
[[site.route]]
prefix = "/fcgi"
handler = "fastcgi"
connect = "unix:$w/app.sock"
max_connections = 4
T
sed 's/18601/18603/' $w/tern.toml > $w/before.toml
cat > $w/lighttpd.conf <<T
server.document-root = "$w/www"
server.port = 18602
server.bind = "127.0.0.1"
server.modules = ( "mod_fastcgi" )
server.max-keep-alive-requests = 1000000
fastcgi.server = ( "/fcgi/" => (( "socket" => "$w/app.sock", "check-local" => "disable" )) )
T
env FCGI_WORKERS=4 spawn-fcgi -n -s $w/app.sock -M 0666 -u nobody -g nogroup -- $app > $w/app.log 2>&1 &
spawner=$!
sleep 1
ticks() { for p in "$@"; do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | awk '{s+=$1} END {print s}'; }
apps() { echo $spawner $(pgrep -P $spawner); }
declare -A port=([tern]=18601 [lighttpd]=18602 [before]=18603)
for r in $(seq 1 $rounds); do
  for s in $servers; do
    case $s in
      tern) "$tern" serve --config $w/tern.toml > $w/tern.log 2>&1 & ;;
      before) "$BEFORE" serve --config $w/before.toml > $w/before.log 2>&1 & ;;
      lighttpd) lighttpd -D -f $w/lighttpd.conf > $w/lighttpd.log 2>&1 & ;;
    esac
    pid=$!
    sleep 1
    for path in hello 64k; do for c in 1 10; do
      pids="$pid $(apps)"
      t0=$(ticks $pids)
      out=$(wrk -t1 -c$c -d3s --latency http://127.0.0.1:${port[$s]}/fcgi/$path 2>/dev/null)
      t1=$(ticks $pids)
      reqs=$(echo "$out" | awk '/requests in/{print $1}')
      rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
      p99=$(echo "$out" | awk '$1=="99%"{print $2}')
      echo "$s $path c$c rps=$rps p99=$p99 cpu_us=$(echo "($t1-$t0)*10000/$reqs" | bc -l | cut -c1-6)"
    done; done
    kill $pid; wait $pid 2>/dev/null
    sleep 0.5
  done
done
kids=$(pgrep -P $spawner); kill $spawner $kids 2>/dev/null; wait 2>/dev/null
