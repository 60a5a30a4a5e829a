//! Golden lines, round trips and real-world lines for every format.

use std::borrow::Cow;
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;

use super::{detect_format, parse, render};
use crate::{AccessRecord, LogFormat, ParseError};

const FORMATS: [LogFormat; 4] = [
    LogFormat::Common,
    LogFormat::Combined,
    LogFormat::CombinedTls,
    LogFormat::Json,
];

fn ip(text: &str) -> Option<IpAddr> {
    Some(text.parse().unwrap())
}

fn some(text: &str) -> Option<String> {
    Some(text.to_owned())
}

/// Apache's documentation example, with every field set.
fn frank() -> AccessRecord {
    AccessRecord {
        time: UNIX_EPOCH + Duration::new(971_211_336, 123_456_789),
        remote: ip("192.0.2.7"),
        remote_port: Some(50312),
        user: some("frank"),
        method: "GET".into(),
        target: "/apache_pb.gif?x=1".into(),
        protocol: "HTTP/1.0".into(),
        status: 200,
        bytes: 2326,
        referer: some("http://example.com/start.html"),
        user_agent: some("Mozilla/4.08 [en] (Win98; I ;Nav)"),
        host: some("example.com"),
        duration: Duration::from_micros(1250),
        request_id: 1234,
        tls_protocol: None,
        tls_cipher: None,
    }
}

/// Values chosen to break a naive log: a user agent that forges a second
/// line, quotes and backslashes everywhere, a control byte, non-ASCII, a
/// Referer that is literally `-`, a Unix-socket client, an empty body.
fn mallory() -> AccessRecord {
    AccessRecord {
        remote: None,
        remote_port: None,
        user: some("a b\"c"),
        target: "/p\"q\\r\u{1}".into(),
        protocol: "HTTP/1.1".into(),
        status: 400,
        bytes: 0,
        referer: some("-"),
        user_agent: some(
            "x\"\n127.0.0.1 - - [01/Jan/2000:00:00:00 +0000] \"GET /forged HTTP/1.1\" 200 1 é\\",
        ),
        host: None,
        ..frank()
    }
}

fn line(format: LogFormat, rec: &AccessRecord) -> String {
    let mut out = Vec::new();
    render(format, rec, &mut out);
    String::from_utf8(out).unwrap()
}

/// What `rec` becomes after a trip through `format`: the fields the format
/// carries, at the precision it keeps.
fn carried(format: LogFormat, rec: &AccessRecord) -> AccessRecord {
    let truncate = |time: SystemTime, unit: u32| {
        let since = time.duration_since(UNIX_EPOCH).unwrap();
        UNIX_EPOCH + Duration::new(since.as_secs(), since.subsec_nanos() / unit * unit)
    };
    let mut rec = rec.clone();
    if format == LogFormat::Json {
        rec.time = truncate(rec.time, 1_000_000);
        return rec;
    }
    rec.time = truncate(rec.time, 1_000_000_000);
    rec.user = rec.user.filter(|user| !user.is_empty());
    rec.remote_port = None;
    rec.host = None;
    rec.duration = Duration::ZERO;
    rec.request_id = 0;
    if format != LogFormat::CombinedTls {
        rec.tls_protocol = None;
        rec.tls_cipher = None;
    }
    rec.tls_protocol = rec.tls_protocol.filter(|p| !p.is_empty());
    rec.tls_cipher = rec.tls_cipher.filter(|c| !c.is_empty());
    if format == LogFormat::Common {
        rec.referer = None;
        rec.user_agent = None;
    }
    rec
}

#[test]
fn golden_lines() {
    let rec = frank();
    assert_eq!(
        line(LogFormat::Common, &rec),
        "192.0.2.7 - frank [10/Oct/2000:20:55:36 +0000] \"GET /apache_pb.gif?x=1 HTTP/1.0\" 200 2326\n"
    );
    assert_eq!(
        line(LogFormat::Combined, &rec),
        "192.0.2.7 - frank [10/Oct/2000:20:55:36 +0000] \"GET /apache_pb.gif?x=1 HTTP/1.0\" 200 2326 \
         \"http://example.com/start.html\" \"Mozilla/4.08 [en] (Win98; I ;Nav)\"\n"
    );
    assert_eq!(
        line(LogFormat::Json, &rec),
        r#"{"time":"2000-10-10T20:55:36.123Z","remote":"192.0.2.7","remote_port":50312,"user":"frank","method":"GET","target":"/apache_pb.gif?x=1","protocol":"HTTP/1.0","status":200,"bytes":2326,"referer":"http://example.com/start.html","user_agent":"Mozilla/4.08 [en] (Win98; I ;Nav)","host":"example.com","duration_ms":1.25,"request_id":"00000000000004d2","tls_protocol":null,"tls_cipher":null}"#
            .to_owned()
            + "\n"
    );
}

