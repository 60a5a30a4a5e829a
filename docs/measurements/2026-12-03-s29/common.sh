# common.sh: what the scripts beside it share (sourced, not run): session
# 28's setup (its common.sh), and one more step, both servers' configs
# and the application on a Unix socket in one work directory, and one
# run of pinned.sh (pinned_run).
. "$(dirname "${BASH_SOURCE[0]}")/../2026-12-03-s28/common.sh"

unix_pair() { # DIR TERN_PORT LIGHTTPD_PORT: $w/unix.toml, $w/lighttpd.conf,
  # the application on $w/app.sock; sets $app_pid (spawn-fcgi's pid)
  workdir "$1"
  tern_conf "$2" "unix:$w/app.sock" > "$w/unix.toml"
  lighttpd_conf "$3" > "$w/lighttpd.conf"
  start_app -s "$w/app.sock" -M 0666; app_pid=$spawner
  sleep 1
}

pinned_run() { # NAME PORT SERVER_PID SPAWNER: one pinned.sh run (wrk -t1 -c1 on /fcgi/$path for $secs s)
  local url=http://127.0.0.1:$2/fcgi/$path pids t0 t1 out req
  [ -n "${PIN_SRV:-}" ] && taskset -a -pc $PIN_SRV $3 > /dev/null
  [ -n "${PIN_APP:-}" ] && for a in $4 $(pgrep -P $4); do taskset -pc $PIN_APP $a > /dev/null; done
  wrk -t1 -c1 -d1s $url > /dev/null 2>&1
  pids="$3 $4 $(pgrep -P $4)"
  apps="$4 $(pgrep -P $4)"
  t0=$(ticks $pids); a0=$(ticks $apps)
  out=$(${WRK_PIN:-} wrk -t1 -c1 -d${secs}s --latency $url)
  t1=$(ticks $pids); a1=$(ticks $apps)
  req=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$1: $req requests, $(echo "$req / $secs" | bc) req/s, $(echo "($t1 - $t0) * 10000 / $req" | bc -l | cut -c1-6) us CPU/request, app $(echo "($a1 - $a0) * 10000 / $req" | bc -l | cut -c1-6), p50 $(echo "$out" | awk '$1=="50%" {print $2}')"
}
