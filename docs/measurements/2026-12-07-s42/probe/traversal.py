#!/usr/bin/env python3
# path traversal / mapping battery. Docroot www/ ; ../secret/s.txt holds SECRET-OUTSIDE; www/.env holds dotsecret
import sys, re
sys.path.insert(0, "/tmp/s42/probe")
from raw import send
P = int(sys.argv[1]) if len(sys.argv) > 1 else 18701
paths = [
 "/../secret/s.txt", "/%2e%2e/secret/s.txt", "/%2E%2e/secret/s.txt", "/..%2fsecret/s.txt", "/..%2Fsecret%2fs.txt",
 "/sub/../../secret/s.txt", "/sub/%2e%2e/%2e%2e/secret/s.txt", "/..\\secret\\s.txt", "/..%5csecret%5cs.txt", "/sub%5c..%5c..%5csecret%5cs.txt",
 "/%252e%252e/secret/s.txt", "/%c0%ae%c0%ae/secret/s.txt", "/%c0%af../secret/s.txt", "/..%c0%afsecret/s.txt", "/.%2e/secret/s.txt",
 "/index.html%00.txt", "/index.html%00", "/sub/a.txt;x=1", "/sub;x/a.txt", "/..;/secret/s.txt", "/sub/..;/..;/secret/s.txt",
 "//etc/passwd", "/./index.html", "/sub/./a.txt", "/sub//a.txt", "/sub/a.txt/", "/sub/a.txt/.", "/sub/a.txt%2f", "/sub%2fa.txt",
 "/.env", "/%2eenv", "/sub/../.env", "/.%65nv", "/.ENV", "/.well-known/x", "/.git/config",
 "/link-out", "/link-abs", "/link-in", "/linkdir/s.txt", "/nofollow/out", "/nofollow/in",
 "/dir", "/dir/", "/dir/idx", "/dir/idx/", "/dir/idx?x=1", "/sub", "/sub/", "/dir/idx/index.html", "/dir/idx/index.html/",
 "/index.html?../../secret", "/index.html#frag", "/%69ndex.html", "/INDEX.HTML", "/index.html.", "/index.html%20", "/index.html::$DATA",
 "/cgi-bin/../secret/s.txt", "/cgi-bin/%2e%2e/t.toml", "/cgi-bin/../t.toml", "/cgi-bin/noexec.sh", "/cgi-bin/.hidden", "/cgi-bin/env.sh%00",
 "/cgi-bin/env.sh/../../t.toml", "/cgi-bin/env.sh%2f..%2f..%2ft.toml", "/cgi-bin/", "/cgi-bin", "/cgi-bin/nonexist",
 "/%", "/%zz", "/%2", "/\x7f", "/a\x01b", "http-noslash", "/~root",
]
for p in paths:
    r = send(f"GET {p} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".encode("latin1"), P, wait=1).decode("latin1")
    st = (re.findall(r"HTTP/1\.[01] (\d{3})", r) or ["---"])[0]
    loc = re.search(r"(?i)\r\nlocation: ([^\r]*)", r)
    body = r.split("\r\n\r\n", 1)[1][:40] if "\r\n\r\n" in r else ""
    flag = " <<<LEAK" if ("SECRET-OUTSIDE" in r or "dotsecret" in r or "root:x" in r or "[[listen]]" in r) else ""
    print(f"{p!r:45s} {st} {('loc='+loc.group(1)) if loc else ''} {body!r}{flag}")
