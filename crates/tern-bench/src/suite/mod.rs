//! `tern suite`: the founding reports' tables in one command. It writes a
//! temporary docroot ([`workdir`], compiling the CGI programs with `cc`),
//! makes the gateways' backends ready ([`gateway`], [`backend`]: fcgiwrap
//! when nginx is to run CGI; the C FastCGI responder and php-fpm, started
//! for each server that uses them), starts tern and the requested peers on
//! loopback ([`server`], [`peer`]), checks that each serves every row's URL
//! with the expected length, then measures each row ([`row`]) on each
//! server in turn (A B C, A B C, ... so that drift
//! falls on all alike), with the server's CPU time (its process tree, plus
//! the trees of the backends it uses for the row), and prints one table per
//! section ([`table`]), with the ratios the registry asks for ([`ratio`]).
//!
//! Every cell is a bounded run; every started server is stopped by process
//! group at the end, on error, on panic (drop guards) and on Ctrl-C.

pub mod backend;
pub mod fcgi_app;
pub mod fcgiwrap;
pub mod fetch;
pub mod gateway;
pub mod peer;
pub mod php;
pub mod ratio;
pub mod row;
pub mod server;
pub mod table;
pub mod workdir;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cli::SuiteArgs;
use crate::compare::Spread;
use crate::cpu::CpuSource;
use crate::driver::{run as run_plan, RunControl, StopHandle};
use crate::histogram::Stats;
use crate::plan::{Load, Plan, PlanSettings, Reuse, Stop, Target, Windows};
use crate::report::human::MB;
use crate::Error;

use gateway::Backends;
use peer::PeerKind;
use row::{Feature, LengthCheck, Registry, RowSpec};
use server::{RunningServer, ServerKind, ServerSpec};
use workdir::Workdir;

/// Everything a suite run needs.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// The tern binary, or `None` to measure only peers.
    pub tern: Option<PathBuf>,
    /// Peers to start (those not installed are skipped with a note).
    pub peers: Vec<PeerKind>,
    /// Rows and fixtures.
    pub registry: Registry,
    /// Rounds (cells show medians).
    pub rounds: u32,
    /// Measured time per cell.
    pub duration: Duration,
    /// Warm-up per cell.
    pub warmup: Duration,
    /// Request timeout.
    pub timeout: Duration,
    /// Directories searched for peer executables.
    pub search_path: Vec<PathBuf>,
    /// No progress lines on stderr.
    pub quiet: bool,
}

impl SuiteConfig {
    /// Defaults: tern from `tern`, no peers, the seed rows (static, CGI,
    /// persistent, engines), one round of 5 s after a 1 s warm-up.
    pub fn new(tern: Option<PathBuf>) -> SuiteConfig {
        SuiteConfig {
            tern,
            peers: Vec::new(),
            registry: Registry::seed(),
            rounds: 1,
            duration: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            search_path: default_search_path(),
            quiet: false,
        }
    }

    /// From the command line.
    pub fn from_args(a: &SuiteArgs) -> Result<SuiteConfig, Error> {
        let tern = if a.no_tern {
            None
        } else {
            match &a.tern {
                Some(p) => Some(p.clone()),
                None => Some(
                    std::env::current_exe()
                        .map_err(|e| Error::system("finding this executable", e))?,
                ),
            }
        };
        let mut c = SuiteConfig::new(tern);
        for name in &a.peers {
            if name == "all" {
                for p in PeerKind::ALL {
                    if !c.peers.contains(&p) {
                        c.peers.push(p);
                    }
                }
                continue;
            }
            let p = PeerKind::parse(name).ok_or_else(|| {
                Error::usage(format!(
                    "unknown peer {name:?} (nginx, lighttpd, apache2, h2o, caddy, all)"
                ))
            })?;
            if !c.peers.contains(&p) {
                c.peers.push(p);
            }
        }
        if c.tern.is_none() && c.peers.is_empty() {
            return Err(Error::usage("--no-tern needs --peers"));
        }
        if a.rounds == 0 {
            return Err(Error::usage("--rounds must be at least 1"));
        }
        c.rounds = a.rounds;
        if a.quick {
            c.duration = Duration::from_millis(300);
            c.warmup = Duration::from_millis(100);
            c.timeout = Duration::from_secs(5);
        }
        if let Some(d) = a.duration {
            if d.is_zero() {
                return Err(Error::usage("--duration must be more than 0"));
            }
            c.duration = d;
        }
        if let Some(w) = a.warmup {
            c.warmup = w;
        }
        if !a.sections.is_empty() {
            let known: Vec<String> = c
                .registry
                .sections()
                .into_iter()
                .map(str::to_owned)
                .collect();
            for name in &a.sections {
                if !known.contains(name) {
                    return Err(Error::usage(format!(
                        "unknown section {name:?} ({})",
                        known.join(", ")
                    )));
                }
            }
            c.registry.retain_sections(&a.sections);
        }
        if let Some(text) = &a.only {
            c.registry.retain_matching(text);
            if c.registry.rows().is_empty() {
                return Err(Error::usage(format!("no row matches {text:?}")));
            }
        }
        c.quiet = a.quiet;
        Ok(c)
    }
}

