//! The static handler's RFC 9110 matrix through the built binary: the
//! precondition order (§13.2.2), ranges (§14, multipart and If-Range
//! included) and precompressed sidecars with Vary. Every table runs with the
//! file cache off, on but revalidating every request, and on (answers from
//! memory), and each time three ways: a connection per request, one
//! keep-alive connection, and all requests pipelined in one write.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, UNIX_EPOCH};

use super::*;

/// Every file's modification time, so Last-Modified is known.
const MTIME: u64 = 1_700_000_000;
const LM: &str = "Tue, 14 Nov 2023 22:13:20 GMT";
const BEFORE: &str = "Tue, 14 Nov 2023 22:13:19 GMT";
const AFTER: &str = "Tue, 14 Nov 2023 22:13:21 GMT";

const TEXT: &[u8] = b"hello, conditional world\n";
const CSS: &[u8] = b"body { color: red; } /* the identity representation */\n";
const BR: &[u8] = b"BR-BYTES";
const ZSTD: &[u8] = b"ZSTD-BYTES-";
const GZIP: &[u8] = b"GZIP-BYTES--";

/// 1000 bytes, every position distinct enough to catch an off-by-one.
fn data() -> Vec<u8> {
    (0..1000u32)
        .map(|i| b"0123456789abcdefghijklmnopqrstuvwxyz"[(i % 36) as usize])
        .collect()
}

/// 300 000 bytes: more than two 128 KiB read chunks, so without the cache
/// it is streamed from the file rather than read whole.
fn big() -> Vec<u8> {
    (0..300_000u32).map(|i| (i % 251) as u8).collect()
}

/// How the file cache is set up; the same table must give the same answers
/// in every mode, since the cache computes 304 and 206 from what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `[cache] enabled = false`: no bodies kept, every body read from its
    /// file (held open between requests).
    Off,
    /// Cache on, `revalidate = 0`: every request takes the slow path, which
    /// rebuilds the entry from the previous one.
    Revalidating,
    /// Cache on, entries fresh for a minute: after the first request for a
    /// representation, answers come from memory.
    On,
}

const MODES: [Mode; 3] = [Mode::Off, Mode::Revalidating, Mode::On];

impl Mode {
    /// The top-level config table for this mode.
    fn cache_table(self) -> &'static str {
        match self {
            Mode::Off => "[cache]\nenabled = false",
            Mode::Revalidating => "[cache]\nrevalidate = 0",
            Mode::On => "[cache]\nrevalidate = \"60s\"",
        }
    }
}

/// Codings and the suffix of their sidecar file.
const CODINGS: [(&str, &str); 4] = [
    ("identity", ""),
    ("br", ".br"),
    ("zstd", ".zst"),
    ("gzip", ".gz"),
];

/// (URL path, coding, bytes): every representation the site serves.
fn representations() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    vec![
        ("/a.txt", "identity", TEXT.to_vec()),
        ("/frac.txt", "identity", TEXT.to_vec()),
        ("/d.bin", "identity", data()),
        ("/big.bin", "identity", big()),
        ("/empty.txt", "identity", Vec::new()),
        ("/x.css", "identity", CSS.to_vec()),
        ("/x.css", "br", BR.to_vec()),
        ("/x.css", "zstd", ZSTD.to_vec()),
        ("/x.css", "gzip", GZIP.to_vec()),
        ("/plain.css", "identity", CSS.to_vec()),
    ]
}

/// What the server must send for one representation.
#[derive(Debug)]
struct Rep {
    body: Vec<u8>,
    /// The strong tag of representation.rs: length and mtime in
    /// nanoseconds in hex, then `-coding` for a sidecar.
    etag: String,
    content_type: &'static str,
    encoding: Option<&'static str>,
    /// The file has sidecars, so every answer varies on Accept-Encoding.
    vary: bool,
}

/// A running tern serving the fixture files, with `max_ranges = 3`.
struct Site {
    tern: Tern,
    mode: Mode,
    reps: HashMap<(&'static str, &'static str), Rep>,
}

