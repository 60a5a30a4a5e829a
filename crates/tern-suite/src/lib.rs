//! tern-suite: `tern suite`, the founding reports' tables in one command.
//! It starts tern and the installed peers (nginx, lighttpd, Apache, h2o,
//! Caddy) on loopback, with the backends their gateways need, and measures
//! every row of its registry on each of them with `tern-bench`'s load
//! generator, one bounded run per cell. Like `tern-bench`, it depends on no
//! server crate: tern is started from its binary and a config file, as the
//! peers are.
//!
//! ```text
//! tern suite --peers nginx,lighttpd,apache2,h2o,caddy [--quick] [--sections static,cgi] [-o DIR]
//! ```
//!
//! [`run`] goes through its steps in order, each a function below:
//! 1. **discover**: write a temporary docroot with the rows' fixtures
//!    ([`workdir`], compiling the C programs with `cc`; for TLS rows, the
//!    one certificate every server serves, [`certificate`]; for the
//!    "webstone" section, the model's files, [`webstone`]), and find tern
//!    and the requested peers;
//! 2. **start backends** ([`backends`]): fcgiwrap when nginx is to run CGI;
//!    the C FastCGI responder built, php-fpm and php-cgi found;
//! 3. **start servers** ([`server`]): every variant of every server
//!    ([`spec`]: cache on and off, with the gateways it can have) on
//!    loopback, tern from a config file ([`tern`]) and the peers from
//!    theirs ([`peer`]), each with its own FastCGI responder and php-fpm;
//! 4. **check** that each serves every row's URL ([`row`]) with the
//!    expected length;
//! 5. **measure** each row on each server in turn (A B C, A B C, ... so
//!    that drift falls on all alike), with the server's CPU time (its
//!    process tree, plus the trees of the backends it uses for the row);
//!    then the "webstone" section's replays, each server and way in turn
//!    ([`webstone`]: its rows are only checked);
//! 6. **report** ([`SuiteReport`]): one cell per server and row, printed as
//!    one table per section ([`table`]), with the ratios the registry asks
//!    for ([`ratio`]).
//!
//! Every cell is a bounded run; every started server is stopped by process
//! group at the end, on error, on panic (drop guards) and on Ctrl-C.
//! Below the steps, descriptions come first and the things that start
//! processes last: `row`, `gateway`, `spec` and `process` start nothing;
//! `backend`, `backends` and `server` do. [`cli`] holds the clap arguments
//! that the `tern` binary mounts.
#![forbid(unsafe_code)]

mod about;
pub mod backend;
pub mod backends;
mod cell;
pub mod certificate;
pub mod cli;
pub mod config;
pub mod fcgi_app;
pub mod fcgiwrap;
pub mod fetch;
pub mod gateway;
pub mod html;
pub mod news;
pub mod peer;
pub mod php;
pub mod process;
pub mod ratio;
pub mod report;
pub mod row;
pub mod server;
pub mod spec;
pub mod table;
pub mod tern;
pub mod webstone;
pub mod workdir;

use std::path::PathBuf;

use tern_bench::{Error, StopHandle};

pub use config::SuiteConfig;
pub use process::default_search_path;
pub use report::{
    BackendInfo, Cell, Footnote, PageFigures, RowReport, ServerInfo, SpreadFigures, SuiteReport,
    WebstoneReport, WebstoneRow,
};

use backends::Backends;
use cell::CellRun;
use peer::PeerKind;
use process::find_program;
use row::{Registry, RowSpec};
use server::RunningServer;
use spec::{ServerKind, ServerSpec};
use workdir::Workdir;