/// `PATH`, then the sbin directories where Debian puts servers.
pub fn default_search_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for d in ["/usr/local/sbin", "/usr/sbin", "/sbin"] {
        let d = PathBuf::from(d);
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// The suite's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteReport {
    /// Machine and method, one line each.
    pub about: Vec<String>,
    /// The servers that ran, with their variant.
    pub servers: Vec<ServerInfo>,
    /// One entry per row, in registry order.
    pub rows: Vec<RowReport>,
    /// Skipped servers and other remarks.
    pub notes: Vec<String>,
    /// Remarks printed under one section's table.
    #[serde(default)]
    pub footnotes: Vec<Footnote>,
}

/// A remark on one section's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footnote {
    /// The section ("cgi").
    pub section: String,
    /// The remark.
    pub text: String,
}

/// A server variant that took part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// "tern", "nginx", ...
    pub name: String,
    /// "on", "off" or "default".
    pub cache: String,
    /// Its executable.
    pub program: String,
    /// Process id of its main process (also its process group), which was
    /// stopped at the end.
    pub pid: u32,
    /// Its loopback port.
    pub port: u16,
    /// The backends it used (its own FastCGI responder and php-fpm, stopped
    /// with it; nginx's fcgiwrap), whose CPU counted with its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendInfo>,
}

/// A backend process a server used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// "php-fpm", "fcgi-app", "fcgiwrap".
    pub name: String,
    /// Process id of its main process (also its process group).
    pub pid: u32,
}

/// The cells of one row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowReport {
    /// What was measured.
    pub row: RowSpec,
    /// One cell per server variant that serves the row.
    pub cells: Vec<Cell>,
}

/// One server's figures in a row (medians over rounds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Server name.
    pub server: String,
    /// Its cache variant label.
    pub cache: String,
    /// How it ran a gateway row ("fcgiwrap", "mod_cgi", "mod_cgid"), shown
    /// beside the server's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Requests per second, median with min and max over rounds.
    pub rps: Option<SpreadFigures>,
    /// MB/s (2^20 bytes).
    pub mb_per_s: Option<f64>,
    /// Corrected p50, ms.
    pub p50_ms: Option<f64>,
    /// Corrected p99, ms.
    pub p99_ms: Option<f64>,
    /// Server CPU seconds (user + system) in the measured window.
    pub server_cpu_s: Option<f64>,
    /// Server CPU µs per request.
    pub cpu_us_per_request: Option<f64>,
    /// Failed requests over all rounds.
    pub errors: u64,
    /// Responses over all rounds.
    pub responses: u64,
    /// Why the cell is empty or doubtful.
    pub note: Option<String>,
}

/// Median, min and max.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpreadFigures {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

/// The figures of one cell run.
#[derive(Debug, Clone, Copy)]
struct CellRun {
    rps: f64,
    mbps: f64,
    p50: f64,
    p99: f64,
    cpu_s: Option<f64>,
    cpu_us: Option<f64>,
    errors: u64,
    responses: u64,
}

