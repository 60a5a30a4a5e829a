//! Rate limits and per-client connection limits, with nginx's semantics
//! (`limit_req_zone` / `limit_req` with `burst`, `nodelay` and `delay=N`;
//! `limit_conn`), for the authorization phase.
//!
//! Pure: no clock (the caller passes the [`Instant`] of each request), no I/O,
//! no async. Memory is bounded: a zone holds a fixed number of keys and
//! forgets the least recently seen one when full, as nginx does when its
//! shared memory zone runs out.
//!
//! # The algorithm (nginx's leaky bucket)
//!
//! Each key has an *excess* (requests above the rate, still queued in the
//! bucket) and the time it was last updated. A request at `now` computes
//! `excess = max(0, excess - rate × (now - last) + 1 request)`.
//! If that is above `burst` the request is refused and the key's state is
//! left as it was, so a flood of refused requests does not push the next
//! allowed time further away. Otherwise the state is updated and the request
//! passes, or waits `(excess - D) / rate`, where D is the delay threshold
//! (0 by default, `burst` with `nodelay`, N with `delay=N`). A key seen for
//! the first time starts with an excess of 0, so its first request passes.
//!
//! # Units
//!
//! nginx keeps the excess in milli-requests and the rate in milli-requests
//! per second, and truncates the leak to whole milli-requests on every
//! request (so "30r/m", 500 milli-requests a second, leaks nothing in a
//! millisecond). Here the rate is kept exactly, as `n` requests per `p`
//! seconds (reduced: "30r/m" is one request per 2 s), and the excess in units
//! of `1 / (p × 10⁹)` request: a request costs `p × 10⁹` units and the
//! bucket leaks exactly `n` units per nanosecond. A delay is then
//! `(excess - D) / n` nanoseconds, with no rounding until the final
//! division (rounded up). The results are nginx's wherever nginx's own
//! arithmetic is exact.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::{Duration, Instant};

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// How many locks a zone's table is split into, so that concurrent requests
/// rarely wait on the same one.
const SHARDS: usize = 16;

/// A rate: requests per second (as nginx: "10r/s", "30r/m").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// `requests` per `period_secs` seconds, reduced to lowest terms (so
    /// "60r/m" equals "1r/s"). Both are above zero.
    requests: u64,
    period_secs: u64,
}

impl Rate {
    /// Parses "10r/s", "30r/m" or "1r/h" (the `r` is optional: "10/s").
    /// The count is a whole number above zero; errors are human messages
    /// for a configuration error.
    pub fn parse(s: &str) -> Result<Rate, String> {
        const EXPECTED: &str = "expected a rate such as \"10r/s\" or \"30r/m\"";
        let (count, unit) = s.trim().split_once('/').ok_or(EXPECTED)?;
        let count = count.strip_suffix('r').unwrap_or(count);
        let period_secs = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            _ => return Err(EXPECTED.to_owned()),
        };
        if count.is_empty() || !count.bytes().all(|b| b.is_ascii_digit()) {
            return Err(EXPECTED.to_owned());
        }
        let requests: u64 = count
            .parse()
            .map_err(|_| "the rate is too large".to_owned())?;
        if requests == 0 {
            return Err("the rate must be above zero".to_owned());
        }
        Ok(Rate::new(requests, period_secs))
    }

    /// Requests per second.
    pub fn per_second(self) -> f64 {
        self.requests as f64 / self.period_secs as f64
    }

    fn new(requests: u64, period_secs: u64) -> Rate {
        let divisor = gcd(requests, period_secs);
        Rate {
            requests: requests / divisor,
            period_secs: period_secs / divisor,
        }
    }
}

