#!/usr/bin/env bash
# Checks the deployment example in deploy/ without a cluster or a container
# engine, one line per check, stopping at the first failure:
#
# 1. every deploy/k8s/*.yaml and deploy/bench/*.yaml (the sharded load
#    generator's Jobs) is valid against the Kubernetes API's schemas
#    (kubernetes-validate, strict: an unknown or misspelt field is an error),
#    for the oldest and the newest Kubernetes versions named below;
# 2. the tern.toml embedded in deploy/k8s/configmap.yaml is byte-identical to
#    deploy/tern.toml (the file the image carries);
# 3. `tern check` accepts deploy/tern.toml. tern checks that a site's root
#    exists, and /srv/www is the image's, not this machine's: the check runs
#    on a copy whose root is an empty temporary directory, the file otherwise
#    unchanged.
#
# kubernetes-validate (and PyYAML, which it brings) are installed with pip
# into a virtualenv under target/ the first time.
#
# Usage: scripts/deploy-check.sh        (TERN=path/to/tern, default target/debug/tern)
set -euo pipefail
cd "$(dirname "$0")/.."

tern=${TERN:-target/debug/tern}
# The oldest Kubernetes the manifests are meant for, and the newest schema
# the pinned kubernetes-validate carries.
K8S_VERSIONS="1.33.0 1.37.0"
KUBERNETES_VALIDATE=kubernetes-validate==1.37.0

fail() { echo "deploy-check: $*" >&2; exit 1; }

venv=target/deploy-venv
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  echo "installing $KUBERNETES_VALIDATE (pip, in $venv)"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install -q "$KUBERNETES_VALIDATE"
fi

# 1. The manifests against the API's schemas.
manifests=(deploy/k8s/*.yaml deploy/bench/*.yaml)
[ -e "${manifests[0]}" ] || fail "no deploy/k8s/*.yaml"
for version in $K8S_VERSIONS; do
  if ! out=$("$venv/bin/kubernetes-validate" --strict --kubernetes-version "$version" "${manifests[@]}" 2>&1); then
    printf '%s\n' "$out" >&2
    fail "deploy/{k8s,bench}/*.yaml: not valid for Kubernetes $version"
  fi
  # Warnings (a deprecated API, say) pass the exit code: refuse them too.
  if grep -qv '^INFO' <<<"$out"; then
    printf '%s\n' "$out" >&2
    fail "deploy/{k8s,bench}/*.yaml: warnings for Kubernetes $version"
  fi
  echo "ok: ${manifests[*]} valid for Kubernetes $version (strict)"
done

# 2. The ConfigMap's tern.toml is deploy/tern.toml.
"$venv/bin/python" - deploy/k8s/configmap.yaml deploy/tern.toml <<'PY' || fail "deploy/k8s/configmap.yaml: tern.toml differs from deploy/tern.toml"
import difflib, sys, yaml

with open(sys.argv[1], encoding="utf-8") as f:
    docs = [d for d in yaml.safe_load_all(f) if d]
maps = [d for d in docs if d.get("kind") == "ConfigMap" and "tern.toml" in d.get("data", {})]
if len(maps) != 1:
    sys.exit(f"{sys.argv[1]}: expected one ConfigMap with data.tern.toml, found {len(maps)}")
embedded = maps[0]["data"]["tern.toml"].encode("utf-8")
with open(sys.argv[2], "rb") as f:
    original = f.read()
if embedded != original:
    diff = difflib.unified_diff(
        original.decode("utf-8", "replace").splitlines(keepends=True),
        embedded.decode("utf-8", "replace").splitlines(keepends=True),
        sys.argv[2], sys.argv[1] + " data.tern.toml")
    sys.stderr.writelines(diff)
    sys.exit(1)
PY
echo "ok: deploy/k8s/configmap.yaml holds deploy/tern.toml byte for byte"

# 3. tern accepts the configuration (with the root moved to a directory that
#    exists here: the only change).
[ -x "$tern" ] || fail "no tern binary at $tern (cargo build -p tern, or TERN=...)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/www"
grep -q '^root = "/srv/www"$' deploy/tern.toml || fail "deploy/tern.toml: no line root = \"/srv/www\" to replace"
sed "s|^root = \"/srv/www\"\$|root = \"$work/www\"|" deploy/tern.toml >"$work/tern.toml"
if ! out=$("$tern" check --config "$work/tern.toml" 2>&1); then
  printf '%s\n' "$out" >&2
  fail "$tern check: refused deploy/tern.toml (root replaced by $work/www)"
fi
echo "ok: $tern check accepts deploy/tern.toml (root replaced by a temporary directory)"