/// Runs the suite. Servers that are not installed or do not start are
/// skipped with a note; an `Err` means the suite itself could not run.
pub fn run(config: &SuiteConfig, stop: &StopHandle) -> Result<SuiteReport, Error> {
    let mut notes = Vec::new();
    let mut registry = config.registry.clone();
    let cc = find_program(&config.search_path, "cc");
    let work = Workdir::create(&registry.fixtures_in_use(), cc.as_deref())?;
    for u in work.unbuilt() {
        let skipped = registry.remove_rows_fetching(&format!("/{}", u.path));
        notes.push(format!("{}: {}; its {skipped} rows skipped", u.path, u.why));
    }
    // The servers to run, then the backends their gateways need.
    let mut kinds: Vec<(ServerKind, PathBuf)> = Vec::new();
    if let Some(bin) = &config.tern {
        kinds.push((
            ServerKind::Tern {
                binary: bin.clone(),
            },
            bin.clone(),
        ));
    }
    for &p in &config.peers {
        match p.find(&config.search_path) {
            Some(program) => kinds.push((ServerKind::Peer(p), program)),
            None => notes.push(format!("{}: not installed, skipped", p.name())),
        }
    }
    let wanted = registry.gateways();
    let just_kinds: Vec<ServerKind> = kinds.iter().map(|(k, _)| k.clone()).collect();
    let (backends, lost) =
        Backends::start(&wanted, &just_kinds, &work, &config.search_path, &mut notes);
    for l in lost {
        let skipped = registry.remove_rows_needing(l.feature);
        notes.push(format!(
            "{}; its {skipped} {} rows skipped",
            l.why,
            l.feature.label()
        ));
    }
    let wanted = registry.gateways();

    let mut candidates: Vec<(ServerSpec, PathBuf)> = Vec::new();
    for (kind, program) in &kinds {
        if let ServerKind::Peer(p) = kind {
            // Features some peer offers but this one does not: say so once.
            let missing: Vec<&str> = wanted
                .iter()
                .filter(|&&f| !p.offers(f) && PeerKind::ALL.iter().any(|q| q.offers(f)))
                .map(|f| f.label())
                .collect();
            if !missing.is_empty() {
                notes.push(format!(
                    "{}: no {}; those rows skipped",
                    p.name(),
                    missing.join(", no ")
                ));
            }
        }
        let available = backends.available(&wanted, kind);
        for spec in ServerSpec::variants(kind.clone()) {
            candidates.push((spec.with_features(&available), program.clone()));
        }
    }

    // A variant that serves none of the rows left is not started.
    candidates.retain(|(spec, _)| registry.rows().iter().any(|r| spec.serves(r)));

    // Start everything first; each row then visits the servers in turn.
    let mut servers: Vec<RunningServer> = Vec::new();
    let mut infos = Vec::new();
    for (spec, program) in &candidates {
        if stop.is_stopped() {
            break;
        }
        match RunningServer::start(spec, program, &work, &backends) {
            Ok(s) => {
                infos.push(ServerInfo {
                    name: spec.name().to_owned(),
                    cache: spec.cache_label().to_owned(),
                    program: program.display().to_string(),
                    pid: s.pid(),
                    port: s.port(),
                    backends: s
                        .backends()
                        .into_iter()
                        .map(|(name, pid)| BackendInfo {
                            name: name.to_owned(),
                            pid,
                        })
                        .collect(),
                });
                servers.push(s);
            }
            Err(note) => notes.push(format!(
                "{} (cache {}): {note}; skipped",
                spec.name(),
                spec.cache_label()
            )),
        }
    }
    let specs: Vec<&ServerSpec> = servers.iter().map(RunningServer::spec).collect();
    let mut footnotes = footnotes(&registry, &specs);

    let rows = registry.rows();
    // A server that answers a row's URL wrongly gets a note instead of figures.
    let mut broken: Vec<Vec<Option<String>>> = vec![vec![None; servers.len()]; rows.len()];
    for (ri, row) in rows.iter().enumerate() {
        for (si, s) in servers.iter().enumerate() {
            if s.spec().serves(row) && !stop.is_stopped() {
                broken[ri][si] = check(row, s, config)?;
            }
        }
    }

    let total: usize = rows
        .iter()
        .enumerate()
        .map(|(ri, r)| {
            (0..servers.len())
                .filter(|&si| servers[si].spec().serves(r) && broken[ri][si].is_none())
                .count()
        })
        .sum::<usize>()
        * config.rounds as usize;
    let mut runs: Vec<Vec<Vec<CellRun>>> = vec![vec![Vec::new(); servers.len()]; rows.len()];
    let mut done = 0;
    'rounds: for round in 1..=config.rounds {
        for (ri, row) in rows.iter().enumerate() {
            for si in 0..servers.len() {
                if !servers[si].spec().serves(row) || broken[ri][si].is_some() {
                    continue;
                }
                if stop.is_stopped() {
                    break 'rounds;
                }
                let s = &mut servers[si];
                if !s.is_running() {
                    broken[ri][si] = Some(format!("server exited: {}", s.log_tail()));
                    continue;
                }
                let cell = measure(row, s, config, stop)?;
                done += 1;
                if !config.quiet {
                    eprintln!(
                        "[{done}/{total}] round {round}: {}: {} — {} (cache {}): {:.1} req/s, {} errors",
                        row.section,
                        row.name(),
                        s.spec().name(),
                        s.spec().cache_label(),
                        cell.rps,
                        cell.errors
                    );
                }
                runs[ri][si].push(cell);
            }
        }
    }
    if stop.is_stopped() {
        notes.push("interrupted: cells cover the runs finished until then".to_owned());
    }

    let mut report_rows = Vec::with_capacity(rows.len());
    for (ri, row) in rows.iter().enumerate() {
        let mut cells = Vec::new();
        for (si, s) in servers.iter().enumerate() {
            if s.spec().serves(row) {
                let mut cell = summarise(s.spec(), &runs[ri][si], broken[ri][si].clone());
                if row.needs.is_cgi() {
                    cell.gateway = s.spec().cgi_gateway().map(|g| g.label().to_owned());
                }
                cells.push(cell);
            }
        }
        report_rows.push(RowReport {
            row: row.clone(),
            cells,
        });
    }
    drop(servers); // stops every server
    drop(backends); // and then nginx's fcgiwrap
    footnotes.extend(ratio::footnotes(registry.comparisons(), &report_rows));
    Ok(SuiteReport {
        about: about(config, &wanted),
        servers: infos,
        rows: report_rows,
        notes,
        footnotes,
    })
}

