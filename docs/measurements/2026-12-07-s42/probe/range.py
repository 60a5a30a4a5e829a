#!/usr/bin/env python3
# Range / conditional / HEAD battery on /r.txt (36 bytes "0-9a-z") and /big.txt
import sys, re, subprocess
sys.path.insert(0, "/tmp/s42/probe")
from raw import send
P = int(sys.argv[1]) if len(sys.argv) > 1 else 18701
def req(path, hdrs="", method="GET"):
    r = send(f"{method} {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n{hdrs}\r\n".encode("latin1"), P, wait=1).decode("latin1")
    head, _, body = r.partition("\r\n\r\n")
    return head, body.replace("<<EOF>>", "")
g, gb = req("/r.txt"); h, hb = req("/r.txt", method="HEAD")
strip = lambda x: sorted(l for l in x.split("\r\n") if not l.lower().startswith("date:"))
print("HEAD==GET headers:", strip(g) == strip(h), "HEAD body:", repr(hb))
etag = re.search(r"(?i)etag: (.*)", g).group(1).strip(); lm = re.search(r"(?i)last-modified: (.*)", g).group(1).strip()
print("etag", etag, "lm", lm)
cases = [
 ("bytes=0-4", ""), ("bytes=-5", ""), ("bytes=30-", ""), ("bytes=30-1000", ""), ("bytes=36-", ""), ("bytes=100-200", ""),
 ("bytes=5-2", ""), ("bytes=0-0,-1", ""), ("bytes=0-1,2-3", ""), ("bytes=0-5,3-8", ""), ("bytes= 0-4", ""), ("bytes=0-4 ", ""),
 ("bytes=-0", ""), ("bytes=0--5", ""), ("bytes=abc", ""), ("items=0-4", ""), ("BYTES=0-4", ""), ("bytes=0-4,", ""), ("bytes=,0-4", ""),
 ("bytes=" + ",".join(f"{i}-{i}" for i in range(36)), ""), ("bytes=" + ",".join("0-35" for i in range(50)), ""),
 ("bytes=" + ",".join("0-0" for i in range(101)), ""), ("bytes=99999999999999999999999-", ""), ("bytes=-99999999999999999999", ""),
 ("bytes=0-4", f"If-Range: {etag}\r\n"), ("bytes=0-4", 'If-Range: "other"\r\n'), ("bytes=0-4", f"If-Range: W/{etag}\r\n"),
 ("bytes=0-4", f"If-Range: {lm}\r\n"), ("bytes=0-4", "If-Range: Mon, 01 Jan 2001 00:00:00 GMT\r\n"),
 ("bytes=100-", f"If-Range: {etag}\r\n"),
]
for rng, extra in cases:
    head, body = req("/r.txt", f"Range: {rng}\r\n{extra}")
    st = head.split("\r\n")[0]; cr = re.search(r"(?i)content-range: (.*)", head); ct = re.search(r"(?i)content-type: (.*)", head)
    print(f"{rng[:40]!s:42s} {extra.strip()[:40]:40s} {st:35s} CR={cr.group(1) if cr else '-':18s} CT={ct.group(1)[:40] if ct else '-'} body={body[:50]!r}")
cond = [
 f"If-None-Match: {etag}", f"If-None-Match: W/{etag}", f'If-None-Match: "x", {etag}', f'If-None-Match: "x",{etag} ', "If-None-Match: *", 'If-None-Match: "x"',
 f"If-Modified-Since: {lm}", "If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT", "If-Modified-Since: Mon, 01 Jan 2099 00:00:00 GMT", "If-Modified-Since: garbage",
 f'If-None-Match: "x"\r\nIf-Modified-Since: {lm}', f"If-Match: {etag}", 'If-Match: "x"', f"If-Match: W/{etag}", "If-Match: *",
 "If-Unmodified-Since: Mon, 01 Jan 2001 00:00:00 GMT", f"If-Unmodified-Since: {lm}",
 f'If-Match: "x"\r\nRange: bytes=0-1', f"If-None-Match: {etag}\r\nRange: bytes=0-1",
 "If-Modified-Since: Sunday, 06-Nov-94 08:49:37 GMT", "If-Modified-Since: Sun Nov  6 08:49:37 1994",
]
for c in cond:
    head, body = req("/r.txt", c + "\r\n")
    h2_, _ = req("/r.txt", c + "\r\n")
    st = head.split("\r\n")[0]
    print(f"{c.replace(chr(13)+chr(10),' | ')[:70]:72s} {st}  hdrs={[l.split(':')[0] for l in head.split(chr(13)+chr(10))[1:]]}")
for c in [f"If-None-Match: {etag}", "Range: bytes=0-1", "Range: bytes=100-"]:
    head, body = req("/r.txt", c + "\r\n", method="HEAD"); print("HEAD", c, head.split("\r\n")[0], repr(body))
