//! The result of a run: histograms and counts of the measured window, plus
//! what the reports need to describe it. Serialisable (`--json`) and exactly
//! mergeable (`tern bench merge`): histograms add bucket by bucket, counts add.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram::{new_histogram, serde_v2};
use crate::plan::Target;
use crate::sample::ErrorClass;

/// Format tag written into every JSON result.
pub const FORMAT: &str = "tern-bench/1";

/// The figures of one run (or of several merged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Always [`FORMAT`].
    pub format: String,
    /// tern-bench version that measured it.
    pub tool_version: String,
    /// The URLs loaded.
    pub targets: Vec<Target>,
    /// The plan in one line.
    pub plan: String,
    /// Requests in flight at most (ab's "Concurrency Level").
    pub concurrency: u64,
    /// Connections were kept alive.
    pub keepalive: bool,
    /// Length of each request's body (0 without one).
    #[serde(default)]
    pub request_body_bytes: u64,
    /// The measured window: from the first measured request's start to the
    /// last one's end, in µs since the Unix epoch. Both 0 when nothing was
    /// measured.
    pub window: Window,
    /// Counters.
    pub counts: Counts,
    /// `Server` header of the first response.
    pub server_software: Option<String>,
    /// What the first `https://` target negotiated, from the handshake
    /// made before the load (ab's "SSL/TLS Protocol" lines).
    #[serde(default)]
    pub tls: Option<TlsSession>,
    /// Body length of the first response of the first target.
    pub document_length: Option<u64>,
    /// Latency histograms (µs).
    pub histograms: Histograms,
    /// CPU used by the server during the measured window, when asked for.
    pub server_cpu: Option<CpuFigures>,
    /// CPU used by tern-bench itself during the measured window.
    pub client_cpu: Option<CpuFigures>,
    /// Number of runs merged into this one (1 for a plain run).
    pub runs: u32,
    /// Things the reader should know (a CPU source that vanished, an early stop).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The measured window interval by interval (empty in results written
    /// before timelines existed).
    #[serde(default)]
    pub timeline: Timeline,
}

/// Most intervals a timeline holds: a longer run doubles the interval
/// width (merging adjacent pairs) instead, so memory stays bounded.
pub const MAX_INTERVALS: usize = 600;

/// The measured window cut into equal intervals (1 s, or 2^k s after a
/// long run was coarsened), each summarized.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Timeline {
    /// Width of each interval, in ms (0 for an empty timeline).
    pub interval_ms: u64,
    /// When the first interval begins (the measured window's nominal
    /// start), in µs since the Unix epoch.
    #[serde(default)]
    pub start_unix_us: u64,
    /// One point per interval, from the first to the last one with a
    /// response or an error, empty intervals included.
    pub points: Vec<TimelinePoint>,
}

/// One interval of a [`Timeline`]. Requests fall in the interval in which
/// they completed (or failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Start of the interval, in ms from the timeline's start.
    pub t_ms: u64,
    /// Complete responses.
    pub responses: u64,
    /// Failures (all classes).
    pub errors: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Median corrected latency of the interval's responses (µs, 2
    /// significant digits; 0 without responses).
    pub p50_us: u64,
    /// 90th percentile, µs.
    pub p90_us: u64,
    /// 99th percentile, µs.
    pub p99_us: u64,
    /// Largest, µs.
    pub max_us: u64,
}

impl TimelinePoint {
    /// Adds another interval's point: counts add; each percentile becomes
    /// the larger of the two (an upper bound of the true percentile, since
    /// points carry no histograms).
    pub fn absorb(&mut self, o: &TimelinePoint) {
        self.responses += o.responses;
        self.errors += o.errors;
        self.bytes += o.bytes;
        self.p50_us = self.p50_us.max(o.p50_us);
        self.p90_us = self.p90_us.max(o.p90_us);
        self.p99_us = self.p99_us.max(o.p99_us);
        self.max_us = self.max_us.max(o.max_us);
    }
}

impl Timeline {
    /// Responses over all intervals.
    pub fn responses(&self) -> u64 {
        self.points.iter().map(|p| p.responses).sum()
    }

    /// Failures over all intervals.
    pub fn errors(&self) -> u64 {
        self.points.iter().map(|p| p.errors).sum()
    }

