#!/usr/bin/env python3
# A client that sends a complete request and then shutdown(SHUT_WR) must still get the response (RFC 9112 §9.6 / 9.8:
# half-close is not a cancellation; nginx/h2o/Apache answer). Compare a static file with a CGI script.
import socket, sys
port = int(sys.argv[1]) if len(sys.argv) > 1 else 18701
for path in ["/index.html", "/cgi-bin/status.sh", "/cgi-bin/env.sh"]:
    for half in (False, True):
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: a.test\r\n\r\n".encode())
        if half: s.shutdown(socket.SHUT_WR)
        out = b""
        try:
            while True:
                b = s.recv(65536)
                if not b: break
                out += b
        except Exception as e:
            out += repr(e).encode()
        s.close()
        line1 = out.split(b"\r\n")[0]
        print(f"{path:22s} half_close={half!s:5s} -> {len(out):5d} bytes, first line: {line1!r}")
