//! Request bodies: `Content-Length` and `chunked`, decoded from a buffer
//! the caller fills. Data comes out as `Bytes` split off that buffer (no
//! copy).

use bytes::{Buf as _, BufMut as _, Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};

use crate::head::Framing;
use crate::Limits;

/// One step of a body decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Body bytes (never empty), split off the input.
    Data(Bytes),
    /// The input is used up; call again with more.
    NeedMore,
    /// The body is complete; these are its trailer fields (usually none).
    /// Bytes after the body (a pipelined request) are left in the input.
    End(HeaderMap),
}

/// Why a body could not be decoded. The connection cannot be used after
/// one: where the next request starts is unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// The chunk size line is malformed (not hex, a sign, `0x`, a bare
    /// LF, a byte after the size other than whitespace, `;` or CR).
    #[error("invalid chunk size line")]
    ChunkSize,
    /// The chunk size does not fit in 64 bits.
    #[error("chunk size overflows")]
    ChunkSizeOverflow,
    /// Chunk extensions longer (over the whole body) than the limit.
    #[error("chunk extensions longer than {limit} bytes")]
    ExtensionsTooLong {
        /// The limit applied.
        limit: u64,
    },
    /// A chunk extension with a bare LF.
    #[error("chunk extension with a line feed")]
    ExtensionNewline,
    /// The chunk data is not followed by CRLF.
    #[error("chunk data not followed by CRLF")]
    ChunkDataEnd,
    /// The trailer section is malformed.
    #[error("invalid trailer section")]
    Trailers,
    /// The trailer section is longer than the limit.
    #[error("trailer section of {limit} bytes or more")]
    TrailersTooLarge {
        /// The limit applied.
        limit: usize,
    },
    /// More trailer lines than the limit.
    #[error("more than {limit} trailer fields")]
    TooManyTrailers {
        /// The limit applied.
        limit: usize,
    },
}

/// A `Content-Length` body.
#[derive(Debug, Clone)]
pub struct LengthDecoder {
    remaining: u64,
}

impl LengthDecoder {
    /// A decoder for a body of `len` bytes.
    pub fn new(len: u64) -> Self {
        LengthDecoder { remaining: len }
    }

    /// Bytes of the body still to come.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Takes body bytes from the front of `input`.
    pub fn decode(&mut self, input: &mut BytesMut) -> Decoded {
        if self.remaining == 0 {
            return Decoded::End(HeaderMap::new());
        }
        if input.is_empty() {
            return Decoded::NeedMore;
        }
        let n = usize::try_from(self.remaining).map_or(input.len(), |r| r.min(input.len()));
        self.remaining -= n as u64;
        Decoded::Data(input.split_to(n).freeze())
    }
}

/// Where a chunked decoder is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The first hex digit of a chunk size.
    Start,
    /// More hex digits, or what ends the size.
    Size,
    /// Whitespace after the size.
    SizeWs,
    /// A chunk extension, up to CR.
    Extension,
    /// The LF of the size line.
    SizeLf,
    /// Chunk data.
    Data,
    /// The CR after chunk data.
    DataCr,
    /// The LF after chunk data.
    DataLf,
    /// After the last chunk: CR of the end, or the first trailer byte.
    EndCr,
    /// In a trailer line, up to CR.
    Trailer,
    /// The LF of a trailer line.
    TrailerLf,
    /// The final LF.
    EndLf,
    /// Done.
    Done,
}

/// A `Transfer-Encoding: chunked` body (RFC 9112 §7.1), decoded as
/// strictly as hyper does: hex sizes only, optional spaces or tabs after
/// the size, extensions skipped (bounded over the whole body, no bare
/// LF), CRLF everywhere (a bare LF is an error, except inside the
/// trailer section, which httparse reads), trailers bounded in bytes and
/// lines.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    size: u64,
    ext_bytes: u64,
    trailers: BytesMut,
    trailer_lines: usize,
    failed: Option<BodyError>,
    max_ext_bytes: u64,
    max_trailer_bytes: usize,
    max_trailers: usize,
}

