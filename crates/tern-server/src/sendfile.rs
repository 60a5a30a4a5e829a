//! Sending a file's bytes to a plain socket with `sendfile(2)`: the kernel
//! moves page-cache pages into the socket, where a write copies the bytes
//! from memory first. On tern's HTTP/1 loop, a response whose body names
//! the file region that holds it (`ResponseBody::with_file`: a cache hit on
//! a body of `SEND_FILE_MIN` to `SEND_FILE_MAX` bytes) is sent as its head
//! with `MSG_MORE` (so head and body share segments), then the region, at
//! most `SEND_FILE_CHUNK` a call.
//!
//! The layers of a connection's stream (`TimedIo`, `Rewind`, `Plaintext`)
//! write through unchanged, so they pass this on too (`write_through!`); a
//! TLS stream cannot (the bytes must be encrypted in user space).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use rustix::net::SendFlags;
use tern_handler::FileRegion;
use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

/// The most one `sendfile` call is asked to send: each call ends with a
/// push of what it sent. Measured over loopback, 128 and 256 KiB bodies in
/// one call each cost more CPU than a copy (60-72 and 36-66 µs against
/// 48-53 and 43-44); in calls of 64 KiB, less (39 and 32-40).
const SEND_FILE_CHUNK: u64 = 64 << 10;

/// A stream that can send a file's bytes itself, and what else tern's
/// loop asks of the socket under the layers (whether bytes may be unread):
/// the layers pass both on through `write_through!`.
pub(crate) trait SendFile {
    /// Whether it can: a plain socket under layers that write through.
    /// Where it is false, the methods below are never called.
    const SENDS_FILES: bool;

    /// Writes from `buf` with more to follow at once (`MSG_MORE`): the
    /// head of a response whose body comes from a file.
    fn poll_write_more(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(unsupported()))
    }

    /// Sends up to `len` bytes of `file` from `*offset`, which advances by
    /// the count sent. 0 sent of a nonzero `len`: the file ended there.
    fn poll_send_file(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        _file: &File,
        _offset: &mut u64,
        _len: usize,
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Err(unsupported()))
    }

    /// Whether the client may have sent bytes not read yet: closed with
    /// bytes unread, a socket resets (`h1.rs`'s lingering close). A
    /// registered socket's read readiness says so without a system call,
    /// but only as of the reactor's last look: bytes that arrived while
    /// the end of an answer went out without waiting are not in it, and a
    /// socket that never waited has none. So when `ask` (after a large
    /// answer, whose tail the reset would throw away) the kernel is asked
    /// too ([`peek`]).
    fn may_have_unread(&self, _ask: bool) -> bool {
        false
    }

    /// Holds back the last part-filled segment of what is written from
    /// here until the socket closes or shuts down (TCP_CORK, never lifted
    /// here): for the last answer on a connection, whose last segment
    /// then carries the FIN, one packet fewer each way over loopback
    /// (nginx's `tcp_nopush` does the same; docs/PERFORMANCE.md, session
    /// 44). Only once the whole answer is in hand: a cork holds a streamed
    /// body's pieces for up to 200 ms. Where it cannot (not TCP), nothing.
    fn hold_tail(&self) {}
}

/// A tokio socket's write readiness, as [`poll_write_op`] uses it, and
/// its flags for a write with more to follow (lazy.rs sends with them
/// too, before the socket joins the reactor).
pub(crate) trait Socket: AsFd {
    /// `MSG_MORE` where it means something, and never `SIGPIPE`.
    const MORE: SendFlags;
    /// Whether it has segments to hold back ([`SendFile::hold_tail`]).
    const CORKS: bool;
    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
    fn try_write_io<R>(&self, f: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
}

macro_rules! socket {
    ($socket:ty, $more:expr, $corks:expr) => {
        impl Socket for $socket {
            const MORE: SendFlags = $more;
            const CORKS: bool = $corks;

            fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                <$socket>::poll_write_ready(self, cx)
            }

            fn try_write_io<R>(&self, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
                self.try_io(Interest::WRITABLE, f)
            }
        }

        impl SendFile for $socket {
            const SENDS_FILES: bool = true;

            fn poll_write_more(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &[u8],
            ) -> Poll<io::Result<usize>> {
                poll_write_op(&*self, cx, |s| rustix::net::send(s, buf, Self::MORE))
            }

            fn poll_send_file(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                file: &File,
                offset: &mut u64,
                len: usize,
            ) -> Poll<io::Result<usize>> {
                poll_write_op(&*self, cx, |s| {
                    rustix::fs::sendfile(s, file, Some(&mut *offset), len)
                })
            }

            fn hold_tail(&self) {
                hold_tail::<Self>(self.as_fd());
            }

            fn may_have_unread(&self, ask: bool) -> bool {
                // A waker that does nothing: the question is asked as the
                // connection closes, and a read after it (the lingering
                // close) registers the task's own.
                let mut cx = Context::from_waker(std::task::Waker::noop());
                matches!(self.poll_read_ready(&mut cx), Poll::Ready(Ok(())))
                    || (ask && peek(self.as_fd()))
            }
        }
    };
}

// `MSG_NOSIGNAL`: a client gone is an error here, never a signal.
socket!(TcpStream, SendFlags::MORE.union(SendFlags::NOSIGNAL), true);
// A Unix socket has no segments to fill: `MSG_MORE` and the cork mean
// nothing there.
socket!(UnixStream, SendFlags::NOSIGNAL, false);

