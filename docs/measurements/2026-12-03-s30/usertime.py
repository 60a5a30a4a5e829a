#!/usr/bin/env python3
# usage: usertime.py NAME.sys.txt THREAD_NAME [REQUEST_BYTES] (syscalls.sh's output;
# the request wrk sends is 49 bytes for /fcgi/64k, 51 for /fcgi/hello)
import sys, re, statistics as st
# From `perf script` of raw_syscalls and sched events: a server thread's time
# in user space (from a system call's exit to its next entry, time switched
# out not counted) and in the kernel, per request (a request = a read of
# the 49-byte request from wrk), medians.
def main(path, comm, reqlen):
    user=[]; kern=[]; u=k=0.0; state=None; t_last=None; n=0
    for line in open(path):
        m=re.match(r'\s*(\S+)\s+(\d+)\s+\[(\d+)\]\s+(\d+\.\d+):\s+(\S+):\s*(.*)$', line)
        if not m: continue
        c,tid,cpu,t,ev,rest=m.groups(); t=float(t)
        if ev=='sched:sched_switch':
            if f'prev_comm={comm}' in rest and t_last is not None:
                if state=='user': u+=t-t_last
                elif state=='kern': k+=t-t_last
                t_last=None
            if f'next_comm={comm}' in rest: t_last=t
            continue
        if c!=comm: continue
        if t_last is None: t_last=t
        if ev=='raw_syscalls:sys_enter':
            if state=='user' or state is None: u+=t-t_last
            state='kern'; t_last=t
        elif ev=='raw_syscalls:sys_exit':
            k+=t-t_last; state='user'; t_last=t
            if rest.strip().endswith(f'= {reqlen}') and ('NR 45 ' in rest or 'NR 0 ' in rest):
                if n: user.append(u); kern.append(k)
                u=k=0.0; n+=1
    print(f'{comm}: {n} requests; user {st.median(user)*1e6:.1f} us, kernel {st.median(kern)*1e6:.1f} us a request (medians)')
main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else '49')
