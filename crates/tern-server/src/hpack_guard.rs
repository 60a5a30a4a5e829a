//! The error code of an HTTP/2 connection that fails on a field block.
//!
//! RFC 9113 §4.3: a field block that cannot be decoded is a connection
//! error of type COMPRESSION_ERROR (RFC 7541 §4.2, §6.3 name the cases of
//! the dynamic table size update). hyper's HTTP/2 (the `h2` crate) ends
//! such a connection with a GOAWAY, but reports every HPACK decoding error
//! as PROTOCOL_ERROR, and has no setting for it. This layer, on HTTP/2
//! connections only, follows the frames both ways:
//!
//! - reading, it checks each complete field block (HEADERS plus its
//!   CONTINUATIONs) with a small HPACK scanner that skips representations
//!   without decoding them (no Huffman, no table): a size update that is
//!   not at the start of the block or exceeds the table size tern
//!   advertises, or a block that ends inside a representation, is a
//!   decoding error h2 will refuse too;
//! - writing, once such a block has been seen, it rewrites the error code
//!   of h2's GOAWAY from PROTOCOL_ERROR to COMPRESSION_ERROR, in place (the
//!   same four bytes, so every count h2 sees stays true).
//!
//! The cost on a healthy connection is walking frame headers: no copy,
//! except of field blocks, which h2 copies too.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The client connection preface (RFC 9113 §3.4), before the first frame.
const PREFACE_LEN: usize = 24;
/// The dynamic table size tern's decoder allows: h2's default
/// SETTINGS_HEADER_TABLE_SIZE, which tern does not change.
const TABLE_SIZE: u64 = 4096;
/// Field blocks larger than this are not checked (h2 refuses them first).
const MAX_BLOCK: usize = 256 * 1024;

const HEADERS: u8 = 0x1;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The last byte of the 32-bit error codes (the others are zero).
const PROTOCOL_ERROR: u8 = 0x1;
const COMPRESSION_ERROR: u8 = 0x9;

/// Where a byte stream of frames stands: `have` bytes into a frame's
/// 9-byte header, or (`have == 9`) `at` bytes into its payload.
#[derive(Clone, Debug, Default)]
struct Frames {
    head: [u8; 9],
    have: usize,
    kind: u8,
    flags: u8,
    /// Payload bytes seen of the current frame.
    at: usize,
    len: usize,
}

/// What one byte was to [`Frames::step`].
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Part of a frame header.
    Head,
    /// The last byte of a frame header: `kind`, `flags` and `len` are the
    /// new frame's (whose payload may be empty).
    Started,
    /// The byte at this offset of the payload.
    Payload(usize),
}

impl Frames {
    /// Follows one byte.
    fn step(&mut self, b: u8) -> Step {
        if self.have < 9 {
            self.head[self.have] = b;
            self.have += 1;
            if self.have < 9 {
                return Step::Head;
            }
            self.len = usize::from(self.head[0]) << 16
                | usize::from(self.head[1]) << 8
                | usize::from(self.head[2]);
            self.kind = self.head[3];
            self.flags = self.head[4];
            self.at = 0;
            if self.len == 0 {
                self.have = 0;
            }
            return Step::Started;
        }
        let at = self.at;
        self.at += 1;
        if self.at == self.len {
            self.have = 0;
        }
        Step::Payload(at)
    }

    /// Whether the byte just stepped ended its frame.
    fn ended(&self) -> bool {
        self.have == 0
    }

    /// Passes over what `bytes` holds of the current frame's payload, whole:
    /// how many bytes that is (0 in a frame header).
    fn skip_payload(&mut self, bytes: &[u8]) -> usize {
        if self.have < 9 {
            return 0;
        }
        let take = (self.len - self.at).min(bytes.len());
        self.at += take;
        if self.at == self.len {
            self.have = 0;
        }
        take
    }

    /// Follows `bytes`, skipping over payloads whole.
    fn advance(&mut self, mut bytes: &[u8]) {
        while let Some(&b) = bytes.first() {
            match self.skip_payload(bytes) {
                0 => {
                    self.step(b);
                    bytes = &bytes[1..];
                }
                n => bytes = &bytes[n..],
            }
        }
    }
}

/// The read side: field blocks collected and checked.
#[derive(Debug, Default)]
struct Blocks {
    frames: Frames,
    skip_preface: usize,
    block: Vec<u8>,
    /// Bytes of this frame's payload before its fragment (pad length,
    /// priority) and after it (padding).
    pre: usize,
    pad: usize,
    too_big: bool,
}

