#!/usr/bin/env python3
# HTTP/2 (h2c prior knowledge) probe with raw frames (hyperframe + hpack).
import socket, sys, time, struct
from hyperframe.frame import (Frame, SettingsFrame, HeadersFrame, ContinuationFrame, DataFrame, RstStreamFrame,
                              PingFrame, WindowUpdateFrame, GoAwayFrame)
from hpack import Encoder
P = int(sys.argv[1]) if len(sys.argv) > 1 else 18701
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

class Conn:
    def __init__(self, settings=None, timeout=3):
        self.s = socket.create_connection(("127.0.0.1", P), timeout=timeout)
        self.enc = Encoder(); self.buf = b""
        sf = SettingsFrame(0); 
        if settings: sf.settings = settings
        self.s.sendall(PREFACE + sf.serialize())
    def send(self, *frames):
        self.s.sendall(b"".join(f.serialize() for f in frames))
    def hdrs(self, sid, headers, end_stream=True, end_headers=True, raw_block=None):
        f = HeadersFrame(sid); f.data = raw_block if raw_block is not None else self.enc.encode(headers)
        f.flags.add("END_HEADERS") if end_headers else None
        if end_stream: f.flags.add("END_STREAM")
        return f
    def read_frames(self, until=3.0, stop=None):
        out = []; t0 = time.time()
        while time.time() - t0 < until:
            while len(self.buf) >= 9:
                ln = struct.unpack(">I", b"\0" + self.buf[:3])[0]
                if len(self.buf) < 9 + ln: break
                f, l = Frame.parse_frame_header(memoryview(self.buf[:9])); f.parse_body(memoryview(self.buf[9:9 + ln]))
                self.buf = self.buf[9 + ln:]; out.append(f)
                if stop and stop(f): return out, "stop"
            try:
                b = self.s.recv(65536)
            except socket.timeout: return out, "timeout"
            except ConnectionResetError: return out, "RST"
            if not b: return out, "EOF"
            self.buf += b
        return out, "time"
def summarize(frames):
    res = []
    for f in frames:
        n = type(f).__name__.replace("Frame", "")
        if n == "GoAway": res.append(f"GOAWAY(err={f.error_code},last={f.last_stream_id},{bytes(f.additional_data)[:60]!r})")
        elif n == "RstStream": res.append(f"RST({f.stream_id},err={f.error_code})")
        elif n == "Headers":
            from hpack import Decoder
            res.append(f"HEADERS({f.stream_id})")
        elif n == "Data": res.append(f"DATA({f.stream_id},{len(f.data)}{',ES' if 'END_STREAM' in f.flags else ''})")
        else: res.append(n)
    # compress runs
    out = []; 
    for r in res:
        if out and out[-1][0] == r: out[-1][1] += 1
        else: out.append([r, 1])
    return " ".join(r if c == 1 else f"{r}x{c}" for r, c in out)
BASE = [(":method", "GET"), (":scheme", "http"), (":authority", "a.test"), (":path", "/index.html")]
def one(name, headers, extra_frames=(), end_stream=True, until=1.5):
    c = Conn(); c.send(SettingsFrame(0, flags=["ACK"])); c.send(c.hdrs(1, headers, end_stream=end_stream), *extra_frames)
    frames, how = c.read_frames(until)
    status = None
    from hpack import Decoder
    d = Decoder()
    for f in frames:
        if type(f).__name__ == "HeadersFrame":
            try: status = dict(d.decode(bytes(f.data))).get(":status")
            except Exception as e: status = f"undecodable {e}"
    print(f"{name:34s} status={status} {summarize([f for f in frames if type(f).__name__ not in ('SettingsFrame','WindowUpdateFrame')])} [{how}]")
    c.s.close()
