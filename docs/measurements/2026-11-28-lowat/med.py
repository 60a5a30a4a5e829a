import sys,statistics as st,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    f=l.split(); m=dict(x.split('=') for x in f[1:5])
    d[f[0]].append((float(m['rps']),float(m['srv_us']),float(m['wrk_us'])))
for k,v in d.items():
    print(k, 'rps med %.0f [%s]'%(st.median(x[0] for x in v), ' '.join('%.0f'%x[0] for x in v)), 'srv %.0f'%st.median(x[1] for x in v), 'wrk %.0f'%st.median(x[2] for x in v))
