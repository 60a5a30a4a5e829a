//! Listening sockets: TCP (IPv4, IPv6) and Unix, bound before the server
//! runs so that a bad address is a startup error, and accepted with
//! TCP_NODELAY on every connection (set once, on the listener). While the
//! server is busy, a TCP connection is accepted once its first bytes have
//! come (TCP_DEFER_ACCEPT, see [`Deferral`]); accepted sockets stay out of
//! the reactor until they have to wait (lazy.rs), and take at most
//! [`NOTSENT_LOWAT`] bytes not yet sent (TCP_NOTSENT_LOWAT).

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use socket2::{Domain, Protocol, Socket, Type};
use tern_config::ListenAddr;
use tern_handler::{ConnInfo, PeerAddr};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest};
use tokio::net::{TcpStream, UnixStream};

use crate::lazy::Lazy;

type StdTcpListener = std::net::TcpListener;
type StdUnixListener = std::os::unix::net::UnixListener;

/// Backlog for listen(2): large, because bursts of new connections (ab
/// without keep-alive) must wait in the kernel, not be refused.
const BACKLOG: i32 = 4096;

/// Why binding failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr}: {source}")]
pub struct BindError {
    addr: String,
    #[source]
    source: io::Error,
}

/// A bound listening socket. It belongs to no runtime: every worker thread
/// has its own handle on the same socket (`BoundListener::handle`), which
/// it registers with its runtime while it accepts (see balance.rs for
/// when that is).
#[derive(Debug)]
pub struct BoundListener {
    kind: Kind,
    local: PeerAddr,
}

#[derive(Debug)]
enum Kind {
    Tcp(StdTcpListener),
    Unix(StdUnixListener, PathBuf),
}

/// One worker runtime's handle on a [`BoundListener`].
#[derive(Debug)]
pub(crate) struct WorkerListener {
    kind: WorkerKind,
    local: PeerAddr,
    index: usize,
}

#[derive(Debug)]
enum WorkerKind {
    Tcp(AsyncFd<StdTcpListener>),
    Unix(AsyncFd<StdUnixListener>),
}

/// An accepted connection, outside the reactor until it has to wait (see
/// lazy.rs).
#[derive(Debug)]
pub(crate) enum Stream {
    Tcp(Lazy<TcpStream>),
    Unix(Lazy<UnixStream>),
}

/// An accepted connection on its way to another worker: registered with
/// no runtime, so that the worker that serves it registers it with its own.
#[derive(Debug)]
pub(crate) enum Detached {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    /// Takes the connection off this worker's runtime.
    pub(crate) fn detach(self) -> io::Result<Detached> {
        match self {
            Stream::Tcp(s) => s.detach(),
            Stream::Unix(s) => s.detach(),
        }
    }
}

/// An accepted socket, which can leave one worker's runtime for another's.
pub(crate) trait Accepted:
    AsyncRead + AsyncWrite + crate::sendfile::SendFile + Unpin + Send + 'static
{
    /// Takes the socket off this worker's runtime.
    fn detach(self) -> io::Result<Detached>;
}

impl Accepted for Lazy<TcpStream> {
    fn detach(self) -> io::Result<Detached> {
        Ok(Detached::Tcp(self.into_plain()?))
    }
}

impl Accepted for Lazy<UnixStream> {
    fn detach(self) -> io::Result<Detached> {
        Ok(Detached::Unix(self.into_plain()?))
    }
}

impl Detached {
    /// The connection on the current worker, which registers it with its
    /// runtime when it has to wait.
    pub(crate) fn attach(self) -> Stream {
        match self {
            Detached::Tcp(s) => Stream::Tcp(Lazy::Plain(s)),
            Detached::Unix(s) => Stream::Unix(Lazy::Plain(s)),
        }
    }
}

impl BoundListener {
    /// Binds `addr`.
    pub fn bind(addr: &ListenAddr) -> Result<BoundListener, BindError> {
        let err = |source| BindError {
            addr: addr.to_string(),
            source,
        };
        match addr {
            ListenAddr::Tcp(sa) => {
                let l = bind_tcp(*sa).map_err(err)?;
                let local = l.local_addr().map_err(err)?;
                Ok(BoundListener {
                    kind: Kind::Tcp(l),
                    local: PeerAddr::Tcp(local),
                })
            }
            ListenAddr::Unix(path) => {
                remove_stale_socket(path).map_err(err)?;
                let l = StdUnixListener::bind(path).map_err(err)?;
                l.set_nonblocking(true).map_err(err)?;
                Ok(BoundListener {
                    kind: Kind::Unix(l, path.clone()),
                    local: PeerAddr::Unix(Arc::from(path.to_string_lossy().as_ref())),
                })
            }
        }
    }

