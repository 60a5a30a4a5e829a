#!/usr/bin/env bash
# pgo.sh: tern built with profile-guided optimisation, on top of the
# `release-lto` profile: the build to deploy and to measure when CPU per
# request matters. docs/PERFORMANCE.md ("Profile-guided optimisation") has
# what it buys and how that was measured.
#
# Usage: scripts/pgo.sh [OUT]     (OUT: where the binary goes; target/pgo/tern)
#
# 1. builds tern instrumented (rustc -Cprofile-generate) in target/pgo/generate;
# 2. trains it with scripts/pgo-train.sh, about a minute of every request
#    path tern has (not one benchmark row);
# 3. merges the counts with the llvm-profdata of rustc's LLVM version and
#    builds again with -Cprofile-use in target/pgo/use.
# Each build is a whole `release-lto` build: about 16 and 11 minutes from
# nothing on two cores, less when only tern's crates changed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/pgo/tern}
host=$(rustc -vV | sed -n 's/^host: //p')
llvm=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
profdata=""
for p in "$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata" "llvm-profdata-$llvm"; do
  if command -v "$p" >/dev/null; then profdata=$p; break; fi
done
if [ -z "$profdata" ]; then
  echo "pgo.sh: llvm-profdata of LLVM $llvm is needed: apt-get install llvm-$llvm, or rustup component add llvm-tools" >&2
  exit 2
fi
# --target keeps RUSTFLAGS off build scripts and proc macros, which run
# on the build machine and need no profile.
build() { # build TARGET_DIR RUSTFLAGS
  RUSTFLAGS="$2" cargo build --profile release-lto -p tern --target "$host" --target-dir "$1"
}

echo "pgo.sh: 1/3 the instrumented build"
# A fixed path: the flags stay the same, and a second run rebuilds only
# what changed.
raw=$PWD/target/pgo/raw
build target/pgo/generate "-Cprofile-generate=$raw"
rm -rf "$raw"

echo "pgo.sh: 2/3 training"
scripts/pgo-train.sh "target/pgo/generate/$host/release-lto/tern"

echo "pgo.sh: 3/3 the optimised build"
"$profdata" merge -o target/pgo/tern.profdata "$raw"/*.profraw
build target/pgo/use "-Cprofile-use=$PWD/target/pgo/tern.profdata"
mkdir -p "$(dirname "$out")"
cp "target/pgo/use/$host/release-lto/tern" "$out"
echo "pgo.sh: $out"
