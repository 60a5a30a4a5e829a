//! The server: worker threads with a runtime each, accept loops over the
//! bound listeners, a connection limit, atomic reload of the [`Site`], and
//! graceful shutdown.
//!
//! Why a current-thread runtime per worker rather than one work-stealing
//! runtime: a connection's task never leaves its thread, so a request costs
//! no cross-thread wake-up (on 2 cores the work-stealing runtime spent most of
//! its time in futex wake-ups and context switches). Every worker has its own
//! handle on the listening sockets, but only the first polls them until it is
//! full: new connections gather on the first worker while it has CPU to
//! spare, and go to the others once it has not; a keep-alive connection on a
//! full worker moves to another between requests (see balance.rs: one worker
//! answering ten connections costs less per request than two answering five
//! each).
//!
//! Shutdown, in order: stop accepting (listeners closed, Unix socket files
//! removed); ask every connection to finish (idle ones close at once, ones with
//! a request in flight after its response); wait up to the grace period; then
//! stop the workers, which drops what is left. The caller flushes logs after
//! `run` returns.

use std::sync::Arc;
use std::time::Duration;

use tern_handler::ConnInfo;
use tokio::sync::{mpsc, Semaphore, TryAcquireError};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::balance::{Balance, Handed, Inbox};
use crate::conn;
use crate::listen::{BoundListener, Deferral, PausedListener, Stream, WorkerListener};
use crate::service::Shared;
use crate::site::Site;
use crate::slot::{PerClient, Slot};

/// A server ready to run.
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    stop: CancellationToken,
}

/// A handle to reload or stop a running server; cheap to clone.
#[derive(Clone, Debug)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl ServerHandle {
    /// Replaces the site. New requests use the new one at once (also on
    /// existing keep-alive connections); requests in flight finish on the old.
    pub fn reload(&self, site: Site) {
        self.shared.site.store(Arc::new(site));
    }

    /// The site now in use.
    pub fn site(&self) -> Arc<Site> {
        self.shared.site.load_full()
    }

    /// Whether every worker accepts connections (false before they all
    /// listen, and once a shutdown stopped accepting).
    pub fn serving(&self) -> bool {
        self.shared
            .serving
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Starts a graceful shutdown; `run` returns when it is done.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }
}

/// What every worker shares.
#[derive(Clone)]
struct Workers {
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    /// How many `permits` there are (`max_connections` at the start).
    max_connections: usize,
    /// Connections per client address (`max_connections_per_client`).
    per_client: Option<Arc<PerClient>>,
    /// Connection tasks.
    conns: TaskTracker,
    /// Accept loops.
    accepts: TaskTracker,
    /// Cancelled to stop accepting.
    stop_accepting: CancellationToken,
    /// Cancelled to ask connections to finish (in a worker: its own child
    /// of the server's token).
    drain: CancellationToken,
    /// Cancelled to end the worker threads.
    finish: CancellationToken,
    /// Who serves new connections.
    balance: Arc<Balance>,
}

impl Server {
    /// A server for `site`.
    pub fn new(site: Site) -> Self {
        Server {
            shared: Arc::new(Shared::new(site)),
            stop: CancellationToken::new(),
        }
    }

    /// A handle for reload and shutdown.
    pub fn handle(&self) -> ServerHandle {
        ServerHandle {
            shared: self.shared.clone(),
            stop: self.stop.clone(),
        }
    }