#[test]
fn combined_tls_adds_protocol_and_cipher_as_words() {
    let tls = AccessRecord {
        tls_protocol: Some(Cow::Borrowed("TLSv1.3")),
        tls_cipher: Some(Cow::Borrowed("TLS13_AES_128_GCM_SHA256")),
        ..frank()
    };
    let text = line(LogFormat::CombinedTls, &tls);
    assert_eq!(
        text,
        "192.0.2.7 - frank [10/Oct/2000:20:55:36 +0000] \"GET /apache_pb.gif?x=1 HTTP/1.0\" 200 2326 \
         \"http://example.com/start.html\" \"Mozilla/4.08 [en] (Win98; I ;Nav)\" TLSv1.3 TLS13_AES_128_GCM_SHA256\n"
    );
    // Read as Combined (what other tools see), the two words are extra fields.
    assert_eq!(detect_format(&text), Some(LogFormat::Combined));
    assert!(line(LogFormat::CombinedTls, &frank()).ends_with("(Win98; I ;Nav)\" - -\n"));
}

#[test]
fn golden_lines_escape_hostile_values() {
    let rec = mallory();
    assert_eq!(
        line(LogFormat::Combined, &rec),
        r#"- - a\x20b\x22c [10/Oct/2000:20:55:36 +0000] "GET /p\x22q\x5Cr\x01 HTTP/1.1" 400 - "\x2D" "x\x22\x0A127.0.0.1 - - [01/Jan/2000:00:00:00 +0000] \x22GET /forged HTTP/1.1\x22 200 1 \xC3\xA9\x5C""#
            .to_owned()
            + "\n"
    );
    assert_eq!(
        line(LogFormat::Json, &rec),
        r#"{"time":"2000-10-10T20:55:36.123Z","remote":null,"remote_port":null,"user":"a b\"c","method":"GET","target":"/p\"q\\r\u0001","protocol":"HTTP/1.1","status":400,"bytes":0,"referer":"-","user_agent":"x\"\n127.0.0.1 - - [01/Jan/2000:00:00:00 +0000] \"GET /forged HTTP/1.1\" 200 1 é\\","host":null,"duration_ms":1.25,"request_id":"00000000000004d2","tls_protocol":null,"tls_cipher":null}"#
            .to_owned()
            + "\n"
    );
}

#[test]
fn absent_and_empty_values() {
    let rec = AccessRecord {
        remote: ip("::1"),
        user: some(""),
        referer: None,
        user_agent: some(""),
        ..frank()
    };
    assert_eq!(
        line(LogFormat::Combined, &rec),
        "::1 - - [10/Oct/2000:20:55:36 +0000] \"GET /apache_pb.gif?x=1 HTTP/1.0\" 200 2326 \"-\" \"\"\n"
    );
}

#[test]
fn every_format_round_trips() {
    for rec in [frank(), mallory()] {
        for format in FORMATS {
            let parsed = parse(format, &line(format, &rec)).unwrap();
            assert_eq!(parsed, carried(format, &rec), "{format:?}");
        }
    }
}

#[test]
fn nginx_combined_lines() {
    let rec = parse(
        LogFormat::Combined,
        r#"93.184.216.34 - - [17/May/2015:08:05:32 +0000] "GET /downloads/product_1 HTTP/1.1" 304 0 "-" "Debian APT-HTTP/1.3 (0.8.16~exp12ubuntu10.21)""#,
    )
    .unwrap();
    assert_eq!(rec.remote, ip("93.184.216.34"));
    assert_eq!(rec.time, UNIX_EPOCH + Duration::from_secs(1_431_849_932));
    assert_eq!(
        (
            rec.method.as_str(),
            rec.target.as_str(),
            rec.protocol.as_str()
        ),
        ("GET", "/downloads/product_1", "HTTP/1.1")
    );
    assert_eq!(
        (rec.status, rec.bytes, rec.user, rec.referer),
        (304, 0, None, None)
    );
    assert_eq!(
        rec.user_agent,
        some("Debian APT-HTTP/1.3 (0.8.16~exp12ubuntu10.21)")
    );

    // A TLS handshake sent to a plain HTTP port, with nginx's escaping and
    // the common "$http_x_forwarded_for" field appended.
    let rec = parse(
        LogFormat::Combined,
        "203.0.113.9 - - [03/Feb/2024:10:11:12 +0100] \"\\x16\\x03\\x01\\x02\\x00\\xFC\" 400 157 \"-\" \"-\" \"10.0.0.1, 10.0.0.2\"\r\n",
    )
    .unwrap();
    assert_eq!(rec.method, "\u{16}\u{3}\u{1}\u{2}\u{0}\u{FFFD}");
    assert_eq!((rec.target.as_str(), rec.protocol.as_str()), ("", ""));
    assert_eq!(rec.time, UNIX_EPOCH + Duration::from_secs(1_706_951_472));
    assert_eq!((rec.status, rec.bytes, rec.user_agent), (400, 157, None));
}

