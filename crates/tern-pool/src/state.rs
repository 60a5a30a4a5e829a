//! The pool's shared state and every decision made on it: who gets an
//! item, when an item ends, how many to create. No I/O and no waiting: the
//! callers hold the lock for one of these calls, then act on what it
//! returned (hand over a lease, wake the manager, spawn creations and
//! destructions).
//!
//! Invariants:
//! - A checkout waits only when no item is idle: every item that becomes
//!   available goes to the oldest waiter first, and to `idle` only when
//!   nobody waits.
//! - `busy` counts items on a lease, including one handed to a waiter that
//!   has not yet woken up (a waiter that gives up returns it).
//! - `idle` is ordered by `idle_since`: checkouts pop the newest (warm
//!   caches, and the extras go idle long enough to be reaped); reaping takes
//!   the oldest.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::backoff::Backoff;
use crate::seat::Seat;
use crate::stats::QueueWait;
use crate::{Check, Health, PoolConfig, PoolError, Retire, Snapshot, Stats};

/// Idle items destroyed for idleness per tick: a burst that ends does not
/// tear down everything at once (lighttpd kills one per tick).
const REAP_PER_TICK: usize = 2;

/// An idle item that dies this young, before serving a request, counts as
/// a failure for the backoff (a worker crashing right after it starts). One
/// that lived longer does not. (A connection its server closed is no
/// failure at any age: see [`Check::Ended`].)
const EARLY_DEATH: Duration = Duration::from_secs(10);

/// An item with what the pool knows about it.
#[derive(Debug)]
pub(crate) struct Entry<I> {
    pub(crate) item: I,
    /// What a report shows of it; listed in the state's `seats` while the
    /// item is alive.
    pub(crate) seat: Arc<Seat>,
    /// Requests completed cleanly.
    pub(crate) requests: u64,
    idle_since: Instant,
}

impl<I> Entry<I> {
    fn new(item: I, pid: Option<u32>, now: Instant) -> Self {
        Self {
            item,
            seat: Arc::new(Seat::new(pid, now)),
            requests: 0,
            idle_since: now,
        }
    }

    pub(crate) fn created_at(&self) -> Instant {
        self.seat.created_at
    }
}

/// The factory's check of an idle item, as the tick's sweep calls it.
pub(crate) type Look<'a, I> = &'a mut dyn FnMut(&mut I) -> Check;

/// What a waiting checkout receives.
pub(crate) type Reply<I> = Result<Entry<I>, PoolError>;

#[derive(Debug)]
struct Waiter<I> {
    id: u64,
    tx: oneshot::Sender<Reply<I>>,
    /// The thread that waits (each of tern's server threads runs its own
    /// runtime).
    thread: std::thread::ThreadId,
    since: Instant,
}

/// While the oldest waiter has waited less than this, an item released on
/// a thread goes to a waiter on that same thread: handing it to another
/// thread's runtime costs a wake-up of that runtime (a syscall on each
/// side), a local hand-over costs none. Beyond it, strict arrival order,
/// so no thread's requests starve.
const LOCAL_HANDOVER: Duration = Duration::from_millis(1);

/// The answer to a checkout.
#[derive(Debug)]
pub(crate) enum Admit<I> {
    /// An idle item, now leased.
    Ready(Entry<I>),
    /// No item, at once.
    Refused(PoolError),
    /// Wait on `rx`; `grow`: the manager must be woken to create an item.
    Queued {
        id: u64,
        rx: oneshot::Receiver<Reply<I>>,
        grow: bool,
    },
}

/// What the manager is to do now.
#[derive(Debug)]
pub(crate) struct Plan<I> {
    /// Creations to start (already counted in `starting`).
    pub(crate) create: usize,
    /// Items to destroy (already counted in `destroying`).
    pub(crate) destroy: Vec<(Entry<I>, Retire)>,
    /// Plan again then at the latest (the end of a backoff).
    pub(crate) wake_at: Option<Instant>,
    /// The pool is closing: nothing will be created any more.
    pub(crate) closing: bool,
    /// Closing, and nothing is leased or starting: once its destructions
    /// are done, the manager may stop.
    pub(crate) finished: bool,
}

#[derive(Debug, Default)]
struct Counters {
    created: u64,
    create_failures: u64,
    crashed: u64,
    retired_idle: u64,
    retired_requests: u64,
    retired_age: u64,
    ended: u64,
    abandoned: u64,
    requests: u64,
    queue_wait: QueueWait,
}

