//! Admission: what a request head must be before anything routes it, and
//! the one authority that chooses its site. Pure: it decides over the head
//! (and settles the `Host` field); the service renders a refusal.
//!
//! - **One authority** (RFC 9112 §3.2, §3.2.2; RFC 9113 §8.3.1). An HTTP/1.1
//!   request needs exactly one `Host` field with a valid `host[:port]`
//!   value; any request with two, or with an invalid one, is refused. The
//!   authority of an absolute-form target wins over `Host`; over HTTP/2,
//!   `:authority` wins, and a `Host` naming another authority makes the
//!   request malformed. Whatever decides is written back as the request's
//!   only `Host`, so the site that answers and the `HTTP_HOST` a script
//!   reads can never differ.
//! - **Framing tern reads** (RFC 9112 §6.1). `chunked` is the only transfer
//!   coding tern decodes: any other is 501, `chunked` twice is 400.
//! - **Targets a handler can serve**. `OPTIONS *` is answered here (the
//!   server's methods), over HTTP/2 too (`:path` `*`, RFC 9113 §8.3.1);
//!   CONNECT is 405 (tern is no proxy); other authority-form or
//!   asterisk-form targets are 400.
//! - **Limits and the path**. A target longer than `max_uri_bytes` is 414
//!   (checked first: nothing else reads a head that long), more fields
//!   than `max_headers` over HTTP/2 is 431 (HTTP/1's parser counts its
//!   own), a path that
//!   does not decode is 400, a declared body over `max_body_bytes` is 413.
//!   The path is decoded once, here, into the [`DecodedPath`] every later
//!   phase and the handler use.

use std::borrow::Cow;

use http::header::{self, HeaderValue};
use http::{Method, Request, StatusCode, Version};
use tern_config::Limits;
use tern_handler::path::DecodedPath;

/// The methods tern's handlers answer, for `Allow` on `OPTIONS *` and on a
/// refused CONNECT.
const SERVER_METHODS: &str = "GET, HEAD, POST, PUT, DELETE, OPTIONS";

/// A request answered at admission.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    /// For the log line.
    pub(crate) reason: Cow<'static, str>,
    /// `Allow`, for 405 and `OPTIONS *`.
    pub(crate) allow: Option<&'static str>,
    /// The connection cannot carry another request (its framing is in
    /// doubt, or the body was not read).
    pub(crate) close: bool,
}

impl Refusal {
    pub(crate) fn bad(reason: impl Into<Cow<'static, str>>) -> Self {
        Refusal::new(StatusCode::BAD_REQUEST, reason)
    }

    fn new(status: StatusCode, reason: impl Into<Cow<'static, str>>) -> Self {
        Refusal {
            status,
            reason: reason.into(),
            allow: None,
            close: true,
        }
    }
}

/// Admits `req` under `limits` and gives its decoded path, or says how to
/// answer it. On admission its `Host` field is the one authority that
/// chooses the site (absent only when the request names none: HTTP/1.0
/// without `Host`, or an empty `Host`).
pub(crate) fn admit<B>(req: &mut Request<B>, limits: &Limits) -> Result<DecodedPath, Refusal> {
    admit_head(req, limits, false)
}

