//! ab `-e` CSV: for each percentage 0..=100, the time (ms, three decimals)
//! within which that share of the requests was served. Same header, same
//! index rule (`(int)(0.5 + n * i / 100)`; 0 is the fastest, 100 the
//! slowest), so scripts written for ab read it unchanged. Times are the
//! corrected latency, as in the ab report.

use std::fmt::Write as _;

use crate::histogram::Stats;
use crate::result::RunResult;

/// Renders the CSV (just the header when nothing was measured).
pub fn render(r: &RunResult) -> String {
    let stats = Stats::of(&r.histograms.latency);
    let n = stats.count();
    let mut out = String::from("Percentage served,Time in ms\n");
    if n == 0 {
        return out;
    }
    for i in 0..=100u64 {
        let k = match i {
            0 => 0,
            100 => n - 1,
            _ => ((0.5 + n as f64 * i as f64 / 100.0) as u64).min(n - 1),
        };
        let _ = writeln!(out, "{i},{:.3}", stats.nth(k) as f64 / 1000.0);
    }
    out
}
