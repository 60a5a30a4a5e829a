#!/usr/bin/env bash
# pgo-train.sh: the load scripts/pgo.sh trains an instrumented tern on, and
# that `scripts/test-all` runs briefly against the test build, so that it
# keeps working as tern changes (a training run that failed half way would
# give a profile of half the paths, silently).
#
# Usage: scripts/pgo-train.sh TERN_BINARY [SECONDS_PER_LOAD]   (default 2)
#
# Every request path tern has, not one benchmark row, over loopback: static
# files from 0 B to 1 MB (keep-alive and a new connection per request, one
# and several connections, HTTP/1.1 and HTTP/2, cleartext and TLS, a
# conditional request, a miss), CGI, and FastCGI both ways tern talks to an
# application (processes it runs, and a socket it connects to). The client
# is the binary's own `tern bench`, which is trained with it. Each load must
# get only the status it expects and no error; the server must stop cleanly
# (an instrumented binary writes its counts as it exits).
set -euo pipefail
bin=$(realpath "${1:?usage: pgo-train.sh TERN_BINARY [SECONDS_PER_LOAD]}")
secs=${2:-2}
work=$(mktemp -d /tmp/tern-pgo-train.XXXXXX)
server="" app=""
cleanup() {
  for p in $server $app; do
    if kill -0 "$p" 2>/dev/null; then kill "$p"; wait "$p" || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/www/cgi-bin" "$work/fcgi-bin"
: > "$work/www/0k.html"
head -c 4096 /dev/zero | tr '\0' a > "$work/www/4k.html"
head -c 65536 /dev/zero | tr '\0' b > "$work/www/64k.html"
head -c 1048576 /dev/zero | tr '\0' c > "$work/www/1m.bin"
printf '#!/bin/sh\nprintf "Content-Type: text/plain\\r\\n\\r\\nHello!\\n"\n' > "$work/www/cgi-bin/hello"
chmod +x "$work/www/cgi-bin/hello"
# The demo's FastCGI application is tern's own binary under this name.
ln "$bin" "$work/fcgi-bin/hello.fcgi" 2>/dev/null || cp "$bin" "$work/fcgi-bin/hello.fcgi"
# An application tern connects to: the same program on a Unix socket bound
# here, as spawn-fcgi would.
python3 - "$work/app.sock" "$work/fcgi-bin/hello.fcgi" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(64)
os.dup2(s.fileno(), 0)
os.execv(sys.argv[2], ["hello.fcgi"])
PY
app=$!
cat > "$work/tern.toml" <<CONF
[[listen]]
address = "127.0.0.1:0"

[[listen]]
address = "127.0.0.1:0"
[listen.tls]
internal = { names = ["127.0.0.1"], dir = "$work/pki" }

[[site]]
root = "$work/www"

[[site.route]]
prefix = "/cgi-bin"
handler = "cgi"
dir = "$work/www/cgi-bin"

[[site.route]]
prefix = "/fcgi"
handler = "fastcgi"
command = ["$work/fcgi-bin/hello.fcgi"]
min_processes = 1
max_processes = 2

[[site.route]]
prefix = "/app"
handler = "fastcgi"
connect = "unix:$work/app.sock"
max_connections = 1

[access_log]
path = "$work/access.log"
CONF
"$bin" serve --config "$work/tern.toml" >"$work/out" 2>"$work/server.log" &
server=$!
# The ports the system chose, as tern prints them.
. "$(dirname "$0")/lib/tern-ports.sh"
plain=$(tern_ports "$work/out" "$server" http 1 || true)
tls=$(tern_ports "$work/out" "$server" https 1 || true)
if [ -z "$plain" ] || [ -z "$tls" ]; then
  echo "pgo-train.sh: tern did not start:" >&2
  cat "$work/server.log" >&2
  exit 1
fi
plain=http://127.0.0.1:$plain tls=https://127.0.0.1:$tls
# load STATUS BENCH_ARGS...: a load of SECONDS, all answered with STATUS.
load() {
  local want=$1
  shift
  "$bin" bench --format json -q -d "${secs}s" "$@" | python3 -c '
import json, sys
c = json.load(sys.stdin)["counts"]
want, what = sys.argv[1], " ".join(sys.argv[2:])
errors = sum(c["errors"].values())
if errors or set(c["status"]) != {want} or c["responses"] == 0:
    sys.exit("pgo-train.sh: %s: %d responses, status %s, errors %s"
             % (what, c["responses"], c["status"], c["errors"]))
' "$want" "$@"
}
for url in $plain/0k.html $plain/4k.html $plain/64k.html $plain/1m.bin $plain/fcgi/hello $plain/app/hello; do
  load 200 -k -c 4 "$url"
  load 200 -c 4 "$url"
  load 200 -k -c 1 "$url"
  load 200 --http2 --streams 4 -c 2 "$url"
done
for url in $tls/0k.html $tls/64k.html $tls/fcgi/hello; do
  load 200 --insecure -k -c 4 "$url"
  load 200 --insecure --http2 --streams 4 -c 2 "$url"
done
load 200 -c 2 "$plain/cgi-bin/hello"
etag=$(curl -fsI "$plain/4k.html" | tr -d '\r' | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
load 304 -k -c 2 -H "If-None-Match: $etag" "$plain/4k.html"
load 404 -k -c 2 "$plain/missing"
kill "$server"
if ! wait "$server"; then
  echo "pgo-train.sh: the server did not stop cleanly" >&2
  cat "$work/server.log" >&2
  exit 1
fi
server=""
echo "pgo-train.sh: done ($(wc -l < "$work/access.log") requests)"
