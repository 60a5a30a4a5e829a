//! The request head: request line and header fields, and what they say
//! about the message's framing and the connection.

use std::mem::MaybeUninit;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Uri, Version};

use crate::Limits;

/// hyper's and `http`'s longest request target: `http::Uri` refuses
/// anything longer, so no limit can let a longer one through.
pub const MAX_TARGET_CAP: usize = (u16::MAX - 1) as usize;

/// Header slots kept on the stack; a larger `max_headers` uses the heap.
const STACK_HEADERS: usize = 100;

/// How the request's body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body: neither `Content-Length` nor `Transfer-Encoding`.
    None,
    /// `Content-Length`: exactly this many bytes (possibly 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A parsed request head.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The method.
    pub method: Method,
    /// The request target, as sent (origin, absolute, authority or
    /// asterisk form).
    pub target: Uri,
    /// `HTTP_10` or `HTTP_11` (`HTTP/1.2` to `HTTP/1.9` are read as 1.1).
    pub version: Version,
    /// The header fields, in order. With both `Transfer-Encoding` and
    /// `Content-Length`, the `Content-Length` fields are left out (the
    /// body is chunked; hyper does the same).
    pub headers: HeaderMap,
    /// Bytes of the buffer the head took, leading empty lines included:
    /// the body (or the next request) starts there.
    pub head_len: usize,
    /// How the body is delimited.
    pub framing: Framing,
    /// Whether the connection may carry another request after this one.
    pub keep_alive: bool,
    /// `Expect: 100-continue` on an HTTP/1.1 request with a body: the
    /// client may wait for `100 Continue` before sending it.
    pub expect_continue: bool,
    /// An HTTP/1.1 request with an `Upgrade` field and the `upgrade`
    /// connection option (RFC 9110 §7.8).
    pub upgrade: bool,
    /// The head has an `Expect` field, whatever it says.
    pub has_expect: bool,
    /// The head has an `Upgrade` field, with the connection option or
    /// without.
    pub has_upgrade: bool,
    /// How many `Host` fields the head had (0 or 1; two are refused).
    pub hosts: usize,
}

/// Why a request head was refused, and how to answer it. Every refusal
/// ends the connection: after a bad head, where the next request starts
/// is unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// The method is not a token.
    #[error("invalid method")]
    Method,
    /// The request target has a byte no target may have, or is no URI.
    #[error("invalid request target")]
    Target,
    /// The request target is longer than the limit.
    #[error("request target longer than {limit} bytes")]
    TargetTooLong {
        /// The limit applied.
        limit: usize,
    },
    /// The protocol version is malformed (`HTTP/1`, `http/1.1`, ...).
    #[error("malformed HTTP version")]
    Version,
    /// A well-formed version other than HTTP/1.x (`HTTP/2.0`, `HTTP/0.9`).
    #[error("unsupported HTTP version")]
    VersionNotSupported,
    /// A header line is malformed: an invalid name byte (space before the
    /// colon, obs-fold), an invalid value byte (NUL, bare CR), or a bad
    /// line ending.
    #[error("malformed header field ({0})")]
    Header(&'static str),
    /// The head (leading empty lines, request line and fields) is longer
    /// than the limit.
    #[error("request head larger than {limit} bytes")]
    HeadTooLarge {
        /// The limit applied.
        limit: usize,
    },
    /// More header fields than the limit.
    #[error("more than {limit} header fields")]
    TooManyHeaders {
        /// The limit applied.
        limit: usize,
    },
    /// A `Content-Length` that is not a decimal number in range.
    #[error("invalid Content-Length")]
    ContentLength,
    /// `Content-Length` fields with differing values.
    #[error("Content-Length fields with different values")]
    ContentLengthMismatch,
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    #[error("Transfer-Encoding in an HTTP/1.0 request")]
    TransferEncodingHttp10,
    /// `Transfer-Encoding` whose last coding is not `chunked`.
    #[error("chunked is not the last transfer coding")]
    ChunkedNotLast,
    /// `chunked` applied more than once.
    #[error("chunked applied more than once")]
    ChunkedTwice,
    /// A transfer coding other than `chunked` (which is all tern decodes).
    #[error("a transfer coding other than chunked")]
    UnsupportedCoding,
    /// More than one `Host` field.
    #[error("more than one Host field")]
    DuplicateHost,
}

