use http::{Method, StatusCode, Version};

use super::*;

fn parse(s: &str) -> Result<Option<Parsed>, HeadError> {
    parse_head(s.as_bytes(), &Limits::default())
}

fn ok(s: &str) -> Parsed {
    match parse(s) {
        Ok(Some(p)) => p,
        other => panic!("{s:?}: {other:?}"),
    }
}

fn err(s: &str) -> HeadError {
    match parse(s) {
        Err(e) => e,
        other => panic!("{s:?}: {other:?}"),
    }
}

#[test]
fn simple_get() {
    let p = ok("GET /a?b HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\nrest");
    assert_eq!(p.method, Method::GET);
    assert_eq!(p.target, "/a?b");
    assert_eq!(p.version, Version::HTTP_11);
    assert_eq!(p.headers.len(), 2);
    assert_eq!(p.headers["accept"], "*/*");
    assert_eq!(p.head_len, 43);
    assert_eq!(p.framing, Framing::None);
    assert!(p.keep_alive);
    assert!(!p.expect_continue);
    assert!(!p.upgrade);
    assert_eq!(p.hosts, 1);
}

#[test]
fn incomplete_heads_need_more() {
    let full = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    for end in 0..full.len() {
        assert_eq!(
            parse(&full[..end]).unwrap().map(|p| p.head_len),
            None,
            "{end}"
        );
    }
    assert!(parse(full).unwrap().is_some());
}

#[test]
fn leading_empty_lines_are_skipped() {
    let p = ok("\r\n\n\r\nGET / HTTP/1.1\r\n\r\n");
    assert_eq!(p.head_len, 23);
    assert_eq!(
        err("\r\rGET / HTTP/1.1\r\n\r\n").status(),
        StatusCode::BAD_REQUEST
    );
}

#[test]
fn bare_lf_line_endings_are_accepted() {
    let p = ok("GET / HTTP/1.1\nHost: x\n\n");
    assert_eq!(p.hosts, 1);
}

