//! A FastCGI connection at rest, and its registration with a runtime
//! while it carries a request.
//!
//! At rest a connection is a [`Socket`]: a plain std socket, non-blocking,
//! registered with no runtime, or still registered for reading with the
//! runtime of the request that last used it. tern runs one current-thread
//! runtime per worker thread and pools connections across them, so a
//! request registers the socket with the runtime it runs on
//! (`conn::start`) unless it is registered there already, and gives it
//! back at the end (`conn::reunite`) still registered when it was
//! registered for reading only. Most requests of a quiet server run on
//! one worker (the connection balance gathers them there), and a
//! registration that stays spares each of them two `epoll_ctl` calls.
//! [`connect`] and [`connect_now`] open one to an [`Address`].

use std::io::{self, Read as _};
use std::os::fd::{AsFd, AsRawFd as _, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{tcp, unix};
use tokio::time::Sleep;

pub use tern_config::FcgiAddress as Address;

/// A connection at rest: non-blocking, with TCP_NODELAY on TCP, and
/// registered with no runtime or for reading only. Only [`connect`],
/// `conn::reunite` and the constructors here make one, so those hold.
#[derive(Debug)]
pub struct Socket {
    rest: Rest,
    /// How long the last answer on it was, in bytes read (0 before the
    /// first): the next answer's first read is sized by it (`conn.rs`).
    last_answer: usize,
    /// The last request's silence timer, kept for the next one.
    timer: Option<KeptTimer>,
}

/// A request's silence timer kept with its connection, with the runtime
/// whose timer wheel holds it. The next request on that runtime moves its
/// deadline later, which is an atomic store while the timer is still in
/// the wheel; a timer made per request was an allocation, an insertion
/// into the wheel under the driver's lock and a removal, about 800
/// instructions of a FastCGI "Hello!" (docs/PERFORMANCE.md, session 31).
/// A kept timer that runs out while its connection idles wakes whatever
/// task last waited on it, once, for nothing.
#[derive(Debug)]
pub struct KeptTimer {
    sleep: Pin<Box<Sleep>>,
    on: tokio::runtime::Id,
}

impl KeptTimer {
    /// `sleep`, made on the current runtime (`None` outside one).
    pub fn here(sleep: Pin<Box<Sleep>>) -> Option<KeptTimer> {
        runtime().map(|on| KeptTimer { sleep, on })
    }

    /// The timer, if it was made on the current runtime.
    pub fn take_here(self) -> Option<Pin<Box<Sleep>>> {
        (runtime() == Some(self.on)).then_some(self.sleep)
    }
}

#[derive(Debug)]
enum Rest {
    Plain(Std),
    /// Registered for reading with the runtime `on`.
    Reading {
        fd: tokio::io::unix::AsyncFd<Std>,
        on: tokio::runtime::Id,
    },
}

impl Rest {
    fn std(&self) -> &Std {
        match self {
            Rest::Plain(s) => s,
            Rest::Reading { fd, .. } => fd.get_ref(),
        }
    }

    /// The socket registered with no runtime (`epoll_ctl` DEL if it was).
    fn plain(self) -> Std {
        match self {
            Rest::Plain(s) => s,
            Rest::Reading { fd, .. } => fd.into_inner(),
        }
    }
}

/// The current runtime's id; `None` outside one.
fn runtime() -> Option<tokio::runtime::Id> {
    tokio::runtime::Handle::try_current().ok().map(|h| h.id())
}

/// The plain socket inside, of either family.
#[derive(Debug)]
pub(super) enum Std {
    Unix(UnixStream),
    Tcp(std::net::TcpStream),
}

impl AsFd for Std {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Std::Unix(s) => s.as_fd(),
            Std::Tcp(s) => s.as_fd(),
        }
    }
}

impl std::os::fd::AsRawFd for Std {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            Std::Unix(s) => s.as_raw_fd(),
            Std::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// `sock` registered with the current runtime for reading only.
#[allow(
    unsafe_code,
    reason = "tokio's only way to register a socket for one interest takes the caller's word that the descriptor stays owned"
)]
fn register_readable(sock: Std) -> io::Result<tokio::io::unix::AsyncFd<Std>> {
    // SAFETY: `Std` owns its socket: the descriptor stays open, and is the
    // same one, until the `AsyncFd` is dropped or `into_inner` hands the
    // `Std` back (tokio's condition for registering it).
    let fd = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(sock, tokio::io::Interest::READABLE)
    };
    fd.map_err(io::Error::from)
}