    /// Serves on `listeners` with `workers` threads until
    /// [`ServerHandle::shutdown`], then drains. Runs on any tokio runtime; the
    /// connections run on the workers' own runtimes.
    pub async fn run(self, listeners: Vec<BoundListener>, workers: usize) -> std::io::Result<()> {
        let site = self.shared.site.load_full();
        let ports = listeners
            .iter()
            .map(|l| l.local_addr().socket_addr().map(|a| a.port()))
            .collect();
        let _ = self.shared.ports.set(ports);
        let listeners = Arc::new(listeners);
        let (balance, inboxes) = Balance::new(workers.max(1));
        let w = Workers {
            shared: self.shared.clone(),
            permits: Arc::new(Semaphore::new(site.limits.max_connections)),
            max_connections: site.limits.max_connections,
            per_client: PerClient::new(
                site.limits.max_connections_per_client,
                site.limits.max_connections,
            )
            .map(Arc::new),
            conns: TaskTracker::new(),
            accepts: TaskTracker::new(),
            stop_accepting: CancellationToken::new(),
            drain: CancellationToken::new(),
            finish: CancellationToken::new(),
            balance: Arc::new(balance),
        };
        drop(site);
        let mut threads = Vec::new();
        let (ready_tx, mut ready_rx) = mpsc::channel::<std::io::Result<()>>(workers.max(1));
        for (i, inbox) in inboxes.into_iter().enumerate() {
            let w = w.clone();
            let ready = ready_tx.clone();
            let listeners = listeners.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("tern-worker-{i}"))
                    .spawn(move || worker(i, w, listeners, inbox, ready))?,
            );
        }
        drop(ready_tx);
        let mut failed = None;
        while let Some(r) = ready_rx.recv().await {
            if let Err(e) = r {
                failed.get_or_insert(e);
            }
        }
        if failed.is_none() {
            self.shared
                .serving
                .store(true, std::sync::atomic::Ordering::Release);
            self.stop.cancelled().await;
        }
        self.shared
            .serving
            .store(false, std::sync::atomic::Ordering::Release);

        // Stop accepting, and close the sockets once no worker holds them.
        w.stop_accepting.cancel();
        w.accepts.close();
        w.accepts.wait().await;
        let Workers {
            conns,
            drain,
            finish,
            ..
        } = w;
        // The workers dropped their references after registering.
        drop(listeners);

        conns.close();
        // Counted first: a connection between requests polls its wait for
        // the drain again only once the count has moved.
        crate::h1::count_drain();
        drain.cancel();
        let grace = self.shared.site.load().grace_period;
        let open = conns.len();
        if open > 0 {
            tracing::info!("waiting up to {grace:?} for {open} connection(s) to finish");
        }
        if tokio::time::timeout(grace, conns.wait()).await.is_err() {
            tracing::warn!(
                "grace period of {grace:?} over: closing {} connection(s) with requests in flight",
                conns.len()
            );
        }
        finish.cancel();
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// One worker thread (number `me`): its own runtime, an accept loop per
/// listener, and the inbox of connections the others hand it.
fn worker(
    me: usize,
    mut w: Workers,
    listeners: Arc<Vec<BoundListener>>,
    inbox: Inbox,
    ready: mpsc::Sender<std::io::Result<()>>,
) {
    // The worker's own child of the drain: each connection polls its wait
    // for the drain once per request it waits for, and every such poll
    // takes the token's lock and its waiters' lock. One token for every
    // worker made those two locks bounce between the cores.
    w.drain = w.drain.child_token();
    let mut rt = tokio::runtime::Builder::new_current_thread();
    rt.enable_all();
    w.balance.hooks(me, &mut rt);
    let rt = match rt.build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.blocking_send(Err(e));
            return;
        }
    };
    rt.block_on(async {
        let mut mine = Vec::new();
        for (index, l) in listeners.iter().enumerate() {
            match l.handle(index) {
                Ok(l) => mine.push(l),
                Err(e) => {
                    let _ = ready.send(Err(e)).await;
                    return;
                }
            }
        }
        drop(listeners);
        for l in mine {
            w.accepts.spawn(accept_loop(me, l, w.clone()));
        }
        // Not tracked with the accept loops: these end with the runtime.
        tokio::spawn(receive(me, inbox, w.clone()));
        tokio::spawn(heartbeat());
        drop(ready);
        w.finish.cancelled().await;
    });
    // Dropping the runtime drops any connection still open after the grace
    // period.
    drop(rt);
}

