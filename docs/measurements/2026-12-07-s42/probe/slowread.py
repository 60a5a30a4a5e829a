#!/usr/bin/env python3
# N clients request /huge.bin (50 MB) and /cgi-bin/bigout.sh (20 MB from a CGI) and read slowly; watch tern's RSS.
import socket, time, sys
P = int(sys.argv[1]); pid = int(sys.argv[2]); N = int(sys.argv[3]) if len(sys.argv) > 3 else 20
path = sys.argv[4] if len(sys.argv) > 4 else "/huge.bin"
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS"): return l.split()[1] + " kB"
print("rss before", rss())
socks = []
for i in range(N):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.settimeout(2)
    s.connect(("127.0.0.1", P)); s.sendall(f"GET {path} HTTP/1.1\r\nHost: a.test\r\n\r\n".encode()); socks.append(s)
for t in range(8):
    for s in socks:
        try: s.recv(1024)
        except socket.timeout: pass
    time.sleep(1); print(f"t={t}s rss", rss())
for s in socks: s.close()
time.sleep(1); print("rss after close", rss())
