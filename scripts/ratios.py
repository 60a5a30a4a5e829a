#!/usr/bin/env python3
"""Median req/s, p99 and server CPU per request of each server over the rounds
of a peers.sh results.tsv, with tern's ratio to the best peer, as Markdown,
and under the table how many rows meet issue 14's three goals by median
(req/s at least the best peer's, p99 no worse, CPU a request at or below
the cheapest peer's), naming the rows whose CPU is above.

The last column is the load generator's share of a core and its CPU per
request, tern's run beside the best peer's. A row where both clients were
busy (CLIENT_BOUND of a core or more) is set by the client: its req/s is
one second over the client's CPU per request, whatever the server spends
(docs/PERFORMANCE.md, session 46). The goals line names the rows that trail
so, apart from the rest.

Usage: ratios.py RESULTS.tsv [SECTION] [TERN_NAME] [--rounds]

--rounds: tern against its peers round by round instead. peers.sh runs
every server once a round, in turn, so a round's figures were measured
minutes apart under the same load on the host; a ratio taken within a round
leaves out what the host did between rounds, which moves every server's
absolute figures. For each row: tern's req/s over that of the best peer
(the highest median req/s), the median of the rounds' ratios, their range
and the rounds where tern was at or above; then the cheapest peer's CPU per
request (the lowest median) over tern's, the same way (above 1: tern costs
less).
"""
import csv
import statistics
import sys
from collections import defaultdict


def read(path, section):
    """The rows of one section: {(case, tool, c, server): [row...]}, the
    (case, tool, c) keys and the servers, each in the file's order."""
    runs = defaultdict(list)
    servers = []
    cases = []
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["section"] != section:
                continue
            key = (row["case"], row["tool"], row["c"])
            if key not in cases:
                cases.append(key)
            if row["server"] not in servers:
                servers.append(row["server"])
            runs[key + (row["server"],)].append(row)
    return runs, cases, servers


def med(rows, col):
    return statistics.median(float(r[col]) for r in rows)


# The load generator's share of a core from which a row counts as set by
# the client (wrk -t1 and ab run on one core).
CLIENT_BOUND = 0.95


def client(rows):
    """The load generator's median share of a core, and its median CPU µs
    per request (NaN where no run has both: a run that failed)."""
    ran = [r for r in rows if float(r["secs"] or 0) > 0 and float(r["requests"] or 0) > 0
           and r.get("client_cpu_s")]
    if not ran:
        return float("nan"), float("nan")
    busy = statistics.median(float(r["client_cpu_s"]) / float(r["secs"]) for r in ran)
    per = statistics.median(float(r["client_cpu_s"]) * 1e6 / float(r["requests"]) for r in ran)
    return busy, per


