//! A response's bytes on their way out: what the loop copies into its
//! write buffer (the head, small frames, chunk framing) and the large
//! frames it sends from their own buffers, in order, in one vectored
//! write.
//!
//! A script's answer comes in the pieces it was read in (a 64 KB
//! FastCGI answer is eight records of 8 KB): copied into one buffer they
//! cost a 64 KB allocation and a 64 KB `memcpy` a request, the largest
//! single item of that request's instructions (docs/PERFORMANCE.md,
//! "A script's answer in the pieces it came in"). Gathered as `iovec`s
//! they cost the kernel one `writev` and nothing here.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt as _};

/// A frame at most this long is copied behind what is pending: cheaper
/// than an `iovec` of its own for the kernel to walk.
const COPY_MAX: usize = 4 << 10;

/// Pieces gathered at most before they are written: tokio's vectored
/// write takes 64 buffers at a time.
const MAX_PIECES: usize = 64;

/// Parts room is made for at the first.
const FIRST_PARTS: usize = 16;

/// Bytes gathered at most before they are written, so a body whose
/// frames are all ready at once (a large answer in memory) starts
/// leaving before its last frame is taken.
const MAX_GATHERED: usize = 1 << 20;

/// The bytes of a response not yet written, in order: `parts`, then the
/// connection's write buffer (`out`, passed in by the caller, which keeps
/// it between responses). While written, the parts are read as one
/// [`Buf`] whose `chunks_vectored` gives each its own `iovec`.
#[derive(Debug, Default)]
pub(super) struct Gather {
    /// Buffers in order, none empty.
    parts: VecDeque<Bytes>,
    /// Their length.
    len: usize,
}

impl Gather {
    /// Takes `data` after what is pending: copied into `out` when small,
    /// or kept as it is; `coalesce` is the most `out` grows to.
    pub(super) fn push(&mut self, out: &mut BytesMut, data: Bytes, coalesce: usize) {
        if data.len() <= COPY_MAX {
            if out.len() + data.len() > coalesce {
                self.keep(out.split().freeze());
            }
            out.extend_from_slice(&data);
        } else {
            self.keep(out.split().freeze());
            self.keep(data);
        }
    }

    /// Whether no part is kept (what `out` holds aside).
    pub(super) fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Whether enough is gathered to write it before taking more.
    pub(super) fn full(&self) -> bool {
        self.parts.len() >= MAX_PIECES || self.len >= MAX_GATHERED
    }

    /// Writes everything pending, `out` last; both are left empty.
    pub(super) async fn write<S>(&mut self, io: &mut S, out: &mut BytesMut) -> std::io::Result<()>
    where
        S: AsyncWrite + Unpin,
    {
        if self.parts.is_empty() {
            io.write_all(out).await?;
            out.clear();
            return Ok(());
        }
        self.keep(out.split().freeze());
        io.write_all_buf(self).await
    }

    fn keep(&mut self, b: Bytes) {
        if !b.is_empty() {
            if self.parts.is_empty() {
                // Room for a script's answer in its pieces at once (a
                // 64 KB FastCGI answer is nine and the head): grown from
                // empty, the queue was reallocated three times.
                self.parts.reserve(FIRST_PARTS);
            }
            self.len += b.len();
            self.parts.push_back(b);
        }
    }
}

impl Buf for Gather {
    fn remaining(&self) -> usize {
        self.len
    }

    fn chunk(&self) -> &[u8] {
        self.parts.front().map_or(&[], |b| b)
    }

    fn advance(&mut self, mut n: usize) {
        assert!(n <= self.len, "advanced past the end");
        self.len -= n;
        while n > 0 {
            let Some(front) = self.parts.front_mut() else {
                break;
            };
            if n < front.len() {
                front.advance(n);
                break;
            }
            n -= front.len();
            self.parts.pop_front();
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for (slot, part) in dst.iter_mut().zip(&self.parts) {
            *slot = IoSlice::new(part);
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `step` bytes a call, vectored, and
    /// counts its calls.
    struct Short {
        got: Vec<u8>,
        step: usize,
        calls: usize,
    }

    impl AsyncWrite for Short {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.poll_write_vectored(cx, &[IoSlice::new(buf)])
        }

        fn poll_write_vectored(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> std::task::Poll<std::io::Result<usize>> {
            self.calls += 1;
            let mut room = self.step;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(room);
                self.got.extend_from_slice(&b[..take]);
                room -= take;
                n += take;
                if room == 0 {
                    break;
                }
            }
            std::task::Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    fn piece(byte: u8, len: usize) -> Bytes {
        Bytes::from(vec![byte; len])
    }

    #[tokio::test]
    async fn pieces_small_and_large_leave_in_order_in_one_write() {
        let mut out = BytesMut::from(&b"HEAD"[..]);
        let mut g = Gather::default();
        let mut want = b"HEAD".to_vec();
        for (i, len) in [10, 8184, 8184, 3, 0, 5000, 1].into_iter().enumerate() {
            let p = piece(b'a' + i as u8, len);
            want.extend_from_slice(&p);
            g.push(&mut out, p, 16 << 10);
        }
        let mut w = Short {
            got: Vec::new(),
            step: usize::MAX,
            calls: 0,
        };
        g.write(&mut w, &mut out).await.unwrap();
        assert_eq!(w.got, want);
        assert_eq!(w.calls, 1);
        assert!(out.is_empty() && g.parts.is_empty() && g.len == 0);
    }

    #[tokio::test]
    async fn a_write_cut_short_anywhere_goes_on_where_it_stopped() {
        for step in [1, 7, 4096, 8183, 8184, 8185, 20_000] {
            let mut out = BytesMut::new();
            let mut g = Gather::default();
            let mut want = Vec::new();
            for (i, len) in [100, 8184, 8184, 8184, 17].into_iter().enumerate() {
                let p = piece(b'a' + i as u8, len);
                want.extend_from_slice(&p);
                g.push(&mut out, p, 16 << 10);
            }
            let mut w = Short {
                got: Vec::new(),
                step,
                calls: 0,
            };
            g.write(&mut w, &mut out).await.unwrap();
            assert_eq!(w.got, want, "step {step}");
        }
    }

    #[test]
    fn small_frames_are_copied_until_the_buffer_is_full() {
        let mut out = BytesMut::new();
        let mut g = Gather::default();
        for _ in 0..4 {
            g.push(&mut out, piece(b'x', 4096), 10_000);
        }
        // 4096 + 4096 fit in 10,000; the third starts a new buffer.
        assert_eq!(g.parts.len(), 1);
        assert_eq!(g.len, 8192);
        assert_eq!(out.len(), 8192);
        assert!(!g.full());
    }
}