impl HeadError {
    /// The status to answer with.
    pub fn status(&self) -> StatusCode {
        match self {
            HeadError::TargetTooLong { .. } => StatusCode::URI_TOO_LONG,
            HeadError::HeadTooLarge { .. } | HeadError::TooManyHeaders { .. } => {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            HeadError::VersionNotSupported => StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            HeadError::UnsupportedCoding => StatusCode::NOT_IMPLEMENTED,
            _ => StatusCode::BAD_REQUEST,
        }
    }
}

/// Whether the bytes of a head in `buf` fill `max_head_bytes` without
/// ending a line: the request line alone passes the head's limit, and its
/// target is what is too long (414, as nginx answers a line larger than
/// its buffers), not the fields. What [`parse_head`] says of such a head,
/// for a caller that hands it on unparsed.
pub fn line_too_long(buf: &[u8], max_head_bytes: usize) -> bool {
    buf.len() >= max_head_bytes && !buf[..max_head_bytes].contains(&b'\n')
}

/// Parses the request head at the start of `buf`.
///
/// `Ok(None)`: the head is not complete yet (read more and call again
/// with the longer buffer). An incomplete head that already fills
/// `limits.max_head_bytes` is [`HeadError::HeadTooLarge`].
pub fn parse_head(buf: &[u8], limits: &Limits) -> Result<Option<Parsed>, HeadError> {
    parse_window(buf, limits, true)
}

fn parse_window(
    buf: &[u8],
    limits: &Limits,
    may_settle: bool,
) -> Result<Option<Parsed>, HeadError> {
    if buf.is_empty() {
        return Ok(None);
    }
    let max_head = limits.max_head_bytes;
    let window = &buf[..buf.len().min(max_head)];
    let full = buf.len() >= max_head;
    let incomplete = || {
        if !full {
            Ok(None)
        } else if line_too_long(buf, max_head) {
            Err(HeadError::TargetTooLong {
                limit: limits.max_target.min(MAX_TARGET_CAP),
            })
        } else {
            Err(HeadError::HeadTooLarge { limit: max_head })
        }
    };

    let mut stack = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; STACK_HEADERS];
    let mut heap;
    let slots: &mut [MaybeUninit<httparse::Header<'_>>] = if limits.max_headers <= STACK_HEADERS {
        &mut stack[..limits.max_headers]
    } else {
        heap = vec![MaybeUninit::uninit(); limits.max_headers];
        &mut heap
    };
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(window, slots) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return incomplete(),
        Err(httparse::Error::Token) => {
            return Err(if req.method.is_none() {
                HeadError::Method
            } else {
                HeadError::Target
            });
        }
        Err(httparse::Error::Version) => {
            return match version_line(window) {
                VersionLine::Incomplete => incomplete(),
                VersionLine::Settle(at) if may_settle => {
                    let mut copy = window.to_vec();
                    copy[at] = b'1';
                    // The copy is as long as the window: the limit holds.
                    let parsed = parse_window(&copy, limits, false);
                    match parsed {
                        Ok(None) => incomplete(),
                        other => other,
                    }
                }
                VersionLine::Settle(_) | VersionLine::Malformed => Err(HeadError::Version),
                VersionLine::Unsupported => Err(HeadError::VersionNotSupported),
            };
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HeadError::TooManyHeaders {
                limit: limits.max_headers,
            });
        }
        Err(httparse::Error::HeaderName) => return Err(HeadError::Header("invalid name")),
        Err(httparse::Error::HeaderValue) => return Err(HeadError::Header("invalid value")),
        Err(httparse::Error::NewLine) => return Err(HeadError::Header("invalid line ending")),
        Err(httparse::Error::Status) => return Err(HeadError::Header("invalid request line")),
    };

    let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(HeadError::Header("incomplete request line"));
    };
    let max_target = limits.max_target.min(MAX_TARGET_CAP);
    if path.len() > max_target {
        return Err(HeadError::TargetTooLong { limit: max_target });
    }
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| HeadError::Method)?;
    let is_11 = minor == 1;
    let version = if is_11 {
        Version::HTTP_11
    } else {
        Version::HTTP_10
    };

    // One copy of the head; the target and every value are slices of it.
    let head = Bytes::copy_from_slice(&window[..len]);
    let base = window.as_ptr() as usize;
    // httparse's slices all point into `window`; anything else (never
    // seen) is copied rather than trusted.
    let slice_of = |s: &[u8]| match (s.as_ptr() as usize).checked_sub(base) {
        Some(start) if !s.is_empty() && start + s.len() <= head.len() => {
            head.slice(start..start + s.len())
        }
        _ => Bytes::copy_from_slice(s),
    };
    let target =
        Uri::from_maybe_shared(slice_of(path.as_bytes())).map_err(|_| HeadError::Target)?;

    let mut headers = HeaderMap::with_capacity(req.headers.len());
    let mut content_length: Option<u64> = None;
    let mut saw_cl = false;
    let mut saw_te = false;
    let mut te_last_chunked = false;
    let mut chunked_count = 0usize;
    let mut other_coding = false;
    let mut keep_alive = is_11;
    let mut saw_close = false;
    let mut expect = false;
    let mut has_expect = false;
    let mut upgrade_field = false;
    let mut upgrade_option = false;
    let mut hosts = 0usize;

    for field in req.headers.iter() {
        let name = field_name(field.name.as_bytes())?;
        let value = header_value(slice_of(field.value))?;
        match name {
            header::TRANSFER_ENCODING => {
                if !is_11 {
                    return Err(HeadError::TransferEncodingHttp10);
                }
                saw_te = true;
                if saw_cl && content_length.take().is_some() {
                    headers.remove(header::CONTENT_LENGTH);
                }
                te_last_chunked = last_coding_is_chunked(&value);
                for coding in value.as_bytes().split(|&b| b == b',') {
                    let coding = coding.trim_ascii();
                    if coding.is_empty() {
                        continue;
                    } else if coding.eq_ignore_ascii_case(b"chunked") {
                        chunked_count += 1;
                    } else {
                        other_coding = true;
                    }
                }
            }
            header::CONTENT_LENGTH => {
                saw_cl = true;
                if saw_te {
                    // The body is chunked; hyper neither checks nor keeps
                    // a Content-Length that follows Transfer-Encoding.
                    continue;
                }
                let n = decimal(value.as_bytes()).ok_or(HeadError::ContentLength)?;
                if let Some(prev) = content_length {
                    if prev != n {
                        return Err(HeadError::ContentLengthMismatch);
                    }
                    continue;
                }
                content_length = Some(n);
            }
            header::CONNECTION => {
                let options = ConnectionOptions::of(&value);
                if saw_close || options.close {
                    saw_close = true;
                    keep_alive = false;
                } else if !keep_alive {
                    keep_alive = options.keep_alive;
                }
                upgrade_option |= options.upgrade;
            }
            header::EXPECT => {
                has_expect = true;
                expect = value.as_bytes().eq_ignore_ascii_case(b"100-continue");
            }
            header::UPGRADE => upgrade_field = true,
            header::HOST => hosts += 1,
            _ => {}
        }
        headers.append(name, value);
    }

    let framing = if saw_te {
        if !te_last_chunked {
            return Err(HeadError::ChunkedNotLast);
        }
        if chunked_count > 1 {
            return Err(HeadError::ChunkedTwice);
        }
        if other_coding {
            return Err(HeadError::UnsupportedCoding);
        }
        if saw_cl {
            // RFC 9112 §6.3: the server MUST close after answering.
            keep_alive = false;
        }
        Framing::Chunked
    } else {
        match content_length {
            Some(n) => Framing::Length(n),
            None => Framing::None,
        }
    };
    if hosts > 1 {
        return Err(HeadError::DuplicateHost);
    }
    let has_body = !matches!(framing, Framing::None | Framing::Length(0));

    Ok(Some(Parsed {
        method,
        target,
        version,
        headers,
        head_len: len,
        framing,
        keep_alive,
        expect_continue: expect && is_11 && has_body,
        upgrade: is_11 && upgrade_field && upgrade_option,
        has_expect,
        has_upgrade: upgrade_field,
        hosts,
    }))
}

