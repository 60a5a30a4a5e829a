//! The script's response head (RFC 3875 §6), parsed strictly and turned
//! into a decision. Pure: bytes in, a [`Reply`] out.
//!
//! The head is the lines up to the first empty line; a line ends with LF
//! or CR LF (scripts print either). The rules:
//! - each line is `name: value`, the name an HTTP token; a folded line, a
//!   line without `:`, or a CR, NUL or other control character inside a
//!   value refuses the whole response (502): passing one on would let a
//!   script split the client's response (header injection);
//! - `Status` (`3DIGIT [SP reason]`, 200 to 599), `Location` and
//!   `Content-Type` may appear once each;
//! - the framing is tern's: the script's Content-Length and
//!   Transfer-Encoding are dropped, with the other hop-by-hop fields
//!   (Connection, Keep-Alive, TE, Trailer, Upgrade, Proxy-Connection) and
//!   the `X-CGI-*` fields the RFC lets a server drop. A document's valid
//!   Content-Length (one value, or the same one repeated, and no
//!   Transfer-Encoding) is kept as [`Head::length`]: the answer then ends
//!   after that many bytes of output, as Apache and lighttpd end it, even
//!   while a child the script left behind holds its output open;
//! - the decision ([`Reply`]): `Location` with a local path and no
//!   `Status` (or `Status: 200`) is a local redirect (the server runs that
//!   path instead, and the rest of the output is discarded, as Apache
//!   does); any other `Location` (an absolute URI, a network path, a
//!   relative reference) is a client redirect, 302 unless `Status` says
//!   another status than 200;
//!   without `Location`, a document, which must have a `Content-Type`
//!   unless it gives a `Status`.
//!
//! An NPH script ([`Mode::Nph`], `nph-` names) writes a whole HTTP response
//! head: its status line is parsed and its fields kept as they are, but the
//! framing is still tern's, since the connection may be HTTP/2 or carry
//! other requests.

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, Uri};
use tern_handler::path::DecodedPath;
use tern_handler::{
    AuthUser, InternalRedirect, OriginalTarget, Redirected, ResponseBody, ScriptEnv,
};

use crate::HeadError;

/// The default cap on a response head: Apache's 8190-byte line limit is
/// per line, this is for the whole head.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;

/// How the script's output begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// CGI header fields (`Status`, `Location`, `Content-Type`, others).
    Cgi,
    /// A non-parsed-header script: an HTTP status line, then fields.
    Nph,
}

/// A response head to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The status.
    pub status: StatusCode,
    /// The reason phrase, when the script gave one other than the
    /// standard one (HTTP/1 only).
    pub reason: Option<Vec<u8>>,
    /// The fields, framing fields removed.
    pub headers: HeaderMap,
    /// The length of the body the script gave (its valid Content-Length),
    /// on a document whose status has a body.
    pub length: Option<u64>,
}

impl Head {
    /// The response this head starts, with `body`; a script's own reason
    /// phrase goes with it.
    pub fn into_response(self, body: ResponseBody) -> Response<ResponseBody> {
        let mut resp = Response::new(body);
        *resp.status_mut() = self.status;
        *resp.headers_mut() = self.headers;
        if let Some(reason) = self.reason {
            if let Ok(r) = hyper::ext::ReasonPhrase::try_from(reason) {
                resp.extensions_mut().insert(r);
            }
        }
        resp
    }
}

/// A 302 to `target`: how a handler that cannot call back into the router
/// answers a local redirect (the client asks again, and gets the same
/// resource).
pub fn client_redirect(target: &str) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::empty());
    *resp.status_mut() = StatusCode::FOUND;
    if let Ok(v) = HeaderValue::from_str(target) {
        resp.headers_mut().insert(http::header::LOCATION, v);
    }
    resp
}

