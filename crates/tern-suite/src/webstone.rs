//! The "webstone" section: the WebStone-SS seed experiment. Not bench
//! rows but replays: a workload [`Model`] (drawn from a site's access
//! logs, or the bundled news site, [`bundled_model`]) is played against each
//! server with `tern_bench::replay`, its users' sessions arriving at a
//! fixed rate, each page fetched as a browser fetches it. The site is the
//! model's files, written into the docroot under [`SITE_PREFIX`] at their
//! logged sizes; the model's dynamic files are served by each [`Program`]
//! the server can run: as static files of their logged size (the
//! static-only baseline); by the report's three Perl scripts (trivial, a
//! counter, a CPU-heavy search) as CGI, on every server, and in tern's
//! Perl engine (the same files, one kept interpreter); and by the suite's
//! "Hello!" programs through CGIplus, FastCGI (the responder beside the
//! server, or spawned by it) and WebAssembly. The table shows how the
//! script model changes the latency of every page, not only the scripted
//! ones: pages with no dynamic file are reported apart from those with
//! one.
//!
//! The registry's "webstone" rows ([`crate::row::Registry::webstone`])
//! carry one program each: they bring in the fixtures and the gateways,
//! and the suite's check of their URL tells which programs each server
//! can run; they are never measured as rows. The section then replays, round after
//! round, every server and way in turn, each round with the same seed for
//! all, and adds up each one's rounds.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use tern_bench::cpu::CpuSource;
use tern_bench::replay::{replay, ClassFigures, ReplayResult, ReplaySettings, Walk};
use tern_bench::{Arrival, Shard, StopHandle, Target, TlsSettings};
use tern_workload::materialize::{materialize, Cost};
use tern_workload::Model;

use crate::config::SuiteConfig;
use crate::report::{PageFigures, WebstoneReport, WebstoneRow};
use crate::row::{Program, RowSpec, Way};
use crate::server::RunningServer;

pub use crate::news::{model as bundled_model, NAME as BUNDLED_NAME};

/// The section's name.
pub const SECTION: &str = crate::row::WEBSTONE;

/// Where the model's files are in the docroot and on every server.
pub const SITE_PREFIX: &str = "/ws";

/// Connections a user opens at most (browsers: 6 per host).
const USER_CONNECTIONS: usize = 6;

/// Whether a page class has a dynamic file.
fn is_dynamic(page: &tern_workload::PageClass) -> bool {
    page.files.iter().any(|f| f.dynamic)
}

/// The model as replayed against the site served by `program`: every
/// static file under [`SITE_PREFIX`]; every dynamic one fetched from the
/// program's URL, with its query, or, for the static way, as its file
/// under the prefix (with GET, whatever was logged: a file takes no POST).
pub fn variant_model(model: &Model, program: Program) -> Model {
    let url = program.url();
    let mut m = model.clone();
    for f in m.pages.iter_mut().flat_map(|p| &mut p.files) {
        match (f.dynamic, &url) {
            (true, Some(url)) => {
                let query = f.path.find('?').map_or("", |i| &f.path[i..]);
                f.path = format!("{url}{query}");
            }
            (true, None) => {
                f.path = format!("{SITE_PREFIX}{}", f.path);
                if f.method != "HEAD" {
                    f.method = "GET".to_owned();
                }
            }
            (false, _) => f.path = format!("{SITE_PREFIX}{}", f.path),
        }
    }
    m
}

/// Writes the model's files (the dynamic ones too, as the static
/// baseline's files) into the docroot under [`SITE_PREFIX`], at their
/// logged sizes, with `tern_workload`'s materializer (which refuses paths
/// that would leave the directory). `Ok` holds notes for the files it
/// refused; `Err` is a note when the site could not be written.
pub(crate) fn write_site(
    model: &Model,
    suite_dir: &Path,
    docroot: &Path,
) -> Result<Vec<String>, String> {
    let staging = suite_dir.join("webstone-model");
    let done = materialize(model, &staging, Cost::Static).map_err(|e| e.to_string())?;
    let site = docroot.join(&SITE_PREFIX[1..]);
    fs::rename(staging.join("htdocs"), &site)
        .map_err(|e| format!("moving the site to {}: {e}", site.display()))?;
    open_up(&site).map_err(|e| format!("{}: {e}", site.display()))?;
    Ok(done
        .rejected
        .iter()
        .map(|r| {
            format!(
                "{SECTION}: {} not written ({}); its pages fail",
                r.target, r.reason
            )
        })
        .collect())
}