/// Runs the suite. Servers that are not installed or do not start are
/// skipped with a note; an `Err` means the suite itself could not run.
pub fn run(config: &SuiteConfig, stop: &StopHandle) -> Result<SuiteReport, Error> {
    let mut notes = Vec::new();
    let mut registry = config.registry.clone();
    let work = write_docroot(config, &mut registry, &mut notes)?;
    write_webstone_site(config, &mut registry, &work, &mut notes);
    let installed = discover_servers(config, &mut notes);
    let backends = start_backends(config, &mut registry, &installed, &work, &mut notes);
    let variants = choose_variants(&registry, &installed, &backends, &mut notes);
    // Declared after the backends, so dropped (stopped) before them.
    let (mut servers, infos) = start_servers(&variants, &work, &backends, stop, &mut notes);
    // The "webstone" rows are checked, not measured: the section replays.
    let (rows, replayed): (Vec<RowSpec>, Vec<RowSpec>) = registry
        .rows()
        .iter()
        .cloned()
        .partition(|r| r.section != webstone::SECTION);
    let mut broken = check(&rows, &servers, config, stop)?;
    let replayed_broken = check(&replayed, &servers, config, stop)?;
    let runs = measure(&rows, &mut servers, &mut broken, config, stop)?;
    let webstone = (!replayed.is_empty()).then(|| {
        webstone::measure(
            config,
            &replayed,
            &mut servers,
            &replayed_broken,
            stop,
            &mut notes,
        )
    });
    if stop.is_stopped() {
        notes.push("interrupted: cells cover the runs finished until then".to_owned());
    }
    let report_rows = tabulate(&rows, &servers, &runs, &broken);
    let specs: Vec<&ServerSpec> = servers.iter().map(RunningServer::spec).collect();
    let mut footnotes = about::cpu_footnotes(&registry, &specs);
    drop(servers); // stops every server
    drop(backends); // and then nginx's fcgiwrap
    footnotes.extend(ratio::footnotes(registry.comparisons(), &report_rows));
    Ok(SuiteReport {
        about: about::about(config, &registry.gateways()),
        servers: infos,
        rows: report_rows,
        notes,
        footnotes,
        webstone,
    })
}

/// A server found on this machine.
#[derive(Debug)]
struct Installed {
    kind: ServerKind,
    program: PathBuf,
}

/// Step 1: the docroot with the fixtures of the rows. The rows that fetch
/// a program that could not be made are dropped, with a note.
fn write_docroot(
    config: &SuiteConfig,
    registry: &mut Registry,
    notes: &mut Vec<String>,
) -> Result<Workdir, Error> {
    let cc = find_program(&config.search_path, "cc");
    let mut work = Workdir::create(&registry.fixtures_in_use(), cc.as_deref())?;
    if registry.uses_tls() {
        work.make_certificate()?;
    }
    for u in work.unbuilt() {
        let skipped = registry.remove_rows_fetching(&format!("/{}", u.path));
        notes.push(format!("{}: {}; its {skipped} rows skipped", u.path, u.why));
    }
    Ok(work)
}

/// Step 1, for the "webstone" section: the model's files in the docroot.
/// When they cannot be written, the section is dropped with a note.
fn write_webstone_site(
    config: &SuiteConfig,
    registry: &mut Registry,
    work: &Workdir,
    notes: &mut Vec<String>,
) {
    if !registry.sections().contains(&webstone::SECTION) {
        return;
    }
    match webstone::write_site(&config.webstone.model, work.path(), work.docroot()) {
        Ok(refused) => notes.extend(refused),
        Err(why) => {
            registry.remove_section(webstone::SECTION);
            notes.push(format!("{}: {why}; section skipped", webstone::SECTION));
        }
    }
}

/// Step 1: tern, then the requested peers that are installed (the others
/// get a note).
fn discover_servers(config: &SuiteConfig, notes: &mut Vec<String>) -> Vec<Installed> {
    let mut installed = Vec::new();
    if let Some(bin) = &config.tern {
        installed.push(Installed {
            kind: ServerKind::Tern {
                binary: bin.clone(),
            },
            program: bin.clone(),
        });
    }
    for &p in &config.peers {
        match p.find(&config.search_path) {
            Some(program) => installed.push(Installed {
                kind: ServerKind::Peer(p),
                program,
            }),
            None => notes.push(format!("{}: not installed, skipped", p.name())),
        }
    }
    installed
}