/// [`admit`], for a request whose head tern's HTTP/1 parser read and found
/// without a body when `bodiless`: it had no `Transfer-Encoding` (that
/// frames a body) and no `Content-Length` above 0, so neither is looked up
/// again (two field lookups a request).
pub(crate) fn admit_head<B>(
    req: &mut Request<B>,
    limits: &Limits,
    bodiless: bool,
) -> Result<DecodedPath, Refusal> {
    let target_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target_len > limits.max_uri_bytes {
        return Err(Refusal::new(
            StatusCode::URI_TOO_LONG,
            format!(
                "request target longer than max_uri_bytes ({}): {target_len} bytes",
                limits.max_uri_bytes
            ),
        ));
    }
    if req.version() == Version::HTTP_2 {
        // HTTP/1's parser counts the fields as it reads them; HTTP/2's
        // bounds only their bytes (`max_header_bytes`).
        let fields = req.headers().len();
        if fields > limits.max_headers {
            return Err(Refusal::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                format!(
                    "more header fields than max_headers ({}): {fields}",
                    limits.max_headers
                ),
            ));
        }
        authority_h2(req)?;
    } else {
        if !bodiless {
            framing_h1(req)?;
        }
        authority_h1(req)?;
    }
    target(req)?;
    let path = DecodedPath::parse(req.uri().path())
        .map_err(|e| Refusal::bad(format!("bad request path: {e}")))?;
    let declared = if bodiless { None } else { declared_length(req) };
    if let Some(len) = declared {
        if len > limits.max_body_bytes {
            // The body is not read: the connection cannot carry another
            // request.
            return Err(Refusal::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body larger than max_body_bytes ({}): {len} bytes",
                    limits.max_body_bytes
                ),
            ));
        }
    }
    Ok(path)
}

fn declared_length<B>(req: &Request<B>) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// The request target's form: origin form for every method but two.
fn target<B>(req: &Request<B>) -> Result<(), Refusal> {
    if req.method() == Method::CONNECT {
        return Err(Refusal {
            status: StatusCode::METHOD_NOT_ALLOWED,
            reason: "CONNECT: tern is not a proxy".into(),
            allow: Some(SERVER_METHODS),
            close: true,
        });
    }
    let uri = req.uri();
    // Over HTTP/2 `:authority` comes with every target, `*` too (RFC 9113
    // §8.3.1: `OPTIONS` with `:path` `*`).
    if uri.path() == "*" && (uri.authority().is_none() || req.version() == Version::HTTP_2) {
        if req.method() == Method::OPTIONS {
            return Err(Refusal {
                status: StatusCode::OK,
                reason: "OPTIONS *".into(),
                allow: Some(SERVER_METHODS),
                close: false,
            });
        }
        return Err(Refusal::bad("asterisk-form target without OPTIONS"));
    }
    if !uri.path().starts_with('/') {
        return Err(Refusal::bad("the request target is not a path"));
    }
    Ok(())
}

/// HTTP/1.x: the absolute-form authority, else the one `Host`.
fn authority_h1<B>(req: &mut Request<B>) -> Result<(), Refusal> {
    let host = one_host(req)?;
    if host.is_none() && req.version() != Version::HTTP_10 {
        return Err(Refusal::bad("HTTP/1.1 request without Host"));
    }
    let Some(authority) = req.uri().authority() else {
        return Ok(());
    };
    // Absolute form: the target's authority decides (RFC 9112 §3.2.2).
    let decided = checked(authority.as_str(), "user information in the request target")?;
    if host != Some(&decided) {
        req.headers_mut().insert(header::HOST, decided);
    }
    Ok(())
}

/// HTTP/2: `:authority` (in the URI), else the one `host` field.
fn authority_h2<B>(req: &mut Request<B>) -> Result<(), Refusal> {
    let host = one_host(req)?;
    let Some(authority) = req.uri().authority() else {
        return Ok(());
    };
    let decided = checked(authority.as_str(), "user information in :authority")?;
    match host.filter(|h| !h.is_empty()) {
        // RFC 9113 §8.3.1: a host naming another entity is malformed.
        Some(h) if !h.as_bytes().eq_ignore_ascii_case(decided.as_bytes()) => {
            Err(Refusal::bad("host differs from :authority"))
        }
        Some(_) => Ok(()),
        None => {
            req.headers_mut().insert(header::HOST, decided);
            Ok(())
        }
    }
}

/// The request's one Host field, if it has one: a valid authority, or
/// empty (which names none).
fn one_host<B>(req: &Request<B>) -> Result<Option<&HeaderValue>, Refusal> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(Refusal::bad("more than one Host field"));
    }
    match host {
        Some(h) if !h.is_empty() && !valid_authority(h.as_bytes()) => {
            Err(Refusal::bad("invalid Host value"))
        }
        h => Ok(h),
    }
}

