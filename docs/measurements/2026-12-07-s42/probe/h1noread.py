#!/usr/bin/env python3
# HTTP/1.1 client that requests /huge.bin and never reads; checks whether tern ever closes it (nginx send_timeout 60s, Apache Timeout 60s).
import socket, time, sys
P = int(sys.argv[1]); hold = float(sys.argv[2]) if len(sys.argv) > 2 else 75
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.settimeout(5)
s.connect(("127.0.0.1", P)); s.sendall(b"GET /huge.bin HTTP/1.1\r\nHost: a.test\r\n\r\n")
time.sleep(hold)
s.settimeout(2); n = 0; t0 = time.time(); how = "open"
try:
    while time.time() - t0 < 30:
        b = s.recv(1 << 20)
        if not b: how = "EOF"; break
        n += len(b)
except socket.timeout: how = "stalled"
except ConnectionResetError: how = "RST"
print(f"after {hold}s without reading: then read {n} bytes, ended by {how} (full body would be 52428800+head)")
