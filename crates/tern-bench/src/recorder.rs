//! The recorder: turns each outcome into histogram entries and counts, then
//! forgets it (memory stays flat however long the run). One per thread;
//! merged exactly at the end.
//!
//! Beside the run's histograms it keeps a timeline: per interval (1 s to
//! start with) the responses, errors, body bytes and a small histogram of
//! the corrected latency (2 significant digits), by completion time from an
//! origin all threads share. At most [`MAX_INTERVALS`] intervals are kept:
//! a longer run merges adjacent pairs and doubles the width, so a run of
//! any length fits.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::histogram::MAX_US;
use crate::result::{
    Counts, Histograms, RunResult, Timeline, TimelinePoint, Window, FORMAT, LATE_AFTER,
    MAX_INTERVALS,
};
use crate::sample::Outcome;
use crate::schedule::{Phase, Ticket};

/// Histograms and counters of one thread.
#[derive(Debug)]
pub struct Recorder {
    hist: Histograms,
    counts: Counts,
    first: Option<Instant>,
    last: Option<Instant>,
    /// Body length of the first response per target.
    doc_lengths: Vec<Option<u64>>,
    server_software: Option<String>,
    intervals: Intervals,
}

impl Recorder {
    /// An empty recorder for a plan with `targets` URLs, whose timeline
    /// starts now.
    pub fn new(targets: usize) -> Recorder {
        Recorder::with_origin(targets, Instant::now())
    }

    /// An empty recorder whose timeline starts at `origin`: give every
    /// thread of a run the same one, so that their timelines add interval
    /// by interval.
    pub fn with_origin(targets: usize, origin: Instant) -> Recorder {
        Recorder {
            hist: Histograms::default(),
            counts: Counts::default(),
            first: None,
            last: None,
            doc_lengths: vec![None; targets],
            server_software: None,
            intervals: Intervals::new(origin, FIRST_INTERVAL_MS),
        }
    }

    /// True until a `Server` header has been seen: the driver copies the
    /// header only while this holds, so steady state allocates nothing.
    pub fn wants_server_header(&self) -> bool {
        self.server_software.is_none()
    }

    /// Records what became of `ticket`.
    pub fn record(&mut self, ticket: &Ticket, outcome: Outcome) {
        if let Outcome::Response(s) = &outcome {
            if s.connect.is_some() {
                self.counts.connections += 1;
            }
            if self.server_software.is_none() {
                self.server_software.clone_from(&s.server);
            }
        }
        if ticket.phase != Phase::Measured {
            self.counts.excluded += 1;
            return;
        }
        let sent = match &outcome {
            Outcome::Response(s) => Some(s.sent),
            Outcome::Failed { sent, .. } => *sent,
        };
        if sent.is_some_and(|s| s > ticket.intended + LATE_AFTER) {
            self.counts.late += 1;
        }
        match outcome {
            Outcome::Response(s) => {
                // A request sent before it was due (timer granularity) is
                // timed from when it was sent: corrected >= uncorrected.
                let origin = ticket.intended.min(s.sent);
                self.widen(origin, s.done);
                let total = s.done - s.sent;
                let connect = s.connect.unwrap_or(Duration::ZERO);
                let handshake = s.handshake.map_or(Duration::ZERO, |h| h.time);
                record_us(&mut self.hist.latency, s.done - origin);
                self.intervals
                    .response(s.done, s.done - origin, s.body_bytes);
                record_us(&mut self.hist.latency_uncorrected, total);
                record_us(&mut self.hist.connect, connect);
                record_us(&mut self.hist.handshake, handshake);
                record_us(
                    &mut self.hist.ttfb,
                    s.first_byte.saturating_duration_since(s.written),
                );
                record_us(
                    &mut self.hist.processing,
                    total.saturating_sub(connect + handshake),
                );
                let c = &mut self.counts;
                match s.handshake {
                    Some(h) if h.resumed => c.handshakes.resumed += 1,
                    Some(_) => c.handshakes.full += 1,
                    None => {}
                }
                c.responses += 1;
                *c.status.entry(s.status).or_default() += 1;
                c.bytes_total += s.head_bytes + s.body_bytes;
                c.bytes_body += s.body_bytes;
                c.bytes_sent += s.request_bytes;
                if s.kept_alive {
                    c.kept_alive += 1;
                }
                match &mut self.doc_lengths[ticket.target] {
                    slot @ None => *slot = Some(s.body_bytes),
                    Some(len) if *len != s.body_bytes => c.length_mismatches += 1,
                    Some(_) => {}
                }
            }
            Outcome::Failed { class, sent, at } => {
                self.widen(sent.map_or(ticket.intended, |s| s.min(ticket.intended)), at);
                self.counts.errors.bump(class);
                self.intervals.error(at);
            }
        }
    }

