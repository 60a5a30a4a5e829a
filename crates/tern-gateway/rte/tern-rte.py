#!/usr/bin/env python3
"""tern-rte.py: tern's Python run-time engine.

A CGIplus script (see docs/cgiplus.md) that keeps one Python interpreter
alive and runs unmodified CGI scripts in it, request after request: the
script named by each request's SCRIPT_FILENAME, compiled once to a code
object and compiled again when its file changes.

Per request the script runs as `__main__` in a fresh module dictionary, with
os.environ set to exactly the request's variables (plus the engine's own
environment, less CGIPLUS*), sys.stdin reading the request body (text, with
the bytes on sys.stdin.buffer), sys.stdout writing the response (text, bytes
on sys.stdout.buffer), sys.argv == [its file], its own directory as the
working directory and as sys.path[0]. sys.exit() ends the script, not the
engine; so does an uncaught exception, which is logged on stderr and, when
the script wrote nothing yet, answered with `Status: 500`.

What stays between requests: modules a script imports (loaded once, as in
any long-running Python), and anything it does to them or to the process.
os._exit() ends the engine; tern starts another.
"""

import builtins
import io
import os
import struct
import sys
import traceback

SERVER_ERROR = (b"Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\n"
                b"Internal Server Error\n")
NOT_FOUND = b"Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nNot Found\n"
OWN = (b"CGIPLUSEOF", b"CGIPLUSESC", b"CGIPLUSEOT")


def log(message):
    sys.__stderr__.write("tern-rte.py: %s\n" % message)
    sys.__stderr__.flush()


def write_all(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


class Counted(io.RawIOBase):
    """fd 1, counting what the script wrote: an error after output started
    cannot become a 500 any more."""

    def __init__(self):
        super().__init__()
        self.bytes = 0

    def writable(self):
        return True

    def write(self, data):
        n = os.write(1, data)
        self.bytes += n
        return n

    def fileno(self):
        return 1


class Engine:
    def __init__(self):
        env = os.environb
        self.eof = env.get(b"CGIPLUSEOF")
        # The environment every request's starts from. Without CGIPLUS*: a
        # script that saw CGIPLUSEOF would think it ran under CGIplus itself.
        self.base = {k: v for k, v in env.items() if k not in OWN}
        # Requests arrive on fd 0: read them through a descriptor of the
        # engine's own (not inherited), and give fd 0 /dev/null, so that a
        # program a script starts cannot eat the next request. fd 1 stays:
        # such a program's output is part of the response.
        self.requests = os.fdopen(os.dup(0), "rb")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.scripts = {}  # path -> ((dev, ino, size, mtime_ns), code)
        self.pid = os.getpid()
        esc, eot = env.get(b"CGIPLUSESC"), env.get(b"CGIPLUSEOT")
        if esc and eot:
            # Struct mode: each request's variables in one read. It applies
            # from the next request tern starts; the start line says which
            # form comes, so the engine reads both.
            write_all(esc + b"!CGIPLUS: struct" + eot)

    def run(self):
        while True:
            request = self.read_request()
            if request is None:
                return
            variables, body = request
            self.serve(variables, body)
            write_all(self.eof)

    def read_exactly(self, n):
        data = self.requests.read(n) if n else b""
        return data if len(data) == n else None

    def read_request(self):
        """The next request's variables and body, or None at the end of
        input."""
        start = self.requests.readline()
        if not start:
            return None
        start = start.rstrip(b"\n")
        variables = {}
        if start == b"!":
            while True:
                line = self.requests.readline()
                if not line.endswith(b"\n"):
                    return None
                if line == b"\n":
                    break
                name, _, value = line[:-1].partition(b"=")
                variables[name] = value
        elif start.startswith(b"!!") and start[2:].isdigit():
            block = self.read_exactly(int(start[2:]))
            if block is None:
                return None
            at = 0
            while True:
                (n,) = struct.unpack_from("<I", block, at)
                at += 4
                if n == 0:
                    break
                name, _, value = block[at:at + n].partition(b"=")
                variables[name] = value
                at += n
        else:
            log("not a CGIplus start line: %r" % start)
            sys.exit(1)
        body = self.read_exactly(int(variables.get(b"CONTENT_LENGTH") or b"0"))
        if body is None:
            return None
        return variables, body

    def load(self, path):
        """The code object for `path`, compiled again when the file's
        identity, size or modification time changed; None if there is no
        such file."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not os.path.isfile(path):
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        known = self.scripts.get(path)
        if known is not None and known[0] == key:
            return known[1]
        with open(path, "rb") as f:
            source = f.read()
        code = compile(source, path, "exec", dont_inherit=True)
        self.scripts[path] = (key, code)
        return code

    def serve(self, variables, body):
        os.environb.clear()
        os.environb.update(self.base)
        os.environb.update(variables)
        path = os.fsdecode(variables.get(b"SCRIPT_FILENAME", b""))
        try:
            code = self.load(path) if path else None
        except Exception:
            log("%s:\n%s" % (path, traceback.format_exc()))
            write_all(SERVER_ERROR)
            return
        if code is None:
            write_all(NOT_FOUND)
            return
        directory = os.path.dirname(path) or "."
        try:
            os.chdir(directory)
        except OSError as e:
            log("chdir %s: %s" % (directory, e))

        sink = Counted()
        stdout = io.TextIOWrapper(io.BufferedWriter(sink), encoding="utf-8",
                                  errors="surrogateescape")
        stdin = io.TextIOWrapper(io.BytesIO(body), encoding="utf-8",
                                 errors="surrogateescape")
        saved = sys.stdin, sys.stdout, sys.argv, sys.path[0]
        sys.stdin, sys.stdout, sys.argv, sys.path[0] = stdin, stdout, [path], directory
        failed = False
        try:
            exec(code, {"__name__": "__main__", "__file__": path,
                        "__builtins__": builtins})
        except SystemExit:
            pass
        except Exception:
            failed = True
            log("%s:\n%s" % (path, traceback.format_exc()))
        finally:
            sys.stdin, sys.stdout, sys.argv, sys.path[0] = saved
            try:
                if not stdout.closed:
                    stdout.flush()
            except ValueError:
                pass  # the script closed sys.stdout.buffer under it
        if os.getpid() != self.pid:
            # A child the script forked that came back here (by sys.exit(),
            # an exception or the end of the script) must not go on serving
            # requests.
            os._exit(1 if failed else 0)
        if failed and sink.bytes == 0:
            write_all(SERVER_ERROR)


def main():
    if not os.environb.get(b"CGIPLUSEOF"):
        log("CGIPLUSEOF is not set: run me as a CGIplus script under tern")
        sys.exit(2)
    Engine().run()


if __name__ == "__main__":
    main()
