//! HTTP/1.1 on the wire, without I/O: the request bytes (built once per
//! target), the reading of a response head into a framing decision, and a
//! chunked-body scanner that finds where a body ends without copying it.

use std::mem::MaybeUninit;

use bytes::Bytes;

use crate::plan::{RequestSpec, Reuse, Target};

/// Builds the bytes of a request, once per target: the hot path only writes
/// them. Headers: `Host`, `User-Agent`, `Accept` (as ab sends), then the
/// user's (which replace ours by name), then `Connection: close` without
/// keep-alive, then `Content-Length` when there is a body or the method
/// usually has one.
pub(crate) fn request_bytes(target: &Target, spec: &RequestSpec, reuse: Reuse) -> Bytes {
    let has = |name: &str| {
        spec.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let mut out = String::with_capacity(128 + spec.body.len());
    out.push_str(spec.method.as_str());
    out.push(' ');
    out.push_str(&target.path);
    out.push_str(" HTTP/1.1\r\n");
    if !has("host") {
        let host = if target.port == target.default_port() {
            if target.host.contains(':') {
                format!("[{}]", target.host)
            } else {
                target.host.clone()
            }
        } else {
            target.authority()
        };
        out.push_str("Host: ");
        out.push_str(&host);
        out.push_str("\r\n");
    }
    if !has("user-agent") {
        out.push_str(concat!(
            "User-Agent: tern-bench/",
            env!("CARGO_PKG_VERSION"),
            "\r\n"
        ));
    }
    if !has("accept") {
        out.push_str("Accept: */*\r\n");
    }
    for (name, value) in &spec.headers {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(value);
        out.push_str("\r\n");
    }
    if reuse == Reuse::Close && !has("connection") {
        out.push_str("Connection: close\r\n");
    }
    let body_expected = matches!(spec.method.as_str(), "POST" | "PUT" | "PATCH");
    if (!spec.body.is_empty() || body_expected) && !has("content-length") {
        out.push_str(&format!("Content-Length: {}\r\n", spec.body.len()));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&spec.body);
    Bytes::from(bytes)
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body (HEAD, 204, 304).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the server closes the connection.
    UntilClose,
}

/// What a parsed head tells the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// Length of the head in bytes.
    pub(crate) len: usize,
    /// Status code.
    pub(crate) status: u16,
    /// An interim (1xx, not 101) response: another head follows.
    pub(crate) interim: bool,
    /// How the body ends.
    pub(crate) framing: Framing,
    /// The connection may carry another request afterwards.
    pub(crate) reusable: bool,
    /// The `Server` header, if asked for.
    pub(crate) server: Option<String>,
}

/// Why a head could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeadError {
    /// More bytes needed.
    Partial,
    /// Not HTTP, or contradictory framing.
    Invalid,
}

/// Maximum headers in a response head; more is a protocol error.
const MAX_HEADERS: usize = 96;

/// Parses a response head at the start of `buf`.
pub(crate) fn parse_head(
    buf: &[u8],
    head_request: bool,
    capture_server: bool,
) -> Result<Head, HeadError> {
    // Uninitialised header slots: no per-response cost for the 96 slots.
    let mut headers = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Err(HeadError::Partial),
        Err(_) => return Err(HeadError::Invalid),
    };
    let status = resp.code.ok_or(HeadError::Invalid)?;
    let http11 = resp.version == Some(1);
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut close = !http11;
    let mut server = None;
    for h in resp.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or(HeadError::Invalid)?;
            if length.is_some_and(|l| l != v) {
                return Err(HeadError::Invalid);
            }
            length = Some(v);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            // Chunked only counts as the final coding.
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && !http11 {
                    close = false;
                }
            }
        } else if capture_server && server.is_none() && name.eq_ignore_ascii_case("server") {
            server = Some(String::from_utf8_lossy(h.value).into_owned());
        }
    }
    let interim = (100..200).contains(&status) && status != 101;
    let framing = if head_request || interim || status == 204 || status == 304 {
        Framing::Empty
    } else if chunked {
        Framing::Chunked
    } else if let Some(l) = length {
        Framing::Length(l)
    } else {
        Framing::UntilClose
    };
    Ok(Head {
        len,
        status,
        interim,
        framing,
        reusable: !close && framing != Framing::UntilClose && status != 101,
        server,
    })
}

/// Finds the end of a chunked body in a stream of bytes, without keeping any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ChunkedScanner {
    state: ChunkState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading the hex digits of a chunk size.
    Size { size: u64, digits: bool },
    /// Past the digits: extensions, spaces, CR, until LF.
    SizeLine { size: u64 },
    /// In chunk data.
    Data { left: u64 },
    /// Expecting CRLF after chunk data.
    DataEnd { seen_cr: bool },
    /// After the last chunk: trailer lines; `empty` = nothing yet on this line.
    Trailer { empty: bool },
    /// The body is complete.
    Done,
}

impl Default for ChunkState {
    fn default() -> ChunkState {
        ChunkState::Size {
            size: 0,
            digits: false,
        }
    }
}

/// Result of feeding bytes to the scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// All bytes belong to the body; more are needed.
    More,
    /// The body ends after this many of the fed bytes.
    Done(usize),
}

