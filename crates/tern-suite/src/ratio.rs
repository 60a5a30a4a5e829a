//! The ratios a registry's [`Comparison`]s ask for, worked out from the
//! measured rows: for each server that measured both ways at the same load,
//! the median req/s of one over the other ("CGIplus over CGI"), written as a
//! footnote under the section's table.

use std::fmt::Write as _;

use crate::report::{Cell, Footnote, RowReport};
use crate::row::{Comparison, TlsMode};

/// One footnote per comparison with at least one ratio.
pub fn footnotes(comparisons: &[Comparison], rows: &[RowReport]) -> Vec<Footnote> {
    let mut out = Vec::new();
    for c in comparisons {
        // (server, its ratios in row order)
        let mut per_server: Vec<(String, Vec<String>)> = Vec::new();
        for r in rows
            .iter()
            .filter(|r| r.row.section == c.section && r.row.case == c.case)
        {
            let Some(base) = rows.iter().find(|b| {
                b.row.section == c.section
                    && b.row.case == c.baseline
                    && b.row.connections == r.row.connections
                    && b.row.keepalive == r.row.keepalive
                    && b.row.cache == r.row.cache
            }) else {
                continue;
            };
            for cell in &r.cells {
                let same = |b: &&Cell| b.server == cell.server && b.cache == cell.cache;
                let Some(ratio) = base.cells.iter().find(same).and_then(|b| ratio(cell, b)) else {
                    continue;
                };
                let load = format!(
                    "c={}{}{}",
                    r.row.connections,
                    if r.row.keepalive { ", keep-alive" } else { "" },
                    match (r.row.tls, r.row.keepalive) {
                        (TlsMode::Full, _) => ", full handshakes",
                        (TlsMode::Resumed, false) => ", resumed",
                        _ => "",
                    }
                );
                // Below 1 (TLS over plain: IIS had 0.04×), two decimals.
                let entry = if ratio < 1.0 {
                    format!("{ratio:.2}× ({load})")
                } else {
                    format!("{ratio:.1}× ({load})")
                };
                match per_server.iter_mut().find(|(s, _)| *s == cell.server) {
                    Some((_, list)) => list.push(entry),
                    None => per_server.push((cell.server.clone(), vec![entry])),
                }
            }
        }
        if per_server.is_empty() {
            continue;
        }
        let mut text = format!("req/s of {} over {}", c.case, c.baseline);
        if let Some(goal) = &c.goal {
            let _ = write!(text, " (goal: {goal})");
        }
        text.push_str(": ");
        for (i, (server, list)) in per_server.iter().enumerate() {
            if i > 0 {
                text.push_str("; ");
            }
            let _ = write!(text, "{server} {}", list.join(", "));
        }
        out.push(Footnote {
            section: c.section.clone(),
            text,
        });
    }
    out
}

/// `cell`'s median req/s over `base`'s, when both were measured and
/// answered.
fn ratio(cell: &Cell, base: &Cell) -> Option<f64> {
    let (a, b) = (cell.rps?.median, base.rps?.median);
    (a > 0.0 && b > 0.0).then(|| a / b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Registry;
    use crate::SpreadFigures;

    fn cell(server: &str, rps: Option<f64>) -> Cell {
        Cell {
            server: server.to_owned(),
            cache: "on".to_owned(),
            gateway: None,
            rps: rps.map(|r| SpreadFigures {
                median: r,
                min: r,
                max: r,
            }),
            mb_per_s: None,
            p50_ms: None,
            p99_ms: None,
            server_cpu_s: None,
            cpu_us_per_request: None,
            cpu_us_per_handshake: None,
            errors: 0,
            responses: 0,
            note: None,
        }
    }

    #[test]
    fn cgiplus_over_cgi_per_server_and_load() {
        let mut registry = Registry::persistent();
        registry.retain_matching("\"Hello!\" CGI");
        let rows: Vec<RowReport> = registry
            .rows()
            .iter()
            .map(|row| {
                let plus = row.case.ends_with("CGIplus");
                let rps = if plus { 4000.0 } else { 200.0 } * f64::from(row.connections);
                let mut cells = vec![cell("tern", Some(rps))];
                if !plus {
                    // nginx measured CGI only: no ratio for it.
                    cells.push(cell("nginx", Some(150.0)));
                }
                if row.connections == 10 && row.keepalive && plus {
                    cells[0].rps = None; // not measured: left out
                }
                RowReport {
                    row: row.clone(),
                    cells,
                }
            })
            .collect();
        let notes = footnotes(registry.comparisons(), &rows);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(notes[0].section, "persistent");
        assert_eq!(
            notes[0].text,
            "req/s of \"Hello!\" CGIplus over \"Hello!\" CGI: tern 20.0× (c=1), 20.0× (c=10), 20.0× (c=1, keep-alive)"
        );
        assert!(footnotes(registry.comparisons(), &[]).is_empty());
    }
}