#[test]
fn keep_alive() {
    assert!(ok("GET / HTTP/1.1\r\n\r\n").keep_alive);
    assert!(!ok("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
    assert!(!ok("GET / HTTP/1.1\r\nConnection: foo, CLOSE\r\n\r\n").keep_alive);
    assert!(!ok("GET / HTTP/1.0\r\n\r\n").keep_alive);
    assert!(ok("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keep_alive);
    // Once a field says close, a later keep-alive does not undo it.
    assert!(
        !ok("GET / HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n").keep_alive
    );
    assert!(
        !ok("GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n").keep_alive
    );
}

#[test]
fn content_length() {
    assert_eq!(
        ok("POST / HTTP/1.1\r\nContent-Length: 42\r\n\r\n").framing,
        Framing::Length(42)
    );
    assert_eq!(
        ok("POST / HTTP/1.1\r\nContent-Length: 007\r\n\r\n").framing,
        Framing::Length(7)
    );
    assert_eq!(
        ok("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").framing,
        Framing::Length(0)
    );
    // httparse trims the value's surrounding whitespace.
    assert_eq!(
        ok("POST / HTTP/1.1\r\nContent-Length:  5 \r\n\r\n").framing,
        Framing::Length(5)
    );
    let same = ok("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n");
    assert_eq!(same.framing, Framing::Length(5));
    assert_eq!(same.headers.get_all("content-length").iter().count(), 1);
    for bad in ["+5", "-5", "0x5", "5 5", "", "5,5", "5, 5", "1e3", "١"] {
        let e = err(&format!("POST / HTTP/1.1\r\nContent-Length: {bad}\r\n\r\n"));
        assert_eq!(e, HeadError::ContentLength, "{bad:?}");
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
    }
    assert_eq!(
        err("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
        HeadError::ContentLengthMismatch
    );
    let max = u64::MAX - 2;
    assert_eq!(
        ok(&format!("POST / HTTP/1.1\r\nContent-Length: {max}\r\n\r\n")).framing,
        Framing::Length(max)
    );
    for big in [
        (u64::MAX - 1).to_string(),
        u64::MAX.to_string(),
        "18446744073709551616".into(),
        "99999999999999999999999".into(),
    ] {
        assert_eq!(
            err(&format!("POST / HTTP/1.1\r\nContent-Length: {big}\r\n\r\n")),
            HeadError::ContentLength
        );
    }
}

#[test]
fn transfer_encoding() {
    let p = ok("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(p.framing, Framing::Chunked);
    assert!(p.keep_alive);
    assert_eq!(
        ok("POST / HTTP/1.1\r\nTransfer-Encoding: ChUnKeD \r\n\r\n").framing,
        Framing::Chunked
    );
    assert_eq!(
        ok("POST / HTTP/1.1\r\nTransfer-Encoding: ,chunked\r\n\r\n").framing,
        Framing::Chunked
    );
    assert_eq!(
        err("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        HeadError::TransferEncodingHttp10
    );
    for (te, e) in [
        ("gzip", HeadError::ChunkedNotLast),
        ("identity", HeadError::ChunkedNotLast),
        ("chunked, identity", HeadError::ChunkedNotLast),
        ("chunked,", HeadError::ChunkedNotLast),
        ("xchunked", HeadError::ChunkedNotLast),
        ("chunked-false", HeadError::ChunkedNotLast),
        ("\"chunked\"", HeadError::ChunkedNotLast),
        ("chunked, chunked", HeadError::ChunkedTwice),
        ("gzip, chunked", HeadError::UnsupportedCoding),
    ] {
        let got = err(&format!(
            "POST / HTTP/1.1\r\nTransfer-Encoding: {te}\r\n\r\n"
        ));
        assert_eq!(got, e, "{te:?}");
    }
    assert_eq!(
        err("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").status(),
        StatusCode::NOT_IMPLEMENTED
    );
    // Across fields: the last field decides what is last.
    assert_eq!(
        err("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n"),
        HeadError::ChunkedNotLast
    );
    assert_eq!(
        err("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
        HeadError::ChunkedTwice
    );
}

#[test]
fn transfer_encoding_with_content_length() {
    // Content-Length first: checked, then dropped.
    let p = ok("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(p.framing, Framing::Chunked);
    assert!(!p.keep_alive);
    assert!(p.headers.get("content-length").is_none());
    assert_eq!(
        err("POST / HTTP/1.1\r\nContent-Length: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
        HeadError::ContentLength
    );
    // Content-Length after: neither checked nor kept (hyper).
    let p = ok("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n");
    assert_eq!(p.framing, Framing::Chunked);
    assert!(!p.keep_alive);
    assert!(p.headers.get("content-length").is_none());
}

#[test]
fn connection_options_are_read_in_one_pass() {
    let of = |v: &str| ConnectionOptions::of(&HeaderValue::from_str(v).unwrap());
    assert_eq!(
        of(" Keep-Alive ,UPGRADE,, close"),
        ConnectionOptions {
            close: true,
            keep_alive: true,
            upgrade: true
        }
    );
    assert_eq!(of("keep-alive-ish, closed"), ConnectionOptions::default());
    let not_ascii = HeaderValue::from_bytes(b"close, \xff").unwrap();
    assert_eq!(
        ConnectionOptions::of(&not_ascii),
        ConnectionOptions::default()
    );
    // Both in one field: close wins, and upgrade is still seen.
    let p = ok("GET / HTTP/1.1\r\nConnection: keep-alive, close, upgrade\r\nUpgrade: x\r\n\r\n");
    assert!(!p.keep_alive);
    assert!(p.upgrade);
}

#[test]
fn expect_and_upgrade() {
    let p = ok("POST / HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n");
    assert!(p.expect_continue);
    assert!(!ok("POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").expect_continue);
    assert!(
        !ok("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n").expect_continue
    );
    assert!(ok("GET / HTTP/1.1\r\nExpect: nothing\r\n\r\n").has_expect);
    assert!(!ok("GET / HTTP/1.1\r\n\r\n").has_expect);
    let p = ok("GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    assert!(p.upgrade && p.has_upgrade);
    let p = ok("GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n");
    assert!(!p.upgrade && p.has_upgrade);
    assert!(!ok("GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n").upgrade);
}

#[test]
fn hosts() {
    assert_eq!(ok("GET / HTTP/1.1\r\n\r\n").hosts, 0);
    assert_eq!(ok("GET / HTTP/1.0\r\nhost: a\r\n\r\n").hosts, 1);
    assert_eq!(
        err("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"),
        HeadError::DuplicateHost
    );
}

#[test]
fn versions() {
    assert_eq!(ok("GET / HTTP/1.0\r\n\r\n").version, Version::HTTP_10);
    let p = ok("GET / HTTP/1.2\r\nHost: a\r\n\r\n");
    assert_eq!(p.version, Version::HTTP_11);
    assert_eq!(p.head_len, 27);
    assert_eq!(ok("\r\nGET / HTTP/1.9\n\n").version, Version::HTTP_11);
    // Not settled before the line ends.
    assert!(parse("GET / HTTP/1.2").unwrap().is_none());
    assert!(parse("GET / HTTP/2.0\r").unwrap().is_none());
    for v in ["HTTP/2.0", "HTTP/3.0", "HTTP/0.9"] {
        let e = err(&format!("GET / {v}\r\n\r\n"));
        assert_eq!(e.status(), StatusCode::HTTP_VERSION_NOT_SUPPORTED, "{v}");
    }
    for v in [
        "HTTP/1",
        "http/1.1",
        "HTTP/1.10",
        "HTTP/1.1 ",
        "HTTP/11",
        "HTTP/1.x",
        "HTTPS/1.1",
        "HTTP/1.2 ",
        " HTTP/1.1",
        "HTTP/a.1",
    ] {
        let e = err(&format!("GET / {v}\r\n\r\n"));
        assert_eq!(e.status(), StatusCode::BAD_REQUEST, "{v:?}");
    }
    // HTTP/0.9's request line has no version at all.
    assert_eq!(err("GET /\r\n\r\n").status(), StatusCode::BAD_REQUEST);
}

#[test]
fn bad_request_lines() {
    for s in [
        "G(T / HTTP/1.1\r\n\r\n",
        "GET  / HTTP/1.1\r\n\r\n",
        "GET /a b HTTP/1.1\r\n\r\n",
        "GET /a\tb HTTP/1.1\r\n\r\n",
        "GET /a\x01 HTTP/1.1\r\n\r\n",
        "GET /a\x7f HTTP/1.1\r\n\r\n",
        " GET / HTTP/1.1\r\n\r\n",
        "GET\t/ HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\r\n\r\n",
        "GET /\r HTTP/1.1\r\n\r\n",
        "/ HTTP/1.1\r\n\r\n",
    ] {
        assert_eq!(err(s).status(), StatusCode::BAD_REQUEST, "{s:?}");
    }
    assert_eq!(err("G(T / HTTP/1.1\r\n\r\n"), HeadError::Method);
    assert_eq!(err("GET /\x01 HTTP/1.1\r\n\r\n"), HeadError::Target);
}

#[test]
fn bad_fields() {
    for s in [
        "GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n",
        "GET / HTTP/1.1\r\n Host: a\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
        "GET / HTTP/1.1\r\nX\0: a\r\n\r\n",
        "GET / HTTP/1.1\r\nX(: a\r\n\r\n",
        "GET / HTTP/1.1\r\n: a\r\n\r\n",
        "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
        "GET / HTTP/1.1\r\nX: a\r\r\n\r\n",
    ] {
        assert_eq!(err(s).status(), StatusCode::BAD_REQUEST, "{s:?}");
    }
    // obs-text in values is kept as bytes.
    let p = ok("GET / HTTP/1.1\r\nX: caf\u{e9}\r\n\r\n");
    assert_eq!(p.headers["x"].as_bytes(), "caf\u{e9}".as_bytes());
}

#[test]
fn limits() {
    let limits = Limits {
        max_head_bytes: 64,
        max_headers: 2,
        max_target: 10,
        ..Limits::default()
    };
    let p = |s: &str| parse_head(s.as_bytes(), &limits);
    assert!(p("GET /123456789 HTTP/1.1\r\n\r\n").unwrap().is_some());
    assert_eq!(
        p("GET /1234567890 HTTP/1.1\r\n\r\n").unwrap_err(),
        HeadError::TargetTooLong { limit: 10 }
    );
    assert_eq!(
        p("GET /1234567890 HTTP/1.1\r\n\r\n").unwrap_err().status(),
        StatusCode::URI_TOO_LONG
    );
    let e = p("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n").unwrap_err();
    assert_eq!(e, HeadError::TooManyHeaders { limit: 2 });
    assert_eq!(e.status(), StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    // Exactly 64 bytes: fine; 65: too large, complete or not.
    let exact = format!("GET / HTTP/1.1\r\nA: {}\r\n\r\n", "x".repeat(41));
    assert_eq!(exact.len(), 64);
    assert!(p(&exact).unwrap().is_some());
    let over = format!("GET / HTTP/1.1\r\nA: {}\r\n\r\n", "x".repeat(42));
    assert_eq!(p(&over).unwrap_err(), HeadError::HeadTooLarge { limit: 64 });
    assert!(p(&over[..63]).unwrap().is_none());
    assert!(p(&over[..64]).is_err());
    // A request line that alone passes the head's limit: its target is
    // too long (414), whatever the target limit says.
    let line = format!("GET /{} HTTP/1.1\r\n", "x".repeat(70));
    assert_eq!(
        p(&line[..64]).unwrap_err(),
        HeadError::TargetTooLong { limit: 10 }
    );
    assert!(p(&line[..63]).unwrap().is_none());
    // Empty lines count.
    let lines = "\r\n".repeat(32);
    assert!(p(&lines).is_err());
    assert!(p(&lines[..62]).unwrap().is_none());
    // More headers than the stack holds.
    let many = Limits {
        max_headers: 300,
        ..Limits::default()
    };
    let mut s = String::from("GET / HTTP/1.1\r\n");
    for i in 0..250 {
        s.push_str(&format!("X-{i}: {i}\r\n"));
    }
    s.push_str("\r\n");
    assert_eq!(
        parse_head(s.as_bytes(), &many)
            .unwrap()
            .unwrap()
            .headers
            .len(),
        250
    );
    assert!(parse_head(s.as_bytes(), &Limits::default()).is_err());
}

#[test]
fn target_forms() {
    assert_eq!(
        ok("GET http://a.example/x HTTP/1.1\r\n\r\n").target.host(),
        Some("a.example")
    );
    assert_eq!(
        ok("CONNECT a.example:443 HTTP/1.1\r\n\r\n").method,
        Method::CONNECT
    );
    assert_eq!(ok("OPTIONS * HTTP/1.1\r\n\r\n").target, "*");
    assert_eq!(ok("FOO /x HTTP/1.1\r\n\r\n").method.as_str(), "FOO");
}

#[test]
fn known_field_names_are_what_http_makes_of_them() {
    // Every token byte (RFC 9110 §5.6.2) in every place of every name the
    // short path knows, and each name in three cases: the short path
    // gives what `HeaderName::from_bytes` gives, or both refuse.
    let tchar: Vec<u8> = (0u8..=127)
        .filter(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b))
        .collect();
    let names = [
        "host",
        "accept",
        "cookie",
        "referer",
        "user-agent",
        "connection",
        "if-none-match",
        "cache-control",
        "content-length",
        "accept-encoding",
        "accept-language",
        "if-modified-since",
    ];
    let mut tried = 0;
    for name in names {
        for cased in [name.to_owned(), name.to_ascii_uppercase(), title_case(name)] {
            let got = field_name(cased.as_bytes()).expect(&cased);
            assert_eq!(got.as_str(), name, "{cased}");
            assert_eq!(got, HeaderName::from_bytes(cased.as_bytes()).unwrap());
        }
        for at in 0..name.len() {
            for &b in &tchar {
                let mut bytes = name.as_bytes().to_vec();
                bytes[at] = b;
                let expected = HeaderName::from_bytes(&bytes).ok();
                assert_eq!(
                    field_name(&bytes).ok(),
                    expected,
                    "{:?}",
                    String::from_utf8_lossy(&bytes)
                );
                tried += 1;
            }
        }
    }
    assert!(tried > 10_000);
    // A name it does not know, and one `http` refuses.
    assert_eq!(field_name(b"X-Forwarded-For").unwrap(), "x-forwarded-for");
    assert!(field_name(b"bad name").is_err());
}

fn title_case(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper { c.to_ascii_uppercase() } else { c };
            upper = c == '-';
            out
        })
        .collect()
}
