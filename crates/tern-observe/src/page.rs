//! `/status`: the status page, as JSON (`?json`) and as one self-contained
//! HTML page (inline styles and SVG charts, no script, no external asset)
//! that refreshes itself. What it shows: uptime, version, configuration
//! generation; requests and bytes per second; the connection scoreboard by
//! worker thread; every pool with a row per worker (php-fpm's `?full`);
//! the file cache; the activity history as charts; the last requests.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde_json::{json, Value};
use tern_handler::PoolReport;

use crate::activity::Minute;
use crate::chart::{self, escape as esc, Chart, Series};
use crate::metrics::{Recent, Snapshot};
use crate::parts::Parts;
use crate::process::{self, Process};

/// Everything the page shows.
#[derive(Debug)]
pub struct Status<'a> {
    /// The server's parts.
    pub parts: &'a Parts,
    /// The request metrics summed.
    pub snapshot: &'a Snapshot,
    /// tern's process.
    pub process: Option<Process>,
    /// The activity history: one entry per minute, oldest first, the last
    /// being the minute now running.
    pub minutes: &'a [Minute],
    /// The Unix minute of `minutes[0]`.
    pub first_minute: u64,
    /// The last requests, newest first.
    pub recent: &'a [Recent],
    /// Whether the activity history is kept in a file (else in memory).
    pub persistent: bool,
}

