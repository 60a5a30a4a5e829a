//! The server: worker threads with a runtime each, accept loops over the
//! bound listeners, a connection limit, atomic reload of the [`Site`], and
//! graceful shutdown.
//!
//! Why a current-thread runtime per worker rather than one work-stealing
//! runtime: a connection's task never leaves its thread, so a request costs
//! no cross-thread wake-up (on 2 cores the work-stealing runtime spent most of
//! its time in futex wake-ups and context switches). Every worker registers the
//! same listening sockets, so whichever worker is idle accepts the next
//! connection (nginx's model without the accept mutex). A connection stays on
//! the worker that serves it, so a burst (a load tester opening ten
//! keep-alive connections at once) must not all land on the first worker to
//! wake: a worker with two connections more than another hands it the next
//! ([`Balance`]).
//!
//! Shutdown, in order: stop accepting (listeners closed, Unix socket files
//! removed); ask every connection to finish (idle ones close at once, ones with
//! a request in flight after its response); wait up to the grace period; then
//! stop the workers, which drops what is left. The caller flushes logs after
//! `run` returns.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tern_handler::ConnInfo;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::conn;
use crate::listen::{BoundListener, Detached, Stream, WorkerListener};
use crate::service::Shared;
use crate::site::Site;

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
    /// Connection tasks.
    conns: TaskTracker,
    /// Accept loops.
    accepts: TaskTracker,
    /// Cancelled to stop accepting.
    stop_accepting: CancellationToken,
    /// Cancelled to ask connections to finish.
    drain: CancellationToken,
    /// Cancelled to end the worker threads.
    finish: CancellationToken,
    /// Open connections per worker.
    balance: Arc<Balance>,
}

/// Open connections per worker, for spreading new ones. Counts, not load:
/// a connection is the unit a worker keeps, and on keep-alive benchmarks
/// and HTTP/2 clients a few long connections carry all the work.
///
/// The worker that accepts a connection serves it, unless it has [`AHEAD`]
/// more than the least-loaded worker: then it hands the connection to that
/// one (its inbox). So spreading costs one relaxed load per worker on the
/// accept path, and a cross-thread wake-up only when it moves a connection
/// (a burst, as a load tester opens ten at once); a steady stream of
/// short connections costs nothing. A handed connection waits until its
/// worker next yields; the worker that accepted it never waits.
#[derive(Debug)]
struct Balance {
    open: Box<[AtomicUsize]>,
    /// Each worker's inbox of connections handed over by the others.
    inbox: Box<[mpsc::UnboundedSender<Handed>]>,
}

/// A connection accepted by one worker for another to serve.
#[derive(Debug)]
struct Handed {
    stream: Detached,
    info: ConnInfo,
    /// The listener it came in on, by place.
    index: usize,
    permit: OwnedSemaphorePermit,
    counted: OpenConn,
}

/// How far ahead of the least-loaded worker a worker may get before it
/// hands new connections to the others.
const AHEAD: usize = 2;

impl Balance {
    /// The balance of `workers` workers, and each one's inbox.
    fn new(workers: usize) -> (Balance, Vec<mpsc::UnboundedReceiver<Handed>>) {
        let (inbox, receivers) = (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
        let balance = Balance {
            open: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            inbox: Vec::into_boxed_slice(inbox),
        };
        (balance, receivers)
    }

    /// Who serves a connection `me` accepted: `me`, unless it has
    /// [`AHEAD`] connections more than the least-loaded worker, which then
    /// does.
    fn serves(&self, me: usize) -> usize {
        let mine = self.open[me].load(Ordering::Relaxed);
        let (least, count) = self
            .open
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .enumerate()
            .min_by_key(|&(_, n)| n)
            .unwrap_or((me, mine));
        if mine >= count + AHEAD {
            least
        } else {
            me
        }
    }

    /// Counts a connection served by `worker`; the guard counts its end.
    fn opened(self: &Arc<Balance>, worker: usize) -> OpenConn {
        self.open[worker].fetch_add(1, Ordering::Relaxed);
        OpenConn {
            balance: self.clone(),
            worker,
        }
    }
}

/// A connection counted in [`Balance`] until dropped.
#[derive(Debug)]
struct OpenConn {
    balance: Arc<Balance>,
    worker: usize,
}

impl Drop for OpenConn {
    fn drop(&mut self) {
        self.balance.open[self.worker].fetch_sub(1, Ordering::Relaxed);
    }
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
            self.stop.cancelled().await;
        }

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
    w: Workers,
    listeners: Arc<Vec<BoundListener>>,
    inbox: mpsc::UnboundedReceiver<Handed>,
    ready: mpsc::Sender<std::io::Result<()>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.blocking_send(Err(e));
            return;
        }
    };
    rt.block_on(async {
        let mut mine = Vec::new();
        for (index, l) in listeners.iter().enumerate() {
            match l.register(index) {
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
        tokio::spawn(receive(inbox, w.clone()));
        tokio::spawn(heartbeat());
        drop(ready);
        w.finish.cancelled().await;
    });
    // Dropping the runtime drops any connection still open after the grace
    // period.
    drop(rt);
}

async fn accept_loop(me: usize, listener: WorkerListener, w: Workers) {
    loop {
        // At the connection limit, wait here: new connections queue in the
        // kernel's backlog and existing ones are unharmed.
        let permit = tokio::select! {
            p = w.permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => return,
            },
            _ = w.stop_accepting.cancelled() => return,
        };
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = w.stop_accepting.cancelled() => return,
        };
        let (stream, info) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // EMFILE and friends: log, back off briefly, keep serving.
                tracing::error!("accept on {}: {e}", listener.local_addr());
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let index = listener.index();
        let to = w.balance.serves(me);
        let counted = w.balance.opened(to);
        if to == me {
            spawn_conn(&w, stream, info, index, permit, counted);
            continue;
        }
        let handed = stream.detach().map(|stream| Handed {
            stream,
            info,
            index,
            permit,
            counted,
        });
        match handed {
            // The inbox is gone only when that worker has stopped: the
            // connection is dropped, as at shutdown.
            Ok(h) => drop(w.balance.inbox[to].send(h)),
            Err(e) => tracing::warn!("accept on {}: {e}", listener.local_addr()),
        }
    }
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
async fn receive(mut inbox: mpsc::UnboundedReceiver<Handed>, w: Workers) {
    while let Some(h) = inbox.recv().await {
        match h.stream.attach() {
            Ok(stream) => spawn_conn(&w, stream, h.info, h.index, h.permit, h.counted),
            Err(e) => tracing::warn!("a connection handed over: {e}"),
        }
    }
}

