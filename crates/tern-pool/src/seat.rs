//! A seat per item alive: what a report shows of it (its process, its age,
//! the request it serves, the last one's duration). The item's entry
//! carries its seat wherever the item goes (idle in the state, out on a
//! lease), and the state lists every seat, so a report reaches leased
//! items too. A request touches only its own seat's lock, at its start and
//! at its end; nothing else contends for it but a report.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::ItemStats;

/// What a report shows of one item.
#[derive(Debug)]
pub(crate) struct Seat {
    pid: Option<u32>,
    pub(crate) created_at: Instant,
    now: Mutex<Serving>,
}

/// The part that changes with each request.
#[derive(Debug, Default)]
struct Serving {
    /// The request under way and when it started.
    current: Option<(Arc<str>, Instant)>,
    last_duration: Option<Duration>,
    requests: u64,
}

impl Seat {
    pub(crate) fn new(pid: Option<u32>, created_at: Instant) -> Self {
        Seat {
            pid,
            created_at,
            now: Mutex::new(Serving::default()),
        }
    }

    /// Nothing is left half done under this lock: a poisoned one is fine.
    fn lock(&self) -> MutexGuard<'_, Serving> {
        self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The item's process, when it is one.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// A request starts on the item.
    pub(crate) fn begin(&self, target: Arc<str>, now: Instant) {
        self.lock().current = Some((target, now));
    }

    /// The request under way completed cleanly.
    pub(crate) fn end(&self, now: Instant) {
        let mut s = self.lock();
        if let Some((_, started)) = s.current.take() {
            s.last_duration = Some(now.saturating_duration_since(started));
        }
        s.requests += 1;
    }

    /// The item as a report shows it.
    pub(crate) fn stats(&self, busy: bool, now: Instant) -> ItemStats {
        let s = self.lock();
        ItemStats {
            pid: self.pid,
            busy,
            requests: s.requests,
            age: now.saturating_duration_since(self.created_at),
            current: s
                .current
                .as_ref()
                .map(|(target, started)| (target.clone(), now.saturating_duration_since(*started))),
            last_duration: s.last_duration,
        }
    }
}