impl Site {
    fn start(mode: Mode) -> Site {
        let dir = docroot(&[]);
        let www = dir.path().join("www");
        let mut reps = HashMap::new();
        for (path, coding, body) in representations() {
            let suffix = CODINGS.iter().find(|(c, _)| *c == coding).unwrap().1;
            let file = www.join(format!("{}{suffix}", &path[1..]));
            std::fs::write(&file, &body).unwrap();
            let f = std::fs::File::options().write(true).open(&file).unwrap();
            // frac.txt is half a second younger: HTTP dates compare in
            // whole seconds, so its Last-Modified is the same.
            let nanos = if path == "/frac.txt" { 500_000_000 } else { 0 };
            f.set_modified(UNIX_EPOCH + Duration::new(MTIME, nanos))
                .unwrap();
            let m = f.metadata().unwrap();
            let mtime_ns = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
            let tag_suffix = if suffix.is_empty() {
                String::new()
            } else {
                format!("-{coding}")
            };
            let etag = format!("\"{:x}-{mtime_ns:x}{tag_suffix}\"", m.len());
            let content_type = match path.rsplit('.').next() {
                Some("txt") => "text/plain; charset=utf-8",
                Some("css") => "text/css; charset=utf-8",
                _ => "application/octet-stream",
            };
            let rep = Rep {
                body,
                etag,
                content_type,
                encoding: (coding != "identity").then_some(coding),
                vary: path == "/x.css",
            };
            reps.insert((path, coding), rep);
        }
        let cfg = config(mode.cache_table(), "max_ranges = 3");
        Site {
            tern: Tern::start_in(BIN, &cfg, dir),
            mode,
            reps,
        }
    }

    fn rep(&self, path: &'static str, coding: &'static str) -> &Rep {
        self.reps
            .get(&(path, coding))
            .unwrap_or_else(|| panic!("no representation {path} as {coding}"))
    }