#[test]
fn apache_common_and_combined_lines() {
    let common =
        r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
    let rec = parse(LogFormat::Common, common).unwrap();
    assert_eq!(rec.remote, ip("127.0.0.1"));
    assert_eq!(rec.user, some("frank"));
    assert_eq!(rec.time, UNIX_EPOCH + Duration::from_secs(971_211_336));
    assert_eq!(
        (rec.target.as_str(), rec.status, rec.bytes),
        ("/apache_pb.gif", 200, 2326)
    );

    // Apache's own escapes, "-" for an empty body, a host name where
    // HostnameLookups is on.
    let rec = parse(
        LogFormat::Combined,
        r#"client.example.com - - [10/Oct/2000:13:55:36 -0700] "GET /a\"b HTTP/1.1" 404 - "-" "curl \"x\"\\y\n""#,
    )
    .unwrap();
    assert_eq!(rec.remote, None);
    assert_eq!((rec.target.as_str(), rec.bytes), ("/a\"b", 0));
    assert_eq!(rec.user_agent, some("curl \"x\"\\y\n"));
}

#[test]
fn broken_lines_are_errors() {
    for bad in [
        "",
        "127.0.0.1",
        r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200"#,
        r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 12x"#,
        r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 70000 1"#,
        r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1 200 1"#,
        r#"127.0.0.1 - - 10/Oct/2000:13:55:36 +0000 "GET / HTTP/1.1" 200 1"#,
        r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1x"#,
    ] {
        for format in FORMATS {
            assert!(parse(format, bad).is_err(), "{format:?} {bad}");
        }
    }
    let common_only = r#"127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET / HTTP/1.1" 200 1"#;
    assert!(matches!(
        parse(LogFormat::Combined, common_only),
        Err(ParseError::Field {
            field: "referer",
            ..
        })
    ));
}

#[test]
fn detect_format_names_the_richest_format_that_parses() {
    let rec = frank();
    for format in FORMATS {
        let read_as = match format {
            LogFormat::CombinedTls => LogFormat::Combined,
            f => f,
        };
        assert_eq!(detect_format(&line(format, &rec)), Some(read_as));
    }
    let with_trailing_word = line(LogFormat::Common, &rec).replace('\n', " vhost.example");
    assert_eq!(detect_format(&with_trailing_word), Some(LogFormat::Common));
    assert_eq!(detect_format("GET / HTTP/1.1"), None);
    assert_eq!(detect_format("{\"time\": 1}"), None);
}

fn char_boundary(s: &str, at: usize) -> usize {
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

fn text() -> impl Strategy<Value = String> {
    // Any characters at all, control and non-ASCII included.
    any::<String>()
}

prop_compose! {
    fn record()(
        (secs, nanos) in (0..253_402_300_800u64, 0..1_000_000_000u32),
        remote in any::<Option<IpAddr>>(),
        remote_port in any::<Option<u16>>(),
        user in proptest::option::of(text()),
        (method, target, protocol) in (text(), text(), text()),
        (status, bytes) in any::<(u16, u64)>(),
        (referer, user_agent, host) in (
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::option::of(text()),
        ),
        duration_nanos in 0..86_400_000_000_000u64,
        request_id in any::<u64>(),
        (tls_protocol, tls_cipher) in (proptest::option::of(text()), proptest::option::of(text())),
    ) -> AccessRecord {
        AccessRecord {
            time: UNIX_EPOCH + Duration::new(secs, nanos),
            remote, remote_port, user, method, target, protocol, status, bytes,
            referer, user_agent, host,
            duration: Duration::from_nanos(duration_nanos),
            request_id,
            tls_protocol: tls_protocol.map(Cow::Owned),
            tls_cipher: tls_cipher.map(Cow::Owned),
        }
    }
}

proptest! {
    #[test]
    fn any_record_renders_as_one_line_and_parses_back(rec in record()) {
        for format in FORMATS {
            let line = line(format, &rec);
            prop_assert_eq!(line.find('\n'), Some(line.len() - 1));
            if format != LogFormat::Json {
                prop_assert!(line.bytes().all(|b| b == b'\n' || (0x20..0x7f).contains(&b)));
            }
            prop_assert_eq!(parse(format, &line).unwrap(), carried(format, &rec));
        }
    }

    #[test]
    fn parse_survives_any_text(line in text(), cut in any::<prop::sample::Index>()) {
        for format in FORMATS {
            let _ = parse(format, &line);
            // Rendered lines cut short or run on: errors, never panics.
            let mut whole = self::line(format, &mallory());
            let at = char_boundary(&whole, cut.index(whole.len() + 1));
            let _ = parse(format, &whole[..at]);
            whole.insert_str(at, &line);
            let _ = parse(format, &whole);
        }
    }
}
