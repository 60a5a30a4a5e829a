# common.sh: what levels.sh, pstat.sh, sched.sh and perfw.sh share (sourced from the repository root, not run):
# session 28's common.sh, a work directory with tern's and lighttpd's configs for peers.sh's C application on a
# Unix socket (started here, 4 processes), and a server started from either.
. docs/measurements/2026-12-03-s28/common.sh

setup() { # DIR PORT: the work directory, the configs, the application; sets $w, $port and $spawner
  workdir "$1"
  port=$2
  : > "$w/www/0k.html"
  tern_conf "$port" "unix:$w/app.sock" > "$w/t.toml"
  lighttpd_conf "$port" > "$w/l.conf"
  start_app -s "$w/app.sock" -M 0666
  sleep 1
}

serve() { # BIN URL: lighttpd when BIN is "lighttpd", else that tern binary; sets $sp once URL answers
  if [ "$1" = lighttpd ]; then
    lighttpd -D -f "$w/l.conf" > "$w/s.log" 2>&1 & sp=$!
  else
    "$1" serve --config "$w/t.toml" > "$w/s.log" 2>&1 & sp=$!
  fi
  for _ in $(seq 50); do curl -fs -o /dev/null "$2" && break; sleep 0.1; done
}

unserve() { kill "$sp"; wait "$sp" 2>/dev/null; }
