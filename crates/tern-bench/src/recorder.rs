//! The recorder: turns each outcome into histogram entries and counts, then
//! forgets it (memory stays flat however long the run). One per thread;
//! merged exactly at the end.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::result::{Counts, Histograms, RunResult, Window, FORMAT, LATE_AFTER};
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
}

impl Recorder {
    /// An empty recorder for a plan with `targets` URLs.
    pub fn new(targets: usize) -> Recorder {
        Recorder {
            hist: Histograms::default(),
            counts: Counts::default(),
            first: None,
            last: None,
            doc_lengths: vec![None; targets],
            server_software: None,
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

fn record_us(h: &mut hdrhistogram::Histogram<u64>, d: Duration) {
    h.saturating_record(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
}