fn find_program(search: &[PathBuf], name: &str) -> Option<PathBuf> {
    search.iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// The CPU caveat of gateways whose children nobody reaps.
fn footnotes(registry: &Registry, servers: &[&ServerSpec]) -> Vec<Footnote> {
    let mut out = Vec::new();
    for section in registry.sections() {
        let escaping: Vec<String> = servers
            .iter()
            .filter(|s| {
                registry
                    .rows()
                    .iter()
                    .any(|r| r.section == section && r.needs.is_cgi() && s.serves(r))
            })
            .filter_map(|s| {
                let g = s.cgi_gateway()?;
                g.children_cpu_escapes()
                    .then(|| format!("{}+{}", s.name(), g.label()))
            })
            .collect();
        if !escaping.is_empty() {
            out.push(Footnote {
                section: section.to_owned(),
                text: format!(
                    "server CPU of {} leaves out the CGI programs themselves: fcgiwrap's workers and Apache's cgid ignore SIGCHLD and never wait() for their children, so the children's CPU reaches no parent's cutime and escapes the process-tree count (peer-baseline.md §2.6); tern and lighttpd reap theirs, so their figures include the programs",
                    escaping.join(" and ")
                ),
            });
        }
    }
    out
}

fn target(row: &RowSpec, s: &RunningServer) -> Result<Target, Error> {
    Target::parse(&format!("http://127.0.0.1:{}{}", s.port(), row.path))
}

/// Fetches the row's URL once; `Some(note)` when the answer is not a 200 of
/// the expected length.
fn check(row: &RowSpec, s: &RunningServer, config: &SuiteConfig) -> Result<Option<String>, Error> {
    let settings = PlanSettings {
        stop: Stop::Count(1),
        timeout: config.timeout,
        ..PlanSettings::default()
    };
    let r = run_plan(
        &Plan::new(vec![target(row, s)?], settings)?,
        &RunControl::default(),
    )?;
    let status = r.counts.status.keys().next().copied();
    let fits = |len: u64| row.length.accepts(row.body_bytes, len);
    Ok(match (status, r.document_length) {
        (Some(200), Some(len)) if fits(len) => None,
        // Perhaps chunked (counted with its framing): ask again in HTTP/1.0.
        (Some(200), Some(_))
            if fetch::get_length(s.port(), &row.path, config.timeout)
                .is_ok_and(|(code, len)| code == 200 && fits(len)) =>
        {
            None
        }
        (Some(code), len) => Some(format!(
            "answered {code} with {} bytes, expected 200 with {}{}",
            len.unwrap_or(0),
            match row.length {
                LengthCheck::Exact => "",
                LengthCheck::AtLeast => "at least ",
            },
            row.body_bytes
        )),
        (None, _) => Some(format!("no response ({} errors)", r.counts.errors.total())),
    })
}

fn measure(
    row: &RowSpec,
    s: &RunningServer,
    config: &SuiteConfig,
    stop: &StopHandle,
) -> Result<CellRun, Error> {
    let settings = PlanSettings {
        load: Load::Closed {
            connections: row.connections,
        },
        stop: Stop::Duration(config.duration),
        windows: Windows {
            warmup: config.warmup,
            cooldown: Duration::ZERO,
        },
        reuse: if row.keepalive {
            Reuse::KeepAlive
        } else {
            Reuse::Close
        },
        timeout: config.timeout,
        ..PlanSettings::default()
    };
    let plan = Plan::new(vec![target(row, s)?], settings)?;
    let control = RunControl {
        stop: stop.clone(),
        progress: None,
        server_cpu: Some(CpuSource::Trees(s.cpu_roots(row.needs))),
    };
    let r = run_plan(&plan, &control)?;
    let lat = Stats::of(&r.histograms.latency);
    Ok(CellRun {
        rps: r.requests_per_second(),
        mbps: r.bytes_per_second() / MB,
        p50: lat.percentile(50.0) as f64 / 1000.0,
        p99: lat.percentile(99.0) as f64 / 1000.0,
        cpu_s: r.server_cpu.as_ref().map(|c| c.seconds),
        cpu_us: r.server_cpu.as_ref().map(|c| c.us_per_request),
        errors: r.counts.errors.total(),
        responses: r.counts.responses,
    })
}

fn summarise(spec: &ServerSpec, runs: &[CellRun], note: Option<String>) -> Cell {
    let med = |f: &dyn Fn(&CellRun) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = runs.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| Spread::of(&v).median)
    };
    let rps: Vec<f64> = runs.iter().map(|r| r.rps).collect();
    Cell {
        server: spec.name().to_owned(),
        cache: spec.cache_label().to_owned(),
        gateway: None,
        rps: (!rps.is_empty()).then(|| {
            let s = Spread::of(&rps);
            SpreadFigures {
                median: s.median,
                min: s.min,
                max: s.max,
            }
        }),
        mb_per_s: med(&|r| Some(r.mbps)),
        p50_ms: med(&|r| Some(r.p50)),
        p99_ms: med(&|r| Some(r.p99)),
        server_cpu_s: med(&|r| r.cpu_s),
        cpu_us_per_request: med(&|r| r.cpu_us),
        errors: runs.iter().map(|r| r.errors).sum(),
        responses: runs.iter().map(|r| r.responses).sum(),
        note: note.or_else(|| {
            if runs.is_empty() {
                Some("not measured".to_owned())
            } else if runs.iter().all(|r| r.responses == 0) {
                // Requests still waiting when the window closed count as
                // neither responses nor errors.
                Some("no response in the measured window".to_owned())
            } else {
                None
            }
        }),
    }
}