impl Socket {
    fn at_rest(rest: Rest) -> Self {
        Self {
            rest,
            last_answer: 0,
            timer: None,
        }
    }

    /// The timer the last request on the connection left, if any.
    pub(super) fn take_timer(&mut self) -> Option<KeptTimer> {
        self.timer.take()
    }

    /// How long the last answer on the connection was, in bytes read; 0
    /// before the first.
    pub(super) fn last_answer(&self) -> usize {
        self.last_answer
    }

    /// A connected Unix socket, made non-blocking.
    pub fn unix(stream: UnixStream) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        Ok(Self::at_rest(Rest::Plain(Std::Unix(stream))))
    }

    /// A connected TCP socket, made non-blocking, with TCP_NODELAY (the
    /// 40 ms stall: see [`super`]).
    pub fn tcp(stream: std::net::TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(true)?;
        stream.set_nodelay(true)?;
        Ok(Self::at_rest(Rest::Plain(Std::Tcp(stream))))
    }

    /// Whether the connection can carry a request: the application has
    /// not closed it and sent nothing unasked. A pool checks this before
    /// it reuses an idle connection (as nginx does for its keepalive
    /// upstreams). Any byte waiting is consumed, since such a connection
    /// is out of step and only good for closing.
    ///
    /// A registered socket is read through its registration when the
    /// runtime has marked it readable (the last response was read without
    /// draining the socket to `EAGAIN`): the read's `EAGAIN` clears the
    /// mark, so the request's first wait for its answer goes to epoll
    /// rather than to a read that finds nothing.
    pub fn still_open(&self) -> bool {
        self.ready_for(false)
    }

    /// Whether the connection can carry a request about to be written, as
    /// [`Socket::still_open`] says, but without a system call where the
    /// runtime can tell: the socket is registered with the runtime the
    /// request runs on, and that runtime has seen nothing arrive since the
    /// last answer was read to its end (a close, or bytes sent unasked,
    /// would have marked it readable). That is as fresh as the runtime's
    /// last look at its events, taken just before this request was read,
    /// so only a `replayable` request takes the runtime's word: if the
    /// application closed the connection since, the request is sent again
    /// on another (see `run_on`). The probe was one `read` a request on
    /// every kept connection, on the way to the application.
    pub fn ready_for(&self, replayable: bool) -> bool {
        let probe = |sock: &Std| {
            let mut byte = [0u8; 1];
            match sock {
                Std::Unix(s) => (&*s).read(&mut byte),
                Std::Tcp(s) => (&*s).read(&mut byte),
            }
        };
        let read = match &self.rest {
            Rest::Plain(s) => probe(s),
            Rest::Reading { fd, on } => {
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                match fd.poll_read_ready(&mut cx) {
                    std::task::Poll::Ready(Ok(mut ready)) => {
                        match ready.try_io(|inner| probe(inner.get_ref())) {
                            Ok(read) => read,
                            Err(_would_block) => Err(io::ErrorKind::WouldBlock.into()),
                        }
                    }
                    // Not marked by the runtime this request runs on.
                    std::task::Poll::Pending if replayable && runtime() == Some(*on) => {
                        return true;
                    }
                    // Not marked elsewhere, or its runtime is gone: the
                    // socket itself.
                    std::task::Poll::Ready(Err(_)) | std::task::Poll::Pending => {
                        probe(fd.get_ref())
                    }
                }
            }
        };
        matches!(read, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// A second descriptor of a Unix-socket connection, for [`unread`];
    /// `None` over TCP, or when none can be had.
    pub(crate) fn unix_twin(&self) -> Option<std::os::fd::OwnedFd> {
        match self.rest.std() {
            Std::Unix(s) => s.as_fd().try_clone_to_owned().ok(),
            Std::Tcp(_) => None,
        }
    }

    /// Writes what it can of `buf` without waiting, dropping the written
    /// bytes from it.
    pub(super) fn write_now(&self, buf: &mut BytesMut) -> io::Result<()> {
        use std::io::Write as _;
        while !buf.is_empty() {
            let n = match self.rest.std() {
                Std::Unix(s) => (&*s).write(buf),
                Std::Tcp(s) => (&*s).write(buf),
            };
            match n {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes::Buf::advance(buf, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Registers the socket with the current runtime, for reading and
    /// writing.
    pub(super) fn register(self) -> io::Result<Registered> {
        Ok(match self.rest.plain() {
            Std::Unix(s) => Registered::Unix(tokio::net::UnixStream::from_std(s)?),
            Std::Tcp(s) => Registered::Tcp(tokio::net::TcpStream::from_std(s)?),
        })
    }

    /// Registers the socket with the current runtime for reading only:
    /// the request was all written.
    /// Kept as it is when it is registered with this runtime already.
    pub(super) fn register_for_reading(self) -> io::Result<ReadHalf> {
        let here = runtime().ok_or_else(|| io::Error::other("no runtime"))?;
        let sock = match self.rest {
            Rest::Reading { fd, on } if on == here => return Ok(ReadHalf::Only { fd, on }),
            other => other.plain(),
        };
        register_readable(sock).map(|fd| ReadHalf::Only { fd, on: here })
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.rest.std().as_fd()
    }
}

/// Opens a connection to `addr`, giving up after `timeout` (name
/// resolution included). Errors name the address.
///
/// # Cancel safety
/// Cancel safe: a dropped connect closes the half-open socket.
pub async fn connect(addr: &Address, timeout: Duration) -> io::Result<Socket> {
    let attempt = async {
        match addr {
            Address::Unix(path) => {
                let s = tokio::net::UnixStream::connect(path).await?;
                Socket::unix(s.into_std()?)
            }
            Address::Tcp(host_port) => {
                let s = tokio::net::TcpStream::connect(host_port.as_str()).await?;
                Socket::tcp(s.into_std()?)
            }
        }
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(Ok(sock)) => Ok(sock),
        Ok(Err(e)) => Err(io::Error::new(
            e.kind(),
            format!("connecting to {addr}: {e}"),
        )),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("connecting to {addr}: no connection within {timeout:?}"),
        )),
    }
}

/// As [`connect`], without a trip through the runtime when the kernel
/// connects at once: a Unix socket whose listener has room in its queue
/// connects (or fails) inside `connect(2)`, so the socket is made and
/// connected here and only registered when the request starts. A full
/// queue (EAGAIN) and TCP take [`connect`]'s way.
///
/// # Cancel safety
/// As [`connect`].
pub async fn connect_now(addr: &Address, timeout: Duration) -> io::Result<Socket> {
    if let Address::Unix(path) = addr {
        use socket2::{Domain, SockAddr, Type};
        let named = |e: io::Error| io::Error::new(e.kind(), format!("connecting to {addr}: {e}"));
        let sock = socket2::Socket::new(Domain::UNIX, Type::STREAM.nonblocking().cloexec(), None)
            .map_err(named)?;
        match sock.connect(&SockAddr::unix(path).map_err(named)?) {
            Ok(()) => {
                let fd = std::os::fd::OwnedFd::from(sock);
                return Ok(Socket::at_rest(Rest::Plain(Std::Unix(UnixStream::from(
                    fd,
                )))));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(named(e)),
        }
    }
    connect(addr, timeout).await
}

/// One read(2) into the spare capacity of `buf`, without waiting and
/// without zeroing it first: zeroing the spare room (8 to 64 KiB) cost
/// more than the rest of a small response's relay, 8,200 of the 61,000
/// instructions a FastCGI "Hello!" took (docs/PERFORMANCE.md, "Instructions
/// per request").
#[allow(
    unsafe_code,
    reason = "no safe API reads into a BytesMut's spare capacity without zeroing it"
)]
fn read_into(sock: &Std, buf: &mut BytesMut) -> io::Result<usize> {
    // A full buffer grows, as `BufMut` makes it for tokio's `read_buf`: a
    // read into no room would return 0, which says end of stream.
    if buf.capacity() == buf.len() {
        buf.reserve(64);
    }
    let (filled, _) = rustix::io::read(sock, buf.spare_capacity_mut())?;
    let n = filled.len();
    // SAFETY: `read` initialised the first `n` bytes of the spare capacity
    // (rustix returns exactly the part the kernel wrote).
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// A socket registered with the current runtime.
pub(super) enum Registered {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

impl Registered {
    pub(super) fn split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Self::Unix(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
            Self::Tcp(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
        }
    }
}

/// The reading half of a registered socket.
#[derive(Debug)]
pub(super) enum ReadHalf {
    Unix(unix::OwnedReadHalf),
    Tcp(tcp::OwnedReadHalf),
    /// Registered for reading only with the runtime `on` (the request
    /// was all written).
    Only {
        fd: tokio::io::unix::AsyncFd<Std>,
        on: tokio::runtime::Id,
    },
}

impl ReadHalf {
    /// Cancel safe, as tokio's `read_buf` on a socket.
    pub(super) async fn read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Self::Unix(r) => r.read_buf(buf).await,
            Self::Tcp(r) => r.read_buf(buf).await,
            Self::Only { fd, .. } => loop {
                let mut ready = fd.readable().await?;
                let room = (buf.capacity() - buf.len()).max(64);
                match ready.try_io(|inner| read_into(inner.get_ref(), buf)) {
                    Ok(Ok(n)) => {
                        // A read that left room took all there was, as
                        // tokio's own streams reason: the mark goes (unless
                        // an event came since), so that the connection's
                        // next request can tell from it that nothing came
                        // after this answer (`Socket::ready_for`).
                        if n > 0 && n < room {
                            ready.clear_ready();
                        }
                        return Ok(n);
                    }
                    Ok(r) => return r,
                    Err(_would_block) => continue,
                }
            },
        }
    }
}

/// The writing half of a registered socket.
#[derive(Debug)]
pub(super) enum WriteHalf {
    Unix(unix::OwnedWriteHalf),
    Tcp(tcp::OwnedWriteHalf),
    /// Nothing more to write.
    Done,
}

impl WriteHalf {
    pub(super) async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Self::Unix(w) => w.write_all(bytes).await,
            Self::Tcp(w) => w.write_all(bytes).await,
            Self::Done if bytes.is_empty() => Ok(()),
            Self::Done => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the request was complete",
            )),
        }
    }
}

