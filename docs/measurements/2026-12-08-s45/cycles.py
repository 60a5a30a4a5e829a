"""One server's request cycles at one connection, from a perf script trace (ftrace-x.sh):
the median time of each step after wrk sends a request, and the cores each party ran on.
Usage: cycles.py TRACE..."""
import re, sys, statistics as st
R=re.compile(r'\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)')
def load(f):
    ev=[]
    for l in open(f):
        m=R.match(l)
        if not m: continue
        comm,tid,cpu,t,e,rest=m.groups()
        nr=None; ret=None
        if 'sys_' in e:
            mm=re.search(r'NR (\d+)',rest); nr=int(mm.group(1))
            if e.endswith('exit'): ret=int(rest.split('=')[-1])
        ev.append((float(t)*1e6,comm.strip(),int(tid),int(cpu),e.split(':')[1],nr,ret,rest))
    return ev
for f in sys.argv[1:]:
    ev=load(f)
    starts=[i for i,e in enumerate(ev) if e[1]=='wrk' and e[4]=='sys_enter' and e[5]==1]
    rows=[]
    for a,b in zip(starts,starts[1:]):
        t0=ev[a][0]; seg=ev[a:b]
        srv=[e for e in seg if e[1] not in('wrk','fcgi-app','swapper','perf') and not e[1].startswith('kworker')]
        app=[e for e in seg if e[1]=='fcgi-app']
        wrk=[e for e in seg if e[1]=='wrk']
        try:
            s_wake=next(e for e in srv if e[4]=='sys_exit')[0]-t0
            a_start=next(e for e in app if e[4]=='sys_exit')[0]-t0
            a_end=[e for e in app if e[4]=='sys_exit' and e[5]==1][-1][0]-t0
            s_back=next(e for e in srv if e[4]=='sys_exit' and e[0]-t0>a_start and e[5] in (232,281,7))[0]-t0
            s_out=next(e for e in srv if e[4]=='sys_enter' and e[5] in (20,44,1,46,40) and e[0]-t0>a_start)[0]-t0
            w_wake=next(e for e in wrk if e[4]=='sys_exit' and e[5] in (232,281))[0]-t0
            end=ev[b][0]-t0
        except StopIteration:
            continue
        scpu=set(e[3] for e in srv); acpu=set(e[3] for e in app); wcpu=set(e[3] for e in wrk)
        rows.append((s_wake,a_start,a_end,s_back,s_out,w_wake,end,tuple(sorted(scpu)),tuple(sorted(acpu)),tuple(sorted(wcpu))))
    print(f, len(rows),'cycles')
    names=['server wakes','app starts','app last write','server woken back','server writes to client','wrk wakes','next request']
    for k,n in enumerate(names):
        print(f'  {n:26} median {st.median(r[k] for r in rows):7.1f} µs')
    from collections import Counter
    print('  cpus (server, app, wrk):',Counter((r[7],r[8],r[9]) for r in rows).most_common(4))
