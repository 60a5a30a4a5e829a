//! The schedule: hands out tickets, each a request with the instant it is due
//! (its *intended* send time), the phase it belongs to and its target.
//!
//! Closed and open loop differ only here. In a closed loop a request is due
//! when a connection asks for it; in an open loop it is due at the next
//! arrival instant whatever the server does. The driver is the same for both:
//! a connection takes the next ticket, waits until it is due, sends, records.
//! The stop condition also lives here: when it returns `None` the run drains.

use std::time::{Duration, Instant};

use crate::plan::{Arrival, Stop, Windows};

/// The part of the run a request belongs to. Only `Measured` requests are in
/// the figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the measured window.
    Warmup,
    /// Counted.
    Measured,
    /// After the measured requests have all been issued.
    Cooldown,
}

/// One request to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// When it is due. Corrected latency is measured from here.
    pub intended: Instant,
    /// Which part of the run it belongs to.
    pub phase: Phase,
    /// Index into the plan's targets.
    pub target: usize,
}

/// How due times are made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Due when asked for.
    Closed,
    /// Due at arrival instants.
    Open {
        /// Requests per second for this schedule (a thread's share).
        rate: f64,
        /// Constant or Poisson gaps.
        arrival: Arrival,
        /// Shift of the first arrival, so that several threads with constant
        /// arrivals interleave instead of sending together.
        offset: Duration,
    },
}

/// The ticket source of one thread.
#[derive(Debug)]
pub struct Schedule {
    start: Instant,
    pacing: Pacing,
    stop: Stop,
    windows: Windows,
    picker: TargetPicker,
    rng: SplitMix64,
    /// Open loop: tickets issued so far (constant arrivals are computed from
    /// it, so that no rounding error accumulates) and the next due time in
    /// seconds after `start`.
    issued: u64,
    next_due: f64,
    measured_issued: u64,
    /// Count stop: cool-down ends this long after start.
    cooldown_until: Option<Duration>,
    exhausted: bool,
}

impl Schedule {
    /// A schedule starting at `start`. `stop` is this schedule's share (a
    /// thread's part of `-n`); weights are the targets' weights (all > 0).
    pub fn new(
        start: Instant,
        pacing: Pacing,
        stop: Stop,
        windows: Windows,
        weights: &[u32],
        seed: u64,
    ) -> Schedule {
        let mut schedule = Schedule {
            start,
            pacing,
            stop,
            windows,
            picker: TargetPicker::new(weights),
            rng: SplitMix64(seed),
            issued: 0,
            next_due: 0.0,
            measured_issued: 0,
            cooldown_until: None,
            exhausted: false,
        };
        schedule.next_due = schedule.arrival(0);
        if let Stop::Count(0) = stop {
            schedule.exhausted = true;
        }
        schedule
    }

    /// The next request, or `None` once the run has issued everything (then
    /// always `None`). `now` is used by the closed loop as the due time.
    pub fn next(&mut self, now: Instant) -> Option<Ticket> {
        if self.exhausted {
            return None;
        }
        let at = match self.pacing {
            Pacing::Closed => now.saturating_duration_since(self.start),
            Pacing::Open { .. } => Duration::from_secs_f64(self.next_due),
        };
        let Some(phase) = self.phase_at(at) else {
            self.exhausted = true;
            return None;
        };
        if let Pacing::Open { .. } = self.pacing {
            self.issued += 1;
            self.next_due = self.arrival(self.issued);
        }
        Some(Ticket {
            intended: self.start + at,
            phase,
            target: self.picker.pick(),
        })
    }

    /// Decides the phase of a request due `at` after the start, or that the
    /// run is over; counts measured tickets.
    fn phase_at(&mut self, at: Duration) -> Option<Phase> {
        let warmup = self.windows.warmup;
        if at < warmup {
            return Some(Phase::Warmup);
        }
        match self.stop {
            Stop::Duration(d) => {
                if at < warmup + d {
                    Some(Phase::Measured)
                } else if at < warmup + d + self.windows.cooldown {
                    Some(Phase::Cooldown)
                } else {
                    None
                }
            }
            Stop::Count(n) => {
                if self.measured_issued < n {
                    self.measured_issued += 1;
                    if self.measured_issued == n {
                        self.cooldown_until = Some(at + self.windows.cooldown);
                    }
                    Some(Phase::Measured)
                } else if self.cooldown_until.is_some_and(|end| at < end) {
                    Some(Phase::Cooldown)
                } else {
                    None
                }
            }
        }
    }

    /// Due time of open-loop ticket `k`, in seconds after the start.
    fn arrival(&mut self, k: u64) -> f64 {
        match self.pacing {
            Pacing::Closed => 0.0,
            Pacing::Open {
                rate,
                arrival,
                offset,
            } => match arrival {
                Arrival::Constant => offset.as_secs_f64() + k as f64 / rate,
                Arrival::Poisson => {
                    let base = if k == 0 {
                        offset.as_secs_f64()
                    } else {
                        self.next_due
                    };
                    base + self.rng.exponential(rate)
                }
            },
        }
    }
}

/// Smooth weighted round-robin (as in nginx's upstream balancing): exact
/// proportions over every cycle of `sum(weights)` picks, evenly spread, and
/// deterministic, so a test can count.
#[derive(Debug)]
struct TargetPicker {
    weights: Vec<i64>,
    current: Vec<i64>,
    total: i64,
}