impl fmt::Display for Rate {
    /// nginx's notation, in the largest unit that needs no fraction.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The period divides 3600 (it was 1, 60 or 3600 before reduction).
        let (count, unit) = match self.period_secs {
            1 => (u128::from(self.requests), 's'),
            p if 60 % p == 0 => (u128::from(self.requests) * u128::from(60 / p), 'm'),
            p => (u128::from(self.requests) * u128::from(3600 / p), 'h'),
        };
        write!(f, "{count}r/{unit}")
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// When excess requests are delayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delay {
    /// nginx's default: every request over the rate waits its turn.
    All,
    /// `nodelay`: requests within the burst pass at once.
    None,
    /// `delay=N`: the first N excess requests pass at once, the rest wait.
    After(u32),
}

/// One `limit_req`: the rate, how many requests may queue above it, and
/// which of those wait.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    pub rate: Rate,
    pub burst: u32,
    pub delay: Delay,
}

/// What a limit decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Serve it now.
    Pass,
    /// Serve it after this wait.
    Delay(Duration),
    /// Refuse it (nginx answers 503, or `limit_req_status`); a request of
    /// the same key would pass after `retry_after` (whole seconds, at least
    /// one) if none came in between.
    Refuse { retry_after: Duration },
}

/// A [`RateLimit`] in the units of the bucket (see the module docs).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// Units one request adds.
    cost: u128,
    /// Units leaked per nanosecond.
    leak: u128,
    /// A request is refused when the excess would be above this.
    refuse_above: u128,
    /// A request waits when the excess is above this.
    delay_above: u128,
}

impl Bucket {
    fn new(limit: RateLimit) -> Bucket {
        let cost = u128::from(limit.rate.period_secs) * NANOS_PER_SEC;
        let delay_after = match limit.delay {
            Delay::All => 0,
            Delay::None => limit.burst,
            Delay::After(n) => n,
        };
        Bucket {
            cost,
            leak: u128::from(limit.rate.requests),
            refuse_above: u128::from(limit.burst) * cost,
            delay_above: u128::from(delay_after) * cost,
        }
    }

    /// Decides a request of a key already in the table, updating its state
    /// unless the request is refused.
    fn step(&self, state: &mut KeyState, now: Instant) -> Verdict {
        let elapsed = now.saturating_duration_since(state.last).as_nanos();
        let excess = (state.excess + self.cost).saturating_sub(self.leak.saturating_mul(elapsed));
        if excess > self.refuse_above {
            // Another request passes once `excess - leak × t` is down to the
            // refuse line.
            let secs = (excess - self.refuse_above).div_ceil(self.leak * NANOS_PER_SEC);
            return Verdict::Refuse {
                retry_after: Duration::from_secs(saturate(secs.max(1))),
            };
        }
        state.excess = excess;
        state.last = state.last.max(now);
        if excess <= self.delay_above {
            Verdict::Pass
        } else {
            Verdict::Delay(duration_from_nanos(
                (excess - self.delay_above).div_ceil(self.leak),
            ))
        }
    }
}