    /// The bound address (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> &PeerAddr {
        &self.local
    }

    /// A worker's own handle on this socket, not yet in any runtime's
    /// poll set (see [`PausedListener::resume`]). `index` is the
    /// listener's place in the list the server runs: its TLS settings are
    /// the site's at that place.
    pub(crate) fn handle(&self, index: usize) -> io::Result<PausedListener> {
        let kind = match &self.kind {
            Kind::Tcp(l) => PausedKind::Tcp(l.try_clone()?),
            Kind::Unix(l, _) => PausedKind::Unix(l.try_clone()?),
        };
        Ok(PausedListener {
            kind,
            local: self.local.clone(),
            index,
        })
    }
}

/// A worker's handle on a [`BoundListener`] that its runtime does not
/// poll: a new connection does not wake that worker.
#[derive(Debug)]
pub(crate) struct PausedListener {
    kind: PausedKind,
    local: PeerAddr,
    index: usize,
}

#[derive(Debug)]
enum PausedKind {
    Tcp(StdTcpListener),
    Unix(StdUnixListener),
}

impl PausedListener {
    /// Registers the handle with the current worker's runtime.
    pub(crate) fn resume(self) -> io::Result<WorkerListener> {
        let kind = match self.kind {
            PausedKind::Tcp(l) => WorkerKind::Tcp(register(l)?),
            PausedKind::Unix(l) => WorkerKind::Unix(register(l)?),
        };
        Ok(WorkerListener {
            kind,
            local: self.local,
            index: self.index,
        })
    }

    pub(crate) fn local_addr(&self) -> &PeerAddr {
        &self.local
    }
}

impl WorkerListener {
    /// Takes the handle out of the runtime's poll set.
    pub(crate) fn pause(self) -> io::Result<PausedListener> {
        let kind = match self.kind {
            WorkerKind::Tcp(l) => PausedKind::Tcp(l.into_inner()),
            WorkerKind::Unix(l) => PausedKind::Unix(l.into_inner()),
        };
        Ok(PausedListener {
            kind,
            local: self.local,
            index: self.index,
        })
    }

    pub(crate) fn local_addr(&self) -> &PeerAddr {
        &self.local
    }

    /// The listener's place in the server's list.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Accepts one connection; true if it was already waiting (the
    /// accept did not wait).
    ///
    /// # Cancel safety
    /// Cancel safe: a connection is either returned or left in the backlog.
    pub(crate) async fn accept(&self) -> io::Result<(Stream, ConnInfo, bool)> {
        match &self.kind {
            WorkerKind::Tcp(l) => {
                // TCP_NODELAY comes from the listener (see `bind_tcp`).
                let ((fd, peer), waiting) =
                    accept_from(l, |l, f| rustix::net::acceptfrom_with(l, f)).await?;
                let s = std::net::TcpStream::from(fd);
                let peer = match peer.map(SocketAddr::try_from) {
                    Some(Ok(peer)) => peer,
                    _ => s.peer_addr()?,
                };
                // The local address is the listener's, unless it listens on
                // every address (0.0.0.0, ::): only then is a getsockname
                // per connection needed to know which one the client chose.
                let local = match self.local {
                    PeerAddr::Tcp(a) if !a.ip().is_unspecified() => self.local.clone(),
                    _ => s
                        .local_addr()
                        .map(PeerAddr::Tcp)
                        .unwrap_or(self.local.clone()),
                };
                Ok((
                    Stream::Tcp(Lazy::Plain(s)),
                    ConnInfo {
                        peer: PeerAddr::Tcp(peer),
                        local,
                        secure: false,
                        tls: None,
                    },
                    waiting,
                ))
            }
            WorkerKind::Unix(l) => {
                let (fd, waiting) = accept_from(l, |l, f| rustix::net::accept_with(l, f)).await?;
                Ok((
                    Stream::Unix(Lazy::Plain(fd.into())),
                    ConnInfo {
                        peer: PeerAddr::Unix(Arc::from("")),
                        local: self.local.clone(),
                        secure: false,
                        tls: None,
                    },
                    waiting,
                ))
            }
        }
    }
}