/// Everything under the pool's lock.
#[derive(Debug)]
pub(crate) struct State<I> {
    idle: Vec<Entry<I>>,
    waiters: VecDeque<Waiter<I>>,
    next_waiter: u64,
    busy: usize,
    starting: usize,
    destroying: usize,
    /// Ended items the manager has yet to pick up.
    doomed: Vec<(Entry<I>, Retire)>,
    closing: bool,
    backoff: Backoff,
    /// The last failure was making a worker (not a worker breaking).
    create_failing: bool,
    /// Items of `min` not made again because their peer ended them while
    /// idle (a server that closes idle connections does not want them
    /// kept); cleared by a checkout that finds the pool empty.
    unkept: usize,
    counters: Counters,
    /// The seat of every item alive (idle or leased), oldest first.
    seats: Vec<Arc<Seat>>,
}

impl<I> Default for State<I> {
    fn default() -> Self {
        Self {
            idle: Vec::new(),
            waiters: VecDeque::new(),
            next_waiter: 0,
            busy: 0,
            starting: 0,
            destroying: 0,
            doomed: Vec::new(),
            closing: false,
            backoff: Backoff::default(),
            create_failing: false,
            unkept: 0,
            counters: Counters::default(),
            seats: Vec::new(),
        }
    }
}

impl<I> State<I> {
    /// Items alive: idle or leased.
    fn live(&self) -> usize {
        self.idle.len() + self.busy
    }

    /// A checkout: the newest idle item that is `warm` (else the newest
    /// idle item), a place in the queue, or a refusal.
    pub(crate) fn admit(
        &mut self,
        cfg: &PoolConfig,
        now: Instant,
        warm: impl Fn(&I) -> bool,
    ) -> Admit<I> {
        if self.closing {
            return Admit::Refused(PoolError::Closed);
        }
        let newest = self.idle.len().checked_sub(1);
        let at = self.idle.iter().rposition(|e| warm(&e.item)).or(newest);
        if let Some(entry) = at.map(|at| self.idle.remove(at)) {
            self.busy += 1;
            self.counters.queue_wait.record(Duration::ZERO);
            return Admit::Ready(entry);
        }
        if self.live() == 0 && self.create_failing && self.backoff.blocked_until(now).is_some() {
            let error = self.backoff.last_error().to_owned();
            return Admit::Refused(PoolError::Unavailable(error));
        }
        if self.waiters.len() >= cfg.queue {
            return Admit::Refused(PoolError::Full);
        }
        // Demand is back: `min` is kept again.
        self.unkept = 0;
        let (tx, rx) = oneshot::channel();
        let id = self.next_waiter;
        self.next_waiter += 1;
        self.waiters.push_back(Waiter {
            id,
            tx,
            thread: std::thread::current().id(),
            since: now,
        });
        let grow = self.live() + self.starting < cfg.max && self.waiters.len() > self.starting;
        Admit::Queued { id, rx, grow }
    }

    /// A waiter gives up (timed out or cancelled): it leaves the queue, and
    /// an item handed to it meanwhile goes to the next waiter or idle.
    /// Returns whether the manager must be woken.
    pub(crate) fn leave_queue(
        &mut self,
        id: u64,
        rx: &mut oneshot::Receiver<Reply<I>>,
        now: Instant,
    ) -> bool {
        if let Some(at) = self.waiters.iter().position(|w| w.id == id) {
            self.waiters.remove(at);
        }
        // Under the lock, so no hand-over can be under way: whatever was
        // sent is in the channel now.
        rx.close();
        match rx.try_recv() {
            Ok(Ok(entry)) => {
                self.busy -= 1;
                self.give(entry, now)
            }
            _ => false,
        }
    }

    /// A lease ended with a clean request. Returns whether the manager must
    /// be woken (the item was retired and may need a replacement).
    pub(crate) fn release(&mut self, mut entry: Entry<I>, cfg: &PoolConfig, now: Instant) -> bool {
        self.busy -= 1;
        self.counters.requests += 1;
        self.backoff.reset();
        entry.requests += 1;
        let verdict = if self.closing {
            Some(Retire::Closed)
        } else if cfg.max_requests > 0 && entry.requests >= cfg.max_requests {
            Some(Retire::Recycled)
        } else if cfg
            .max_age
            .is_some_and(|age| now.duration_since(entry.created_at()) >= age)
        {
            Some(Retire::Aged)
        } else {
            None
        };
        match verdict {
            None => self.give(entry, now),
            Some(why) => self.retire(entry, why),
        }
    }