/// Accepts on one listener while this worker is asked to (the first
/// worker always is; see balance.rs), its handle out of the runtime's
/// poll set the rest of the time.
async fn accept_loop(me: usize, mut listener: PausedListener, w: Workers) {
    let mut asked = w.balance.asked(me);
    loop {
        tokio::select! {
            r = asked.wait_for(|&yes| yes) => if r.is_err() { return },
            _ = w.stop_accepting.cancelled() => return,
        }
        let local = listener.local_addr().clone();
        let resumed = match listener.resume() {
            Ok(l) => l,
            Err(e) => {
                tracing::error!("listening on {local}: {e}");
                return;
            }
        };
        let Some(done) = accept(me, resumed, &w).await else {
            return;
        };
        listener = match done.pause() {
            Ok(l) => l,
            Err(e) => {
                tracing::error!("listening on {local}: {e}");
                return;
            }
        };
    }
}

/// Accepts connections until this worker is no longer needed (then
/// returns the listener) or the server stops accepting.
async fn accept(me: usize, listener: WorkerListener, w: &Workers) -> Option<WorkerListener> {
    // The first worker, which always accepts, sets the deferral for all.
    let mut deferral = (me == 0).then(Deferral::new);
    // One wait for the stop, made once and polled first each time: made
    // in each select, a new connection paid for putting a waiter on the
    // token's list and taking it off again, twice, and for the random
    // start of an unbiased select: about 550 instructions of a new
    // connection's 19,300 (callgrind, session 35).
    let mut stop = std::pin::pin!(w.stop_accepting.cancelled());
    loop {
        // At the connection limit, wait here: new connections queue in the
        // kernel's backlog and existing ones are unharmed.
        let permit = match w.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(TryAcquireError::Closed) => return None,
            Err(TryAcquireError::NoPermits) => tokio::select! {
                biased;
                () = &mut stop => return None,
                p = w.permits.clone().acquire_owned() => p.ok()?,
            },
        };
        let accepted = tokio::select! {
            biased;
            () = &mut stop => return None,
            r = listener.accept() => r,
        };
        let (stream, info) = match accepted {
            Ok((stream, info, waiting)) => {
                if let Some(d) = &mut deferral {
                    // Others open besides this one's (its permit is taken).
                    let open = w.max_connections - w.permits.available_permits();
                    d.count(waiting || open > 1, &listener);
                }
                (stream, info)
            }
            Err(e) => {
                // EMFILE and friends: log, back off briefly, keep serving.
                tracing::error!("accept on {}: {e}", listener.local_addr());
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Some(o) = w.shared.observer {
            o.metrics.connection_accepted();
        }
        let client = match w.per_client.as_deref().map(|p| p.admit(&info)) {
            None => None,
            Some(Ok(guard)) => guard,
            Some(Err(())) => {
                if let Some(o) = &w.shared.observer {
                    o.metrics.connection_refused();
                }
                continue;
            }
        };
        let permit = Slot::new(permit, client);
        let index = listener.index();
        let to = w.balance.serves(me);
        if to == me {
            spawn_conn(w, me, stream, info, index, permit, None);
        } else {
            match stream.detach() {
                Ok(stream) => w.balance.hand(
                    to,
                    Handed {
                        stream,
                        info,
                        index,
                        permit,
                        moved_here: None,
                    },
                ),
                Err(e) => tracing::warn!("accept on {}: {e}", listener.local_addr()),
            }
        }
        if me > 0 && !w.balance.still_needed(me) {
            return Some(listener);
        }
        // The connection's task first: it reads and answers the request
        // that came with it before this loop asks the listener for the
        // next one. That ask finds nothing, as a rule, when one client
        // connects at a time (an accept4 that fails with EAGAIN), and made
        // before the answer it was on the answer's path.
        behind_spawned().await;
    }
}

/// Lets the tasks that are queued run before the caller goes on: its
/// task is put at the back of the worker's queue (a current-thread
/// runtime runs woken tasks in turn). Not `tokio::task::yield_now`,
/// which defers the wake until the runtime has polled its driver: a
/// system call (`epoll_wait` with no timeout) each time.
async fn behind_spawned() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return std::task::Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    })
    .await;
}

