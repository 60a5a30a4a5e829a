//! One server on one row: the check before measuring (a 200 of the
//! expected length), one measured run of the row's load with the server's
//! CPU time, and the cell that sums up the rounds (medians, with the spread
//! of req/s).

use std::time::Duration;

use tern_bench::compare::Spread;
use tern_bench::cpu::CpuSource;
use tern_bench::driver::{run as run_plan, RunControl, StopHandle};
use tern_bench::histogram::Stats;
use tern_bench::plan::{Load, Plan, PlanSettings, Reuse, Stop, Target, Windows};
use tern_bench::report::human::MB;
use tern_bench::{Error, TlsSettings, Trust};

use crate::config::SuiteConfig;
use crate::fetch;
use crate::report::{Cell, SpreadFigures};
use crate::row::{LengthCheck, RowSpec, TlsMode};
use crate::server::RunningServer;
use crate::spec::ServerSpec;

/// The figures of one cell run.
#[derive(Debug, Clone, Copy)]
pub(super) struct CellRun {
    pub(super) rps: f64,
    mbps: f64,
    p50: f64,
    p99: f64,
    cpu_s: Option<f64>,
    cpu_us: Option<f64>,
    cpu_us_per_handshake: Option<f64>,
    pub(super) errors: u64,
    responses: u64,
}

/// The row's URL on `s`.
fn target(row: &RowSpec, s: &RunningServer) -> Result<Target, Error> {
    match (row.tls, s.tls()) {
        (TlsMode::Off, _) => Target::parse(&format!("http://127.0.0.1:{}{}", s.port(), row.path)),
        (_, Some((port, _))) => Target::parse(&format!("https://127.0.0.1:{port}{}", row.path)),
        (_, None) => Err(Error::usage(format!(
            "{}: a TLS row, but the server has no TLS port",
            row.name()
        ))),
    }
}

/// How the row's connections speak TLS: the run's CA as the only root,
/// every handshake full or sessions resumed as the row says.
fn tls_settings(row: &RowSpec, s: &RunningServer) -> TlsSettings {
    TlsSettings {
        resume: row.tls != TlsMode::Full,
        trust: match s.tls() {
            Some((_, ca)) => Trust::CaFile(ca.to_owned()),
            None => Trust::System,
        },
        ..TlsSettings::default()
    }
}

/// Fetches the row's URL once; `Some(note)` when the answer is not a 200 of
/// the expected length.
pub(super) fn check(
    row: &RowSpec,
    s: &RunningServer,
    config: &SuiteConfig,
) -> Result<Option<String>, Error> {
    let settings = PlanSettings {
        stop: Stop::Count(1),
        timeout: config.timeout,
        tls: tls_settings(row, s),
        ..PlanSettings::default()
    };
    let target = match target(row, s) {
        Ok(t) => t,
        Err(e) => return Ok(Some(e.to_string())),
    };
    let r = match run_plan(&Plan::new(vec![target], settings)?, &RunControl::default()) {
        Ok(r) => r,
        // A server whose TLS the bench refuses gets a note, not the end
        // of the suite.
        Err(e @ Error::Tls { .. }) => return Ok(Some(e.to_string())),
        Err(e) => return Err(e),
    };
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

/// One round of the row's load on `s`, with the CPU time of the server's
/// process tree and of the backends it uses for the row.
pub(super) fn measure(
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
        tls: tls_settings(row, s),
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
        cpu_us_per_handshake: r.server_cpu.as_ref().and_then(|c| c.us_per_handshake),
        errors: r.counts.errors.total(),
        responses: r.counts.responses,
    })
}

/// The cell of `spec` in a row: medians over the rounds `runs`, and why it
/// is empty or doubtful (`note`: the check's, else what the runs show).
pub(super) fn summarise(spec: &ServerSpec, runs: &[CellRun], note: Option<String>) -> Cell {
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
        cpu_us_per_handshake: med(&|r| r.cpu_us_per_handshake),
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
