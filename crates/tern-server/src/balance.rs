//! Which worker serves a new connection: the first worker, while it has
//! CPU to spare; the others only once it has not.
//!
//! Why gather rather than spread: a worker serving ten keep-alive
//! connections finds several of them ready at each wake-up and answers them
//! in one pass, where two workers serving five each wake twice as often
//! (each wake-up a context switch, and on a small machine a fight with
//! whatever else runs). Measured on two cores with wrk beside the server
//! (docs/PERFORMANCE.md, "Gathering connections on one worker"): one worker
//! cost 12.2 µs per keep-alive request against 16.3-19.3 for connections
//! spread over two, with p99 0.22 ms against 2.3-2.7 ms.
//!
//! How a worker's spare CPU is known: each worker's runtime reports when it
//! parks (nothing to do) and unparks; the worker's busy share, averaged
//! over about [`WINDOW`], is published at those moments, with the time it
//! has been busy since it last parked (a worker that never parks is busy
//! through and through). A worker that is parked now has CPU to spare.
//!
//! Who accepts: the first worker always listens. The others keep their
//! listening sockets out of their poll set until the first one hands them
//! a connection, so a new connection wakes one thread, not all of them; a
//! helper listens while the workers before it are full, and stops (after
//! serving the connection it just took) once one of them has spare CPU
//! again.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tern_handler::ConnInfo;
use tokio::sync::{mpsc, watch};

use crate::listen::Detached;

/// The span a worker's busy share averages over.
const WINDOW: Duration = Duration::from_millis(10);

/// The busy share, in thousandths, at which a worker counts as full.
const FULL: u32 = 950;

/// A worker busy this long without parking is full, whatever its last
/// window said.
const STUCK: Duration = Duration::from_millis(10);

/// The workers' loads, and how to reach each one.
#[derive(Debug)]
pub(crate) struct Balance {
    /// When the server started ([`now_ns`]): the loads' clock counts
    /// from here.
    base: u64,
    loads: Box<[Load]>,
    /// Each worker's inbox of connections handed over by the others.
    inbox: Box<[mpsc::UnboundedSender<Handed>]>,
    /// Whether each worker is asked to accept (the first always is).
    help: Box<[watch::Sender<bool>]>,
    /// Whether the machine has a core's worth of CPU to spare.
    spare: Spare,
}

/// The machine's idle CPU, sampled from `/proc/stat` at most every
/// [`SAMPLE`]: moving work to another worker only helps if a core is there
/// to run it. On two cores with a load generator beside the server, a
/// second busy worker takes its time from the client, and every request
/// pays the context switches.
#[derive(Debug)]
struct Spare {
    /// When last sampled, the counters then (total, idle), in ticks, and
    /// the idle cores averaged over the samples since the counters were
    /// last stale ([`SMOOTHING`]; `None` before the first).
    last: std::sync::Mutex<(Instant, u64, u64, Option<f64>)>,
    /// The answer at the last sample.
    spare: std::sync::atomic::AtomicBool,
    cpus: f64,
}

/// The worker a connection runs on, and the balance that may move it to
/// another between requests.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    pub(crate) me: usize,
    pub(crate) balance: Arc<Balance>,
}

/// Tests of which worker serves what cannot depend on what else runs on
/// the machine: they set this.
#[cfg(test)]
pub(crate) static ASSUME_SPARE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// How often the machine's idle CPU is sampled (when asked for).
const SAMPLE: Duration = Duration::from_millis(50);

/// The idle share of the machine (in cores) that counts as spare.
const SPARE_CORES: f64 = 0.5;

/// The weight of the newest sample in the idle average. `/proc/stat`
/// counts in ticks of 10 ms, so a 50 ms sample on two cores is 10 ticks,
/// and one sample with three idle ticks would say "spare" on a machine
/// that has none. Averaged, a lasting idle core still shows within a few
/// samples.
const SMOOTHING: f64 = 0.25;

/// Counters older than this describe a time nobody asked about (the
/// machine idle before a burst of work, say): they start a new sample and
/// answer nothing. Taken as a sample, the idle spell before a benchmark
/// said "spare" when the load began, and connections moved to the second
/// worker of a machine that had no core for it: with a FastCGI application
/// beside tern and wrk, a fifth more CPU per request (docs/PERFORMANCE.md,
/// session 14).
const STALE: Duration = Duration::from_millis(200);

impl Spare {
    fn new() -> Self {
        let (total, idle) = cpu_ticks().unwrap_or((0, 0));
        Spare {
            last: std::sync::Mutex::new((Instant::now(), total, idle, None)),
            spare: std::sync::atomic::AtomicBool::new(true),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
        }
    }

