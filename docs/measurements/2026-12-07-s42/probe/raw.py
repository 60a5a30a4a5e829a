#!/usr/bin/env python3
"""raw.py: send raw bytes to tern and print the full response.
usage: python3 raw.py PORT 'python-bytes-literal' [--half] [--wait SECS]"""
import socket, sys, time
def send(data, port=18701, half=False, wait=2.0, delay_after=0.0, chunks=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    if chunks:
        for c, d in chunks:
            s.sendall(c); time.sleep(d)
    else:
        s.sendall(data)
    if half:
        s.shutdown(socket.SHUT_WR)
    out = b""
    t0 = time.time()
    try:
        while time.time() - t0 < wait + 3:
            b = s.recv(65536)
            if not b: out += b"<<EOF>>"; break
            out += b
    except socket.timeout:
        out += b"<<TIMEOUT>>"
    except ConnectionResetError:
        out += b"<<RST>>"
    s.close()
    return out
if __name__ == "__main__":
    port = int(sys.argv[1]); data = eval("b'''" + sys.argv[2] + "'''")
    half = "--half" in sys.argv
    wait = float(sys.argv[sys.argv.index("--wait")+1]) if "--wait" in sys.argv else 2.0
    r = send(data, port, half, wait)
    sys.stdout.write(r.decode("latin1"))
    print()
