#!/usr/bin/env python3
# usage: wakes.py NAME... (in the directory of timehist.sh's output: NAME.w is
# `perf sched timehist -w -i NAME.data`, without perf's own rows)
import sys, re, statistics as st
# perf sched timehist -w output: per CPU, the delay from a wake-up sent to a
# task that then runs on a halted CPU, to that CPU leaving idle; and what
# the server does after it wakes wrk
def parse(path):
    rows=[]
    for line in open(path):
        m=re.match(r'\s*(\d+\.\d+)\s+\[(\d+)\]\s+(.*)$', line)
        if not m: continue
        t=float(m.group(1)); cpu=int(m.group(2)); rest=m.group(3)
        a=re.search(r'awakened:\s+(\S+)', rest)
        if a:
            rows.append((t,cpu,'wake',rest.split('[')[0].strip(),a.group(1).split('[')[0]))
        else:
            f=rest.split()
            rows.append((t,cpu,'run',re.split(r'\[|\s{2,}',rest)[0].strip(),float(f[-1])))
    return rows
for name in sys.argv[1:]:
    rows=parse(f'{name}.w')
    d0=[];d1=[];idle0=[];idle1=[];tail=[]
    last_wake_wrk=None; last_wake_srv=None
    for t,cpu,kind,task,x in rows:
        if kind=='wake':
            if x=='wrk': last_wake_wrk=t
            elif task=='wrk': last_wake_srv=t
        else:
            if task=='<idle>':
                if cpu==0 and last_wake_wrk and t-last_wake_wrk<0.001: d0.append(t-last_wake_wrk); idle0.append(x)
                if cpu==1 and last_wake_srv and t-last_wake_srv<0.001: d1.append(t-last_wake_srv); idle1.append(x)
                if cpu==0: last_wake_wrk=None
                if cpu==1: last_wake_srv=None
    us=lambda v: st.median(v)*1e6
    print(f'{name}: CPU 0 (wrk) left idle {us(d0):.1f} us after its wake (median of {len(d0)}; idle {st.median(idle0)*1e3:.1f} us each); CPU 1 (server) {us(d1):.1f} us (median of {len(d1)}; idle {st.median(idle1)*1e3:.1f} us each)')
    # the server's tail: from its wake of wrk to CPU 1 going idle; wrk's run
    tails=[]; runs=[]; lw=None
    for t,cpu,kind,task,x in rows:
        if kind=='wake' and x=='wrk': lw=t
        elif kind=='run' and task=='<idle>' and cpu==1 and lw:
            start=t-x/1000
            if 0<=start-lw<0.001: tails.append(start-lw)
            lw=None
        elif kind=='run' and task=='wrk': runs.append(x/1000)
    print(f'  server runs on {us(tails):.1f} us after waking wrk (median); wrk runs {us(runs):.1f} us a run (median)')
    # wrk: from CPU 0 leaving idle to its wake of the server (the answer
    # read, the next request written); the server: from CPU 1 leaving idle
    # to its wake of wrk (the request to the answer's first bytes)
    pre=[]; srv=[]; e0=None; e1=None
    for t,cpu,kind,task,x in rows:
        if kind=='run' and task=='<idle>':
            if cpu==0: e0=t
            else: e1=t
        elif kind=='wake' and task=='wrk' and cpu==0 and e0:
            if t-e0<0.001: pre.append(t-e0)
            e0=None
        elif kind=='wake' and x=='wrk' and e1:
            if t-e1<0.001: srv.append(t-e1)
            e1=None
    print(f'  wrk from CPU 0 awake to its request written {us(pre):.1f} us; server from CPU 1 awake to the answer begun {us(srv):.1f} us (medians)')
