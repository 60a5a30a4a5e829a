//! A replay's report: sessions, then page latency per page class (the
//! headline, as WebStone-SS put it), then the requests as `tern bench`
//! counts them.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::{ClassFigures, ReplayResult};
use crate::histogram::Stats;
use crate::report::ms;

/// Renders the human report.
pub fn render(r: &ReplayResult) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "tern bench --model {} {}", r.model, r.base);
    let _ = writeln!(o, "  {}", r.plan);
    for note in &r.requests.notes {
        let _ = writeln!(o, "  note: {note}");
    }
    o.push('\n');
    let s = &r.sessions;
    let _ = writeln!(
        o,
        "  sessions     {} started, {} completed, {} cut short by the end of the run",
        s.started, s.completed, s.cut
    );
    if s.abandoned > 0 {
        let _ = writeln!(
            o,
            "  abandoned    {} sessions were mid-page when the run's grace ran out",
            s.abandoned
        );
    }
    if s.dropped > 0 {
        let _ = writeln!(
            o,
            "  dropped      {} sessions not started: {} were under way (the server fell far behind)",
            s.dropped,
            super::MAX_SESSIONS_IN_FLIGHT
        );
    }
    let _ = writeln!(
        o,
        "  pages        {} fetched whole, {} with errors (latency counts every page, a failed one when it failed)",
        r.pages.pages, r.pages.errors
    );
    let c = &r.requests.counts;
    let _ = writeln!(
        o,
        "  requests     {} responses in {:.3} s: {:.2} req/s, {} connections opened",
        c.responses,
        r.requests.window.seconds(),
        r.requests.requests_per_second(),
        c.connections
    );
    crate::report::human::status_and_errors(&mut o, c);
    if let Some(cpu) = &r.requests.server_cpu {
        let _ = writeln!(
            o,
            "  server CPU   {:.3} s user+system, {:.1} µs per request ({})",
            cpu.seconds, cpu.us_per_request, cpu.source
        );
    }

    o.push('\n');
    let _ = writeln!(
        o,
        "  page latency (ms), from each page's intended start to its last byte"
    );
    let _ = writeln!(
        o,
        "  {:<6}{:<28}{:>6}{:>8}{:>7}{:>9}{:>9}{:>9}{:>9}",
        "class", "front", "files", "pages", "errors", "p50", "p90", "p99", "max"
    );
    for class in std::iter::once(&r.pages).chain(&r.classes) {
        row(&mut o, class);
    }
    if r.pages.pages > 0 {
        let uncorrected = Stats::of(&r.pages.latency_uncorrected);
        let _ = writeln!(
            o,
            "  (uncorrected, from when the tool started each page: p50 {}, p99 {})",
            ms(uncorrected.percentile(50.0)),
            ms(uncorrected.percentile(99.0))
        );
    }

    if c.responses > 0 {
        o.push('\n');
        let _ = writeln!(
            o,
            "  {:<22}{:>9}{:>9}{:>9}{:>9}",
            "request latency (ms)", "p50", "p90", "p99", "max"
        );
        let h = &r.requests.histograms;
        let rows: [(&str, &Histogram<u64>); 3] = [
            ("corrected", &h.latency),
            ("uncorrected", &h.latency_uncorrected),
            ("first byte", &h.ttfb),
        ];
        for (name, hist) in rows {
            let s = Stats::of(hist);
            let _ = writeln!(
                o,
                "  {name:<22}{:>9}{:>9}{:>9}{:>9}",
                ms(s.percentile(50.0)),
                ms(s.percentile(90.0)),
                ms(s.percentile(99.0)),
                ms(s.max())
            );
        }
    }
    o
}

fn row(o: &mut String, c: &ClassFigures) {
    let front = shorten(&c.front, 27);
    let files = if c.files == 0 {
        String::new()
    } else {
        c.files.to_string()
    };
    if c.pages == 0 {
        let _ = writeln!(
            o,
            "  {:<6}{:<28}{:>6}{:>8}{:>7}",
            c.id, front, files, c.pages, c.errors
        );
        return;
    }
    let s = Stats::of(&c.latency);
    let _ = writeln!(
        o,
        "  {:<6}{:<28}{:>6}{:>8}{:>7}{:>9}{:>9}{:>9}{:>9}",
        c.id,
        front,
        files,
        c.pages,
        c.errors,
        ms(s.percentile(50.0)),
        ms(s.percentile(90.0)),
        ms(s.percentile(99.0)),
        ms(s.max())
    );
}

/// `s` cut to at most `n` characters, with an ellipsis when cut.
fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(n - 1).collect();
    out.push('…');
    out
}
