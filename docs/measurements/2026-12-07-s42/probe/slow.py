#!/usr/bin/env python3
# slow-client battery (header_read_timeout=5s, keepalive_timeout=5s, body_timeout=5s in t.toml)
import socket, time, sys
P = int(sys.argv[1]) if len(sys.argv) > 1 else 18701
def trickle(prefix, drip, maxt=14, first=b""):
    s = socket.create_connection(("127.0.0.1", P), timeout=1)
    t0 = time.time(); got = b""
    if first:
        s.sendall(first); time.sleep(0.3)
        try: got += s.recv(65536)
        except socket.timeout: pass
    s.sendall(prefix)
    i = 0; how = "still open at %ds" % maxt
    while time.time() - t0 < maxt:
        try:
            s.sendall(drip[i % len(drip):i % len(drip) + 1]); i += 1
        except (BrokenPipeError, ConnectionResetError) as e:
            how = f"send failed {type(e).__name__} at {time.time()-t0:.1f}s"; break
        try:
            b = s.recv(65536)
            if not b: how = f"EOF at {time.time()-t0:.1f}s"; break
            got += b
        except socket.timeout: pass
        except ConnectionResetError: how = f"RST at {time.time()-t0:.1f}s"; break
    s.close()
    return how, got[-200:]
print("header trickle 1B/s:", trickle(b"GET / HTTP/1.1\r\nHost: a.test\r\nX-A: ", b"a"))
print("header trickle after a keepalive req:", trickle(b"GET / HTTP/1.1\r\nHost: a.test\r\nX-A: ", b"a", first=b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"))
print("body trickle (CL 1000) to CGI:", trickle(b"POST /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1000\r\n\r\n", b"b"))
print("body trickle chunked to CGI:", trickle(b"POST /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\nb\r\n"))
print("body trickle to static (GET w/ body):", trickle(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1000\r\n\r\n", b"b"))
# idle keepalive
s = socket.create_connection(("127.0.0.1", P), timeout=12); t0 = time.time()
s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n"); s.recv(65536)
try:
    b = s.recv(100); print("idle keepalive: closed after %.1fs, got %r" % (time.time() - t0, b))
except socket.timeout: print("idle keepalive: still open after 12s")
# connect and send nothing
s = socket.create_connection(("127.0.0.1", P), timeout=15); t0 = time.time()
try:
    b = s.recv(100); print("silent connect: closed after %.1fs, got %r" % (time.time() - t0, b))
except socket.timeout: print("silent connect: still open after 15s")