/// A local redirect to `target` (`/path[?query]`) from the request
/// `parts`, handed to the server to follow: the 302 that a server which
/// does not follow it would send, carrying the next request as an
/// [`InternalRedirect`]. The next request is a GET without a body (RFC
/// 3875 §6.2.2) that knows the one before it ([`Redirected`]: CGI's
/// `REDIRECT_URL`); it goes through the rules and is authorized afresh, so
/// neither the user a realm granted the first nor the variables its rules
/// set are carried over. `None` when `target` is not a path.
pub fn local_redirect(parts: &Parts, target: &str) -> Option<Response<ResponseBody>> {
    if !target.starts_with('/') {
        return None;
    }
    let uri: Uri = target.parse().ok()?;
    let path = DecodedPath::parse(uri.path()).ok()?;
    let mut next = parts.clone();
    next.method = Method::GET;
    next.uri = uri;
    for h in [
        http::header::CONTENT_LENGTH,
        http::header::CONTENT_TYPE,
        http::header::TRANSFER_ENCODING,
    ] {
        next.headers.remove(h);
    }
    let hops = parts.extensions.get::<Redirected>().map_or(0, |r| r.hops) + 1;
    next.extensions.remove::<AuthUser>();
    next.extensions.remove::<OriginalTarget>();
    next.extensions.remove::<ScriptEnv>();
    next.extensions.insert(Redirected {
        url: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        hops,
    });
    let mut resp = client_redirect(target);
    resp.extensions_mut()
        .insert(InternalRedirect { parts: next, path });
    Some(resp)
}

/// What the script asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Send this head and the output that follows it.
    Document(Head),
    /// Send this head (a `Location` and a 3xx, 302 unless the script said
    /// otherwise) and the output that follows it.
    ClientRedirect(Head),
    /// Discard the output and answer with `GET` of this local path (and
    /// query): `/path[?query]`.
    LocalRedirect(String),
}

/// Parses a complete head: `head` holds the lines without the final
/// empty line. The entry point for fuzzing (with [`HeadReader`]).
pub fn parse(head: &[u8], mode: Mode) -> Result<Reply, HeadError> {
    let head = head.strip_suffix(b"\n").unwrap_or(head);
    if head.is_empty() {
        return Err(HeadError::Empty);
    }
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .zip(1..);
    let mut fields = Fields::default();
    if mode == Mode::Nph {
        let (line, _) = lines.next().unwrap_or_default();
        let (status, reason) = status_line(line)?;
        for (line, n) in lines {
            fields.add(line, n, mode)?;
        }
        let length = fields.length(status);
        return Ok(Reply::Document(Head {
            status,
            reason,
            headers: fields.headers,
            length,
        }));
    }
    for (line, n) in lines {
        fields.add(line, n, mode)?;
    }
    fields.decide()
}

#[derive(Default)]
struct Fields {
    status: Option<(StatusCode, Option<Vec<u8>>)>,
    location: Option<HeaderValue>,
    content_type: bool,
    headers: HeaderMap,
    /// The script's Content-Length, while every one it gave agrees.
    length: Length,
    /// The script gave a Transfer-Encoding: its Content-Length means
    /// nothing then (RFC 9112 §6.3).
    coded: bool,
}

/// The Content-Length fields of a head.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Length {
    #[default]
    None,
    Is(u64),
    /// Malformed, or two that differ: not honoured (dropped, as before
    /// a script's length was kept).
    Bad,
}

impl Length {
    /// `value` read as the HTTP codec reads a Content-Length.
    fn add(self, value: &[u8]) -> Length {
        match (self, tern_h1::digits(value)) {
            (Length::None, Some(n)) => Length::Is(n),
            (Length::Is(m), Some(n)) if m == n => self,
            _ => Length::Bad,
        }
    }
}

