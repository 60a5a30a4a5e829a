//! Response heads and chunked body framing.

use bytes::BufMut;
use http::header::{self, HeaderMap};
use http::{StatusCode, Version};

/// What the response body's length is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyLength {
    /// Exactly this many bytes.
    Known(u64),
    /// Streamed, length unknown.
    Unknown,
}

/// How the body that follows a head must be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEncoding {
    /// No body bytes at all (1xx, 204, 304, an answer to HEAD).
    None,
    /// Exactly this many bytes, as they are.
    Length(u64),
    /// Chunks ([`encode_chunk`], then [`encode_last_chunk`]).
    Chunked,
    /// The bytes as they are, then the connection closes (HTTP/1.0 and a
    /// body of unknown length).
    CloseDelimited,
}

/// A response head to encode.
#[derive(Debug, Clone, Copy)]
pub struct ResponseHead<'a> {
    /// The status.
    pub status: StatusCode,
    /// The handler's own reason phrase (a CGI script's `Status: 299
    /// Custom`, hyper's `ReasonPhrase`), written instead of the standard
    /// one, as hyper writes it. Checked free of CR and LF by its maker.
    pub reason: Option<&'a [u8]>,
    /// The request's version: `HTTP/1.0` answers 1.0, anything else 1.1.
    pub version: Version,
    /// Fields encoded before (`name: value\r\n` each), written first as
    /// they are: none of them `Connection`, `Transfer-Encoding` or `Date`,
    /// and none named in `headers`. Usually empty.
    pub lines: &'a [u8],
    /// `lines` hold the `Content-Length`, and it is the body's.
    pub lines_length: bool,
    /// The handler's fields. `Content-Length` and `Transfer-Encoding` are
    /// the encoder's to write and are skipped, except that on an answer
    /// to HEAD or a 304 with [`BodyLength::Unknown`] a `Content-Length`
    /// is kept (it describes the representation, RFC 9110 §8.6).
    pub headers: &'a HeaderMap,
    /// The body's length.
    pub body: BodyLength,
    /// The request was HEAD: no body is sent; a known length is still
    /// announced.
    pub head_request: bool,
    /// Whether the connection may stay open after this response (the
    /// request's `keep_alive`, and the server's own choice).
    pub keep_alive: bool,
}

/// What [`encode_response_head`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    /// How to write the body.
    pub body: BodyEncoding,
    /// Whether the connection stays open after the body (false when the
    /// head says `connection: close`).
    pub keep_alive: bool,
}