/// A timer due every second, so that the runtime's timer driver always
/// expects to wake within a second. tokio wakes its driver (an eventfd
/// write, then a spurious return from epoll_wait) whenever a timer is set
/// earlier than the next wake the driver expects; with no timer pending,
/// each new connection's header-read timer was such a timer, a write and a
/// wake-up per connection. Connection timers (10 s and more by default) now
/// fall after the next beat and set nothing off.
async fn heartbeat() {
    let mut beat = tokio::time::interval(HEARTBEAT);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        beat.tick().await;
    }
}

/// See [`heartbeat`].
const HEARTBEAT: Duration = Duration::from_secs(1);

/// Serves the connections other workers hand to this one.
async fn receive(me: usize, mut inbox: Inbox, w: Workers) {
    while let Some(h) = inbox.recv().await {
        let stream = h.stream.attach();
        spawn_conn(&w, me, stream, h.info, h.index, h.permit, h.moved_here);
    }
}

/// Serves a connection on worker `me` until it ends, or moves to another
/// worker between requests.
fn spawn_conn(
    w: &Workers,
    me: usize,
    stream: Stream,
    info: ConnInfo,
    index: usize,
    permit: Slot,
    moved_here: Option<bytes::Bytes>,
) {
    let shared = w.shared.clone();
    let cancel = w.drain.clone();
    let balance = w.balance.clone();
    let observer = shared.observer;
    if let Some(o) = observer {
        o.metrics.connection_opened();
    }
    // Shared from here: a connection's task holds a pointer, not the
    // addresses (its future is the memory of every idle connection).
    let info = Arc::new(info);
    // Boxed before it is spawned: the spawn moves the future five times
    // on its way into the task (the tracker's wrapper, the runtime's
    // context, the task cell), and each move copies all of it, a few
    // kilobytes; boxed, each copies a pointer. A new connection's cost
    // in instructions fell by 6.5% (docs/PERFORMANCE.md, session 19).
    // Made in its box (`pin_boxed`), it is not copied even once.
    w.conns.spawn(tern_handler::pin_boxed(|| async move {
        // Counted closed on this thread when it ends or moves on (the
        // next worker counts it open).
        let _closed = observer.map(Closed);
        let place = crate::balance::Place {
            me,
            balance: balance.clone(),
        };
        let moved = match stream {
            Stream::Tcp(s) => conn::serve(s, info, index, shared, cancel, place, moved_here).await,
            Stream::Unix(s) => conn::serve(s, info, index, shared, cancel, place, moved_here).await,
        };
        if let Some(m) = moved {
            balance.hand(
                m.to,
                Handed {
                    stream: m.stream,
                    info: Arc::unwrap_or_clone(m.info),
                    index,
                    permit,
                    moved_here: Some(m.preread),
                },
            );
        }
    }));
}