    fn widen(&mut self, start: Instant, end: Instant) {
        self.first = Some(self.first.map_or(start, |f| f.min(start)));
        self.last = Some(self.last.map_or(end, |l| l.max(end)));
    }

    /// Adds another thread's recorder.
    pub fn merge(&mut self, o: Recorder) {
        self.hist.add(&o.hist);
        self.counts.add(&o.counts);
        if let Some(f) = o.first {
            self.first = Some(self.first.map_or(f, |m| m.min(f)));
        }
        if let Some(l) = o.last {
            self.last = Some(self.last.map_or(l, |m| m.max(l)));
        }
        for (mine, theirs) in self.doc_lengths.iter_mut().zip(o.doc_lengths) {
            if mine.is_none() {
                *mine = theirs;
            }
        }
        if self.server_software.is_none() {
            self.server_software = o.server_software;
        }
        self.intervals.merge(o.intervals);
    }

    /// Measured responses and failures so far.
    pub fn measured(&self) -> u64 {
        self.counts.responses + self.counts.errors.total()
    }

    /// The result, with instants turned into wall-clock time through `clock`.
    pub fn into_result(self, context: ResultContext) -> RunResult {
        let window = match (self.first, self.last) {
            (Some(f), Some(l)) => Window {
                start_unix_us: context.clock.unix_us(f),
                end_unix_us: context.clock.unix_us(l).max(context.clock.unix_us(f)),
            },
            _ => Window::default(),
        };
        RunResult {
            format: FORMAT.to_owned(),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            targets: context.targets,
            plan: context.plan,
            concurrency: context.concurrency,
            keepalive: context.keepalive,
            request_body_bytes: context.request_body_bytes,
            window,
            counts: self.counts,
            server_software: self.server_software,
            tls: None,
            document_length: self.doc_lengths.first().copied().flatten(),
            histograms: self.hist,
            server_cpu: None,
            client_cpu: None,
            runs: 1,
            notes: Vec::new(),
            timeline: self.intervals.summarize(&context.clock),
        }
    }
}

/// What the result needs besides the recorder's figures.
#[derive(Debug, Clone)]
pub struct ResultContext {
    /// Maps instants to wall-clock time.
    pub clock: Clock,
    /// The plan's targets.
    pub targets: Vec<crate::plan::Target>,
    /// The plan in one line.
    pub plan: String,
    /// Requests in flight at most.
    pub concurrency: u64,
    /// Keep-alive was on.
    pub keepalive: bool,
    /// Length of each request's body.
    pub request_body_bytes: u64,
}

/// A pair of readings of the monotonic and the wall clock, taken together.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    instant: Instant,
    unix_us: u64,
}

impl Clock {
    /// Reads both clocks now.
    pub fn now() -> Clock {
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Clock {
            instant: Instant::now(),
            unix_us: u64::try_from(unix.as_micros()).unwrap_or(u64::MAX),
        }
    }

    /// The monotonic reading.
    pub fn instant(&self) -> Instant {
        self.instant
    }

    /// `at` in µs since the Unix epoch.
    pub fn unix_us(&self, at: Instant) -> u64 {
        if at >= self.instant {
            self.unix_us + (at - self.instant).as_micros() as u64
        } else {
            self.unix_us
                .saturating_sub((self.instant - at).as_micros() as u64)
        }
    }
}

