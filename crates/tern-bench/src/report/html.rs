//! The HTML report (`--html FILE`): one self-contained file, to open in a
//! browser, attach to a ticket or print. Inline CSS and inline SVG only: no
//! script, no font, no external asset, so it works offline and under any
//! Content-Security-Policy.
//!
//! What it holds, for one run or several overlaid (one colour per run):
//!
//! - what was run (plans, URLs, date, tool version) and two tables: rates,
//!   errors by class, status classes and CPU; the latency percentiles,
//!   corrected and uncorrected;
//! - **latency over time**: p50 and p99 of the corrected latency per
//!   interval of the run's timeline, and the maximum drawn lightly;
//! - the **percentile spectrum** of the corrected latency, from the full
//!   histograms, on HdrHistogram's 1/(1−p) axis (0, 90, 99, 99.9 %, ...);
//! - **throughput and errors over time**: responses per second per
//!   interval, and failures per second in red.
//!
//! `tern bench compare` puts each server's rounds end to end on the time
//! axis (its measured time; dashed lines mark where a round begins), one
//! line per server, and draws each server's spectrum from all its rounds'
//! histograms added. A replay's report begins with the page latency per
//! page class and its spectrum, then shows its requests as a run.
//!
//! Every text from the input (URLs, paths, plans, names) goes through
//! [`escape`].

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::compare::Comparison;
use crate::histogram::Stats;
use crate::replay::{ClassFigures, ReplayResult};
use crate::result::{RunResult, Timeline, TimelinePoint};
use crate::sample::ErrorClass;

/// Points per line at most: longer series are thinned by merging
/// neighbours (counts add, latencies keep the largest).
const MAX_POINTS: usize = 600;

/// One colour per run (Okabe–Ito, without its red: red is for errors).
const COLORS: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#8c564b", "#555555", "#b8a200",
];

/// The colour of failures.
const ERROR_COLOR: &str = "#d62728";

/// `s` with `&`, `<`, `>`, `"` and `'` replaced by entities: safe in text
/// and in quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// The report of one or more runs, overlaid; `extra` is an HTML section
/// (already escaped) put after the summary tables.
pub fn render_runs(title: &str, runs: &[(&str, &RunResult)], extra: Option<&str>) -> String {
    let lines: Vec<Line<'_>> = runs
        .iter()
        .enumerate()
        .map(|(i, (name, r))| Line::new(name, i, vec![*r]))
        .collect();
    let mut o = String::new();
    begin(&mut o, title);
    header(&mut o, &lines);
    summary(&mut o, &lines, false);
    if let Some(extra) = extra {
        o.push_str(extra);
    }
    charts(&mut o, &lines, "");
    notes(&mut o, &lines);
    end(&mut o, &lines);
    o
}

/// The report of `tern bench compare`: every run, one line per server
/// (its rounds end to end), and the comparison's medians.
pub fn render_comparison(c: &Comparison) -> String {
    let lines: Vec<Line<'_>> = c
        .names
        .iter()
        .enumerate()
        .map(|(i, name)| Line::new(name, i, c.rounds.iter().filter_map(|r| r.get(i)).collect()))
        .collect();
    let mut o = String::new();
    begin(
        &mut o,
        &format!("tern bench compare: {}", c.names.join(", ")),
    );
    header(&mut o, &lines);
    comparison_table(&mut o, c);
    summary(&mut o, &lines, true);
    charts(&mut o, &lines, "");
    notes(&mut o, &lines);
    end(&mut o, &lines);
    o
}

