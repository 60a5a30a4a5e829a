# Medians of the rounds of bench.sh output: python3 summary.py result.txt
import sys,collections,statistics
rows=collections.defaultdict(lambda: collections.defaultdict(list))
order=[]
for l in open(sys.argv[1]):
    p=l.split()
    if len(p)<3 or '=' not in p[2]: continue
    srv,row=p[0],p[1]
    if row not in order: order.append(row)
    kv=dict(x.split('=',1) for x in p[2:])
    rows[row][srv].append((float(kv['rps']),float(kv['cpu_us']),kv.get('p99')))
servers=["nocache-before","before","beforeh1","tern","ternh1","ternhyper","tern1","nocache","floor","lighttpd","nginx","h2o"]
servers=[s for s in servers if any(s in r for r in rows.values())]
print("| row | "+" | ".join(servers)+" |")
print("|---|"+"---:|"*len(servers))
for row in order:
    out=[row]
    for s in servers:
        v=rows[row].get(s)
        if not v: out.append("-"); continue
        rps=statistics.median(x[0] for x in v); cpu=statistics.median(x[1] for x in v)
        p99=sorted(x[2] for x in v)
        out.append(f"{rps:,.0f} / {cpu:.1f}")
    print("| "+" | ".join(out)+" |")