/// Counts a connection closed when dropped.
struct Closed(&'static tern_observe::Observer);

impl Drop for Closed {
    fn drop(&mut self) {
        self.0.metrics.connection_closed();
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::net::TcpStream;

    use http::Response;
    use tern_config::ListenAddr;
    use tern_handler::{Exchange, Handler, HandlerFuture, PeerAddr, ResponseBody};

    use super::*;
    use crate::route::{Router, SiteRoutes};

    /// Answers with the name of the worker thread serving the connection;
    /// on `/spin`, only after keeping that worker busy for 300 ms.
    struct WhichWorker;

    impl Handler for WhichWorker {
        fn call(&self, exchange: Exchange) -> HandlerFuture {
            if exchange.path.as_str() == "/spin" {
                let until = std::time::Instant::now() + Duration::from_millis(300);
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            HandlerFuture::ready(Response::new(ResponseBody::full(name)))
        }

        fn kind(&self) -> &'static str {
            "test"
        }
    }

    /// A server of [`WhichWorker`] with two workers, its address, its
    /// handle, the thread running it, and the guard that keeps other such
    /// servers from running meanwhile. The machine is taken to have CPU to
    /// spare, whatever else runs on it.
    fn two_workers() -> (
        std::net::SocketAddr,
        ServerHandle,
        std::thread::JoinHandle<std::io::Result<()>>,
        std::sync::MutexGuard<'static, ()>,
    ) {
        two_workers_with(None)
    }

    /// [`two_workers`], with `grace` as the grace period for a stop
    /// (`None`: the test site's own).
    fn two_workers_with(
        grace: Option<Duration>,
    ) -> (
        std::net::SocketAddr,
        ServerHandle,
        std::thread::JoinHandle<std::io::Result<()>>,
        std::sync::MutexGuard<'static, ()>,
    ) {
        // One at a time: a test's worker kept busy by another test's spin
        // would count as full, and hand its connections over.
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let alone = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        crate::balance::ASSUME_SPARE.store(true, std::sync::atomic::Ordering::Relaxed);
        let routes = SiteRoutes::new("test", Arc::new(WhichWorker));
        let mut router = Router::new();
        router.add_site(&[], true, routes);
        let mut site = Site::for_test(router);
        if let Some(grace) = grace {
            site.grace_period = grace;
        }
        let listener =
            BoundListener::bind(&ListenAddr::Tcp(([127, 0, 0, 1], 0).into())).expect("a port");
        let PeerAddr::Tcp(addr) = *listener.local_addr() else {
            unreachable!("bound to TCP")
        };
        let server = Server::new(site);
        let handle = server.handle();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let serving = std::thread::spawn(move || rt.block_on(server.run(vec![listener], 2)));
        (addr, handle, serving, alone)
    }

    /// Sends a request for `path` on `c`.
    fn ask(c: &mut TcpStream, path: &str) {
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    }

    /// Reads the answer to [`ask`]: the name of the worker.
    fn which(c: &mut TcpStream) -> String {
        let mut buf = [0u8; 1024];
        let mut got = Vec::new();
        // The body, the worker's name, ends the response.
        while !(got.windows(12).any(|w| w == b"tern-worker-")
            && got.last().is_some_and(u8::is_ascii_digit))
        {
            let n = tern_testkit::read_some(c, &mut buf).expect("a response");
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got).into_owned();
        text[text.find("tern-worker-").unwrap()..].trim().to_owned()
    }

    /// Ten keep-alive connections opened at once, as a load tester opens
    /// them, to a server with CPU to spare: one worker serves them all
    /// (spread over two, each request cost a third more CPU). At least 8
    /// of 10, not all: a worker descheduled for 10 ms on a loaded machine
    /// rightly counts as full.
    #[test]
    fn connections_gather_on_one_worker_while_it_has_cpu_to_spare() {
        let (addr, handle, serving, _alone) = two_workers();
        let mut conns: Vec<TcpStream> = (0..10)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for c in &mut conns {
            ask(c, "/");
            *seen.entry(which(c)).or_default() += 1;
        }
        handle.shutdown();
        drop(conns);
        serving.join().unwrap().unwrap();
        let first = seen.get("tern-worker-0").copied().unwrap_or(0);
        assert!(first >= 8, "{seen:?}");
    }

    /// While the first worker is busy, a new connection goes to the
    /// other; once it has CPU to spare again, new ones gather on it again.
    #[test]
    fn a_full_worker_hands_new_connections_to_another() {
        let (addr, handle, serving, _alone) = two_workers();
        let mut busy = TcpStream::connect(addr).expect("connect");
        ask(&mut busy, "/spin");
        std::thread::sleep(Duration::from_millis(50));
        let mut other = TcpStream::connect(addr).expect("connect");
        ask(&mut other, "/");
        assert_eq!(which(&mut busy), "tern-worker-0");
        assert_eq!(which(&mut other), "tern-worker-1", "handed over");

        std::thread::sleep(Duration::from_millis(100));
        // The helper may take one more before it sees it is not needed.
        let mut later = Vec::new();
        for _ in 0..6 {
            let mut c = TcpStream::connect(addr).expect("connect");
            ask(&mut c, "/");
            later.push(which(&mut c));
        }
        handle.shutdown();
        serving.join().unwrap().unwrap();
        let helped = later.iter().filter(|w| *w != "tern-worker-0").count();
        assert!(helped <= 1, "{later:?}");
    }

    /// A keep-alive connection whose request kept its worker full moves
    /// to the other worker between requests, with the start of its next
    /// request (already read by the first worker) carried over.
    #[test]
    fn a_connection_on_a_full_worker_moves_between_requests() {
        let (addr, handle, serving, _alone) = two_workers();
        let mut c = TcpStream::connect(addr).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // The busy request and the start of the next, in one write.
        c.write_all(b"GET /spin HTTP/1.1\r\nHost: t\r\n\r\nGET / HT")
            .unwrap();
        assert_eq!(which(&mut c), "tern-worker-0");
        std::thread::sleep(Duration::from_millis(100));
        c.write_all(b"TP/1.1\r\nHost: t\r\n\r\n").unwrap();
        assert_eq!(which(&mut c), "tern-worker-1", "moved, and the head whole");
        // And it stays usable there.
        ask(&mut c, "/");
        assert_eq!(which(&mut c), "tern-worker-1");
        handle.shutdown();
        drop(c);
        serving.join().unwrap().unwrap();
    }

    /// Stops the server on a thread of its own: that thread, and what says
    /// the server has ended.
    fn stop(
        handle: ServerHandle,
        serving: std::thread::JoinHandle<std::io::Result<()>>,
    ) -> (
        std::thread::JoinHandle<std::thread::Result<std::io::Result<()>>>,
        std::sync::mpsc::Receiver<()>,
    ) {
        let (ended_tx, ended_rx) = std::sync::mpsc::channel();
        let stopping = std::thread::spawn(move || {
            handle.shutdown();
            let r = serving.join();
            let _ = ended_tx.send(());
            r
        });
        (stopping, ended_rx)
    }

    /// A stop closes a connection that waits between requests at once,
    /// long before the grace period ends: its wait for the drain, polled
    /// once when it first waited, is polled again once the drain begins
    /// (`h1.rs`), and the read of its next request is not waited for.
    #[test]
    fn a_stop_closes_a_kept_connection_between_requests_at_once() {
        let (addr, handle, serving, _alone) = two_workers_with(Some(Duration::from_secs(60)));
        let mut c = TcpStream::connect(addr).unwrap();
        for _ in 0..3 {
            ask(&mut c, "/");
            which(&mut c);
        }
        // Idle now, and waiting for a fourth.
        std::thread::sleep(Duration::from_millis(200));
        let (stopping, ended_rx) = stop(handle, serving);
        // The read times out after 10 s (`ask`): a connection left to the
        // grace period would still be open then.
        let mut rest = Vec::new();
        let read = std::io::Read::read_to_end(&mut c, &mut rest);
        assert!(read.is_ok(), "the kept connection is still open: {read:?}");
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
        assert!(
            ended_rx.recv_timeout(Duration::from_secs(10)).is_ok(),
            "the server still runs 10 s after the stop"
        );
        stopping.join().unwrap().unwrap().unwrap();
    }

    /// A stop while new connections keep coming: the workers stop
    /// accepting and the server ends, though the acceptor never waits
    /// long for a connection (it looks at the stop before each accept, and
    /// lets each new connection's task run before the next).
    #[test]
    fn a_stop_ends_accepting_while_connections_keep_coming() {
        let (addr, handle, serving, _alone) = two_workers();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let clients: Vec<_> = (0..4)
            .map(|_| {
                let done = done.clone();
                std::thread::spawn(move || {
                    let mut opened = 0u32;
                    // Bounded: at most 20,000 connections or 20 s each.
                    let until = std::time::Instant::now() + Duration::from_secs(20);
                    while !done.load(std::sync::atomic::Ordering::Relaxed)
                        && opened < 20_000
                        && std::time::Instant::now() < until
                    {
                        if let Ok(mut c) = TcpStream::connect(addr) {
                            opened += 1;
                            let _ = c.write_all(
                                b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                            );
                        }
                    }
                    opened
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        let (stopping, ended_rx) = stop(handle, serving);
        let ended = ended_rx.recv_timeout(Duration::from_secs(10));
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let opened: u32 = clients.into_iter().map(|c| c.join().unwrap()).sum();
        assert!(opened > 0, "no connection was made");
        assert!(ended.is_ok(), "the server still runs 10 s after the stop");
        stopping.join().unwrap().unwrap().unwrap();
    }
}