/// See [`SendFile::hold_tail`], for `socket` of the kind `S` (nothing for
/// one that does not cork). A socket that refuses only loses the packet it
/// would have saved.
pub(crate) fn hold_tail<S: Socket>(socket: BorrowedFd<'_>) {
    if S::CORKS {
        let _ = rustix::net::sockopt::set_tcp_cork(socket, true);
    }
}

/// Whether a byte the client sent waits in `socket` (not the end, not
/// "nothing yet"): a `recv` that peeks and does not wait.
pub(crate) fn peek(socket: BorrowedFd<'_>) -> bool {
    let mut byte = [0u8; 1];
    let flags = rustix::net::RecvFlags::PEEK | rustix::net::RecvFlags::DONTWAIT;
    matches!(rustix::net::recv(socket, &mut byte, flags), Ok((_, n)) if n > 0)
}

/// Runs `op` on `socket` once it is writable; again, after the next
/// readiness, if the socket was full after all or a signal came first.
fn poll_write_op<S: Socket>(
    socket: &S,
    cx: &mut Context<'_>,
    mut op: impl FnMut(&S) -> rustix::io::Result<usize>,
) -> Poll<io::Result<usize>> {
    loop {
        ready!(socket.poll_write_ready(cx))?;
        match socket.try_write_io(|| Ok(op(socket)?)) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            r => return Poll::Ready(r),
        }
    }
}

/// The bytes must be encrypted in user space: the defaults refuse. What
/// is unread is the socket's.
impl<T: SendFile> SendFile for tokio_rustls::server::TlsStream<T> {
    const SENDS_FILES: bool = false;

    fn may_have_unread(&self, ask: bool) -> bool {
        self.get_ref().0.may_have_unread(ask)
    }
}

fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "this stream does not send files",
    )
}

/// Writes `head` (with more to follow), then the bytes of `region`.
/// `sent` counts the region's bytes sent, whatever the outcome. A file
/// that ends early (truncated since its head was made) is an error: the
/// head promised its length, so the connection must end.
pub(crate) async fn send_file<S>(
    io: &mut S,
    head: &[u8],
    region: &FileRegion,
    sent: &mut u64,
) -> io::Result<()>
where
    S: SendFile + Unpin,
{
    write_more(io, head).await?;
    let mut at = region.offset;
    let end = region.offset + region.len;
    while at < end {
        let want = (end - at).min(SEND_FILE_CHUNK) as usize;
        let n = std::future::poll_fn(|cx| {
            Pin::new(&mut *io).poll_send_file(cx, &region.file, &mut at, want)
        })
        .await?;
        *sent += n as u64;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file is shorter than the response's content-length",
            ));
        }
    }
    Ok(())
}

/// Writes all of `buf` with more to follow (`MSG_MORE`): what does not
/// fill a segment waits for the next write, or for the close (whose FIN
/// it then carries).
pub(crate) async fn write_more<S>(io: &mut S, mut buf: &[u8]) -> io::Result<()>
where
    S: SendFile + Unpin,
{
    while !buf.is_empty() {
        let n = std::future::poll_fn(|cx| Pin::new(&mut *io).poll_write_more(cx, buf)).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        buf = &buf[n..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use tokio::io::AsyncReadExt as _;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    async fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (server, _) = l.accept().await.unwrap();
        (server, client)
    }

    /// A file of `len` bytes, and its region from `offset` of `region_len`.
    fn region(len: usize, offset: u64, region_len: u64) -> FileRegion {
        let mut f = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        f.write_all(&bytes).unwrap();
        FileRegion {
            file: std::sync::Arc::new(f),
            offset,
            len: region_len,
        }
    }

    /// More than a socket buffer holds, so the sender waits for the reader
    /// (the readiness path), from an offset.
    #[tokio::test]
    async fn the_head_then_the_region_arrive_whole() {
        let (mut server, mut client) = pair().await;
        let (offset, len) = (1000u64, (3 << 20) - 2000u64);
        let r = region(3 << 20, offset, len);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.unwrap();
            got
        });
        let mut sent = 0;
        send_file(&mut server, b"HEAD\r\n", &r, &mut sent)
            .await
            .unwrap();
        drop(server);
        let got = reader.await.unwrap();
        assert_eq!(sent, len);
        assert_eq!(&got[..6], b"HEAD\r\n");
        let want: Vec<u8> = (offset..offset + len).map(|i| (i % 251) as u8).collect();
        assert!(got[6..] == want[..], "the region's bytes differ");
    }

    /// The head promised more than the file has now: an error, once what
    /// there was went out.
    #[tokio::test]
    async fn a_file_shorter_than_its_region_is_an_error() {
        let (mut server, mut client) = pair().await;
        let r = region(5000, 0, 8000);
        let mut sent = 0;
        let e = send_file(&mut server, b"H", &r, &mut sent)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(sent, 5000);
        drop(server);
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(got.len(), 5001);
    }

    #[tokio::test]
    async fn a_unix_socket_sends_files_too() {
        let (mut server, mut client) = UnixStream::pair().unwrap();
        let r = region(100_000, 0, 100_000);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            client.read_to_end(&mut got).await.unwrap();
            got
        });
        let mut sent = 0;
        send_file(&mut server, b"", &r, &mut sent).await.unwrap();
        drop(server);
        assert_eq!(reader.await.unwrap().len(), 100_000);
    }
}
