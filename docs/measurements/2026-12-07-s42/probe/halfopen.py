#!/usr/bin/env python3
# 300 connections each sending a partial request head; check a normal request is still served, and all are closed at header_read_timeout
import socket, time, sys, subprocess
P = int(sys.argv[1]); N = 300
socks = []
for i in range(N):
    s = socket.create_connection(("127.0.0.1", P), timeout=1); s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n"); socks.append(s)
t0 = time.time()
r = subprocess.run(["curl", "-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", f"http://127.0.0.1:{P}/"], capture_output=True, text=True)
print("normal request while", N, "half-open:", r.stdout)
closed = 0; deadline = time.time() + 10
for s in socks:
    s.settimeout(max(0.01, deadline - time.time()))
    try:
        if s.recv(100) == b"": closed += 1
    except socket.timeout: pass
    except ConnectionResetError: closed += 1
print(f"closed by server within ~{time.time()-t0:.1f}s: {closed}/{N}")
for s in socks: s.close()