/// An authority from the request target or `:authority`, as the Host it
/// becomes; `userinfo` is the reason logged for one with `user@`.
fn checked(authority: &str, userinfo: &'static str) -> Result<HeaderValue, Refusal> {
    if authority.contains('@') {
        return Err(Refusal::bad(userinfo));
    }
    if !valid_authority(authority.as_bytes()) {
        return Err(Refusal::bad("invalid authority"));
    }
    HeaderValue::from_str(authority).map_err(|_| Refusal::bad("invalid authority"))
}

/// HTTP/1.x framing beyond what the parser checks: the transfer codings.
/// `chunked` must be the last (else the length is unknown: 400, RFC 9112
/// §6.3), applied once; any other coding is one tern does not decode (501,
/// §6.1).
fn framing_h1<B>(req: &Request<B>) -> Result<(), Refusal> {
    let mut chunked = 0;
    let mut other = false;
    let mut last_chunked = false;
    for value in req.headers().get_all(header::TRANSFER_ENCODING) {
        for coding in value.as_bytes().split(|&b| b == b',') {
            let coding = coding.trim_ascii();
            if coding.is_empty() {
                continue; // an empty list element (RFC 9110 §5.6.1)
            }
            last_chunked = coding.eq_ignore_ascii_case(b"chunked");
            if last_chunked {
                chunked += 1;
            } else {
                other = true;
            }
        }
    }
    if (other || chunked > 0) && !last_chunked {
        return Err(Refusal::bad("chunked is not the last transfer coding"));
    }
    if chunked > 1 {
        return Err(Refusal::bad("chunked applied more than once"));
    }
    if other {
        return Err(Refusal::new(
            StatusCode::NOT_IMPLEMENTED,
            "a transfer coding other than chunked",
        ));
    }
    Ok(())
}

/// Whether `v` is `host[:port]` (RFC 3986 §3.2.2, RFC 9110 §4.2.3): an IP
/// literal in brackets, or a registered name or IPv4 address; the port
/// digits only. Stricter than the grammar in one way: no `,` (no host
/// name has one, and it would read as a list of two) and no `..`.
pub(crate) fn valid_authority(v: &[u8]) -> bool {
    if v.first() == Some(&b'[') {
        return valid_ip_literal(v);
    }
    // A registered name or IPv4 address, then `:` and the port, in one
    // pass (every request's Host comes here): the host's bytes up to the
    // first `:`, and after it the port's digits (a second `:` is not one).
    let mut prev = 0;
    for (i, &b) in v.iter().enumerate() {
        if !HOST_BYTE[usize::from(b)] {
            let port = &v[i + 1..];
            return b == b':' && i > 0 && port.len() <= 5 && port.iter().all(u8::is_ascii_digit);
        }
        if b == b'.' && prev == b'.' {
            return false;
        }
        prev = b;
    }
    !v.is_empty()
}