/// A field's name as `http` holds it. The names most requests carry are
/// matched here, as the constants `http` would give: `HeaderName::from_bytes`
/// copies each name through a lower-casing table before it matches, about
/// 140 instructions a name: a seventh of the head parse of a GET with
/// ab's four fields (session 36, docs/PERFORMANCE.md).
/// Anything else goes to `from_bytes`.
fn field_name(name: &[u8]) -> Result<HeaderName, HeadError> {
    let known = match name.len() {
        4 => folded(name, b"host", header::HOST),
        6 => folded(name, b"accept", header::ACCEPT)
            .or_else(|| folded(name, b"cookie", header::COOKIE)),
        7 => folded(name, b"referer", header::REFERER),
        10 => folded(name, b"user-agent", header::USER_AGENT)
            .or_else(|| folded(name, b"connection", header::CONNECTION)),
        13 => folded(name, b"if-none-match", header::IF_NONE_MATCH)
            .or_else(|| folded(name, b"cache-control", header::CACHE_CONTROL)),
        14 => folded(name, b"content-length", header::CONTENT_LENGTH),
        15 => folded(name, b"accept-encoding", header::ACCEPT_ENCODING)
            .or_else(|| folded(name, b"accept-language", header::ACCEPT_LANGUAGE)),
        17 => folded(name, b"if-modified-since", header::IF_MODIFIED_SINCE),
        _ => None,
    };
    match known {
        Some(known) => Ok(known),
        None => HeaderName::from_bytes(name).map_err(|_| HeadError::Header("invalid name")),
    }
}

