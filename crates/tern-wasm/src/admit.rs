//! Admission to a route's instances: at most `max_concurrent` runs at once
//! (one pool slot each); up to `queue` more requests wait, first come
//! first served, for at most `queue_timeout`; anything beyond is refused
//! at once, so that a burst queues briefly instead of piling up without
//! bound. The same policy as the CGI gateway's limiter.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::Error;

/// A route's slots and queue.
#[derive(Debug)]
pub(crate) struct Admission {
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

impl Admission {
    pub(crate) fn new(max_concurrent: usize, queue: usize, queue_timeout: Duration) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(max_concurrent.max(1))),
            waiting: AtomicUsize::new(0),
            queue,
            queue_timeout,
        }
    }

    /// A slot, held until the run has ended.
    ///
    /// # Cancel safety
    /// Cancel safe: a cancelled wait leaves the queue.
    pub(crate) async fn admit(&self) -> Result<OwnedSemaphorePermit, Error> {
        // The semaphore is fair: when requests wait, no free permit is
        // left for a newcomer to take past them.
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Ok(p);
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.queue {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(Error::Busy("every instance is busy and the queue is full"));
        }
        let _waiting = Waiting(&self.waiting);
        match tokio::time::timeout(self.queue_timeout, self.slots.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            // The semaphore is never closed; said for completeness.
            Ok(Err(_)) => Err(Error::Busy("the route is closed")),
            Err(_) => Err(Error::Busy("waited too long for a free instance")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn slots_then_queue_then_refusal() {
        let a = Arc::new(Admission::new(1, 1, Duration::from_secs(5)));
        let first = a.admit().await.unwrap();
        let queued = {
            let a = a.clone();
            tokio::spawn(async move { a.admit().await.map(drop) })
        };
        for _ in 0..200 {
            if a.waiting.load(Ordering::Relaxed) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(a.waiting.load(Ordering::Relaxed), 1);
        assert!(matches!(a.admit().await, Err(Error::Busy(m)) if m.contains("queue is full")));
        drop(first);
        queued.await.unwrap().unwrap();
        assert_eq!(a.waiting.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_queued_request_gives_up_after_the_queue_timeout() {
        let a = Admission::new(1, 5, Duration::from_millis(50));
        let _first = a.admit().await.unwrap();
        assert!(matches!(a.admit().await, Err(Error::Busy(m)) if m.contains("too long")));
        assert_eq!(a.waiting.load(Ordering::Relaxed), 0);
    }
}
