#!/usr/bin/env python3
"""Median req/s, p99 and server CPU per request of each server over the rounds
of a peers.sh results.tsv, with tern's ratio to the best peer, as Markdown.

Usage: ratios.py RESULTS.tsv [SECTION] [TERN_NAME]
"""
import csv
import statistics
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    section = sys.argv[2] if len(sys.argv) > 2 else "static"
    tern = sys.argv[3] if len(sys.argv) > 3 else "tern"
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
    peers = [s for s in servers if s != tern]
    med = lambda rows, col: statistics.median(float(r[col]) for r in rows)
    print(f"| case | tool | c | " + " | ".join(servers) + " | tern / best peer | tern p99 / best peer's p99 | CPU µs/req: tern, best peer |")
    print("|---|---|---|" + "---:|" * len(servers) + "---:|---:|---|")
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
        print(f"| {case} | {tool} | {c} | " + " | ".join(cells)
              + f" | {ratio:.2f} ({best}) | {p99:.2f} | {t[2]:.1f}, {rps[best][2]:.1f} |")


if __name__ == "__main__":
    main()
