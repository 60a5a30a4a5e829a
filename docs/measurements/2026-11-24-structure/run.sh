#!/bin/bash
# Interleaved: base, after, base, after, ... (3 rounds each)
set -e
driver=/work/perf-after/target/release/tern
for round in 1 2 3; do
  for which in base after; do
    $driver suite -q --tern /work/perf-$which/target/release/tern --sections static,persistent \
      --only "c=10, keep-alive" -d 2s --warmup 500ms -o /tmp/perf/$which-$round > /dev/null 2>&1
    echo "$which $round done"
  done
done