/// The socket back at rest from the two halves of one registration,
/// after an answer of `answer` bytes, keeping `timer` for the next
/// request. A socket registered for reading only stays registered.
pub(super) fn rejoin(
    read: ReadHalf,
    write: WriteHalf,
    answer: usize,
    timer: Option<KeptTimer>,
) -> io::Result<Socket> {
    let rest = match (read, write) {
        (ReadHalf::Unix(r), WriteHalf::Unix(w)) => Rest::Plain(Std::Unix(
            r.reunite(w).map_err(io::Error::other)?.into_std()?,
        )),
        (ReadHalf::Tcp(r), WriteHalf::Tcp(w)) => Rest::Plain(Std::Tcp(
            r.reunite(w).map_err(io::Error::other)?.into_std()?,
        )),
        (ReadHalf::Only { fd, on }, WriteHalf::Done) => Rest::Reading { fd, on },
        _ => return Err(io::Error::other("the halves of two sockets")),
    };
    Ok(Socket {
        rest,
        last_answer: answer,
        timer,
    })
}

/// Bytes written on the Unix-socket connection `fd` that its peer has
/// not read yet (`SIOCOUTQ`); 0 if that cannot be told.
#[allow(unsafe_code, reason = "no safe API reads a socket's send queue")]
pub(crate) fn unread(fd: BorrowedFd<'_>) -> usize {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) on a socket writes one c_int through
    // the pointer, which points at `queued`, alive for the call; on any
    // other descriptor the call fails and writes nothing.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
    if rc == 0 {
        usize::try_from(queued).unwrap_or(0)
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// A read registered for reading only lands after what the buffer
    /// holds, also when the buffer is full (a read into no room would
    /// say end of stream), and the peer's close reads as 0.
    #[tokio::test]
    async fn reads_append_and_a_full_buffer_grows() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let mut read = Socket::unix(ours).unwrap().register_for_reading().unwrap();
        let mut buf = BytesMut::with_capacity(8);
        while buf.len() < buf.capacity() {
            buf.extend_from_slice(b"a");
        }
        let held = buf.len();
        (&theirs).write_all(b"FastCGI").unwrap();
        assert_eq!(read.read_buf(&mut buf).await.unwrap(), 7);
        assert_eq!(&buf[held..], b"FastCGI");
        assert!(buf[..held].iter().all(|&b| b == b'a'));
        drop(theirs);
        assert_eq!(read.read_buf(&mut buf).await.unwrap(), 0);
    }
}
