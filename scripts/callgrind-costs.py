#!/usr/bin/env python3
"""callgrind-costs.py: where a callgrind file's instructions go, per request.

Usage:
  scripts/callgrind-costs.py FILE [-n REQUESTS] [-t TOP]
      each function's self cost (its own instructions, not its callees'),
      largest first
  scripts/callgrind-costs.py FILE --callers REGEX [-n REQUESTS] [-t TOP]
      the functions that call those matching REGEX, with what those calls
      cost (inclusive) and how many there were

FILE is what `scripts/instructions.sh -k` keeps (PREFIX.PID.1); REQUESTS
(its -n) divides every figure, so they read as instructions a request.
callgrind_annotate sums by file as well as function and drops what
inlining left without a file; this reads the `fn=` records themselves,
with callgrind's name compression, and leaves nothing out. Examples
(docs/PERFORMANCE.md, "The events a read brought, taken in one pass"):
  scripts/callgrind-costs.py /tmp/instructions.1234.1 -n 1000 -t 40
  scripts/callgrind-costs.py /tmp/instructions.1234.1 -n 1000 --callers '^__memcpy'
"""
import argparse
import collections
import re

NAME = re.compile(r"\((\d+)\)(?:\s+(.*))?")


def read(path, callers_of=None):
    """Self costs by function; with `callers_of`, the costs of calls to
    matching functions by caller (and their counts) instead."""
    names = {}

    def name(spec):
        m = NAME.match(spec)
        if not m:
            return spec
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), spec)

    cost = collections.Counter()
    calls = collections.Counter()
    fn = callee = None
    call_line = False
    count = 0
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("fn="):
                fn = name(line[3:].strip())
            elif line.startswith("cfn="):
                callee = name(line[4:].strip())
            elif line.startswith(("cfi=", "cfl=", "cob=", "fl=", "fi=", "fe=", "ob=")):
                continue
            elif line.startswith("calls="):
                call_line = True
                count = int(line.split()[0][len("calls="):])
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if len(parts) < 2 or fn is None:
                    call_line = False
                    continue
                value = int(parts[1])
                if call_line:
                    # The line after `calls=` is the call's inclusive cost,
                    # not the caller's own.
                    call_line = False
                    if callers_of and callee and callers_of.search(callee):
                        cost[fn] += value
                        calls[fn] += count
                elif not callers_of:
                    cost[fn] += value
    return cost, calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("-n", "--requests", type=float, default=1.0)
    ap.add_argument("-t", "--top", type=int, default=40)
    ap.add_argument("--callers", metavar="REGEX")
    args = ap.parse_args()
    pattern = re.compile(args.callers) if args.callers else None
    cost, calls = read(args.file, pattern)
    n = args.requests
    if pattern is None:
        print(f"total {sum(cost.values()) / n:,.0f}")
    for f, c in cost.most_common(args.top):
        times = f" {calls[f] / n:6.1f} calls" if pattern else ""
        print(f"{c / n:10,.0f}{times}  {f[:160]}")


if __name__ == "__main__":
    main()