/// Step 2: the backends the rows' gateways need on these servers. The rows
/// of a gateway no server can have are dropped, with a note.
fn start_backends(
    config: &SuiteConfig,
    registry: &mut Registry,
    installed: &[Installed],
    work: &Workdir,
    notes: &mut Vec<String>,
) -> Backends {
    let kinds: Vec<ServerKind> = installed.iter().map(|i| i.kind.clone()).collect();
    let (backends, lost) = Backends::start(
        &registry.gateways(),
        &kinds,
        work,
        &config.search_path,
        notes,
    );
    for l in lost {
        let skipped = registry.remove_rows_needing(l.feature);
        notes.push(format!(
            "{}; its {skipped} {} rows skipped",
            l.why,
            l.feature.label()
        ));
    }
    backends
}

/// Step 3, deciding: every variant of every server, set up with the
/// gateways it can have here, and the program to start it with. A variant
/// that serves none of the rows is left out; a peer that lacks a gateway
/// some other peer offers gets a note.
fn choose_variants(
    registry: &Registry,
    installed: &[Installed],
    backends: &Backends,
    notes: &mut Vec<String>,
) -> Vec<(ServerSpec, PathBuf)> {
    let wanted = registry.gateways();
    let mut variants = Vec::new();
    for Installed { kind, program } in installed {
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
            variants.push((spec.with_features(&available), program.clone()));
        }
    }
    variants.retain(|(spec, _)| registry.rows().iter().any(|r| spec.serves(r)));
    variants
}

/// Step 3, doing: starts every variant before any row is measured, so
/// that each row can visit the servers in turn. One that does not start
/// gets a note.
fn start_servers(
    variants: &[(ServerSpec, PathBuf)],
    work: &Workdir,
    backends: &Backends,
    stop: &StopHandle,
    notes: &mut Vec<String>,
) -> (Vec<RunningServer>, Vec<ServerInfo>) {
    let mut servers = Vec::new();
    let mut infos = Vec::new();
    for (spec, program) in variants {
        if stop.is_stopped() {
            break;
        }
        match RunningServer::start(spec, program, work, backends) {
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
    (servers, infos)
}

/// Per row, per server: why the server's cell has no figures (`None`: it
/// has, or will have).
type Broken = Vec<Vec<Option<String>>>;

/// Step 4: fetches each row's URL once from each server that serves it. A
/// server that answers wrongly gets a note instead of figures.
fn check(
    rows: &[RowSpec],
    servers: &[RunningServer],
    config: &SuiteConfig,
    stop: &StopHandle,
) -> Result<Broken, Error> {
    let mut broken = vec![vec![None; servers.len()]; rows.len()];
    for (ri, row) in rows.iter().enumerate() {
        for (si, s) in servers.iter().enumerate() {
            if s.spec().serves(row) && !stop.is_stopped() {
                broken[ri][si] = cell::check(row, s, config)?;
            }
        }
    }
    Ok(broken)
}

/// Step 5: every round, every row, every server that serves it and passed
/// the check, in that order; per row and server, the runs of the rounds.
/// A server found exited is marked broken for the row.
fn measure(
    rows: &[RowSpec],
    servers: &mut [RunningServer],
    broken: &mut Broken,
    config: &SuiteConfig,
    stop: &StopHandle,
) -> Result<Vec<Vec<Vec<CellRun>>>, Error> {
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
            for (si, s) in servers.iter_mut().enumerate() {
                if !s.spec().serves(row) || broken[ri][si].is_some() {
                    continue;
                }
                if stop.is_stopped() {
                    break 'rounds;
                }
                if !s.is_running() {
                    broken[ri][si] = Some(format!("server exited: {}", s.log_tail()));
                    continue;
                }
                let cell = cell::measure(row, s, config, stop)?;
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
    Ok(runs)
}

/// Step 6: one cell per row and server that serves it, in registry order.
fn tabulate(
    rows: &[RowSpec],
    servers: &[RunningServer],
    runs: &[Vec<Vec<CellRun>>],
    broken: &Broken,
) -> Vec<RowReport> {
    let mut report_rows = Vec::with_capacity(rows.len());
    for (ri, row) in rows.iter().enumerate() {
        let mut cells = Vec::new();
        for (si, s) in servers.iter().enumerate() {
            if s.spec().serves(row) {
                let mut cell = cell::summarise(s.spec(), &runs[ri][si], broken[ri][si].clone());
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
    report_rows
}
