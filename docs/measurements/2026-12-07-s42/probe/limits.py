#!/usr/bin/env python3
# header/URI limits, half-close
import sys, re
sys.path.insert(0, "/tmp/s42/probe")
from raw import send
P=18701
def st(r):
    t=r.decode('latin1'); return re.findall(r"HTTP/1\.[01] \d{3}[^\r\n]*", t), t[-9:]
print("uri 8000", st(send(("GET /"+"a"*8000+" HTTP/1.1\r\nHost: a.test\r\n\r\n").encode(),P,wait=1)))
print("uri 9000", st(send(("GET /"+"a"*9000+" HTTP/1.1\r\nHost: a.test\r\n\r\n").encode(),P,wait=1)))
print("uri 100k", st(send(("GET /"+"a"*100000+" HTTP/1.1\r\nHost: a.test\r\n\r\n").encode(),P,wait=1)))
print("uri 9000 cgi", st(send(("GET /cgi-bin/env.sh?"+"a"*9000+" HTTP/1.1\r\nHost: a.test\r\n\r\n").encode(),P,wait=1)))
print("hdr 15k", st(send(("GET / HTTP/1.1\r\nHost: a.test\r\nX: "+"a"*15000+"\r\n\r\n").encode(),P,wait=1)))
print("hdr 17k", st(send(("GET / HTTP/1.1\r\nHost: a.test\r\nX: "+"a"*17000+"\r\n\r\n").encode(),P,wait=1)))
print("hdr 1M", st(send(("GET / HTTP/1.1\r\nHost: a.test\r\nX: "+"a"*1000000+"\r\n\r\n").encode(),P,wait=1)))
print("hdr 1M post", st(send(("POST /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\nX: "+"a"*1000000+"\r\n\r\nx").encode(),P,wait=1)))
print("101 headers", st(send(("GET / HTTP/1.1\r\nHost: a.test\r\n"+"".join("X%d: y\r\n"%i for i in range(101))+"\r\n").encode(),P,wait=1)))
print("99 headers", st(send(("GET / HTTP/1.1\r\nHost: a.test\r\n"+"".join("X%d: y\r\n"%i for i in range(98))+"\r\n").encode(),P,wait=1)))
print("1000 headers post", st(send(("POST /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\n"+"".join("X%d: y\r\n"%i for i in range(1000))+"\r\nx").encode(),P,wait=1)))
print("half-close GET", st(send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n",P,half=True,wait=2)))
print("half-close CGI", st(send(b"GET /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\n\r\n",P,half=True,wait=2)))
print("half-close POST CGI", st(send(b"POST /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nabc",P,half=True,wait=2)))
print("half-close POST chunked CGI", st(send(b"POST /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",P,half=True,wait=2)))
print("half-close pipelined 3", st(send(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\n\r\n"*3,P,half=True,wait=2)))
print("half-close slow CGI", st(send(b"GET /cgi-bin/slowhdr.sh HTTP/1.1\r\nHost: a.test\r\n\r\n",P,half=True,wait=12)))
print("half-close big", len(send(b"GET /big.txt HTTP/1.1\r\nHost: a.test\r\n\r\n",P,half=True,wait=2)))
print("body too big CL", st(send(b"POST /cgi-bin/env.sh HTTP/1.1\r\nHost: a.test\r\nContent-Length: 20000000\r\n\r\nabc",P,wait=1)))
