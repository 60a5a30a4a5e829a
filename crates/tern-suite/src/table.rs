//! The suite's tables: Markdown (one table per section, servers side by side
//! within each row group, like the founding reports) and JSON.

use std::fmt::Write as _;

use crate::report::{Cell, PageFigures, SuiteReport, WebstoneReport};
use crate::webstone::SECTION;

/// The report as Markdown.
pub fn markdown(r: &SuiteReport) -> String {
    let mut o = String::from("# tern suite\n\n");
    for line in &r.about {
        let _ = writeln!(o, "- {line}");
    }
    let servers: Vec<String> = r
        .servers
        .iter()
        .map(|s| {
            let mut text = format!("{} (cache {}, {}", s.name, s.cache, s.program);
            if !s.backends.is_empty() {
                let names: Vec<&str> = s.backends.iter().map(|b| b.name.as_str()).collect();
                text.push_str(&format!(", with {}", names.join(", ")));
            }
            text.push(')');
            text
        })
        .collect();
    let _ = writeln!(
        o,
        "- servers: {}",
        if servers.is_empty() {
            "none".to_owned()
        } else {
            servers.join("; ")
        }
    );
    for n in &r.notes {
        let _ = writeln!(o, "- note: {n}");
    }
    let mut sections: Vec<&str> = Vec::new();
    for row in &r.rows {
        if !sections.contains(&row.row.section.as_str()) {
            sections.push(&row.row.section);
        }
    }
    let mut cell_notes = Vec::new();
    for section in sections {
        let _ = writeln!(o, "\n## {section}\n");
        o.push_str("| case | c | keep-alive | cache | server | req/s | MB/s | p50 ms | p99 ms | server CPU s | CPU µs/req | errors |\n");
        o.push_str("|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for row in r.rows.iter().filter(|x| x.row.section == section) {
            let spec = &row.row;
            for c in &row.cells {
                let cache = if c.cache == "default" {
                    "default".to_owned()
                } else {
                    c.cache.clone()
                };
                let mut errors = c.errors.to_string();
                if let Some(n) = &c.note {
                    cell_notes.push(format!(
                        "{}, {} (cache {}): {n}",
                        spec.name(),
                        c.server,
                        c.cache
                    ));
                    errors = format!("{errors} [{}]", cell_notes.len());
                }
                let server = match &c.gateway {
                    Some(g) => format!("{}+{g}", c.server),
                    None => c.server.clone(),
                };
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {cache} | {server} | {} | {} | {} | {} | {} | {} | {errors} |",
                    spec.case_label(),
                    spec.connections,
                    if spec.keepalive { "yes" } else { "no" },
                    rps(c),
                    num(c.mb_per_s, 1),
                    num(c.p50_ms, 3),
                    num(c.p99_ms, 3),
                    num(c.server_cpu_s, 2),
                    cpu_per_request(c),
                );
            }
        }
        for f in r.footnotes.iter().filter(|f| f.section == section) {
            let _ = writeln!(o, "\nNote: {}.", f.text);
        }
    }
    if let Some(w) = &r.webstone {
        webstone(&mut o, w, r, &mut cell_notes);
    }
    if !cell_notes.is_empty() {
        o.push('\n');
        for (i, n) in cell_notes.iter().enumerate() {
            let _ = writeln!(o, "[{}] {n}", i + 1);
        }
    }
    o
}

/// The "webstone" section: a row per server and way, page latency of all
/// pages, of the pages without a dynamic file and of those with one.
fn webstone(o: &mut String, w: &WebstoneReport, r: &SuiteReport, cell_notes: &mut Vec<String>) {
    let _ = writeln!(o, "\n## {SECTION}\n");
    let _ = writeln!(o, "Model: {}. {}.", w.model, w.method);
    let _ = writeln!(
        o,
        "Static pages: the classes with no dynamic file ({}); dynamic pages: those with one ({}).\n",
        list(&w.static_classes),
        list(&w.dynamic_classes)
    );
    o.push_str("| server | dynamic files | sessions | pages | page errors | all p50 ms | all p99 ms | static pages p50 ms | static pages p99 ms | dynamic pages p50 ms | dynamic pages p99 ms | CPU µs/req |\n");
    o.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for row in &w.rows {
        let mut errors = row.all.errors.to_string();
        if let Some(n) = &row.note {
            cell_notes.push(format!("{SECTION}, {} {}: {n}", row.server, row.way));
            errors = format!("{errors} [{}]", cell_notes.len());
        }
        let server = match &row.gateway {
            Some(g) => format!("{}+{g}", row.server),
            None => row.server.clone(),
        };
        let p = |f: &PageFigures| format!("{} | {}", num(f.p50_ms, 2), num(f.p99_ms, 2));
        let _ = writeln!(
            o,
            "| {server} | {} | {} | {} | {errors} | {} | {} | {} | {} |",
            row.way,
            row.sessions,
            row.all.pages,
            p(&row.all),
            p(&row.static_pages),
            p(&row.dynamic_pages),
            num(row.cpu_us_per_request, 1),
        );
    }
    for f in r.footnotes.iter().filter(|f| f.section == SECTION) {
        let _ = writeln!(o, "\nNote: {}.", f.text);
    }
}

fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join(", ")
    }
}

fn rps(c: &Cell) -> String {
    match c.rps {
        None => "–".to_owned(),
        Some(s) if (s.max - s.min).abs() < f64::EPSILON => format!("{:.0}", s.median),
        Some(s) => format!("{:.0} ({:.0}–{:.0})", s.median, s.min, s.max),
    }
}

/// CPU µs per request, and per TLS handshake in TLS rows ("512.3, 498.0/handshake").
fn cpu_per_request(c: &Cell) -> String {
    let mut text = num(c.cpu_us_per_request, 1);
    if let Some(hs) = c.cpu_us_per_handshake {
        text.push_str(&format!(", {hs:.1}/handshake"));
    }
    text
}

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.decimals$}"))
}

/// The report as pretty JSON.
pub fn json(r: &SuiteReport) -> String {
    let mut text = serde_json::to_string_pretty(r).expect("a suite report always serialises");
    text.push('\n');
    text
}
