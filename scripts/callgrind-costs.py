#!/usr/bin/env python3
"""callgrind-costs.py: where a callgrind file's instructions go, per request.

Usage:
  scripts/callgrind-costs.py FILE [-n REQUESTS] [-t TOP]
      each function's self cost (its own instructions, not its callees'),
      largest first
  scripts/callgrind-costs.py FILE --callers REGEX [-n REQUESTS] [-t TOP]
      the functions that call those matching REGEX, with what those calls
      cost (inclusive) and how many there were
  scripts/callgrind-costs.py FILE --callers REGEX --lines [-n REQUESTS]
      the same by call site: the caller and the source line of each call
      (inlined code names its own file), which finds a copy (`^__memcpy`)
      that no function of tern's names, as `Box::pin`'s in session 39
  -e EVENT counts another of the file's events instead of instructions:
      Ge, the locked instructions `scripts/instructions.sh -b` collects

FILE is what `scripts/instructions.sh -k` keeps (PREFIX.PID.1); REQUESTS
(its -n) divides every figure, so they read as instructions a request.
callgrind_annotate sums by file as well as function and drops what
inlining left without a file; this reads the `fn=` records themselves,
with callgrind's name compression, and leaves nothing out. Examples
(docs/PERFORMANCE.md, "The events a read brought, taken in one pass"):
  scripts/callgrind-costs.py /tmp/instructions.1234.1 -n 1000 -t 40
  scripts/callgrind-costs.py /tmp/instructions.1234.1 -n 1000 --callers '^__memcpy'
  scripts/callgrind-costs.py /tmp/instructions.1234.1 -n 1000 --callers '^__memcpy' --lines
  scripts/callgrind-costs.py /tmp/instructions.1234.1 -n 1000 -e Ge
"""
import argparse
import collections
import functools
import re

NAME = re.compile(r"\((\d+)\)(?:\s+(.*))?")


def read(path, callers_of=None, event="Ir", lines=False):
    """Self costs by function; with `callers_of`, the costs of calls to
    matching functions by caller (and their counts) instead, and with
    `lines` by caller and call site. `event` names the column of the
    file's `events:` line to sum."""
    column = 1

    def expand(table, spec):
        """`spec` with callgrind's name compression undone: `(N) name`
        defines N in `table`, `(N)` alone refers to it."""
        m = NAME.match(spec)
        if not m:
            return spec
        if m.group(2):
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), spec)

    # Functions and files are numbered apart.
    name = functools.partial(expand, {})
    file_name = functools.partial(expand, {})

    cost = collections.Counter()
    calls = collections.Counter()
    fn = callee = None
    # The file the next lines are in (`fi=`/`fe=`: inlined code), and the
    # last line number (callgrind writes them relative: `+N`, `-N`, `*`).
    fl = fi = "?"
    at = 0
    call_line = False
    count = 0
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
                if event not in events:
                    raise SystemExit(f"{path} has no {event} events (it has {', '.join(events)})")
                column = 1 + events.index(event)
            elif line.startswith("fn="):
                fn = name(line[3:].strip())
                fi = fl
            elif line.startswith("fl="):
                fl = fi = file_name(line[3:].strip())
            elif line.startswith(("fi=", "fe=")):
                fi = file_name(line[3:].strip())
            elif line.startswith(("cfi=", "cfl=")):
                file_name(line[4:].strip())
            elif line.startswith("cfn="):
                callee = name(line[4:].strip())
            elif line.startswith(("cob=", "ob=")):
                continue
            elif line.startswith("calls="):
                call_line = True
                count = int(line.split()[0][len("calls="):])
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if parts[0] != "*":
                    at = at + int(parts[0]) if parts[0][0] in "+-" else int(parts[0])
                if len(parts) < 2 or fn is None:
                    call_line = False
                    continue
                # callgrind leaves out a line's trailing zero counts.
                value = int(parts[column]) if len(parts) > column else 0
                if call_line:
                    # The line after `calls=` is the call's inclusive cost,
                    # not the caller's own.
                    call_line = False
                    if callers_of and callee and callers_of.search(callee):
                        key = fn
                        if lines:
                            key = f"{fn[:80]}  {'/'.join(fi.split('/')[-3:])}:{at}"
                        cost[key] += value
                        calls[key] += count
                elif not callers_of:
                    cost[fn] += value
    return cost, calls


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("-n", "--requests", type=float, default=1.0)
    ap.add_argument("-t", "--top", type=int, default=40)
    ap.add_argument("--callers", metavar="REGEX")
    ap.add_argument("--lines", action="store_true")
    ap.add_argument("-e", "--event", default="Ir")
    args = ap.parse_args()
    pattern = re.compile(args.callers) if args.callers else None
    if args.lines and pattern is None:
        ap.error("--lines goes with --callers")
    cost, calls = read(args.file, pattern, args.event, args.lines)
    n = args.requests
    # Locked instructions are a few a request: a decimal shows them.
    fmt = ",.0f" if args.event == "Ir" else ",.1f"
    if pattern is None:
        print(f"total {sum(cost.values()) / n:{fmt}}")
    for f, c in cost.most_common(args.top):
        if c == 0:
            break
        times = f" {calls[f] / n:6.1f} calls" if pattern else ""
        print(f"{c / n:10{fmt}}{times}  {f[:160]}")


if __name__ == "__main__":
    main()