    /// A lease ended badly. Returns whether the manager must be woken
    /// (always: the item is to be destroyed).
    pub(crate) fn discard(
        &mut self,
        entry: Entry<I>,
        why: Retire,
        cfg: &PoolConfig,
        now: Instant,
    ) -> bool {
        self.busy -= 1;
        if why == Retire::Broken {
            self.fail(
                cfg,
                now,
                "a worker broke during a request".to_owned(),
                false,
            );
        }
        self.retire(entry, why)
    }

    /// A creation finished; `pid` is the new item's process, if it has one.
    pub(crate) fn created(
        &mut self,
        result: io::Result<I>,
        pid: Option<u32>,
        cfg: &PoolConfig,
        now: Instant,
    ) {
        self.starting -= 1;
        match result {
            Ok(item) => {
                self.counters.created += 1;
                self.create_failing = false;
                let entry = Entry::new(item, pid, now);
                self.seats.push(Arc::clone(&entry.seat));
                self.give(entry, now);
            }
            Err(err) => {
                self.counters.create_failures += 1;
                self.fail(cfg, now, format!("cannot create a worker: {err}"), true);
            }
        }
    }

    /// A destruction finished.
    pub(crate) fn destroyed(&mut self) {
        self.destroying -= 1;
    }

    /// Refuses checkouts from now on and fails the waiting ones. Items come
    /// back to be destroyed.
    pub(crate) fn close(&mut self) {
        self.closing = true;
        self.fail_waiters(&PoolError::Closed);
    }

    /// The manager's decision: what to destroy, how many to create, when to
    /// look again. On a `tick` it also checks idle items with `alive`,
    /// retires those past `max_age`, and reaps those idle too long.
    pub(crate) fn plan(
        &mut self,
        cfg: &PoolConfig,
        now: Instant,
        tick: Option<Look<'_, I>>,
    ) -> Plan<I> {
        if self.closing {
            self.fail_waiters(&PoolError::Closed);
            for entry in std::mem::take(&mut self.idle) {
                self.retire(entry, Retire::Closed);
            }
            let destroy = std::mem::take(&mut self.doomed);
            self.destroying += destroy.len();
            return Plan {
                create: 0,
                destroy,
                wake_at: None,
                closing: true,
                finished: self.busy == 0 && self.starting == 0,
            };
        }
        if let Some(alive) = tick {
            self.sweep(cfg, now, alive);
        }
        let destroy = std::mem::take(&mut self.doomed);
        self.destroying += destroy.len();

        let live = self.live();
        let wanted = cfg
            .min
            .saturating_sub(live + self.unkept)
            .max(self.waiters.len())
            .saturating_sub(self.starting);
        let room = cfg.max.saturating_sub(live + self.starting);
        let mut create = wanted.min(room);
        let mut wake_at = None;
        if create > 0 && self.backoff.failing() {
            if let Some(until) = self.backoff.blocked_until(now) {
                create = 0;
                wake_at = Some(until);
            } else {
                // Probe with one creation at a time until one works.
                create = create.min(1_usize.saturating_sub(self.starting));
            }
        }
        self.starting += create;
        Plan {
            create,
            destroy,
            wake_at,
            closing: false,
            finished: false,
        }
    }

    /// The tick's checks of idle items, oldest first; what ends goes to
    /// `doomed`.
    fn sweep(&mut self, cfg: &PoolConfig, now: Instant, look: Look<'_, I>) {
        let mut at = 0;
        while at < self.idle.len() {
            match look(&mut self.idle[at].item) {
                Check::Alive => {
                    at += 1;
                    continue;
                }
                Check::Ended => {
                    let entry = self.idle.remove(at);
                    self.unkept = (self.unkept + 1).min(cfg.min);
                    tracing::debug!(pool = %cfg.name, "an idle connection was closed by its server");
                    self.retire(entry, Retire::Ended);
                    continue;
                }
                Check::Dead => {}
            }
            let entry = self.idle.remove(at);
            if entry.requests == 0 && now.duration_since(entry.created_at()) < EARLY_DEATH {
                self.fail(
                    cfg,
                    now,
                    "a worker died before serving a request".to_owned(),
                    true,
                );
            } else {
                tracing::info!(pool = %cfg.name, "an idle worker is gone; replacing it if needed");
            }
            self.retire(entry, Retire::Broken);
        }
        if let Some(max_age) = cfg.max_age {
            let mut at = 0;
            while at < self.idle.len() {
                if now.duration_since(self.idle[at].created_at()) < max_age {
                    at += 1;
                    continue;
                }
                let entry = self.idle.remove(at);
                self.retire(entry, Retire::Aged);
            }
        }
        let mut reaped = 0;
        while reaped < REAP_PER_TICK
            && self.live() > cfg.min
            && self
                .idle
                .first()
                .is_some_and(|e| now.duration_since(e.idle_since) >= cfg.idle_timeout)
        {
            let entry = self.idle.remove(0);
            self.retire(entry, Retire::Idle);
            reaped += 1;
        }
    }

