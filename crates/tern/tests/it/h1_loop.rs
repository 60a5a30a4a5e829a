//! tern's own HTTP/1 loop (`[server] http1 = "tern"`) against hyper's,
//! byte for byte: two terns serve the same directory, one on each loop,
//! and every exchange of a corpus (requests with and without bodies,
//! pipelined ones, bodies in parts, `100-continue`, bodies left unread or
//! over the limit or badly framed, requests it hands to hyper, malformed
//! heads, streamed script output) must get the same bytes back from both,
//! `Date` aside, but where tern's loop is meant to answer otherwise (each
//! such case says why).

use std::io::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::{write_files, Tern, BIN};

/// A script whose output streams: the pause is far longer than the time a
/// script's output is gathered for (2 ms) before the answer starts, so
/// both loops answer it in chunks (or, to HTTP/1.0, until the close)
/// however loaded the machine is. Without it a finished script was
/// answered whole, unless the machine was slow enough to make it stream:
/// the framing then depended on timing, and the loops' answers differed.
/// The pause is long enough too that a loaded machine does not read both
/// lines at once (one chunk on one loop, two on the other: 50 ms once
/// was not).
const SCRIPT: &str = "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nprintf 'first line\\n'\nsleep 0.25\nprintf 'second line\\n'\n";

/// A script that answers with what it read of its body, and its
/// CONTENT_LENGTH: after the head, the same pause as [`SCRIPT`]'s, so the
/// answer streams on both loops whatever the machine's load.
const ECHO: &str = "#!/bin/sh\nbody=$(cat; echo .)\nprintf 'Content-Type: text/plain\\r\\nX-Length: %s\\r\\n\\r\\n' \"$CONTENT_LENGTH\"\nsleep 0.25\nprintf '%s' \"${body%.}\"\n";

fn pair() -> (Tern, Tern, tempfile::TempDir) {
    let shared = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    write_files(
        &shared.path().join("www"),
        &[
            ("index.html", b"<p>home</p>\n"),
            ("a.txt", b"alpha\n"),
            ("big.bin", &big),
            ("sub/page.html", b"<p>sub</p>\n"),
        ],
    );
    tern_testkit::install(
        &shared.path().join("cgi/stream.cgi"),
        SCRIPT.as_bytes(),
        0o755,
    );
    tern_testkit::install(&shared.path().join("cgi/echo.cgi"), ECHO.as_bytes(), 0o755);
    let root = shared.path().display();
    let config = |http1: &str| {
        format!(
            "[server]\nhttp1 = \"{http1}\"\n[[listen]]\naddress = \"127.0.0.1:0\"\n\
             [limits]\nmax_body_bytes = 200000\n\
             [[site]]\nroot = \"{root}/www\"\n\
             [[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{root}/cgi\"\n"
        )
    };
    let hyper = Tern::start(BIN, &config("hyper"));
    let tern = Tern::start(BIN, &config("tern"));
    (hyper, tern, shared)
}

/// Sends `parts` on a new connection (a pause between them), then reads
/// until the server closes, or for at most 3 s.
fn exchange(addr: SocketAddr, parts: &[&[u8]]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 65536];
    let mut read_some = |s: &mut TcpStream, got: &mut Vec<u8>, until: Instant| {
        while Instant::now() < until {
            match tern_testkit::read_some(s, &mut chunk) {
                Ok(0) => return true,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return true,
            }
        }
        false
    };
    for (i, part) in parts.iter().enumerate() {
        if s.write_all(part).is_err() {
            break;
        }
        if i + 1 < parts.len()
            && read_some(
                &mut s,
                &mut got,
                Instant::now() + Duration::from_millis(300),
            )
        {
            return got;
        }
    }
    read_some(&mut s, &mut got, Instant::now() + Duration::from_secs(3));
    got
}