/// Makes the site readable by servers that drop to another user.
fn open_up(dir: &Path) -> std::io::Result<()> {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            open_up(&entry.path())?;
        } else if kind.is_file() {
            fs::set_permissions(entry.path(), fs::Permissions::from_mode(0o644))?;
        }
    }
    Ok(())
}

/// One server, one program: the model it replays and the rounds' result.
#[derive(Debug)]
struct Variant {
    server: usize,
    program: Program,
    model: Model,
    /// One per round.
    results: Vec<ReplayResult>,
    note: Option<String>,
}

/// The replay's settings for one run.
fn settings(config: &SuiteConfig, model: &Model, duration: Duration, seed: u64) -> ReplaySettings {
    ReplaySettings {
        sessions_per_second: config.webstone.sessions_per_second,
        arrival: Arrival::Poisson,
        think_scale: config.webstone.think_scale,
        walk: walk(model),
        duration,
        sessions: None,
        user_connections: USER_CONNECTIONS,
        timeout: config.timeout,
        seed,
        tls: TlsSettings::default(),
        shard: Shard::default(),
    }
}

/// The logged session classes, or walks of the transitions for a model
/// that has none.
fn walk(model: &Model) -> Walk {
    if model.sessions.is_empty() {
        Walk::Transitions
    } else {
        Walk::Sessions
    }
}

/// The section: every server and way the check passed (`rows` are the
/// section's rows, `broken[row][server]` why a server failed a row's
/// check), replayed round after round, each round with the same seed for
/// all, after a warm-up replay of `config.warmup`. Ways that failed the
/// check, servers found exited and replays that could not run get a note.
pub(crate) fn measure(
    config: &SuiteConfig,
    rows: &[RowSpec],
    servers: &mut [RunningServer],
    broken: &[Vec<Option<String>>],
    stop: &StopHandle,
    notes: &mut Vec<String>,
) -> WebstoneReport {
    let ws = &config.webstone;
    let mut variants = Vec::new();
    for (si, s) in servers.iter().enumerate() {
        for (ri, row) in rows.iter().enumerate() {
            let Some(program) = Program::of(row) else {
                continue;
            };
            if !s.spec().serves(row) {
                continue;
            }
            if let Some(why) = &broken[ri][si] {
                notes.push(format!(
                    "{SECTION}: {} {}: {why}; skipped",
                    s.spec().name(),
                    program.label()
                ));
                continue;
            }
            variants.push(Variant {
                server: si,
                program,
                model: variant_model(&ws.model, program),
                results: Vec::new(),
                note: None,
            });
        }
    }
    let total = variants.len() * config.rounds as usize;
    let mut done = 0;
    'rounds: for round in 1..=config.rounds {
        for v in &mut variants {
            if v.note.is_some() {
                continue;
            }
            if stop.is_stopped() {
                break 'rounds;
            }
            let s = &mut servers[v.server];
            if !s.is_running() {
                v.note = Some(format!("server exited: {}", s.log_tail()));
                continue;
            }
            match replay_once(config, s, v, round, stop) {
                Ok(r) => {
                    done += 1;
                    if !config.quiet {
                        eprintln!(
                            "[{done}/{total}] round {round}: {SECTION}: {} {}: {} pages, {} page errors, p50 {:.1} ms",
                            s.spec().name(),
                            v.program.label(),
                            r.pages.pages,
                            r.pages.errors,
                            r.pages.summary.p50_ms
                        );
                    }
                    v.results.push(r);
                }
                Err(e) => v.note = Some(e.to_string()),
            }
        }
    }
    let static_classes: Vec<String> = ws
        .model
        .pages
        .iter()
        .filter(|p| !is_dynamic(p))
        .map(|p| p.id.clone())
        .collect();
    let dynamic_classes: Vec<String> = ws
        .model
        .pages
        .iter()
        .filter(|p| is_dynamic(p))
        .map(|p| p.id.clone())
        .collect();
    let rows = variants
        .into_iter()
        .map(|v| {
            let spec = servers[v.server].spec();
            row(
                spec.name(),
                v.program,
                (v.program.way == Way::Cgi)
                    .then(|| spec.cgi_gateway())
                    .flatten()
                    .map(|g| g.label().to_owned()),
                &v.results,
                v.note,
                (&static_classes, &dynamic_classes),
            )
        })
        .collect();
    WebstoneReport {
        model: ws.model_name.clone(),
        method: format!(
            "tern bench's replay of the model: {} sessions/s (Poisson arrivals), {}, think times ×{}, up to {USER_CONNECTIONS} connections per user; per server and way {} round{} of {:.1} s after a {:.1} s warm-up, servers and ways in turn each round, every one with the round's seed; page latency from each page's intended start to its last byte; the dynamic files served by the report's three Perl scripts (trivial, a counter under a lock, a regular-expression search of a 4 MiB text) as CGI and in tern's Perl engine, and by the persistent ways' \"Hello!\" programs (the static way: files of their logged size); server CPU per request over all rounds, coarse at a light load (the kernel counts it in 10 ms ticks)",
            ws.sessions_per_second,
            match walk(&ws.model) {
                Walk::Sessions => "the logged session classes",
                Walk::Transitions => "walks of the transitions",
            },
            ws.think_scale,
            config.rounds,
            if config.rounds == 1 { "" } else { "s" },
            config.duration.as_secs_f64(),
            config.warmup.as_secs_f64()
        ),
        static_classes,
        dynamic_classes,
        rows,
    }
}