    /// True without any interval.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty() || self.interval_ms == 0
    }

    /// Adds another run's timeline (`tern bench merge`): intervals are
    /// aligned on the wall clock (the later start falls in the interval of
    /// the earlier one that holds it), the coarser width wins, and the
    /// result is coarsened again if it would exceed [`MAX_INTERVALS`].
    /// Counts add exactly; each percentile of a merged interval is the
    /// **largest** of its parts' percentiles: an upper bound, not the exact
    /// figure, since points carry no histograms (the run's overall
    /// percentiles, from full histograms, stay exact).
    pub fn merge(&mut self, o: &Timeline) {
        if o.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = o.clone();
            return;
        }
        let start = self.start_unix_us.min(o.start_unix_us);
        let mut width_ms = self.interval_ms.max(o.interval_ms);
        let end_ms = |t: &Timeline| {
            (t.start_unix_us - start) / 1000 + t.points.last().map_or(0, |p| p.t_ms) + t.interval_ms
        };
        let span_ms = end_ms(self).max(end_ms(o));
        while span_ms.div_ceil(width_ms) > MAX_INTERVALS as u64 {
            width_ms *= 2;
        }
        let mut points: Vec<TimelinePoint> = Vec::new();
        for t in [&*self, o] {
            let offset_ms = (t.start_unix_us - start) / 1000;
            for p in &t.points {
                let i = ((offset_ms + p.t_ms) / width_ms) as usize;
                if points.len() <= i {
                    points.resize_with(i + 1, TimelinePoint::default);
                }
                points[i].absorb(p);
            }
        }
        for (i, p) in points.iter_mut().enumerate() {
            p.t_ms = i as u64 * width_ms;
        }
        *self = Timeline {
            interval_ms: width_ms,
            start_unix_us: start,
            points,
        };
    }
}

/// A TLS session's parameters, as a client saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSession {
    /// `TLSv1.2` or `TLSv1.3`.
    pub protocol: String,
    /// The cipher suite's IANA name (`TLS13_AES_128_GCM_SHA256`).
    pub cipher: String,
    /// The key exchange group (`X25519`, `X25519MLKEM768`), if known.
    pub group: Option<String>,
    /// The name sent as SNI, if any.
    pub server_name: Option<String>,
}

/// The measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Window {
    /// Start, µs since the Unix epoch.
    pub start_unix_us: u64,
    /// End, µs since the Unix epoch.
    pub end_unix_us: u64,
}

impl Window {
    /// Length in seconds.
    pub fn seconds(&self) -> f64 {
        self.end_unix_us.saturating_sub(self.start_unix_us) as f64 / 1e6
    }

    /// The smallest window holding both.
    pub fn union(self, other: Window) -> Window {
        match (self.is_empty(), other.is_empty()) {
            (true, _) => other,
            (_, true) => self,
            _ => Window {
                start_unix_us: self.start_unix_us.min(other.start_unix_us),
                end_unix_us: self.end_unix_us.max(other.end_unix_us),
            },
        }
    }

    fn is_empty(&self) -> bool {
        self.start_unix_us == 0 && self.end_unix_us == 0
    }
}

/// Counters of the measured window.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Complete responses, whatever their status.
    pub responses: u64,
    /// Responses by status code.
    pub status: BTreeMap<u16, u64>,
    /// Failures by class.
    pub errors: ErrorCounts,
    /// Bytes received: heads and bodies.
    pub bytes_total: u64,
    /// Bytes received after the heads.
    pub bytes_body: u64,
    /// Responses whose body length differed from the first response of the
    /// same URL (ab counts them as failed "Length").
    pub length_mismatches: u64,
    /// Bytes of requests written.
    pub bytes_sent: u64,
    /// Responses after which the connection stayed open (ab's "Keep-Alive
    /// requests").
    pub kept_alive: u64,
    /// Connections opened (all phases).
    pub connections: u64,
    /// Requests finished in the warm-up and cool-down (not in the figures).
    pub excluded: u64,
    /// TLS handshakes of the connections measured requests opened.
    #[serde(default)]
    pub handshakes: Handshakes,
    /// Measured requests sent more than [`LATE_AFTER`] after they were due
    /// (open loop: every connection was busy). Their wait is in the
    /// corrected latency; many of them mean `-c` is too small for the rate.
    #[serde(default)]
    pub late: u64,
}

/// How late a send must be to count as late: beyond the timer slack.
pub const LATE_AFTER: std::time::Duration = std::time::Duration::from_millis(2);

