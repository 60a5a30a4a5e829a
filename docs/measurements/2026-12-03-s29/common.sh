# common.sh: what the scripts beside it share (sourced, not run): session
# 28's setup (its common.sh), and one more step, both servers' configs
# and the application on a Unix socket in one work directory.
. "$(dirname "${BASH_SOURCE[0]}")/../2026-12-03-s28/common.sh"

unix_pair() { # DIR TERN_PORT LIGHTTPD_PORT: $w/unix.toml, $w/lighttpd.conf,
  # the application on $w/app.sock; sets $app_pid (spawn-fcgi's pid)
  workdir "$1"
  tern_conf "$2" "unix:$w/app.sock" > "$w/unix.toml"
  lighttpd_conf "$3" > "$w/lighttpd.conf"
  start_app -s "$w/app.sock" -M 0666; app_pid=$spawner
  sleep 1
}
