//! A connection's socket kept out of the worker's reactor until it has to
//! wait.
//!
//! Registering a socket with the reactor costs an `epoll_ctl` when the
//! connection starts and another when it ends. A connection answered and
//! closed in one go (its request already there when it is accepted, its
//! answer fitting the socket's buffer, no keep-alive) never waits, so it
//! never needs the reactor: lighttpd reads a new connection before it
//! registers it for the same reason. [`Lazy`] reads and writes the socket
//! directly, and registers it the first time a read or a write would
//! block; from then on it is the tokio socket it would have been.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use rustix::net::SendFlags;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use crate::sendfile::{SendFile, Socket};

/// A tokio socket type, and the plain socket it is made from.
pub(crate) trait Registers:
    AsyncRead + AsyncWrite + SendFile + Socket + Unpin + Send + Sized + 'static
{
    /// The socket outside any reactor (non-blocking).
    type Plain: AsFd + Unpin + Send + 'static;

    /// Registers `plain` with the current worker's reactor.
    fn register(plain: Self::Plain) -> io::Result<Self>;

    /// Takes the socket off the reactor.
    fn unregister(self) -> io::Result<Self::Plain>;
}

impl Registers for TcpStream {
    type Plain = std::net::TcpStream;

    fn register(plain: Self::Plain) -> io::Result<Self> {
        TcpStream::from_std(plain)
    }

    fn unregister(self) -> io::Result<Self::Plain> {
        self.into_std()
    }
}

impl Registers for UnixStream {
    type Plain = std::os::unix::net::UnixStream;

    fn register(plain: Self::Plain) -> io::Result<Self> {
        UnixStream::from_std(plain)
    }

    fn unregister(self) -> io::Result<Self::Plain> {
        self.into_std()
    }
}

/// A socket that joins the reactor when it first has to wait.
#[derive(Debug)]
pub(crate) enum Lazy<T: Registers> {
    /// Not registered: read and written directly.
    Plain(T::Plain),
    /// Registered.
    Polled(T),
    /// Registering failed: the socket is closed.
    Lost,
}

impl<T: Registers> Lazy<T> {
    /// Runs `op` on the plain socket, again when a signal interrupts it.
    /// `None` when the socket is registered, or when `op` would block:
    /// the caller then polls the registered socket.
    fn plain<R>(
        &mut self,
        mut op: impl FnMut(BorrowedFd<'_>) -> rustix::io::Result<R>,
    ) -> Option<io::Result<R>> {
        let Lazy::Plain(plain) = self else {
            return None;
        };
        loop {
            match op(plain.as_fd()) {
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return None,
                r => return Some(r.map_err(io::Error::from)),
            }
        }
    }

    /// The registered socket, registering it first if it is not.
    fn polled(&mut self) -> io::Result<Pin<&mut T>> {
        if let Lazy::Plain(_) = self {
            let Lazy::Plain(plain) = std::mem::replace(self, Lazy::Lost) else {
                unreachable!("matched just above");
            };
            *self = Lazy::Polled(T::register(plain)?);
        }
        match self {
            Lazy::Polled(t) => Ok(Pin::new(t)),
            _ => Err(lost()),
        }
    }

    /// The socket, off the reactor if it had joined it.
    pub(crate) fn into_plain(self) -> io::Result<T::Plain> {
        match self {
            Lazy::Plain(plain) => Ok(plain),
            Lazy::Polled(t) => t.unregister(),
            Lazy::Lost => Err(lost()),
        }
    }
}

/// `$plain` if it does not block, else `$polled` on the registered socket.
macro_rules! plain_or_polled {
    ($self:ident, $plain:expr, |$t:ident| $polled:expr) => {{
        let this = &mut *$self;
        if let Some(r) = this.plain($plain) {
            return Poll::Ready(r);
        }
        match this.polled() {
            Ok($t) => $polled,
            Err(e) => Poll::Ready(Err(e)),
        }
    }};
}

impl<T: Registers> AsyncRead for Lazy<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        #[allow(unsafe_code)]
        // SAFETY: the bytes are handed to read(2), which only writes them
        // (it never de-initialises any).
        let unfilled = unsafe { buf.unfilled_mut() };
        match this.plain(|fd| rustix::io::read(fd, &mut *unfilled).map(|(read, _)| read.len())) {
            Some(Ok(n)) => {
                #[allow(unsafe_code)]
                // SAFETY: read(2) wrote the first `n` bytes of `unfilled`,
                // the start of what `buf` has not filled.
                unsafe {
                    buf.assume_init(n)
                };
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Some(Err(e)) => Poll::Ready(Err(e)),
            None => match this.polled() {
                Ok(t) => t.poll_read(cx, buf),
                Err(e) => Poll::Ready(Err(e)),
            },
        }
    }
}

