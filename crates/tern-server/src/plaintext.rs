//! The plaintext stream hyper reads, over the connection's timed (and, with
//! TLS, decrypted) I/O. Three things that need the bytes as HTTP sees them:
//!
//! - bytes read ahead to tell HTTP/1 from HTTP/2 are put back first;
//! - on HTTP/1, the first bytes of each request head have their version
//!   settled (`version::settle`: `HTTP/1.2` is read as 1.1);
//! - a client that half-closes after a request that asked to close the
//!   connection (`Connection: close`, HTTP/1.0; `nc -N`, health checkers)
//!   still gets its answer: the end of file is held back while that request
//!   is in flight, and while a write of its answer waits for the socket
//!   (hyper reads between buffering an answer's end and flushing it, and
//!   takes an end of file there for a client that left: the answer was
//!   lost). From a client that meant to keep the connection, the same FIN
//!   in the middle of a request means it left, and it is passed on (hyper
//!   then stops the handler);
//! - the end of HTTP on the connection (hyper's shutdown when it is done
//!   with it) shuts the stream down (TLS's close_notify, a socket's FIN),
//!   but only flushes a connection that moves to another worker between
//!   two requests (see `conn.rs`). hyper flushes what it buffered before
//!   it shuts down, so ending through here is how its last bytes are sure
//!   to go out. (The FIN must go before the close: a socket closed with
//!   bytes unread resets, and the reset can destroy what the client has
//!   not read yet.)
//!
//! The timeouts sit below this layer (`timeout.rs`), so that under TLS they
//! count the handshake too.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::rewind::Rewind;
use crate::timeout::Activity;

/// A connection's plaintext stream.
#[derive(Debug)]
pub(crate) struct Plaintext<T> {
    /// With the bytes read ahead to choose the protocol put back.
    io: Rewind<T>,
    activity: Arc<Activity>,
    /// HTTP/1: settle each request line's minor version.
    http1: bool,
    /// `Activity::started` when a request head last began arriving: the
    /// head that follows that many requests has been settled.
    settled: u32,
    /// The last write waited for the socket: what was written is not all
    /// out.
    waiting_write: bool,
    /// An end of file was passed on: the client is done sending.
    client_done: bool,
    /// The stream was shut down (not left open to move): the answer went
    /// out whole, and the client was told the connection ends.
    shut: bool,
}

impl<T> Plaintext<T> {
    pub(crate) fn new(io: T, activity: Arc<Activity>) -> Self {
        Plaintext {
            io: Rewind::new(io),
            activity,
            http1: false,
            settled: 0,
            waiting_write: false,
            client_done: false,
            shut: false,
        }
    }

    /// Whether the stream was shut down.
    pub(crate) fn shut(&self) -> bool {
        self.shut
    }

    /// Whether HTTP ended on the connection by shutting the stream down
    /// while the client had not said it is done sending: bytes it sends
    /// may still arrive, and a socket closed with bytes unread resets.
    pub(crate) fn shut_with_client_sending(&self) -> bool {
        self.shut && !self.client_done
    }

    /// The stream, and bytes put back that are still unread.
    pub(crate) fn into_parts(self) -> (T, Bytes) {
        self.io.into_parts()
    }

    /// Puts bytes already read back in front of the stream.
    pub(crate) fn unread(&mut self, prefix: Bytes) {
        self.io.unread(prefix);
    }

    /// The connection speaks HTTP/1, and the head that began arriving has
    /// been settled by the caller: each later head is settled here.
    pub(crate) fn set_http1(&mut self) {
        self.http1 = true;
        self.settled = self.activity.started();
    }

    /// Whether an end of file just read is held back (see the module doc):
    /// the request in flight, or the last, asked to close, and it or a
    /// write of its answer is still under way.
    fn half_closed(&self) -> bool {
        self.activity.closing() && (self.activity.busy() || self.waiting_write)
    }

    /// Notes whether a write waits for the socket (`write_through!`).
    #[inline(always)]
    fn written(
        &mut self,
        _cx: &mut Context<'_>,
        written: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        self.waiting_write = written.is_pending();
        written
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Plaintext<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = res {
            let read = buf.filled().len() - before;
            if read == 0 && buf.remaining() > 0 && self.half_closed() {
                // Not yet: hyper would take the EOF for a client that
                // left. Nothing wakes this read again; the answer, when it
                // is ready, wakes the connection, which then closes.
                return Poll::Pending;
            }
            if read == 0 && buf.remaining() > 0 {
                self.client_done = true;
            }
            if read > 0 && self.http1 && !self.activity.busy() {
                let started = self.activity.started();
                if started != self.settled {
                    // The first bytes of a new request head.
                    self.settled = started;
                    crate::version::settle(&mut buf.filled_mut()[before..]);
                }
            }
        }
        res
    }
}