/// The report of a session replay: sessions and page latency per page
/// class first, then the requests.
pub fn render_replay(r: &ReplayResult) -> String {
    let lines = vec![Line::new("requests", 0, vec![&r.requests])];
    let mut o = String::new();
    begin(
        &mut o,
        &format!("tern bench --model {} {}", r.model, r.base),
    );
    let _ = write!(
        o,
        "<header><h1>Session replay of {}</h1>\n<p class=\"meta\">against <code>{}</code> · {} · tern bench {}</p>\n<p><code>{}</code></p>\n</header>\n",
        escape(&r.model),
        escape(&r.base),
        escape(&date(&r.requests)),
        escape(&r.requests.tool_version),
        escape(&r.plan)
    );
    let s = &r.sessions;
    let _ = write!(
        o,
        "<section><h2>Pages</h2>\n<p>{} sessions started, {} completed, {} cut short by the end of the run; {} pages fetched whole, {} with errors. Page latency runs from each page's intended start to the last byte of its last file.</p>\n",
        s.started, s.completed, s.cut, r.pages.pages, r.pages.errors
    );
    o.push_str(
        "<table id=\"page-classes\"><thead><tr><th class=\"l\">class</th><th class=\"l\">front file</th><th>files</th><th>pages</th><th>errors</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th></tr></thead><tbody>\n",
    );
    for c in std::iter::once(&r.pages).chain(&r.classes) {
        page_row(&mut o, c);
    }
    o.push_str("</tbody></table>\n");
    if r.pages.pages > 0 {
        let u = Stats::of(&r.pages.latency_uncorrected);
        let _ = writeln!(
            o,
            "<p class=\"note\">Uncorrected (from when the tool started each page): p50 {} ms, p99 {} ms.</p>",
            ms(u.percentile(50.0)),
            ms(u.percentile(99.0))
        );
    }
    // The spectrum of all pages, then of the busiest classes.
    let mut classes: Vec<&ClassFigures> = r.classes.iter().filter(|c| c.pages > 0).collect();
    classes.sort_by_key(|c| std::cmp::Reverse(c.pages));
    let mut spectra = vec![("all pages".to_owned(), COLORS[0], &r.pages.latency)];
    for (i, c) in classes.iter().take(COLORS.len() - 1).enumerate() {
        spectra.push((format!("{} {}", c.id, c.front), COLORS[i + 1], &c.latency));
    }
    let spectra: Vec<(String, &str, &Histogram<u64>)> = spectra
        .into_iter()
        .filter(|(_, _, h)| !h.is_empty())
        .collect();
    spectrum_figure(
        &mut o,
        "page-latency-spectrum",
        "Page latency: percentile spectrum",
        &spectra,
    );
    let (steps, _) = timeline_steps(std::iter::once((
        &r.page_timeline,
        r.requests.window.end_unix_us,
    )));
    if !steps.is_empty() {
        let series = latency_series("pages", COLORS[0], &steps);
        let end = steps.last().map_or(1.0, |s| s.x + s.span);
        let y = latency_axis(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        figure(
            &mut o,
            &Chart {
                id: "page-latency-over-time",
                title: &format!(
                    "Page latency over time ({} s intervals)",
                    trim_float(r.page_timeline.interval_ms as f64 / 1000.0)
                ),
                caption: "p50 (dashed), p99 (solid) and max (dotted) of the page latency of the pages that ended in each interval",
                x: Axis::linear(
                    0.0,
                    if end > 0.0 { end } else { 1.0 },
                    "seconds since the start of the replay",
                ),
                x_ticks: None,
                y,
                series,
                breaks: Vec::new(),
            },
        );
    }
    o.push_str("</section>\n");
    o.push_str("<h2 class=\"part\">Requests</h2>\n");
    summary(&mut o, &lines, false);
    charts(&mut o, &lines, "Requests: ");
    notes(&mut o, &lines);
    end(&mut o, &lines);
    o
}

/// One line of the charts: a run, or a server's rounds end to end.
#[derive(Debug)]
struct Line<'a> {
    name: &'a str,
    color: &'static str,
    parts: Vec<&'a RunResult>,
}

/// A point of a line's timeline on the chart's time axis.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Start, seconds on the axis.
    x: f64,
    /// Seconds the interval covers (less than the width for the last
    /// interval of a run).
    span: f64,
    point: TimelinePoint,
}

impl<'a> Line<'a> {
    fn new(name: &'a str, index: usize, parts: Vec<&'a RunResult>) -> Line<'a> {
        Line {
            name,
            color: COLORS[index % COLORS.len()],
            parts,
        }
    }

    /// The timelines of the parts end to end, thinned to [`MAX_POINTS`],
    /// and where each part after the first begins.
    fn steps(&self) -> (Vec<Step>, Vec<f64>) {
        timeline_steps(
            self.parts
                .iter()
                .map(|r| (&r.timeline, r.window.end_unix_us)),
        )
    }

    /// The corrected latency of every part, added.
    fn latency(&self) -> Option<Histogram<u64>> {
        let mut it = self.parts.iter();
        let mut h = it.next()?.histograms.latency.clone();
        for r in it {
            let _ = h.add(&r.histograms.latency);
        }
        Some(h)
    }
}

/// Timelines end to end (each ending at its `end_unix_us`, so the last
/// interval may be partial), thinned to [`MAX_POINTS`], and where each one
/// after the first begins.
fn timeline_steps<'t>(parts: impl Iterator<Item = (&'t Timeline, u64)>) -> (Vec<Step>, Vec<f64>) {
    let mut steps = Vec::new();
    let mut breaks = Vec::new();
    let mut offset = 0.0;
    for (k, (t, end_unix_us)) in parts.enumerate() {
        if t.is_empty() {
            continue;
        }
        if k > 0 && offset > 0.0 {
            breaks.push(offset);
        }
        let width = t.interval_ms as f64 / 1000.0;
        let covered = t
            .points
            .last()
            .map_or(0.0, |p| p.t_ms as f64 / 1000.0 + width);
        let end = end_unix_us.saturating_sub(t.start_unix_us) as f64 / 1e6;
        let length = if end > 0.0 && end <= covered {
            end
        } else {
            covered
        };
        for p in &t.points {
            let x = p.t_ms as f64 / 1000.0;
            steps.push(Step {
                x: offset + x,
                span: (length - x).clamp(0.0, width),
                point: *p,
            });
        }
        offset += length;
    }
    (thin(steps), breaks)
}