impl Fields {
    fn add(&mut self, line: &[u8], n: usize, mode: Mode) -> Result<(), HeadError> {
        if matches!(line.first(), Some(b' ' | b'\t')) {
            return Err(HeadError::Folded(n));
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or(HeadError::NotAField(n))?;
        let name = HeaderName::from_bytes(&line[..colon]).map_err(|_| HeadError::BadName(n))?;
        let value = trim(&line[colon + 1..]);
        let value = HeaderValue::from_bytes(value)
            .map_err(|_| HeadError::BadValue(n, name.as_str().to_owned()))?;
        match name.as_str() {
            "status" if mode == Mode::Cgi => {
                if self.status.is_some() {
                    return Err(HeadError::Repeated("Status"));
                }
                self.status = Some(status_value(value.as_bytes())?);
            }
            "location" if mode == Mode::Cgi => {
                if self.location.is_some() {
                    return Err(HeadError::Repeated("Location"));
                }
                self.location = Some(value);
            }
            "content-type" => {
                if self.content_type {
                    return Err(HeadError::Repeated("Content-Type"));
                }
                self.content_type = true;
                self.headers.append(name, value);
            }
            "content-length" => self.length = self.length.add(value.as_bytes()),
            "transfer-encoding" => self.coded = true,
            "connection" | "keep-alive" | "te" | "trailer" | "upgrade" | "proxy-connection" => {}
            n if n.starts_with("x-cgi-") => {}
            _ => {
                self.headers.append(name, value);
            }
        }
        Ok(())
    }

    /// The body's length the script gave, for a status that has a body.
    fn length(&self, status: StatusCode) -> Option<u64> {
        let bodiless = status.is_informational()
            || status == StatusCode::NO_CONTENT
            || status == StatusCode::NOT_MODIFIED;
        match self.length {
            Length::Is(n) if !self.coded && !bodiless => Some(n),
            _ => None,
        }
    }

    fn decide(mut self) -> Result<Reply, HeadError> {
        let status = self.status.take();
        let Some(location) = self.location.take() else {
            if !self.content_type && status.is_none() {
                return Err(HeadError::NoContentType);
            }
            let (status, reason) = status.unwrap_or((StatusCode::OK, None));
            let length = self.length(status);
            return Ok(Reply::Document(Head {
                status,
                reason,
                headers: self.headers,
                length,
            }));
        };
        let text = String::from_utf8_lossy(location.as_bytes()).into_owned();
        let local = text.starts_with('/') && !text.starts_with("//");
        // `Status: 200` is no status of a redirect: a local path with it is
        // run here, and any other location sent as 302 (Apache's reading).
        let status = status.filter(|(s, _)| *s != StatusCode::OK);
        if local && status.is_none() {
            let path = match text.find('#') {
                Some(i) => text[..i].to_owned(),
                None => text,
            };
            return Ok(Reply::LocalRedirect(path));
        }
        if text.is_empty() {
            return Err(HeadError::BadLocation(text));
        }
        // Anything else goes to the client: an absolute URI, a network
        // path, or a relative reference (`login.php`), which RFC 3875
        // leaves out but RFC 9110 §10.2.2 allows and every server passes
        // on (PHP's `header("Location: ...")` writes one with a Status).
        let (status, reason) = status.unwrap_or((StatusCode::FOUND, None));
        self.headers.insert(http::header::LOCATION, location);
        Ok(Reply::ClientRedirect(Head {
            status,
            reason,
            headers: self.headers,
            length: None,
        }))
    }
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&b| b != b' ' && b != b'\t');
    let Some(start) = start else {
        return &[];
    };
    let end = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .unwrap_or(start);
    &v[start..=end]
}

/// `3DIGIT [SP reason]`, 200 to 599: informational codes cannot end a
/// response.
fn status_value(v: &[u8]) -> Result<(StatusCode, Option<Vec<u8>>), HeadError> {
    let bad = || HeadError::BadStatus(String::from_utf8_lossy(v).into_owned());
    let code = v.get(..3).ok_or_else(bad)?;
    if !code.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let status = StatusCode::from_bytes(code).map_err(|_| bad())?;
    if !(200..=599).contains(&status.as_u16()) {
        return Err(bad());
    }
    let reason = match &v[3..] {
        [] => None,
        [b' ' | b'\t', rest @ ..] => Some(trim(rest)),
        _ => return Err(bad()),
    };
    let reason = reason
        .filter(|r| !r.is_empty())
        .filter(|r| status.canonical_reason().map(str::as_bytes) != Some(*r))
        .map(<[u8]>::to_vec);
    Ok((status, reason))
}

