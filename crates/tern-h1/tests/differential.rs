//! tern-h1 against hyper 1.x on a corpus of odd and hostile requests.
//!
//! A hyper HTTP/1 server, configured as tern configured it
//! (`tern-server/src/conn.rs`: `max_buf_size` 16 KiB, `max_headers` 100,
//! keep-alive, no header read timeout), answers every request it accepts
//! with 200 and the body's length in `x-body-len`. Each case's bytes go to
//! it on a fresh connection; what comes back (the answers' statuses, and
//! whether the connection then closed or stayed open) is compared with
//! what tern-h1 decides over the same bytes: each head parsed, each body
//! decoded, until a refusal, a body error, the end of the bytes, or a
//! request that closes the connection.
//!
//! They must agree, except on the cases marked [`Diff`], each with its
//! reason; the test checks those still differ the way they say.

use std::fmt;
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tern_h1::{parse_head, BodyDecoder, Decoded, Limits};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// tern's defaults (`tern-config/src/defaults.rs`), as `Limits`.
fn limits() -> Limits {
    Limits {
        max_head_bytes: 16 << 10,
        max_headers: 100,
        max_target: 8 << 10,
        ..Limits::default()
    }
}

/// How long a connection may stay silent before it counts as waiting.
const IDLE: Duration = Duration::from_secs(3);

/// A case where tern-h1 deliberately answers otherwise than hyper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Diff {
    /// tern-h1 refuses what hyper accepts: an RFC MUST, or what tern's
    /// admission phase refused after hyper (same status as tern gives).
    Stricter(&'static str),
    /// Both refuse, with different statuses (or hyper closes silently).
    Status(&'static str),
    /// tern-h1 accepts what bare hyper refuses, as tern's server did with
    /// hyper (`tern-server/src/version.rs`).
    Settled(&'static str),
}

struct Case {
    name: String,
    bytes: Vec<u8>,
    diff: Option<Diff>,
}

/// What one side did with a connection's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Outcome {
    /// Each answer: its status, and for a 200 the body length hyper read.
    answers: Vec<(u16, Option<u64>)>,
    /// The connection was closed after the answers (else it stayed open,
    /// waiting for more).
    closed: bool,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (s, len) in &self.answers {
            match len {
                Some(n) => write!(f, "{s}({n}) ")?,
                None => write!(f, "{s} ")?,
            }
        }
        f.write_str(if self.closed { "closed" } else { "open" })
    }
}

impl Outcome {
    fn accepted(&self) -> usize {
        self.answers.iter().filter(|a| a.0 == 200).count()
    }
}

/// tern-h1's decisions over `bytes`, all in the buffer at once.
fn tern(bytes: &[u8]) -> Outcome {
    tern_fed(bytes, bytes.len().max(1))
}

/// tern-h1's decisions over `bytes` arriving `step` bytes at a time, as a
/// connection reads them: the head parsed again as each piece arrives.
fn tern_fed(bytes: &[u8], step: usize) -> Outcome {
    let limits = limits();
    let mut buf = BytesMut::new();
    let mut fed = 0;
    // Another piece; false when there is none.
    let mut more = |buf: &mut BytesMut| {
        if fed == bytes.len() {
            return false;
        }
        let end = (fed + step).min(bytes.len());
        buf.extend_from_slice(&bytes[fed..end]);
        fed = end;
        true
    };
    let open = |answers| Outcome {
        answers,
        closed: false,
    };
    let closed = |answers| Outcome {
        answers,
        closed: true,
    };
    let mut answers = Vec::new();
    loop {
        let head = match parse_head(&buf, &limits) {
            Ok(Some(head)) => head,
            Ok(None) if more(&mut buf) => continue,
            // Waiting for the rest of the head.
            Ok(None) => return open(answers),
            Err(e) => {
                answers.push((e.status().as_u16(), None));
                return closed(answers);
            }
        };
        buf.advance(head.head_len);
        let mut decoder = BodyDecoder::new(head.framing, &limits);
        let mut len = 0u64;
        loop {
            match decoder.decode(&mut buf) {
                Ok(Decoded::Data(d)) => len += d.len() as u64,
                Ok(Decoded::End(_)) => break,
                Ok(Decoded::NeedMore) if more(&mut buf) => {}
                // The handler waits for the rest of the body.
                Ok(Decoded::NeedMore) => return open(answers),
                // The body fails: no answer, the connection closes.
                Err(_) => return closed(answers),
            }
        }
        answers.push((200, Some(len)));
        // After a 2xx to CONNECT the connection is a tunnel, no longer
        // HTTP (RFC 9110 §9.3.6): the connection layer's decision, made
        // here as hyper makes it (tern itself refuses CONNECT).
        if !head.keep_alive || head.method == http::Method::CONNECT {
            return closed(answers);
        }
    }
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let body = req.into_body().collect().await?.to_bytes();
    let mut res = Response::new(Full::new(Bytes::new()));
    res.headers_mut()
        .insert("x-body-len", body.len().to_string().parse().unwrap());
    Ok(res)
}

