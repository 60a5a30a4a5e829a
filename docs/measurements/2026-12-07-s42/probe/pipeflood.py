#!/usr/bin/env python3
# Pipelining: send many GETs for /big.txt without reading; tern must stop reading (backpressure) and not buffer responses.
import socket, time, sys
P = int(sys.argv[1]); pid = int(sys.argv[2]); N = 20000
def rss(): return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
print("rss before", rss())
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.settimeout(0.5); s.connect(("127.0.0.1", P))
req = b"GET /big.txt HTTP/1.1\r\nHost: a.test\r\n\r\n"; sent = 0; t0 = time.time()
while sent < N and time.time() - t0 < 4:
    try: sent += s.send(req * 100) // len(req)
    except socket.timeout: pass
print(f"client managed to send {sent} requests in {time.time()-t0:.1f}s without reading; rss {rss()} kB")
time.sleep(1); print("rss", rss())
# now read everything and count responses (bounded 15 s)
s.settimeout(2); got = b""; n = 0; t0 = time.time(); tail = b""
try:
    while time.time() - t0 < 15:
        b = s.recv(1 << 20)
        if not b: break
        n += (tail + b).count(b"HTTP/1.1 200 OK"); tail = b[-20:]
except socket.timeout: pass
print(f"responses read: ~{n}; rss {rss()} kB")
s.close()