impl ChunkedScanner {
    /// Feeds the next bytes of the body.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Scan, HeadError> {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.state {
                ChunkState::Size { size, digits } => {
                    if let Some(d) = (b as char).to_digit(16) {
                        let size = size
                            .checked_mul(16)
                            .and_then(|s| s.checked_add(u64::from(d)))
                            .ok_or(HeadError::Invalid)?;
                        self.state = ChunkState::Size { size, digits: true };
                    } else if !digits {
                        return Err(HeadError::Invalid);
                    } else if b == b'\n' {
                        self.state = after_size_line(size);
                    } else {
                        self.state = ChunkState::SizeLine { size };
                    }
                    i += 1;
                }
                ChunkState::SizeLine { size } => {
                    if b == b'\n' {
                        self.state = after_size_line(size);
                    }
                    i += 1;
                }
                ChunkState::Data { left } => {
                    let take = left.min((bytes.len() - i) as u64);
                    i += take as usize;
                    self.state = match left - take {
                        0 => ChunkState::DataEnd { seen_cr: false },
                        left => ChunkState::Data { left },
                    };
                }
                ChunkState::DataEnd { seen_cr } => {
                    self.state = match (b, seen_cr) {
                        (b'\r', false) => ChunkState::DataEnd { seen_cr: true },
                        (b'\n', _) => ChunkState::default(),
                        _ => return Err(HeadError::Invalid),
                    };
                    i += 1;
                }
                ChunkState::Trailer { empty } => {
                    i += 1;
                    match b {
                        b'\n' if empty => {
                            self.state = ChunkState::Done;
                            return Ok(Scan::Done(i));
                        }
                        b'\n' => self.state = ChunkState::Trailer { empty: true },
                        b'\r' => {}
                        _ => self.state = ChunkState::Trailer { empty: false },
                    }
                }
                ChunkState::Done => return Ok(Scan::Done(i)),
            }
        }
        Ok(if self.state == ChunkState::Done {
            Scan::Done(i)
        } else {
            Scan::More
        })
    }
}

fn after_size_line(size: u64) -> ChunkState {
    if size == 0 {
        ChunkState::Trailer { empty: true }
    } else {
        ChunkState::Data { left: size }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_all(body: &[u8], step: usize) -> Result<Option<usize>, HeadError> {
        let mut s = ChunkedScanner::default();
        let mut at = 0;
        for piece in body.chunks(step) {
            if let Scan::Done(n) = s.feed(piece)? {
                return Ok(Some(at + n));
            }
            at += piece.len();
        }
        Ok(None)
    }

    #[test]
    fn chunked_end_is_found_in_any_split() {
        let body = b"5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: y\r\n\r\nNEXT";
        let end = body.len() - 4;
        for step in [1, 2, 3, 7, 100] {
            assert_eq!(scan_all(body, step), Ok(Some(end)), "step {step}");
        }
        assert_eq!(scan_all(b"0\r\n\r\n", 1), Ok(Some(5)));
        assert_eq!(scan_all(b"5\r\nhel", 2), Ok(None));
        assert_eq!(scan_all(b"zz\r\n", 1), Err(HeadError::Invalid));
        assert_eq!(scan_all(b"2\r\nabX\r\n", 1), Err(HeadError::Invalid));
        assert_eq!(
            scan_all(b"ffffffffffffffffff\r\n", 4),
            Err(HeadError::Invalid)
        );
    }

    #[test]
    fn heads_decide_framing_and_reuse() {
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x/1\r\n\r\nhello",
            false,
            true,
        )
        .unwrap();
        assert_eq!(
            (h.status, h.framing, h.reusable, h.server.as_deref()),
            (200, Framing::Length(5), true, Some("x/1"))
        );
        assert_eq!(h.len, 51);
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n",
            false,
            false,
        )
        .unwrap();
        assert_eq!(
            (h.framing, h.reusable, h.server),
            (Framing::Chunked, false, None)
        );
        let h = parse_head(
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            false,
            false,
        )
        .unwrap();
        assert!(!h.reusable);
        let h = parse_head(
            b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n",
            false,
            false,
        )
        .unwrap();
        assert!(h.reusable);
        let h = parse_head(b"HTTP/1.1 200 OK\r\n\r\n", false, false).unwrap();
        assert_eq!((h.framing, h.reusable), (Framing::UntilClose, false));
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true, false).unwrap();
        assert_eq!(h.framing, Framing::Empty);
        let h = parse_head(b"HTTP/1.1 100 Continue\r\n\r\n", false, false).unwrap();
        assert!(h.interim);
        let h = parse_head(
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
            false,
            false,
        )
        .unwrap();
        assert_eq!(h.framing, Framing::Empty);
        assert_eq!(
            parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false, false),
            Err(HeadError::Partial)
        );
        assert_eq!(
            parse_head(b"SSH-2.0-OpenSSH\r\n\r\n", false, false),
            Err(HeadError::Invalid)
        );
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n";
        assert_eq!(parse_head(two, false, false), Err(HeadError::Invalid));
    }

    #[test]
    fn request_bytes_follow_the_plan() {
        let t = Target::parse("http://127.0.0.1:8080/x?y").unwrap();
        let spec = RequestSpec::default();
        let r = request_bytes(&t, &spec, Reuse::Close);
        assert_eq!(
            std::str::from_utf8(&r).unwrap(),
            concat!(
                "GET /x?y HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: tern-bench/",
                env!("CARGO_PKG_VERSION"),
                "\r\nAccept: */*\r\nConnection: close\r\n\r\n"
            )
        );
        let spec = RequestSpec {
            method: http::Method::POST,
            headers: vec![
                ("Host".into(), "example".into()),
                ("X-A".into(), "1".into()),
            ],
            body: Bytes::from_static(b"abc"),
        };
        let r = request_bytes(
            &Target::parse("http://h/").unwrap(),
            &spec,
            Reuse::KeepAlive,
        );
        let text = std::str::from_utf8(&r).unwrap();
        assert!(text.starts_with("POST / HTTP/1.1\r\nUser-Agent"), "{text}");
        assert!(
            text.contains("Host: example\r\nX-A: 1\r\nContent-Length: 3\r\n\r\nabc"),
            "{text}"
        );
        assert!(!text.contains("Connection"));
    }
}
