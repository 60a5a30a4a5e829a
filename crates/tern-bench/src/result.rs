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
    /// window becomes the span of both.
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
        let (responses, handshakes) = (self.counts.responses, self.counts.handshakes.total());
        self.server_cpu = merge_cpu(
            self.server_cpu.take(),
            o.server_cpu.as_ref(),
            responses,
            handshakes,
        );
        self.client_cpu = merge_cpu(
            self.client_cpu.take(),
            o.client_cpu.as_ref(),
            responses,
            handshakes,
        );
        self.runs += o.runs;
        for n in &o.notes {
            if !self.notes.contains(n) {
                self.notes.push(n.clone());
            }
        }
    }
}

fn merge_cpu(
    mine: Option<CpuFigures>,
    other: Option<&CpuFigures>,
    responses: u64,
    handshakes: u64,
) -> Option<CpuFigures> {
    let merged = match (mine, other) {
        (None, None) => return None,
        (Some(a), None) => a,
        (None, Some(b)) => b.clone(),
        (Some(a), Some(b)) => CpuFigures {
            source: if a.source == b.source {
                a.source
            } else {
                format!("{} + {}", a.source, b.source)
            },
            seconds: a.seconds + b.seconds,
            us_per_request: 0.0,
            us_per_handshake: None,
        },
    };
    Some(CpuFigures::new(
        merged.source,
        merged.seconds,
        responses,
        handshakes,
    ))
}

impl CpuFigures {
    /// `seconds` of `source`, shared over `responses` and `handshakes`.
    pub fn new(source: String, seconds: f64, responses: u64, handshakes: u64) -> CpuFigures {
        CpuFigures {
            source,
            seconds,
            us_per_request: per_request_us(seconds, responses),
            us_per_handshake: (handshakes > 0).then(|| per_request_us(seconds, handshakes)),
        }
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
