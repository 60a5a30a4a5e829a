#!/usr/bin/env python3
"""Hello! as a plain CGI script and as a CGIplus script: the same file serves
both. Under CGIplus (CGIPLUSEOF is set) it asks for struct mode once, then
loops: it reads a request in either form (the start line says which), writes
the response, then the sentinel."""
import os
import struct
import sys


def respond(out, env):
    out.write(b"Content-Type: text/plain\n\nHello!\n")


def read_request(inp):
    """The next request's variables and body, or None when tern closed
    stdin (the worker is being stopped)."""
    start = inp.readline().rstrip(b"\n")
    if not start:
        return None
    env = {}
    if start == b"!":  # record mode: NAME=value lines up to an empty one
        while True:
            line = inp.readline()
            if not line:
                return None
            if line == b"\n":
                break
            name, _, value = line.rstrip(b"\n").partition(b"=")
            env[name] = value
    elif start.startswith(b"!!"):  # struct mode: u32 little-endian lengths
        block = inp.read(int(start[2:]))
        at = 0
        while True:
            (n,) = struct.unpack_from("<I", block, at)
            at += 4
            if n == 0:
                break
            name, _, value = block[at:at + n].partition(b"=")
            env[name] = value
            at += n
    else:
        sys.exit("hello.py: not a CGIplus start line: %r" % start)
    body = inp.read(int(env.get(b"CONTENT_LENGTH") or 0))
    return env, body


def main():
    out = sys.stdout.buffer
    eof = os.environb.get(b"CGIPLUSEOF")
    if eof is None:  # plain CGI
        respond(out, os.environb)
        return
    esc, eot = os.environb[b"CGIPLUSESC"], os.environb[b"CGIPLUSEOT"]
    out.write(esc + b"!CGIPLUS: struct" + eot)
    out.flush()
    inp = sys.stdin.buffer
    while True:
        request = read_request(inp)
        if request is None:
            return
        env, body = request
        respond(out, env)
        out.write(eof)
        out.flush()  # the response and the sentinel in one write


main()
