#!/usr/bin/env python3
# more framing edge cases
import sys, re
sys.path.insert(0, "/tmp/s42/probe")
from raw import send
PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 18701
E = "/cgi-bin/env.sh"; H = "Host: a.test\r\n"
cases = {
 "te 'chunked,'": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked,\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te ', chunked'": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: , chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te 'chunked;x=1'": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked;x=1\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te '\"chunked\"'": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: \"chunked\"\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te empty": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: \r\nContent-Length: 5\r\n\r\nhello",
 "cl OWS": f"POST {E} HTTP/1.1\r\n{H}Content-Length:   5  \r\n\r\nhello",
 "cl vtab": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 5\x0b\r\n\r\nhello",
 "cl empty": f"POST {E} HTTP/1.1\r\n{H}Content-Length: \r\n\r\nhello",
 "cl '5,'": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 5,\r\n\r\nhello",
 "cl 2^64+5": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 18446744073709551621\r\n\r\nhello",
 "cl 1e1": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 1e1\r\n\r\nhello",
 "cl unicode digit": f"POST {E} HTTP/1.1\r\n{H}Content-Length: \u0665\r\n\r\nhello",
 "content_length underscore": f"POST {E} HTTP/1.1\r\n{H}Content_Length: 5\r\n\r\nhello",
 "transfer_encoding underscore": f"POST {E} HTTP/1.1\r\n{H}Transfer_Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello",
 "chunk size 16 hex digits": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n0000000000000005\r\nhello\r\n0\r\n\r\n",
 "chunk size 17 hex digits": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n00000000000000005\r\nhello\r\n0\r\n\r\n",
 "chunk uppercase hex": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\nA\r\nhellohello\r\n0\r\n\r\n",
 "last-chunk '00'": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n00\r\n\r\n",
 "trailer obs-fold": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX: a\r\n b\r\n\r\n",
 "trailer no colon": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nXYZ\r\n\r\n",
 "trailer huge": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX: {'a'*200000}\r\n\r\n",
 "many tiny chunks": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n" + "1\r\na\r\n" * 20000 + "0\r\n\r\n",
 "ext quoted w/ CRLF-ish": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5;a=\"x\\\"y\"\r\nhello\r\n0\r\n\r\n",
 "ext bare ;": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n",
}
for name, req in cases.items():
    r = send(req.encode("utf-8"), PORT, wait=1.5).decode("latin1")
    statuses = re.findall(r"HTTP/1\.[01] \d{3}[^\r\n]*", r)
    m = re.search(r"BODY:\n([^\n]*)", r)
    cl = re.search(r"CONTENT_LENGTH=(\S*)", r)
    print(f"{name:30s} {statuses} body={m.group(1)[:30] if m else None!r} CL={cl.group(1) if cl else None} {'EOF' if r.endswith('<<EOF>>') else 'open'}")