def medians(path, section, tern):
    runs, cases, servers = read(path, section)
    peers = [s for s in servers if s != tern]
    print(f"| case | tool | c | " + " | ".join(servers) + " | tern / best peer | tern p99 / best peer's p99 | CPU µs/req: tern, best peer | client: share of a core, µs/req: tern, best peer |")
    print("|---|---|---|" + "---:|" * len(servers) + "---:|---:|---|---|")
    rows_seen, at_or_above, p99_ok, cpu_ok, cpu_above, client_set = 0, 0, 0, 0, [], []
    for key in cases:
        cells = []
        rps = {}
        for s in servers:
            rows = runs.get(key + (s,))
            if not rows:
                cells.append("–")
                continue
            rps[s] = (med(rows, "req_per_s"), med(rows, "p99_ms"), med(rows, "srv_cpu_us_per_req"))
            cells.append(f"{rps[s][0]:.0f}")
        best = max((p for p in peers if p in rps), key=lambda p: rps[p][0])
        t = rps.get(tern)
        if t is None:
            continue
        ratio = t[0] / rps[best][0]
        p99 = t[1] / rps[best][1] if rps[best][1] else float("nan")
        case, tool, c = key
        mine, theirs = client(runs[key + (tern,)]), client(runs[key + (best,)])
        print(f"| {case} | {tool} | {c} | " + " | ".join(cells)
              + f" | {ratio:.2f} ({best}) | {p99:.2f} | {t[2]:.1f}, {rps[best][2]:.1f}"
              + f" | {mine[0]:.2f} {mine[1]:.1f}, {theirs[0]:.2f} {theirs[1]:.1f} |")
        cheapest = min((p for p in peers if p in rps), key=lambda p: rps[p][2])
        rows_seen += 1
        at_or_above += ratio >= 1
        if ratio < 1 and all(b >= CLIENT_BOUND for b in (mine[0], theirs[0])):
            client_set.append(f"{case} {tool} c={c} ({mine[1]:.1f} against {theirs[1]:.1f} µs)")
        p99_ok += p99 <= 1
        if t[2] <= rps[cheapest][2]:
            cpu_ok += 1
        else:
            cpu_above.append(f"{case} {tool} c={c}: {t[2]:.1f} against {cheapest}'s {rps[cheapest][2]:.1f}")
    # The goals, counted by median: req/s at least the best peer's,
    # p99 no worse than its, CPU a request at or below the cheapest peer's.
    print(f"\nBy median: req/s at or above the best peer's on {at_or_above} of {rows_seen} rows;"
          f" p99 at or below the best peer's on {p99_ok} of {rows_seen};"
          f" CPU a request at or below the cheapest peer's on {cpu_ok} of {rows_seen}"
          + (f" (above: {'; '.join(cpu_above)})" if cpu_above else "") + "."
          + (f" Of the rows below the best peer's req/s, {len(client_set)} were set by the client"
             f" (its CPU a request with tern, against with the best peer: {'; '.join(client_set)})."
             if client_set else "") + "\n")


def spread(xs):
    """A median and its range, as a table cell."""
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "–"


def paired(path, section, tern):
    runs, cases, servers = read(path, section)
    peers = [s for s in servers if s != tern]
    print("| case | tool | c | best peer by req/s | tern / it: median (range) | rounds at or above | cheapest peer by CPU | its CPU / tern's: median (range) | rounds at or below its CPU |")
    print("|---|---|---|---|---:|---:|---|---:|---:|")

    def by_round(rows):
        return {r["round"]: r for r in rows if float(r["req_per_s"]) > 0}

    for key in cases:
        mine = by_round(runs.get(key + (tern,), []))
        theirs = {p: by_round(runs.get(key + (p,), [])) for p in peers}
        theirs = {p: rows for p, rows in theirs.items() if rows}
        if not mine or not theirs:
            continue
        best = max(theirs, key=lambda p: med(theirs[p].values(), "req_per_s"))
        cheapest = min(theirs, key=lambda p: med(theirs[p].values(), "srv_cpu_us_per_req"))
        rps = [float(mine[r]["req_per_s"]) / float(theirs[best][r]["req_per_s"])
               for r in sorted(set(mine) & set(theirs[best]), key=int)]
        cpu = [float(theirs[cheapest][r]["srv_cpu_us_per_req"]) / float(mine[r]["srv_cpu_us_per_req"])
               for r in sorted(set(mine) & set(theirs[cheapest]), key=int)
               if float(mine[r]["srv_cpu_us_per_req"]) > 0]
        case, tool, c = key
        print(f"| {case} | {tool} | {c} | {best} | {spread(rps)} | {sum(x >= 1 for x in rps)} of {len(rps)}"
              f" | {cheapest} | {spread(cpu)} | {sum(x >= 1 for x in cpu)} of {len(cpu)} |")


def main():
    args = [a for a in sys.argv[1:] if a != "--rounds"]
    path = args[0]
    section = args[1] if len(args) > 1 else "static"
    tern = args[2] if len(args) > 2 else "tern"
    (paired if "--rounds" in sys.argv else medians)(path, section, tern)


if __name__ == "__main__":
    main()
