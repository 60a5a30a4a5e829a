//! The server: accept loops over bound listeners, a connection limit, atomic
//! reload of the [`Site`], and graceful shutdown.
//!
//! Shutdown, in order: stop accepting (listeners are dropped, Unix socket
//! files removed); ask every connection to finish (idle ones close at once,
//! ones with a request in flight close after its response); wait up to the
//! grace period; then abort what is left. The caller flushes logs after
//! `run` returns.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::conn;
use crate::listen::{BoundListener, Stream};
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

    /// Serves on `listeners` until [`ServerHandle::shutdown`], then drains.
    pub async fn run(self, listeners: Vec<BoundListener>) {
        let site = self.shared.site.load_full();
        let permits = Arc::new(Semaphore::new(site.limits.max_connections));
        drop(site);
        let tracker = TaskTracker::new();
        let conns = CancellationToken::new();
        let mut accepts = Vec::new();
        for l in listeners {
            let l = Arc::new(l);
            accepts.push(tokio::spawn(accept_loop(
                l,
                self.shared.clone(),
                permits.clone(),
                tracker.clone(),
                conns.clone(),
                self.stop.clone(),
            )));
        }
        self.stop.cancelled().await;
        // Stop accepting; dropping the listeners closes them.
        for a in &accepts {
            a.abort();
        }
        for a in accepts {
            let _ = a.await;
        }
        tracker.close();
        conns.cancel();
        let grace = self.shared.site.load().grace_period;
        let open = tracker.len();
        if open > 0 {
            tracing::info!("waiting up to {grace:?} for {open} connection(s) to finish");
        }
        if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
            tracing::warn!(
                "grace period of {grace:?} over: closing {} connection(s) with requests in flight",
                tracker.len()
            );
        }
    }
}

async fn accept_loop(
    listener: Arc<BoundListener>,
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    tracker: TaskTracker,
    conns: CancellationToken,
    stop: CancellationToken,
) {
    loop {
        // At the connection limit, wait here: new connections queue in the
        // kernel's backlog and existing ones are unharmed.
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let (stream, info) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                if stop.is_cancelled() {
                    return;
                }
                // EMFILE and friends: log, back off briefly, keep serving.
                tracing::error!("accept on {}: {e}", listener.local_addr());
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        let cancel = conns.clone();
        tracker.spawn(async move {
            match stream {
                Stream::Tcp(s) => conn::serve(s, info, shared, cancel).await,
                Stream::Unix(s) => conn::serve(s, info, shared, cancel).await,
            }
            drop(permit);
        });
    }
}