/// `HTTP/d.d SP 3DIGIT [SP reason]` (an NPH script's first line).
fn status_line(line: &[u8]) -> Result<(StatusCode, Option<Vec<u8>>), HeadError> {
    let bad = || HeadError::BadStatus(String::from_utf8_lossy(line).into_owned());
    let rest = line.strip_prefix(b"HTTP/").ok_or_else(bad)?;
    match rest {
        [a, b'.', b, b' ', status @ ..] if a.is_ascii_digit() && b.is_ascii_digit() => {
            if status.iter().any(|&c| c < 0x20 && c != b'\t' || c == 0x7f) {
                return Err(bad());
            }
            status_value(status).map_err(|_| bad())
        }
        _ => Err(bad()),
    }
}

/// Collects a script's output until the head is complete.
#[derive(Debug)]
pub struct HeadReader {
    buf: Vec<u8>,
    /// Where the search for the end of the head resumes.
    scanned: usize,
    mode: Mode,
    max: usize,
}

impl HeadReader {
    /// A reader for `mode` that refuses heads larger than `max` bytes.
    pub fn new(mode: Mode, max: usize) -> Self {
        HeadReader {
            buf: Vec::new(),
            scanned: 0,
            mode,
            max,
        }
    }

    /// As [`HeadReader::push`], for output held in `Bytes`: a head that
    /// arrives whole in one piece (nearly every one) is parsed where it
    /// lies, and the body that came with it is a slice of the piece, not a
    /// copy.
    pub fn push_bytes(&mut self, data: Bytes) -> Result<Option<(Reply, Bytes)>, HeadError> {
        if !self.buf.is_empty() {
            return self.push(&data);
        }
        match find_end(&data, 0) {
            Some((head_len, body_at)) if body_at <= self.max + 4 => {
                let reply = parse(&data[..head_len], self.mode)?;
                Ok(Some((reply, data.slice(body_at..))))
            }
            _ => self.push(&data),
        }
    }

    /// Adds output. Once the head is complete, returns the decision and
    /// the body bytes that came with it.
    pub fn push(&mut self, data: &[u8]) -> Result<Option<(Reply, Bytes)>, HeadError> {
        self.buf.extend_from_slice(data);
        let Some((head_len, body_at)) = find_end(&self.buf, self.scanned) else {
            if self.buf.len() > self.max {
                return Err(HeadError::TooLarge(self.max));
            }
            // Resume a little before the end: a CR LF CR LF may straddle
            // two reads.
            self.scanned = self.buf.len().saturating_sub(3);
            return Ok(None);
        };
        if body_at > self.max + 4 {
            return Err(HeadError::TooLarge(self.max));
        }
        let reply = parse(&self.buf[..head_len], self.mode)?;
        let body = Bytes::copy_from_slice(&self.buf[body_at..]);
        self.buf = Vec::new();
        Ok(Some((reply, body)))
    }

    /// The output ended: the head was never completed.
    pub fn truncated(&self) -> HeadError {
        HeadError::Truncated(self.buf.len())
    }
}