fn saturate(n: u128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn duration_from_nanos(nanos: u128) -> Duration {
    // The remainder is below 10⁹, so it fits a u32.
    let subsec = (nanos % NANOS_PER_SEC) as u32;
    Duration::new(saturate(nanos / NANOS_PER_SEC), subsec)
}

/// Locks a mutex, ignoring poisoning: every critical section here leaves the
/// data consistent before anything that could panic.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Clone, Copy, Debug)]
struct KeyState {
    excess: u128,
    last: Instant,
}

const NIL: usize = usize::MAX;

#[derive(Debug)]
struct Slot {
    key: Box<[u8]>,
    state: KeyState,
    /// Neighbours in recency order (indices into `slots`, or NIL).
    newer: usize,
    older: usize,
}

/// A bounded map of keys with least-recently-seen eviction: a hash map to
/// slot indices, and the slots linked in recency order, so lookup, touch and
/// eviction are O(1).
#[derive(Debug)]
struct LruShard {
    map: HashMap<Box<[u8]>, usize>,
    slots: Vec<Slot>,
    newest: usize,
    oldest: usize,
    cap: usize,
}

impl LruShard {
    fn new(cap: usize) -> LruShard {
        LruShard {
            // A hasher of its own: the zone picks the shard with its hash,
            // so reusing it would leave most buckets of this map empty.
            map: HashMap::new(),
            slots: Vec::new(),
            newest: NIL,
            oldest: NIL,
            cap: cap.max(1),
        }
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    /// The key's state, marking it the most recently seen.
    fn get(&mut self, key: &[u8]) -> Option<&mut KeyState> {
        let i = *self.map.get(key)?;
        if self.newest != i {
            self.unlink(i);
            self.push_newest(i);
        }
        Some(&mut self.slots[i].state)
    }

    /// Adds a key that is not in the map, evicting the least recently seen
    /// one when full.
    fn insert(&mut self, key: &[u8], state: KeyState) {
        let i = if self.slots.len() < self.cap {
            self.slots.push(Slot {
                key: key.into(),
                state,
                newer: NIL,
                older: NIL,
            });
            self.slots.len() - 1
        } else {
            let i = self.oldest;
            self.unlink(i);
            let old = std::mem::replace(&mut self.slots[i].key, key.into());
            self.slots[i].state = state;
            self.map.remove(&old);
            i
        };
        self.map.insert(key.into(), i);
        self.push_newest(i);
    }

    fn unlink(&mut self, i: usize) {
        let Slot { newer, older, .. } = self.slots[i];
        match newer {
            NIL => self.newest = older,
            n => self.slots[n].older = older,
        }
        match older {
            NIL => self.oldest = newer,
            o => self.slots[o].newer = newer,
        }
    }

    fn push_newest(&mut self, i: usize) {
        self.slots[i].newer = NIL;
        self.slots[i].older = self.newest;
        match self.newest {
            NIL => self.oldest = i,
            n => self.slots[n].newer = i,
        }
        self.newest = i;
    }
}

/// One limit's table of keys (nginx's zone). Thread safe: the table is split
/// by key hash into a few locked shards, each holding at most its share of
/// the capacity and forgetting its least recently seen key when full.
pub struct RateZone {
    limit: RateLimit,
    bucket: Bucket,
    hasher: RandomState,
    shards: Box<[Mutex<LruShard>]>,
    refusals: AtomicU64,
    last_log: Mutex<Option<Instant>>,
}

impl RateZone {
    /// A zone of `limit` holding at most `capacity` keys (at least one).
    pub fn new(limit: RateLimit, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let shards = SHARDS.min(capacity);
        // Each shard its share, the remainder spread over the first ones.
        let share = |i: usize| capacity / shards + usize::from(i < capacity % shards);
        RateZone {
            limit,
            bucket: Bucket::new(limit),
            hasher: RandomState::new(),
            shards: (0..shards)
                .map(|i| Mutex::new(LruShard::new(share(i))))
                .collect(),
            refusals: AtomicU64::new(0),
            last_log: Mutex::new(None),
        }
    }

    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Decides one request of `key` arriving at `now`.
    pub fn check(&self, key: &[u8], now: Instant) -> Verdict {
        let mut shard = lock(self.shard(key));
        match shard.get(key) {
            Some(state) => self.bucket.step(state, now),
            None => {
                shard.insert(
                    key,
                    KeyState {
                        excess: 0,
                        last: now,
                    },
                );
                Verdict::Pass
            }
        }
    }

    /// Keys held now (for tests and the status page).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| lock(s).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most keys the zone holds.
    pub fn capacity(&self) -> usize {
        self.shards.iter().map(|s| lock(s).cap).sum()
    }

    /// Counts one refusal, and says whether to log now: at most once per
    /// `every`, the first refusal always, and then with the number of
    /// refusals (this one included) since the last logged one, so a flood
    /// does not flood the log.
    pub fn refused(&self, now: Instant, every: Duration) -> Option<u64> {
        self.refusals.fetch_add(1, Ordering::Relaxed);
        let mut last = match self.last_log.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // Another refusal is deciding; this one is counted for later.
            Err(TryLockError::WouldBlock) => return None,
        };
        if let Some(at) = *last {
            if now.saturating_duration_since(at) < every {
                return None;
            }
        }
        *last = Some(now);
        Some(self.refusals.swap(0, Ordering::Relaxed))
    }

    fn shard(&self, key: &[u8]) -> &Mutex<LruShard> {
        let hash = self.hasher.hash_one(key);
        &self.shards[(hash % self.shards.len() as u64) as usize]
    }
}

impl fmt::Debug for RateZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateZone")
            .field("limit", &self.limit)
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish_non_exhaustive()
    }
}

