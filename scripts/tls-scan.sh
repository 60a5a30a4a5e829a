#!/usr/bin/env bash
# TLS conformance: sslyze and testssl.sh against tern's TLS listeners.
#
# - sslyze (pip, in a virtualenv under target/) checks a listener with the
#   default profile against Mozilla's "intermediate" configuration and one
#   with `profile = "modern"` against "modern": both must be compliant.
# - testssl.sh (Debian's package) scans the intermediate listener; any
#   finding of severity MEDIUM, HIGH or CRITICAL fails the run, except those
#   that are properties of the test certificate rather than of tern
#   (listed in CERT_ONLY below, each with its reason).
#
# The certificate comes from tern's own local CA (`internal`), whose root the
# scanners are given (`--certinfo_ca_file`, `--add-ca`), so the chain of
# trust is checked too. HSTS and the usual security headers are set by a
# header rule, as docs/configuration.md shows.
#
# Usage: scripts/tls-scan.sh [path/to/tern]   (default: target/debug/tern)
set -euo pipefail
cd "$(dirname "$0")/.."

tern=${1:-target/debug/tern}
[ -x "$tern" ] || { echo "tls-scan.sh: no tern binary at $tern (cargo build -p tern)" >&2; exit 2; }

# testssl findings that belong to the test certificate, not to the server:
# - cert_revocation: a local CA's certificate names no CRL or OCSP URL
#   (a public CA's does; tern staples nothing either way).
# - cert_expirationStatus, cert_notAfter: testssl 3.0 warns when fewer than
#   60 days are left, which every certificate of 90 days or less (Let's
#   Encrypt's, the 47 days of CA/B Forum SC-081, the local CA's 88) meets
#   for most of its life.
CERT_ONLY='^(cert_revocation|cert_expirationStatus|cert_notAfter)$'

if ! command -v testssl >/dev/null; then
  echo "installing testssl.sh"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq testssl.sh >/dev/null
fi
venv=target/sslyze-venv
if [ ! -x "$venv/bin/sslyze" ]; then
  echo "installing sslyze (pip, in $venv)"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q sslyze
fi

work=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/www"
printf '<!doctype html><title>tern</title>hello\n' >"$work/www/index.html"
cat >"$work/tern.toml" <<EOF
[[listen]]
address = "127.0.0.1:0"
[listen.tls]
internal = { dir = "$work/pki" }

[[listen]]
address = "127.0.0.1:0"
[listen.tls]
internal = { dir = "$work/pki" }
profile = "modern"

[[site]]
root = "$work/www"

[[site.headers]]
path = "/**"
set = { "Strict-Transport-Security" = "max-age=63072000", "X-Content-Type-Options" = "nosniff", "X-Frame-Options" = "DENY", "Content-Security-Policy" = "default-src 'self'", "Referrer-Policy" = "no-referrer" }
EOF

"$tern" serve --config "$work/tern.toml" >"$work/out" 2>"$work/log" &
pid=$!
. scripts/lib/tern-ports.sh
ports=$(tern_ports "$work/out" "$pid" https 2 || true)
set -- $ports
[ $# -eq 2 ] || { echo "tls-scan.sh: tern did not start:" >&2; cat "$work/log" >&2; exit 1; }
intermediate=$1 modern=$2
root="$work/pki/root.pem"

failed=0
for pair in "intermediate:$intermediate" "modern:$modern"; do
  profile=${pair%%:*} port=${pair##*:}
  "$venv/bin/sslyze" --mozilla_config="$profile" --certinfo_ca_file "$root" \
    "localhost:$port" >"$work/sslyze-$profile.txt" 2>&1 || true
  verdict=$(grep -E "localhost:$port: " "$work/sslyze-$profile.txt" | tail -1 | sed 's/^ *//')
  echo "sslyze --mozilla_config=$profile: $verdict"
  if ! grep -q "OK - Compliant" <<<"$verdict"; then
    failed=1
    sed -n '/COMPLIANCE AGAINST/,$p' "$work/sslyze-$profile.txt"
  fi
done

testssl --quiet --color 0 --warnings off --add-ca "$root" --ip 127.0.0.1 \
  --jsonfile "$work/testssl.json" "localhost:$intermediate" >"$work/testssl.txt" 2>&1 || true
[ -s "$work/testssl.json" ] || { echo "tls-scan.sh: testssl wrote no findings:" >&2; tail -30 "$work/testssl.txt" >&2; exit 1; }
findings=$(python3 - "$work/testssl.json" "$CERT_ONLY" <<'PY'
import json, re, sys
findings = json.load(open(sys.argv[1]))
exempt = re.compile(sys.argv[2])
for f in findings:
    if f["severity"] in ("MEDIUM", "HIGH", "CRITICAL"):
        mark = "certificate only" if exempt.match(f["id"]) else "FAIL"
        print(f"{mark}\t{f['severity']}\t{f['id']}\t{f['finding']}")
PY
)
echo "testssl: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/testssl.json") findings; MEDIUM or worse:"
printf '%s\n' "${findings:-  (none)}" | sed 's/^/  /'
if grep -q '^FAIL' <<<"$findings"; then
  failed=1
fi

if [ "$failed" -ne 0 ]; then
  echo "tls-scan: failed (tern's log follows)" >&2
  tail -30 "$work/log" >&2
  exit 1
fi
echo "tls-scan: sslyze compliant (intermediate, modern); testssl: no MEDIUM, HIGH or CRITICAL finding beyond the test certificate's"
