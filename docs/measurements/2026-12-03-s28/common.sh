# common.sh: what the scripts beside it share (sourced, not run): a work
# directory, tern's and lighttpd's configs for the FastCGI C application,
# the application itself (peers.sh's fcgi-app.c, 4 processes under
# spawn-fcgi), and CPU ticks of processes.
app=${APP:-/tmp/peerbench/bin/fcgi-app}
[ -x "$app" ] || { echo "no $app: build peers.sh's fcgi-app.c (gcc -O2 -lfcgi)" >&2; exit 1; }

workdir() { # DIR: made empty, with an empty docroot DIR/www
  w=$1; rm -rf "$w"; mkdir -p "$w/www"; chmod 755 "$w"
}

tern_conf() { # PORT CONNECT: tern's config, /fcgi/ to the application at CONNECT
  cat <<T
[[listen]]
address = "127.0.0.1:$1"
[[site]]
root = "$w/www"
[[site.route]]
prefix = "/fcgi"
handler = "fastcgi"
connect = "$2"
max_connections = 4
T
}

lighttpd_conf() { # PORT: lighttpd's config, /fcgi/ to the application on $w/app.sock
  cat <<T
server.document-root = "$w/www"
server.port = $1
server.bind = "127.0.0.1"
server.modules = ( "mod_fastcgi" )
server.max-keep-alive-requests = 1000000
fastcgi.server = ( "/fcgi/" => (( "socket" => "$w/app.sock", "check-local" => "disable" )) )
T
}

start_app() { # spawn-fcgi's ARGS for where it listens; sets $spawner
  env FCGI_WORKERS=4 spawn-fcgi -n "$@" -u nobody -g nogroup -- "$app" >> "$w/app.log" 2>&1 &
  spawner=$!
}

stop_app() { # SPAWNER
  kill "$1" $(pgrep -P "$1") 2>/dev/null
}

ticks() { # PIDS: their user and system CPU, in clock ticks
  for p in "$@"; do awk '{print $14+$15}' /proc/$p/stat 2>/dev/null; done | awk '{s+=$1} END {print s}'
}
