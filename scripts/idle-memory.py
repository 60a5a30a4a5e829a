#!/usr/bin/env python3
"""Resident memory of a server idle, and with N idle keep-alive connections.

Usage: idle-memory.py PID HOST:PORT [N] [PATH]

Opens N connections, sends one keep-alive request on each and reads the
response (so each connection is an idle keep-alive connection, as a browser
leaves it), then prints the server's VmRSS before and after. Loopback only.
"""
import socket
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("no VmRSS")


def main():
    pid = int(sys.argv[1])
    host, port = sys.argv[2].rsplit(":", 1)
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    path = sys.argv[4] if len(sys.argv) > 4 else "/"
    before = rss_kib(pid)
    req = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    conns = []
    for i in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(req)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = s.recv(65536)
            if not chunk:
                raise SystemExit(f"connection {i} closed")
            got += chunk
        conns.append(s)
    time.sleep(1)
    after = rss_kib(pid)
    print(f"idle: {before} KiB; with {n} idle keep-alive connections: {after} KiB "
          f"({(after - before) * 1024 / n:.0f} bytes per connection)")
    for s in conns:
        s.close()


if __name__ == "__main__":
    main()