    /// An item is available: to the oldest waiter still waiting, else idle.
    /// Returns whether the manager must be woken.
    fn give(&mut self, mut entry: Entry<I>, now: Instant) -> bool {
        if self.closing {
            return self.retire(entry, Retire::Closed);
        }
        if self
            .waiters
            .front()
            .is_some_and(|w| now.saturating_duration_since(w.since) < LOCAL_HANDOVER)
        {
            let here = std::thread::current().id();
            if let Some(at) = self.waiters.iter().position(|w| w.thread == here) {
                let waiter = self.waiters.remove(at).expect("found above");
                match self.hand(waiter, entry, now) {
                    Ok(()) => return false,
                    Err(back) => entry = back,
                }
            }
        }
        while let Some(waiter) = self.waiters.pop_front() {
            match self.hand(waiter, entry, now) {
                Ok(()) => return false,
                // That waiter is gone: try the next one.
                Err(back) => entry = back,
            }
        }
        entry.idle_since = now;
        self.idle.push(entry);
        false
    }

    /// Hands `entry` to `waiter`, counting its wait; a waiter that is gone
    /// gives it back.
    fn hand(&mut self, waiter: Waiter<I>, entry: Entry<I>, now: Instant) -> Result<(), Entry<I>> {
        match waiter.tx.send(Ok(entry)) {
            Ok(()) => {
                self.busy += 1;
                let waited = now.saturating_duration_since(waiter.since);
                self.counters.queue_wait.record(waited);
                Ok(())
            }
            Err(Ok(back)) => Err(back),
            Err(Err(_)) => unreachable!("an item was sent, an item comes back"),
        }
    }

    /// Queues an item for destruction; it is no longer alive, and leaves
    /// the reports. Returns true: the manager must be woken to destroy it.
    fn retire(&mut self, entry: Entry<I>, why: Retire) -> bool {
        if let Some(at) = self.seats.iter().position(|s| Arc::ptr_eq(s, &entry.seat)) {
            self.seats.remove(at);
        }
        match why {
            Retire::Idle => self.counters.retired_idle += 1,
            Retire::Recycled => self.counters.retired_requests += 1,
            Retire::Aged => self.counters.retired_age += 1,
            Retire::Broken => self.counters.crashed += 1,
            Retire::Ended => self.counters.ended += 1,
            Retire::Abandoned => self.counters.abandoned += 1,
            Retire::Closed => {}
        }
        self.doomed.push((entry, why));
        true
    }

    /// Records a failure. When making workers is what fails (`creating`:
    /// the program does not start, connections are refused) and nothing
    /// is alive, the waiters fail at once rather than sit out the backoff;
    /// a worker that broke during a request is replaced while they wait.
    fn fail(&mut self, cfg: &PoolConfig, now: Instant, error: String, creating: bool) {
        self.create_failing |= creating;
        let delay = self
            .backoff
            .fail(now, error.clone(), cfg.backoff_min, cfg.backoff_max);
        tracing::warn!(
            pool = %cfg.name,
            failures = self.backoff.consecutive(),
            "{error}; next attempt in {delay:?}"
        );
        if self.live() == 0 && self.create_failing {
            self.fail_waiters(&PoolError::Unavailable(error));
        }
    }

