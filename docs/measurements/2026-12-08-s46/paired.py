import re,sys,statistics as st
from collections import defaultdict
d=defaultdict(dict)
for l in open(sys.argv[1]):
    m=re.match(r'(\d+) (\S+) ([\d.]+) req/s client ([\d.]+) us/req server (\d+)',l)
    if m: d[m.group(2)][int(m.group(1))]=(float(m.group(3)),float(m.group(4)),int(m.group(5)))
for s,v in d.items(): print(f"{s:12s} req/s {st.median([x[0] for x in v.values()]):8.0f} client {st.median([x[1] for x in v.values()]):6.1f} server {st.median([x[2] for x in v.values()]):5.1f}")
base=sys.argv[2] if len(sys.argv)>2 else 'h2o'
for s in d:
    if s==base: continue
    rat=[d[s][k][1]/d[base][k][1] for k in d[s] if k in d[base]]
    rr=[d[s][k][0]/d[base][k][0] for k in d[s] if k in d[base]]
    print(f"{s}/{base}: client us/req {st.median(rat):.3f} ({min(rat):.3f}-{max(rat):.3f}), req/s {st.median(rr):.3f} ({min(rr):.3f}-{max(rr):.3f})")
