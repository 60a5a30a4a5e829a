#!/usr/bin/env bash
# tern as the extra server of ../shared/bench/peers.sh, for every section it
# can serve: writes a config mapping the peers' URLs and runs tern in the
# foreground (peers.sh stops it by its process group).
# Usage (as EXTRA_SERVER_CMD): scripts/peers-tern.sh TERN_BINARY {port} {docroot}
set -euo pipefail
tern=$1 port=$2 root=$3
# One file per port, written again each run: tern runs in the foreground
# until peers.sh kills its process group, so a temporary file would never
# be removed and one would be left behind per run.
cfg=/tmp/tern-peers-$port.toml
cat > "$cfg" <<CONF
[[listen]]
address = "127.0.0.1:$port"

[[site]]
root = "$root"

[[site.route]]
prefix = "/cgi-bin"
handler = "cgi"
dir = "${PEERBENCH_CGI_BIN:-$root/cgi-bin}"

[[site.route]]
prefix = "/phpcgi"
handler = "cgi"
dir = "$root/phpcgi"
interpreter = "/usr/bin/php-cgi"
CONF
# The shared FastCGI servers (peers.sh starts them with FCGI_PROCS processes
# each): one kept connection per process at most, or a connection would wait
# for a process that never frees up.
procs=${FCGI_PROCS:-4}
if [ -n "${PEERBENCH_FCGI_UNIX:-}" ]; then
  cat >> "$cfg" <<CONF

[[site.route]]
prefix = "/fcgi"
handler = "fastcgi"
connect = "unix:$PEERBENCH_FCGI_UNIX"
max_connections = $procs

[[site.route]]
prefix = "/fcgi-tcp"
handler = "fastcgi"
connect = "$PEERBENCH_FCGI_TCP"
max_connections = $procs

[[site.route]]
prefix = "/php"
handler = "fastcgi"
connect = "unix:$PEERBENCH_PHP_FPM"
dir = "$root/php"
max_connections = $procs
CONF
fi
exec "$tern" serve --config "$cfg"