/// `as_is` when `name` is `lower` in any case. `lower` holds only lower-case
/// letters and `-`, and httparse let through only token bytes: among those,
/// setting the 0x20 bit maps an upper-case letter to its lower case and
/// leaves every byte that could equal a byte of `lower` as it is.
fn folded(name: &[u8], lower: &[u8], as_is: HeaderName) -> Option<HeaderName> {
    let same = name.len() == lower.len() && name.iter().zip(lower).all(|(&a, &b)| a | 0x20 == b);
    same.then_some(as_is)
}

/// A field's value as `http` holds it. httparse let through only HTAB,
/// visible ASCII and obs-text, which is what `HeaderValue` accepts too;
/// checked again byte by byte, that was a tenth of the head's parse (350
/// of 4,200 instructions of a browser-less GET, docs/PERFORMANCE.md,
/// session 31). An ASCII value (the many) skips the second check; one
/// with obs-text takes it.
#[allow(
    unsafe_code,
    reason = "http's only constructor that does not check every byte again"
)]
fn header_value(bytes: Bytes) -> Result<HeaderValue, HeadError> {
    if bytes.is_ascii() {
        // SAFETY: `from_maybe_shared_unchecked` asks for UTF-8, and ASCII
        // is UTF-8. (That the bytes are a valid value, HTAB and visible
        // ASCII here, is httparse's check; debug builds check it again.)
        Ok(unsafe { HeaderValue::from_maybe_shared_unchecked(bytes) })
    } else {
        HeaderValue::from_maybe_shared(bytes).map_err(|_| HeadError::Header("invalid value"))
    }
}

/// hyper's test: the last element of the field's comma list, trimmed, is
/// `chunked` (an empty last element is not).
/// As in hyper, a value with bytes outside visible ASCII never is.
fn last_coding_is_chunked(v: &HeaderValue) -> bool {
    v.to_str().is_ok()
        && v.as_bytes()
            .rsplit(|&b| b == b',')
            .next()
            .is_some_and(|c| c.trim_ascii().eq_ignore_ascii_case(b"chunked"))
}

/// `1*DIGIT` as a `u64` no larger than hyper's largest body length
/// (`u64::MAX - 2`): no sign, no spaces, no list.
fn decimal(v: &[u8]) -> Option<u64> {
    crate::digits(v).filter(|&n| n <= u64::MAX - 2)
}

/// The options of one `Connection` field that matter here, each listed
/// or not (case-insensitively). One pass over the value: a pass per
/// option cost more than the rest of the field's parsing.
#[derive(Debug, Default, PartialEq, Eq)]
struct ConnectionOptions {
    close: bool,
    keep_alive: bool,
    upgrade: bool,
}

impl ConnectionOptions {
    /// A value with bytes outside visible ASCII lists nothing (as hyper).
    fn of(v: &HeaderValue) -> Self {
        let mut found = ConnectionOptions::default();
        // The usual field is one of two tokens, as clients write them.
        match v.as_bytes() {
            b"keep-alive" | b"Keep-Alive" => {
                found.keep_alive = true;
                return found;
            }
            b"close" => {
                found.close = true;
                return found;
            }
            _ => {}
        }
        let Ok(s) = v.to_str() else {
            return found;
        };
        for option in s.split(',').map(str::trim) {
            if option.eq_ignore_ascii_case("close") {
                found.close = true;
            } else if option.eq_ignore_ascii_case("keep-alive") {
                found.keep_alive = true;
            } else if option.eq_ignore_ascii_case("upgrade") {
                found.upgrade = true;
            }
        }
        found
    }
}

/// What is wrong with a request line httparse refused for its version.
#[derive(Debug, PartialEq, Eq)]
enum VersionLine {
    /// The line has not ended yet.
    Incomplete,
    /// `HTTP/1.2` to `HTTP/1.9`: read as 1.1 (RFC 9112 §2.3); the minor
    /// digit is at this offset.
    Settle(usize),
    /// `HTTP/x.y` with a major version other than 1.
    Unsupported,
    /// Anything else.
    Malformed,
}

/// Looks at the request line of `window` (after the empty lines httparse
/// skips); httparse has accepted its method and target, so the version
/// is what follows the second space.
fn version_line(window: &[u8]) -> VersionLine {
    let start = window
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(window.len());
    let rest = &window[start..];
    let Some(lf) = memchr::memchr(b'\n', rest) else {
        return VersionLine::Incomplete;
    };
    let line = &rest[..lf];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut spaces = memchr::memchr_iter(b' ', line);
    let (Some(_), Some(second)) = (spaces.next(), spaces.next()) else {
        return VersionLine::Malformed;
    };
    let v = &line[second + 1..];
    match v {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'2'..=b'9'] => {
            VersionLine::Settle(start + second + 1 + 7)
        }
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() && *major != b'1' =>
        {
            VersionLine::Unsupported
        }
        _ => VersionLine::Malformed,
    }
}

#[cfg(test)]
mod tests;