fn about(config: &SuiteConfig, wanted: &[Feature]) -> Vec<String> {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut lines = vec![
        format!("machine: {cores} cores, Linux {}", kernel.trim()),
        format!(
            "method: tern bench, closed loop, HTTP/1.1; per cell {} round{} of {:.1} s measured after a {:.1} s warm-up; servers run in turn for each row",
            config.rounds,
            if config.rounds == 1 { "" } else { "s" },
            config.duration.as_secs_f64(),
            config.warmup.as_secs_f64()
        ),
        "figures: req/s (median, with min–max over rounds); MB/s with MB = 2^20 bytes (ab's Kbytes/sec / 1024); p50/p99 latency in ms from when each request was due; server CPU = user+system seconds of the server's process tree in the measured window, and µs per request".to_owned(),
    ];
    if wanted.contains(&Feature::Cgi) {
        lines.push(format!(
            "cgi: a process per request, C programs built with cc -O2 (\"Hello!\" and 65536 bytes); tern's CGI route, nginx via fcgiwrap ({} workers on a Unix socket, its CPU counted with nginx's), lighttpd mod_cgi, Apache mod_cgid",
            fcgiwrap::WORKERS
        ));
    }
    if wanted.contains(&Feature::CgiPlus) {
        lines.push(format!(
            "CGIplus: one C program answers as CGI under /cgi-bin/ (a process per request) and, under /cgiplus-bin/, as a CGIplus script started once and looping over requests in record mode (tern: 1 to {} processes per script)",
            fcgi_app::PROCESSES
        ));
    }
    if wanted.contains(&Feature::FastCgi) || wanted.contains(&Feature::FastCgiSpawned) {
        lines.push(format!(
            "FastCGI: a C responder on libfcgi (\"Hello!\" or 65536 bytes); under /fcgi/ {n} processes of it on a Unix socket, started by the suite for each server (tern keeps {n} connections open, each holding a process, so the servers cannot share one set), its CPU counted with the server's; tern with {n} pooled connections, the peers a connection per request; under /fcgi-spawn/ tern runs {n} processes of it itself",
            n = fcgi_app::PROCESSES
        ));
    }
    if wanted.contains(&Feature::PerlEngine) {
        lines.push(format!(
            "Perl: face2face.pl in tern's Perl run-time engine ({} processes) beside the same file as CGI (perl started per request)",
            fcgi_app::PROCESSES
        ));
    }
    if wanted.contains(&Feature::Wasm) {
        lines.push(
            "WebAssembly: WAT modules (\"Hello!\" and 65536 bytes, written as the CGI programs write them) in tern's wasm routes, a fresh sandboxed instance per request from wasmtime's pooling allocator, in tern's own process (its CPU is tern's)".to_owned(),
        );
    }
    if wanted.contains(&Feature::PhpFpm) || wanted.contains(&Feature::PhpCgi) {
        lines.push(format!(
            "PHP: a php-fpm started by the suite for each server (pm = static, {n} children, a Unix socket), its CPU counted with the server's; tern with {n} pooled connections; php-cgi as a CGI program per request (tern, lighttpd); php_info.php's length varies with each server's environment",
            n = php::FPM_CHILDREN
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_footnote_goes_under_sections_with_cgi_rows_and_names_the_leaky_gateways() {
        let registry = Registry::seed();
        let spec = |p: PeerKind| {
            ServerSpec::variants(ServerKind::Peer(p))
                .remove(0)
                .with_features(&Feature::GATEWAYS)
        };
        let (apache, lighttpd) = (spec(PeerKind::Apache2), spec(PeerKind::Lighttpd));
        let notes = footnotes(&registry, &[&apache, &lighttpd]);
        let sections: Vec<&str> = notes.iter().map(|n| n.section.as_str()).collect();
        assert_eq!(
            sections,
            ["cgi", "persistent", "engines", "wasm"],
            "{notes:?}"
        );
        assert!(notes.iter().all(|n| n
            .text
            .starts_with("server CPU of apache2+mod_cgid leaves out")));
        assert!(
            footnotes(&registry, &[&lighttpd]).is_empty(),
            "lighttpd reaps"
        );
        let mut static_only = registry.clone();
        static_only.retain_sections(&["static".to_owned()]);
        assert!(footnotes(&static_only, &[&apache]).is_empty());
    }
}