    /// The raw request for `case`: `ETAG.coding` in a header value stands
    /// for that representation's tag, a bare `ETAG` for the expected one's.
    fn raw(&self, case: &Case, close: bool) -> String {
        let method = if case.head { "HEAD" } else { "GET" };
        let mut s = format!("{method} {} HTTP/1.1\r\nHost: test\r\n", case.path);
        for (name, value) in &case.headers {
            let mut value = (*value).to_owned();
            for (coding, _) in CODINGS {
                let key = format!("ETAG.{coding}");
                if value.contains(&key) {
                    value = value.replace(&key, &self.rep(case.path, coding).etag);
                }
            }
            let value = value.replace("ETAG", &self.rep(case.path, case.coding).etag);
            s.push_str(&format!("{name}: {value}\r\n"));
        }
        if close {
            s.push_str("Connection: close\r\n");
        }
        s.push_str("\r\n");
        s
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.tern.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    /// Runs `cases` three ways and checks every answer.
    fn run(&self, cases: &[Case]) {
        // A connection per request.
        for case in cases {
            let raw = self.raw(case, true);
            let r = request(self.tern.addr(), raw.as_bytes()).unwrap_or_else(|e| {
                panic!("{:?} {raw:?}: {e}\nlog:\n{}", self.mode, self.tern.log())
            });
            self.check(
                case,
                &r,
                &format!("{:?}, own connection: {raw:?}", self.mode),
            );
        }
        // One keep-alive connection, a request after each response: a
        // response with a wrong length would garble the next one.
        let mut s = self.connect();
        for case in cases {
            let raw = self.raw(case, false);
            s.write_all(raw.as_bytes()).unwrap();
            let r = Response::read_from(&mut s, case.head)
                .unwrap_or_else(|e| panic!("{:?} keep-alive {raw:?}: {e}", self.mode));
            self.check(case, &r, &format!("{:?}, keep-alive: {raw:?}", self.mode));
        }
        drop(s);
        // Pipelined: every request in one write (the last one closes), the
        // responses read back in order.
        let all: String = cases
            .iter()
            .enumerate()
            .map(|(i, c)| self.raw(c, i + 1 == cases.len()))
            .collect();
        let mut s = self.connect();
        let mut buf = Vec::new();
        std::thread::scope(|scope| {
            let mut w = s.try_clone().unwrap();
            // Written beside the reads, so neither side can stall on a full
            // socket buffer.
            scope.spawn(move || w.write_all(all.as_bytes()).unwrap());
            s.read_to_end(&mut buf)
                .unwrap_or_else(|e| panic!("{:?} pipelined: {e}", self.mode));
        });
        let heads: Vec<bool> = cases.iter().map(|c| c.head).collect();
        let responses = split_responses(&buf, &heads, self.mode);
        for (case, r) in cases.iter().zip(&responses) {
            let raw = self.raw(case, false);
            self.check(case, r, &format!("{:?}, pipelined: {raw:?}", self.mode));
        }
    }

    /// Checks one response against the case's expectation.
    fn check(&self, case: &Case, r: &Response, ctx: &str) {
        let rep = self.rep(case.path, case.coding);
        let len = rep.body.len();
        let header = |name: &str| r.header(name);
        let mut names: Vec<&str> = r.headers.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        assert!(
            names.windows(2).all(|w| w[0] != w[1]),
            "{ctx}: a header repeats: {:?}",
            r.headers
        );
        assert_eq!(header("transfer-encoding"), None, "{ctx}");
        let status = match case.want {
            Whole => 200,
            Partial(..) | Multi(_) => 206,
            NotModified => 304,
            Failed => 412,
            Unsatisfiable => 416,
        };
        assert_eq!(r.status, status, "{ctx}: {:?} {:?}", r.headers, r.text());
        if matches!(status, 200 | 206 | 304) {
            assert_eq!(header("etag"), Some(rep.etag.as_str()), "{ctx}");
            assert_eq!(header("last-modified"), Some(LM), "{ctx}");
            let vary = rep.vary.then_some("Accept-Encoding");
            assert_eq!(header("vary"), vary, "{ctx}");
        }
        if matches!(status, 200 | 206) {
            assert_eq!(header("content-encoding"), rep.encoding, "{ctx}");
            assert_eq!(header("accept-ranges"), Some("bytes"), "{ctx}");
        }
        let body: &[u8] = &r.body;
        match case.want {
            Whole => {
                assert_eq!(header("content-type"), Some(rep.content_type), "{ctx}");
                assert_eq!(header("content-length"), Some(&*len.to_string()), "{ctx}");
                assert_eq!(header("content-range"), None, "{ctx}");
                let want: &[u8] = if case.head { b"" } else { &rep.body };
                assert_eq!(body, want, "{ctx}");
            }
            Partial(start, end) => {
                let (s, e) = (start as usize, end as usize);
                assert_eq!(header("content-type"), Some(rep.content_type), "{ctx}");
                let range = format!("bytes {s}-{e}/{len}");
                assert_eq!(header("content-range"), Some(&*range), "{ctx}");
                let n = (e - s + 1).to_string();
                assert_eq!(header("content-length"), Some(&*n), "{ctx}");
                assert_eq!(body, &rep.body[s..=e], "{ctx}");
            }
            Multi(want) => {
                let ct = header("content-type").unwrap_or_default();
                let boundary = ct
                    .strip_prefix("multipart/byteranges; boundary=")
                    .unwrap_or_else(|| panic!("{ctx}: Content-Type {ct:?}"));
                assert_eq!(header("content-range"), None, "{ctx}");
                let n = body.len().to_string();
                assert_eq!(header("content-length"), Some(&*n), "{ctx}");
                let parts = parts(body, boundary)
                    .unwrap_or_else(|e| panic!("{ctx}: {e}\n{}", String::from_utf8_lossy(body)));
                assert_eq!(parts.len(), want.len(), "{ctx}: {parts:?}");
                for (part, &(start, end)) in parts.iter().zip(want) {
                    let (s, e) = (start as usize, end as usize);
                    assert_eq!(part.0, rep.content_type, "{ctx}");
                    assert_eq!(part.1, format!("bytes {s}-{e}/{len}"), "{ctx}");
                    assert_eq!(part.2, &rep.body[s..=e], "{ctx}");
                }
            }
            NotModified => {
                // Only the validators and Vary (RFC 9110 §15.4.5).
                for name in [
                    "content-type",
                    "content-length",
                    "content-encoding",
                    "content-range",
                ] {
                    assert_eq!(header(name), None, "{ctx}: {name}");
                }
                assert!(body.is_empty(), "{ctx}");
            }
            Failed => {
                assert_eq!(header("etag"), None, "{ctx}");
                let want: &[u8] = if case.head {
                    b""
                } else {
                    b"412 Precondition Failed\n"
                };
                assert_eq!(body, want, "{ctx}");
            }
            Unsatisfiable => {
                let range = format!("bytes */{len}");
                assert_eq!(header("content-range"), Some(&*range), "{ctx}");
                assert_eq!(body, b"416 Range Not Satisfiable\n", "{ctx}");
            }
        }
    }
}

/// What must come back.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// 200 with the whole representation (no body for HEAD).
    Whole,
    /// 304 with the validators only.
    NotModified,
    /// 412.
    Failed,
    /// 206 with one inclusive range.
    Partial(u64, u64),
    /// 206 `multipart/byteranges` with these parts, in order.
    Multi(&'static [(u64, u64)]),
    /// 416 with `Content-Range: bytes */SIZE`.
    Unsatisfiable,
}

use Want::{Failed, Multi, NotModified, Partial, Unsatisfiable, Whole};

/// One request and the representation (path and coding) whose answer is
/// expected.
#[derive(Debug)]
struct Case {
    head: bool,
    path: &'static str,
    coding: &'static str,
    headers: Vec<(&'static str, &'static str)>,
    want: Want,
}

/// `METHOD "/path" [as coding] ["name": value, ...] => Want;`, one case a
/// line. Without `as`, the identity representation is expected.
macro_rules! cases {
    ($($method:ident $path:literal $(as $coding:ident)? $([$($name:literal: $value:expr),* $(,)?])? => $want:expr;)*) => {
        vec![$(Case {
            head: cases!(@head $method),
            path: $path,
            coding: cases!(@coding $($coding)?),
            headers: vec![$($(($name, $value)),*)?],
            want: $want,
        }),*]
    };
    (@head GET) => { false };
    (@head HEAD) => { true };
    (@coding) => { "identity" };
    (@coding $c:ident) => { stringify!($c) };
}

/// RFC 9110 §13.2.2 on /a.txt: each precondition alone, then the
/// combinations whose order decides the answer.
fn precondition_cases() -> Vec<Case> {
    cases![
        GET "/a.txt" => Whole;
        HEAD "/a.txt" => Whole;
        // If-Match: strong comparison.
        GET "/a.txt" ["if-match": "ETAG"] => Whole;
        GET "/a.txt" ["if-match": "*"] => Whole;
        GET "/a.txt" ["if-match": "\"nope\", ETAG"] => Whole;
        GET "/a.txt" ["if-match": "W/ETAG"] => Failed;
        GET "/a.txt" ["if-match": "\"nope\""] => Failed;
        // If-Unmodified-Since, only without If-Match.
        GET "/a.txt" ["if-unmodified-since": BEFORE] => Failed;
        GET "/a.txt" ["if-unmodified-since": LM] => Whole;
        GET "/a.txt" ["if-unmodified-since": AFTER] => Whole;
        GET "/a.txt" ["if-unmodified-since": "not a date"] => Whole;
        GET "/a.txt" ["if-match": "ETAG", "if-unmodified-since": BEFORE] => Whole;
        // If-None-Match: weak comparison, lists, `*`, several field lines.
        GET "/a.txt" ["if-none-match": "ETAG"] => NotModified;
        GET "/a.txt" ["if-none-match": "W/ETAG"] => NotModified;
        GET "/a.txt" ["if-none-match": "\"x\", ETAG"] => NotModified;
        GET "/a.txt" ["if-none-match": "\"x\"", "if-none-match": "ETAG"] => NotModified;
        GET "/a.txt" ["if-none-match": "*"] => NotModified;
        GET "/a.txt" ["if-none-match": "\"x\""] => Whole;
        GET "/a.txt" ["if-none-match": "\"x\", W/\"y\""] => Whole;
        // If-Modified-Since, only without If-None-Match; a bad date is ignored.
        GET "/a.txt" ["if-modified-since": LM] => NotModified;
        GET "/a.txt" ["if-modified-since": AFTER] => NotModified;
        GET "/a.txt" ["if-modified-since": BEFORE] => Whole;
        GET "/a.txt" ["if-modified-since": "yesterday"] => Whole;
        GET "/a.txt" ["if-none-match": "\"x\"", "if-modified-since": LM] => Whole;
        GET "/a.txt" ["if-none-match": "ETAG", "if-modified-since": BEFORE] => NotModified;
        // The order: a failed If-Match or If-Unmodified-Since wins over 304.
        GET "/a.txt" ["if-match": "\"x\"", "if-none-match": "ETAG"] => Failed;
        GET "/a.txt" ["if-unmodified-since": BEFORE, "if-modified-since": LM] => Failed;
        GET "/a.txt" ["if-match": "ETAG", "if-none-match": "ETAG"] => NotModified;
        GET "/a.txt" ["if-match": "*", "if-modified-since": LM, "range": "bytes=0-1"] => NotModified;
        GET "/a.txt" ["if-match": "\"x\"", "range": "bytes=0-1"] => Failed;
        // Dates compare at one-second resolution, whatever the file's nanoseconds.
        GET "/frac.txt" ["if-modified-since": LM] => NotModified;
        GET "/frac.txt" ["if-unmodified-since": LM] => Whole;
        GET "/frac.txt" ["range": "bytes=0-1", "if-range": LM] => Partial(0, 1);
        // HEAD answers the same.
        HEAD "/a.txt" ["if-none-match": "ETAG"] => NotModified;
        HEAD "/a.txt" ["if-modified-since": LM] => NotModified;
        HEAD "/a.txt" ["if-match": "\"x\""] => Failed;
        HEAD "/a.txt" ["if-unmodified-since": BEFORE] => Failed;
        HEAD "/a.txt" ["if-none-match": "\"x\"", "if-modified-since": LM] => Whole;
    ]
}

/// RFC 9110 §14 on the 1000-byte /d.bin, with `max_ranges = 3`.
fn range_cases() -> Vec<Case> {
    cases![
        GET "/d.bin" ["range": "bytes=0-4"] => Partial(0, 4);
        GET "/d.bin" ["range": "bytes=-3"] => Partial(997, 999);
        GET "/d.bin" ["range": "bytes=5-"] => Partial(5, 999);
        GET "/d.bin" ["range": "bytes=999-999"] => Partial(999, 999);
        GET "/d.bin" ["range": "bytes=500-100000"] => Partial(500, 999);
        GET "/d.bin" ["range": "bytes=-5000"] => Partial(0, 999);
        GET "/d.bin" ["range": "BYTES= 5-6 "] => Partial(5, 6);
        // Several ranges: sorted, overlapping and adjacent ones merged.
        GET "/d.bin" ["range": "bytes=0-1, 5-9"] => Multi(&[(0, 1), (5, 9)]);
        GET "/d.bin" ["range": "bytes=-3,100-110,0-0"] => Multi(&[(0, 0), (100, 110), (997, 999)]);
        GET "/d.bin" ["range": "bytes=100-110,105-120,0-0"] => Multi(&[(0, 0), (100, 120)]);
        GET "/d.bin" ["range": "bytes=0-4,2-6"] => Partial(0, 6);
        GET "/d.bin" ["range": "bytes=0-4,5-6"] => Partial(0, 6);
        GET "/d.bin" ["range": "bytes=10-20,15-30,31-40"] => Partial(10, 40);
        GET "/d.bin" ["range": "bytes=0-1,5000-6000"] => Partial(0, 1);
        // More than max_ranges (counted before merging): the whole file.
        GET "/d.bin" ["range": "bytes=0-0,2-2,4-4,6-6"] => Whole;
        GET "/d.bin" ["range": "bytes=0-1,1-2,2-3,3-4"] => Whole;
        // Nothing satisfiable: 416 with the size.
        GET "/d.bin" ["range": "bytes=1000-"] => Unsatisfiable;
        GET "/d.bin" ["range": "bytes=2000-3000, 1500-"] => Unsatisfiable;
        GET "/d.bin" ["range": "bytes=-0"] => Unsatisfiable;
        // Malformed or another unit: ignored.
        GET "/d.bin" ["range": "bytes=9-1"] => Whole;
        GET "/d.bin" ["range": "bytes=x-y"] => Whole;
        GET "/d.bin" ["range": "lines=0-1"] => Whole;
        GET "/d.bin" ["range": "bytes="] => Whole;
        GET "/d.bin" ["range": "0-1"] => Whole;
        GET "/d.bin" ["range": "bytes=0-1,x"] => Whole;
        // If-Range: a strong tag or the exact date lets the range apply.
        GET "/d.bin" ["range": "bytes=0-4", "if-range": "ETAG"] => Partial(0, 4);
        GET "/d.bin" ["range": "bytes=0-4", "if-range": "\"other\""] => Whole;
        GET "/d.bin" ["range": "bytes=0-4", "if-range": "W/ETAG"] => Whole;
        GET "/d.bin" ["range": "bytes=0-4", "if-range": LM] => Partial(0, 4);
        GET "/d.bin" ["range": "bytes=0-4", "if-range": BEFORE] => Whole;
        GET "/d.bin" ["range": "bytes=0-4", "if-range": AFTER] => Whole;
        GET "/d.bin" ["range": "bytes=0-1,8-9", "if-range": "ETAG"] => Multi(&[(0, 1), (8, 9)]);
        GET "/d.bin" ["range": "bytes=5000-", "if-range": "\"other\""] => Whole;
        GET "/d.bin" ["if-range": "\"other\""] => Whole;
        // Preconditions come first.
        GET "/d.bin" ["range": "bytes=0-4", "if-none-match": "ETAG"] => NotModified;
        GET "/d.bin" ["range": "bytes=5000-", "if-none-match": "*"] => NotModified;
        GET "/d.bin" ["range": "bytes=0-4", "if-match": "\"x\""] => Failed;
        GET "/d.bin" ["range": "bytes=0-4", "if-match": "ETAG", "if-range": "\"x\""] => Whole;
        // HEAD ignores Range.
        HEAD "/d.bin" ["range": "bytes=0-4"] => Whole;
        HEAD "/d.bin" ["range": "bytes=0-1,5-9"] => Whole;
        // A file streamed in chunks (uncached): ranges across chunk edges.
        GET "/big.bin" => Whole;
        HEAD "/big.bin" => Whole;
        GET "/big.bin" ["range": "bytes=131000-262200"] => Partial(131_000, 262_200);
        GET "/big.bin" ["range": "bytes=-70000"] => Partial(230_000, 299_999);
        GET "/big.bin" ["range": "bytes=0-2,150000-290000"] => Multi(&[(0, 2), (150_000, 290_000)]);
        GET "/big.bin" ["range": "bytes=1-1,131071-131073,299999-"] => Multi(&[(1, 1), (131_071, 131_073), (299_999, 299_999)]);
        GET "/big.bin" ["range": "bytes=300000-"] => Unsatisfiable;
        GET "/big.bin" ["range": "bytes=0-0", "if-range": "ETAG"] => Partial(0, 0);
        GET "/big.bin" ["range": "bytes=0-0", "if-none-match": "ETAG"] => NotModified;
        // An empty file.
        GET "/empty.txt" => Whole;
        HEAD "/empty.txt" => Whole;
        GET "/empty.txt" ["if-none-match": "ETAG"] => NotModified;
        GET "/empty.txt" ["range": "bytes=0-4", "if-range": "\"x\""] => Whole;
    ]
}

/// Sidecars of /x.css chosen by Accept-Encoding, each with its own tag;
/// /plain.css has none and so no Vary.
fn encoding_cases() -> Vec<Case> {
    cases![
        GET "/x.css" => Whole;
        GET "/x.css" as br ["accept-encoding": "gzip, deflate, br, zstd"] => Whole;
        GET "/x.css" as br ["accept-encoding": "br"] => Whole;
        GET "/x.css" as zstd ["accept-encoding": "gzip, zstd"] => Whole;
        GET "/x.css" as gzip ["accept-encoding": "gzip"] => Whole;
        GET "/x.css" as gzip ["accept-encoding": "x-gzip"] => Whole;
        GET "/x.css" as gzip ["accept-encoding": "br;q=0, gzip"] => Whole;
        GET "/x.css" as zstd ["accept-encoding": "br;q=0.5, zstd;q=0.6, gzip;q=0.4"] => Whole;
        GET "/x.css" as br ["accept-encoding": "Br ; Q=0.9, gzip;q=0.8"] => Whole;
        GET "/x.css" as zstd ["accept-encoding": "gzip;q=0.5", "accept-encoding": "zstd"] => Whole;
        GET "/x.css" ["accept-encoding": "gzip;q=0.3, identity;q=0.5"] => Whole;
        GET "/x.css" ["accept-encoding": "identity"] => Whole;
        GET "/x.css" ["accept-encoding": "br;q=0, gzip;q=0, zstd;q=0"] => Whole;
        GET "/x.css" ["accept-encoding": "compress, deflate"] => Whole;
        GET "/x.css" ["accept-encoding": "br;q=2"] => Whole;
        GET "/x.css" ["accept-encoding": ""] => Whole;
        GET "/x.css" as br ["accept-encoding": "*"] => Whole;
        GET "/x.css" as zstd ["accept-encoding": "*;q=0.5, br;q=0"] => Whole;
        GET "/x.css" as gzip ["accept-encoding": "*;q=0, gzip"] => Whole;
        // Nothing acceptable: the identity file rather than a 415.
        GET "/x.css" ["accept-encoding": "*;q=0"] => Whole;
        GET "/x.css" ["accept-encoding": "identity;q=0"] => Whole;
        HEAD "/x.css" as zstd ["accept-encoding": "zstd"] => Whole;
        HEAD "/x.css" as br ["accept-encoding": "br"] => Whole;
        // A tag validates only its own representation.
        GET "/x.css" as br ["accept-encoding": "br", "if-none-match": "ETAG.br"] => NotModified;
        GET "/x.css" as br ["accept-encoding": "gzip, br", "if-none-match": "W/ETAG.br"] => NotModified;
        GET "/x.css" as gzip ["accept-encoding": "gzip", "if-none-match": "ETAG.br"] => Whole;
        GET "/x.css" ["if-none-match": "ETAG.br"] => Whole;
        GET "/x.css" as br ["accept-encoding": "br", "if-none-match": "ETAG.identity"] => Whole;
        GET "/x.css" as gzip ["accept-encoding": "gzip", "if-none-match": "ETAG.br, ETAG.gzip"] => NotModified;
        GET "/x.css" ["if-none-match": "ETAG.identity"] => NotModified;
        HEAD "/x.css" as br ["accept-encoding": "br", "if-none-match": "ETAG.br"] => NotModified;
        GET "/x.css" as gzip ["accept-encoding": "gzip", "if-match": "ETAG.br"] => Failed;
        GET "/x.css" as br ["accept-encoding": "br", "if-match": "ETAG.br"] => Whole;
        GET "/x.css" as br ["accept-encoding": "br", "if-modified-since": LM] => NotModified;
        // Ranges apply to the chosen representation.
        GET "/x.css" as br ["accept-encoding": "br", "range": "bytes=3-"] => Partial(3, 7);
        GET "/x.css" as gzip ["accept-encoding": "gzip", "range": "bytes=-2"] => Partial(10, 11);
        GET "/x.css" as br ["accept-encoding": "br", "range": "bytes=0-1,4-5"] => Multi(&[(0, 1), (4, 5)]);
        GET "/x.css" ["range": "bytes=0-3"] => Partial(0, 3);
        GET "/x.css" as br ["accept-encoding": "br", "range": "bytes=8-"] => Unsatisfiable;
        GET "/x.css" as br ["accept-encoding": "br", "range": "bytes=0-3", "if-range": "ETAG.br"] => Partial(0, 3);
        GET "/x.css" as br ["accept-encoding": "br", "range": "bytes=0-3", "if-range": "ETAG.identity"] => Whole;
        // No sidecar: no Vary, whatever the client accepts.
        GET "/plain.css" ["accept-encoding": "gzip, br"] => Whole;
        GET "/plain.css" ["accept-encoding": "gzip, br", "if-none-match": "ETAG"] => NotModified;
        GET "/plain.css" ["accept-encoding": "br", "range": "bytes=0-3"] => Partial(0, 3);
        HEAD "/plain.css" => Whole;
    ]
}

#[test]
fn preconditions_in_rfc_9110_order() {
    for mode in MODES {
        Site::start(mode).run(&precondition_cases());
    }
}

#[test]
fn ranges_multipart_and_if_range() {
    for mode in MODES {
        Site::start(mode).run(&range_cases());
    }
}

#[test]
fn precompressed_sidecars_and_vary() {
    // The cases check each answer's tag against its variant's, so four
    // distinct expected tags mean four distinct tags served.
    let site = Site::start(Mode::Off);
    let mut tags: Vec<&str> = CODINGS
        .iter()
        .map(|(c, _)| site.rep("/x.css", c).etag.as_str())
        .collect();
    tags.sort_unstable();
    tags.dedup();
    assert_eq!(tags.len(), 4, "{tags:?}");
    drop(site);
    for mode in MODES {
        Site::start(mode).run(&encoding_cases());
    }
}

fn empty_file_range_cases() -> Vec<Case> {
    cases![
        GET "/empty.txt" ["range": "bytes=-5"] => Whole;
    ]
}

/// RFC 9110 §14.1.2: "When a selected representation has zero length, the
/// only satisfiable form of range-spec in a GET request is a suffix-range
/// with a non-zero suffix-length." So `bytes=-5` on an empty file is
/// satisfiable and must not get 416; no 206 can describe zero bytes, so the
/// answer is the whole (empty) file, as §14.2 allows ("MAY ignore a Range
/// header field when the selected representation has no content").
#[test]
fn suffix_range_of_an_empty_file_is_not_416() {
    for mode in MODES {
        Site::start(mode).run(&empty_file_range_cases());
    }
}

/// The modes really differ: with the cache on, a file rewritten in place is
/// still answered from memory until revalidation; off or revalidating, the
/// new contents come at once. Without this the matrix could pass with the
/// cache never in use.
#[test]
fn cache_modes_are_what_they_claim() {
    for mode in MODES {
        let site = Site::start(mode);
        let first = get(&site.tern, "/a.txt");
        assert_eq!(first.body, TEXT, "{mode:?}");
        std::fs::write(
            site.tern.file("www/a.txt"),
            "rewritten, longer than before\n",
        )
        .unwrap();
        let second = get(&site.tern, "/a.txt");
        let want: &[u8] = match mode {
            Mode::On => TEXT,
            Mode::Off | Mode::Revalidating => b"rewritten, longer than before\n",
        };
        assert_eq!(second.body, want, "{mode:?}");
    }
}

/// A file whose pages are not in memory is still served whole when the
/// cache does not hold it: the worker's read, which must not wait for the
/// disk, gives way to the blocking pool's (serve.rs). The page cache is
/// emptied for the file with `posix_fadvise(DONTNEED)` after `fsync`.
#[test]
fn a_file_not_in_the_page_cache_is_read_where_waiting_is_allowed() {
    for mode in [Mode::Off, Mode::Revalidating] {
        let site = Site::start(mode);
        let body: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        let path = site.tern.file("www/cold.bin");
        std::fs::write(&path, &body).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        f.sync_all().unwrap();
        rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed).unwrap();
        let got = get(&site.tern, "/cold.bin");
        assert_eq!(got.status, 200, "{mode:?}");
        assert!(got.body == body, "{mode:?}: {} bytes", got.body.len());
    }
}