impl Blocks {
    /// Follows `bytes`; true if a complete field block failed to decode.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        let mut bad = false;
        if self.skip_preface < PREFACE_LEN {
            let take = (PREFACE_LEN - self.skip_preface).min(bytes.len());
            self.skip_preface += take;
            bytes = &bytes[take..];
        }
        let mut i = 0;
        while i < bytes.len() {
            // Payloads other than field blocks are skipped whole.
            if !matches!(self.frames.kind, HEADERS | CONTINUATION) {
                let n = self.frames.skip_payload(&bytes[i..]);
                if n > 0 {
                    i += n;
                    continue;
                }
            }
            let b = bytes[i];
            i += 1;
            let at = match self.frames.step(b) {
                Step::Head => continue,
                Step::Started => {
                    bad |= self.frame_started();
                    continue;
                }
                Step::Payload(at) => at,
            };
            let (kind, flags, len, ended) = (
                self.frames.kind,
                self.frames.flags,
                self.frames.len,
                self.frames.ended(),
            );
            if matches!(kind, HEADERS | CONTINUATION) {
                if at == 0 && kind == HEADERS && flags & PADDED != 0 {
                    self.pad = usize::from(b);
                }
                let fragment_end = len.saturating_sub(self.pad);
                if at >= self.pre && at < fragment_end && !self.too_big {
                    if self.block.len() >= MAX_BLOCK {
                        self.too_big = true;
                        self.block = Vec::new();
                    } else {
                        self.block.push(b);
                    }
                }
                if ended && flags & END_HEADERS != 0 {
                    bad |= self.block_ended();
                }
            }
        }
        bad
    }

    /// A frame header is complete: set up for its payload. An empty
    /// frame that ends a block is checked here.
    fn frame_started(&mut self) -> bool {
        let f = &self.frames;
        match f.kind {
            HEADERS => {
                self.block.clear();
                self.too_big = false;
                self.pad = 0;
                self.pre =
                    usize::from(f.flags & PADDED != 0) + 5 * usize::from(f.flags & PRIORITY != 0);
            }
            CONTINUATION => {
                self.pre = 0;
                self.pad = 0;
            }
            _ => return false,
        }
        if f.len == 0 && f.flags & END_HEADERS != 0 {
            return self.block_ended();
        }
        false
    }

    fn block_ended(&mut self) -> bool {
        let bad = !self.too_big && !field_block_ok(&self.block, TABLE_SIZE);
        self.block.clear();
        bad
    }
}

/// Whether `block` scans as HPACK (RFC 7541 §6) with its dynamic table
/// size updates at its start, none above `max`. Names and values are
/// skipped by length; indices are not checked (that needs the table).
pub(crate) fn field_block_ok(block: &[u8], max: u64) -> bool {
    let mut pos = 0;
    let mut leading = true;
    while pos < block.len() {
        let b = block[pos];
        let ok = if b & 0x80 != 0 {
            leading = false;
            int(block, &mut pos, 7).is_some()
        } else if b & 0xc0 == 0x40 {
            leading = false;
            literal(block, &mut pos, 6)
        } else if b & 0xe0 == 0x20 {
            match int(block, &mut pos, 5) {
                Some(size) => leading && size <= max,
                None => false,
            }
        } else {
            leading = false;
            literal(block, &mut pos, 4)
        };
        if !ok {
            return false;
        }
    }
    true
}

/// A literal field: a name index (0: a literal name follows), then a value.
fn literal(block: &[u8], pos: &mut usize, prefix: u32) -> bool {
    let Some(index) = int(block, pos, prefix) else {
        return false;
    };
    (index != 0 || string(block, pos)) && string(block, pos)
}

/// A string literal: the Huffman bit, a 7-bit-prefix length, the bytes.
fn string(block: &[u8], pos: &mut usize) -> bool {
    let Some(len) = int(block, pos, 7) else {
        return false;
    };
    match usize::try_from(len).ok().and_then(|l| pos.checked_add(l)) {
        Some(end) if end <= block.len() => {
            *pos = end;
            true
        }
        _ => false,
    }
}

