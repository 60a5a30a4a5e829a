//! The manager thread: acts on the state's plans, creating and destroying
//! items concurrently on its own runtime, until the pool is closed and
//! drained.

use std::sync::Arc;
use std::time::Instant;

use tokio::task::JoinSet;

use crate::shared::Shared;
use crate::state::{Entry, Look};
use crate::{Factory, Retire};

/// Runs until the pool is closed (or dropped) and every item destroyed.
pub(crate) async fn run<F: Factory>(shared: Arc<Shared<F>>) {
    let _finish = Finish(&shared);
    let cfg = &shared.cfg;
    let mut tasks = JoinSet::new();
    let mut next_tick = Instant::now();
    let mut told_closing = false;
    loop {
        let now = Instant::now();
        let tick = now >= next_tick;
        if tick {
            next_tick = now + cfg.check_interval;
        }
        let plan = {
            let mut look = |item: &mut F::Item| shared.factory.check(item);
            let check: Option<Look<'_, F::Item>> = if tick { Some(&mut look) } else { None };
            shared.lock().plan(cfg, now, check)
        };
        if plan.closing && !told_closing {
            told_closing = true;
            shared.factory.closing();
        }
        for _ in 0..plan.create {
            tasks.spawn(create(Arc::clone(&shared)));
        }
        for (entry, why) in plan.destroy {
            tasks.spawn(destroy(Arc::clone(&shared), entry, why));
        }
        if plan.finished && tasks.is_empty() {
            return;
        }
        let wake_at = plan.wake_at.map_or(next_tick, |at| at.min(next_tick));
        tokio::select! {
            () = shared.wake.notified() => {}
            () = tokio::time::sleep_until(wake_at.into()) => {}
            Some(joined) = tasks.join_next() => {
                if let Err(err) = joined {
                    tracing::error!(pool = %cfg.name, "a pool task failed: {err}");
                }
            }
        }
    }
}

/// One creation, recorded in the state however it ends (a panic in the
/// factory counts as a failed creation).
async fn create<F: Factory>(shared: Arc<Shared<F>>) {
    let mut pending = Pending {
        shared: &shared,
        armed: true,
    };
    let result = shared.factory.create().await;
    pending.armed = false;
    let pid = result
        .as_ref()
        .ok()
        .and_then(|item| shared.factory.pid(item));
    shared
        .lock()
        .created(result, pid, &shared.cfg, Instant::now());
}

/// One destruction, recorded in the state however it ends.
async fn destroy<F: Factory>(shared: Arc<Shared<F>>, entry: Entry<F::Item>, why: Retire) {
    let _destroying = Destroying(&shared);
    shared.factory.destroy(entry.item, why).await;
}

struct Pending<'a, F: Factory> {
    shared: &'a Shared<F>,
    armed: bool,
}

impl<F: Factory> Drop for Pending<'_, F> {
    fn drop(&mut self) {
        if self.armed {
            let err = std::io::Error::other("the factory panicked");
            self.shared
                .lock()
                .created(Err(err), None, &self.shared.cfg, Instant::now());
        }
    }
}

struct Destroying<'a, F: Factory>(&'a Shared<F>);

impl<F: Factory> Drop for Destroying<'_, F> {
    fn drop(&mut self) {
        self.0.lock().destroyed();
    }
}

/// Marks the pool closed and drained when the manager stops, even by a
/// panic, so `close` never waits forever.
struct Finish<'a, F: Factory>(&'a Shared<F>);

impl<F: Factory> Drop for Finish<'_, F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(pool = %self.0.cfg.name, "the pool's manager panicked; items still leased will not be destroyed");
        }
        self.0.lock().close();
        self.0.done.send_replace(true);
    }
}
