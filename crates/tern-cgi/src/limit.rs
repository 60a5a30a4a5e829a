//! Admission: at most `max_concurrent` programs of a route run at once
//! (CGI scripts in `tern-gateway`, WebAssembly instances in `tern-wasm`);
//! up to `queue` more requests wait (first come, first served) for at most
//! `queue_timeout`; anything beyond is answered 503 at once. Harvard's
//! server fell over at 30 clients because it forked for each; a bound keeps
//! a burst of CGI from starving every other request of CPU and memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tern_config::Admission;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Error;

/// A route's slots and queue.
#[derive(Debug)]
pub struct Limiter {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    queue_timeout: Duration,
}

/// Counts a request as waiting while it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Limiter {
    /// `max_concurrent` slots, `queue` waiting places, `queue_timeout`
    /// the longest wait.
    pub fn new(admission: &Admission) -> Self {
        Limiter {
            slots: Arc::new(Semaphore::new(admission.max_concurrent)),
            waiting: AtomicUsize::new(0),
            queue: admission.queue,
            queue_timeout: admission.queue_timeout,
        }
    }

    /// A slot, held until the script has been reaped.
    ///
    /// # Cancel safety
    /// Cancel safe: a cancelled wait leaves the queue.
    /// # Errors
    /// [`Error::Busy`] when the queue is full or the wait took too long.
    pub async fn admit(&self) -> Result<OwnedSemaphorePermit, Error> {
        // The semaphore is fair: when requests wait, no free permit is
        // left for a newcomer to take past them.
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.queue {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Error::Busy("every slot is busy and the queue is full"));
        }
        let _waiting = Waiting(&self.waiting);
        match tokio::time::timeout(self.queue_timeout, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(_)) => Err(Error::Busy("the route is closed")),
            Err(_) => Err(Error::Busy("waited too long for a free slot")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_then_queue_then_refusal() {
        let l = Arc::new(Limiter::new(&Admission {
            max_concurrent: 1,
            queue: 1,
            queue_timeout: Duration::from_secs(5),
        }));
        let first = l.admit().await.unwrap();
        let queued = {
            let l = l.clone();
            tokio::spawn(async move { l.admit().await.map(drop) })
        };
        // Let the second request join the queue.
        for _ in 0..100 {
            if l.waiting.load(Ordering::Relaxed) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(l.waiting.load(Ordering::Relaxed), 1);
        assert!(matches!(l.admit().await, Err(Error::Busy(_))));
        drop(first);
        queued.await.unwrap().unwrap();
        assert_eq!(l.waiting.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_queued_request_gives_up_after_the_queue_timeout() {
        let l = Limiter::new(&Admission {
            max_concurrent: 1,
            queue: 5,
            queue_timeout: Duration::from_millis(50),
        });
        let _first = l.admit().await.unwrap();
        assert!(matches!(l.admit().await, Err(Error::Busy(m)) if m.contains("too long")));
        assert_eq!(l.waiting.load(Ordering::Relaxed), 0);
    }
}
