//! The default report: what was run, throughput, status and error classes,
//! server and client CPU, a latency table (corrected beside uncorrected), and
//! the percentile spectrum of the corrected latency.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::ms;
use crate::histogram::Stats;
use crate::result::{Counts, RunResult};
use crate::sample::ErrorClass;

/// Bytes per "MB" in the reports: 2^20, i.e. ab's Kbytes/sec divided by 1024,
/// as in the WASD tables.
pub const MB: f64 = 1_048_576.0;

/// The `status` line (responses by class) and the `errors` line (by
/// class), as every text report prints them.
pub(crate) fn status_and_errors(o: &mut String, c: &Counts) {
    let classes: Vec<String> = (1..=5)
        .filter_map(|k| match c.status_class(k) {
            0 => None,
            n => Some(format!("{k}xx {n}")),
        })
        .collect();
    if !classes.is_empty() {
        let _ = writeln!(o, "  status       {}", classes.join(", "));
    }
    if c.errors.total() == 0 {
        let _ = writeln!(o, "  errors       none");
    } else {
        let parts: Vec<String> = ErrorClass::ALL
            .iter()
            .map(|&k| format!("{k} {}", c.errors.get(k)))
            .collect();
        let _ = writeln!(
            o,
            "  errors       {} ({})",
            c.errors.total(),
            parts.join(", ")
        );
    }
}

/// Renders the report.
pub fn render(r: &RunResult) -> String {
    let mut o = String::new();
    let urls: Vec<&str> = r.targets.iter().map(|t| t.url.as_str()).collect();
    let _ = writeln!(o, "tern bench {}", urls.join(" "));
    let _ = writeln!(o, "  {}", r.plan);
    if r.runs > 1 {
        let _ = writeln!(o, "  {} runs merged", r.runs);
    }
    o.push('\n');
    let c = &r.counts;
    let _ = writeln!(
        o,
        "  {} responses in {:.3} s: {:.2} req/s, {:.2} MB/s",
        c.responses,
        r.window.seconds(),
        r.requests_per_second(),
        r.bytes_per_second() / MB
    );
    status_and_errors(&mut o, c);
    if c.length_mismatches > 0 {
        let _ = writeln!(
            o,
            "  length       {} bodies differ from the first response's length",
            c.length_mismatches
        );
    }
    let _ = writeln!(
        o,
        "  transfer     {} bytes received ({} in bodies), {} connections opened",
        c.bytes_total, c.bytes_body, c.connections
    );
    let tls = r.targets.iter().any(|t| t.tls);
    if tls {
        let hs = c.handshakes;
        let secs = r.window.seconds();
        let rate = if secs > 0.0 {
            hs.total() as f64 / secs
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "  TLS          {} handshakes: {} full, {} resumed ({rate:.2}/s)",
            hs.total(),
            hs.full,
            hs.resumed
        );
    }
    if let Some(cpu) = &r.server_cpu {
        let per_handshake = cpu
            .us_per_handshake
            .map(|us| format!(", {us:.1} µs per handshake"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  server CPU   {:.3} s user+system, {:.1} µs per request{per_handshake} ({})",
            cpu.seconds, cpu.us_per_request, cpu.source
        );
    }
    if let Some(cpu) = &r.client_cpu {
        let _ = writeln!(
            o,
            "  client CPU   {:.3} s user+system, {:.1} µs per request (tern bench)",
            cpu.seconds, cpu.us_per_request
        );
    }
    if c.late > 0 {
        let _ = writeln!(
            o,
            "  late         {} requests were sent over 2 ms after they were due: all connections were busy (raise -c?)",
            c.late
        );
    }
    if c.excluded > 0 {
        let _ = writeln!(
            o,
            "  excluded     {} requests in warm-up and cool-down",
            c.excluded
        );
    }

    let h = &r.histograms;
    if c.responses > 0 {
        o.push('\n');
        let _ = writeln!(
            o,
            "  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}",
            "latency (ms)", "min", "p50", "p90", "p99", "p99.9", "max", "mean"
        );
        let rows: [(&str, &Histogram<u64>); 5] = [
            ("corrected", &h.latency),
            ("uncorrected", &h.latency_uncorrected),
            ("connect", &h.connect),
            ("handshake", &h.handshake),
            ("first byte", &h.ttfb),
        ];
        for (name, hist) in rows.into_iter().filter(|(n, _)| tls || *n != "handshake") {
            let s = Stats::of(hist);
            let _ = writeln!(
                o,
                "  {:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9.3}",
                name,
                ms(s.min()),
                ms(s.percentile(50.0)),
                ms(s.percentile(90.0)),
                ms(s.percentile(99.0)),
                ms(s.percentile(99.9)),
                ms(s.max()),
                s.mean() / 1000.0
            );
        }
        o.push_str(
            "  corrected: from when each request was due; uncorrected: from when it was sent.\n",
        );
        o.push('\n');
        o.push_str(&spectrum(&h.latency));
    }
    for note in &r.notes {
        let _ = writeln!(o, "  note: {note}");
    }
    o
}

/// The percentile spectrum, halving the distance to 100 % each step (as
/// HdrHistogram's `.hgrm` output with one tick per half-distance).
pub fn spectrum(hist: &Histogram<u64>) -> String {
    let mut o = String::new();
    let n = hist.len();
    if n == 0 {
        return o;
    }
    let _ = writeln!(o, "  percentile spectrum, corrected latency");
    let _ = writeln!(
        o,
        "  {:>12}  {:>12}  {:>10}  {:>12}",
        "value (ms)", "percentile", "count", "1/(1-p)"
    );
    let mut remaining = 1.0f64;
    loop {
        let q = 1.0 - remaining;
        let v = hist.value_at_quantile(q);
        let below = hist.count_between(0, v);
        let inverse = if remaining > 0.0 {
            format!("{:.2}", 1.0 / remaining)
        } else {
            "inf".into()
        };
        let _ = writeln!(
            o,
            "  {:>12}  {:>12.6}  {:>10}  {:>12}",
            ms(v),
            q * 100.0,
            below,
            inverse
        );
        if below >= n || remaining * (n as f64) < 1.0 {
            break;
        }
        remaining /= 2.0;
    }
    let max = hist.max();
    let _ = writeln!(
        o,
        "  {:>12}  {:>12.6}  {:>10}  {:>12}",
        ms(hist.highest_equivalent(max)),
        100.0,
        n,
        "inf"
    );
    o
}