/// Registers listener `l`'s readability with the current worker's reactor.
fn register<L: AsRawFd>(l: L) -> io::Result<AsyncFd<L>> {
    #[allow(unsafe_code)]
    // SAFETY: `l` is a std listener: it owns its descriptor and keeps that
    // same one until the `AsyncFd` is dropped or `into_inner` gives `l`
    // back; nothing replaces it meanwhile (`get_mut` is never called).
    let registered = unsafe { AsyncFd::register_with_interest(l, Interest::READABLE) };
    Ok(registered?)
}

/// Accepts on `listener` with `accept` (a non-blocking, close-on-exec
/// socket, not registered with the reactor: see lazy.rs); true if the
/// connection was already waiting (the accept did not wait for it).
async fn accept_from<L: AsRawFd + AsFd, R>(
    listener: &AsyncFd<L>,
    accept: impl Fn(&L, rustix::net::SocketFlags) -> rustix::io::Result<R>,
) -> io::Result<(R, bool)> {
    use rustix::net::SocketFlags;
    let mut waited = false;
    loop {
        // A wait means the listener was idle. The waker is kept in the
        // listener's own slot (one task accepts on a worker's listener);
        // `readable()` would put a waiter on the listener's list and take
        // it off again, about 400 instructions (callgrind) a new
        // connection that waited.
        let mut guard = std::future::poll_fn(|cx| {
            let ready = listener.poll_read_ready(cx);
            waited |= ready.is_pending();
            ready
        })
        .await?;
        let tried = guard.try_io(|l| {
            // A readiness this task did not wait for is left from the
            // last accept, which the reactor's edge-triggered interest
            // keeps until an accept fails: as a rule nothing is waiting
            // when connections come one at a time. Asking `poll` costs
            // 0.2 µs; the accept4 that fails with EAGAIN costs 2.7 µs
            // here (Linux makes the new socket and its file before it
            // looks at the queue, and frees them again), one a new
            // connection (docs/PERFORMANCE.md, session 44). Either way,
            // the readiness is cleared and the next connection wakes the
            // reactor: it is queued after the readiness was taken.
            if !waited && !queued(l.get_ref().as_fd()) {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            loop {
                match accept(l.get_ref(), SocketFlags::NONBLOCK | SocketFlags::CLOEXEC) {
                    Err(rustix::io::Errno::INTR) => {}
                    r => return r.map_err(io::Error::from),
                }
            }
        });
        match tried {
            Ok(r) => return r.map(|r| (r, !waited)),
            // Would block: the readiness is cleared; wait for the next.
            Err(_) => continue,
        }
    }
}

/// Whether a connection waits in `listener`'s queue: a `poll` that does
/// not wait. An error says yes, so that the accept reports it.
fn queued(listener: BorrowedFd<'_>) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&listener, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    !matches!(poll(&mut fds, Some(&now)), Ok(0))
}

impl Drop for BoundListener {
    fn drop(&mut self) {
        if let Kind::Unix(_, path) = &self.kind {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn bind_tcp(addr: SocketAddr) -> io::Result<StdTcpListener> {
    let domain = Domain::for_address(addr);
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // `[::]:80` means IPv6 only; IPv4 gets its own listener if wanted.
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    // Every TCP connection gets TCP_NODELAY: headers and small bodies go
    // out in one write, so Nagle would only add the 40 ms stall. Linux
    // gives accepted sockets the listener's setting, which spares a
    // `setsockopt` per connection.
    socket.set_nodelay(true)?;
    defer_accept(socket.as_fd(), true);
    // Inherited by accepted sockets as TCP_NODELAY is.
    if let Err(e) = set_tcp_option(socket.as_fd(), libc::TCP_NOTSENT_LOWAT, NOTSENT_LOWAT) {
        tracing::warn!(error = %e, "TCP_NOTSENT_LOWAT not set");
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    Ok(socket.into())
}

/// How long the kernel holds a connection that has sent nothing before
/// handing it to `accept` anyway (then the header read timeout applies).
const DEFER_ACCEPT_SECS: libc::c_int = 1;

/// TCP_DEFER_ACCEPT: the kernel wakes the acceptor when a connection's
/// first bytes have arrived, not at the end of the handshake, so a new
/// connection costs one wake-up, not two (accept, then the request). h2o
/// sets it by default, nginx with `listen ... deferred`. Measured
/// (docs/PERFORMANCE.md, session 14): a new connection per request, ab
/// c=10, 0 B: 19.2-19.3 -> 15.8-16.3 µs of server CPU per request. Every
/// client of HTTP and TLS speaks first; a connection that never does is
/// held by the kernel, not by tern, and reaches tern after about a second.
/// It is on from the start and follows the load from then on (see
/// [`Deferral`]). A failure is logged and the listener works without it.
fn defer_accept(fd: BorrowedFd<'_>, on: bool) {
    let secs = if on { DEFER_ACCEPT_SECS } else { 0 };
    if let Err(e) = set_tcp_option(fd, libc::TCP_DEFER_ACCEPT, secs) {
        tracing::warn!(error = %e, on, "TCP_DEFER_ACCEPT not changed");
    }
}

/// The most bytes a connection's socket holds that it has not sent yet
/// (TCP_NOTSENT_LOWAT, set on the listener and inherited): a write takes
/// more only once the socket has sent down to this, and the socket is
/// writable again only then. Bytes in flight do not count, so it caps no
/// transfer rate over a long path; it caps what waits in the kernel for a
/// client that reads slowly or not at all (a 3.9 MB body: 1.1 MB queued
/// against 3.8 MB without it).
///
/// Without it, a large body's write fills the socket with bytes the
/// receiver's window does not yet allow, and the kernel sends them later,
/// as the client's acknowledgements come, on the client's CPU: over
/// loopback the client's core did tern's sending too and ran out first.
/// Measured (docs/PERFORMANCE.md, session 21; 3.9 MB, one copy from the
/// cache, medians of 4-6 interleaved rounds): wrk c=10 788-856 -> 1,086-1,134
/// req/s (lighttpd 938-1,054), ab c=1 452 -> 746, the other rows level;
/// 512 KiB and 2 MiB did less well, and below 256 KiB the copy costs more
/// CPU per request (more wake-ups to refill). Bodies under it (every
/// small file, every 64 KB one) never meet it. What it cannot fix: over
/// loopback the copy is fast or slow by where the scheduler puts tern's
/// worker and the client (the same row's two modes, PERFORMANCE.md).
const NOTSENT_LOWAT: libc::c_int = 1 << 20;

/// Sets a TCP socket option that takes an `int`.
fn set_tcp_option(fd: BorrowedFd<'_>, option: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // No safe binding has these options (rustix and socket2 lack
    // TCP_DEFER_ACCEPT and TCP_NOTSENT_LOWAT).
    #[allow(unsafe_code)]
    // SAFETY: the descriptor is an open socket, borrowed for the whole
    // call; the value is a `c_int` on the stack, passed with its size, as
    // these options expect; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            option,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether new connections are held until their first bytes: while the
/// server is busy, and not while it is idle.
///
/// Holding spares a wake-up per connection, which is what a busy server
/// needs. On an idle one it costs latency: without it the acceptor wakes
/// at the handshake, while the client is still writing its request, and
/// has accepted by the time the request comes; with it, waking starts only
/// then. At one client with a new connection per request (ab -c 1, 0 B),
/// lighttpd with `server.defer-accept = 1` answered 0.89x as fast as
/// lighttpd without it, and tern always holding 0.81x; tern never holding
/// spent a quarter more CPU per request at ten clients (docs/PERFORMANCE.md,
/// session 20).
///
/// An accept counts as busy when it found its connection already waiting
/// or other connections are open, as idle otherwise. The hold is let go
/// only for a server that is idle at nearly every accept: one client at a
/// time. A busy accept adds [`BUSY_WEIGHT`] to a score, an idle one takes
/// one away, the score stays within `0..=`[`FULL`], and the setting turns
/// only at either end: on at `FULL`, off at 0. So the hold stays, or comes
/// back, once more than about one accept in nine is busy.
///
/// Many clients at a server that keeps up with them make a mix: tern
/// answers each connection before the next one comes, and only some
/// accepts find another open. A count that went one up for each busy
/// accept and one down for each idle one, turning at 0 and 8 (session 20),
/// turned the hold on and off 90 to 130 times a second under ab at ten
/// clients on a 64 KB file, off as often as on: a wake-up more, while off,
/// per connection, on the client's CPU as well as tern's
/// (docs/PERFORMANCE.md, session 40).
#[derive(Debug)]
pub(crate) struct Deferral {
    on: bool,
    score: u8,
}

/// The score at which the hold is taken, and where it starts.
const FULL: u8 = 64;

/// What a busy accept adds to the score; an idle one takes one away.
const BUSY_WEIGHT: u8 = 8;

impl Deferral {
    /// As the listener is bound: on, with a full score.
    pub(crate) fn new() -> Self {
        Deferral {
            on: true,
            score: FULL,
        }
    }

    /// Counts an accept made `busy` (or not); turns the listener's setting
    /// when the score reaches an end.
    pub(crate) fn count(&mut self, busy: bool, listener: &WorkerListener) {
        if let Some(on) = self.counted(busy) {
            if let WorkerKind::Tcp(l) = &listener.kind {
                defer_accept(l.as_fd(), on);
                tracing::debug!(listener = %listener.local, deferred = on, "TCP_DEFER_ACCEPT");
            }
        }
    }

    /// The score after an accept made `busy` (or not), and the new setting
    /// if it turned.
    fn counted(&mut self, busy: bool) -> Option<bool> {
        self.score = match busy {
            true => self.score.saturating_add(BUSY_WEIGHT).min(FULL),
            false => self.score.saturating_sub(1),
        };
        let want = match self.score {
            0 => false,
            FULL => true,
            _ => self.on,
        };
        (want != self.on).then(|| {
            self.on = want;
            want
        })
    }
}

/// A Unix socket file left by a previous run would make bind fail; remove it,
/// but never remove anything that is not a socket.
fn remove_stale_socket(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the path exists and is not a socket",
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::Deferral;

    /// The settings a deferral turns to over `accepts`, busy or idle.
    fn turns(d: &mut Deferral, accepts: impl IntoIterator<Item = bool>) -> Vec<bool> {
        accepts
            .into_iter()
            .filter_map(|busy| d.counted(busy))
            .collect()
    }

    /// One client at a time: the hold goes after 64 idle accepts, and a
    /// busy one now and then (a connection still closing) brings it back
    /// only if they come more often than about one in nine.
    #[test]
    fn the_hold_goes_for_one_client_at_a_time_and_comes_back_with_many() {
        let mut d = Deferral::new();
        assert_eq!(turns(&mut d, [false; 63]), [false; 0]);
        assert_eq!(turns(&mut d, [false]), [false]);
        let one_in_twenty = (0..10_000u32).map(|i| i.is_multiple_of(20));
        assert_eq!(turns(&mut d, one_in_twenty), [false; 0]);
        let one_in_four = (0..60u32).map(|i| i.is_multiple_of(4));
        assert_eq!(turns(&mut d, one_in_four), [true]);
    }

    /// Many clients at a server that keeps up with them: about half the
    /// accepts find others open. The hold stays, however they fall.
    #[test]
    fn the_hold_stays_while_busy_and_idle_accepts_mix() {
        let mut d = Deferral::new();
        // A fixed pseudo-random sequence with runs of idle accepts.
        let mut x: u32 = 0x9e37_79b9;
        let mixed = (0..100_000).map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x.is_multiple_of(2)
        });
        assert_eq!(turns(&mut d, mixed), [false; 0]);
    }

    /// What `bind_tcp` relies on to set TCP_NODELAY once: an accepted
    /// socket has its listener's.
    #[test]
    fn accepted_connections_have_tcp_nodelay() {
        let l = super::bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
        l.set_nonblocking(false).unwrap();
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        client.write_all(b"G").unwrap();
        let (accepted, _) = l.accept().unwrap();
        assert!(accepted.nodelay().unwrap());
    }

    /// A connection is accepted when its first bytes come, not at the
    /// handshake (TCP_DEFER_ACCEPT).
    #[test]
    fn a_connection_is_accepted_once_it_has_spoken() {
        let l = super::bind_tcp("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        let silent = l.accept();
        assert!(
            matches!(&silent, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "accepted before a byte came: {silent:?}"
        );
        client.write_all(b"GET").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let accepted = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(std::time::Instant::now() < deadline, "never accepted");
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        };
        let mut first = [0u8; 3];
        std::io::Read::read_exact(&mut &accepted, &mut first).unwrap();
        assert_eq!(&first, b"GET");
    }
}