impl<T: Registers> AsyncWrite for Lazy<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        plain_or_polled!(
            self,
            |fd| rustix::net::send(fd, buf, SendFlags::NOSIGNAL),
            |t| t.poll_write(cx, buf)
        )
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        plain_or_polled!(
            self,
            |fd| rustix::net::sendmsg(fd, bufs, &mut Default::default(), SendFlags::NOSIGNAL),
            |t| t.poll_write_vectored(cx, bufs)
        )
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut *self {
            Lazy::Polled(t) => Pin::new(t).poll_flush(cx),
            _ => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        plain_or_polled!(
            self,
            |fd| rustix::net::shutdown(fd, rustix::net::Shutdown::Write),
            |t| t.poll_shutdown(cx)
        )
    }
}

impl<T: Registers> SendFile for Lazy<T> {
    const SENDS_FILES: bool = T::SENDS_FILES;

    fn poll_write_more(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        plain_or_polled!(
            self,
            |fd| rustix::net::send(fd, buf, <T as Socket>::MORE),
            |t| t.poll_write_more(cx, buf)
        )
    }

    fn poll_send_file(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        file: &File,
        offset: &mut u64,
        len: usize,
    ) -> Poll<io::Result<usize>> {
        plain_or_polled!(
            self,
            |fd| rustix::fs::sendfile(fd, file, Some(&mut *offset), len),
            |t| t.poll_send_file(cx, file, offset, len)
        )
    }

    fn hold_tail(&self) {
        match self {
            Lazy::Polled(t) => t.hold_tail(),
            Lazy::Plain(plain) => crate::sendfile::hold_tail::<T>(plain.as_fd()),
            Lazy::Lost => {}
        }
    }

    fn may_have_unread(&self, ask: bool) -> bool {
        match self {
            Lazy::Polled(t) => t.may_have_unread(ask),
            // Never waited, so no readiness is kept: after a large answer
            // the kernel is asked.
            Lazy::Plain(plain) if ask => crate::sendfile::peek(plain.as_fd()),
            Lazy::Plain(_) | Lazy::Lost => false,
        }
    }
}

fn lost() -> io::Error {
    io::Error::new(
        io::ErrorKind::NotConnected,
        "the socket could not join the reactor",
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use std::io::{Read as _, Write as _};

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    /// A connected pair: the server's end plain, the client's blocking.
    pub(crate) fn pair() -> (Lazy<TcpStream>, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        server.set_nonblocking(true).unwrap();
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        (Lazy::Plain(server), client)
    }

    /// What is there is read and answered without the reactor; the socket
    /// joins it only when a read finds nothing, and then still reads
    /// what comes.
    #[tokio::test]
    async fn a_socket_joins_the_reactor_only_when_it_must_wait() {
        let (mut s, mut client) = pair();
        client.write_all(b"ping").unwrap();
        // The bytes may take a moment over loopback: wait until readable.
        let mut got = [0u8; 4];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !matches!(&s, Lazy::Plain(p) if p.peek(&mut got).is_ok_and(|n| n == 4)) {
            assert!(std::time::Instant::now() < deadline, "the bytes never came");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
        s.write_all(b"pong").await.unwrap();
        assert!(matches!(s, Lazy::Plain(_)), "registered without waiting");
        let mut answer = [0u8; 4];
        client.read_exact(&mut answer).unwrap();
        assert_eq!(&answer, b"pong");

        // Nothing to read: the read registers and waits for the bytes.
        let reader = tokio::spawn(async move {
            let mut more = [0u8; 5];
            s.read_exact(&mut more).await.map(|_| (more, s))
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        client.write_all(b"again").unwrap();
        let (more, s) = reader.await.unwrap().unwrap();
        assert_eq!(&more, b"again");
        assert!(matches!(s, Lazy::Polled(_)), "waited without registering");
    }
}