/// One round of one variant: a warm-up replay (discarded), then the
/// measured one with the server's CPU (its tree and the way's backend).
fn replay_once(
    config: &SuiteConfig,
    s: &RunningServer,
    v: &Variant,
    round: u32,
    stop: &StopHandle,
) -> Result<ReplayResult, tern_bench::Error> {
    let base = Target::parse(&format!("http://127.0.0.1:{}/", s.port()))?;
    let name = &config.webstone.model_name;
    if !config.warmup.is_zero() {
        let warm = settings(config, &v.model, config.warmup, 0);
        replay(v.model.clone(), name, &base, warm, stop, None)?;
    }
    let cpu = CpuSource::Trees(s.cpu_roots(v.program.way.feature()));
    let measured = settings(config, &v.model, config.duration, u64::from(round));
    replay(v.model.clone(), name, &base, measured, stop, Some(&cpu))
}

/// The figures of these pages together (of several classes).
fn group<'a>(classes: impl Iterator<Item = &'a ClassFigures>) -> PageFigures {
    let mut out = PageFigures::default();
    let mut latency = None;
    for c in classes {
        out.pages += c.pages;
        out.errors += c.errors;
        match &mut latency {
            None => latency = Some(c.latency.clone()),
            Some(h) => {
                // Same bounds, same precision: adding cannot fail.
                let _ = h.add(&c.latency);
            }
        }
    }
    if let Some(h) = latency.filter(|h| !h.is_empty()) {
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        out.p50_ms = Some(ms(0.5));
        out.p99_ms = Some(ms(0.99));
    }
    out
}

