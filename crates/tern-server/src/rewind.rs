//! A stream with bytes already read put back in front of it: what a
//! connection read to decide how to serve it (the first byte of a TLS
//! handshake, the HTTP/2 preface) is then read again by whoever serves it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, ReadBuf};

/// `io`, read after `prefix`.
#[derive(Debug)]
pub(crate) struct Rewind<T> {
    io: T,
    prefix: Bytes,
}

impl<T> Rewind<T> {
    pub(crate) fn new(io: T) -> Self {
        Rewind {
            io,
            prefix: Bytes::new(),
        }
    }

    /// The stream, and what of the prefix is still unread.
    pub(crate) fn into_parts(self) -> (T, Bytes) {
        (self.io, self.prefix)
    }

    /// Puts `prefix` back in front of what is still unread.
    pub(crate) fn unread(&mut self, prefix: Bytes) {
        debug_assert!(self.prefix.is_empty(), "one prefix at a time");
        self.prefix = prefix;
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Rewind<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.is_empty() {
            return Pin::new(&mut self.io).poll_read(cx, buf);
        }
        let n = self.prefix.len().min(buf.remaining());
        let head = self.prefix.split_to(n);
        buf.put_slice(&head);
        if self.prefix.is_empty() {
            // An empty `Bytes` split off a buffer still holds the whole
            // buffer: let it go, idle connections should cost little.
            self.prefix = Bytes::new();
        }
        Poll::Ready(Ok(()))
    }
}

write_through!(Rewind);

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    #[tokio::test]
    async fn bytes_put_back_come_first_then_the_stream() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let mut io = Rewind::new(ours);
        io.unread(Bytes::from_static(b"GET "));
        theirs.write_all(b"/ HTTP/1.1\r\n").await.unwrap();
        let mut buf = [0u8; 3];
        assert_eq!(io.read(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf, b"GET");
        let mut rest = [0u8; 64];
        assert_eq!(io.read(&mut rest).await.unwrap(), 1);
        let n = io.read(&mut rest).await.unwrap();
        assert_eq!(&rest[..n], b"/ HTTP/1.1\r\n");
    }
}