/// The bytes with each `date:` field's value blanked.
fn without_dates(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.split("\r\n")
        .map(|line| {
            if line.to_ascii_lowercase().starts_with("date: ") {
                "date: -"
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

#[test]
fn tern_s_http1_loop_answers_as_hyper_s_byte_for_byte() {
    let (hyper, tern, _shared) = pair();
    let close = "Connection: close\r\n";
    let corpus: Vec<(&str, Vec<String>)> = vec![
        ("a GET", vec![format!("GET / HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        (
            "keep-alive, a pause, then close",
            vec![
                "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n".into(),
                format!("GET /sub/page.html HTTP/1.1\r\nHost: t\r\n{close}\r\n"),
            ],
        ),
        (
            "pipelined GET, HEAD, 404, 304, range",
            vec![format!(
                "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nHEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\n\
                 GET /missing HTTP/1.1\r\nHost: t\r\n\r\n\
                 GET /a.txt HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n\r\n\
                 GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=5-14\r\n{close}\r\n"
            )],
        ),
        ("a large file", vec![format!("GET /big.bin HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("HEAD of a large file", vec![format!("HEAD /big.bin HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        // Large bodies go from the file on tern's loop (sendfile): the
        // whole file twice (a miss, then a cache hit), a range of it
        // (from an offset), and a small range then the whole file
        // pipelined behind it.
        (
            "a large file twice, a large range, pipelined",
            vec![format!(
                "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n\
                 GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=1000-60999\r\n\r\n\
                 GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=99990-\r\n\r\n\
                 GET /big.bin HTTP/1.1\r\nHost: t\r\n{close}\r\n"
            )],
        ),
        ("a directory without its slash", vec![format!("GET /sub HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("streamed CGI output", vec![format!("GET /cgi-bin/stream.cgi?x=1 HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        (
            "CGI kept alive, then a file",
            vec![format!(
                "GET /cgi-bin/stream.cgi HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n"
            )],
        ),
        ("HTTP/1.0", vec!["GET /a.txt HTTP/1.0\r\n\r\n".into()]),
        ("HTTP/1.0 keep-alive", vec!["GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n".into()]),
        (
            "HTTP/1.0 keep-alive: pipelined HEAD, 404, 304, a range, a large file",
            vec![
                "GET /a.txt HTTP/1.0\r\nHost: t\r\nConnection: keep-alive\r\n\r\n\
                 HEAD /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\
                 GET /missing HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\
                 GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\nIf-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n\r\n\
                 GET /big.bin HTTP/1.0\r\nConnection: keep-alive\r\nRange: bytes=5-14\r\n\r\n\
                 GET /big.bin HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n\
                 GET /big.bin HTTP/1.0\r\n\r\n"
                    .into(),
            ],
        ),
        ("HTTP/1.0 asking to close", vec!["GET /a.txt HTTP/1.0\r\nConnection: close\r\n\r\n".into()]),
        ("HTTP/1.0 streamed CGI output", vec!["GET /cgi-bin/stream.cgi HTTP/1.0\r\n\r\n".into()]),
        ("HTTP/1.0 keep-alive, streamed CGI output", vec!["GET /cgi-bin/stream.cgi HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".into()]),
        ("HTTP/1.0 with a body", vec!["POST /a.txt HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc".into()]),
        ("HTTP/1.0 with a body for a script", vec!["POST /cgi-bin/echo.cgi HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc".into()]),
        ("HTTP/1.0 chunked (refused)", vec!["POST /a.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".into()]),
        ("HTTP/1.2 is 1.1", vec![format!("GET /a.txt HTTP/1.2\r\nHost: t\r\n{close}\r\n")]),
        // An expectation other than 100-continue is hyper's: tern's loop
        // hands the connection over with that head, which hyper must read
        // as 1.1 too, as it must the head after it.
        (
            "HTTP/1.2 handed to hyper, then another",
            vec![format!(
                "GET /a.txt HTTP/1.2\r\nHost: t\r\nExpect: x\r\n\r\nGET /a.txt HTTP/1.2\r\nHost: t\r\n{close}\r\n"
            )],
        ),
        ("no Host", vec!["GET /a.txt HTTP/1.1\r\n\r\n".into()]),
        ("two Hosts", vec!["GET /a.txt HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".into()]),
        ("absolute form", vec![format!("GET http://t/a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("OPTIONS *", vec![format!("OPTIONS * HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("leading empty lines", vec![format!("\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("bare LF", vec!["GET /a.txt HTTP/1.1\nHost: t\nConnection: close\n\n".into()]),
        ("a method tern does not serve", vec![format!("BREW /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("POST with a body", vec![format!("POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n{close}\r\nabc")]),
        (
            "a body left unread, then pipelined requests",
            vec![format!(
                "POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nGET /xGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n\
                 POST /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
                 GET /index.html HTTP/1.1\r\nHost: t\r\n{close}\r\n"
            )],
        ),
        (
            "bodies for a script, kept alive and pipelined",
            vec![format!(
                "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello\
                 POST /cgi-bin/echo.cgi?q HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
                 2;ext=1\r\nhe\r\n3\r\nllo\r\n0\r\nX-Trailer: t\r\n\r\n\
                 GET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n"
            )],
        ),
        (
            "a body in parts, the head alone first",
            vec![
                "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n".into(),
                "hello ".into(),
                format!("worldGET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n"),
            ],
        ),
        (
            "a chunked body in parts",
            vec![
                "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel".into(),
                "lo\r\n0\r".into(),
                format!("\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n"),
            ],
        ),
        (
            "a large body for a script",
            vec![format!(
                "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: 150000\r\n\r\n{}\
                 GET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n",
                "x".repeat(150_000)
            )],
        ),
        (
            "100-continue: the client waits, then sends",
            vec![
                "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n".into(),
                "ping".into(),
                format!("GET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n"),
            ],
        ),
        (
            "100-continue with the body already sent",
            vec![format!(
                "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\npingGET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n"
            )],
        ),
        (
            "100-continue answered without the body",
            vec!["POST /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n".into()],
        ),
        (
            "100-continue for a body over the limit",
            vec!["POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 300000\r\n\r\n".into()],
        ),
        (
            "a length over the limit, the body coming",
            vec![format!("POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: 300000\r\n\r\n{}", "y".repeat(1000))],
        ),
        (
            "a chunked body over the limit",
            vec![format!(
                "POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n30d40\r\n{}\r\n0\r\n\r\n",
                "z".repeat(200_000)
            )],
        ),
        (
            "a body cut short, then a pause",
            vec![
                "POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc".into(),
                "de".into(),
            ],
        ),
        (
            "a bad chunk size for a script",
            vec!["POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n".into()],
        ),
        (
            "chunk data without its CRLF",
            vec!["POST /cgi-bin/echo.cgi HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n".into()],
        ),
        ("POST with length 0", vec![format!("POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n{close}\r\n")]),
        (
            "a body, then a GET",
            vec![
                "GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n".into(),
                "POST /cgi-bin/stream.cgi HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi".into(),
                format!("GET /index.html HTTP/1.1\r\nHost: t\r\n{close}\r\n"),
            ],
        ),
        ("chunked", vec![format!("POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n{close}\r\n2\r\nhi\r\n0\r\n\r\n")]),
        ("CL and TE", vec!["POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".into()]),
        ("two lengths", vec!["POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".into()]),
        ("Expect without a body", vec![format!("GET /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n{close}\r\n")]),
        ("Upgrade", vec![format!("GET /a.txt HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("obs-fold", vec!["GET /a.txt HTTP/1.1\r\nHost: t\r\nX-A: a\r\n b\r\n\r\n".into()]),
        ("space before the colon", vec!["GET /a.txt HTTP/1.1\r\nHost : t\r\n\r\n".into()]),
        ("a NUL in a value", vec!["GET /a.txt HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n".into()]),
        ("HTTP/2.0 in a request line", vec!["GET /a.txt HTTP/2.0\r\nHost: t\r\n\r\n".into()]),
        ("a malformed version", vec!["GET /a.txt HTTP/1\r\nHost: t\r\n\r\n".into()]),
        ("a target with a space", vec!["GET /a b HTTP/1.1\r\nHost: t\r\n\r\n".into()]),
        ("a long target", vec![format!("GET /{} HTTP/1.1\r\nHost: t\r\n{close}\r\n", "a".repeat(9000))]),
        ("a large head", vec![format!("GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n", "b".repeat(70_000))]),
        ("traversal", vec![format!("GET /../../etc/passwd HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("encoded traversal", vec![format!("GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: t\r\n{close}\r\n")]),
        ("a head in two parts", vec!["GET /a.txt HTTP/1.1\r\nHo".into(), format!("st: t\r\n{close}\r\n")]),
        ("a request then garbage", vec!["GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n\x01\x02 nonsense\r\n\r\n".into()]),
    ];
    // Where tern's loop is meant to differ. Under `TERN_TEST_HTTP1=hyper`
    // both servers run hyper's loop, and no answer differs.
    let both_hyper = super::under_hyper();
    // hyper's answer, as tern's loop gives it:
    let meant = |name: &str, hyper: String| match name {
        // An HTTP/1.0 client asked to keep the connection, but a streamed
        // answer to 1.0 ends only at the close, so tern does not say
        // `keep-alive` (RFC 9112 §9.3); hyper says it, then closes.
        "HTTP/1.0 keep-alive, streamed CGI output" if !both_hyper => {
            hyper.replacen("connection: keep-alive\r\n", "", 1)
        }
        // A body whose framing broke ends the connection after the
        // answer, and tern says so (RFC 9112 §9.6); hyper closes silently.
        "a bad chunk size for a script" | "chunk data without its CRLF" if !both_hyper => hyper
            .replacen(
                "content-length: ",
                "connection: close\r\ncontent-length: ",
                1,
            ),
        _ => hyper,
    };
    // Where tern's loop does better than hyper's: the status of each
    // answer it gives, in order, the last closing the connection (hyper's
    // bytes are not compared).
    let better: &[(&str, &[&str])] = &[
        // hyper reads one piece of a body its handler left unread, and
        // closes the connection unless that was the end; tern reads what
        // has arrived of it to its end and goes on.
        (
            "a body left unread, then pipelined requests",
            &["405", "405", "405", "200"],
        ),
    ];
    let statuses = |answer: &str| -> Vec<String> {
        answer
            .lines()
            .filter_map(|l| l.strip_prefix("HTTP/1.1 "))
            .map(|l| l.chars().take(3).collect())
            .collect()
    };
    let asked = |name: &str| better.iter().find(|(n, _)| *n == name);
    // Each server gets the corpus in order, one exchange at a time (a
    // case may depend on what the one before left in the cache), the two
    // servers at once: most cases wait for an answer's end.
    let answers = |addr: SocketAddr, only_tern: bool| {
        let corpus = &corpus;
        move || -> Vec<Option<String>> {
            corpus
                .iter()
                .map(|(name, parts)| {
                    if asked(name).is_some() && (both_hyper || !only_tern) {
                        // Compared with what tern's loop is meant to say, not
                        // with hyper's (two hypers: the same, or none from
                        // either).
                        return None;
                    }
                    let parts: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
                    Some(without_dates(&exchange(addr, &parts)))
                })
                .collect()
        }
    };
    let (from_tern, from_hyper) = std::thread::scope(|scope| {
        let t = scope.spawn(answers(tern.addr(), true));
        let h = answers(hyper.addr(), false)();
        (t.join().unwrap(), h)
    });
    let mut differ = Vec::new();
    for (((name, _), b), a) in corpus.iter().zip(from_tern).zip(from_hyper) {
        let Some(b) = b else { continue };
        if let Some((_, want)) = asked(name) {
            let last = b.rsplit("HTTP/1.1 ").next().unwrap_or("");
            if statuses(&b) != *want || !last.contains("connection: close\r\n") {
                differ.push(format!("{name}: not {want:?}, the last closing:\n{b}"));
            }
            continue;
        }
        let a = meant(name, a.unwrap_or_default());
        assert!(!a.is_empty(), "{name}: hyper's loop answered nothing");
        if a != b {
            differ.push(format!("{name}:\n--- hyper\n{a}\n--- tern\n{b}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n\n"));
}

/// A connection that goes idle gives its buffers back to its worker and
/// the next request on the worker, from any connection, takes them: with
/// one worker and three kept connections taking turns, one of them with a
/// second head pipelined behind its first and one sending its head in two
/// pieces, each connection gets its own answers and nothing of another's.
#[test]
fn connections_taking_turns_on_one_worker_get_only_their_own_answers() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(String, Vec<u8>)> = (0..3)
        .map(|i| {
            (
                format!("f{i}.txt"),
                format!("file {i} ").repeat(i * 40 + 1).into_bytes(),
            )
        })
        .collect();
    let named: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    write_files(&dir.path().join("www"), &named);
    let config = format!(
        "[server]\nhttp1 = \"tern\"\nworkers = 1\n[[listen]]\naddress = \"127.0.0.1:0\"\n\
         [[site]]\nroot = \"{}/www\"\n",
        dir.path().display()
    );
    let t = Tern::start(BIN, &config);
    let mut conns: Vec<TcpStream> = (0..3)
        .map(|_| {
            let s = TcpStream::connect(t.addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s
        })
        .collect();
    let head = |i: usize| format!("GET /f{i}.txt HTTP/1.1\r\nHost: test\r\n\r\n");
    for round in 0..20 {
        for (i, s) in conns.iter_mut().enumerate() {
            let answers = match (i, round % 4) {
                (0, 1) => {
                    s.write_all(format!("{}{}", head(i), head(i)).as_bytes())
                        .unwrap();
                    2
                }
                (1, 2) => {
                    let h = head(i);
                    s.write_all(&h.as_bytes()[..9]).unwrap();
                    std::thread::sleep(Duration::from_millis(20));
                    s.write_all(&h.as_bytes()[9..]).unwrap();
                    1
                }
                _ => {
                    s.write_all(head(i).as_bytes()).unwrap();
                    1
                }
            };
            for (status, body) in read_answers(s, answers) {
                assert_eq!(status, 200, "round {round}, connection {i}");
                assert_eq!(body, files[i].1, "round {round}, connection {i}");
            }
        }
    }
}

/// Reads `count` answers, each framed by its `Content-Length`, from `s`:
/// their statuses and bodies. Answers to pipelined heads may arrive in one
/// read, which `Response::read_from` would cut after the first.
fn read_answers(s: &mut TcpStream, count: usize) -> Vec<(u16, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        let mut answers = Vec::new();
        let mut rest = &buf[..];
        while answers.len() < count {
            let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
                break;
            };
            let head = String::from_utf8_lossy(&rest[..end]).to_ascii_lowercase();
            let status = head[9..12].parse().expect("a status");
            let len: usize = (head.split("\r\n"))
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .expect("a content-length");
            if rest.len() < end + 4 + len {
                break;
            }
            answers.push((status, rest[end + 4..end + 4 + len].to_vec()));
            rest = &rest[end + 4 + len..];
        }
        if answers.len() == count {
            assert!(rest.is_empty(), "more than {count} answers");
            return answers;
        }
        let n = tern_testkit::read_some(s, &mut chunk).expect("the answers within 10 s");
        assert!(n > 0, "closed after {} of {count} answers", answers.len());
        buf.extend_from_slice(&chunk[..n]);
    }
}
