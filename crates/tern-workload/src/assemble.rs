//! What the extractor found, put together as a [`Model`]: page classes
//! numbered by frequency, files described by their most common size and
//! status, session classes and the transitions they imply, think times,
//! session lengths and arrival rates.

use std::collections::{BTreeMap, HashMap};

use crate::extract::{hour_of_day, rfc3339, Extracted, FileStat, SECOND};
use crate::model::{
    Arrivals, FileRef, Model, PageClass, Quantiles, Rules, SessionClass, Source, Summary, END,
    START,
};
use crate::reduce;
use crate::target::path_of;

/// Points of the think-time and session-length distributions.
const QUANTILE_POINTS: usize = 21;

/// Extensions of programs rather than files.
const SCRIPT_EXTENSIONS: [&str; 8] = ["cgi", "pl", "php", "py", "asp", "aspx", "jsp", "fcgi"];

/// Where the requests came from, for [`Model::source`].
#[derive(Debug)]
pub(crate) struct Origin {
    pub(crate) files: Vec<String>,
    pub(crate) format: String,
    pub(crate) lines: u64,
    pub(crate) malformed: u64,
}

/// Whether a logged request was produced by a program: a query, a method
/// other than GET and HEAD, a path under `/cgi-bin/`, or a script's
/// extension.
pub fn is_dynamic(method: &str, target: &str) -> bool {
    if target.contains('?') || !(method == "GET" || method == "HEAD") {
        return true;
    }
    let path = path_of(target);
    if path.starts_with("/cgi-bin/") {
        return true;
    }
    let last = path.rsplit('/').next().unwrap_or_default();
    last.rsplit_once('.').is_some_and(|(_, ext)| {
        SCRIPT_EXTENSIONS
            .iter()
            .any(|s| s.eq_ignore_ascii_case(ext))
    })
}

fn file_ref(f: &FileStat) -> FileRef {
    FileRef {
        path: f.target.clone(),
        method: f.method.clone(),
        bytes: f.bytes(),
        status: f.status(),
        dynamic: is_dynamic(&f.method, &f.target),
    }
}

/// Rounds to `unit` (quantiles to the millisecond, probabilities to 1e-6),
/// so that the TOML reads as people write numbers.
fn round(v: f64, unit: f64) -> f64 {
    (v / unit).round() * unit
}

/// Counts as probabilities rounded to 1e-6, the rounding's remainder put
/// on the largest (the first of the largest, in key order), so that they
/// sum to 1 within 1e-9 however many there are.
fn probabilities(counts: BTreeMap<String, u64>) -> BTreeMap<String, f64> {
    let total = counts
        .values()
        .fold(0u64, |t, n| t.saturating_add(*n))
        .max(1) as f64;
    let mut out: BTreeMap<String, f64> = counts
        .iter()
        .map(|(k, &n)| (k.clone(), round(n as f64 / total, 1e-6)))
        .collect();
    let largest = counts
        .iter()
        .max_by_key(|&(k, n)| (*n, std::cmp::Reverse(k)))
        .map(|(k, _)| k.clone());
    if let Some(k) = largest {
        let rest: f64 = out.iter().filter(|(o, _)| **o != k).map(|(_, p)| p).sum();
        out.insert(k, (1.0 - rest).clamp(0.0, 1.0));
    }
    out
}

fn quantiles(values: Vec<f64>) -> Quantiles {
    let mut values = values;
    let mut q = Quantiles::of(&mut values, QUANTILE_POINTS);
    for p in &mut q.points {
        *p = round(*p, 1e-3);
    }
    q
}