/// Finds the empty line that ends the head, searching from `from`:
/// returns (the head's length including its last line's LF, where the
/// body starts). A head that starts with an empty line has length 0.
fn find_end(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    if from == 0 {
        if buf.starts_with(b"\n") {
            return Some((0, 1));
        }
        if buf.starts_with(b"\r\n") {
            return Some((0, 2));
        }
    }
    let mut i = from;
    while let Some(off) = buf[i..].iter().position(|&b| b == b'\n') {
        let lf = i + off;
        match &buf[lf + 1..] {
            [b'\n', ..] => return Some((lf + 1, lf + 2)),
            [b'\r', b'\n', ..] => return Some((lf + 1, lf + 3)),
            _ => {}
        }
        i = lf + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The head read from `out` in one piece, by both entry points (they
    /// must agree).
    fn read(out: &[u8], mode: Mode) -> Result<(Reply, Bytes), HeadError> {
        let mut r = HeadReader::new(mode, MAX_HEAD_BYTES);
        let copied = r.push(out).and_then(|x| x.ok_or_else(|| r.truncated()));
        let mut r = HeadReader::new(mode, MAX_HEAD_BYTES);
        let sliced = r
            .push_bytes(Bytes::copy_from_slice(out))
            .and_then(|x| x.ok_or_else(|| r.truncated()));
        assert_eq!(copied, sliced, "{:?}", String::from_utf8_lossy(out));
        copied
    }

    fn doc(out: &[u8]) -> Head {
        match read(out, Mode::Cgi).unwrap().0 {
            Reply::Document(h) => h,
            other => panic!("{other:?}"),
        }
    }

    fn client_redirect(out: &[u8]) -> Head {
        match read(out, Mode::Cgi).unwrap().0 {
            Reply::ClientRedirect(h) => h,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_document_with_lf_or_crlf() {
        for out in [
            &b"Content-Type: text/plain\n\nHello!\n"[..],
            b"Content-Type: text/plain\r\n\r\nHello!\n",
            b"Content-type:text/plain  \n\nHello!\n",
        ] {
            let (reply, body) = read(out, Mode::Cgi).unwrap();
            let Reply::Document(h) = reply else {
                panic!("{reply:?}")
            };
            assert_eq!(h.status, StatusCode::OK);
            assert_eq!(h.headers["content-type"], "text/plain");
            assert_eq!(&body[..], b"Hello!\n");
        }
    }

    #[test]
    fn status_with_and_without_reason() {
        let h = doc(b"Status: 404 Nope\nContent-Type: text/html\n\n");
        assert_eq!(h.status, StatusCode::NOT_FOUND);
        assert_eq!(h.reason.as_deref(), Some(&b"Nope"[..]));
        let h = doc(b"Status: 404 Not Found\nContent-Type: text/html\n\n");
        assert_eq!(h.reason, None, "the standard phrase needs no override");
        let h = doc(b"Status: 204\n\n");
        assert_eq!(h.status, StatusCode::NO_CONTENT);
        for bad in [
            &b"Status: 20\n\n"[..],
            b"Status: 2000\n\n",
            b"Status: 100 Continue\n\n",
            b"Status: 600\n\n",
            b"Status: abc\n\n",
            b"Status: 200 OK\nStatus: 201\nContent-Type: a/b\n\n",
        ] {
            assert!(
                read(bad, Mode::Cgi).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn framing_and_hop_by_hop_fields_are_dropped() {
        let h = doc(
            b"Content-Type: a/b\nContent-Length: 99\nTransfer-Encoding: chunked\n\
              Connection: close\nX-CGI-Debug: 1\nSet-Cookie: a=1\nSet-Cookie: b=2\n\n",
        );
        let names: Vec<_> = h.headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["content-type", "set-cookie"]);
        let cookies: Vec<_> = h.headers.get_all("set-cookie").iter().collect();
        assert_eq!(cookies, ["a=1", "b=2"], "order kept");
    }

    /// A document's Content-Length is kept as its length when there is
    /// one value (or the same one again), no Transfer-Encoding, and a
    /// status with a body; it never stays among the fields.
    #[test]
    fn a_documents_own_length_is_kept_when_it_is_valid() {
        for (head, want) in [
            (&b"Content-Type: a/b\nContent-Length: 12\n\n"[..], Some(12)),
            (
                b"Content-Type: a/b\nContent-Length: 12\nContent-Length: 12\n\n",
                Some(12),
            ),
            (b"Content-Type: a/b\nContent-Length: 0\n\n", Some(0)),
            (
                b"Content-Type: a/b\nContent-Length: 12\nContent-Length: 13\n\n",
                None,
            ),
            (b"Content-Type: a/b\nContent-Length: 12, 12\n\n", None),
            (b"Content-Type: a/b\nContent-Length: +12\n\n", None),
            (b"Content-Type: a/b\nContent-Length: \n\n", None),
            (
                b"Content-Type: a/b\nContent-Length: 99999999999999999999\n\n",
                None,
            ),
            (
                b"Content-Type: a/b\nContent-Length: 12\nTransfer-Encoding: chunked\n\n",
                None,
            ),
            (b"Status: 204\nContent-Length: 12\n\n", None),
            (b"Status: 304\nContent-Length: 12\n\n", None),
            (
                b"Status: 404\nContent-Type: a/b\nContent-Length: 12\n\n",
                Some(12),
            ),
        ] {
            let h = doc(head);
            assert_eq!(h.length, want, "{:?}", String::from_utf8_lossy(head));
            assert!(h.headers.get("content-length").is_none());
        }
        let (r, _) = read(
            b"Location: https://example.com/\nContent-Length: 3\n\n",
            Mode::Cgi,
        )
        .unwrap();
        assert!(
            matches!(r, Reply::ClientRedirect(Head { length: None, .. })),
            "{r:?}"
        );
        let (r, _) = read(b"HTTP/1.1 200 OK\nContent-Length: 3\n\n", Mode::Nph).unwrap();
        assert!(
            matches!(
                r,
                Reply::Document(Head {
                    length: Some(3),
                    ..
                })
            ),
            "{r:?}"
        );
    }

    #[test]
    fn redirects_local_and_client() {
        let (r, _) = read(b"Location: /other?a=1\n\nignored", Mode::Cgi).unwrap();
        assert_eq!(r, Reply::LocalRedirect("/other?a=1".into()));
        let h = client_redirect(b"Location: https://example.com/x\n\n");
        assert_eq!(h.status, StatusCode::FOUND);
        assert_eq!(h.headers["location"], "https://example.com/x");
        // A Status with a local path is the script's own client redirect.
        let h = client_redirect(b"Status: 301\nLocation: /moved\n\n");
        assert_eq!(h.status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(h.headers["location"], "/moved");
        let (r, _) = read(b"Location: //cdn.example/x\n\n", Mode::Cgi).unwrap();
        assert!(matches!(r, Reply::ClientRedirect(_)), "{r:?}");
        // A relative reference goes to the client, as Apache and lighttpd
        // send it, with or without a Status.
        for out in [
            &b"Location: relative/x\n\n"[..],
            b"Status: 302 Found\nLocation: relative/x\n\n",
            b"Status: 200\nLocation: relative/x\n\n",
        ] {
            let h = client_redirect(out);
            assert_eq!(h.status, StatusCode::FOUND);
            assert_eq!(h.headers["location"], "relative/x");
        }
        // `Status: 200` with a local path: run here, as without a Status.
        let (r, _) = read(b"Status: 200 OK\nLocation: /here\n\n", Mode::Cgi).unwrap();
        assert_eq!(r, Reply::LocalRedirect("/here".into()));
        assert_eq!(
            read(b"Location: \n\n", Mode::Cgi).unwrap_err(),
            HeadError::BadLocation(String::new())
        );
        assert_eq!(
            read(b"Location: /a\nLocation: /b\n\n", Mode::Cgi).unwrap_err(),
            HeadError::Repeated("Location")
        );
    }

    #[test]
    fn header_injection_is_refused() {
        for (out, want) in [
            (
                &b"Content-Type: a/b\nX-Evil: a\rSet-Cookie: x=1\n\n"[..],
                HeadError::BadValue(2, "x-evil".into()),
            ),
            (
                b"Content-Type: a/b\nX-Evil: a\0b\n\n",
                HeadError::BadValue(2, "x-evil".into()),
            ),
            (
                b"Content-Type: a/b\nX-Evil: a\x1bb\n\n",
                HeadError::BadValue(2, "x-evil".into()),
            ),
            (b"Content-Type: a/b\n folded\n\n", HeadError::Folded(2)),
            (b"Content-Type: a/b\nno colon\n\n", HeadError::NotAField(2)),
            (b"Content Type: a/b\n\n", HeadError::BadName(1)),
            (b": a/b\n\n", HeadError::BadName(1)),
        ] {
            assert_eq!(read(out, Mode::Cgi).unwrap_err(), want);
        }
    }

    #[test]
    fn empty_truncated_garbage_and_oversized_heads() {
        assert_eq!(read(b"\nHello", Mode::Cgi).unwrap_err(), HeadError::Empty);
        assert_eq!(read(b"\r\nHello", Mode::Cgi).unwrap_err(), HeadError::Empty);
        assert_eq!(
            read(b"Content-Type: a/b\n", Mode::Cgi).unwrap_err(),
            HeadError::Truncated(18)
        );
        assert_eq!(
            read(b"Hello world!\n\n", Mode::Cgi).unwrap_err(),
            HeadError::NotAField(1)
        );
        assert_eq!(
            read(b"X-A: 1\n\n", Mode::Cgi).unwrap_err(),
            HeadError::NoContentType
        );
        let mut r = HeadReader::new(Mode::Cgi, 64);
        assert_eq!(r.push(&[b'a'; 60]).unwrap(), None);
        assert_eq!(r.push(&[b'a'; 10]).unwrap_err(), HeadError::TooLarge(64));
    }

    #[test]
    fn a_head_split_across_reads_at_every_byte() {
        let out = b"Status: 201 Made\r\nContent-Type: a/b\r\n\r\nbody";
        for cut in 0..out.len() {
            let mut r = HeadReader::new(Mode::Cgi, MAX_HEAD_BYTES);
            let first = r.push(&out[..cut]).unwrap();
            let (reply, body) = match first {
                Some((reply, body)) => (reply, [&body[..], &out[cut..]].concat().into()),
                None => r.push(&out[cut..]).unwrap().expect("complete"),
            };
            let body: Bytes = body;
            let Reply::Document(h) = reply else {
                panic!("{reply:?}")
            };
            assert_eq!(h.status, StatusCode::CREATED, "cut at {cut}");
            assert_eq!(&body[..], b"body", "cut at {cut}");
        }
    }

    #[test]
    fn nph_status_line_then_fields() {
        let (r, body) = read(
            b"HTTP/1.1 299 Custom\r\nContent-Type: a/b\r\nLocation: /kept\r\nContent-Length: 3\r\n\r\nabc",
            Mode::Nph,
        )
        .unwrap();
        let Reply::Document(h) = r else {
            panic!("{r:?}")
        };
        assert_eq!(h.status.as_u16(), 299);
        assert_eq!(h.reason.as_deref(), Some(&b"Custom"[..]));
        assert_eq!(h.headers["location"], "/kept");
        assert!(h.headers.get("content-length").is_none());
        assert_eq!(&body[..], b"abc");
        for bad in [
            &b"Content-Type: a/b\r\n\r\n"[..],
            b"HTTP/1.1 99\r\n\r\n",
            b"HTTP/1 200 OK\r\n\r\n",
        ] {
            assert!(matches!(
                read(bad, Mode::Nph).unwrap_err(),
                HeadError::BadStatus(_)
            ));
        }
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(data: Vec<u8>, nph: bool) {
            let mode = if nph { Mode::Nph } else { Mode::Cgi };
            let _ = parse(&data, mode);
            let mut r = HeadReader::new(mode, 256);
            let _ = r.push(&data);
        }

        #[test]
        fn accepted_values_never_hold_cr_lf_or_nul(value: Vec<u8>) {
            let mut out = b"Content-Type: a/b\nX-V: ".to_vec();
            out.extend_from_slice(&value);
            out.extend_from_slice(b"\n\n");
            if let Ok((Reply::Document(h), _)) = read(&out, Mode::Cgi) {
                for v in h.headers.values() {
                    proptest::prop_assert!(!v.as_bytes().iter().any(|b| matches!(b, b'\r' | b'\n' | 0)));
                }
            }
        }
    }
}