impl Status<'_> {
    /// Seconds since the server started.
    fn uptime(&self) -> f64 {
        SystemTime::now()
            .duration_since(self.parts.started)
            .map_or(0.0, |d| d.as_secs_f64())
    }

    /// The last whole minute (the one before the running one).
    fn last_minute(&self) -> Minute {
        let n = self.minutes.len();
        if n >= 2 {
            self.minutes[n - 2]
        } else {
            Minute::default()
        }
    }

    /// The page as JSON.
    pub fn json(&self) -> Value {
        let last = self.last_minute();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "started": crate::unix_seconds(self.parts.started),
            "uptime_seconds": self.uptime(),
            "config": {
                "generation": self.parts.generation,
                "loaded": crate::unix_seconds(self.parts.loaded),
            },
            "workers": self.parts.workers,
            "listeners": self.parts.listeners,
            "requests": {
                "total": self.snapshot.requests(),
                "active": self.snapshot.active(),
                "last_minute": last.total(),
                "per_second": last.total() as f64 / 60.0,
                "bytes_per_second": last.bytes as f64 / 60.0,
                "last_minute_5xx": last.requests[4],
                "last_minute_p99_seconds": last.quantile(0.99),
            },
            "connections": {
                "open": self.snapshot.open(),
                "threads": self.snapshot.threads,
            },
            "pools": self.parts.pools.iter().map(pool_json).collect::<Vec<_>>(),
            "cache": self.parts.cache,
            "access_log": self.parts.access_log,
            "process": self.process,
            "activity": {
                "persistent": self.persistent,
                "first_minute": self.first_minute,
                "minutes": self.minutes,
            },
            "recent": self.recent,
        })
    }

    /// The page as HTML, refreshing every `refresh` seconds.
    pub fn html(&self, refresh: u32) -> String {
        let mut h = String::with_capacity(64 * 1024);
        let last = self.last_minute();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta http-equiv=\"refresh\" content=\"{refresh}\">\
             <meta name=\"viewport\" content=\"width=device-width\">\
             <title>tern status</title><style>{STYLE}</style></head><body>\n"
        );
        let _ = writeln!(
            h,
            "<h1>tern {}</h1><p class=\"sub\">up {}, configuration generation {} loaded {} ago, {} worker threads, listening on {}</p>",
            env!("CARGO_PKG_VERSION"),
            span(self.uptime()),
            self.parts.generation,
            span(
                SystemTime::now()
                    .duration_since(self.parts.loaded)
                    .map_or(0.0, |d| d.as_secs_f64())
            ),
            self.parts.workers,
            esc(&self.parts.listeners.join(", ")),
        );
        // The figures at a glance.
        h.push_str("<div class=\"tiles\">");
        let p99 = last
            .quantile(0.99)
            .map_or_else(|| "–".to_owned(), |q| chart::format_value(q, "s"));
        for (name, value) in [
            ("requests/s", format!("{:.1}", last.total() as f64 / 60.0)),
            (
                "bytes/s",
                chart::format_value(last.bytes as f64 / 60.0, "B"),
            ),
            ("p99 latency", p99),
            ("5xx last minute", last.requests[4].to_string()),
            ("in flight", self.snapshot.active().to_string()),
            ("connections", self.snapshot.open().to_string()),
            ("requests total", self.snapshot.requests().to_string()),
        ] {
            let _ = write!(
                h,
                "<div class=\"tile\"><b>{}</b><span>{name}</span></div>",
                esc(&value)
            );
        }
        h.push_str("</div>\n");
        self.charts(&mut h);
        self.scoreboard(&mut h);
        self.pools(&mut h);
        self.cache_and_process(&mut h);
        self.recent_table(&mut h);
        h.push_str(
            "<p class=\"sub\">Also: <a href=\"?json\">this page as JSON</a>, \
             <a href=\"metrics\">metrics</a>, <a href=\"requests\">requests</a>, \
             <a href=\"watch?text\">watch</a> (the live trace; server-sent events without <code>?text</code>), \
             <a href=\"readyz\">readyz</a>. History: <a href=\"?hours=1\">1 h</a> \
             <a href=\"?hours=24\">24 h</a> <a href=\"?hours=168\">7 days</a> \
             <a href=\"?hours=672\">28 days</a>.</p>\n</body></html>\n",
        );
        h
    }

    fn charts(&self, h: &mut String) {
        let n = self.minutes.len();
        let col = |f: &dyn Fn(&Minute) -> f64| self.minutes.iter().map(f).collect::<Vec<f64>>();
        let total = col(&|m| m.total() as f64);
        let errors = col(&|m| f64::from(m.requests[4]));
        let clients = col(&|m| f64::from(m.requests[3]));
        let bytes = col(&|m| m.bytes as f64);
        let p99 = col(&|m| m.quantile(0.99).unwrap_or(f64::NAN));
        let p50 = col(&|m| m.quantile(0.5).unwrap_or(f64::NAN));
        let start = self.first_minute * 60;
        let kept = if self.persistent {
            "kept across restarts"
        } else {
            "in memory only"
        };
        let _ = write!(
            h,
            "<h2>Activity, per minute</h2><p class=\"sub\">the last {} ({kept})</p><div class=\"charts\">",
            span(n as f64 * 60.0)
        );
        let charts = [
            Chart {
                title: "Requests per minute",
                unit: "req/min",
                start,
                step: 60,
                series: vec![
                    Series {
                        label: "all",
                        color: "#2a7ab0",
                        points: &total,
                    },
                    Series {
                        label: "4xx",
                        color: "#d19a00",
                        points: &clients,
                    },
                    Series {
                        label: "5xx",
                        color: "#c0392b",
                        points: &errors,
                    },
                ],
                width: 560,
                height: 220,
            },
            Chart {
                title: "Bytes sent per minute",
                unit: "bytes/min",
                start,
                step: 60,
                series: vec![Series {
                    label: "response bodies",
                    color: "#27ae60",
                    points: &bytes,
                }],
                width: 560,
                height: 220,
            },
            Chart {
                title: "Latency per minute",
                unit: "s",
                start,
                step: 60,
                series: vec![
                    Series {
                        label: "p99",
                        color: "#8e44ad",
                        points: &p99,
                    },
                    Series {
                        label: "p50",
                        color: "#16a085",
                        points: &p50,
                    },
                ],
                width: 560,
                height: 220,
            },
        ];
        for c in &charts {
            let _ = write!(h, "<figure>{}</figure>", chart::svg(c));
        }
        h.push_str("</div>\n");
    }

    fn scoreboard(&self, h: &mut String) {
        h.push_str(
            "<h2>Connections</h2><table><tr><th>worker thread</th><th>open</th>\
             <th>active</th><th>idle (keep-alive)</th><th>accepted</th><th>refused</th></tr>",
        );
        let mut threads: Vec<_> = self.snapshot.threads.iter().collect();
        threads.sort_by(|a, b| a.thread.cmp(&b.thread));
        for t in threads {
            let (open, active) = t.open_active();
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{open}</td><td>{active}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&t.thread),
                open - active,
                t.accepted,
                t.refused
            );
        }
        h.push_str("</table>\n");
    }

    fn pools(&self, h: &mut String) {
        h.push_str("<h2>Worker pools</h2>");
        if self.parts.pools.is_empty() {
            h.push_str("<p class=\"sub\">No route has a worker pool.</p>\n");
            return;
        }
        h.push_str(
            "<table><tr><th>pool</th><th>kind</th><th>busy</th><th>idle</th><th>starting</th>\
             <th>queued</th><th>min ready</th><th>max</th><th>requests</th><th>spawned</th>\
             <th>crashed</th><th>recycled</th><th>state</th></tr>",
        );
        for p in &self.parts.pools {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&p.name),
                p.kind,
                p.busy,
                p.idle,
                p.starting,
                p.queued,
                p.min_ready,
                p.max,
                p.requests,
                p.spawned,
                p.crashed,
                p.recycled_idle + p.recycled_requests + p.recycled_age,
                if p.backing_off { "backing off" } else { "ok" },
            );
        }
        h.push_str("</table>\n");
        let workers: usize = self.parts.pools.iter().map(|p| p.workers.len()).sum();
        if workers == 0 {
            return;
        }
        h.push_str(
            "<h3>Workers</h3><table><tr><th>pool</th><th>pid</th><th>state</th><th>requests</th>\
             <th>age</th><th>current request</th><th>for</th><th>last request took</th>\
             <th>CPU</th><th>memory</th></tr>",
        );
        for p in &self.parts.pools {
            for w in &p.workers {
                let proc = w.pid.and_then(|pid| process::of(pid).ok());
                let (target, age) = match &w.current {
                    Some((t, d)) => (esc(t), span(d.as_secs_f64())),
                    None => (String::new(), String::new()),
                };
                let _ = write!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"t\">{target}</td>\
                     <td>{age}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&p.name),
                    w.pid.map_or_else(|| "–".to_owned(), |p| p.to_string()),
                    w.state,
                    w.requests,
                    span(w.age.as_secs_f64()),
                    w.last_duration
                        .map_or_else(String::new, |d| chart::format_value(d.as_secs_f64(), "s")),
                    proc.map_or_else(String::new, |p| format!(
                        "{:.2} s",
                        p.cpu_user + p.cpu_system
                    )),
                    proc.map_or_else(String::new, |p| chart::format_value(
                        p.resident_bytes as f64,
                        "B"
                    )),
                );
            }
        }
        h.push_str("</table>\n");
    }

    fn cache_and_process(&self, h: &mut String) {
        if let Some(c) = &self.parts.cache {
            let asked = c.hits + c.misses;
            let ratio = if asked == 0 {
                "–".to_owned()
            } else {
                format!("{:.1} %", c.hits as f64 * 100.0 / asked as f64)
            };
            let _ = writeln!(
                h,
                "<h2>File cache</h2><table><tr><th>hits</th><th>misses</th><th>hit ratio</th>\
                 <th>evictions</th><th>entries</th><th>size</th></tr><tr><td>{}</td><td>{}</td>\
                 <td>{ratio}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>",
                c.hits,
                c.misses,
                c.evictions,
                c.entries,
                chart::format_value(c.bytes as f64, "B")
            );
        }
        if let Some(p) = &self.process {
            let _ = writeln!(
                h,
                "<h2>Process</h2><table><tr><th>CPU user</th><th>CPU system</th><th>resident memory</th>\
                 <th>threads</th><th>open descriptors</th></tr><tr><td>{:.2} s</td><td>{:.2} s</td>\
                 <td>{}</td><td>{}</td><td>{} of {}</td></tr></table>",
                p.cpu_user,
                p.cpu_system,
                chart::format_value(p.resident_bytes as f64, "B"),
                p.threads,
                p.open_fds,
                p.max_fds
            );
        }
        if let Some(l) = &self.parts.access_log {
            let _ = writeln!(
                h,
                "<h2>Access log</h2><p>{}: {} lines written, {} lost to failed writes</p>",
                esc(&l.path),
                l.lines,
                l.lost
            );
        }
    }

    fn recent_table(&self, h: &mut String) {
        const SHOWN: usize = 20;
        let _ = write!(
            h,
            "<h2>Last requests</h2><p class=\"sub\">the newest {} of {} kept; all at <a href=\"requests\">requests</a></p>",
            self.recent.len().min(SHOWN),
            self.recent.len()
        );
        h.push_str(
            "<table><tr><th>id</th><th>client</th><th>request</th><th>route</th><th>status</th>\
             <th>bytes</th><th>waited</th><th>first byte</th><th>total</th><th>worker</th></tr>",
        );
        for r in self.recent.iter().take(SHOWN) {
            let secs = |d: Option<f64>| d.map_or_else(String::new, |d| chart::format_value(d, "s"));
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"t\">{} {}</td><td>{} {} ({})</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r.id,
                r.client.map_or_else(String::new, |c| c.to_string()),
                r.method,
                esc(&r.target),
                esc(&r.site),
                esc(&r.route),
                r.handler,
                r.status,
                r.bytes,
                secs(r.queue_wait),
                secs(r.first_byte),
                chart::format_value(r.total, "s"),
                r.worker.map_or_else(String::new, |p| p.to_string()),
            );
        }
        h.push_str("</table>\n");
    }
}