    /// Whether at least [`SPARE_CORES`] of the machine sat idle lately.
    /// Without `/proc/stat`, always: the workers then spread when full.
    fn get(&self) -> bool {
        #[cfg(test)]
        if ASSUME_SPARE.load(Ordering::Relaxed) {
            return true;
        }
        if let Ok(mut last) = self.last.try_lock() {
            let now = Instant::now();
            let age = now.saturating_duration_since(last.0);
            if age >= SAMPLE {
                if let Some((total, idle)) = cpu_ticks() {
                    let ticks = (total.saturating_sub(last.1), idle.saturating_sub(last.2));
                    let (average, spare) = idle_average(last.3, age, ticks, self.cpus);
                    if let Some(spare) = spare {
                        self.spare.store(spare, Ordering::Relaxed);
                    }
                    *last = (now, total, idle, average);
                }
            }
        }
        self.spare.load(Ordering::Relaxed)
    }
}

/// The idle average after a sample of `age` that saw `(total, idle)`
/// ticks, and whether the machine has CPU to spare (`None`: no answer).
fn idle_average(
    average: Option<f64>,
    age: Duration,
    (total, idle): (u64, u64),
    cpus: f64,
) -> (Option<f64>, Option<bool>) {
    if age > STALE {
        return (None, Some(false));
    }
    if total == 0 {
        return (average, None);
    }
    let cores = idle as f64 / total as f64 * cpus;
    let next = average.map_or(cores, |a| a + SMOOTHING * (cores - a));
    (Some(next), Some(next >= SPARE_CORES))
}

/// The machine's CPU time so far, in ticks: all of it, and the idle part
/// (idle and iowait), from the first line of `/proc/stat`.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_ascii_whitespace()
        .take(8)
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    let idle = ticks.get(3)? + ticks.get(4)?;
    Some((ticks.iter().sum(), idle))
}

/// One worker's load, written by that worker, read by the others.
#[derive(Debug, Default)]
struct Load {
    /// When it last unparked (nanoseconds since `base`, plus one), or 0
    /// while it is parked.
    busy_since: AtomicU64,
    /// Its busy share, averaged over about [`WINDOW`], in thousandths.
    share: AtomicU32,
}

/// A connection accepted by one worker for another to serve.
#[derive(Debug)]
pub(crate) struct Handed {
    pub(crate) stream: Detached,
    pub(crate) info: ConnInfo,
    /// The listener it came in on, by place.
    pub(crate) index: usize,
    pub(crate) permit: crate::slot::Slot,
    /// For a connection moved between requests, the bytes read from it
    /// and not yet served (the start of the next request, if any).
    pub(crate) moved_here: Option<bytes::Bytes>,
}

/// What a worker receives: connections handed to it.
pub(crate) type Inbox = mpsc::UnboundedReceiver<Handed>;

thread_local! {
    /// The current worker's busy share (a fraction, decaying) and when it
    /// last parked or unparked.
    static SHARE: Cell<(f32, u64)> = Cell::new((0.0, now_ns()));
}