/// The model of `x`, cut with `rules`, reduced unless `reduce` is false.
pub(crate) fn model(x: Extracted, origin: Origin, rules: Rules, reduce: bool) -> Model {
    let classes = reduce::classes(&x.pages, &x.files, reduce);
    let id = |class: usize| format!("p{}", class + 1);
    let pages: Vec<PageClass> = classes
        .classes
        .iter()
        .enumerate()
        .map(|(i, c)| PageClass {
            id: id(i),
            count: c.count,
            files: c
                .files
                .iter()
                .map(|&f| file_ref(&x.files[f as usize]))
                .collect(),
        })
        .collect();

    let mut by_classes: HashMap<Vec<usize>, u64> = HashMap::new();
    for (seq, n) in &x.sessions {
        let mapped = seq.iter().map(|&p| classes.of_page[p as usize]).collect();
        *by_classes.entry(mapped).or_insert(0) += n;
    }
    let mut session_list: Vec<(Vec<usize>, u64)> = by_classes.into_iter().collect();
    session_list.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));

    let mut counts: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (seq, n) in &session_list {
        let states = std::iter::once(START.to_owned())
            .chain(seq.iter().map(|&c| id(c)))
            .chain(std::iter::once(END.to_owned()));
        let states: Vec<String> = states.collect();
        for w in states.windows(2) {
            *counts
                .entry(w[0].clone())
                .or_default()
                .entry(w[1].clone())
                .or_insert(0) += n;
        }
    }
    let transitions = counts
        .into_iter()
        .map(|(from, to)| (from, probabilities(to)))
        .collect();

    let sessions = session_list
        .into_iter()
        .map(|(seq, count)| SessionClass {
            pages: seq.into_iter().map(id).collect(),
            count,
        })
        .collect();

    // The log's span, at least a second, and how much of it falls in each
    // hour of the day.
    let (first, last) = (x.first, x.last.max(x.first.saturating_add(SECOND)));
    let span = (last - first) as f64 / SECOND as f64;
    let mut seconds_in_hour = [0.0f64; 24];
    let mut t = first;
    while t < last {
        let hour_end = (t.div_euclid(3600 * SECOND) + 1) * 3600 * SECOND;
        let until = hour_end.min(last);
        seconds_in_hour[hour_of_day(t)] += (until - t) as f64 / SECOND as f64;
        t = until;
    }
    let by_hour = (0..24)
        .map(|h| {
            if seconds_in_hour[h] > 0.0 {
                x.started_by_hour[h] as f64 / seconds_in_hour[h]
            } else {
                0.0
            }
        })
        .collect();

    Model {
        source: Source {
            files: origin.files,
            format: origin.format,
            lines: origin.lines,
            malformed: origin.malformed,
            first: rfc3339(x.first),
            last: rfc3339(x.last),
        },
        rules,
        summary: Summary {
            users: x.users,
            sessions: x.session_count,
            pages: x.page_count,
            requests: x.requests,
            page_classes_before: x.pages.len() as u64,
            reductions: classes.reductions,
        },
        pages,
        sessions,
        transitions,
        think_time: quantiles(x.think.into_values()),
        session_pages: quantiles(x.session_pages.into_values()),
        arrivals: Arrivals {
            rate: x.session_count as f64 / span.max(1.0),
            by_hour,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounded_probabilities_still_sum_to_one() {
        // 3,000 next pages, each taken once: each rounds to 0.000333, and
        // the rounding alone would lose a thousandth of the mass.
        let counts: BTreeMap<String, u64> = (0..3000).map(|i| (format!("p{i}"), 1)).collect();
        let p = probabilities(counts);
        let sum: f64 = p.values().sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        assert!(p.values().all(|v| (0.0..=1.0).contains(v)));
        // 1,999,999 of 2,000,000 to one page: the other keeps its 1e-6.
        let counts = BTreeMap::from([("a".to_owned(), 1_999_999), ("b".to_owned(), 1)]);
        let p = probabilities(counts);
        assert!((p.values().sum::<f64>() - 1.0).abs() < 1e-9);
        assert!(p["b"] > 0.0);
    }

    #[test]
    fn dynamic_files_are_told_from_static_ones() {
        assert!(!is_dynamic("GET", "/index.html"));
        assert!(!is_dynamic("HEAD", "/img/logo.png"));
        assert!(is_dynamic("GET", "/search?q=x"));
        assert!(is_dynamic("POST", "/form.html"));
        assert!(is_dynamic("GET", "/cgi-bin/counter"));
        assert!(is_dynamic("GET", "/app/index.PHP"));
        assert!(is_dynamic("GET", "/x.jsp"));
        assert!(!is_dynamic("GET", "/php/readme.txt"));
    }
}