/// A pool as JSON (durations in seconds).
fn pool_json(p: &PoolReport) -> Value {
    json!({
        "name": p.name,
        "kind": p.kind,
        "busy": p.busy,
        "idle": p.idle,
        "starting": p.starting,
        "queued": p.queued,
        "min_ready": p.min_ready,
        "max": p.max,
        "spawned": p.spawned,
        "spawn_failures": p.spawn_failures,
        "crashed": p.crashed,
        "recycled": {
            "idle": p.recycled_idle,
            "requests": p.recycled_requests,
            "age": p.recycled_age,
        },
        "ended": p.ended,
        "requests": p.requests,
        "failures": p.failures.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "backing_off": p.backing_off,
        "queue_wait": {
            "bounds": tern_handler::QUEUE_WAIT_BUCKETS,
            "counts": p.queue_wait.counts,
            "sum_seconds": p.queue_wait.sum.as_secs_f64(),
        },
        "workers": p.workers.iter().map(|w| json!({
            "pid": w.pid,
            "state": w.state,
            "requests": w.requests,
            "age_seconds": w.age.as_secs_f64(),
            "current": w.current.as_ref().map(|(t, d)| json!({"target": t, "seconds": d.as_secs_f64()})),
            "last_duration_seconds": w.last_duration.map(|d| d.as_secs_f64()),
            "process": w.pid.and_then(|pid| process::of(pid).ok()),
        })).collect::<Vec<_>>(),
    })
}

