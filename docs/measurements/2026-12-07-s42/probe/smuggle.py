#!/usr/bin/env python3
# HTTP/1.1 framing / smuggling battery against tern on 18701. Each case: request bytes sent on one connection,
# then a summary of all response status lines and whether a second (smuggled) request got answered.
# `smuggle.py PORT hyper`: the same battery with "Expect: foo" on every request, which tern's loop hands to
# hyper (docs: server.http1), so that both loops' framing is tried.
import sys, re
sys.path.insert(0, "/tmp/s42/probe")
from raw import send
PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 18701
H = "Host: a.test\r\n" + ("Expect: foo\r\n" if sys.argv[2:3] == ["hyper"] else "")
E = "/cgi-bin/env.sh"
cases = {
 "cl+te": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /smug HTTP/1.1\r\n{H}\r\n",
 "te+cl": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\nContent-Length: 30\r\n\r\n0\r\n\r\nGET /smug HTTP/1.1\r\n{H}\r\n",
 "2cl-equal": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
 "2cl-list-equal": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 5, 5\r\n\r\nhello",
 "2cl-diff": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
 "cl-plus": f"POST {E} HTTP/1.1\r\n{H}Content-Length: +5\r\n\r\nhello",
 "cl-neg": f"POST {E} HTTP/1.1\r\n{H}Content-Length: -1\r\n\r\nhello",
 "cl-hex": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 0x5\r\n\r\nhello",
 "cl-space-inside": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 1 2\r\n\r\nhello",
 "cl-huge": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 99999999999999999999999\r\n\r\nhello",
 "cl-leading0": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 005\r\n\r\nhello",
 "te-identity": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: identity\r\nContent-Length: 5\r\n\r\nhello",
 "te-chunked-chunked": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-xchunked": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-chunked-notlast": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked, gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-gzip-chunked": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-two-headers": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-CHUNKED-case": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-tab": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding:\tchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-space-before-colon": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding : chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-obsfold": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding:\r\n chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-http10": f"POST {E} HTTP/1.0\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "te-vtab": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: \x0bchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
 "chunk-hex-overflow": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n10000000000000005\r\nhello\r\n0\r\n\r\n",
 "chunk-neg": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
 "chunk-0x": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
 "chunk-leading-space": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n",
 "chunk-trailing-space": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
 "chunk-underscore": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n0_5\r\nhello\r\n0\r\n\r\n",
 "chunk-ext": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0;x\r\n\r\n",
 "chunk-ext-long": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5;{'a'*100000}\r\nhello\r\n0\r\n\r\n",
 "chunk-ext-bareLF": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5;a\nhello\r\n0\r\n\r\n",
 "chunk-data-noCRLF": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n",
 "chunk-bareLF-size": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n",
 "chunk-trailer": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: v\r\nContent-Length: 99\r\n\r\nGET /after-trailer HTTP/1.1\r\n{H}\r\n",
 "pipelined-after-body": f"POST {E} HTTP/1.1\r\n{H}Content-Length: 5\r\n\r\nhelloGET /sub/a.txt HTTP/1.1\r\n{H}\r\nGET /index.html HTTP/1.1\r\n{H}Connection: close\r\n\r\n",
 "pipelined-after-chunked": f"POST {E} HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /sub/a.txt HTTP/1.1\r\n{H}Connection: close\r\n\r\n",
 "pipelined-static-body": f"POST /index.html HTTP/1.1\r\n{H}Content-Length: 5\r\n\r\nhelloGET /sub/a.txt HTTP/1.1\r\n{H}Connection: close\r\n\r\n",
 "get-with-body": f"GET /index.html HTTP/1.1\r\n{H}Content-Length: 35\r\n\r\nGET /smug HTTP/1.1\r\nHost: a.test\r\n\r\nGET /sub/a.txt HTTP/1.1\r\n{H}Connection: close\r\n\r\n",
 "get-with-chunked-body": f"GET /index.html HTTP/1.1\r\n{H}Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET /sub/a.txt HTTP/1.1\r\n{H}Connection: close\r\n\r\n",
 "obs-fold-other": f"GET /cgi-bin/env.sh HTTP/1.1\r\n{H}X-Folded: a\r\n b\r\n\r\n",
 "bare-LF": f"GET /index.html HTTP/1.1\n{H[:-2]}\n\n",
 "bare-LF-mixed": f"GET /index.html HTTP/1.1\r\nHost: a.test\nX: y\r\n\r\n",
 "bare-CR": f"GET /index.html HTTP/1.1\r\nHost: a.test\rX: y\r\n\r\n",
 "space-before-colon": f"GET /index.html HTTP/1.1\r\nHost : a.test\r\n\r\n",
 "space-before-colon-x": f"GET /index.html HTTP/1.1\r\n{H}X-Foo : bar\r\n\r\n",
 "leading-space-first-header": f"GET /index.html HTTP/1.1\r\n X: y\r\n{H}\r\n",
 "hdr-invalid-char": f"GET /index.html HTTP/1.1\r\n{H}X(Foo): bar\r\n\r\n",
 "hdr-nul-value": f"GET /index.html HTTP/1.1\r\n{H}X-Foo: b\x00ar\r\n\r\n",
 "hdr-empty-name": f"GET /index.html HTTP/1.1\r\n{H}: bar\r\n\r\n",
 "hdr-no-colon": f"GET /index.html HTTP/1.1\r\n{H}Xfoo\r\n\r\n",
 "hdr-8bit-value": f"GET /index.html HTTP/1.1\r\n{H}X-Foo: caf\xe9\r\n\r\n",
 "hdr-8bit-name": f"GET /index.html HTTP/1.1\r\n{H}X-F\xe9o: bar\r\n\r\n",
 "reqline-extra-space": f"GET  /index.html HTTP/1.1\r\n{H}\r\n",
 "reqline-tab": f"GET\t/index.html\tHTTP/1.1\r\n{H}\r\n",
 "reqline-http09": f"GET /index.html\r\n\r\n",
 "reqline-http2.0": f"GET /index.html HTTP/2.0\r\n{H}\r\n",
 "reqline-http1.2": f"GET /index.html HTTP/1.2\r\n{H}\r\n",
 "reqline-http3": f"GET /index.html HTTP/3.0\r\n{H}\r\n",
 "reqline-lowercase-ver": f"GET /index.html http/1.1\r\n{H}\r\n",
 "reqline-leading-crlf": f"\r\n\r\nGET /index.html HTTP/1.1\r\n{H}\r\n",
 "reqline-space-in-target": f"GET /index .html HTTP/1.1\r\n{H}\r\n",
 "reqline-lowercase-method": f"get /index.html HTTP/1.1\r\n{H}\r\n",
 "method-unknown": f"FOO /index.html HTTP/1.1\r\n{H}\r\n",
 "method-unknown-cgi": f"FOO /cgi-bin/env.sh HTTP/1.1\r\n{H}\r\n",
 "method-bad-chars": f"G@T /index.html HTTP/1.1\r\n{H}\r\n",
 "CONNECT": f"CONNECT a.test:443 HTTP/1.1\r\n{H}\r\n",
 "CONNECT-origin": f"CONNECT /index.html HTTP/1.1\r\n{H}\r\n",
 "OPTIONS-star": f"OPTIONS * HTTP/1.1\r\n{H}\r\n",
 "GET-star": f"GET * HTTP/1.1\r\n{H}\r\n",
 "OPTIONS-path": f"OPTIONS /index.html HTTP/1.1\r\n{H}\r\n",
 "TRACE": f"TRACE / HTTP/1.1\r\n{H}X-Secret: s\r\n\r\n",
 "absform-other-host": f"GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
 "absform-https": f"GET https://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
 "absform-ftp": f"GET ftp://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
 "absform-userinfo": f"GET http://x@b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
 "absform-nopath": f"GET http://b.test HTTP/1.1\r\nHost: a.test\r\n\r\n",
 "no-host-11": f"GET / HTTP/1.1\r\n\r\n",
 "no-host-10": f"GET / HTTP/1.0\r\n\r\n",
 "two-host": f"GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
 "two-host-same": f"GET / HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n",
 "host-empty-11": f"GET / HTTP/1.1\r\nHost:\r\n\r\n",
 "host-bad": f"GET / HTTP/1.1\r\nHost: a.test/x\r\n\r\n",
 "host-port-bad": f"GET / HTTP/1.1\r\nHost: b.test:abc\r\n\r\n",
 "host-trailing-dot": f"GET / HTTP/1.1\r\nHost: b.test.\r\n\r\n",
 "host-upper": f"GET / HTTP/1.1\r\nHost: B.TEST\r\n\r\n",
 "host-ipv6": f"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
 "host-list": f"GET / HTTP/1.1\r\nHost: a.test, b.test\r\n\r\n",
 "http10-keepalive": f"GET /index.html HTTP/1.0\r\n{H}Connection: keep-alive\r\n\r\nGET /sub/a.txt HTTP/1.0\r\n{H}\r\n",
 "http10-default-close": f"GET /index.html HTTP/1.0\r\n{H}\r\nGET /sub/a.txt HTTP/1.0\r\n{H}\r\n",
 "expect-100": f"POST {E} HTTP/1.1\r\n{H}Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
 "expect-100-upper": f"POST {E} HTTP/1.1\r\n{H}Expect: 100-Continue\r\nContent-Length: 5\r\n\r\nhello",
 "expect-unknown": f"POST {E} HTTP/1.1\r\n{H}Expect: foo\r\nContent-Length: 5\r\n\r\nhello",
 "expect-unknown-get": f"GET /index.html HTTP/1.1\r\n{H}Expect: foo\r\n\r\n",
 "expect-100-http10": f"POST {E} HTTP/1.0\r\n{H}Expect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
 "connection-close-pipelined": f"GET /index.html HTTP/1.1\r\n{H}Connection: close\r\n\r\nGET /sub/a.txt HTTP/1.1\r\n{H}\r\n",
 "upgrade-h2c": f"GET /index.html HTTP/1.1\r\n{H}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
 "upgrade-websocket": f"GET /index.html HTTP/1.1\r\n{H}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
 "h2-preface-on-h1": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
 "cl-on-get-static-nobody": f"GET /index.html HTTP/1.1\r\n{H}Content-Length: 5\r\n\r\n",
}
only = sys.argv[2:] 
for name, req in cases.items():
    if only and name not in only: continue
    r = send(req.encode("latin1"), PORT, wait=1.5)
    txt = r.decode("latin1")
    statuses = re.findall(r"HTTP/1\.[01] \d{3}[^\r\n]*", txt)
    extra = []
    if "/smug" in txt or "smug" in txt: extra.append("SMUG-IN-BODY")
    m = re.search(r"BODY:\n(.*)", txt)
    if m: extra.append("cgi-body=%r" % m.group(1)[:40])
    m = re.search(r"REQUEST_URI=(.*)", txt)
    if m: extra.append("uri=%s" % m.group(1))
    m = re.search(r"CONTENT_LENGTH=(.*)", txt)
    if m: extra.append("CL=%s" % m.group(1))
    end = "EOF" if txt.endswith("<<EOF>>") else ("TIMEOUT" if "<<TIMEOUT>>" in txt else ("RST" if "RST" in txt else "?"))
    print(f"{name:28s} {statuses} {end} {' '.join(extra)}")
