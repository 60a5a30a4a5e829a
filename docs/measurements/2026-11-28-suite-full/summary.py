#!/usr/bin/env python3
"""Reads a `tern suite` suite.json: per section, the rows tern (cache on)
leads in req/s, the rows where its CPU per request is at or below the
lowest peer's, and the median of tern / best peer in req/s; then the
static rows as a table (tern cache on and off, the best peer by req/s,
the lowest peer CPU). Usage: summary.py suite.json"""
import collections
import json
import sys

d = json.load(open(sys.argv[1]))
stats = collections.defaultdict(lambda: [0, 0, 0, 0, []])
static = {}
for r in d["rows"]:
    row, sec = r["row"], r["row"]["section"]
    cells = [c for c in r["cells"] if c.get("rps") and c["errors"] == 0]
    if sec == "static":
        key = (row["case"], row["connections"], row["keepalive"])
        static.setdefault(key, []).extend(cells)
    tern = [c for c in cells if c["server"] == "tern" and c["cache"] in ("on", "default")]
    if sec == "static" and row.get("cache") == "off":
        tern = [c for c in cells if c["server"] == "tern"]
    peers = [c for c in cells if c["server"] != "tern"]
    if not tern or not peers:
        continue
    t = tern[0]
    best = max(peers, key=lambda c: c["rps"]["median"])
    s = stats[sec]
    ratio = t["rps"]["median"] / best["rps"]["median"]
    s[0] += 1
    s[1] += ratio >= 1.0
    cpus = [c["cpu_us_per_request"] for c in peers if c.get("cpu_us_per_request")]
    if cpus and t.get("cpu_us_per_request"):
        s[2] += 1
        s[3] += t["cpu_us_per_request"] <= min(cpus)
    s[4].append(ratio)
for sec, (n, lead, nc, cpulead, ratios) in stats.items():
    ratios.sort()
    print(f"{sec}: rows {n}, tern leads req/s in {lead}, CPU/req at or below the "
          f"best peer in {cpulead} of {nc}; tern/best req/s median "
          f"{ratios[len(ratios) // 2]:.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})")

print()
print("| row | tern, cache on | tern, cache off | best peer by req/s | lowest peer CPU |")
print("|---|---:|---:|---:|---:|")
def cell(x):
    return f"{x['rps']['median']:,.0f} / {x['cpu_us_per_request']:.1f}"
def name(x):
    return x["server"] + ("" if x["cache"] in ("on", "default") else " (off)")
for (case, c, ka), cells in static.items():
    on = [x for x in cells if x["server"] == "tern" and x["cache"] == "on"]
    off = [x for x in cells if x["server"] == "tern" and x["cache"] == "off"]
    peers = [x for x in cells if x["server"] != "tern"]
    best = max(peers, key=lambda x: x["rps"]["median"])
    low = min(peers, key=lambda x: x["cpu_us_per_request"])
    print(f"| {case}, c={c}, {'keep-alive' if ka else 'new connection'} | {cell(on[0])} | "
          f"{cell(off[0]) if off else '-'} | {name(best)} {cell(best)} | "
          f"{name(low)} {low['cpu_us_per_request']:.1f} |")