/// Lines of p50, p99 and max latency (ms) in each step with a response.
fn latency_series<'a>(name: &str, color: &'a str, steps: &[Step]) -> Vec<Series<'a>> {
    let lat = |f: fn(&TimelinePoint) -> u64| -> Vec<(f64, f64)> {
        steps
            .iter()
            .map(|s| {
                let y = if s.point.responses > 0 {
                    f(&s.point) as f64 / 1000.0
                } else {
                    f64::NAN
                };
                (s.x + s.span.max(1e-3) / 2.0, y)
            })
            .collect()
    };
    vec![
        Series {
            label: format!("{name} max"),
            color,
            width: 1.0,
            dash: Some("1 3"),
            opacity: 0.6,
            points: lat(|p| p.max_us),
        },
        Series {
            label: format!("{name} p99"),
            color,
            width: 2.2,
            dash: None,
            opacity: 1.0,
            points: lat(|p| p.p99_us),
        },
        Series {
            label: format!("{name} p50"),
            color,
            width: 1.6,
            dash: Some("7 4"),
            opacity: 1.0,
            points: lat(|p| p.p50_us),
        },
    ]
}

/// Merges neighbours until at most [`MAX_POINTS`] remain.
fn thin(steps: Vec<Step>) -> Vec<Step> {
    if steps.len() <= MAX_POINTS {
        return steps;
    }
    let k = steps.len().div_ceil(MAX_POINTS);
    steps
        .chunks(k)
        .map(|group| {
            let mut s = group[0];
            for g in &group[1..] {
                s.point.absorb(&g.point);
                s.span += g.span;
            }
            s
        })
        .collect()
}