impl Counts {
    /// Responses with a status outside 200..=299.
    pub fn non_2xx(&self) -> u64 {
        self.status
            .iter()
            .filter(|(code, _)| !(200..300).contains(*code))
            .map(|(_, n)| n)
            .sum()
    }

    /// Responses with a status in `class * 100 .. class * 100 + 99`.
    pub fn status_class(&self, class: u16) -> u64 {
        self.status
            .range(class * 100..class * 100 + 100)
            .map(|(_, n)| n)
            .sum()
    }

    /// Adds another set of counters.
    pub(crate) fn add(&mut self, o: &Counts) {
        self.responses += o.responses;
        for (code, n) in &o.status {
            *self.status.entry(*code).or_default() += n;
        }
        self.errors.add(&o.errors);
        self.bytes_total += o.bytes_total;
        self.bytes_body += o.bytes_body;
        self.length_mismatches += o.length_mismatches;
        self.bytes_sent += o.bytes_sent;
        self.kept_alive += o.kept_alive;
        self.connections += o.connections;
        self.excluded += o.excluded;
        self.late += o.late;
        self.handshakes.full += o.handshakes.full;
        self.handshakes.resumed += o.handshakes.resumed;
    }
}

/// TLS handshakes by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Handshakes {
    /// Full handshakes (with or without a HelloRetryRequest).
    pub full: u64,
    /// Resumed sessions (TLS 1.3 tickets, TLS 1.2 session IDs or tickets).
    pub resumed: u64,
}

impl Handshakes {
    /// All handshakes.
    pub fn total(&self) -> u64 {
        self.full + self.resumed
    }
}

/// Failures by class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// See [`ErrorClass::Connect`].
    pub connect: u64,
    /// See [`ErrorClass::Timeout`].
    pub timeout: u64,
    /// See [`ErrorClass::Reset`].
    pub reset: u64,
    /// See [`ErrorClass::Protocol`].
    pub protocol: u64,
}

impl ErrorCounts {
    /// The counter of one class.
    pub fn get(&self, class: ErrorClass) -> u64 {
        match class {
            ErrorClass::Connect => self.connect,
            ErrorClass::Timeout => self.timeout,
            ErrorClass::Reset => self.reset,
            ErrorClass::Protocol => self.protocol,
        }
    }

    /// Counts one failure.
    pub fn bump(&mut self, class: ErrorClass) {
        match class {
            ErrorClass::Connect => self.connect += 1,
            ErrorClass::Timeout => self.timeout += 1,
            ErrorClass::Reset => self.reset += 1,
            ErrorClass::Protocol => self.protocol += 1,
        }
    }

    /// All failures.
    pub fn total(&self) -> u64 {
        self.connect + self.timeout + self.reset + self.protocol
    }

    fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.timeout += o.timeout;
        self.reset += o.reset;
        self.protocol += o.protocol;
    }
}

/// One histogram per metric, all in µs, over measured responses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// Corrected latency: done − due. This is the one to quote.
    #[serde(with = "serde_v2")]
    pub latency: Histogram<u64>,
    /// Uncorrected latency: done − sent (what a closed-loop tool reports).
    #[serde(with = "serde_v2")]
    pub latency_uncorrected: Histogram<u64>,
    /// Connect time; 0 for a request on a reused connection (as ab).
    #[serde(with = "serde_v2")]
    pub connect: Histogram<u64>,
    /// TLS handshake time; 0 for a request that opened no TLS connection.
    #[serde(with = "serde_v2", default = "new_histogram")]
    pub handshake: Histogram<u64>,
    /// Time to first byte after the request was written (ab's "Waiting").
    #[serde(with = "serde_v2")]
    pub ttfb: Histogram<u64>,
    /// Uncorrected latency minus connect and handshake time (ab's
    /// "Processing").
    #[serde(with = "serde_v2")]
    pub processing: Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Histograms {
        Histograms {
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            connect: new_histogram(),
            handshake: new_histogram(),
            ttfb: new_histogram(),
            processing: new_histogram(),
        }
    }
}

impl Histograms {
    /// Adds every bucket of `o` (exact).
    pub fn add(&mut self, o: &Histograms) {
        // Same bounds everywhere, or auto-resizing after a decode: `add`
        // cannot fail; if it ever did the counts would be visibly short.
        let _ = self.latency.add(&o.latency);
        let _ = self.latency_uncorrected.add(&o.latency_uncorrected);
        let _ = self.connect.add(&o.connect);
        let _ = self.handshake.add(&o.handshake);
        let _ = self.ttfb.add(&o.ttfb);
        let _ = self.processing.add(&o.processing);
    }
}

