#!/bin/bash
# run.sh ROUNDS SERVERS PATH C: php-fpm (4 static children, unix socket) behind tern builds and lighttpd; CPU of server + php-fpm per request
# Kept as run in session 15: "before" is session 14's build (/tmp/tern-s14, cd10265), "now" the
# build with a connection per request while quiet (/tmp/tern-bin, ff21fc8); php-fpm with
# peers.sh's configuration (/tmp/peerbench/conf/php-fpm.conf: 4 static children).
w=/tmp/fpmab; rounds=$1; servers=$2; path=${3:-/php/hello.php}; c=${4:-1}
for b in before now; do cat > $w/$b.toml <<T
[[listen]]
address = "127.0.0.1:$([ $b = now ] && echo 18701 || echo 18702)"
[[site]]
root = "/tmp/peerbench/www"
[[site.route]]
prefix = "/php"
handler = "fastcgi"
connect = "unix:/tmp/peerbench/run/php-fpm.sock"
dir = "/tmp/peerbench/www/php"
max_connections = 4
T
done
/usr/sbin/php-fpm8.2 -F -y /tmp/peerbench/conf/php-fpm.conf -R > $w/fpm.log 2>&1 & FPM=$!
sleep 1
ticks() { for p in "$@"; do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | awk '{s+=$1} END {print s}'; }
declare -A port=([now]=18701 [before]=18702 [lighttpd]=18083)
for r in $(seq 1 $rounds); do for s in $servers; do
  case $s in
    now) /tmp/tern-bin serve --config $w/now.toml > $w/now.log 2>&1 & ;;
    before) /tmp/tern-s14 serve --config $w/before.toml > $w/before.log 2>&1 & ;;
    lighttpd) lighttpd -D -f /tmp/peerbench/conf/lighttpd.conf > $w/l.log 2>&1 & ;;
  esac
  P=$!; sleep 1
  pids="$P $FPM $(pgrep -P $FPM)"
  wrk -t1 -c$c -d1s http://127.0.0.1:${port[$s]}$path > /dev/null
  t0=$(ticks $pids); out=$(wrk -t1 -c$c -d3s http://127.0.0.1:${port[$s]}$path); t1=$(ticks $pids)
  n=$(echo "$out" | awk '/requests in/{print $1}'); rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
  echo "$s c$c rps=$rps cpu_us=$(echo "($t1-$t0)*10000/$n" | bc -l | cut -c1-6)"
  kill $P; wait $P 2>/dev/null; sleep 0.5
done; done
kill $FPM; wait $FPM 2>/dev/null