const STYLE: &str = "\
:root{color-scheme:light}\
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;background:#fff;max-width:1180px;margin:0 auto;padding:16px 24px 40px}\
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .4em;border-bottom:1px solid #ddd;padding-bottom:.2em}\
h2.part{font-size:1.35em;border-bottom:2px solid #888}\
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f4f4f4;padding:1px 4px;border-radius:3px;overflow-wrap:anywhere}\
.meta{color:#555;margin:.2em 0}.note{color:#555;font-size:.9em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}\
th,td{padding:3px 9px;border-bottom:1px solid #e4e4e4;text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
th{background:#f6f6f6;font-weight:600}td.l,th.l{text-align:left}td.wrap{white-space:normal;overflow-wrap:anywhere;text-align:left;max-width:28em}\
.err{color:#b00}.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}\
figure{margin:1em 0 1.6em}figcaption{font-weight:600;margin-bottom:.3em}\
svg.chart{width:100%;height:auto;display:block;font-family:system-ui,sans-serif}\
ul.legend{list-style:none;padding:0;margin:.3em 0 0;display:flex;flex-wrap:wrap;gap:4px 18px;font-size:.88em}\
ul.legend svg{width:26px;height:10px;vertical-align:middle;margin-right:5px}\
ul.targets{margin:.2em 0;padding-left:1.2em}\
footer{margin-top:2em;color:#777;font-size:.85em}\
@media print{body{max-width:none;padding:0;font-size:12px}figure,table,header{break-inside:avoid}h2{break-after:avoid}}";

/// A whole self-contained page around `body` (already HTML): the report's
/// head and style, so that `tern suite --html` looks like `tern bench`'s.
pub fn document(title: &str, body: &str) -> String {
    let mut o = String::with_capacity(body.len() + 4096);
    begin(&mut o, title);
    o.push_str(body);
    o.push_str("\n</body>\n</html>\n");
    o
}

fn begin(o: &mut String, title: &str) {
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    );
}

fn end(o: &mut String, lines: &[Line<'_>]) {
    let version = lines
        .iter()
        .flat_map(|l| &l.parts)
        .map(|r| r.tool_version.as_str())
        .next()
        .unwrap_or(env!("CARGO_PKG_VERSION"));
    let _ = write!(
        o,
        "<footer>Written by tern bench {} (report by tern-bench {}). Latency is measured from when each request was due (corrected) unless marked uncorrected; percentiles come from HdrHistograms, per interval with 2 significant digits.</footer>\n</body>\n</html>\n",
        escape(version),
        env!("CARGO_PKG_VERSION")
    );
}

/// The run's start as a UTC date and time.
fn date(r: &RunResult) -> String {
    let us = if r.window.start_unix_us > 0 {
        r.window.start_unix_us
    } else {
        r.timeline.start_unix_us
    };
    if us == 0 {
        return "date unknown".to_owned();
    }
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_micros(us);
    // `2026-11-25T02:18:28Z` as `2026-11-25 02:18:28 UTC`: a date a person reads.
    tern_workload::rfc3339_seconds(at)
        .replace('T', " ")
        .replace('Z', " UTC")
}

fn header(o: &mut String, lines: &[Line<'_>]) {
    let first = lines.iter().flat_map(|l| &l.parts).next();
    let title = match lines {
        [one] if one.parts.len() == 1 => {
            let urls: Vec<&str> = one.parts[0]
                .targets
                .iter()
                .map(|t| t.url.as_str())
                .collect();
            format!("tern bench {}", shorten_list(&urls, 3))
        }
        _ => {
            let names: Vec<&str> = lines.iter().map(|l| l.name).collect();
            format!("tern bench: {}", names.join(" vs "))
        }
    };
    let _ = writeln!(o, "<header><h1>{}</h1>", escape(&title));
    if let Some(r) = first {
        let _ = writeln!(
            o,
            "<p class=\"meta\">{} · tern bench {}</p>",
            escape(&date(r)),
            escape(&r.tool_version)
        );
    }
    for l in lines {
        let Some(r) = l.parts.first() else { continue };
        let _ = write!(
            o,
            "<p><span class=\"swatch\" style=\"background:{}\"></span><b>{}</b>: <code>{}</code>",
            l.color,
            escape(l.name),
            escape(&r.plan)
        );
        if l.parts.len() > 1 {
            let _ = write!(o, " · {} rounds", l.parts.len());
        }
        if r.runs > 1 {
            let _ = write!(o, " · {} runs merged", r.runs);
        }
        if let Some(s) = &r.server_software {
            let _ = write!(o, " · server <code>{}</code>", escape(s));
        }
        o.push_str("</p>\n<ul class=\"targets\">");
        const SHOWN: usize = 12;
        for t in r.targets.iter().take(SHOWN) {
            let _ = write!(o, "<li><code>{}</code></li>", escape(&t.url));
        }
        if r.targets.len() > SHOWN {
            let _ = write!(o, "<li>… and {} more URLs</li>", r.targets.len() - SHOWN);
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</header>\n");
}

fn shorten_list(items: &[&str], n: usize) -> String {
    if items.len() <= n {
        items.join(" ")
    } else {
        format!("{} … ({} URLs)", items[..n].join(" "), items.len())
    }
}

/// µs as milliseconds, three decimals.
fn ms(us: u64) -> String {
    super::ms(us)
}

fn summary(o: &mut String, lines: &[Line<'_>], rounds: bool) {
    let row_name = |l: &Line<'_>, k: usize| {
        if rounds {
            format!("{}, round {}", l.name, k + 1)
        } else {
            l.name.to_owned()
        }
    };
    o.push_str("<section><h2>Summary</h2>\n<table id=\"summary\"><thead><tr><th class=\"l\">run</th><th>seconds</th><th>responses</th><th>req/s</th><th>MB/s</th><th>status</th><th>errors</th><th>connect</th><th>timeout</th><th>reset</th><th>protocol</th><th>server CPU µs/req</th><th>client CPU µs/req</th></tr></thead><tbody>\n");
    for l in lines {
        for (k, r) in l.parts.iter().enumerate() {
            let c = &r.counts;
            let classes: Vec<String> = (1..=5)
                .filter_map(|k| match c.status_class(k) {
                    0 => None,
                    n => Some(format!("{k}xx {n}")),
                })
                .collect();
            let cpu = |f: &Option<crate::result::CpuFigures>| {
                f.as_ref()
                    .map_or("–".to_owned(), |f| format!("{:.1}", f.us_per_request))
            };
            let err = |n: u64| {
                if n > 0 {
                    format!("<td class=\"err\">{n}</td>")
                } else {
                    "<td>0</td>".to_owned()
                }
            };
            let _ = write!(
                o,
                "<tr><td class=\"l\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{:.3}</td><td>{}</td><td>{:.1}</td><td>{:.2}</td><td>{}</td>{}",
                l.color,
                escape(&row_name(l, k)),
                r.window.seconds(),
                c.responses,
                r.requests_per_second(),
                r.bytes_per_second() / super::human::MB,
                classes.join(", "),
                err(c.errors.total()),
            );
            for class in ErrorClass::ALL {
                o.push_str(&err(c.errors.get(class)));
            }
            let _ = writeln!(
                o,
                "<td>{}</td><td>{}</td></tr>",
                cpu(&r.server_cpu),
                cpu(&r.client_cpu)
            );
        }
    }
    o.push_str("</tbody></table>\n");
    o.push_str("<table id=\"latency\"><thead><tr><th class=\"l\">latency (ms)</th><th class=\"l\"></th><th>min</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>mean</th></tr></thead><tbody>\n");
    for l in lines {
        for (k, r) in l.parts.iter().enumerate() {
            if r.counts.responses == 0 {
                continue;
            }
            let h = &r.histograms;
            for (which, hist) in [
                ("corrected", &h.latency),
                ("uncorrected", &h.latency_uncorrected),
            ] {
                let s = Stats::of(hist);
                let _ = writeln!(
                    o,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{which}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td></tr>",
                    escape(&row_name(l, k)),
                    ms(s.min()),
                    ms(s.percentile(50.0)),
                    ms(s.percentile(90.0)),
                    ms(s.percentile(99.0)),
                    ms(s.percentile(99.9)),
                    ms(s.max()),
                    s.mean() / 1000.0
                );
            }
        }
    }
    o.push_str("</tbody></table>\n<p class=\"note\">Corrected: from when each request was due; uncorrected: from when it was sent. The difference is time spent waiting for a free connection.</p>\n</section>\n");
}

fn comparison_table(o: &mut String, c: &Comparison) {
    let n = c.rounds.len();
    let _ = write!(
        o,
        "<section><h2>Comparison</h2>\n<p>{n} rounds, servers run in the order given within each round; medians over rounds.</p>\n<table id=\"comparison\"><thead><tr><th class=\"l\">server</th><th>req/s median</th><th>min–max</th><th>spread</th><th>p50 ms</th><th>p99 ms</th><th>errors</th><th>server CPU µs/req</th><th>req/s vs {}</th></tr></thead><tbody>\n",
        escape(c.names.first().map_or("", String::as_str))
    );
    for (i, (name, m)) in c.names.iter().zip(c.summaries()).enumerate() {
        let s = &m.rps;
        let _ = writeln!(
            o,
            "<tr><td class=\"l\"><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{:.1}</td><td>{:.1}–{:.1}</td><td>{:.1} %</td><td>{:.3}</td><td>{:.3}</td><td{}>{}</td><td>{}</td><td>{}</td></tr>",
            COLORS[i % COLORS.len()],
            escape(name),
            s.median,
            s.min,
            s.max,
            s.percent(),
            m.p50_ms,
            m.p99_ms,
            if m.errors > 0 { " class=\"err\"" } else { "" },
            m.errors,
            m.cpu_us.map_or("–".to_owned(), |v| format!("{v:.1}")),
            m.ratio.map_or("–".to_owned(), |v| format!("{v:.2}")),
        );
    }
    o.push_str("</tbody></table>\n</section>\n");
}

fn page_row(o: &mut String, c: &ClassFigures) {
    let files = if c.files == 0 {
        String::new()
    } else {
        c.files.to_string()
    };
    let front = if c.id == "all" && c.front.is_empty() {
        "(every page)".to_owned()
    } else {
        c.front.clone()
    };
    let errors = if c.errors > 0 {
        format!("<td class=\"err\">{}</td>", c.errors)
    } else {
        "<td>0</td>".to_owned()
    };
    let _ = write!(
        o,
        "<tr><td class=\"l\">{}</td><td class=\"wrap\"><code>{}</code></td><td>{files}</td><td>{}</td>{errors}",
        escape(&c.id),
        escape(&front),
        c.pages
    );
    if c.pages == 0 {
        o.push_str("<td></td><td></td><td></td><td></td></tr>\n");
        return;
    }
    let s = Stats::of(&c.latency);
    let _ = writeln!(
        o,
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        ms(s.percentile(50.0)),
        ms(s.percentile(90.0)),
        ms(s.percentile(99.0)),
        ms(s.max())
    );
}

fn notes(o: &mut String, lines: &[Line<'_>]) {
    let mut all: Vec<(&str, &str)> = Vec::new();
    for l in lines {
        for r in &l.parts {
            for n in &r.notes {
                if !all.iter().any(|(name, m)| *name == l.name && *m == n) {
                    all.push((l.name, n));
                }
            }
        }
    }
    if all.is_empty() {
        return;
    }
    o.push_str("<section><h2>Notes</h2><ul>\n");
    for (name, n) in all {
        let _ = writeln!(o, "<li>{}: {}</li>", escape(name), escape(n));
    }
    o.push_str("</ul></section>\n");
}

/// The three charts of runs.
fn charts(o: &mut String, lines: &[Line<'_>], prefix: &str) {
    let timed: Vec<(&Line<'_>, Vec<Step>, Vec<f64>)> = lines
        .iter()
        .map(|l| {
            let (steps, breaks) = l.steps();
            (l, steps, breaks)
        })
        .collect();
    let width = lines
        .iter()
        .flat_map(|l| &l.parts)
        .map(|r| r.timeline.interval_ms)
        .max()
        .unwrap_or(0);
    let joined = lines.iter().any(|l| l.parts.len() > 1);
    let x_label = if joined {
        "seconds of measured time (each server's rounds end to end)"
    } else {
        "seconds since the start of the measured window"
    };
    let interval = if width > 0 {
        format!(" ({} s intervals)", trim_float(width as f64 / 1000.0))
    } else {
        String::new()
    };

    // Latency over time.
    let mut series = Vec::new();
    for (l, steps, _) in &timed {
        series.extend(latency_series(l.name, l.color, steps));
    }
    let breaks: Vec<(f64, &str)> = timed
        .iter()
        .flat_map(|(l, _, b)| b.iter().map(|x| (*x, l.color)))
        .collect();
    let x = time_axis(&timed, x_label);
    let y = latency_axis(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    figure(
        o,
        &Chart {
            id: "latency-over-time",
            title: &format!("{prefix}Latency over time{interval}"),
            caption: "p50 (dashed), p99 (solid) and max (dotted) of the corrected latency in each interval; a gap is an interval in which no response completed",
            x,
            x_ticks: None,
            y,
            series,
            breaks,
        },
    );

    // The percentile spectrum.
    let spectra: Vec<(String, &str, Histogram<u64>)> = lines
        .iter()
        .filter_map(|l| Some((l.name.to_owned(), l.color, l.latency()?)))
        .filter(|(_, _, h)| !h.is_empty())
        .collect();
    let spectra: Vec<(String, &str, &Histogram<u64>)> =
        spectra.iter().map(|(n, c, h)| (n.clone(), *c, h)).collect();
    spectrum_figure(
        o,
        "percentile-spectrum",
        &format!("{prefix}Latency by percentile (corrected)"),
        &spectra,
    );

    // Throughput and errors over time.
    let mut series = Vec::new();
    let mut any_errors = false;
    for (i, (l, steps, _)) in timed.iter().enumerate() {
        let rate = |f: fn(&TimelinePoint) -> u64| -> Vec<(f64, f64)> {
            steps
                .iter()
                .map(|s| {
                    // A sliver of an interval at the end of a run gives no
                    // rate worth drawing.
                    let y = if s.span >= 0.25 * width as f64 / 1000.0 && s.span > 0.0 {
                        f(&s.point) as f64 / s.span
                    } else {
                        f64::NAN
                    };
                    (s.x + s.span.max(1e-3) / 2.0, y)
                })
                .collect()
        };
        series.push(Series {
            label: format!("{} responses/s", l.name),
            color: l.color,
            width: 2.0,
            dash: None,
            opacity: 1.0,
            points: rate(|p| p.responses),
        });
        if steps.iter().any(|s| s.point.errors > 0) {
            any_errors = true;
            const DASHES: [Option<&str>; 4] = [None, Some("6 3"), Some("2 3"), Some("8 3 2 3")];
            series.push(Series {
                label: format!("{} errors/s", l.name),
                color: ERROR_COLOR,
                width: 1.8,
                dash: DASHES[i % DASHES.len()],
                opacity: 1.0,
                points: rate(|p| p.errors),
            });
        }
    }
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let breaks: Vec<(f64, &str)> = timed
        .iter()
        .flat_map(|(l, _, b)| b.iter().map(|x| (*x, l.color)))
        .collect();
    figure(
        o,
        &Chart {
            id: "throughput-over-time",
            title: &format!("{prefix}Throughput and errors over time{interval}"),
            caption: if any_errors {
                "responses per second in each interval; failures per second in red"
            } else {
                "responses per second in each interval (no failures)"
            },
            x: time_axis(&timed, x_label),
            x_ticks: None,
            y: Axis::linear(0.0, top.max(1.0) * 1.08, "per second"),
            series,
            breaks,
        },
    );
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn time_axis(timed: &[(&Line<'_>, Vec<Step>, Vec<f64>)], label: &str) -> Axis {
    let end = timed
        .iter()
        .flat_map(|(_, s, _)| s.last().map(|s| s.x + s.span))
        .fold(0.0, f64::max);
    Axis::linear(0.0, if end > 0.0 { end } else { 1.0 }, label)
}

/// A latency axis in ms for `values`: logarithmic when they span more than
/// a factor 50, so that a spike does not flatten the rest.
fn latency_axis(values: impl Iterator<Item = f64>) -> Axis {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi <= 0.0 {
        return Axis::linear(0.0, 1.0, "latency (ms)");
    }
    if hi / lo > 50.0 {
        Axis::log(lo, hi, "latency (ms, log scale)")
    } else {
        Axis::linear(0.0, hi * 1.08, "latency (ms)")
    }
}

fn spectrum_figure(
    o: &mut String,
    id: &str,
    title: &str,
    spectra: &[(String, &str, &Histogram<u64>)],
) {
    const LAST: f64 = 5.0;
    let mut series = Vec::new();
    for (name, color, h) in spectra {
        let n = h.len() as f64;
        let mut points: Vec<(f64, f64)> = Vec::new();
        for v in h.iter_quantiles(4) {
            let q = v.quantile_iterated_to();
            let x = if q >= 1.0 {
                // The largest value: drawn at 1 − 1/n, never left of the
                // point before it.
                n.log10().max(points.last().map_or(0.0, |p| p.0))
            } else {
                -(1.0 - q).log10()
            };
            let y = h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0;
            let x = x.clamp(0.0, LAST);
            match points.last_mut() {
                Some(last) if (last.0 - x).abs() < 1e-9 => last.1 = last.1.max(y),
                _ => points.push((x, y)),
            }
        }
        if points.len() > MAX_POINTS {
            let k = points.len().div_ceil(MAX_POINTS);
            points = points
                .chunks(k)
                .map(|c| *c.last().expect("chunks are not empty"))
                .collect();
        }
        series.push(Series {
            label: name.clone(),
            color,
            width: 2.0,
            dash: None,
            opacity: 1.0,
            points,
        });
    }
    let ticks = ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
        .iter()
        .enumerate()
        .map(|(i, t)| (i as f64, (*t).to_owned()))
        .collect();
    let y = latency_axis(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    figure(
        o,
        &Chart {
            id,
            title,
            caption: "latency at or below which each fraction of the requests finished, from the full histograms; the axis stretches the tail: each step is ten times rarer",
            x: Axis::linear(0.0, LAST, "percentile"),
            x_ticks: Some(ticks),
            y,
            series,
            breaks: Vec::new(),
        },
    );
}

/// A chart axis.
#[derive(Debug, Clone)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    label: String,
}

impl Axis {
    fn linear(lo: f64, hi: f64, label: &str) -> Axis {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Axis {
            lo,
            hi,
            log: false,
            label: label.to_owned(),
        }
    }

    fn log(lo: f64, hi: f64, label: &str) -> Axis {
        // Whole decades around the values.
        let lo = 10f64.powf(lo.log10().floor());
        let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
        Axis {
            lo,
            hi,
            log: true,
            label: label.to_owned(),
        }
    }

    /// Where `v` falls, 0 at `lo` to 1 at `hi` (NaN for no value).
    fn frac(&self, v: f64) -> f64 {
        if !v.is_finite() {
            return f64::NAN;
        }
        if self.log {
            if v <= 0.0 {
                return f64::NAN;
            }
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<(f64, String)> {
        if self.log {
            let decades = (self.hi / self.lo).log10().round() as i32;
            let steps: &[f64] = if decades <= 2 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            let mut out = Vec::new();
            let mut d = self.lo;
            while d <= self.hi * 1.0001 {
                for m in steps {
                    let v = d * m;
                    if v <= self.hi * 1.0001 {
                        out.push((v, number(v)));
                    }
                }
                d *= 10.0;
            }
            return out;
        }
        let raw = (self.hi - self.lo) / 6.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw)
            .unwrap_or(10.0 * mag);
        let mut out = Vec::new();
        let mut v = (self.lo / step).ceil() * step;
        while v <= self.hi + step * 1e-9 {
            out.push((v, number(v)));
            v += step;
        }
        out
    }
}

/// A tick label: few digits, no trailing zeros.
fn number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim_float(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim_float(v / 1e3))
    } else if a >= 1.0 || a == 0.0 {
        trim_float((v * 100.0).round() / 100.0)
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// One line of a chart; NaN values leave a gap.
#[derive(Debug)]
struct Series<'a> {
    label: String,
    color: &'a str,
    width: f64,
    dash: Option<&'a str>,
    opacity: f64,
    points: Vec<(f64, f64)>,
}

/// A chart: axes, lines, and vertical markers (x, colour).
#[derive(Debug)]
struct Chart<'a> {
    id: &'a str,
    title: &'a str,
    caption: &'a str,
    x: Axis,
    /// Tick positions and labels in place of the x axis's own.
    x_ticks: Option<Vec<(f64, String)>>,
    y: Axis,
    series: Vec<Series<'a>>,
    breaks: Vec<(f64, &'a str)>,
}

/// The chart's size in SVG units (it scales with the page: `viewBox`).
const W: f64 = 960.0;
const H: f64 = 340.0;
const LEFT: f64 = 74.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 50.0;

fn figure(o: &mut String, c: &Chart<'_>) {
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let px = |v: f64| LEFT + c.x.frac(v) * pw;
    let py = |v: f64| TOP + (1.0 - c.y.frac(v)) * ph;
    let _ = write!(
        o,
        "<figure>\n<figcaption>{}</figcaption>\n<svg id=\"{}\" class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">\n<title>{}</title>\n",
        escape(c.title),
        escape(c.id),
        escape(c.title),
        escape(c.title)
    );
    let _ = writeln!(
        o,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"#fcfcfc\" stroke=\"#bbb\"/>"
    );
    // Grid and ticks.
    o.push_str("<g font-size=\"12\" fill=\"#444\">\n");
    for (v, label) in c.y.ticks() {
        let y = py(v);
        if !(TOP - 0.5..=TOP + ph + 0.5).contains(&y) {
            continue;
        }
        let _ = writeln!(
            o,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e3e3e3\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT + pw,
            LEFT - 6.0,
            y + 4.0,
            escape(&label)
        );
    }
    let x_ticks = c.x_ticks.clone().unwrap_or_else(|| c.x.ticks());
    for (v, label) in x_ticks {
        let x = px(v);
        if !(LEFT - 0.5..=LEFT + pw + 0.5).contains(&x) {
            continue;
        }
        // The last label would stick out of the chart: it ends at its tick.
        let anchor = if x > LEFT + pw - 24.0 {
            "end"
        } else {
            "middle"
        };
        let _ = writeln!(
            o,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#e3e3e3\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            TOP + ph,
            TOP + ph + 16.0,
            escape(&label)
        );
    }
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"13\">{}</text>",
        LEFT + pw / 2.0,
        H - 8.0,
        escape(&c.x.label)
    );
    let _ = writeln!(
        o,
        "<text transform=\"translate(16 {:.1}) rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">{}</text>",
        TOP + ph / 2.0,
        escape(&c.y.label)
    );
    o.push_str("</g>\n");
    for (x, color) in &c.breaks {
        let x = px(*x);
        let _ = writeln!(
            o,
            "<line class=\"round\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-opacity=\"0.5\" stroke-dasharray=\"4 4\"/>",
            TOP + ph
        );
    }
    if c.series
        .iter()
        .all(|s| s.points.iter().all(|p| !p.1.is_finite()))
    {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"14\" fill=\"#888\">no data</text>",
            LEFT + pw / 2.0,
            TOP + ph / 2.0
        );
    }
    let _ = writeln!(
        o,
        "<clipPath id=\"{}-plot\"><rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\"/></clipPath>",
        escape(c.id)
    );
    let _ = writeln!(
        o,
        "<g clip-path=\"url(#{}-plot)\" fill=\"none\">",
        escape(c.id)
    );
    for s in &c.series {
        let mut d = String::new();
        let mut pen_down = false;
        let mut alone = Vec::new();
        for (i, &(x, y)) in s.points.iter().enumerate() {
            let (sx, sy) = (px(x), py(y));
            if !(sx.is_finite() && sy.is_finite()) {
                pen_down = false;
                continue;
            }
            let next_ok = s
                .points
                .get(i + 1)
                .is_some_and(|&(nx, ny)| px(nx).is_finite() && py(ny).is_finite());
            if !pen_down && !next_ok {
                // A lone point: a dot, or it would not show.
                alone.push((sx, sy));
            }
            let _ = write!(d, "{}{sx:.1},{sy:.1}", if pen_down { "L" } else { "M" });
            pen_down = true;
        }
        if d.is_empty() {
            continue;
        }
        let dash = s
            .dash
            .map(|d| format!(" stroke-dasharray=\"{d}\""))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "<path d=\"{d}\" stroke=\"{}\" stroke-width=\"{}\" stroke-opacity=\"{}\" stroke-linejoin=\"round\"{dash}><title>{}</title></path>",
            s.color,
            s.width,
            s.opacity,
            escape(&s.label)
        );
        for (x, y) in alone {
            let _ = writeln!(
                o,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{}\" fill-opacity=\"{}\"/>",
                s.color, s.opacity
            );
        }
    }
    o.push_str("</g>\n</svg>\n<ul class=\"legend\">");
    for s in &c.series {
        let dash = s
            .dash
            .map(|d| format!(" stroke-dasharray=\"{d}\""))
            .unwrap_or_default();
        let _ = write!(
            o,
            "<li><svg viewBox=\"0 0 26 10\" aria-hidden=\"true\"><line x1=\"1\" y1=\"5\" x2=\"25\" y2=\"5\" stroke=\"{}\" stroke-width=\"{}\" stroke-opacity=\"{}\"{dash}/></svg>{}</li>",
            s.color,
            s.width.max(1.5),
            s.opacity,
            escape(&s.label)
        );
    }
    let _ = writeln!(
        o,
        "</ul>\n<p class=\"note\">{}.</p>\n</figure>",
        escape(c.caption)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
    }

    #[test]
    fn dates_are_utc() {
        assert_eq!(date_of(0), "date unknown");
        // 2026-11-25 02:18:28 UTC.
        assert_eq!(date_of(1_795_573_108_000_000), "2026-11-25 02:18:28 UTC");
        assert_eq!(date_of(951_782_400_000_000), "2000-02-29 00:00:00 UTC");
    }

    fn date_of(us: u64) -> String {
        let mut r: RunResult = serde_json::from_str(include_str!(
            "../../tests/it/fixtures/result-no-timeline.json"
        ))
        .unwrap();
        r.window.start_unix_us = us;
        r.timeline.start_unix_us = 0;
        date(&r)
    }

    #[test]
    fn axes_have_round_ticks() {
        let a = Axis::linear(0.0, 10.5, "x");
        let t: Vec<String> = a.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0", "2", "4", "6", "8", "10"]);
        let l = Axis::log(0.15, 42.0, "y");
        assert_eq!((l.lo, l.hi), (0.1, 100.0));
        let t: Vec<String> = l.ticks().into_iter().map(|t| t.1).collect();
        assert_eq!(t, ["0.1", "1", "10", "100"]);
        let t: Vec<String> = Axis::log(0.15, 9.0, "y")
            .ticks()
            .into_iter()
            .map(|t| t.1)
            .collect();
        assert_eq!(t, ["0.1", "0.2", "0.5", "1", "2", "5", "10"]);
        assert!(l.frac(-1.0).is_nan() && (l.frac(1.0) - 1.0 / 3.0).abs() < 1e-9);
    }
}