impl ChunkedDecoder {
    /// A decoder with the trailer and extension limits of `limits`.
    pub fn new(limits: &Limits) -> Self {
        ChunkedDecoder {
            state: State::Start,
            size: 0,
            ext_bytes: 0,
            trailers: BytesMut::new(),
            trailer_lines: 0,
            failed: None,
            max_ext_bytes: limits.max_chunk_ext_bytes,
            max_trailer_bytes: limits.max_trailer_bytes,
            max_trailers: limits.max_headers,
        }
    }

    /// Whether the body has been read to its end.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes from the front of `input`: the next data (split off it),
    /// `NeedMore` when it is used up, or `End` with the trailers. After an
    /// error, every call returns the same error.
    pub fn decode(&mut self, input: &mut BytesMut) -> Result<Decoded, BodyError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut used = 0;
        let step = self.scan(input, &mut used);
        input.advance(used);
        if let Err(e) = step {
            self.failed = Some(e.clone());
            return Err(e);
        }
        match self.state {
            State::Data if !input.is_empty() => {
                let n = usize::try_from(self.size).map_or(input.len(), |s| s.min(input.len()));
                self.size -= n as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                Ok(Decoded::Data(input.split_to(n).freeze()))
            }
            State::Done => Ok(Decoded::End(self.take_trailers()?)),
            _ => Ok(Decoded::NeedMore),
        }
    }

    /// Runs the state machine over the framing bytes of `input` from
    /// `*used`, stopping at chunk data, at the end, or when input runs out.
    fn scan(&mut self, input: &[u8], used: &mut usize) -> Result<(), BodyError> {
        while *used < input.len() {
            match self.state {
                State::Data | State::Done => return Ok(()),
                State::Extension => {
                    // Skip to the CR (or a forbidden LF) in one search.
                    let rest = &input[*used..];
                    let stop = memchr::memchr2(b'\r', b'\n', rest);
                    let skipped = stop.unwrap_or(rest.len()) as u64;
                    self.ext_bytes += skipped;
                    if self.ext_bytes >= self.max_ext_bytes {
                        return Err(BodyError::ExtensionsTooLong {
                            limit: self.max_ext_bytes,
                        });
                    }
                    *used += skipped as usize;
                    match stop.map(|i| rest[i]) {
                        Some(b'\r') => {
                            *used += 1;
                            self.state = State::SizeLf;
                        }
                        Some(_) => return Err(BodyError::ExtensionNewline),
                        None => return Ok(()),
                    }
                    continue;
                }
                _ => {}
            }
            let b = input[*used];
            *used += 1;
            self.state = match self.state {
                State::Start => {
                    self.size = u64::from(hex(b).ok_or(BodyError::ChunkSize)?);
                    State::Size
                }
                State::Size => match b {
                    b'\r' => State::SizeLf,
                    b';' => State::Extension,
                    b' ' | b'\t' => State::SizeWs,
                    _ => {
                        let d = hex(b).ok_or(BodyError::ChunkSize)?;
                        self.size = self
                            .size
                            .checked_mul(16)
                            .and_then(|s| s.checked_add(u64::from(d)))
                            .ok_or(BodyError::ChunkSizeOverflow)?;
                        State::Size
                    }
                },
                State::SizeWs => match b {
                    b'\r' => State::SizeLf,
                    b';' => State::Extension,
                    b' ' | b'\t' => State::SizeWs,
                    _ => return Err(BodyError::ChunkSize),
                },
                State::SizeLf => match b {
                    b'\n' if self.size == 0 => State::EndCr,
                    b'\n' => State::Data,
                    _ => return Err(BodyError::ChunkSize),
                },
                State::DataCr => match b {
                    b'\r' => State::DataLf,
                    _ => return Err(BodyError::ChunkDataEnd),
                },
                State::DataLf => match b {
                    b'\n' => State::Start,
                    _ => return Err(BodyError::ChunkDataEnd),
                },
                State::EndCr => {
                    self.push_trailer(b)?;
                    if b == b'\r' {
                        State::EndLf
                    } else {
                        State::Trailer
                    }
                }
                State::Trailer => {
                    self.push_trailer(b)?;
                    if b == b'\r' {
                        State::TrailerLf
                    } else {
                        State::Trailer
                    }
                }
                State::TrailerLf => {
                    if b != b'\n' {
                        return Err(BodyError::Trailers);
                    }
                    if self.trailer_lines >= self.max_trailers {
                        return Err(BodyError::TooManyTrailers {
                            limit: self.max_trailers,
                        });
                    }
                    self.trailer_lines += 1;
                    self.push_trailer(b)?;
                    State::EndCr
                }
                State::EndLf => {
                    if b != b'\n' {
                        return Err(BodyError::Trailers);
                    }
                    self.push_trailer(b)?;
                    State::Done
                }
                // Handled before the byte was taken: give it back.
                State::Data | State::Done | State::Extension => {
                    *used -= 1;
                    return Ok(());
                }
            };
            if self.state == State::Done {
                return Ok(());
            }
        }
        Ok(())
    }

    fn push_trailer(&mut self, b: u8) -> Result<(), BodyError> {
        self.trailers.put_u8(b);
        if self.trailers.len() >= self.max_trailer_bytes {
            return Err(BodyError::TrailersTooLarge {
                limit: self.max_trailer_bytes,
            });
        }
        Ok(())
    }

    /// The trailer fields read, parsed; empty when there were none.
    fn take_trailers(&mut self) -> Result<HeaderMap, BodyError> {
        if self.trailer_lines == 0 {
            self.trailers.clear();
            return Ok(HeaderMap::new());
        }
        let buf = std::mem::take(&mut self.trailers);
        let lines = std::mem::take(&mut self.trailer_lines);
        let mut slots = vec![httparse::EMPTY_HEADER; lines];
        let fields = match httparse::parse_headers(&buf, &mut slots) {
            Ok(httparse::Status::Complete((_, fields))) => fields,
            _ => return Err(self.fail(BodyError::Trailers)),
        };
        let mut map = HeaderMap::with_capacity(fields.len());
        for f in fields {
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(f.name.as_bytes()),
                HeaderValue::from_bytes(f.value),
            ) else {
                return Err(self.fail(BodyError::Trailers));
            };
            map.append(name, value);
        }
        Ok(map)
    }

    fn fail(&mut self, e: BodyError) -> BodyError {
        self.failed = Some(e.clone());
        e
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The decoder a request's [`Framing`] calls for.
#[derive(Debug, Clone)]
pub enum BodyDecoder {
    /// `Content-Length` (or no body: a length of 0).
    Length(LengthDecoder),
    /// `chunked`.
    Chunked(ChunkedDecoder),
}

impl BodyDecoder {
    /// The decoder for `framing`.
    pub fn new(framing: Framing, limits: &Limits) -> Self {
        match framing {
            Framing::None => BodyDecoder::Length(LengthDecoder::new(0)),
            Framing::Length(n) => BodyDecoder::Length(LengthDecoder::new(n)),
            Framing::Chunked => BodyDecoder::Chunked(ChunkedDecoder::new(limits)),
        }
    }

    /// One step: see [`ChunkedDecoder::decode`] and [`LengthDecoder::decode`].
    pub fn decode(&mut self, input: &mut BytesMut) -> Result<Decoded, BodyError> {
        match self {
            BodyDecoder::Length(d) => Ok(d.decode(input)),
            BodyDecoder::Chunked(d) => d.decode(input),
        }
    }
}

#[cfg(test)]
mod tests;