/// CPU time over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// What was measured ("pid 123 and descendants", "cgroup /sys/fs/...").
    pub source: String,
    /// User plus system seconds.
    pub seconds: f64,
    /// `seconds` per measured response, in µs (0 with no responses).
    pub us_per_request: f64,
    /// `seconds` per TLS handshake of the measured requests, in µs; only
    /// when there were handshakes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub us_per_handshake: Option<f64>,
    /// The responses `seconds` were measured over (those of the runs
    /// that measured CPU, after a merge).
    #[serde(default)]
    pub responses: u64,
    /// Likewise, the TLS handshakes.
    #[serde(default)]
    pub handshakes: u64,
}

impl RunResult {
    /// Responses per second over the measured window (0 for an empty window).
    pub fn requests_per_second(&self) -> f64 {
        let s = self.window.seconds();
        if s > 0.0 {
            self.counts.responses as f64 / s
        } else {
            0.0
        }
    }

    /// Bytes received per second over the measured window.
    pub fn bytes_per_second(&self) -> f64 {
        let s = self.window.seconds();
        if s > 0.0 {
            self.counts.bytes_total as f64 / s
        } else {
            0.0
        }
    }

    /// Adds another run's figures (runs on several machines at once):
    /// histograms bucket by bucket, counters, concurrency, CPU seconds; the
    /// window becomes the span of both. Timelines add interval by interval,
    /// their percentiles as upper bounds (see [`Timeline::merge`]).
    pub fn merge(&mut self, o: &RunResult) {
        self.histograms.add(&o.histograms);
        self.counts.add(&o.counts);
        self.window = self.window.union(o.window);
        self.concurrency += o.concurrency;
        for t in &o.targets {
            if !self.targets.iter().any(|mine| mine.url == t.url) {
                self.targets.push(t.clone());
            }
        }
        if self.server_software.is_none() {
            self.server_software.clone_from(&o.server_software);
        }
        if self.tls.is_none() {
            self.tls.clone_from(&o.tls);
        }
        if self.document_length.is_none() {
            self.document_length = o.document_length;
        }
        self.server_cpu = merge_cpu(self.server_cpu.take(), o.server_cpu.as_ref());
        self.client_cpu = merge_cpu(self.client_cpu.take(), o.client_cpu.as_ref());
        self.timeline.merge(&o.timeline);
        self.runs += o.runs;
        for n in &o.notes {
            if !self.notes.contains(n) {
                self.notes.push(n.clone());
            }
        }
    }
}

/// CPU of two runs together: the seconds of the runs that measured it,
/// over those runs' responses only (a run without CPU figures adds
/// neither).
fn merge_cpu(mine: Option<CpuFigures>, other: Option<&CpuFigures>) -> Option<CpuFigures> {
    match (mine, other) {
        (None, None) => None,
        (Some(a), None) => Some(a),
        (None, Some(b)) => Some(b.clone()),
        (Some(a), Some(b)) => {
            let (ar, ah) = a.covered();
            let (br, bh) = b.covered();
            let source = if a.source == b.source {
                a.source
            } else {
                format!("{} + {}", a.source, b.source)
            };
            Some(CpuFigures::new(
                source,
                a.seconds + b.seconds,
                ar + br,
                ah + bh,
            ))
        }
    }
}

impl CpuFigures {
    /// `seconds` of `source`, shared over `responses` and `handshakes`.
    pub fn new(source: String, seconds: f64, responses: u64, handshakes: u64) -> CpuFigures {
        CpuFigures {
            source,
            seconds,
            us_per_request: per_request_us(seconds, responses),
            us_per_handshake: (handshakes > 0).then(|| per_request_us(seconds, handshakes)),
            responses,
            handshakes,
        }
    }

    /// The responses and handshakes the seconds were measured over (for a
    /// result written before they were kept: worked back from the
    /// figures per request and per handshake).
    fn covered(&self) -> (u64, u64) {
        if self.responses > 0 || self.handshakes > 0 {
            return (self.responses, self.handshakes);
        }
        let back = |us: f64| {
            if us > 0.0 {
                (self.seconds * 1e6 / us).round() as u64
            } else {
                0
            }
        };
        (
            back(self.us_per_request),
            self.us_per_handshake.map_or(0, back),
        )
    }
}