/// `[` IPv6 or IPvFuture `]`, then an optional `:` and port.
fn valid_ip_literal(v: &[u8]) -> bool {
    let Some(end) = v.iter().position(|&b| b == b']') else {
        return false;
    };
    let literal = &v[1..end];
    let ok = literal.contains(&b':')
        && literal
            .iter()
            .all(|&b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
    if !ok {
        return false;
    }
    match &v[end + 1..] {
        [] => true,
        [b':', port @ ..] => port.len() <= 5 && port.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// The bytes of a host name (RFC 3986 `reg-name`: unreserved, sub-delims
/// and percent signs), as a table: every request's Host goes through it.
const HOST_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric();
        b += 1;
    }
    let others = b"-._~%!$&'()*+;=";
    let mut i = 0;
    while i < others.len() {
        table[others[i] as usize] = true;
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            max_header_bytes: 16 << 10,
            max_headers: 100,
            max_uri_bytes: 32,
            max_body_bytes: 100,
            header_read_timeout: std::time::Duration::from_secs(10),
            body_timeout: std::time::Duration::from_secs(20),
            body_min_rate: 500,
            keepalive_timeout: std::time::Duration::from_secs(75),
            send_timeout: std::time::Duration::from_secs(60),
            max_connections: 10240,
            max_connections_per_client: 0,
        }
    }

    fn admit(r: &mut Request<()>) -> Result<DecodedPath, Refusal> {
        super::admit(r, &limits())
    }

    /// A head tern's parser found without a body skips only the framing
    /// checks: its authority, target and path are checked as any other's.
    #[test]
    fn a_bodiless_head_skips_only_the_framing_checks() {
        let bodiless = |r: &mut Request<()>| admit_head(r, &limits(), true);
        let mut r = req(Version::HTTP_11, "/a/../b", &["a.test"]);
        assert_eq!(bodiless(&mut r).unwrap().as_str(), "/b");
        for (target, hosts, status) in [
            ("/", &["a.test", "b.test"][..], StatusCode::BAD_REQUEST),
            ("/", &["a b"][..], StatusCode::BAD_REQUEST),
            ("/", &[][..], StatusCode::BAD_REQUEST),
            ("/a%00", &["a.test"][..], StatusCode::BAD_REQUEST),
            ("*", &["a.test"][..], StatusCode::BAD_REQUEST),
            (
                "/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                &["a.test"][..],
                StatusCode::URI_TOO_LONG,
            ),
        ] {
            let e = bodiless(&mut req(Version::HTTP_11, target, hosts)).unwrap_err();
            assert_eq!(e.status, status, "{target} {hosts:?}: {}", e.reason);
        }
        // What it skips: a transfer coding the parser would have refused
        // before (here only the full admission sees it).
        let mut te = req(Version::HTTP_11, "/", &["a.test"]);
        te.headers_mut().insert(
            header::TRANSFER_ENCODING,
            HeaderValue::from_static("gzip, chunked"),
        );
        assert_eq!(
            admit(&mut te).unwrap_err().status,
            StatusCode::NOT_IMPLEMENTED
        );
    }

    #[test]
    fn limits_are_checked_and_the_path_decoded_once() {
        let mut r = req(Version::HTTP_11, "/a%20b/../c", &["a.test"]);
        assert_eq!(admit(&mut r).unwrap().as_str(), "/c");

        // Too long a target is refused before anything reads it, even a
        // request that would be refused for its Host too.
        let long = format!("/{}", "x".repeat(40));
        let e = admit(&mut req(Version::HTTP_11, &long, &["a", "b"])).unwrap_err();
        assert_eq!(e.status, StatusCode::URI_TOO_LONG);
        assert!(e.reason.contains("max_uri_bytes (32)"), "{}", e.reason);

        let e = admit(&mut req(Version::HTTP_11, "/a%00", &["a.test"])).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.reason.starts_with("bad request path"), "{}", e.reason);

        let mut big = req(Version::HTTP_11, "/", &["a.test"]);
        big.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from_static("101"));
        let e = admit(&mut big).unwrap_err();
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(e.close, "an unread body leaves the connection unusable");
        let mut fits = req(Version::HTTP_11, "/", &["a.test"]);
        fits.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from_static("100"));
        assert!(admit(&mut fits).is_ok());
    }

    /// HTTP/2's heads are held to `max_headers` here (HTTP/1's parser
    /// holds its own), and `OPTIONS *` is answered over HTTP/2 as over
    /// HTTP/1, though `:authority` comes with it.
    #[test]
    fn http2_heads_are_held_to_max_headers_and_may_ask_options_star() {
        let mut many = req(Version::HTTP_2, "https://a.test/", &[]);
        for i in 0..101 {
            many.headers_mut().append(
                http::HeaderName::from_bytes(format!("x-{i}").as_bytes()).unwrap(),
                HeaderValue::from_static("v"),
            );
        }
        let e = admit(&mut many).unwrap_err();
        assert_eq!(e.status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
        assert!(e.reason.contains("max_headers (100): 101"), "{}", e.reason);
        many.headers_mut().remove("x-0");
        assert!(admit(&mut many).is_ok());

        let mut star = req(Version::HTTP_2, "https://a.test/", &[]);
        *star.uri_mut() = http::Uri::from_parts({
            let mut p = http::uri::Parts::default();
            p.scheme = Some(http::uri::Scheme::HTTPS);
            p.authority = Some(http::uri::Authority::from_static("a.test"));
            p.path_and_query = Some(http::uri::PathAndQuery::from_static("*"));
            p
        })
        .unwrap();
        *star.method_mut() = Method::OPTIONS;
        let e = admit(&mut star).unwrap_err();
        assert_eq!((e.status, e.allow), (StatusCode::OK, Some(SERVER_METHODS)));
        *star.method_mut() = Method::GET;
        assert_eq!(
            admit(&mut star).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
    }

    fn req(version: Version, target: &str, hosts: &[&str]) -> Request<()> {
        let mut r = Request::builder().version(version).uri(target);
        for h in hosts {
            r = r.header(header::HOST, *h);
        }
        r.body(()).unwrap()
    }

    fn host(r: &Request<()>) -> Option<&str> {
        r.headers().get(header::HOST).map(|v| v.to_str().unwrap())
    }

    /// The two-pass reading `valid_authority` had before it became one
    /// pass, kept as the reference it must agree with.
    fn valid_authority_reference(v: &[u8]) -> bool {
        if v.first() == Some(&b'[') {
            return valid_ip_literal(v);
        }
        let (host, port) = match v.iter().rposition(|&b| b == b':') {
            Some(i) => (&v[..i], Some(&v[i + 1..])),
            None => (v, None),
        };
        if let Some(port) = port {
            if port.len() > 5 || !port.iter().all(u8::is_ascii_digit) {
                return false;
            }
        }
        !host.is_empty()
            && host.iter().all(|&b| HOST_BYTE[usize::from(b)])
            && !host.windows(2).any(|w| w == b"..")
    }

    #[test]
    fn one_pass_authorities_agree_with_the_reference() {
        // Every string of up to six of these bytes (about 300,000).
        let alphabet = b"a1.:-@ ,";
        let mut s = Vec::new();
        let mut checked = 0;
        let mut valid = 0;
        for len in 0..=6u32 {
            for mut n in 0..alphabet.len().pow(len) {
                s.clear();
                for _ in 0..len {
                    s.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                let want = valid_authority_reference(&s);
                assert_eq!(
                    valid_authority(&s),
                    want,
                    "{:?}",
                    String::from_utf8_lossy(&s)
                );
                checked += 1;
                valid += usize::from(want);
            }
        }
        assert!(checked > 250_000 && valid > 1_000, "{checked} {valid}");
    }

    #[test]
    fn authorities() {
        for ok in [
            "a.test",
            "a.test:8080",
            "A-b.Test.",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:8080",
            "[2001:db8::1]",
            "xn--bcher-kva.example",
            "a_b.test",
            "host:",
        ] {
            assert!(valid_authority(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            ":80",
            "b.test x",
            "b.test/../",
            "a.test@b.test",
            "a.test, evil.test",
            "a.test,evil.test",
            "a..test",
            "a.test:80x",
            "a.test:123456",
            "[::1",
            "[::1]x",
            "[zz::1]",
            "[]",
            "a\\b",
            "a\"b",
            "a.test:80:80",
        ] {
            assert!(!valid_authority(bad.as_bytes()), "{bad}");
        }
    }

    #[test]
    fn http11_needs_exactly_one_valid_host() {
        assert!(admit(&mut req(Version::HTTP_11, "/", &["a.test"])).is_ok());
        for hosts in [
            &[][..],
            &["a.test", "evil.test"],
            &["b.test x"],
            &["a.test@b.test"],
        ] {
            let e = admit(&mut req(Version::HTTP_11, "/", hosts)).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{hosts:?}");
            assert!(e.close);
        }
        // An empty Host is allowed: the request names no authority.
        assert!(admit(&mut req(Version::HTTP_11, "/", &[""])).is_ok());
    }

    #[test]
    fn http10_without_host_goes_to_the_default_site() {
        let mut r = req(Version::HTTP_10, "/", &[]);
        assert!(admit(&mut r).is_ok());
        assert_eq!(host(&r), None);
        let e = admit(&mut req(Version::HTTP_10, "/", &["a", "b"])).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn the_absolute_form_authority_wins_over_host() {
        let mut r = req(Version::HTTP_11, "http://b.test/x", &["a.test"]);
        admit(&mut r).unwrap();
        assert_eq!(host(&r), Some("b.test"));
        assert_eq!(r.headers().get_all(header::HOST).iter().count(), 1);
        let e = admit(&mut req(Version::HTTP_11, "http://u@b.test/", &["b.test"])).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn h2_authority_wins_and_becomes_host() {
        let mut r = req(Version::HTTP_2, "http://b.test/x", &[]);
        admit(&mut r).unwrap();
        assert_eq!(host(&r), Some("b.test"));
        let mut same = req(Version::HTTP_2, "http://b.test/x", &["B.test"]);
        admit(&mut same).unwrap();
        let e = admit(&mut req(Version::HTTP_2, "http://b.test/", &["a.test"])).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        // No :authority: the host field decides.
        let mut only_host = req(Version::HTTP_2, "/x", &["a.test"]);
        admit(&mut only_host).unwrap();
        assert_eq!(host(&only_host), Some("a.test"));
    }

    #[test]
    fn transfer_codings_other_than_chunked_are_not_implemented() {
        for te in ["cow, chunked", "gzip, chunked", "gzip,chunked"] {
            let mut r = req(Version::HTTP_11, "/", &["a"]);
            r.headers_mut()
                .insert(header::TRANSFER_ENCODING, te.parse().unwrap());
            let e = admit(&mut r).unwrap_err();
            assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED, "{te}");
            assert!(e.close);
        }
        for te in ["chunked", "Chunked", " chunked ,"] {
            let mut r = req(Version::HTTP_11, "/", &["a"]);
            r.headers_mut()
                .insert(header::TRANSFER_ENCODING, te.parse().unwrap());
            assert!(admit(&mut r).is_ok(), "{te}");
        }
        for te in ["gzip", "chunked, identity", "chunked, gzip"] {
            let mut r = req(Version::HTTP_11, "/", &["a"]);
            r.headers_mut()
                .insert(header::TRANSFER_ENCODING, te.parse().unwrap());
            assert_eq!(
                admit(&mut r).unwrap_err().status,
                StatusCode::BAD_REQUEST,
                "{te}"
            );
        }
        let mut twice = req(Version::HTTP_11, "/", &["a"]);
        twice
            .headers_mut()
            .append(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        twice
            .headers_mut()
            .append(header::TRANSFER_ENCODING, "chunked".parse().unwrap());
        assert_eq!(
            admit(&mut twice).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn options_asterisk_and_connect() {
        let mut o = req(Version::HTTP_11, "*", &["a"]);
        *o.method_mut() = Method::OPTIONS;
        let e = admit(&mut o).unwrap_err();
        assert_eq!(e.status, StatusCode::OK);
        assert_eq!(e.allow, Some(SERVER_METHODS));
        assert!(!e.close);

        let mut g = req(Version::HTTP_11, "*", &["a"]);
        assert_eq!(admit(&mut g).unwrap_err().status, StatusCode::BAD_REQUEST);

        let mut c = req(Version::HTTP_11, "a.test:443", &["a.test:443"]);
        *c.method_mut() = Method::CONNECT;
        let e = admit(&mut c).unwrap_err();
        assert_eq!(e.status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(e.allow.is_some());
    }
}
