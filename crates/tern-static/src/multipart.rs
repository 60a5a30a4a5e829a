//! `multipart/byteranges` (RFC 9110 §14.6): the part headers around each
//! range, laid out as body segments so the file bytes can stream between
//! them and the exact length is known up front.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::HeaderValue;

use crate::body::Segment;
use crate::range::ByteRange;

/// A multipart body's layout: a boundary and the segments in order.
#[derive(Debug)]
pub(crate) struct Multipart {
    pub(crate) content_type: HeaderValue,
    pub(crate) segments: Vec<Segment>,
}

impl Multipart {
    /// Lays out `ranges` of a representation of `len` bytes typed `part_type`.
    pub(crate) fn new(ranges: &[ByteRange], len: u64, part_type: &HeaderValue) -> Multipart {
        let boundary = boundary();
        let mut segments = Vec::with_capacity(ranges.len() * 2 + 1);
        for (i, r) in ranges.iter().enumerate() {
            let mut head = Vec::with_capacity(128);
            if i > 0 {
                head.extend_from_slice(b"\r\n");
            }
            head.extend_from_slice(b"--");
            head.extend_from_slice(boundary.as_bytes());
            head.extend_from_slice(b"\r\nContent-Type: ");
            head.extend_from_slice(part_type.as_bytes());
            head.extend_from_slice(
                format!(
                    "\r\nContent-Range: bytes {}-{}/{}\r\n\r\n",
                    r.start, r.end, len
                )
                .as_bytes(),
            );
            segments.push(Segment::Bytes(Bytes::from(head)));
            segments.push(Segment::File {
                offset: r.start,
                len: r.len(),
            });
        }
        segments.push(Segment::Bytes(Bytes::from(format!(
            "\r\n--{boundary}--\r\n"
        ))));
        let content_type = format!("multipart/byteranges; boundary={boundary}");
        Multipart {
            content_type: HeaderValue::try_from(content_type).expect("the boundary is ASCII"),
            segments,
        }
    }

    /// The total body length.
    pub(crate) fn len(&self) -> u64 {
        self.segments
            .iter()
            .map(|s| match s {
                Segment::Bytes(b) => b.len() as u64,
                Segment::File { len, .. } => *len,
            })
            .sum()
    }

    /// The whole body from a representation held in memory.
    pub(crate) fn assemble(&self, data: &Bytes) -> Bytes {
        let mut out = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        for s in &self.segments {
            match s {
                Segment::Bytes(b) => out.extend_from_slice(b),
                Segment::File { offset, len } => {
                    // Ranges were computed against this length, so they fit.
                    let start = *offset as usize;
                    out.extend_from_slice(&data[start..start + *len as usize]);
                }
            }
        }
        Bytes::from(out)
    }
}

/// A boundary unlikely to occur in any file: 64 random bits (std's
/// per-process hash keys, mixed with a counter) in hex.
fn boundary() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let bits = RandomState::new().hash_one(n);
    format!("tern-{bits:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_assembly() {
        let data = Bytes::from_static(b"0123456789");
        let ranges = [
            ByteRange { start: 0, end: 1 },
            ByteRange { start: 8, end: 9 },
        ];
        let m = Multipart::new(&ranges, 10, &HeaderValue::from_static("text/plain"));
        let ct = m.content_type.to_str().unwrap();
        let b = ct.strip_prefix("multipart/byteranges; boundary=").unwrap();
        let want = format!(
            "--{b}\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/10\r\n\r\n01\
             \r\n--{b}\r\nContent-Type: text/plain\r\nContent-Range: bytes 8-9/10\r\n\r\n89\
             \r\n--{b}--\r\n"
        );
        let got = m.assemble(&data);
        assert_eq!(got, want.as_bytes());
        assert_eq!(m.len(), want.len() as u64);
    }

    #[test]
    fn boundaries_differ() {
        assert_ne!(boundary(), boundary());
    }
}
