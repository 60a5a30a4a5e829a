"""Wake-up latency: for each sched_wakeup, the time until the task is switched in, by
task, whether the waker was the idle task, and whether it ran on the target core.
Usage: wakelat.py TRACE... (perf script output of ftrace-x.sh)"""
import re, sys, statistics as st
import os
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cycles.py')).read().split('for f in sys.argv')[0])
for f in sys.argv[1:]:
    ev=load(f)
    pend={}
    lat={}
    for t,comm,tid,cpu,k,nr,ret,rest in ev:
        if k=='sched_wakeup':
            m=re.search(r'comm=(\S+) pid=(\d+).*target_cpu=(\d+)',rest)
            pend[int(m.group(2))]=(t,m.group(1),comm.startswith('swapper'),cpu==int(m.group(3)))
        elif k=='sched_switch':
            m=re.search(r'next_comm=(.+?) next_pid=(\d+)',rest)
            p=int(m.group(2))
            if p in pend:
                t0,name,idle,local=pend.pop(p)
                lat.setdefault((name[:12],'from idle' if idle else 'from task','local' if local else 'remote'),[]).append(t-t0)
    print(f)
    for k,v in sorted(lat.items()):
        if len(v)>20: print(f'   {str(k):50} n={len(v):5} median {st.median(v):5.1f} mean {st.mean(v):5.1f} µs')
