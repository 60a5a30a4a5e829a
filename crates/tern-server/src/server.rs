//! The server: worker threads with a runtime each, accept loops over the
//! bound listeners, a connection limit, atomic reload of the [`Site`], and
//! graceful shutdown.
//!
//! Why a current-thread runtime per worker rather than one work-stealing
//! runtime: a connection's task never leaves its thread, so a request costs
//! no cross-thread wake-up (on 2 cores the work-stealing runtime spent most of
//! its time in futex wake-ups and context switches). Every worker registers the
//! same listening sockets, so whichever worker is idle accepts the next
//! connection (nginx's model without the accept mutex).
//!
//! Shutdown, in order: stop accepting (listeners closed, Unix socket files
//! removed); ask every connection to finish (idle ones close at once, ones with
//! a request in flight after its response); wait up to the grace period; then
//! stop the workers, which drops what is left. The caller flushes logs after
//! `run` returns.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::conn;
use crate::listen::{BoundListener, Stream, WorkerListener};
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
        let listeners = Arc::new(listeners);
        let w = Workers {
            shared: self.shared.clone(),
            permits: Arc::new(Semaphore::new(site.limits.max_connections)),
            conns: TaskTracker::new(),
            accepts: TaskTracker::new(),
            stop_accepting: CancellationToken::new(),
            drain: CancellationToken::new(),
            finish: CancellationToken::new(),
        };
        drop(site);
        let mut threads = Vec::new();
        let (ready_tx, mut ready_rx) =
            tokio::sync::mpsc::channel::<std::io::Result<()>>(workers.max(1));
        for i in 0..workers.max(1) {
            let w = w.clone();
            let ready = ready_tx.clone();
            let listeners = listeners.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("tern-worker-{i}"))
                    .spawn(move || worker(w, listeners, ready))?,
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

/// One worker thread: its own runtime, an accept loop per listener.
fn worker(
    w: Workers,
    listeners: Arc<Vec<BoundListener>>,
    ready: tokio::sync::mpsc::Sender<std::io::Result<()>>,
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
        for l in listeners.iter() {
            match l.register() {
                Ok(l) => mine.push(l),
                Err(e) => {
                    let _ = ready.send(Err(e)).await;
                    return;
                }
            }
        }
        drop(listeners);
        for l in mine {
            w.accepts.spawn(accept_loop(l, w.clone()));
        }
        drop(ready);
        w.finish.cancelled().await;
    });
    // Dropping the runtime drops any connection still open after the grace
    // period.
    drop(rt);
}

async fn accept_loop(listener: WorkerListener, w: Workers) {
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
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = w.shared.clone();
        let cancel = w.drain.clone();
        w.conns.spawn(async move {
            match stream {
                Stream::Tcp(s) => conn::serve(s, info, shared, cancel).await,
                Stream::Unix(s) => conn::serve(s, info, shared, cancel).await,
            }
            drop(permit);
        });
    }
}