/// Parses `buf` as one response per request, in order; `heads` says which
/// requests were HEAD (no body). Nothing may follow the last response.
fn split_responses(buf: &[u8], heads: &[bool], mode: Mode) -> Vec<Response> {
    let mut rest = buf;
    let mut out = Vec::with_capacity(heads.len());
    for &head in heads {
        let i = out.len();
        let end = find(rest, b"\r\n\r\n").unwrap_or_else(|| {
            panic!(
                "{mode:?} pipelined: {} of {} responses, then {:?}",
                i,
                heads.len(),
                String::from_utf8_lossy(rest)
            )
        });
        let text = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 4..];
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{mode:?} pipelined #{i}: status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len = if head || status == 304 {
            0
        } else {
            headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or_else(|| panic!("{mode:?} pipelined #{i}: no Content-Length: {text}"))
        };
        assert!(rest.len() >= len, "{mode:?} pipelined #{i}: body cut short");
        out.push(Response {
            status,
            headers,
            body: rest[..len].to_vec(),
        });
        rest = &rest[len..];
    }
    assert!(
        rest.is_empty(),
        "{mode:?} pipelined: bytes after the last response: {:?}",
        String::from_utf8_lossy(rest)
    );
    out
}

/// One part of a `multipart/byteranges` body: Content-Type, Content-Range,
/// bytes.
type Part = (String, String, Vec<u8>);