if __name__ == "__main__":
    which = sys.argv[2] if len(sys.argv) > 2 else "basic"
    if which == "basic":
        one("baseline", BASE)
        one("uppercase name", BASE + [("X-Upper", "v")])
        one("connection header", BASE + [("connection", "keep-alive")])
        one("keep-alive header", BASE + [("keep-alive", "timeout=5")])
        one("transfer-encoding chunked", BASE + [("transfer-encoding", "chunked")])
        one("te: trailers (allowed)", BASE + [("te", "trailers")])
        one("te: gzip", BASE + [("te", "gzip")])
        one("upgrade header", BASE + [("upgrade", "h2c")])
        one("proxy-connection", BASE + [("proxy-connection", "keep-alive")])
        one("host != :authority", BASE + [("host", "b.test")])
        one("no :authority + host", [BASE[0], BASE[1], BASE[3], ("host", "b.test")])
        one("missing :path", BASE[:3])
        one("empty :path", BASE[:3] + [(":path", "")])
        one("missing :method", BASE[1:])
        one("missing :scheme", [BASE[0], BASE[2], BASE[3]])
        one("unknown pseudo :foo", BASE + [(":foo", "x")])
        one("response pseudo :status", BASE + [(":status", "200")])
        one("dup :path", BASE + [(":path", "/x")])
        one("pseudo after regular", BASE[:3] + [("x-a", "b"), (":path", "/index.html")])
        one(":path no slash", BASE[:3] + [(":path", "index.html")])
        one(":path *  GET", BASE[:3] + [(":path", "*")])
        one("OPTIONS *", [(":method", "OPTIONS"), (":scheme", "http"), (":authority", "a.test"), (":path", "*")])
        one("CONNECT no path", [(":method", "CONNECT"), (":authority", "a.test:443")])
        one("CONNECT with path", [(":method", "CONNECT"), (":authority", "a.test:443"), (":path", "/"), (":scheme", "http")])
        one("header value w/ CRLF", BASE + [("x-a", "a\r\nb: c")])
        one("header value w/ NUL", BASE + [("x-a", "a\x00b")])
        one("header name w/ space", BASE + [("x a", "b")])
        one("header name w/ colon", BASE + [("x:a", "b")])
        one("value leading space", BASE + [("x-a", " b")])
        one(":path with ../", BASE[:3] + [(":path", "/../secret/s.txt")])
        one(":path with %2e%2e", BASE[:3] + [(":path", "/%2e%2e/secret/s.txt")])
        one(":authority userinfo", [BASE[0], BASE[1], (":authority", "x@b.test"), BASE[3]])
        one(":authority bad", [BASE[0], BASE[1], (":authority", "b.test/../"), BASE[3]])
        one("scheme ftp", [BASE[0], (":scheme", "ftp"), BASE[2], BASE[3]])
        post = [(":method", "POST"), (":scheme", "http"), (":authority", "a.test"), (":path", "/cgi-bin/env.sh")]
        d5 = DataFrame(1); d5.data = b"hello"; d5.flags.add("END_STREAM")
        one("CL 10 but 5 data (cgi)", post + [("content-length", "10")], [d5], end_stream=False)
        d20 = DataFrame(1); d20.data = b"x" * 20; d20.flags.add("END_STREAM")
        one("CL 5 but 20 data (cgi)", post + [("content-length", "5")], [d20], end_stream=False)
        one("CL 5 but END_STREAM on HEADERS", post + [("content-length", "5")])
        one("CL 5 no data, static GET", BASE + [("content-length", "5")])
        one("CL 5 but 20 data (static)", BASE + [("content-length", "5")], [d20], end_stream=False)
        one("CL invalid", post + [("content-length", "abc")], [d5], end_stream=False)
        one("two CL differing", post + [("content-length", "5"), ("content-length", "6")], [d5], end_stream=False)
    if which == "limits":
        one(":path 9000", BASE[:3] + [(":path", "/" + "a" * 9000)])
        one("header 17k", BASE + [("x-a", "a" * 17000)])
        one("header 100k", BASE + [("x-a", "a" * 100000)])
        one("101 headers", BASE + [(f"x-{i}", "y") for i in range(101)])
        one("cookie crumbs x200", BASE + [("cookie", f"c{i}=1") for i in range(200)])
        one("cookie crumbs x20 cgi", BASE[:3] + [(":path", "/cgi-bin/env.sh")] + [("cookie", f"c{i}=1") for i in range(20)])
    if which == "maxheaders":
        for n in (99, 101, 300, 450, 600):
            one(f"{n} headers static", BASE + [(f"x-{i}", "y") for i in range(n)])
        one("300 headers cgi", BASE[:3] + [(":path", "/cgi-bin/env.sh")] + [(f"x-{i}", "y") for i in range(300)])
        one("300 same-name headers cgi", BASE[:3] + [(":path", "/cgi-bin/env.sh")] + [("x-a", "y") for i in range(300)])
    if which == "bigcl":
        post = [(":method", "POST"), (":scheme", "http"), (":authority", "a.test"), (":path", "/cgi-bin/md5.sh")]
        one("CL 11000000, no data yet", post + [("content-length", "11000000")], end_stream=False)
        d = DataFrame(1); d.data = b"x" * 16000
        one("CL 11000000 + 16k data", post + [("content-length", "11000000")], [d], end_stream=False)
        one("CL 11000000 static", BASE[:3] + [(":path", "/index.html"), ("content-length", "11000000")], end_stream=False)