async fn hyper_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut h1 = http1::Builder::new();
                h1.timer(TokioTimer::new())
                    .header_read_timeout(None)
                    .max_buf_size(16 << 10)
                    .max_headers(100)
                    .keep_alive(true);
                let _ = h1
                    .serve_connection(TokioIo::new(stream), service_fn(handle))
                    .await;
            });
        }
    });
    addr
}

/// Sends `bytes` to hyper and reads until it closes or goes quiet.
async fn hyper(addr: std::net::SocketAddr, bytes: Vec<u8>) -> Outcome {
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut rd, mut wr) = stream.into_split();
    // Write while reading: hyper may answer (and close) before it has
    // read everything.
    let writer = tokio::spawn(async move {
        let _ = wr.write_all(&bytes).await;
        wr
    });
    let mut got = Vec::new();
    let mut chunk = [0u8; 16 << 10];
    let closed = loop {
        match tokio::time::timeout(IDLE, rd.read(&mut chunk)).await {
            Err(_) => break false,
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => got.extend_from_slice(&chunk[..n]),
        }
    };
    drop(writer.await);
    Outcome {
        answers: answers(&got),
        closed,
    }
}

/// The statuses of the responses in `bytes` (1xx skipped), with
/// `x-body-len` for a 200.
fn answers(mut bytes: &[u8]) -> Vec<(u16, Option<u64>)> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let mut fields = [httparse::EMPTY_HEADER; 32];
        let mut res = httparse::Response::new(&mut fields);
        let Ok(httparse::Status::Complete(len)) = res.parse(bytes) else {
            panic!(
                "unreadable answer from hyper: {:?}",
                String::from_utf8_lossy(bytes)
            );
        };
        let code = res.code.unwrap();
        let field = |name: &str| {
            res.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<u64>().ok())
        };
        let body = field("content-length").unwrap_or(0) as usize;
        if code >= 200 {
            out.push((
                code,
                if code == 200 {
                    field("x-body-len")
                } else {
                    None
                },
            ));
        }
        bytes = &bytes[(len + body).min(bytes.len())..];
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tern_h1_agrees_with_hyper() {
    let addr = hyper_server().await;
    let cases = corpus();
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let mut names = std::collections::HashSet::new();
    for c in &cases {
        assert!(names.insert(c.name.clone()), "two cases named {}", c.name);
    }
    let runs: Vec<_> = cases
        .iter()
        .map(|c| tokio::spawn(hyper(addr, c.bytes.clone())))
        .collect();
    let mut failures = Vec::new();
    let mut report = Vec::new();
    let (mut same, mut stricter, mut status, mut settled) = (0, 0, 0, 0);
    for (case, run) in cases.iter().zip(runs) {
        let theirs = run.await.unwrap();
        let ours = tern(&case.bytes);
        // However the bytes arrive, the same decisions.
        let steps: &[usize] = if case.bytes.len() < 4096 {
            &[1, 7]
        } else {
            &[997]
        };
        for &step in steps {
            let fed = tern_fed(&case.bytes, step);
            if fed != ours {
                failures.push(format!("SPLIT {step} {}: {fed} vs {ours}", case.name));
            }
        }
        let agree = ours == theirs;
        let line = format!("{:<48} tern-h1: {ours:<22} hyper: {theirs}", case.name);
        match (case.diff, agree) {
            (None, true) => same += 1,
            (None, false) => failures.push(format!("DIFFERS {line}")),
            (Some(_), true) => failures.push(format!("NOW AGREES (drop the Diff) {line}")),
            (Some(d), false) => {
                // Never looser: the refusals line up or tern-h1 refuses more.
                let ok = match d {
                    Diff::Stricter(_) => ours.accepted() < theirs.accepted(),
                    Diff::Status(_) => {
                        ours.accepted() == theirs.accepted()
                            && ours.answers.len() >= theirs.answers.len()
                            && ours.closed
                            && theirs.closed
                    }
                    Diff::Settled(_) => ours.accepted() > theirs.accepted(),
                };
                if !ok {
                    failures.push(format!("UNEXPECTED {d:?} {line}"));
                }
                match d {
                    Diff::Stricter(_) => stricter += 1,
                    Diff::Status(_) => status += 1,
                    Diff::Settled(_) => settled += 1,
                }
                report.push(format!("{d:?}\n    {line}"));
            }
        }
    }
    eprintln!(
        "{} cases: {same} agree, {stricter} stricter, {status} status only, {settled} settled",
        cases.len()
    );
    for r in &report {
        eprintln!("{r}");
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

// ---------------------------------------------------------------------
// The corpus.

const STRICT_HOST: Diff =
    Diff::Stricter("RFC 9112 §3.2: MUST answer 400 to more than one Host field");
const STRICT_TE_TWICE: Diff =
    Diff::Stricter("RFC 9112 §6.1: chunked MUST NOT be applied twice (tern's admission: 400)");
const STRICT_TE_CODING: Diff = Diff::Stricter(
    "RFC 9112 §6.1: a coding tern does not decode before chunked (tern's admission: 501)",
);
const STRICT_TARGET: Diff =
    Diff::Stricter("target over tern's max_uri_bytes (8 KiB): 414, as tern's admission");
const STATUS_VERSION: Diff =
    Diff::Status("a well-formed version other than 1.x: 505 (RFC 9110 §15.6.6); hyper 400");
const STATUS_CL_MAX: Diff =
    Diff::Status("Content-Length above u64::MAX - 2: 400 here, 431 in hyper");
const STATUS_LONG_LINE: Diff =
    Diff::Status("a request line longer than the head's limit: 414, as nginx; hyper 431");
const STATUS_PREFACE: Diff = Diff::Status(
    "the HTTP/2 preface: 505 here, hyper closes silently (tern sniffs it before HTTP/1)",
);
const SETTLED: Diff = Diff::Settled("HTTP/1.2..1.9 read as 1.1 (RFC 9112 §2.3), as tern did");

struct Corpus(Vec<Case>);

impl Corpus {
    fn add(&mut self, name: impl Into<String>, bytes: impl AsRef<[u8]>) {
        self.push(name, bytes, None);
    }

    fn diff(&mut self, name: impl Into<String>, bytes: impl AsRef<[u8]>, diff: Diff) {
        self.push(name, bytes, Some(diff));
    }

    fn push(&mut self, name: impl Into<String>, bytes: impl AsRef<[u8]>, diff: Option<Diff>) {
        self.0.push(Case {
            name: name.into(),
            bytes: bytes.as_ref().to_vec(),
            diff,
        });
    }
}

/// A POST with `fields` (each ending in CRLF) and `body`.
fn post(fields: &str, body: &str) -> String {
    format!("POST /p HTTP/1.1\r\nHost: a\r\n{fields}\r\n{body}")
}

const GET: &str = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

fn corpus() -> Vec<Case> {
    let mut c = Corpus(Vec::new());

    // Plain requests and connection handling.
    c.add("get", GET);
    c.add("get-http10", "GET / HTTP/1.0\r\n\r\n");
    c.add("get-http10-keepalive-twice", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    c.add(
        "get-http10-then-more",
        "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n",
    );
    c.add("pipelined-3", GET.repeat(3));
    c.add(
        "pipelined-close-then-get",
        format!("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n{GET}"),
    );
    c.add("connection-close-later-keepalive", "GET / HTTP/1.1\r\nConnection: close\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.1\r\n\r\n");
    c.add(
        "connection-list-close",
        "GET / HTTP/1.1\r\nConnection: foo, Close\r\n\r\nGET / HTTP/1.1\r\n\r\n",
    );
    c.add("get-missing-host", "GET / HTTP/1.1\r\n\r\n");
    c.add("get-empty-host", "GET / HTTP/1.1\r\nHost:\r\n\r\n");
    c.add("get-host-with-space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n");
    c.diff(
        "two-hosts",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        STRICT_HOST,
    );
    c.diff(
        "two-hosts-differing",
        "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n",
        STRICT_HOST,
    );
    c.diff(
        "two-hosts-http10",
        "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n",
        STRICT_HOST,
    );
    c.add("host-list", "GET / HTTP/1.1\r\nHost: a, b\r\n\r\n");
    c.add(
        "absolute-form",
        "GET http://a.example/x?y HTTP/1.1\r\nHost: a.example\r\n\r\n",
    );
    c.add(
        "absolute-form-https-port",
        "GET https://a.example:8443/ HTTP/1.1\r\n\r\n",
    );
    c.add(
        "absolute-form-userinfo",
        "GET http://u:p@a.example/ HTTP/1.1\r\n\r\n",
    );
    c.add("authority-form-get", "GET a.example:80 HTTP/1.1\r\n\r\n");
    c.add(
        "connect-authority-form",
        "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
    );
    c.add("head-method", "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
    c.add(
        "head-method-with-body",
        "HEAD / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
    );
    c.add(
        "pipelined-10-mixed",
        format!(
            "{GET}{}{}",
            post("Content-Length: 3\r\n", "abc"),
            post("Transfer-Encoding: chunked\r\n", "1\r\nx\r\n0\r\n\r\n")
        )
        .repeat(4),
    );
    c.add(
        "pipelined-bad-second",
        format!("{GET}GET / HTTP/1.1\r\nHost : a\r\n\r\n{GET}"),
    );
    c.add("asterisk-options", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n");
    c.add("asterisk-get", "GET * HTTP/1.1\r\nHost: a\r\n\r\n");
    c.add("lowercase-method", "get / HTTP/1.1\r\nHost: a\r\n\r\n");
    c.add(
        "extension-method",
        "PROPFIND /x HTTP/1.1\r\nHost: a\r\n\r\n",
    );
    c.add(
        "long-method",
        format!("{} / HTTP/1.1\r\n\r\n", "A".repeat(1000)),
    );
    c.add(
        "header-name-case",
        "GET / HTTP/1.1\r\nhOsT: a\r\ncOnTeNt-LeNgTh: 2\r\n\r\nhi",
    );
    c.add(
        "value-obs-text",
        "GET / HTTP/1.1\r\nX: caf\u{e9} \u{2603}\r\n\r\n",
    );
    c.add("value-latin1", b"GET / HTTP/1.1\r\nX: caf\xe9\r\n\r\n");
    c.add("value-tab-inside", "GET / HTTP/1.1\r\nX: a\tb\r\n\r\n");
    c.add("value-empty", "GET / HTTP/1.1\r\nX:\r\n\r\n");
    c.add(
        "value-whitespace-around",
        "GET / HTTP/1.1\r\nX: \t a \t\r\n\r\n",
    );
    c.add("no-space-after-colon", "GET / HTTP/1.1\r\nHost:a\r\n\r\n");
    c.add(
        "100-headers",
        format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            (0..100)
                .map(|i| format!("X-{i}: v\r\n"))
                .collect::<String>()
        ),
    );
    c.add(
        "101-headers",
        format!(
            "GET / HTTP/1.1\r\n{}\r\n",
            (0..101)
                .map(|i| format!("X-{i}: v\r\n"))
                .collect::<String>()
        ),
    );
    c.add("empty-line-only", "\r\n");
    c.add("nothing-complete", "GET / HTTP/1.1\r\nHost: a\r\n");
    c.add("partial-request-line", "GET /index.ht");

    // Line endings and whitespace.
    c.add("leading-crlf", format!("\r\n{GET}"));
    c.add("leading-crlf-x3", format!("\r\n\r\n\r\n{GET}"));
    c.add("leading-lf", format!("\n\n{GET}"));
    c.add("leading-cr-cr", format!("\r\r{GET}"));
    c.add("leading-space", format!(" {GET}"));
    c.add("bare-lf-everywhere", "GET / HTTP/1.1\nHost: a\n\n");
    c.add("bare-lf-mixed", "GET / HTTP/1.1\r\nHost: a\n\r\n");
    c.add(
        "bare-lf-post",
        "POST / HTTP/1.1\nHost: a\nContent-Length: 3\n\nabc",
    );
    c.add("bare-cr-line-end", "GET / HTTP/1.1\rHost: a\r\r\n\r\n");
    c.add("bare-cr-in-value", "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n");
    c.add("bare-cr-after-version", "GET / HTTP/1.1\r\r\n\r\n");
    c.add("cr-in-target", "GET /a\rb HTTP/1.1\r\n\r\n");
    c.add("nul-in-value", "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n");
    c.add("nul-in-name", "GET / HTTP/1.1\r\nX\0Y: a\r\n\r\n");
    c.add("nul-in-target", "GET /a\0b HTTP/1.1\r\n\r\n");
    c.add("nul-in-method", "G\0T / HTTP/1.1\r\n\r\n");
    c.add("del-in-value", "GET / HTTP/1.1\r\nX: a\x7fb\r\n\r\n");
    c.add("vtab-in-value", "GET / HTTP/1.1\r\nX: a\x0bb\r\n\r\n");
    c.add("formfeed-in-value", "GET / HTTP/1.1\r\nX: a\x0cb\r\n\r\n");
    c.add("obs-fold-space", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n");
    c.add("obs-fold-tab", "GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n");
    c.add("obs-fold-first-line", "GET / HTTP/1.1\r\n Host: a\r\n\r\n");
    c.add(
        "obs-fold-te",
        post("Transfer-Encoding: identity\r\n chunked\r\n", "0\r\n\r\n"),
    );
    c.add("space-before-colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n");
    c.add("tab-before-colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n");
    c.add("space-in-name", "GET / HTTP/1.1\r\nX Y: a\r\n\r\n");
    c.add("empty-name", "GET / HTTP/1.1\r\n: a\r\n\r\n");
    c.add("no-colon", "GET / HTTP/1.1\r\nHost a\r\n\r\n");
    c.add("paren-in-name", "GET / HTTP/1.1\r\nX(y): a\r\n\r\n");
    c.add("utf8-in-name", "GET / HTTP/1.1\r\nX\u{e9}: a\r\n\r\n");
    c.add("underscore-name", "GET / HTTP/1.1\r\nX_Y: a\r\n\r\n");
    c.add("double-space-after-method", "GET  / HTTP/1.1\r\n\r\n");
    c.add("double-space-before-version", "GET /  HTTP/1.1\r\n\r\n");
    c.add("tab-after-method", "GET\t/ HTTP/1.1\r\n\r\n");
    c.add("space-in-target", "GET /a b HTTP/1.1\r\n\r\n");
    c.add("tab-in-target", "GET /a\tb HTTP/1.1\r\n\r\n");
    c.add("del-in-target", "GET /a\x7f HTTP/1.1\r\n\r\n");
    c.add("trailing-space-request-line", "GET / HTTP/1.1 \r\n\r\n");
    c.add("no-target", "GET HTTP/1.1\r\n\r\n");
    c.add("http09-line", "GET /\r\n\r\n");
    c.add("garbage-line", "hello world\r\n\r\n");
    c.add(
        "tls-client-hello",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    );
    c.add("method-with-at", "G@T / HTTP/1.1\r\n\r\n");

    // Targets.
    c.add("target-utf8", "GET /caf\u{e9} HTTP/1.1\r\n\r\n");
    c.add("target-latin1", b"GET /caf\xe9 HTTP/1.1\r\n\r\n");
    c.add("target-percent-nul", "GET /%00 HTTP/1.1\r\n\r\n");
    c.add("target-fragment", "GET /a#b HTTP/1.1\r\n\r\n");
    c.add("target-braces", "GET /{a}|^` HTTP/1.1\r\n\r\n");
    c.add("target-quotes-angles", "GET /\"<a>\" HTTP/1.1\r\n\r\n");
    c.add("target-backslash", "GET /a\\b HTTP/1.1\r\n\r\n");
    c.add("target-double-slash", "GET //a//b HTTP/1.1\r\n\r\n");
    c.add("target-dotdot", "GET /../../etc/passwd HTTP/1.1\r\n\r\n");
    c.add("target-query-only", "GET ? HTTP/1.1\r\n\r\n");
    c.add(
        "target-8192",
        format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(8191)),
    );
    c.diff(
        "target-8193",
        format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(8192)),
        STRICT_TARGET,
    );
    c.diff(
        "target-16000",
        format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(15999)),
        STRICT_TARGET,
    );
    c.diff(
        "target-40000",
        format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(40000)),
        STATUS_LONG_LINE,
    );

    // Head sizes.
    let filler = |n: usize| format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "v".repeat(n - 22));
    c.add("head-16000", filler(16000));
    c.add("head-16384", filler(16384));
    c.add("head-16383", filler(16383));
    c.add("head-16385", filler(16385));
    c.add("head-20000", filler(20000));
    c.add("head-16384-then-get", format!("{}{GET}", filler(16384)));
    c.add("head-8000-x3", filler(8000).repeat(3));
    c.add("head-40000", filler(40000));
    c.add("head-100k", filler(100_000));
    c.add("many-empty-lines", "\r\n".repeat(9000));

    // Versions.
    c.diff("version-1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", SETTLED);
    c.diff("version-1.9", "GET / HTTP/1.9\r\nHost: a\r\n\r\n", SETTLED);
    c.diff("version-2.0", "GET / HTTP/2.0\r\n\r\n", STATUS_VERSION);
    c.diff("version-3.0", "GET / HTTP/3.0\r\n\r\n", STATUS_VERSION);
    c.diff("version-0.9", "GET / HTTP/0.9\r\n\r\n", STATUS_VERSION);
    c.diff(
        "h2-preface",
        "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        STATUS_PREFACE,
    );
    c.add("version-1", "GET / HTTP/1\r\n\r\n");
    c.add("version-lowercase", "GET / http/1.1\r\n\r\n");
    c.add("version-1.10", "GET / HTTP/1.10\r\n\r\n");
    c.add("version-11", "GET / HTTP/11\r\n\r\n");
    c.add("version-space", "GET / HTTP/ 1.1\r\n\r\n");
    c.add("version-https", "GET / HTTPS/1.1\r\n\r\n");
    c.add("version-1.x", "GET / HTTP/1.x\r\n\r\n");
    c.add("version-1.1-extra", "GET / HTTP/1.1 extra\r\n\r\n");

    // Content-Length.
    for (name, v) in [
        ("cl-5", "5"),
        ("cl-leading-zeros", "005"),
        ("cl-zero", "0"),
        ("cl-space-before", "  5"),
        ("cl-space-after", "5  "),
        ("cl-tab-around", "\t5\t"),
        ("cl-plus", "+5"),
        ("cl-minus", "-5"),
        ("cl-hex", "0x5"),
        ("cl-inner-space", "5 5"),
        ("cl-empty", ""),
        ("cl-comma-same", "5,5"),
        ("cl-comma-space-same", "5, 5"),
        ("cl-comma-differ", "5, 6"),
        ("cl-exponent", "5e0"),
        ("cl-decimal", "5.0"),
        ("cl-letters", "five"),
        ("cl-unicode-digit", "\u{665}"),
        ("cl-2pow64", "18446744073709551616"),
        ("cl-huge", "99999999999999999999999999"),
        ("cl-very-leading-zeros", "000000000000000000000000000005"),
    ] {
        c.add(name, post(&format!("Content-Length: {v}\r\n"), "hello"));
    }
    c.diff(
        "cl-u64-max",
        post("Content-Length: 18446744073709551615\r\n", "hello"),
        STATUS_CL_MAX,
    );
    c.diff(
        "cl-u64-max-minus-1",
        post("Content-Length: 18446744073709551614\r\n", ""),
        STATUS_CL_MAX,
    );
    c.add(
        "cl-u64-max-minus-2",
        post("Content-Length: 18446744073709551613\r\n", "hello"),
    );
    c.add(
        "cl-2pow32-no-body",
        post("Content-Length: 4294967296\r\n", "hello"),
    );
    c.add(
        "cl-duplicate-same",
        post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello"),
    );
    c.add(
        "cl-duplicate-differ",
        post("Content-Length: 5\r\nContent-Length: 6\r\n", "hello!"),
    );
    c.add(
        "cl-duplicate-zero-five",
        post("Content-Length: 0\r\nContent-Length: 5\r\n", "hello"),
    );
    c.add(
        "cl-duplicate-then-comma",
        post("Content-Length: 5\r\nContent-Length: 5, 5\r\n", "hello"),
    );
    c.add("cl-short-body", post("Content-Length: 10\r\n", "hello"));
    c.add("cl-long-body", post("Content-Length: 3\r\n", "hello"));
    c.add(
        "cl-on-get",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
    );
    c.add(
        "cl-then-get",
        format!("{}{GET}", post("Content-Length: 5\r\n", "hello")),
    );
    c.add(
        "cl-smuggled-get",
        post(
            "Content-Length: 0\r\n",
            "GET /admin HTTP/1.1\r\nHost: a\r\n\r\n",
        ),
    );
    c.add(
        "cl-http10",
        "POST / HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello",
    );

    // Transfer-Encoding, alone.
    let chunked_body = "5\r\nhello\r\n0\r\n\r\n";
    for (name, v, diff) in [
        ("te-chunked", "chunked", None),
        ("te-upper", "CHUNKED", None),
        ("te-mixed-case", "ChUnKeD", None),
        ("te-trailing-space", "chunked ", None),
        ("te-leading-tab", "\tchunked", None),
        ("te-leading-comma", ", chunked", None),
        ("te-trailing-comma", "chunked,", None),
        ("te-trailing-comma-space", "chunked, ", None),
        ("te-identity", "identity", None),
        ("te-gzip", "gzip", None),
        ("te-xchunked", "xchunked", None),
        ("te-chunked-x", "chunkedx", None),
        ("te-chunk", "chunk", None),
        ("te-quoted", "\"chunked\"", None),
        ("te-param", "chunked;q=1", None),
        ("te-chunked-identity", "chunked, identity", None),
        ("te-chunked-gzip", "chunked, gzip", None),
        (
            "te-identity-chunked",
            "identity, chunked",
            Some(STRICT_TE_CODING),
        ),
        ("te-gzip-chunked", "gzip, chunked", Some(STRICT_TE_CODING)),
        (
            "te-chunked-chunked",
            "chunked, chunked",
            Some(STRICT_TE_TWICE),
        ),
        (
            "te-chunked-nospace-chunked",
            "chunked,chunked",
            Some(STRICT_TE_TWICE),
        ),
        ("te-empty", "", None),
        ("te-vtab", "chunked\x0b", None),
        ("te-nul", "\0chunked", None),
    ] {
        c.push(
            name,
            post(&format!("Transfer-Encoding: {v}\r\n"), chunked_body),
            diff,
        );
    }
    c.add(
        "te-obs-text-then-chunked",
        post("Transfer-Encoding: x\u{e9}, chunked\r\n", chunked_body),
    );
    c.diff(
        "te-obs-text-field-then-chunked",
        post(
            "Transfer-Encoding: \u{e9}\r\nTransfer-Encoding: chunked\r\n",
            chunked_body,
        ),
        STRICT_TE_CODING,
    );
    c.add(
        "te-no-space",
        post("Transfer-Encoding:chunked\r\n", chunked_body),
    );
    c.add(
        "te-space-before-colon",
        post("Transfer-Encoding : chunked\r\n", chunked_body),
    );
    c.diff(
        "te-two-fields-chunked-last",
        post(
            "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
            chunked_body,
        ),
        STRICT_TE_CODING,
    );
    c.add(
        "te-two-fields-chunked-first",
        post(
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n",
            chunked_body,
        ),
    );
    c.diff(
        "te-two-fields-chunked-twice",
        post(
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            chunked_body,
        ),
        STRICT_TE_TWICE,
    );
    c.add(
        "te-two-fields-empty-last",
        post(
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: \r\n",
            chunked_body,
        ),
    );
    c.add(
        "te-http10",
        "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    c.add(
        "te-http10-with-cl",
        "POST / HTTP/1.0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello",
    );
    c.add(
        "te-underscore-name",
        post("Transfer_Encoding: chunked\r\n", chunked_body),
    );
    c.add(
        "te-on-get",
        format!("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n{chunked_body}"),
    );
    c.add(
        "te-bare-lf-field",
        post("X: y\nTransfer-Encoding: chunked\r\n", chunked_body),
    );

    // Transfer-Encoding with Content-Length (CL.TE, TE.CL).
    c.add(
        "cl-te",
        post(
            "Content-Length: 6\r\nTransfer-Encoding: chunked\r\n",
            "0\r\n\r\nG",
        ),
    );
    c.add(
        "te-cl",
        post(
            "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n",
            "8\r\nSMUGGLED\r\n0\r\n\r\n",
        ),
    );
    c.add(
        "cl-te-then-get",
        format!(
            "{}{GET}",
            post(
                "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                chunked_body
            )
        ),
    );
    c.add(
        "cl-invalid-te",
        post(
            "Content-Length: x\r\nTransfer-Encoding: chunked\r\n",
            chunked_body,
        ),
    );
    c.add(
        "te-cl-invalid",
        post(
            "Transfer-Encoding: chunked\r\nContent-Length: x\r\n",
            chunked_body,
        ),
    );
    c.add(
        "te-cl-differing",
        post(
            "Transfer-Encoding: chunked\r\nContent-Length: 3\r\nContent-Length: 4\r\n",
            chunked_body,
        ),
    );
    c.add(
        "cl-te-identity",
        post(
            "Content-Length: 5\r\nTransfer-Encoding: identity\r\n",
            "hello",
        ),
    );
    c.add(
        "cl-te-xchunked",
        post(
            "Content-Length: 5\r\nTransfer-Encoding: xchunked\r\n",
            "hello",
        ),
    );
    c.add(
        "cl-te-space-colon",
        post(
            "Content-Length: 5\r\nTransfer-Encoding : chunked\r\n",
            "hello",
        ),
    );
    c.add(
        "cl-te-obs-fold",
        post(
            "Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n",
            "hello",
        ),
    );
    c.add(
        "cl-te-vtab",
        post(
            "Content-Length: 5\r\nTransfer-Encoding:\x0bchunked\r\n",
            "hello",
        ),
    );
    c.add(
        "cl-cl-te",
        post(
            "Content-Length: 5\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            chunked_body,
        ),
    );
    c.diff(
        "cl-te-gzip-chunked",
        post(
            "Content-Length: 5\r\nTransfer-Encoding: gzip, chunked\r\n",
            chunked_body,
        ),
        STRICT_TE_CODING,
    );

    // Chunked bodies.
    let te = "Transfer-Encoding: chunked\r\n";
    for (name, body) in [
        ("chunk-basic", "5\r\nhello\r\n0\r\n\r\n"),
        ("chunk-two", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
        ("chunk-empty-body", "0\r\n\r\n"),
        ("chunk-hex-upper", "A\r\n0123456789\r\n0\r\n\r\n"),
        ("chunk-hex-lower", "a\r\n0123456789\r\n0\r\n\r\n"),
        ("chunk-leading-zeros", "0005\r\nhello\r\n000\r\n\r\n"),
        ("chunk-size-plus", "+5\r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-minus", "-5\r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-0x", "0x5\r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-leading-space", " 5\r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-trailing-space", "5 \r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-trailing-tab", "5\t\r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-inner-space", "5 5\r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-g", "g\r\nhello\r\n0\r\n\r\n"),
        ("chunk-size-empty", "\r\nhello\r\n0\r\n\r\n"),
        (
            "chunk-size-overflow",
            "10000000000000000\r\nhello\r\n0\r\n\r\n",
        ),
        ("chunk-size-max-waits", "ffffffffffffffff\r\nhello"),
        ("chunk-size-bare-lf", "5\nhello\r\n0\r\n\r\n"),
        ("chunk-size-cr-cr", "5\r\rhello\r\n0\r\n\r\n"),
        ("chunk-ext", "5;a=b\r\nhello\r\n0;c\r\n\r\n"),
        ("chunk-ext-quoted", "5;a=\"x;y\"\r\nhello\r\n0\r\n\r\n"),
        ("chunk-ext-space", "5 ; a = b\r\nhello\r\n0\r\n\r\n"),
        ("chunk-ext-lf", "5;a\nb\r\nhello\r\n0\r\n\r\n"),
        ("chunk-ext-nul", "5;a\0b\r\nhello\r\n0\r\n\r\n"),
        ("chunk-data-no-crlf", "5\r\nhello0\r\n\r\n"),
        ("chunk-data-lf", "5\r\nhello\n0\r\n\r\n"),
        ("chunk-data-cr", "5\r\nhello\r0\r\n\r\n"),
        ("chunk-data-too-long", "5\r\nhelloX\r\n0\r\n\r\n"),
        ("chunk-last-bare-lf", "5\r\nhello\r\n0\n\n"),
        ("chunk-last-no-final-crlf", "5\r\nhello\r\n0\r\n"),
        ("chunk-incomplete-data", "a\r\nhello"),
        (
            "chunk-trailers",
            "5\r\nhello\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\n",
        ),
        (
            "chunk-trailer-obs-fold",
            "5\r\nhello\r\n0\r\nX-A: 1\r\n 2\r\n\r\n",
        ),
        ("chunk-trailer-no-colon", "5\r\nhello\r\n0\r\nX-A\r\n\r\n"),
        (
            "chunk-trailer-space-colon",
            "5\r\nhello\r\n0\r\nX-A : 1\r\n\r\n",
        ),
        (
            "chunk-trailer-bare-lf-inside",
            "5\r\nhello\r\n0\r\nX-A: 1\nX-B: 2\r\n\r\n",
        ),
        ("chunk-trailer-cr-cr", "5\r\nhello\r\n0\r\nX-A: 1\r\r\n"),
        (
            "chunk-trailer-content-length",
            "5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n",
        ),
        ("chunk-then-garbage", "5\r\nhello\r\n0\r\n\r\nxyz\r\n\r\n"),
    ] {
        c.add(name, post(te, body));
    }
    c.add(
        "chunk-then-get",
        format!("{}{GET}", post(te, "5\r\nhello\r\n0\r\n\r\n")),
    );
    c.add(
        "chunk-ext-16k",
        post(
            te,
            &format!("5;{}\r\nhello\r\n0\r\n\r\n", "e".repeat(16 << 10)),
        ),
    );
    c.add(
        "chunk-ext-15k",
        post(
            te,
            &format!("5;{}\r\nhello\r\n0\r\n\r\n", "e".repeat(15 << 10)),
        ),
    );
    c.add(
        "chunk-ext-20x1000",
        post(
            te,
            &format!(
                "{}0\r\n\r\n",
                format!("1;{}\r\nx\r\n", "e".repeat(1000)).repeat(20)
            ),
        ),
    );
    c.add(
        "chunk-trailers-16k",
        post(te, &format!("0\r\nX: {}\r\n\r\n", "t".repeat(16 << 10))),
    );
    c.add(
        "chunk-trailers-15k",
        post(te, &format!("0\r\nX: {}\r\n\r\n", "t".repeat(15 << 10))),
    );
    c.add(
        "chunk-trailers-100",
        post(
            te,
            &format!(
                "0\r\n{}\r\n",
                (0..100).map(|i| format!("T{i}: x\r\n")).collect::<String>()
            ),
        ),
    );
    c.add(
        "chunk-trailers-101",
        post(
            te,
            &format!(
                "0\r\n{}\r\n",
                (0..101).map(|i| format!("T{i}: x\r\n")).collect::<String>()
            ),
        ),
    );
    c.add(
        "chunk-1k-pieces",
        post(
            te,
            &format!(
                "{}0\r\n\r\n",
                format!("400\r\n{}\r\n", "b".repeat(1024)).repeat(64)
            ),
        ),
    );

    // Expect and Upgrade.
    c.add(
        "expect-continue-cl",
        post("Expect: 100-continue\r\nContent-Length: 5\r\n", "hello"),
    );
    c.add(
        "expect-continue-chunked",
        post(
            "Expect: 100-continue\r\nTransfer-Encoding: chunked\r\n",
            chunked_body,
        ),
    );
    c.add(
        "expect-continue-no-body",
        "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
    );
    c.add(
        "expect-continue-http10",
        "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
    );
    c.add(
        "expect-unknown",
        post("Expect: 200-ok\r\nContent-Length: 5\r\n", "hello"),
    );
    c.add("upgrade-websocket", "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    c.add("upgrade-h2c", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n");
    c.add(
        "upgrade-without-connection",
        "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n",
    );
    c.add(
        "upgrade-http10",
        "GET / HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    );

    c.0
}