/// The table's row of one variant, its rounds merged into one result
/// (`ReplayResult::merge`: histograms add, so the percentiles are those of
/// every round's pages together).
fn row(
    server: &str,
    program: Program,
    gateway: Option<String>,
    rounds: &[ReplayResult],
    note: Option<String>,
    (statics, dynamics): (&[String], &[String]),
) -> WebstoneRow {
    let mut merged: Option<ReplayResult> = None;
    let mut note = note;
    for r in rounds {
        match &mut merged {
            None => merged = Some(r.clone()),
            Some(m) => {
                if let Err(e) = m.merge(r) {
                    note.get_or_insert_with(|| format!("rounds not merged: {e}"));
                }
            }
        }
    }
    let classes = |ids: &[String]| {
        group(
            merged
                .iter()
                .flat_map(|m| &m.classes)
                .filter(|c| ids.contains(&c.id)),
        )
    };
    let all = group(merged.iter().map(|m| &m.pages));
    let dropped = merged.as_ref().map_or(0, |m| m.sessions.dropped);
    let note = note.or_else(|| {
        if rounds.is_empty() {
            Some("not measured".to_owned())
        } else if all.pages == 0 {
            Some("no page fetched whole".to_owned())
        } else if dropped > 0 {
            Some(format!(
                "{dropped} sessions not started: too many under way (the server fell behind)"
            ))
        } else {
            None
        }
    });
    let counts = merged.as_ref().map(|m| &m.requests.counts);
    WebstoneRow {
        server: server.to_owned(),
        way: program.label(),
        gateway,
        sessions: merged.as_ref().map_or(0, |m| m.sessions.started),
        sessions_dropped: dropped,
        all,
        static_pages: classes(statics),
        dynamic_pages: classes(dynamics),
        responses: counts.map_or(0, |c| c.responses),
        request_errors: counts.map_or(0, |c| c.errors.total()),
        // Over the rounds that measured it (`merge` shares each round's
        // seconds over that round's responses only).
        cpu_us_per_request: merged
            .as_ref()
            .and_then(|m| m.requests.server_cpu.as_ref())
            .filter(|c| c.responses > 0)
            .map(|c| c.us_per_request),
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_way_rewrites_the_dynamic_files_only() {
        let m = bundled_model();
        let search = |m: &Model| {
            m.pages
                .iter()
                .flat_map(|p| &p.files)
                .find(|f| f.dynamic)
                .unwrap()
                .clone()
        };
        let logged = search(&m);
        assert!(logged.path.starts_with("/cgi-bin/search?q="), "{logged:?}");
        let query = &logged.path[logged.path.find('?').unwrap()..];
        let rows = crate::row::Registry::webstone();
        assert_eq!(rows.rows().len(), Program::ALL.len());
        for (program, row) in Program::ALL.into_iter().zip(rows.rows()) {
            let v = variant_model(&m, program);
            v.check().unwrap();
            let s = search(&v);
            match program.url() {
                Some(url) => assert_eq!(s.path, format!("{url}{query}")),
                None => assert_eq!(s.path, format!("/ws{}", logged.path)),
            }
            assert_eq!(s.bytes, logged.bytes);
            let front = &v.pages[0].files[0];
            assert_eq!(front.path, "/ws/index.html", "{program:?}");
            assert!(v
                .pages
                .iter()
                .flat_map(|p| &p.files)
                .filter(|f| !f.dynamic)
                .all(|f| f.path.starts_with("/ws/")));
            assert_eq!(Program::of(row), Some(program), "{row:?}");
            if let Some(url) = program.url() {
                assert!(url.starts_with(program.way.feature().prefix()), "{url}");
            }
        }
    }

    #[test]
    fn the_site_is_written_at_the_logged_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let docroot = dir.path().join("www");
        fs::create_dir(&docroot).unwrap();
        let m = bundled_model();
        let notes = write_site(&m, dir.path(), &docroot).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        for f in m.pages.iter().flat_map(|p| &p.files) {
            let path = f.path.split('?').next().unwrap();
            let on_disk = docroot.join("ws").join(&path[1..]);
            let meta = fs::metadata(&on_disk).unwrap_or_else(|e| panic!("{path}: {e}"));
            if !f.dynamic {
                assert_eq!(meta.len(), f.bytes, "{path}");
            }
            assert_eq!(meta.permissions().mode() & 0o777, 0o644);
        }
    }
}