/// CPU seconds per response, in µs.
pub(crate) fn per_request_us(seconds: f64, responses: u64) -> f64 {
    if responses == 0 {
        0.0
    } else {
        seconds * 1e6 / responses as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(t_ms: u64, responses: u64, p99_us: u64) -> TimelinePoint {
        TimelinePoint {
            t_ms,
            responses,
            errors: 1,
            bytes: responses * 10,
            p50_us: p99_us / 2,
            p90_us: p99_us - 1,
            p99_us,
            max_us: p99_us + 1,
        }
    }

    #[test]
    fn cpu_merges_over_the_responses_it_was_measured_over() {
        let a = CpuFigures::new("pid 1".into(), 0.01, 100, 0);
        assert_eq!(a.us_per_request, 100.0);
        // A run without CPU figures adds nothing to share it over.
        let alone = merge_cpu(Some(a.clone()), None).unwrap();
        assert_eq!(alone.us_per_request, 100.0);
        let b = CpuFigures::new("pid 1".into(), 0.03, 100, 10);
        let both = merge_cpu(Some(a.clone()), Some(&b)).unwrap();
        assert_eq!((both.responses, both.handshakes), (200, 10));
        assert!((both.us_per_request - 200.0).abs() < 1e-9);
        assert_eq!(both.source, "pid 1");
        // A result written before the counts were kept.
        let old: CpuFigures =
            serde_json::from_str(r#"{"source":"pid 2","seconds":0.02,"us_per_request":200.0}"#)
                .unwrap();
        let merged = merge_cpu(Some(old), Some(&a)).unwrap();
        assert_eq!(merged.responses, 200);
        assert!((merged.us_per_request - 150.0).abs() < 1e-9);
        assert_eq!(merged.source, "pid 2 + pid 1");
    }

    #[test]
    fn timelines_merge_on_the_wall_clock_with_percentiles_as_upper_bounds() {
        let mut a = Timeline {
            interval_ms: 1000,
            start_unix_us: 10_000_000,
            points: vec![point(0, 5, 100), point(1000, 6, 900), point(2000, 7, 50)],
        };
        // Starts 1 s later: its first interval is a's second.
        let b = Timeline {
            interval_ms: 1000,
            start_unix_us: 11_000_000,
            points: vec![point(0, 1, 500), point(1000, 2, 500), point(2000, 3, 500)],
        };
        a.merge(&b);
        assert_eq!(a.interval_ms, 1000);
        assert_eq!(a.start_unix_us, 10_000_000);
        let r: Vec<u64> = a.points.iter().map(|p| p.responses).collect();
        assert_eq!(r, [5, 7, 9, 3]);
        let p99: Vec<u64> = a.points.iter().map(|p| p.p99_us).collect();
        assert_eq!(p99, [100, 900, 500, 500]);
        assert_eq!(a.points[3].t_ms, 3000);
        assert_eq!(a.errors(), 6);
        // The coarser width wins; an empty timeline (an old file) is nothing.
        let coarse = Timeline {
            interval_ms: 2000,
            start_unix_us: 10_000_000,
            points: vec![point(0, 100, 1)],
        };
        a.merge(&coarse);
        a.merge(&Timeline::default());
        assert_eq!(a.interval_ms, 2000);
        let r: Vec<u64> = a.points.iter().map(|p| p.responses).collect();
        assert_eq!(r, [112, 12]);
        assert_eq!(a.responses(), 124);
    }

    #[test]
    fn merged_timelines_stay_within_the_limit() {
        let mut a = Timeline {
            interval_ms: 1000,
            start_unix_us: 0,
            points: vec![point(0, 1, 1)],
        };
        // A run 20 minutes later: the span needs 2 s intervals... and more.
        let b = Timeline {
            interval_ms: 1000,
            start_unix_us: 1_200_000_000,
            points: vec![point(0, 1, 1)],
        };
        a.merge(&b);
        assert!(a.points.len() <= MAX_INTERVALS, "{}", a.points.len());
        assert_eq!(a.interval_ms, 4000);
        assert_eq!(a.responses(), 2);
        assert_eq!(a.points.last().unwrap().t_ms, 1_200_000);
    }
}