/// Writes a response head (status line, fields, framing, `date`,
/// `connection`) and the empty line that ends it. `date` is an
/// IMF-fixdate ([`DateCache`](crate::DateCache)), written unless the
/// handler set `Date` (or `date` is empty).
pub fn encode_response_head(
    dst: &mut impl BufMut,
    head: &ResponseHead<'_>,
    date: &[u8],
) -> Encoded {
    let status = head.status;
    let http10 = head.version == Version::HTTP_10;
    let bodiless_status = bodiless(status);

    dst.put_slice(if http10 { b"HTTP/1.0 " } else { b"HTTP/1.1 " });
    dst.put_slice(status.as_str().as_bytes());
    dst.put_u8(b' ');
    dst.put_slice(
        head.reason
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("").as_bytes()),
    );
    dst.put_slice(b"\r\n");
    dst.put_slice(head.lines);

    let keep_cl = (head.head_request || status == StatusCode::NOT_MODIFIED)
        && head.body == BodyLength::Unknown
        && !status.is_informational()
        && status != StatusCode::NO_CONTENT;
    let mut keep_alive = head.keep_alive;
    let mut wrote_close = false;
    let mut wrote_keep_alive = false;
    let mut wrote_len = head.lines_length;
    // Noted on the way past, not looked up after (a hash and a probe).
    let mut has_date = false;
    for (name, value) in head.headers {
        match *name {
            header::CONTENT_LENGTH if !keep_cl => {
                // The handler's own field, where it stands, when it gives
                // the body's length (as hyper writes it); else ours, below.
                if let BodyLength::Known(n) = head.body {
                    if !bodiless_status && !wrote_len && crate::digits(value.as_bytes()) == Some(n)
                    {
                        encode_field(dst, name.as_str().as_bytes(), value.as_bytes());
                        wrote_len = true;
                    }
                }
                continue;
            }
            header::TRANSFER_ENCODING => continue,
            header::DATE => has_date = true,
            header::CONNECTION => {
                let v = value.as_bytes();
                if has_token(v, b"close") {
                    keep_alive = false;
                    wrote_close = true;
                } else if has_token(v, b"keep-alive") {
                    wrote_keep_alive = true;
                }
            }
            _ => {}
        }
        encode_field(dst, name.as_str().as_bytes(), value.as_bytes());
    }

    // The framing, decided before anything is written: hyper's order is
    // the fields, `connection` (which the framing may change), then the
    // length or `transfer-encoding`, then `date`.
    let mut length_field = None;
    let body = if bodiless_status {
        BodyEncoding::None
    } else {
        match (head.body, head.head_request) {
            (BodyLength::Known(n), head_req) => {
                if !wrote_len {
                    length_field = Some(n);
                }
                if head_req {
                    BodyEncoding::None
                } else {
                    BodyEncoding::Length(n)
                }
            }
            (BodyLength::Unknown, true) => BodyEncoding::None,
            (BodyLength::Unknown, false) if http10 => {
                keep_alive = false;
                BodyEncoding::CloseDelimited
            }
            (BodyLength::Unknown, false) => BodyEncoding::Chunked,
        }
    };
    // HTTP/1.0 closes unless told otherwise: a closing 1.0 answer says
    // nothing (as hyper), a kept 1.0 connection says so.
    if !keep_alive && !wrote_close && !http10 {
        dst.put_slice(b"connection: close\r\n");
    } else if keep_alive && http10 && !wrote_keep_alive {
        dst.put_slice(b"connection: keep-alive\r\n");
    }
    if let Some(n) = length_field {
        put_content_length(dst, n);
    } else if body == BodyEncoding::Chunked {
        dst.put_slice(b"transfer-encoding: chunked\r\n");
    }
    if !date.is_empty() && !has_date {
        encode_field(dst, b"date", date);
    }
    dst.put_slice(b"\r\n");
    Encoded { body, keep_alive }
}

/// A status whose answer never has a body (1xx, 204, 304: RFC 9110
/// §6.4.1), whatever its fields say.
pub fn bodiless(status: StatusCode) -> bool {
    status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
}

/// Writes one field, `name: value` and its line end, as every head this
/// encoder writes has it (also a cached file's fields encoded once,
/// `tern_handler::SharedFields`).
pub fn encode_field(dst: &mut impl BufMut, name: &[u8], value: &[u8]) {
    dst.put_slice(name);
    dst.put_slice(b": ");
    dst.put_slice(value);
    dst.put_slice(b"\r\n");
}

fn put_content_length(dst: &mut impl BufMut, n: u64) {
    dst.put_slice(b"content-length: ");
    put_decimal(dst, n);
    dst.put_slice(b"\r\n");
}

fn put_decimal(dst: &mut impl BufMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    dst.put_slice(&digits[at..]);
}