    fn fail_waiters(&mut self, err: &PoolError) {
        for waiter in self.waiters.drain(..) {
            let _ = waiter.tx.send(Err(err.clone()));
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let c = &self.counters;
        Stats {
            busy: self.busy,
            idle: self.idle.len(),
            starting: self.starting,
            destroying: self.destroying + self.doomed.len(),
            queued: self.waiters.len(),
            created: c.created,
            create_failures: c.create_failures,
            crashed: c.crashed,
            retired: c.retired_idle + c.retired_requests + c.retired_age,
            retired_idle: c.retired_idle,
            retired_requests: c.retired_requests,
            retired_age: c.retired_age,
            ended: c.ended,
            abandoned: c.abandoned,
            requests: c.requests,
            queue_wait: c.queue_wait,
        }
    }

    /// The counters and every item alive: the idle ones are those in
    /// `idle`, the others are out on a lease.
    pub(crate) fn snapshot(&self, now: Instant) -> Snapshot {
        let items = self
            .seats
            .iter()
            .map(|seat| {
                let idle = self.idle.iter().any(|e| Arc::ptr_eq(&e.seat, seat));
                seat.stats(!idle, now)
            })
            .collect();
        Snapshot {
            stats: self.stats(),
            items,
        }
    }

    pub(crate) fn health(&self, now: Instant) -> Health {
        if self.closing {
            return Health::Closed;
        }
        match self.backoff.blocked_until(now) {
            None => Health::Ready,
            Some(until) => Health::BackingOff {
                until,
                consecutive_failures: self.backoff.consecutive(),
                last_error: self.backoff.last_error().to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(min: usize, max: usize, queue: usize) -> PoolConfig {
        PoolConfig {
            min,
            max,
            queue,
            ..PoolConfig::default()
        }
    }

    /// A state with `n` creations under way, as if a plan had asked for them.
    fn creating(n: usize) -> State<u32> {
        State {
            starting: n,
            ..State::default()
        }
    }

    /// Creates what a plan asks for, numbering items from `next`.
    fn create_all(st: &mut State<u32>, cfg: &PoolConfig, now: Instant, next: &mut u32) {
        let plan = st.plan(cfg, now, None);
        for _ in 0..plan.create {
            st.created(Ok(*next), None, cfg, now);
            *next += 1;
        }
    }

    fn ready(admit: Admit<u32>) -> Entry<u32> {
        match admit {
            Admit::Ready(entry) => entry,
            other => panic!("expected an item at once, got {other:?}"),
        }
    }

    fn queued(admit: Admit<u32>) -> (u64, oneshot::Receiver<Reply<u32>>, bool) {
        match admit {
            Admit::Queued { id, rx, grow } => (id, rx, grow),
            other => panic!("expected to queue, got {other:?}"),
        }
    }

    #[test]
    fn the_plan_fills_the_minimum_then_checkouts_take_the_newest_idle_item() {
        let cfg = cfg(2, 4, 8);
        let now = Instant::now();
        let mut st = State::default();
        let mut next = 1;
        create_all(&mut st, &cfg, now, &mut next);
        assert_eq!(st.stats().idle, 2);
        let a = ready(st.admit(&cfg, now, |_| true));
        assert_eq!(a.item, 2, "LIFO");
        assert!(!st.release(a, &cfg, now));
        let b = ready(st.admit(&cfg, now, |_| true));
        assert_eq!(b.item, 2);
        assert_eq!(b.requests, 1);
    }

    #[test]
    fn a_checkout_takes_the_newest_warm_item_before_a_cold_one() {
        let cfg = cfg(3, 3, 8);
        let now = Instant::now();
        let mut st = State::default();
        create_all(&mut st, &cfg, now, &mut 1);
        // Items 1 to 3, 3 the newest; even numbers are cold.
        let odd = |i: &u32| i % 2 == 1;
        let a = ready(st.admit(&cfg, now, odd));
        assert_eq!(a.item, 3);
        let b = ready(st.admit(&cfg, now, odd));
        assert_eq!(b.item, 1, "past the newer cold one");
        let c = ready(st.admit(&cfg, now, odd));
        assert_eq!(c.item, 2, "a cold one when no warm one is idle");
    }

    #[test]
    fn an_available_item_goes_to_the_oldest_waiter_still_waiting() {
        let cfg = cfg(0, 2, 8);
        let now = Instant::now();
        let mut st = State::default();
        let (id1, mut rx1, grow1) = queued(st.admit(&cfg, now, |_| true));
        let (_, mut rx2, grow2) = queued(st.admit(&cfg, now, |_| true));
        let (_, mut rx3, _) = queued(st.admit(&cfg, now, |_| true));
        assert!(grow1 && grow2, "room for creations: wake the manager");
        assert_eq!(st.plan(&cfg, now, None).create, 2, "up to max");
        let (_, _rx4, grow4) = queued(st.admit(&cfg, now, |_| true));
        assert!(!grow4, "at max: wait for a release");
        // The first waiter gives up before anything arrives.
        assert!(!st.leave_queue(id1, &mut rx1, now));
        st.created(Ok(7), None, &cfg, now);
        assert_eq!(rx2.try_recv().unwrap().unwrap().item, 7);
        assert!(rx3.try_recv().is_err());
        assert_eq!(st.stats().busy, 1);
        assert_eq!(st.stats().queued, 2);
    }

    #[test]
    fn an_item_handed_to_a_waiter_that_gives_up_goes_to_the_next() {
        let cfg = cfg(0, 1, 8);
        let now = Instant::now();
        let mut st = State::default();
        let (id1, mut rx1, _) = queued(st.admit(&cfg, now, |_| true));
        let (_, mut rx2, _) = queued(st.admit(&cfg, now, |_| true));
        st.starting = 1;
        st.created(Ok(5), None, &cfg, now);
        // Handed to waiter 1, which is cancelled before it polls.
        assert!(!st.leave_queue(id1, &mut rx1, now));
        assert_eq!(rx2.try_recv().unwrap().unwrap().item, 5);
        assert_eq!(st.stats().busy, 1);
        assert_eq!(st.stats().idle, 0);
    }

    #[test]
    fn a_full_queue_refuses_at_once() {
        let cfg = cfg(0, 1, 1);
        let now = Instant::now();
        let mut st = State::<u32>::default();
        let _waiting = queued(st.admit(&cfg, now, |_| true));
        assert!(matches!(
            st.admit(&cfg, now, |_| true),
            Admit::Refused(PoolError::Full)
        ));
    }

    #[test]
    fn failures_with_nothing_alive_fail_waiters_and_block_checkouts_until_the_backoff_ends() {
        let cfg = cfg(0, 2, 8);
        let now = Instant::now();
        let mut st = State::<u32>::default();
        let (_, mut rx, _) = queued(st.admit(&cfg, now, |_| true));
        assert_eq!(st.plan(&cfg, now, None).create, 1);
        st.created(
            Err(io::ErrorKind::ConnectionRefused.into()),
            None,
            &cfg,
            now,
        );
        let Err(PoolError::Unavailable(msg)) = rx.try_recv().unwrap() else {
            panic!()
        };
        assert!(msg.contains("cannot create"), "{msg}");
        assert!(matches!(
            st.admit(&cfg, now, |_| true),
            Admit::Refused(PoolError::Unavailable(_))
        ));
        assert!(matches!(
            st.health(now),
            Health::BackingOff {
                consecutive_failures: 1,
                ..
            }
        ));
        // After the backoff, a checkout queues and makes one probe.
        let later = now + cfg.backoff_min;
        assert_eq!(st.health(later), Health::Ready);
        let (_, _rx, grow) = queued(st.admit(&cfg, later, |_| true));
        assert!(grow);
        let _second = queued(st.admit(&cfg, later, |_| true));
        assert_eq!(st.plan(&cfg, later, None).create, 1, "one probe at a time");
    }

    #[test]
    fn the_manager_waits_out_the_backoff_before_creating() {
        let cfg = cfg(1, 2, 8);
        let now = Instant::now();
        let mut st = State::<u32>::default();
        assert_eq!(st.plan(&cfg, now, None).create, 1);
        st.created(Err(io::ErrorKind::NotFound.into()), None, &cfg, now);
        let plan = st.plan(&cfg, now, None);
        assert_eq!(plan.create, 0);
        assert_eq!(plan.wake_at, Some(now + cfg.backoff_min));
        assert_eq!(st.plan(&cfg, now + cfg.backoff_min, None).create, 1);
    }

    #[test]
    fn a_clean_release_ends_the_backoff() {
        let cfg = cfg(0, 2, 8);
        let now = Instant::now();
        let mut st = creating(2);
        st.created(Ok(1), None, &cfg, now);
        st.created(Err(io::ErrorKind::Other.into()), None, &cfg, now);
        assert!(matches!(st.health(now), Health::BackingOff { .. }));
        let e = ready(st.admit(&cfg, now, |_| true));
        st.release(e, &cfg, now);
        assert_eq!(st.health(now), Health::Ready);
    }

    #[test]
    fn release_recycles_after_max_requests_and_max_age() {
        let mut cfg = cfg(0, 2, 8);
        cfg.max_requests = 2;
        cfg.max_age = Some(Duration::from_secs(60));
        let now = Instant::now();
        let mut st = creating(2);
        st.created(Ok(1), None, &cfg, now);
        let e = ready(st.admit(&cfg, now, |_| true));
        assert!(!st.release(e, &cfg, now));
        let e = ready(st.admit(&cfg, now, |_| true));
        assert!(st.release(e, &cfg, now), "second request: recycled");
        st.created(Ok(2), None, &cfg, now);
        let e = ready(st.admit(&cfg, now, |_| true));
        assert!(st.release(e, &cfg, now + Duration::from_secs(60)), "aged");
        let plan = st.plan(&cfg, now, None);
        let why: Vec<_> = plan.destroy.iter().map(|(e, w)| (e.item, *w)).collect();
        assert_eq!(why, [(1, Retire::Recycled), (2, Retire::Aged)]);
        let s = st.stats();
        assert_eq!(s.retired, 2);
        assert_eq!(
            (s.retired_idle, s.retired_requests, s.retired_age),
            (0, 1, 1)
        );
        assert_eq!(s.destroying, 2);
    }

    #[test]
    fn a_tick_retires_idle_items_past_max_age_counted_as_aged() {
        let cfg = PoolConfig {
            max_age: Some(Duration::from_secs(60)),
            ..cfg(0, 2, 8)
        };
        let now = Instant::now();
        let mut st = creating(1);
        st.created(Ok(1), None, &cfg, now);
        let later = now + Duration::from_secs(60);
        let plan = st.plan(&cfg, later, Some(&mut |_| Check::Alive));
        assert_eq!(plan.destroy.len(), 1);
        let s = st.stats();
        assert_eq!((s.retired, s.retired_age, s.retired_idle), (1, 1, 0));
    }

    #[test]
    fn a_tick_reaps_the_oldest_idle_items_down_to_min_a_few_at_a_time() {
        let cfg = PoolConfig {
            idle_timeout: Duration::from_secs(5),
            ..cfg(1, 8, 8)
        };
        let t0 = Instant::now();
        let mut st = creating(5);
        for (n, item) in (1..=5).enumerate() {
            st.created(Ok(item), None, &cfg, t0 + Duration::from_secs(n as u64));
        }
        let later = t0 + Duration::from_secs(30);
        let reaped = |plan: Plan<u32>| -> Vec<u32> {
            plan.destroy.into_iter().map(|(e, _)| e.item).collect()
        };
        assert_eq!(
            reaped(st.plan(&cfg, later, Some(&mut |_| Check::Alive))),
            [1, 2]
        );
        assert!(
            reaped(st.plan(&cfg, later, None)).is_empty(),
            "only on ticks"
        );
        assert_eq!(
            reaped(st.plan(&cfg, later, Some(&mut |_| Check::Alive))),
            [3, 4]
        );
        assert!(
            reaped(st.plan(&cfg, later, Some(&mut |_| Check::Alive))).is_empty(),
            "min stays"
        );
        let s = st.stats();
        assert_eq!(s.idle, 1);
        assert_eq!((s.retired, s.retired_idle, s.retired_requests), (4, 4, 0));
    }

    #[test]
    fn a_checkout_served_at_once_waits_zero_and_a_queued_one_counts_its_wait() {
        let cfg = cfg(0, 1, 8);
        let now = Instant::now();
        let mut st = creating(1);
        st.created(Ok(1), None, &cfg, now);
        let e = ready(st.admit(&cfg, now, |_| true));
        let (_, mut rx, _) = queued(st.admit(&cfg, now, |_| true));
        let later = now + Duration::from_millis(30);
        st.release(e, &cfg, later);
        assert_eq!(rx.try_recv().unwrap().unwrap().item, 1);
        let wait = st.stats().queue_wait;
        let mut want = [0; tern_handler::QUEUE_WAIT_BUCKETS.len() + 1];
        want[0] = 1;
        want[5] = 1; // at most 0.05 s
        assert_eq!(wait.counts, want);
        assert_eq!(wait.sum, Duration::from_millis(30));
    }

    #[test]
    fn seats_show_idle_and_leased_items_and_go_with_them() {
        let cfg = cfg(0, 2, 8);
        let t0 = Instant::now();
        let mut st = creating(2);
        st.created(Ok(1), Some(101), &cfg, t0);
        st.created(Ok(2), Some(102), &cfg, t0);
        let items = st.snapshot(t0).items;
        assert_eq!(items.len(), 2);
        assert!(items.iter().all(|i| !i.busy && i.requests == 0));
        let leased = ready(st.admit(&cfg, t0, |_| true));
        let t1 = t0 + Duration::from_millis(5);
        leased.seat.begin(Arc::from("/app?q"), t1);
        let t2 = t1 + Duration::from_millis(20);
        let snap = st.snapshot(t2);
        let rows: Vec<_> = snap.items.iter().map(|i| (i.pid, i.busy)).collect();
        assert_eq!(rows, [(Some(101), false), (Some(102), true)]);
        let busy = &snap.items[1];
        assert_eq!(
            busy.current,
            Some((Arc::from("/app?q"), Duration::from_millis(20)))
        );
        assert_eq!(busy.age, Duration::from_millis(25));
        assert_eq!(snap.stats.busy, 1);
        // Released: idle again, its request counted with its duration.
        leased.seat.end(t2);
        st.release(leased, &cfg, t2);
        let items = st.snapshot(t2).items;
        assert!(items.iter().all(|i| !i.busy && i.current.is_none()));
        assert_eq!(items[1].requests, 1);
        assert_eq!(items[1].last_duration, Some(Duration::from_millis(20)));
        // Broken while leased, then idle and dead: both leave at once.
        let leased = ready(st.admit(&cfg, t2, |_| true));
        st.discard(leased, Retire::Broken, &cfg, t2);
        let items = st.snapshot(t2).items;
        assert_eq!(items.iter().map(|i| i.pid).collect::<Vec<_>>(), [Some(101)]);
        st.plan(&cfg, t2, Some(&mut |_| Check::Dead));
        assert!(st.snapshot(t2).items.is_empty());
    }

    #[test]
    fn a_tick_drops_dead_idle_items_and_replaces_them() {
        let cfg = cfg(2, 4, 8);
        let now = Instant::now();
        let mut st = State::default();
        let mut next = 1;
        create_all(&mut st, &cfg, now, &mut next);
        let plan = st.plan(&cfg, now, Some(&mut |item: &mut u32| dead_if(*item == 1)));
        assert_eq!(plan.destroy.len(), 1);
        assert_eq!(plan.destroy[0].1, Retire::Broken);
        assert_eq!(st.stats().crashed, 1);
        // Died young: a failure, so the replacement waits out the backoff.
        assert_eq!(plan.create, 0);
        assert_eq!(st.plan(&cfg, now + cfg.backoff_min, None).create, 1);
    }

    fn dead_if(dead: bool) -> Check {
        if dead {
            Check::Dead
        } else {
            Check::Alive
        }
    }

    #[test]
    fn an_item_its_peer_ended_is_no_failure_and_is_made_again_only_on_demand() {
        let cfg = cfg(2, 4, 8);
        let now = Instant::now();
        let mut st = State::default();
        let mut next = 1;
        create_all(&mut st, &cfg, now, &mut next);
        // The server closed both connections, unused, a moment after.
        let plan = st.plan(&cfg, now, Some(&mut |_: &mut u32| Check::Ended));
        assert_eq!(plan.destroy.len(), 2);
        assert!(plan.destroy.iter().all(|(_, why)| *why == Retire::Ended));
        assert_eq!(plan.create, 0, "not made again to sit idle and be closed");
        assert_eq!(st.health(now), Health::Ready);
        assert_eq!((st.stats().ended, st.stats().crashed), (2, 0));
        assert_eq!(st.plan(&cfg, now, None).create, 0);
        // A request finds the pool empty: it grows again, to min.
        let (_, mut rx, grow) = queued(st.admit(&cfg, now, |_| true));
        assert!(grow);
        assert_eq!(st.plan(&cfg, now, None).create, 2);
        st.created(Ok(9), None, &cfg, now);
        assert_eq!(rx.try_recv().unwrap().unwrap().item, 9);
    }

    #[test]
    fn closing_fails_waiters_destroys_idle_and_waits_for_leases() {
        let cfg = cfg(0, 2, 8);
        let now = Instant::now();
        let mut st = creating(2);
        st.created(Ok(1), None, &cfg, now);
        st.created(Ok(2), None, &cfg, now);
        let leased = ready(st.admit(&cfg, now, |_| true));
        let other = ready(st.admit(&cfg, now, |_| true));
        let (_, mut rx, _) = queued(st.admit(&cfg, now, |_| true));
        assert!(!st.release(other, &cfg, now), "to the waiter");
        let (_, mut rx2, _) = queued(st.admit(&cfg, now, |_| true));
        st.close();
        assert_eq!(rx2.try_recv().unwrap().unwrap_err(), PoolError::Closed);
        assert!(matches!(
            st.admit(&cfg, now, |_| true),
            Admit::Refused(PoolError::Closed)
        ));
        assert!(!st.plan(&cfg, now, None).finished);
        // The waiter that got an item hands it back after the close.
        let handed = rx.try_recv().unwrap().unwrap();
        assert!(st.release(handed, &cfg, now));
        assert!(!st.plan(&cfg, now, None).finished);
        assert!(st.release(leased, &cfg, now));
        let plan = st.plan(&cfg, now, None);
        assert!(plan.finished);
        assert_eq!(plan.destroy.len(), 1);
        assert_eq!(plan.destroy[0].1, Retire::Closed);
        assert_eq!(st.stats().busy, 0);
    }

    #[test]
    fn a_dropped_lease_is_abandoned_not_a_failure() {
        let cfg = cfg(0, 1, 8);
        let now = Instant::now();
        let mut st = creating(1);
        st.created(Ok(1), None, &cfg, now);
        let e = ready(st.admit(&cfg, now, |_| true));
        assert!(st.discard(e, Retire::Abandoned, &cfg, now));
        assert_eq!(st.health(now), Health::Ready);
        assert_eq!(st.stats().abandoned, 1);
        assert_eq!(st.stats().crashed, 0);
    }
}