/// Connections per key (client address): `limit_conn`. The table holds only
/// keys with live connections, at most `capacity` of them.
pub struct ConnZone {
    max_per_key: u32,
    capacity: usize,
    keys: AtomicUsize,
    hasher: RandomState,
    shards: Box<[Mutex<ConnCounts>]>,
}

/// Live connections per key, in one shard of a [`ConnZone`].
type ConnCounts = HashMap<Box<[u8]>, u32>;

impl ConnZone {
    /// A zone allowing `max_per_key` connections per key, for at most
    /// `capacity` keys at once (at least one).
    pub fn new(max_per_key: u32, capacity: usize) -> Arc<Self> {
        Arc::new(ConnZone {
            max_per_key,
            capacity: capacity.max(1),
            keys: AtomicUsize::new(0),
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        })
    }

    /// A slot for one more connection of `key`, or None when the key has
    /// `max_per_key` already, or when it is new and the table is full (keys
    /// with live connections are never evicted).
    pub fn acquire(self: &Arc<Self>, key: &[u8]) -> Option<ConnGuard> {
        let shard = self.shard_of(key);
        let mut map = lock(&self.shards[shard]);
        match map.get_mut(key) {
            Some(count) if *count >= self.max_per_key => return None,
            Some(count) => *count += 1,
            None => {
                if self.max_per_key == 0 {
                    return None;
                }
                self.keys
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                        (n < self.capacity).then_some(n + 1)
                    })
                    .ok()?;
                map.insert(key.into(), 1);
            }
        }
        Some(ConnGuard {
            zone: Arc::clone(self),
            key: key.into(),
            shard,
        })
    }

    /// Live connections of `key`.
    pub fn count(&self, key: &[u8]) -> u32 {
        let map = lock(&self.shards[self.shard_of(key)]);
        map.get(key).copied().unwrap_or(0)
    }

    /// Keys with live connections.
    pub fn len(&self) -> usize {
        self.keys.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn max_per_key(&self) -> u32 {
        self.max_per_key
    }

    fn shard_of(&self, key: &[u8]) -> usize {
        (self.hasher.hash_one(key) % self.shards.len() as u64) as usize
    }

    fn release(&self, key: &[u8], shard: usize) {
        let mut map = lock(&self.shards[shard]);
        if let Some(count) = map.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                map.remove(key);
                self.keys.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl fmt::Debug for ConnZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnZone")
            .field("max_per_key", &self.max_per_key)
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

/// One connection's slot in a [`ConnZone`]; releases it on drop.
#[derive(Debug)]
#[must_use = "the connection slot is released when the guard is dropped"]
pub struct ConnGuard {
    zone: Arc<ConnZone>,
    key: Box<[u8]>,
    shard: usize,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.zone.release(&self.key, self.shard);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn zone(rate: &str, burst: u32, delay: Delay) -> RateZone {
        let rate = Rate::parse(rate).unwrap();
        RateZone::new(RateLimit { rate, burst, delay }, 1000)
    }

    fn refuse(secs: u64) -> Verdict {
        Verdict::Refuse {
            retry_after: Duration::from_secs(secs),
        }
    }

    #[test]
    fn limit_burst_zero() {
        let z = zone("10r/s", 0, Delay::All);
        let t0 = Instant::now();
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        assert_eq!(z.check(b"a", t0), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(99)), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(100)), Verdict::Pass);
        assert_eq!(z.check(b"a", t0 + ms(150)), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(200)), Verdict::Pass);
    }

    #[test]
    fn limit_burst_nodelay() {
        let z = zone("10r/s", 5, Delay::None);
        let t0 = Instant::now();
        for i in 0..6 {
            assert_eq!(z.check(b"a", t0), Verdict::Pass, "request {i}");
        }
        assert_eq!(z.check(b"a", t0), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(100)), Verdict::Pass);
        assert_eq!(z.check(b"a", t0 + ms(100)), refuse(1));
    }

    #[test]
    fn limit_burst_default_delay() {
        let z = zone("10r/s", 5, Delay::All);
        let t0 = Instant::now();
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        for n in 1..=5 {
            assert_eq!(z.check(b"a", t0), Verdict::Delay(ms(100 * n)));
        }
        assert_eq!(z.check(b"a", t0), refuse(1));
        // 250 ms later 2.5 requests have leaked: 2.5 remain, plus this one.
        assert_eq!(z.check(b"a", t0 + ms(250)), Verdict::Delay(ms(350)));
    }

    #[test]
    fn limit_delay_after_n() {
        let z = zone("10r/s", 5, Delay::After(2));
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(z.check(b"a", t0), Verdict::Pass);
        }
        assert_eq!(z.check(b"a", t0), Verdict::Delay(ms(100)));
        assert_eq!(z.check(b"a", t0), Verdict::Delay(ms(200)));
        assert_eq!(z.check(b"a", t0), Verdict::Delay(ms(300)));
        assert_eq!(z.check(b"a", t0), refuse(1));
    }

    #[test]
    fn limit_delay_after_more_than_burst_is_nodelay() {
        let z = zone("10r/s", 2, Delay::After(10));
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(z.check(b"a", t0), Verdict::Pass);
        }
        assert_eq!(z.check(b"a", t0), refuse(1));
    }

    #[test]
    fn limit_refusal_does_not_change_state() {
        let z = zone("10r/s", 0, Delay::All);
        let t0 = Instant::now();
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        for i in 0..100 {
            assert!(matches!(z.check(b"a", t0 + ms(i)), Verdict::Refuse { .. }));
        }
        assert_eq!(z.check(b"a", t0 + ms(100)), Verdict::Pass);

        let z = zone("10r/s", 3, Delay::All);
        for _ in 0..4 {
            assert_ne!(z.check(b"a", t0), refuse(1));
        }
        for _ in 0..1000 {
            assert_eq!(z.check(b"a", t0), refuse(1));
        }
        // One request's worth leaked: exactly one more fits, with the same
        // wait as the last accepted one.
        assert_eq!(z.check(b"a", t0 + ms(100)), Verdict::Delay(ms(300)));
    }

    #[test]
    fn limit_retry_after_slow_rate() {
        // 30r/m: one request per 2 s.
        let z = zone("30r/m", 0, Delay::All);
        let t0 = Instant::now();
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        assert_eq!(z.check(b"a", t0), refuse(2));
        assert_eq!(z.check(b"a", t0 + ms(500)), refuse(2));
        assert_eq!(z.check(b"a", t0 + ms(1000)), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(1999)), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(2000)), Verdict::Pass);

        // With a burst, Retry-After is when the queue has room again.
        let z = zone("30r/m", 2, Delay::None);
        for _ in 0..3 {
            assert_eq!(z.check(b"a", t0), Verdict::Pass);
        }
        assert_eq!(z.check(b"a", t0), refuse(2));
        assert_eq!(z.check(b"a", t0 + ms(2000)), Verdict::Pass);

        // The default delay of a slow rate: 2 s per queued request.
        let z = zone("30r/m", 2, Delay::All);
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        assert_eq!(z.check(b"a", t0), Verdict::Delay(ms(2000)));
        assert_eq!(z.check(b"a", t0), Verdict::Delay(ms(4000)));
        assert_eq!(z.check(b"a", t0), refuse(2));

        let z = zone("1r/h", 0, Delay::All);
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        assert_eq!(z.check(b"a", t0), refuse(3600));
        assert_eq!(z.check(b"a", t0 + Duration::from_secs(3600)), Verdict::Pass);
    }

    #[test]
    fn limit_retry_after_at_least_one_second() {
        let z = zone("1000r/s", 0, Delay::All);
        let t0 = Instant::now();
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        assert_eq!(z.check(b"a", t0), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(1)), Verdict::Pass);
    }

    #[test]
    fn limit_no_truncation_at_fractional_rates() {
        // 30r/m leaks half a milli-request per millisecond, which nginx's
        // integer arithmetic drops on every request; here it adds up.
        let z = zone("30r/m", 1000, Delay::None);
        let t0 = Instant::now();
        for i in 0..=1000 {
            assert_eq!(z.check(b"a", t0 + ms(i)), Verdict::Pass, "request {i}");
        }
        // 1001 requests in 1 s, half a request leaked: full at 1000.5.
        assert_eq!(z.check(b"a", t0 + ms(1000)), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(2000)), Verdict::Pass);
    }

    #[test]
    fn limit_clock_going_backwards() {
        let z = zone("10r/s", 1, Delay::None);
        let t0 = Instant::now() + Duration::from_secs(1);
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        // An earlier instant (another thread's, taken before the lock)
        // counts as no time elapsed and does not move `last` back.
        assert_eq!(z.check(b"a", t0 - ms(500)), Verdict::Pass);
        assert_eq!(z.check(b"a", t0 - ms(500)), refuse(1));
        assert_eq!(z.check(b"a", t0 + ms(100)), Verdict::Pass);
    }

    #[test]
    fn limit_rate_parse() {
        for (text, requests, period_secs) in [
            ("10r/s", 10, 1),
            ("10/s", 10, 1),
            (" 10r/s ", 10, 1),
            ("30r/m", 1, 2),
            ("30/m", 1, 2),
            ("60r/m", 1, 1),
            ("1r/m", 1, 60),
            ("1r/h", 1, 3600),
            ("7200/h", 2, 1),
        ] {
            assert_eq!(
                Rate::parse(text),
                Ok(Rate {
                    requests,
                    period_secs
                }),
                "{text}"
            );
        }
        assert_eq!(Rate::parse("60r/m"), Rate::parse("1r/s"));
        assert_eq!(Rate::parse("10r/s").unwrap().per_second(), 10.0);
        assert_eq!(Rate::parse("30r/m").unwrap().per_second(), 0.5);

        let expected = "expected a rate such as \"10r/s\" or \"30r/m\"";
        for text in [
            "abc", "10r/x", "10", "r/s", "/s", "", "-1r/s", "+1r/s", "1.5r/s", "10rr/s", "10R/s",
            "10r/S", "10 r/s", "10r/sec",
        ] {
            assert_eq!(Rate::parse(text), Err(expected.to_owned()), "{text:?}");
        }
        assert_eq!(
            Rate::parse("0r/s"),
            Err("the rate must be above zero".to_owned())
        );
        assert_eq!(
            Rate::parse("0/m"),
            Err("the rate must be above zero".to_owned())
        );
        assert_eq!(
            Rate::parse("99999999999999999999r/s"),
            Err("the rate is too large".to_owned())
        );
    }

    #[test]
    fn limit_rate_display() {
        for (text, shown) in [
            ("10r/s", "10r/s"),
            ("30r/m", "30r/m"),
            ("60r/m", "1r/s"),
            ("1r/h", "1r/h"),
            ("90r/h", "90r/h"),
            ("120r/h", "2r/m"),
        ] {
            assert_eq!(Rate::parse(text).unwrap().to_string(), shown);
        }
    }

    #[test]
    fn limit_huge_values_do_not_overflow() {
        let rate = Rate::parse(&format!("{}r/s", u64::MAX)).unwrap();
        let z = RateZone::new(
            RateLimit {
                rate,
                burst: u32::MAX,
                delay: Delay::All,
            },
            10,
        );
        let t0 = Instant::now();
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        assert!(matches!(z.check(b"a", t0), Verdict::Delay(_)));
        assert_eq!(
            z.check(b"a", t0 + Duration::from_secs(1 << 40)),
            Verdict::Pass
        );

        let rate = Rate::parse("1r/h").unwrap();
        let z = RateZone::new(
            RateLimit {
                rate,
                burst: u32::MAX,
                delay: Delay::All,
            },
            10,
        );
        assert_eq!(z.check(b"a", t0), Verdict::Pass);
        assert_eq!(z.check(b"a", t0), Verdict::Delay(Duration::from_secs(3600)));
    }

    #[test]
    fn limit_capacity_bound_and_eviction() {
        let limit = RateLimit {
            rate: Rate::parse("10r/s").unwrap(),
            burst: 0,
            delay: Delay::All,
        };
        let z = RateZone::new(limit, 100);
        assert_eq!(z.capacity(), 100);
        let t0 = Instant::now();
        assert_eq!(z.check(b"victim", t0), Verdict::Pass);
        assert_eq!(z.check(b"victim", t0), refuse(1));
        for i in 0..10_000u32 {
            assert_eq!(z.check(&i.to_be_bytes(), t0), Verdict::Pass);
            assert!(z.len() <= 100);
        }
        assert!(z.len() > 90, "{}", z.len());
        // Forgotten, so it starts afresh.
        assert_eq!(z.check(b"victim", t0), Verdict::Pass);

        for capacity in [0, 1, 5, 16, 17] {
            let z = RateZone::new(limit, capacity);
            for i in 0..1000u32 {
                let _ = z.check(&i.to_be_bytes(), t0);
            }
            assert_eq!(z.capacity(), capacity.max(1));
            assert!(z.len() <= capacity.max(1), "{capacity}: {}", z.len());
            assert!(!z.is_empty());
        }
    }

    #[test]
    fn limit_lru_evicts_least_recently_seen() {
        let t0 = Instant::now();
        let state = KeyState {
            excess: 7,
            last: t0,
        };
        let mut shard = LruShard::new(3);
        shard.insert(b"a", state);
        shard.insert(b"b", state);
        shard.insert(b"c", state);
        assert!(shard.get(b"a").is_some());
        shard.insert(b"d", state); // evicts b
        assert!(shard.get(b"b").is_none());
        assert!(shard.get(b"c").is_some());
        shard.insert(b"e", state); // evicts a
        assert!(shard.get(b"a").is_none());
        assert_eq!(shard.len(), 3);
        for key in [b"c", b"d", b"e"] {
            assert_eq!(shard.get(key).unwrap().excess, 7);
        }
        // Keep touching and inserting: stays bounded and consistent.
        for i in 0..100u8 {
            shard.insert(&[i], state);
            assert!(shard.get(b"e").is_some());
            assert_eq!(shard.len(), 3);
            assert!(shard.slots.len() <= 3);
        }
        assert!(shard.get(&[99]).is_some());
        assert!(shard.get(&[98]).is_some());
        assert!(shard.get(&[97]).is_none());

        let mut one = LruShard::new(0);
        one.insert(b"a", state);
        one.insert(b"b", state);
        assert!(one.get(b"a").is_none());
        assert!(one.get(b"b").is_some());
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn limit_keys_are_independent() {
        let z = zone("10r/s", 0, Delay::All);
        let t0 = Instant::now();
        assert_eq!(z.check(&[10, 0, 0, 1], t0), Verdict::Pass);
        assert_eq!(z.check(&[10, 0, 0, 2], t0), Verdict::Pass);
        assert_eq!(z.check(&[10, 0, 0, 1], t0), refuse(1));
        assert_eq!(z.check(&[10, 0, 0, 3], t0), Verdict::Pass);
        assert_eq!(z.check(&[10, 0, 0, 2], t0), refuse(1));
        assert_eq!(z.len(), 3);
    }

    #[test]
    fn limit_refused_log_throttle() {
        let z = zone("10r/s", 0, Delay::All);
        let t0 = Instant::now();
        let every = Duration::from_secs(1);
        assert_eq!(z.refused(t0, every), Some(1));
        assert_eq!(z.refused(t0 + ms(1), every), None);
        assert_eq!(z.refused(t0 + ms(500), every), None);
        assert_eq!(z.refused(t0 + ms(999), every), None);
        assert_eq!(z.refused(t0 + ms(1000), every), Some(4));
        assert_eq!(z.refused(t0 + ms(1001), every), None);
        assert_eq!(z.refused(t0 + ms(5000), every), Some(2));
        assert_eq!(z.refused(t0 + ms(9000), every), Some(1));
    }

    #[test]
    fn limit_concurrent_checks() {
        let z = Arc::new(RateZone::new(
            RateLimit {
                rate: Rate::parse("10r/s").unwrap(),
                burst: 0,
                delay: Delay::None,
            },
            64,
        ));
        let t0 = Instant::now();
        let passed: u32 = (0..2)
            .map(|_| {
                let z = Arc::clone(&z);
                std::thread::spawn(move || {
                    let mut passed = 0;
                    for i in 0..2000u32 {
                        if z.check(b"shared", t0) == Verdict::Pass {
                            passed += 1;
                        }
                        let _ = z.check(&(i % 50).to_be_bytes(), t0);
                    }
                    passed
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum();
        assert!(z.len() <= 64);
        // "shared" may be evicted now and then (50 other keys, 4 per shard),
        // but the bucket admits far fewer than the 4000 requests.
        assert!((1..4000).contains(&passed), "{passed}");
    }

    #[test]
    fn limit_conn_per_key() {
        let zone = ConnZone::new(2, 100);
        let a = zone.acquire(b"a").unwrap();
        let b = zone.acquire(b"a").unwrap();
        assert!(zone.acquire(b"a").is_none());
        assert_eq!(zone.count(b"a"), 2);
        let other = zone.acquire(b"b").unwrap();
        assert_eq!(zone.len(), 2);
        drop(a);
        assert_eq!(zone.count(b"a"), 1);
        let c = zone.acquire(b"a").unwrap();
        assert!(zone.acquire(b"a").is_none());
        drop(b);
        drop(c);
        assert_eq!(zone.count(b"a"), 0);
        assert_eq!(zone.len(), 1);
        drop(other);
        assert_eq!(zone.count(b"b"), 0);
        assert!(zone.is_empty());
        assert!(zone.shards.iter().all(|s| lock(s).is_empty()));
    }

    #[test]
    fn limit_conn_full_table_refuses_new_keys() {
        let zone = ConnZone::new(1, 3);
        let guards: Vec<_> = (0..3u8).map(|i| zone.acquire(&[i]).unwrap()).collect();
        assert!(zone.acquire(b"new").is_none());
        // Live keys are kept, and still at their limit.
        for i in 0..3u8 {
            assert_eq!(zone.count(&[i]), 1);
            assert!(zone.acquire(&[i]).is_none());
        }
        drop(guards);
        assert!(zone.is_empty());
        let _g = zone.acquire(b"new").unwrap();
        assert_eq!(zone.len(), 1);

        let none = ConnZone::new(0, 3);
        assert!(none.acquire(b"a").is_none());
        assert!(none.is_empty());
    }

    #[test]
    fn limit_conn_concurrent() {
        let zone = ConnZone::new(2, 8);
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let zone = Arc::clone(&zone);
                std::thread::spawn(move || {
                    for i in 0..2000u32 {
                        let key = [(i % 10) as u8];
                        let g1 = zone.acquire(&key);
                        let g2 = zone.acquire(&[t]);
                        assert!(zone.count(&key) <= 2);
                        assert!(zone.len() <= 8);
                        drop((g1, g2));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(zone.is_empty());
        assert!(zone.shards.iter().all(|s| lock(s).is_empty()));
    }
}