fn has_token(v: &[u8], token: &[u8]) -> bool {
    v.split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// Writes the size line of a chunk of `len` bytes (not 0: that is the
/// last chunk), in upper-case hex as hyper writes it, so that a response
/// is the same bytes on either HTTP/1 loop. The caller writes the data,
/// then `\r\n` ([`CHUNK_END`]): for vectored writes of large data.
pub fn encode_chunk_header(dst: &mut impl BufMut, len: usize) {
    debug_assert!(len > 0, "a chunk of 0 bytes ends the body");
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    let mut n = len as u64;
    loop {
        at -= 1;
        digits[at] = b"0123456789ABCDEF"[(n & 15) as usize];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    dst.put_slice(&digits[at..]);
    dst.put_slice(b"\r\n");
}

/// What follows a chunk's data.
pub const CHUNK_END: &[u8] = b"\r\n";

/// Writes `data` as one chunk; nothing if it is empty (an empty chunk
/// would end the body).
pub fn encode_chunk(dst: &mut impl BufMut, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    encode_chunk_header(dst, data.len());
    dst.put_slice(data);
    dst.put_slice(CHUNK_END);
}

/// Writes the last chunk, the trailer fields if any, and the final CRLF.
pub fn encode_last_chunk(dst: &mut impl BufMut, trailers: Option<&HeaderMap>) {
    dst.put_slice(b"0\r\n");
    if let Some(trailers) = trailers {
        for (name, value) in trailers {
            encode_field(dst, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    dst.put_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn encode(head: ResponseHead<'_>) -> (String, Encoded) {
        let mut dst = Vec::new();
        let e = encode_response_head(&mut dst, &head, b"Wed, 25 Nov 2026 01:51:16 GMT");
        (String::from_utf8(dst).unwrap(), e)
    }

    fn head(headers: &HeaderMap) -> ResponseHead<'_> {
        ResponseHead {
            status: StatusCode::OK,
            reason: None,
            version: Version::HTTP_11,
            lines: b"",
            lines_length: false,
            headers,
            body: BodyLength::Known(5),
            head_request: false,
            keep_alive: true,
        }
    }

    #[test]
    fn known_length() {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("99"));
        let (s, e) = encode(head(&h));
        assert_eq!(
            s,
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\
             date: Wed, 25 Nov 2026 01:51:16 GMT\r\n\r\n"
        );
        assert_eq!(
            e,
            Encoded {
                body: BodyEncoding::Length(5),
                keep_alive: true
            }
        );
    }

    #[test]
    fn unknown_length_is_chunked_on_1_1_and_closes_on_1_0() {
        let h = HeaderMap::new();
        let (s, e) = encode(ResponseHead {
            body: BodyLength::Unknown,
            ..head(&h)
        });
        assert!(s.contains("transfer-encoding: chunked\r\n"), "{s}");
        assert_eq!(e.body, BodyEncoding::Chunked);
        let (s, e) = encode(ResponseHead {
            body: BodyLength::Unknown,
            version: Version::HTTP_10,
            ..head(&h)
        });
        assert!(s.starts_with("HTTP/1.0 200 OK\r\n"), "{s}");
        assert!(!s.contains("connection"), "{s}");
        assert!(!s.contains("transfer-encoding"), "{s}");
        assert_eq!(
            e,
            Encoded {
                body: BodyEncoding::CloseDelimited,
                keep_alive: false
            }
        );
    }

    #[test]
    fn no_framing_for_bodiless_statuses() {
        let h = HeaderMap::new();
        for status in [
            StatusCode::CONTINUE,
            StatusCode::SWITCHING_PROTOCOLS,
            StatusCode::NO_CONTENT,
            StatusCode::NOT_MODIFIED,
        ] {
            let (s, e) = encode(ResponseHead { status, ..head(&h) });
            assert!(!s.contains("content-length"), "{s}");
            assert!(!s.contains("transfer-encoding"), "{s}");
            assert_eq!(e.body, BodyEncoding::None);
        }
    }

    #[test]
    fn head_answers_announce_a_known_length_and_send_nothing() {
        let h = HeaderMap::new();
        let (s, e) = encode(ResponseHead {
            head_request: true,
            ..head(&h)
        });
        assert!(s.contains("content-length: 5\r\n"), "{s}");
        assert_eq!(e.body, BodyEncoding::None);
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_LENGTH, HeaderValue::from_static("1234"));
        let (s, e) = encode(ResponseHead {
            head_request: true,
            body: BodyLength::Unknown,
            ..head(&h)
        });
        assert!(s.contains("content-length: 1234\r\n"), "{s}");
        assert!(!s.contains("transfer-encoding"), "{s}");
        assert_eq!(e.body, BodyEncoding::None);
    }

    /// Whether `a` is in `s`, before `b`.
    fn before(s: &str, a: &str, b: &str) -> bool {
        matches!((s.find(a), s.find(b)), (Some(i), Some(j)) if i < j)
    }

    #[test]
    fn connection_fields() {
        let h = HeaderMap::new();
        let (s, e) = encode(ResponseHead {
            keep_alive: false,
            ..head(&h)
        });
        // hyper's order: the fields, `connection`, the length, `date`.
        assert!(
            before(&s, "connection: close\r\n", "content-length: 5\r\n"),
            "{s}"
        );
        assert!(before(&s, "content-length: 5\r\n", "date: "), "{s}");
        assert!(!e.keep_alive);
        let (s, _) = encode(ResponseHead {
            version: Version::HTTP_10,
            ..head(&h)
        });
        assert!(
            before(&s, "connection: keep-alive\r\n", "content-length: 5\r\n"),
            "{s}"
        );
        let mut h = HeaderMap::new();
        h.insert(header::CONNECTION, HeaderValue::from_static("Close"));
        h.insert(header::DATE, HeaderValue::from_static("x"));
        let (s, e) = encode(head(&h));
        assert_eq!(s.matches("onnection").count(), 1, "{s}");
        assert_eq!(s.matches("date").count(), 1, "{s}");
        assert!(!e.keep_alive);
    }

    #[test]
    fn lines_go_first_and_their_length_stands() {
        let mut h = HeaderMap::new();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        let (s, e) = encode(ResponseHead {
            lines: b"content-type: text/plain\r\ncontent-length: 5\r\n",
            lines_length: true,
            ..head(&h)
        });
        assert_eq!(
            s,
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\
             cache-control: no-cache\r\ndate: Wed, 25 Nov 2026 01:51:16 GMT\r\n\r\n"
        );
        assert_eq!(e.body, BodyEncoding::Length(5));
        // Lines without a length: the encoder writes it.
        let (s, _) = encode(ResponseHead {
            lines: b"content-type: text/plain\r\n",
            ..head(&HeaderMap::new())
        });
        assert!(
            before(&s, "content-type: text/plain\r\n", "content-length: 5\r\n"),
            "{s}"
        );
    }

    #[test]
    fn unknown_reason_phrase() {
        let h = HeaderMap::new();
        let (s, _) = encode(ResponseHead {
            status: StatusCode::from_u16(599).unwrap(),
            ..head(&h)
        });
        assert!(s.starts_with("HTTP/1.1 599 \r\n"), "{s}");
        let (s, _) = encode(ResponseHead {
            status: StatusCode::from_u16(299).unwrap(),
            reason: Some(b"Custom Thing"),
            ..head(&h)
        });
        assert!(s.starts_with("HTTP/1.1 299 Custom Thing\r\n"), "{s}");
    }

    #[test]
    fn chunks() {
        let mut dst = Vec::new();
        encode_chunk(&mut dst, b"hello");
        encode_chunk(&mut dst, b"");
        encode_chunk(&mut dst, &[b'x'; 300]);
        let mut t = HeaderMap::new();
        t.insert("x-sum", HeaderValue::from_static("1"));
        encode_last_chunk(&mut dst, Some(&t));
        let mut want = b"5\r\nhello\r\n12C\r\n".to_vec();
        want.extend_from_slice(&[b'x'; 300]);
        want.extend_from_slice(b"\r\n0\r\nx-sum: 1\r\n\r\n");
        assert_eq!(dst, want);
    }
}
