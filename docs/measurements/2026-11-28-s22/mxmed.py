import sys, re, statistics, collections
d = collections.defaultdict(lambda: ([], []))
order = []
for line in open(sys.argv[1]):
    m = re.match(r"\d+ (\S+) c=(\d+) (\S+) rps=([\d.]+) srv_us=(\d+)", line)
    if not m: continue
    tool, c, srv, rps, us = m.groups()
    k = (tool, int(c))
    if k not in order: order.append(k)
    d[(tool, int(c), srv)][0].append(float(rps)); d[(tool, int(c), srv)][1].append(int(us))
servers = []
for (t, c, s) in d:
    if s not in servers: servers.append(s)
names = {"wrk": "wrk -k", "ab": "ab (new conn.)", "tbk": "tern bench -k", "tb": "tern bench (new conn.)"}
print("| row | " + " | ".join(servers) + " |")
print("|---|" + "---:|" * len(servers))
for (t, c) in order:
    cells = []
    for s in servers:
        r, u = d[(t, c, s)]
        cells.append(f"{statistics.median(r):,.0f} / {statistics.median(u)}" if r else "-")
    print(f"| {names[t]} c={c} | " + " | ".join(cells) + " |")
