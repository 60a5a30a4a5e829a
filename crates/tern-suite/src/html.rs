//! `tern suite --html FILE`: the report as one self-contained page (the
//! same head and style as `tern bench --html`): per section, a bar chart of
//! each row's req/s by server, then the section's table; the webstone
//! section's page-latency table; notes and footnotes. No script, no
//! external asset; every text from the run is escaped.

use std::fmt::Write as _;

use tern_bench::report::html::{document, escape};

use crate::report::{Cell, PageFigures, SuiteReport};

/// Bar colours, one per server, in the order the servers ran.
const COLORS: [&str; 6] = [
    "#1f6fb4", "#e07b00", "#2a9d3a", "#b8322a", "#7a4fb0", "#7d5a2b",
];

/// Renders the report.
pub fn render(r: &SuiteReport) -> String {
    let mut o = String::new();
    o.push_str("<header><h1>tern suite</h1><ul>");
    for line in &r.about {
        let _ = write!(o, "<li>{}</li>", escape(line));
    }
    o.push_str("</ul></header>\n");
    // A series per server variant: tern with its cache on and off are two.
    let servers: Vec<String> = r
        .servers
        .iter()
        .map(|s| series(&s.name, &s.cache))
        .collect();
    if !r.servers.is_empty() {
        o.push_str("<table id=\"servers\"><thead><tr><th class=\"l\">server</th><th class=\"l\">cache</th><th class=\"l\">program</th><th>pid</th><th>port</th></tr></thead><tbody>\n");
        for s in &r.servers {
            let _ = writeln!(
                o,
                "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                swatch(&servers, &series(&s.name, &s.cache)),
                escape(&s.name),
                escape(&s.cache),
                escape(&s.program),
                s.pid,
                s.port
            );
        }
        o.push_str("</tbody></table>\n");
    }
    for n in &r.notes {
        let _ = writeln!(o, "<p class=\"note\">note: {}</p>", escape(n));
    }
    let mut sections: Vec<&str> = Vec::new();
    for row in &r.rows {
        if !sections.contains(&row.row.section.as_str()) {
            sections.push(&row.row.section);
        }
    }
    for section in sections {
        let rows: Vec<_> = r.rows.iter().filter(|x| x.row.section == section).collect();
        let _ = writeln!(
            o,
            "<section id=\"section-{0}\"><h2>{0}</h2>",
            escape(section)
        );
        bars(&mut o, section, &rows, &servers);
        o.push_str("<table><thead><tr><th class=\"l\">case</th><th>c</th><th class=\"l\">keep-alive</th><th class=\"l\">server</th><th class=\"l\">cache</th><th>req/s</th><th>MB/s</th><th>p50 ms</th><th>p99 ms</th><th>CPU µs/req</th><th>errors</th></tr></thead><tbody>\n");
        for row in &rows {
            for c in &row.cells {
                cell_row(
                    &mut o,
                    &row.row.case,
                    row.row.connections,
                    row.row.keepalive,
                    c,
                    &servers,
                );
            }
        }
        o.push_str("</tbody></table>\n");
        for f in r.footnotes.iter().filter(|f| f.section == section) {
            let _ = writeln!(o, "<p class=\"note\">{}</p>", escape(&f.text));
        }
        o.push_str("</section>\n");
    }
    if let Some(w) = &r.webstone {
        let _ = writeln!(
            o,
            "<section id=\"section-webstone\"><h2>webstone</h2><p>Model: {}. {}</p>",
            escape(&w.model),
            escape(&w.method)
        );
        o.push_str("<table id=\"webstone\"><thead><tr><th class=\"l\">server</th><th class=\"l\">dynamic files</th><th>sessions</th><th>pages</th><th>page errors</th><th>all p50 / p99 ms</th><th>static pages p50 / p99</th><th>dynamic pages p50 / p99</th><th>CPU µs/req</th></tr></thead><tbody>\n");
        for row in &w.rows {
            let server = match &row.gateway {
                Some(g) => format!("{}+{g}", row.server),
                None => row.server.clone(),
            };
            let _ = writeln!(
                o,
                "<tr><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td{}>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                swatch(&servers, &row.server),
                escape(&server),
                escape(&row.way),
                row.sessions,
                row.all.pages,
                if row.all.errors > 0 { " class=\"err\"" } else { "" },
                row.all.errors,
                pair(&row.all),
                pair(&row.static_pages),
                pair(&row.dynamic_pages),
                number(row.cpu_us_per_request, 1)
            );
        }
        o.push_str("</tbody></table></section>\n");
    }
    o.push_str("<footer>Written by tern suite; figures measured with tern bench (latency from when each request was due).</footer>");
    document("tern suite", &o)
}

