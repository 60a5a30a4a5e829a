//! The summary `tern bench model` prints: what the logs held, what each
//! reduction heuristic did (the report's table), the most frequent page
//! classes, think times and the session arrival rate.

use std::fmt::Write as _;

use crate::model::Model;
use crate::read::{Extraction, Malformed};

/// Page classes listed.
const TOP_CLASSES: usize = 10;

/// The summary of `model`, naming the `malformed` lines given (the first
/// few of an [`Extraction`]).
pub fn render(model: &Model, malformed: &[Malformed]) -> String {
    let mut out = String::new();
    let s = &model.source;
    let m = &model.summary;
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "logs: {} file{} ({}), {} lines, {} malformed, {} to {}",
        s.files.len(),
        if s.files.len() == 1 { "" } else { "s" },
        s.format,
        s.lines,
        s.malformed,
        s.first,
        s.last
    );
    for bad in malformed {
        let _ = writeln!(out, "  {}", printable(&bad.to_string()));
    }
    if s.malformed > malformed.len() as u64 && !malformed.is_empty() {
        let _ = writeln!(
            out,
            "  ... and {} more",
            s.malformed - malformed.len() as u64
        );
    }
    let _ = writeln!(
        out,
        "users {}, sessions {}, pages {}, requests {}",
        m.users, m.sessions, m.pages, m.requests
    );
    let _ = writeln!(
        out,
        "page classes: {} distinct pages, {} classes after reduction",
        m.page_classes_before,
        model.pages.len()
    );
    if m.reductions.is_empty() {
        let _ = writeln!(out, "no reduction heuristics applied");
    } else {
        let width = m
            .reductions
            .iter()
            .map(|r| r.heuristic.len())
            .max()
            .unwrap_or(0)
            .max("heuristic".len());
        let _ = writeln!(
            out,
            "\n{:<width$} | {:>8} | {:>8} | {:>6}",
            "heuristic", "before", "after", "factor"
        );
        let _ = writeln!(out, "{}", "-".repeat(width + 33));
        for r in &m.reductions {
            let _ = writeln!(
                out,
                "{:<width$} | {:>8} | {:>8} | {:>6.2}",
                r.heuristic, r.before, r.after, r.factor
            );
        }
    }
    let _ = writeln!(
        out,
        "\n{:<6} {:>8} {:>6} {:>12}  front",
        "class", "count", "files", "bytes"
    );
    for p in model.pages.iter().take(TOP_CLASSES) {
        let bytes = p.files.iter().fold(0u64, |t, f| t.saturating_add(f.bytes));
        let front = printable(p.files.first().map_or("", |f| f.path.as_str()));
        let _ = writeln!(
            out,
            "{:<6} {:>8} {:>6} {:>12}  {front}",
            p.id,
            p.count,
            p.files.len(),
            bytes
        );
    }
    if model.pages.len() > TOP_CLASSES {
        let _ = writeln!(out, "... {} more classes", model.pages.len() - TOP_CLASSES);
    }
    let _ = writeln!(
        out,
        "\nthink time: median {:.1} s, p90 {:.1} s; pages per session: median {:.1}, max {:.0}",
        model.think_time.median(),
        model.think_time.sample(0.9),
        model.session_pages.median(),
        model.session_pages.sample(1.0)
    );
    let _ = writeln!(
        out,
        "session arrivals: {:.4}/s ({:.1}/h)",
        model.arrivals.rate,
        model.arrivals.rate * 3600.0
    );
    out
}

/// The summary of an extraction: [`render`]'s, with what the reading had
/// to skip or cut (lines out of range, pages and sessions closed early)
/// and its notes.
pub fn render_extraction(x: &Extraction) -> String {
    let mut out = render(&x.model, &x.malformed);
    let mut notes = Vec::new();
    if x.out_of_range > 0 {
        notes.push(format!(
            "{} out of range: lines more than 24 h from the time their file had reached, skipped",
            x.out_of_range
        ));
    }
    if x.forced_page_closes > 0 || x.forced_session_closes > 0 {
        notes.push(format!(
            "forced closes: {} pages (at 1,000 files or 15 min), {} sessions (at 1,000 pages or 24 h)",
            x.forced_page_closes, x.forced_session_closes
        ));
    }
    notes.extend(x.notes.iter().cloned());
    if !notes.is_empty() {
        out.push_str("\nnotes:\n");
        for n in notes {
            let _ = writeln!(out, "  {}", printable(&n));
        }
    }
    out
}

/// `s` with control characters escaped (log text goes to a terminal).
pub(crate) fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
