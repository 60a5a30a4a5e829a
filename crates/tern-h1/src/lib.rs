//! tern's HTTP/1.1 server codec, without I/O.
//!
//! # Design
//!
//! *Sans-io*: nothing here reads a socket, keeps a clock or spawns a task.
//! The connection layer owns the buffer and the socket; this crate only
//! looks at bytes it is given and says what they are:
//!
//! - [`parse_head`] reads a request head from the front of a buffer
//!   (`Ok(None)`: not complete yet) into `http` types ([`Parsed`]: method,
//!   target, version, header map), with what the fields mean for the
//!   connection: the body's [`Framing`], keep-alive, `100-continue`,
//!   upgrade, the number of `Host` fields. The head is copied once into a
//!   `Bytes`; the target and every value are slices of it.
//! - [`ChunkedDecoder`] and [`LengthDecoder`] (or [`BodyDecoder`] for
//!   either) split body data off a `BytesMut` without copying it, and
//!   leave what follows the body (a pipelined request) in place.
//! - [`encode_response_head`] writes a status line and fields with the
//!   framing the body needs; [`encode_chunk`] and [`encode_last_chunk`]
//!   frame a streamed body; [`DateCache`] formats `Date` once a second.
//!
//! # How strict
//!
//! Request framing is where smuggling lives, so the rule is: **as strict
//! as hyper 1.x** (whose HTTP/1 server tern used before; `proto/h1/role.rs`
//! and `decode.rs`), **stricter only where an RFC says MUST** or where
//! tern's own admission phase already refused the request, **never
//! looser** except for one thing tern has always accepted (`HTTP/1.2`).
//! `tests/differential.rs` holds hyper and this crate to that on a corpus
//! of odd and hostile requests. The decisions, with hyper's:
//!
//! - **Transfer-Encoding and Content-Length together**: the body is
//!   chunked, the `Content-Length` fields are dropped from the header map
//!   and the connection closes after the answer (hyper; RFC 9112 §6.3
//!   "MUST close"). As in hyper, a `Content-Length` *after*
//!   `Transfer-Encoding` is not even checked; one *before* it is.
//! - **Transfer-Encoding** on HTTP/1.0: 400. The last element of the last
//!   `Transfer-Encoding` field must be `chunked` (hyper: an empty last
//!   element, `chunked,`, is not), else 400. *Stricter than hyper*, as
//!   tern's admission phase was: `chunked` twice (`chunked, chunked`) is
//!   400 (RFC 9112 §6.1: applied once), and any other coding before it
//!   (`gzip, chunked`) is 501 (§6.1: a coding the server does not
//!   understand; tern decodes none).
//! - **Content-Length**: digits only (no sign, no inner space, not empty),
//!   at most `u64::MAX - 2` (hyper's largest length; hyper answers 431
//!   above it, this crate 400). Several fields with the same value are
//!   one; different values are 400. A comma list (`5, 5`) is 400: hyper
//!   does not split the field (RFC 9110 §8.6 only allows accepting it).
//! - **The request line and fields** are httparse's (as in hyper):
//!   leading empty lines are skipped, methods and header names must be
//!   tokens, the target must be visible ASCII (or UTF-8) without spaces
//!   and must parse as an `http::Uri`, values must have no control byte
//!   but HT (no NUL, no bare CR), obs-fold and whitespace before the colon
//!   are refused, bare LF line endings are accepted. All 400.
//! - **Versions**: `HTTP/1.0` and `HTTP/1.1`; `HTTP/1.2` to `HTTP/1.9` are
//!   read as 1.1 (RFC 9112 §2.3; tern did this in front of hyper, which
//!   refuses them); another well-formed version (`HTTP/2.0`) is 505
//!   (hyper: 400); a malformed one (`HTTP/1`, `http/1.1`) is 400.
//! - **Limits** ([`Limits`]): a head larger than `max_head_bytes` is 431
//!   (hyper: its read buffer, `max_buf_size`, the same bound), but 414
//!   when its request line alone is (hyper: 431); more than
//!   `max_headers` fields, 431; a target
//!   longer than `max_target`, 414 (hyper: only above 65534 bytes).
//! - **Host**: two `Host` fields are 400 (RFC 9112 §3.2 MUST; hyper does
//!   not look). A missing one is reported ([`Parsed::hosts`]), not
//!   refused: whether it is needed depends on the target's form.
//! - **Chunked bodies** as hyper decodes them: hex sizes (no sign, no
//!   `0x`), optional spaces or tabs after the size, extensions skipped but
//!   bounded over the whole body (`max_chunk_ext_bytes`) and without a
//!   bare LF, CRLF required after the size line and the data, trailer
//!   section under `max_trailer_bytes` and `max_headers` lines, parsed by
//!   httparse.
//!
//! # Fuzzing
//!
//! The fuzz target is `h1_request` in the repository's `fuzz/` crate
//! (cargo-fuzz, outside the workspace): `cargo +nightly fuzz run
//! h1_request` from the repository's root (needs `cargo install
//! cargo-fuzz`).
//!
//! # Unsafe code
//!
//! One call, in `head.rs`: a field's value that httparse passed and that
//! is ASCII becomes a `HeaderValue` without `http` checking every byte a
//! second time (a tenth of the head's parse). Debug builds, and so the
//! tests and the fuzz target, still check it, and panic if the two
//! crates ever disagree. Nothing else here is unsafe.
#![deny(unsafe_code)]

mod body;
mod date;
mod encode;
mod head;

pub use body::{BodyDecoder, BodyError, ChunkedDecoder, Decoded, LengthDecoder};
pub use date::DateCache;
pub use encode::{
    bodiless, encode_chunk, encode_chunk_header, encode_field, encode_last_chunk,
    encode_response_head, BodyEncoding, BodyLength, Encoded, ResponseHead, CHUNK_END,
};
pub use head::{line_too_long, parse_head, Framing, HeadError, Parsed, MAX_TARGET_CAP};

/// A `Content-Length` value as the codec reads one: `1*DIGIT` (no sign,
/// no spaces, no list) that fits a `u64`. (A request's length is further
/// bounded by [`parse_head`]; a response's is the handler's.)
pub fn digits(v: &[u8]) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        if b.is_ascii_digit() {
            n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// The limits a request is read under. The defaults are tern's
/// (`max_header_bytes`, `max_headers`, `max_uri_bytes` in its
/// configuration) and hyper's (trailers, chunk extensions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest request head, leading empty lines included (431).
    /// tern's `max_header_bytes`; hyper's bound was its read buffer,
    /// `max_buf_size`, which tern set to that but no lower than 8 KiB.
    pub max_head_bytes: usize,
    /// The most header fields in a head (431), and trailer lines in a
    /// chunked body.
    pub max_headers: usize,
    /// The longest request target (414); never more than
    /// [`MAX_TARGET_CAP`].
    pub max_target: usize,
    /// A chunked body's trailer section must be shorter than this.
    pub max_trailer_bytes: usize,
    /// A chunked body's extensions, all chunks together, must be shorter
    /// than this.
    pub max_chunk_ext_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_head_bytes: 16 << 10,
            max_headers: 100,
            max_target: 8 << 10,
            max_trailer_bytes: 16 << 10,
            max_chunk_ext_bytes: 16 << 10,
        }
    }
}