/// Splits a `multipart/byteranges` body (RFC 9110 §14.6) into its parts,
/// checking every delimiter; each part's length comes from its
/// Content-Range. Nothing may follow the close delimiter.
fn parts(body: &[u8], boundary: &str) -> Result<Vec<Part>, String> {
    let mut rest = body
        .strip_prefix(format!("--{boundary}\r\n").as_bytes())
        .ok_or("no opening delimiter")?;
    let delimiter = format!("\r\n--{boundary}");
    let mut out = Vec::new();
    loop {
        let end = find(rest, b"\r\n\r\n").ok_or("a part head without its end")?;
        let head = std::str::from_utf8(&rest[..end]).map_err(|e| e.to_string())?;
        rest = &rest[end + 4..];
        let (mut content_type, mut content_range) = (String::new(), None);
        for line in head.split("\r\n") {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| format!("part header {line:?}"))?;
            match name.to_ascii_lowercase().as_str() {
                "content-type" => content_type = value.trim().to_owned(),
                "content-range" => content_range = Some(value.trim().to_owned()),
                other => return Err(format!("unexpected part header {other:?}")),
            }
        }
        let range = content_range.ok_or("a part without Content-Range")?;
        let (first, last) = range
            .strip_prefix("bytes ")
            .and_then(|r| r.split_once('/'))
            .and_then(|(r, _)| r.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<usize>().ok()?)))
            .ok_or_else(|| format!("Content-Range {range:?}"))?;
        let n = (last + 1)
            .checked_sub(first)
            .ok_or_else(|| format!("Content-Range {range:?}"))?;
        if rest.len() < n {
            return Err(format!("part {range:?} cut short"));
        }
        out.push((content_type, range, rest[..n].to_vec()));
        rest = rest[n..]
            .strip_prefix(delimiter.as_bytes())
            .ok_or("a part not followed by a delimiter")?;
        if let Some(after) = rest.strip_prefix(b"--\r\n") {
            return match after {
                [] => Ok(out),
                _ => Err(format!("{} bytes after the close delimiter", after.len())),
            };
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or("a delimiter without CRLF")?;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