/// A horizontal bar per server for each row of a section: req/s, the
/// section's largest as the full width.
fn bars(o: &mut String, section: &str, rows: &[&crate::report::RowReport], servers: &[String]) {
    let max = rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter_map(|c| c.rps.as_ref().map(|s| s.median))
        .fold(0.0_f64, f64::max);
    if max <= 0.0 {
        return;
    }
    const LABEL: f64 = 300.0;
    const WIDTH: f64 = 900.0;
    const BAR: f64 = 14.0;
    let height: f64 = rows
        .iter()
        .map(|r| r.cells.len() as f64 * BAR + 12.0)
        .sum::<f64>()
        + 10.0;
    let _ = writeln!(
        o,
        "<figure><figcaption>req/s by server (median over rounds)</figcaption><svg class=\"chart\" id=\"bars-{}\" viewBox=\"0 0 {WIDTH} {height:.0}\" role=\"img\">",
        escape(section)
    );
    let mut y = 6.0;
    for r in rows {
        let cache_off = r.cells.iter().any(|c| c.cache == "off");
        let label = format!(
            "{} c={}{}{}",
            r.row.case,
            r.row.connections,
            if r.row.keepalive { " -k" } else { "" },
            if cache_off { ", cache off" } else { "" }
        );
        let group = r.cells.len() as f64 * BAR;
        let _ = writeln!(
            o,
            "<text x=\"{:.0}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
            LABEL - 8.0,
            y + group / 2.0,
            escape(&label)
        );
        for c in &r.cells {
            let v = c.rps.as_ref().map_or(0.0, |s| s.median);
            let w = (v / max * (WIDTH - LABEL - 70.0)).max(0.5);
            let name = series(&c.server, &c.cache);
            let color = color_of(servers, &name);
            let _ = writeln!(
                o,
                "<rect x=\"{LABEL}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{}: {v:.1} req/s</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" dominant-baseline=\"middle\">{v:.0}</text>",
                BAR - 2.0,
                escape(&name),
                LABEL + w + 4.0,
                y + BAR / 2.0 - 1.0
            );
            y += BAR;
        }
        y += 12.0;
    }
    o.push_str("</svg><ul class=\"legend\">");
    for s in servers {
        let _ = write!(o, "<li>{}{}</li>", swatch(servers, s), escape(s));
    }
    o.push_str("</ul></figure>\n");
}

fn cell_row(
    o: &mut String,
    case: &str,
    connections: u32,
    keepalive: bool,
    c: &Cell,
    servers: &[String],
) {
    let server = match &c.gateway {
        Some(g) => format!("{}+{g}", c.server),
        None => c.server.clone(),
    };
    let errors = match &c.note {
        Some(n) => format!("{} ({})", c.errors, escape(n)),
        None => c.errors.to_string(),
    };
    let _ = writeln!(
        o,
        "<tr><td class=\"l\">{}</td><td>{connections}</td><td class=\"l\">{}</td><td class=\"l\">{}{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{errors}</td></tr>",
        escape(case),
        if keepalive { "yes" } else { "no" },
        swatch(servers, &series(&c.server, &c.cache)),
        escape(&server),
        escape(&c.cache),
        c.rps.as_ref().map_or("–".to_owned(), |s| format!("{:.1}", s.median)),
        number(c.mb_per_s, 2),
        number(c.p50_ms, 3),
        number(c.p99_ms, 3),
        number(c.cpu_us_per_request, 1),
        if c.errors > 0 || c.note.is_some() { " class=\"err\"" } else { "" },
    );
}

/// A server variant's name: the server, and its cache when not on.
fn series(server: &str, cache: &str) -> String {
    match cache {
        "on" | "default" | "" => server.to_owned(),
        other => format!("{server} (cache {other})"),
    }
}

fn pair(p: &PageFigures) -> String {
    format!("{} / {}", number(p.p50_ms, 2), number(p.p99_ms, 2))
}

fn number(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.digits$}"))
}

fn color_of(servers: &[String], name: &str) -> &'static str {
    let i = servers.iter().position(|s| s == name).unwrap_or(0);
    COLORS[i % COLORS.len()]
}

fn swatch(servers: &[String], name: &str) -> String {
    format!(
        "<span class=\"swatch\" style=\"background:{}\"></span>",
        color_of(servers, name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_the_run_is_escaped_and_the_sections_are_drawn() {
        let mut r: SuiteReport =
            serde_json::from_str(include_str!("../tests/it/fixtures/report.json"))
                .expect("the fixture report parses");
        r.notes.push("<script>alert(1)</script>".to_owned());
        if let Some(s) = r.servers.first_mut() {
            s.program = "/opt/<b>tern</b>".to_owned();
        }
        let page = render(&r);
        assert!(
            !page.contains("<script>") && !page.contains("<b>tern"),
            "{page}"
        );
        assert!(page.contains("&lt;script&gt;"));
        for row in &r.rows {
            assert!(page.contains(&format!("id=\"section-{}\"", row.row.section)));
        }
        assert!(page.contains("<svg class=\"chart\" id=\"bars-"));
    }
}
