#!/usr/bin/env bash
# tern as the extra server of ../shared/bench/peers.sh, for every section it
# can serve: writes a config mapping the peers' URLs and runs tern in the
# foreground (peers.sh stops it by its process group).
# Usage (as EXTRA_SERVER_CMD): scripts/peers-tern.sh TERN_BINARY {port} {docroot}
set -euo pipefail
tern=$1 port=$2 root=$3
cfg=$(mktemp /tmp/tern-peers.XXXXXX.toml)
cat > "$cfg" <<CONF
[[listen]]
address = "127.0.0.1:$port"

[[site]]
root = "$root"

[[site.route]]
prefix = "/cgi-bin"
handler = "cgi"
dir = "${PEERBENCH_CGI_BIN:-$root/cgi-bin}"
CONF
exec "$tern" serve --config "$cfg"
