//! Bad requests get the right status, one log line naming the cause, and
//! harm nobody else.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::*;

fn site(limits: &str) -> Tern {
    let dir = docroot(&[("index.html", b"index")]);
    Tern::start_in(BIN, &config(&format!("[limits]\n{limits}"), ""), dir)
}

#[test]
fn malformed_request_line_is_400_and_logged() {
    let t = site("");
    let r = request(t.addr(), b"GARBAGE\r\n\r\n").unwrap();
    assert_eq!(r.status, 400);
    let r = request(
        t.addr(),
        b"GET / HTTP/1.1\r\nHost: test\r\nBad Header\r\n\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 400);
    assert!(t.wait_log("400: malformed request"), "{}", t.log());
    assert_eq!(get(&t, "/").status, 200);
}

#[test]
fn oversized_head_is_431_and_logged() {
    let t = site("max_header_bytes = \"16k\"");
    let big = "x".repeat(20_000);
    let r = request(
        t.addr(),
        format!("GET / HTTP/1.1\r\nHost: test\r\nX-Big: {big}\r\n\r\n").as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 431);
    assert!(t.wait_log("431: request head larger"), "{}", t.log());
}

#[test]
fn too_many_headers_is_431() {
    let t = site("max_headers = 20");
    let mut req = String::from("GET / HTTP/1.1\r\nHost: test\r\n");
    for i in 0..30 {
        req.push_str(&format!("X-H{i}: v\r\n"));
    }
    req.push_str("\r\n");
    assert_eq!(request(t.addr(), req.as_bytes()).unwrap().status, 431);
}

#[test]
fn long_uri_is_414_and_logged() {
    let t = site("max_uri_bytes = \"1k\"");
    let path = format!("/{}", "a".repeat(2000));
    let r = get(&t, &path);
    assert_eq!(r.status, 414);
    assert!(
        t.wait_log("414: request target longer than max_uri_bytes"),
        "{}",
        t.log()
    );
    assert_eq!(get(&t, "/").status, 200);
}

/// A request line longer than the whole head may be is 414, as nginx
/// answers it: its target is what is too long, not the fields. (hyper's
/// loop says 431: it reads that head itself.)
#[test]
fn a_request_line_beyond_the_head_limit_is_414() {
    let t = site("max_header_bytes = \"16k\"");
    let path = format!("/{}", "a".repeat(100_000));
    let r = request(
        t.addr(),
        format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let (status, line) = if under_hyper() {
        (431, "431: request head larger")
    } else {
        (414, "414: request target longer")
    };
    assert_eq!(r.status, status);
    assert!(t.wait_log(line), "{}", t.log());
}

#[test]
fn large_body_is_413_and_logged() {
    let t = site("max_body_bytes = 100");
    let r = request(
        t.addr(),
        format!(
            "POST / HTTP/1.1\r\nHost: test\r\nContent-Length: 1000\r\n\r\n{}",
            "b".repeat(1000)
        )
        .as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 413);
    assert!(
        t.wait_log("413: request body larger than max_body_bytes"),
        "{}",
        t.log()
    );
}

/// A request refused before its body arrives is answered at once, and
/// the connection closes after the answer: the client may be waiting for
/// `100 Continue`, or about to send the body. (hyper's loop, ended with
/// `poll_without_shutdown`, once closed such a connection with the answer
/// still in its buffer: the first write after a read that would block
/// waits for the socket's readiness, and the unread body had ended the
/// read side.)
#[test]
fn a_request_refused_before_its_body_arrives_is_answered() {
    let t = site("max_body_bytes = 100");
    let heads = [
        ("Content-Length: 4\r\n", "/index.html", 405),
        ("Transfer-Encoding: chunked\r\n", "/index.html", 405),
        (
            "Expect: 100-continue\r\nContent-Length: 4\r\n",
            "/index.html",
            405,
        ),
        ("Expect: 100-continue\r\nContent-Length: 1000\r\n", "/", 413),
        ("Content-Length: 1000\r\n", "/", 413),
    ];
    for (fields, path, status) in heads {
        let head = format!("POST {path} HTTP/1.1\r\nHost: test\r\n{fields}\r\n");
        for round in 0..3 {
            let r = request(t.addr(), head.as_bytes())
                .unwrap_or_else(|e| panic!("{head:?}, round {round}: no answer: {e}"));
            assert_eq!(r.status, status, "{head:?}");
            assert_eq!(r.header("connection"), Some("close"), "{head:?}");
        }
    }
}

/// A client still sending a body that the answer refused reads the whole
/// answer and then the end of the connection, not a reset: after the
/// answer the server closes its side and reads and discards what the
/// client still sends for a while (a lingering close), where closing with
/// the body unread would reset the connection, and a reset can destroy
/// the answer before the client reads it. Nor does it read a 431 after
/// the 413: the connection does not move to another worker with the
/// body's first bytes taken for a new request (hyper's loop did, when
/// the rounds before kept the first worker busy).
#[test]
fn a_client_still_sending_a_refused_body_reads_the_answer_not_a_reset() {
    let t = site("max_body_bytes = 100");
    const LEN: usize = 20 << 20;
    let head = format!("POST / HTTP/1.1\r\nHost: test\r\nContent-Length: {LEN}\r\n\r\n");
    for round in 0..20 {
        let (text, end) = answer_under_a_flood(t.addr(), head.as_bytes(), b"b", LEN);
        assert!(
            text.starts_with("HTTP/1.1 413 "),
            "round {round}: {text:?} ({end:?})"
        );
        assert!(
            text.ends_with("413 Payload Too Large\n"),
            "round {round}: {text:?}"
        );
        assert!(end.is_ok(), "round {round}: {end:?} after {text:?}");
    }
}

/// Requests a client pipelines behind one that asked to close are not
/// served (RFC 9112, 9.6), and do not cost it its answer: the server
/// closes its side and reads off what still arrives, as after a refused
/// body. Closed with them unread, the socket resets, and the reset throws
/// away what of a large answer is still in the server's send queue. The
/// same with an `Upgrade` field, which the server ignores (it upgrades to
/// nothing): under `http1 = "hyper"` such a request once ended the
/// connection without the FIN first, as hyper ends one it readied for an
/// upgrade.
#[test]
fn requests_pipelined_behind_a_close_do_not_cut_its_answer_short() {
    const LEN: usize = 4 << 20;
    let big = vec![b'x'; LEN];
    let dir = docroot(&[("big.bin", &big)]);
    let t = Tern::start_in(BIN, &config("", ""), dir);
    let next = b"GET /big.bin HTTP/1.1\r\nHost: test\r\n\r\n";
    for upgrade in ["", "Upgrade: tern-test\r\n"] {
        let head =
            format!("GET /big.bin HTTP/1.1\r\nHost: test\r\n{upgrade}Connection: close\r\n\r\n");
        for round in 0..3 {
            let (text, end) = answer_under_a_flood(t.addr(), head.as_bytes(), next, LEN);
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            assert!(
                text.starts_with("HTTP/1.1 200 "),
                "{upgrade:?} round {round}: {:?} ({end:?})",
                &text[..text.len().min(200)]
            );
            assert_eq!(body.len(), LEN, "{upgrade:?} round {round}: {end:?}");
            assert!(end.is_ok(), "{upgrade:?} round {round}: {end:?}");
        }
    }
}

#[test]
fn other_methods_are_405_with_allow() {
    let t = site("");
    let r = request(
        t.addr(),
        b"DELETE /index.html HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET, HEAD"));
}

#[test]
fn slow_head_is_disconnected_after_header_read_timeout_and_logged() {
    let t = site("header_read_timeout = \"500ms\"\nkeepalive_timeout = \"30s\"");
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    let start = Instant::now();
    s.write_all(b"GET / HTTP/1.1\r\nHost: te").unwrap();
    let mut buf = [0u8; 64];
    // The server closes the connection: read returns 0 (or a reset), not
    // our own read timeout.
    assert!(
        closed_by_peer(tern_testkit::read_some(&mut s, &mut buf)),
        "not closed by the server"
    );
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(400), "closed after {took:?}");
    assert!(took < Duration::from_secs(6), "closed after {took:?}");
    assert!(
        t.wait_log("did not send a request head within header_read_timeout"),
        "{}",
        t.log()
    );
    // A slowloris trickling one byte at a time is cut off too.
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let start = Instant::now();
    let mut closed = false;
    for b in b"GET / HTTP/1.1\r\nX-A: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
        if s.write_all(&[*b]).is_err() {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        if start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    if !closed {
        closed = closed_by_peer(tern_testkit::read_some(&mut s, &mut buf));
    }
    assert!(
        closed,
        "slowloris still connected after {:?}",
        start.elapsed()
    );
}

fn closed_by_peer(r: std::io::Result<usize>) -> bool {
    match r {
        Ok(n) => n == 0,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
    }
}

#[test]
fn idle_keepalive_connection_is_closed_after_keepalive_timeout() {
    let t = site("header_read_timeout = \"5s\"\nkeepalive_timeout = \"300ms\"");
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let r = Response::read_from(&mut s, false).unwrap();
    assert_eq!(r.status, 200);
    let start = Instant::now();
    let mut buf = [0u8; 16];
    assert!(
        closed_by_peer(tern_testkit::read_some(&mut s, &mut buf)),
        "not closed by the server"
    );
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[test]
fn connections_beyond_the_limit_wait_without_harming_others() {
    let t = site("max_connections = 2");
    let open = |t: &Tern| {
        let s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    };
    let mut a = open(&t);
    let mut b = open(&t);
    for s in [&mut a, &mut b] {
        s.write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
            .unwrap();
        assert_eq!(Response::read_from(s, false).unwrap().status, 200);
    }
    let mut c = open(&t);
    c.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 16];
    let waited = tern_testkit::read_some(&mut c, &mut buf);
    assert!(
        waited.is_err(),
        "third connection was served at the limit: {waited:?}"
    );
    // The existing connections still work.
    a.write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .unwrap();
    assert_eq!(Response::read_from(&mut a, false).unwrap().status, 200);
    // When one closes, the waiting one is served.
    drop(b);
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(Response::read_from(&mut c, false).unwrap().status, 200);
}