/// An integer with an N-bit prefix (RFC 7541 §5.1), at most 2^32.
fn int(block: &[u8], pos: &mut usize, prefix: u32) -> Option<u64> {
    let mask = (1u16 << prefix) as u8 - 1;
    let first = *block.get(*pos)? & mask;
    *pos += 1;
    if first < mask {
        return Some(u64::from(first));
    }
    let mut value = u64::from(mask);
    let mut shift = 0;
    loop {
        let b = *block.get(*pos)?;
        *pos += 1;
        value += u64::from(b & 0x7f) << shift;
        if value > u64::from(u32::MAX) {
            return None;
        }
        if b & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// An HTTP/2 connection's I/O with the COMPRESSION_ERROR correction.
#[derive(Debug)]
pub(crate) struct HpackGuard<T> {
    io: T,
    read: Blocks,
    written: Frames,
    /// A field block failed: h2's next GOAWAY is about it.
    failed: bool,
}

impl<T> HpackGuard<T> {
    pub(crate) fn new(io: T) -> Self {
        HpackGuard {
            io,
            read: Blocks::default(),
            written: Frames::default(),
            failed: false,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for HpackGuard<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let this = &mut *self;
            if this.read.feed(&buf.filled()[before..]) {
                this.failed = true;
            }
        }
        r
    }
}

impl<T> HpackGuard<T> {
    /// Where in `buf` the last byte of a GOAWAY's error code lies, if it
    /// does and says PROTOCOL_ERROR (its other three bytes are zero).
    fn code_at(&self, buf: &[u8]) -> Option<usize> {
        let mut probe = self.written.clone();
        let mut i = 0;
        while i < buf.len() {
            if probe.kind != GOAWAY {
                let n = probe.skip_payload(&buf[i..]);
                if n > 0 {
                    i += n;
                    continue;
                }
            }
            let b = buf[i];
            if probe.step(b) == Step::Payload(7) && probe.kind == GOAWAY {
                return (b == PROTOCOL_ERROR).then_some(i);
            }
            i += 1;
        }
        None
    }

    /// Follows the frames of bytes written.
    fn wrote(&mut self, bufs: &[io::IoSlice<'_>], mut n: usize) {
        for b in bufs {
            let take = n.min(b.len());
            self.written.advance(&b[..take]);
            n -= take;
            if n == 0 {
                break;
            }
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for HpackGuard<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.failed {
            // One slice at a time, the code patched in a copy of it.
            let buf = bufs
                .iter()
                .find(|b| !b.is_empty())
                .map_or(&[][..], |b| &**b);
            let n = match this.code_at(buf) {
                Some(i) => {
                    let mut fixed = buf[..=i].to_vec();
                    fixed[i] = COMPRESSION_ERROR;
                    std::task::ready!(Pin::new(&mut this.io).poll_write(cx, &fixed))?
                }
                None => std::task::ready!(Pin::new(&mut this.io).poll_write(cx, buf))?,
            };
            this.wrote(&[io::IoSlice::new(buf)], n);
            return Poll::Ready(Ok(n));
        }
        let n = std::task::ready!(Pin::new(&mut this.io).poll_write_vectored(cx, bufs))?;
        this.wrote(bufs, n);
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_scan() {
        // :method GET (indexed), a literal with a literal name, a size
        // update at the start.
        assert!(field_block_ok(&[0x82], 4096));
        assert!(field_block_ok(&[0x20, 0x82], 4096));
        assert!(field_block_ok(&[0x3f, 0xe1, 0x1f, 0x82], 4096)); // 4096
        assert!(field_block_ok(&[0x40, 1, b'a', 1, b'b'], 4096));
        assert!(field_block_ok(&[0x00, 1, b'a', 0x81, b'b'], 4096)); // Huffman bit, skipped
        assert!(field_block_ok(&[], 4096));
    }

    #[test]
    fn size_updates_too_large_or_late_and_truncations_fail() {
        assert!(!field_block_ok(&[0x3f, 0xe2, 0x1f, 0x82], 4096)); // 4097
        assert!(!field_block_ok(&[0x82, 0x20], 4096)); // at the end
        assert!(!field_block_ok(&[0x40, 1, b'a', 5, b'b'], 4096)); // short value
        assert!(!field_block_ok(&[0xff], 4096)); // unfinished integer
        assert!(!field_block_ok(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x7f], 4096)); // overflow
    }

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            kind,
            flags,
            0,
            0,
            0,
            1,
        ];
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn the_reader_follows_blocks_across_frames_and_reads() {
        let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bytes.extend(frame(0x4, 0, &[])); // SETTINGS
        bytes.extend(frame(HEADERS, 0, &[0x82, 0x40])); // block continues
        bytes.extend(frame(CONTINUATION, END_HEADERS, &[1, b'a', 1, b'b']));
        // Padded, with priority: pad 2, priority 5, fragment, padding.
        let mut p = vec![2, 0, 0, 0, 0, 16];
        p.extend_from_slice(&[0x82, 0, 0]);
        bytes.extend(frame(HEADERS, END_HEADERS | PADDED | PRIORITY, &p));
        for split in [1, 7, bytes.len()] {
            let mut b = Blocks::default();
            let bad = bytes.chunks(split).fold(false, |bad, c| bad | b.feed(c));
            assert!(!bad, "split {split}");
        }
        let mut bad_block = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        bad_block.extend(frame(HEADERS, END_HEADERS, &[0x3f, 0xe2, 0x1f, 0x82]));
        let mut b = Blocks::default();
        assert!(b.feed(&bad_block));
    }
}