impl TargetPicker {
    fn new(weights: &[u32]) -> TargetPicker {
        let weights: Vec<i64> = weights.iter().map(|&w| i64::from(w.max(1))).collect();
        TargetPicker {
            total: weights.iter().sum(),
            current: vec![0; weights.len()],
            weights,
        }
    }

    fn pick(&mut self) -> usize {
        if self.weights.len() <= 1 {
            return 0;
        }
        let mut best = 0;
        for i in 0..self.weights.len() {
            self.current[i] += self.weights[i];
            if self.current[i] > self.current[best] {
                best = i;
            }
        }
        self.current[best] -= self.total;
        best
    }
}

/// SplitMix64: a tiny, well-mixed PRNG. Enough for arrival gaps; keeps the
/// crate free of a random-number dependency and runs reproducible by seed.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An exponential sample with the given rate (mean `1/rate`).
    pub(crate) fn exponential(&mut self, rate: f64) -> f64 {
        // Uniform in (0, 1]: never 0, so ln is finite.
        let u = ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        -u.ln() / rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(rate: f64, arrival: Arrival) -> Pacing {
        Pacing::Open {
            rate,
            arrival,
            offset: Duration::ZERO,
        }
    }

    fn drain(s: &mut Schedule, now: Instant) -> Vec<Ticket> {
        let mut out = Vec::new();
        while let Some(t) = s.next(now) {
            out.push(t);
            assert!(out.len() < 1_000_000, "schedule never ends");
        }
        out
    }

    #[test]
    fn constant_arrivals_are_exact_and_phased() {
        let start = Instant::now();
        let windows = Windows {
            warmup: Duration::from_millis(100),
            cooldown: Duration::from_millis(50),
        };
        let mut s = Schedule::new(
            start,
            open(1000.0, Arrival::Constant),
            Stop::Duration(Duration::from_millis(200)),
            windows,
            &[1],
            7,
        );
        let tickets = drain(&mut s, start);
        assert_eq!(tickets.len(), 350);
        let count = |p| tickets.iter().filter(|t| t.phase == p).count();
        assert_eq!(
            (
                count(Phase::Warmup),
                count(Phase::Measured),
                count(Phase::Cooldown)
            ),
            (100, 200, 50)
        );
        assert_eq!(tickets[250].intended - start, Duration::from_millis(250));
        assert!(s.next(start).is_none(), "stays exhausted");
    }

    #[test]
    fn poisson_arrivals_have_the_rate() {
        let start = Instant::now();
        let mut s = Schedule::new(
            start,
            open(2000.0, Arrival::Poisson),
            Stop::Duration(Duration::from_secs(10)),
            Windows::default(),
            &[1],
            42,
        );
        let n = drain(&mut s, start).len() as f64;
        // 20000 expected; a Poisson count has sd ~141.
        assert!((n - 20_000.0).abs() < 1_000.0, "{n}");
    }

    #[test]
    fn count_stop_counts_measured_and_then_cools_down() {
        let start = Instant::now();
        let windows = Windows {
            warmup: Duration::ZERO,
            cooldown: Duration::from_millis(10),
        };
        let mut s = Schedule::new(
            start,
            open(1000.0, Arrival::Constant),
            Stop::Count(5),
            windows,
            &[1],
            1,
        );
        let tickets = drain(&mut s, start);
        let measured = tickets
            .iter()
            .filter(|t| t.phase == Phase::Measured)
            .count();
        let cooldown = tickets
            .iter()
            .filter(|t| t.phase == Phase::Cooldown)
            .count();
        assert_eq!((measured, cooldown), (5, 9)); // due at 5..=13 ms, before 4 + 10 ms
    }

    #[test]
    fn closed_loop_is_due_now_and_stops_by_count() {
        let start = Instant::now();
        let mut s = Schedule::new(
            start,
            Pacing::Closed,
            Stop::Count(3),
            Windows::default(),
            &[1],
            1,
        );
        let later = start + Duration::from_millis(5);
        let tickets = drain(&mut s, later);
        assert_eq!(tickets.len(), 3);
        assert!(tickets
            .iter()
            .all(|t| t.intended == later && t.phase == Phase::Measured));
    }

    #[test]
    fn closed_loop_duration_ends_by_time() {
        let start = Instant::now();
        let mut s = Schedule::new(
            start,
            Pacing::Closed,
            Stop::Duration(Duration::from_secs(1)),
            Windows::default(),
            &[1],
            1,
        );
        assert_eq!(s.next(start).map(|t| t.phase), Some(Phase::Measured));
        assert!(s.next(start + Duration::from_secs(2)).is_none());
        assert!(s.next(start).is_none());
    }

    #[test]
    fn weights_give_exact_proportions() {
        let start = Instant::now();
        let mut s = Schedule::new(
            start,
            Pacing::Closed,
            Stop::Count(400),
            Windows::default(),
            &[3, 1],
            1,
        );
        let tickets = drain(&mut s, start);
        let first = tickets.iter().filter(|t| t.target == 0).count();
        assert_eq!(first, 300);
        // Smooth: never more than 3 of the first target in a row.
        let mut run = 0;
        for t in &tickets {
            run = if t.target == 0 { run + 1 } else { 0 };
            assert!(run <= 3);
        }
    }
}