/// A span of seconds in words: `42 s`, `5 min`, `3 h 20 min`, `2 days 4 h`.
fn span(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} days {} h", s / 86_400, s % 86_400 / 3600),
    }
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}\
h1{margin:0}h2{margin:1.4em 0 .3em;font-size:1.15em}h3{font-size:1em}\
.sub{color:#666;margin:.2em 0}\
.tiles{display:flex;flex-wrap:wrap;gap:.6em;margin:1em 0}\
.tile{border:1px solid #ddd;border-radius:6px;padding:.5em .8em;min-width:7em}\
.tile b{display:block;font-size:1.4em}.tile span{color:#666;font-size:.85em}\
.charts{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}\
table{border-collapse:collapse;font-size:.9em}td,th{border-bottom:1px solid #eee;padding:.25em .6em;text-align:right}\
th{color:#555;font-weight:600}td.t{text-align:left;max-width:30em;overflow-wrap:anywhere}\
td:first-child,th:first-child{text-align:left}\
@media (prefers-color-scheme:dark){body{background:#181a1b;color:#ddd}.tile{border-color:#444}td,th{border-color:#333}th,.sub,.tile span{color:#aaa}}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_as_words() {
        assert_eq!(span(42.0), "42 s");
        assert_eq!(span(600.0), "10 min");
        assert_eq!(span(3.0 * 3600.0 + 1200.0), "3 h 20 min");
        assert_eq!(span(2.0 * 86400.0 + 4.0 * 3600.0), "2 days 4 h");
    }
}
