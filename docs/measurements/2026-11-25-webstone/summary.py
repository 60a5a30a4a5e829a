#!/usr/bin/env python3
"""Prints run.sh's table from the merged replay results: page latency
(p50 / p99, ms, from each page's intended start) per page class for each variant, with server CPU per
request. Usage: summary.py WORKDIR VARIANT..."""
import base64
import json
import sys

work, variants = sys.argv[1], sys.argv[2:]
results = {v: json.load(open(f"{work}/{v}.json")) for v in variants}


# Page classes in the order of the first variant, the overall row first.
first = results[variants[0]]
rows = [("all pages", None)] + [(f'{c["id"]} {c["front"]}', c["id"]) for c in first["classes"][:6]]
print()
print(f'{"page class":<34}' + "".join(f"{v:>22}" for v in variants))
for name, cid in rows:
    cells = []
    for v in variants:
        r = results[v]
        fig = r["pages"] if cid is None else next((c for c in r["classes"] if c["id"] == cid), None)
        if fig is None:
            cells.append(f'{"-":>22}')
            continue
        s = fig["summary"]
        cells.append(f'{s["p50_ms"]:>9.1f} /{s["p99_ms"]:>8.1f} ms')
    print(f"{name[:33]:<34}" + "".join(f"{c:>22}" for c in cells))
cpu = []
for v in variants:
    c = results[v]["requests"].get("server_cpu")
    cpu.append(f'{c["us_per_request"]:>19.0f} µs' if c else f'{"-":>22}')
print(f'{"server CPU per request":<34}' + "".join(f"{c:>22}" for c in cpu))