fn record_us(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
}

/// Width of a timeline's intervals until a long run coarsens it.
const FIRST_INTERVAL_MS: u64 = 1000;

/// The timeline as recorded: bins of equal width from an origin. The
/// recorder keeps one of requests; a replay keeps another of pages.
#[derive(Debug)]
pub(crate) struct Intervals {
    origin: Instant,
    width_ms: u64,
    /// From the origin to the last bin anything fell in; never more than
    /// [`MAX_INTERVALS`].
    bins: Vec<Bin>,
}

/// One interval's figures.
#[derive(Debug, Default)]
struct Bin {
    responses: u64,
    errors: u64,
    bytes: u64,
    /// Corrected latency, µs, 2 significant digits (about 26 KB; made on
    /// the bin's first response).
    latency: Option<Histogram<u64>>,
}

impl Bin {
    fn add(&mut self, o: Bin) {
        self.responses += o.responses;
        self.errors += o.errors;
        self.bytes += o.bytes;
        match (&mut self.latency, o.latency) {
            // Same bounds on both sides: adding cannot fail.
            (Some(mine), Some(theirs)) => {
                let _ = mine.add(&theirs);
            }
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
    }

    fn point(&self, t_ms: u64) -> TimelinePoint {
        let q = |h: &Histogram<u64>, q: f64| h.highest_equivalent(h.value_at_quantile(q));
        let (p50_us, p90_us, p99_us, max_us) = match &self.latency {
            Some(h) if !h.is_empty() => (
                q(h, 0.5),
                q(h, 0.9),
                q(h, 0.99),
                h.highest_equivalent(h.max()),
            ),
            _ => (0, 0, 0, 0),
        };
        TimelinePoint {
            t_ms,
            responses: self.responses,
            errors: self.errors,
            bytes: self.bytes,
            p50_us,
            p90_us,
            p99_us,
            max_us,
        }
    }
}

impl Intervals {
    /// An empty timeline of 1 s intervals from `origin`.
    pub(crate) fn starting(origin: Instant) -> Intervals {
        Intervals::new(origin, FIRST_INTERVAL_MS)
    }

    fn new(origin: Instant, width_ms: u64) -> Intervals {
        Intervals {
            origin,
            width_ms,
            bins: Vec::new(),
        }
    }

    /// The bin of the instant `us` µs after the origin, coarsening as
    /// needed for it to fit.
    fn bin_at(&mut self, us: u64) -> &mut Bin {
        let mut i = us / (self.width_ms * 1000);
        while i >= MAX_INTERVALS as u64 {
            self.coarsen();
            i = us / (self.width_ms * 1000);
        }
        let i = i as usize;
        if self.bins.len() <= i {
            self.bins.resize_with(i + 1, Bin::default);
        }
        &mut self.bins[i]
    }

    fn since_origin_us(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_micros()).unwrap_or(u64::MAX)
    }

    /// Counts a success that ended at `done` and took `latency`.
    pub(crate) fn response(&mut self, done: Instant, latency: Duration, body_bytes: u64) {
        let bin = self.bin_at(self.since_origin_us(done));
        bin.responses += 1;
        bin.bytes += body_bytes;
        let h = bin.latency.get_or_insert_with(|| {
            Histogram::new_with_bounds(1, MAX_US, 2).expect("constant histogram bounds are valid")
        });
        record_us(h, latency);
    }

    /// Counts a failure at `at`.
    pub(crate) fn error(&mut self, at: Instant) {
        self.bin_at(self.since_origin_us(at)).errors += 1;
    }

