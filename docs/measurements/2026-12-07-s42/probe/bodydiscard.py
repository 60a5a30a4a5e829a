#!/usr/bin/env python3
# Body of a request the handler answered without reading arrives late; a request embedded in that body must never be answered.
import sys; sys.path.insert(0, "/tmp/s42/probe")
from raw import send
inner = b"GET /sub/a.txt HTTP/1.1\r\nHost: a.test\r\n\r\n"
for path in ["/index.html", "/nonexist", "/cgi-bin/noexec.sh", "/sub"]:
    for cl_pad in (0, 300000):
        body = inner + b"x" * cl_pad
        head = f"POST {path} HTTP/1.1\r\nHost: a.test\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        r = send(None, 18701, wait=2, chunks=[(head, 0.3), (body, 0.1)])
        print(f"{path:22s} body {len(body):7d}: responses={r.count(b'HTTP/1.1 ')} inner_answered={b'subfile' in r} end={r[-9:]!r}")
    # GET with body split
    head = f"GET {path} HTTP/1.1\r\nHost: a.test\r\nContent-Length: {len(inner)}\r\n\r\n".encode()
    r = send(None, 18701, wait=2, chunks=[(head, 0.3), (inner, 0.1)])
    print(f"GET {path:18s} late body: responses={r.count(b'HTTP/1.1 ')} inner_answered={b'subfile' in r} end={r[-9:]!r}")
