#!/usr/bin/env python3
# HTTP/2 zero-window slow-read: C connections x S streams for a large file with SETTINGS_INITIAL_WINDOW_SIZE=0
# (and connection window never opened). Measures tern RSS; checks whether tern ever times the stalled streams out.
import sys, time
sys.path.insert(0, "/tmp/s42/probe")
from h2probe import Conn, BASE, P
from hyperframe.frame import SettingsFrame
pid = int(sys.argv[2]); C = int(sys.argv[3]); S = int(sys.argv[4]); path = sys.argv[5] if len(sys.argv) > 5 else "/huge.bin"
hold = float(sys.argv[6]) if len(sys.argv) > 6 else 10
def rss(): return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
print("rss before", rss())
conns = []
for k in range(C):
    c = Conn(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0}); c.send(SettingsFrame(0, flags=["ACK"]))
    c.send(*[c.hdrs(1 + 2*i, BASE[:3] + [(":path", path)]) for i in range(S)]); conns.append(c)
t0 = time.time()
while time.time() - t0 < hold:
    time.sleep(2)
    alive = 0
    for c in conns:
        c.s.settimeout(0.01)
        try:
            b = c.s.recv(65536)
            if b: alive += 1
        except (TimeoutError, OSError): alive += 1
    print(f"t={time.time()-t0:.0f}s rss={rss()} kB conns alive={alive}")
for c in conns: c.s.close()
time.sleep(1); print("rss after close", rss())