    /// Merges adjacent pairs of bins and doubles the width.
    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.bins);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.add(b);
            }
            self.bins.push(a);
        }
        self.width_ms *= 2;
    }

    /// Adds another recorder's bins: exact when both share the origin (as
    /// a run's threads do); otherwise each of its bins lands in the bin
    /// holding its start.
    fn merge(&mut self, mut o: Intervals) {
        while self.width_ms < o.width_ms {
            self.coarsen();
        }
        while o.width_ms < self.width_ms {
            o.coarsen();
        }
        let width_us = o.width_ms * 1000;
        for (i, bin) in o.bins.into_iter().enumerate() {
            if bin.responses == 0 && bin.errors == 0 {
                continue;
            }
            let start = o.origin + Duration::from_micros(i as u64 * width_us);
            let us = self.since_origin_us(start);
            self.bin_at(us).add(bin);
        }
    }

    /// The summarized timeline, its start on the wall clock.
    pub(crate) fn summarize(&self, clock: &Clock) -> Timeline {
        let last = self
            .bins
            .iter()
            .rposition(|b| b.responses > 0 || b.errors > 0);
        let Some(last) = last else {
            return Timeline::default();
        };
        Timeline {
            interval_ms: self.width_ms,
            start_unix_us: clock.unix_us(self.origin),
            points: self.bins[..=last]
                .iter()
                .enumerate()
                .map(|(i, b)| b.point(i as u64 * self.width_ms))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_coarsen_past_the_limit_and_keep_every_count() {
        let origin = Instant::now();
        let mut t = Intervals::new(origin, 1000);
        // One response per second for 1,500 s (25 minutes), 1 ms each, and
        // an error every 100 s.
        for s in 0..1500u64 {
            let at = origin + Duration::from_millis(s * 1000 + 500);
            t.response(at, Duration::from_millis(1), 10);
            if s % 100 == 0 {
                t.error(at);
            }
        }
        // 1500 s at 1 s is too many, at 2 s too (750), at 4 s it fits.
        assert_eq!(t.width_ms, 4000);
        assert_eq!(t.bins.len(), 375);
        assert!(t.bins.len() <= MAX_INTERVALS);
        let tl = t.summarize(&Clock::now());
        assert_eq!(tl.interval_ms, 4000);
        assert_eq!(tl.points.len(), 375);
        assert_eq!(tl.responses(), 1500);
        assert_eq!(tl.errors(), 15);
        assert!(tl.points.iter().all(|p| p.responses == 4 && p.bytes == 40));
        assert_eq!(tl.points[1].t_ms, 4000);
        let p = tl.points[10];
        // 1 ms in 2 significant digits: 1000..=1007 µs.
        assert!((1000..1010).contains(&p.p50_us), "{p:?}");
        assert_eq!((p.p99_us, p.max_us), (p.p50_us, p.p50_us));
    }

    #[test]
    fn exactly_the_limit_fits_without_coarsening() {
        let origin = Instant::now();
        let mut t = Intervals::new(origin, 1000);
        t.error(origin + Duration::from_millis(599_999));
        assert_eq!((t.width_ms, t.bins.len()), (1000, 600));
        t.error(origin + Duration::from_millis(600_000));
        assert_eq!((t.width_ms, t.bins.len()), (2000, 301));
        // Before the origin counts in the first interval.
        t.error(origin.checked_sub(Duration::from_secs(1)).unwrap_or(origin));
        assert_eq!(t.bins[0].errors, 1);
    }

    #[test]
    fn threads_merge_interval_by_interval() {
        let origin = Instant::now();
        let at = |ms: u64| origin + Duration::from_millis(ms);
        let mut a = Intervals::new(origin, 1000);
        let mut b = Intervals::new(origin, 1000);
        a.response(at(100), Duration::from_micros(100), 1);
        a.response(at(1100), Duration::from_micros(100), 1);
        b.response(at(200), Duration::from_micros(5000), 1);
        // b ran long enough to coarsen: a follows it.
        b.error(at(700_000));
        a.merge(b);
        assert_eq!(a.width_ms, 2000);
        assert_eq!(a.bins[0].responses, 3);
        let p = a.bins[0].point(0);
        assert!((4900..5100).contains(&p.max_us), "{p:?}");
        assert!(p.p50_us < 200, "{p:?}");
        assert_eq!(a.bins[350].errors, 1);
    }
}