/// Serves a connection on this worker until it ends.
fn spawn_conn(
    w: &Workers,
    stream: Stream,
    info: ConnInfo,
    index: usize,
    permit: OwnedSemaphorePermit,
    counted: OpenConn,
) {
    let shared = w.shared.clone();
    let cancel = w.drain.clone();
    w.conns.spawn(async move {
        match stream {
            Stream::Tcp(s) => conn::serve(s, info, index, shared, cancel).await,
            Stream::Unix(s) => conn::serve(s, info, index, shared, cancel).await,
        }
        drop(counted);
        drop(permit);
    });
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};
    use std::net::TcpStream;

    use http::Response;
    use tern_config::ListenAddr;
    use tern_handler::{Exchange, Handler, HandlerFuture, PeerAddr, ResponseBody};

    use super::*;
    use crate::route::{Router, SiteRoutes};

    /// Answers with the name of the worker thread serving the connection.
    struct WhichWorker;

    impl Handler for WhichWorker {
        fn call(&self, _exchange: Exchange) -> HandlerFuture {
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            Box::pin(async move { Response::new(ResponseBody::full(name)) })
        }

        fn kind(&self) -> &'static str {
            "test"
        }
    }

    #[test]
    fn a_worker_two_ahead_of_the_least_loaded_hands_it_the_next() {
        let b = Arc::new(Balance::new(2).0);
        let first = b.opened(0);
        assert_eq!(b.serves(0), 0, "one more is not ahead");
        let second = b.opened(0);
        assert_eq!((b.serves(0), b.serves(1)), (1, 1));
        let other = b.opened(1);
        assert_eq!(b.serves(0), 0);
        drop((first, second, other));
        assert_eq!((b.serves(0), b.serves(1)), (0, 1));
        let lone = Arc::new(Balance::new(1).0);
        let _conns = (lone.opened(0), lone.opened(0), lone.opened(0));
        assert_eq!(lone.serves(0), 0, "a lone worker serves all");
    }

    /// Ten keep-alive connections opened at once, as a load tester opens
    /// them: without the balance, the first worker to wake accepts the
    /// whole burst (seen with wrk: ten on one worker, none on the other).
    #[test]
    fn connections_are_spread_over_the_workers() {
        let routes = SiteRoutes::new("test", Arc::new(WhichWorker));
        let mut router = Router::new();
        router.add_site(&[], true, routes);
        let site = Site::for_test(router);
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

        let mut conns: Vec<TcpStream> = (0..10)
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for c in &mut conns {
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            let mut buf = [0u8; 1024];
            let mut got = Vec::new();
            // The body, the worker's name, ends the response.
            while !(got.windows(12).any(|w| w == b"tern-worker-")
                && got.last().is_some_and(u8::is_ascii_digit))
            {
                let n = c.read(&mut buf).expect("a response");
                assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
                got.extend_from_slice(&buf[..n]);
            }
            let text = String::from_utf8_lossy(&got).into_owned();
            let worker = text[text.find("tern-worker-").unwrap()..].trim().to_owned();
            *seen.entry(worker).or_default() += 1;
        }
        handle.shutdown();
        drop(conns);
        serving.join().unwrap().unwrap();
        assert_eq!(seen.len(), 2, "both workers serve: {seen:?}");
        assert!(seen.values().all(|&n| n >= 3), "{seen:?}");
    }
}