/// The monotonic clock in nanoseconds. The park and wake hooks read the
/// clock twice a request at one connection, and with `Instant` each read
/// was followed by two or three subtractions of `timespec`s (carries and
/// checks, about 50 instructions each): more than the read itself.
/// CLOCK_MONOTONIC always exists on Linux.
fn now_ns() -> u64 {
    crate::clock::read(libc::CLOCK_MONOTONIC)
        .map_or(0, |t| t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

impl Balance {
    /// The balance of `workers` workers, and each one's inbox.
    pub(crate) fn new(workers: usize) -> (Balance, Vec<Inbox>) {
        let workers = workers.max(1);
        let (inbox, receivers) = (0..workers).map(|_| mpsc::unbounded_channel()).unzip();
        let balance = Balance {
            base: now_ns(),
            loads: (0..workers).map(|_| Load::default()).collect(),
            inbox: Vec::into_boxed_slice(inbox),
            help: (0..workers).map(|w| watch::Sender::new(w == 0)).collect(),
            spare: Spare::new(),
        };
        (balance, receivers)
    }

    /// `at` ([`now_ns`]) on the loads' clock, never 0 (which says idle).
    fn stamp(&self, at: u64) -> u64 {
        at.saturating_sub(self.base) + 1
    }

    /// Called by worker `me`'s runtime when it wakes up.
    pub(crate) fn unparked(&self, me: usize) {
        let now = self.update(me, false);
        self.loads[me]
            .busy_since
            .store(self.stamp(now), Ordering::Relaxed);
    }

    /// Called by worker `me`'s runtime when it has nothing to do.
    pub(crate) fn parked(&self, me: usize) {
        self.update(me, true);
        self.loads[me].busy_since.store(0, Ordering::Relaxed);
    }

    /// Moves worker `me`'s share towards 1 for a busy spell that ends now,
    /// towards 0 for an idle one, by the spell's length against
    /// [`WINDOW`] (an exponential average, linear for short spells): a
    /// spell of a window or more sets the share outright.
    fn update(&self, me: usize, busy: bool) -> u64 {
        let now = now_ns();
        let (share, since) = SHARE.get();
        let spell = now.saturating_sub(since) as f32 * 1e-9;
        let weight = (spell / WINDOW.as_secs_f32()).min(1.0);
        let target = if busy { 1.0 } else { 0.0 };
        let share = share + weight * (target - share);
        SHARE.set((share, now));
        self.loads[me]
            .share
            .store((share * 1000.0) as u32, Ordering::Relaxed);
        now
    }

    /// Whether `worker` has no CPU to spare: busy now, and either busy for
    /// [`STUCK`] or busy [`FULL`] of the time lately.
    fn full(&self, worker: usize, now: u64) -> bool {
        let load = &self.loads[worker];
        let since = load.busy_since.load(Ordering::Relaxed);
        since != 0
            && (now.saturating_sub(since) >= STUCK.as_nanos() as u64
                || load.share.load(Ordering::Relaxed) >= FULL)
    }

    /// Who serves a connection `me` accepted: `me`, unless it is full
    /// and the machine has CPU to spare; then the first worker that is not
    /// full (asked to accept from now on), or `me` if all are.
    pub(crate) fn serves(&self, me: usize) -> usize {
        let Some(to) = self.relief(me, now_ns()) else {
            return me;
        };
        self.help[to].send_if_modified(|h| !std::mem::replace(h, true));
        to
    }

    /// Where a keep-alive connection of `me`'s that is between requests
    /// should go: nowhere, unless `me` is full, the machine has CPU to
    /// spare and another worker is not full. At most one connection per
    /// [`WINDOW`] leaves a worker, so that the load they carry shows in
    /// the workers' shares before more move.
    pub(crate) fn moves(&self, me: usize) -> Option<usize> {
        thread_local! {
            static LAST_MOVE: Cell<Option<u64>> = const { Cell::new(None) };
        }
        if self.loads.len() < 2 {
            return None;
        }
        let now = now_ns();
        if LAST_MOVE
            .get()
            .is_some_and(|t| now.saturating_sub(t) < WINDOW.as_nanos() as u64)
        {
            return None;
        }
        let to = self.relief(me, now)?;
        LAST_MOVE.set(Some(now));
        Some(to)
    }

    /// The first worker other than `me` that could take work off it, if
    /// `me` is full and the machine has CPU to spare (at `now`).
    fn relief(&self, me: usize, now: u64) -> Option<usize> {
        if self.loads.len() < 2 {
            return None;
        }
        let now = self.stamp(now);
        if !self.full(me, now) || !self.spare.get() {
            return None;
        }
        (0..self.loads.len()).find(|&w| w != me && !self.full(w, now))
    }

    /// Whether helper `me` should go on accepting: every worker before it
    /// is full. When not, it is no longer asked to.
    pub(crate) fn still_needed(&self, me: usize) -> bool {
        let now = self.stamp(now_ns());
        let needed = (0..me).all(|w| self.full(w, now));
        if !needed {
            self.help[me].send_if_modified(|h| std::mem::replace(h, false));
        }
        needed
    }

    /// Whether `me` is asked to accept, to watch for changes.
    pub(crate) fn asked(&self, me: usize) -> watch::Receiver<bool> {
        self.help[me].subscribe()
    }

    /// Hands `h` to worker `to`. Fails only when that worker has stopped
    /// (the connection is then dropped, as at shutdown).
    pub(crate) fn hand(&self, to: usize, h: Handed) {
        drop(self.inbox[to].send(h));
    }

    /// The runtime hooks that keep worker `me`'s load.
    /// With one worker there is nowhere to move work, and nothing to
    /// measure: no hooks (they read the clock at every park and wake, four
    /// times a request at one connection).
    pub(crate) fn hooks(self: &Arc<Self>, me: usize, rt: &mut tokio::runtime::Builder) {
        if self.loads.len() < 2 {
            return;
        }
        let (on_park, on_unpark) = (self.clone(), self.clone());
        rt.on_thread_park(move || on_park.parked(me))
            .on_thread_unpark(move || on_unpark.unparked(me));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balance(workers: usize) -> (Balance, Vec<Inbox>) {
        ASSUME_SPARE.store(true, Ordering::Relaxed);
        Balance::new(workers)
    }

    /// One worker: nothing to balance, and its runtime is not hooked
    /// (a hooked one marks itself busy when it wakes).
    #[test]
    fn one_worker_is_not_measured() {
        for workers in [1, 2] {
            let (b, _inboxes) = balance(workers);
            let b = Arc::new(b);
            let mut rt = tokio::runtime::Builder::new_current_thread();
            rt.enable_all();
            b.hooks(0, &mut rt);
            let rt = rt.build().unwrap();
            let busy = rt.block_on(async {
                // Parks and wakes the runtime.
                tokio::time::sleep(Duration::from_millis(5)).await;
                b.loads[0].busy_since.load(Ordering::Relaxed)
            });
            assert_eq!(busy != 0, workers == 2, "{workers} workers");
            assert_eq!(b.moves(0), None);
        }
    }

    #[test]
    fn a_worker_with_spare_cpu_serves_what_it_accepts() {
        let (b, _inboxes) = balance(2);
        assert_eq!((b.serves(0), b.serves(1)), (0, 1), "parked: spare CPU");
        b.unparked(0);
        assert_eq!(b.serves(0), 0, "just woken, no window yet");
    }

    #[test]
    fn a_full_worker_hands_over_and_asks_the_next_to_accept() {
        let (b, _inboxes) = balance(3);
        let asked = b.asked(1);
        assert!(!*asked.borrow(), "helpers start idle");
        // Worker 0 busy since long ago.
        b.loads[0].busy_since.store(1, Ordering::Relaxed);
        std::thread::sleep(STUCK);
        assert_eq!(b.serves(0), 1);
        assert!(*asked.borrow(), "worker 1 now accepts");
        assert!(b.still_needed(1), "worker 0 is still full");
        // Worker 0 parks: worker 1 stops accepting.
        b.loads[0].busy_since.store(0, Ordering::Relaxed);
        assert!(!b.still_needed(1));
        assert!(!*asked.borrow());
    }

    #[test]
    fn a_worker_busy_most_of_the_time_lately_is_full() {
        let (b, _inboxes) = balance(2);
        b.unparked(0);
        std::thread::sleep(WINDOW * 2);
        b.parked(0);
        assert!(b.loads[0].share.load(Ordering::Relaxed) >= FULL);
        b.unparked(0);
        assert_eq!(b.serves(0), 1, "full by the time before");
        // Even a short idle spell counts: a burst of new connections just
        // after a busy spell is not taken for more of it.
        b.parked(0);
        std::thread::sleep(WINDOW / 4);
        b.unparked(0);
        assert!(b.loads[0].share.load(Ordering::Relaxed) < FULL);
        assert_eq!(b.serves(0), 0);
    }

    #[test]
    fn when_all_are_full_the_acceptor_keeps_the_connection() {
        let (b, _inboxes) = balance(2);
        for l in b.loads.iter() {
            l.busy_since.store(1, Ordering::Relaxed);
        }
        std::thread::sleep(STUCK);
        assert_eq!((b.serves(0), b.serves(1)), (0, 1));
    }

    #[test]
    fn at_most_one_connection_leaves_a_full_worker_per_window() {
        let (b, _inboxes) = balance(2);
        b.loads[0].busy_since.store(1, Ordering::Relaxed);
        std::thread::sleep(STUCK);
        assert_eq!(b.moves(0), Some(1));
        assert_eq!(b.moves(0), None, "the next waits a window");
        std::thread::sleep(WINDOW);
        assert_eq!(b.moves(0), Some(1));
        assert_eq!(b.moves(1), None, "worker 1 is not full");
    }

    #[test]
    fn the_idle_average_ignores_stale_counters_and_single_noisy_samples() {
        let ms = Duration::from_millis;
        // Counters from before a burst (an idle machine) answer "no".
        assert_eq!(
            idle_average(None, ms(1500), (300, 290), 2.0),
            (None, Some(false))
        );
        // The first fresh sample stands alone; a lasting idle core shows.
        let (a, spare) = idle_average(None, ms(50), (10, 6), 2.0);
        assert_eq!(spare, Some(true));
        assert!((a.unwrap() - 1.2).abs() < 1e-9);
        // A busy machine (0.2 idle cores) with one sample of 3 idle ticks
        // out of 10 (0.6 cores, noise at 10 ms a tick) is still not spare.
        let (a, spare) = idle_average(Some(0.2), ms(50), (10, 3), 2.0);
        assert_eq!(spare, Some(false));
        assert!(a.unwrap() < SPARE_CORES);
        // No ticks passed: no answer, the average kept.
        assert_eq!(
            idle_average(Some(0.7), ms(50), (0, 0), 2.0),
            (Some(0.7), None)
        );
    }

    #[test]
    fn the_machine_idle_time_is_read_from_proc_stat() {
        let (total, idle) = cpu_ticks().expect("/proc/stat");
        assert!(0 < idle && idle < total, "{idle} of {total}");
    }
}