impl<T: AsyncWrite + Unpin> Plaintext<T> {
    fn poll_end(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.activity.moving() {
            return Pin::new(&mut self.io).poll_flush(cx);
        }
        let shut = ready!(Pin::new(&mut self.io).poll_shutdown(cx));
        self.shut = shut.is_ok();
        Poll::Ready(shut)
    }
}

write_through!(Plaintext, poll_end, written);

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    fn plain() -> (
        Plaintext<tokio::io::DuplexStream>,
        tokio::io::DuplexStream,
        Arc<Activity>,
    ) {
        let (ours, theirs) = tokio::io::duplex(1024);
        let activity = Arc::new(Activity::default());
        (Plaintext::new(ours, activity.clone()), theirs, activity)
    }

    #[tokio::test]
    async fn a_half_close_after_a_request_that_asked_to_close_is_held_back() {
        let (mut io, client, activity) = plain();
        activity.set_closing(true);
        activity.begin();
        drop(client);
        let mut buf = [0u8; 16];
        let held = tokio::time::timeout(Duration::from_millis(100), io.read(&mut buf)).await;
        assert!(held.is_err(), "the end of file was passed on: {held:?}");
        // Once the request is over, the end of file is the connection's.
        activity.end();
        assert_eq!(io.read(&mut buf).await.unwrap(), 0);
    }

    /// hyper buffers an answer's end (the request is over) and reads
    /// before its flush is done: a FIN from a client that asked to close
    /// is still a half-close then, or the answer is lost.
    #[tokio::test]
    async fn a_half_close_is_held_back_while_the_answer_waits_for_the_socket() {
        let (mut io, mut client, activity) = plain();
        activity.set_closing(true);
        activity.begin();
        client.shutdown().await.unwrap();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        // More than the pipe holds (1024 bytes): the second write waits.
        let answer = [b'x'; 1536];
        let first = Pin::new(&mut io).poll_write(&mut cx, &answer);
        assert!(matches!(first, Poll::Ready(Ok(1024))), "{first:?}");
        assert!(Pin::new(&mut io)
            .poll_write(&mut cx, &answer[1024..])
            .is_pending());
        activity.end();
        let mut buf = [0u8; 16];
        let mut read = ReadBuf::new(&mut buf);
        let early = Pin::new(&mut io).poll_read(&mut cx, &mut read);
        assert!(
            early.is_pending(),
            "passed on before the answer was out: {early:?}"
        );
        // The client reads; the rest goes out, and then the end of file is
        // the connection's.
        client.read_exact(&mut [0u8; 1024]).await.unwrap();
        let rest = Pin::new(&mut io).poll_write(&mut cx, &answer[1024..]);
        assert!(matches!(rest, Poll::Ready(Ok(512))), "{rest:?}");
        assert_eq!(io.read(&mut buf).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn a_fin_in_the_middle_of_a_kept_request_is_passed_on() {
        let (mut io, client, activity) = plain();
        activity.set_closing(false);
        activity.begin();
        drop(client);
        let mut buf = [0u8; 16];
        assert_eq!(io.read(&mut buf).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn each_request_head_has_its_version_settled_on_http1() {
        let (mut io, mut client, activity) = plain();
        io.set_http1();
        let mut buf = [0u8; 64];
        // Bytes of the head the caller settled are left alone.
        client.write_all(b"GET / HTTP/1.2\r\n\r\n").await.unwrap();
        let n = io.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.2\r\n\r\n");
        // The next head, after a request, is settled.
        activity.begin();
        activity.end();
        client.write_all(b"GET / HTTP/1.2\r\n\r\n").await.unwrap();
        let n = io.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.1\r\n\r\n");
        // Bytes that arrive while a request is in flight are left to the
        // parser.
        activity.begin();
        client.write_all(b"GET / HTTP/1.2\r\n\r\n").await.unwrap();
        let n = io.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"GET / HTTP/1.2\r\n\r\n");
    }
}
