//! The command line of `tern bench`, as clap argument structs that the
//! `tern` binary mounts:
//!
//! ```text
//! #[derive(clap::Subcommand)]
//! enum Command {
//!     /// Load a server and report (ab-compatible).
//!     Bench(Box<tern_bench::cli::BenchArgs>),
//! }
//! // ...
//! Command::Bench(a) => tern_bench::cli::run_bench(*a),
//! ```
//!
//! `BenchArgs` holds an optional subcommand ([`BenchCommand`]): `tern bench
//! URL...` runs a load, `tern bench compare NAME=URL...` and `tern bench
//! merge FILE...` do the rest. Each `run_*` builds its own runtimes, prints
//! its report on stdout, and returns the exit status: 0 when the tool ran
//! (server errors are in the report), 2 for invalid arguments (message on
//! stderr), 1 when the tool itself failed.
//!
//! The shell around a run ([`Interrupt`] for Ctrl-C, [`print`](fn@print),
//! [`write_file`], [`exit_with`], [`duration_arg`]) is public so that `tern
//! suite`, in the tern-suite crate, behaves the same way.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::compare::{self, Contender};
use crate::cpu::CpuSource;
use crate::driver::{run, ProgressCounters, RunControl, StopHandle};
use crate::plan::{
    parse_duration, Arrival, Load, Plan, PlanSettings, Protocol, RequestSpec, Reuse, Shard, Stop,
    Target, Windows,
};
use crate::progress::{Extent, Progress, Style};
use crate::report::{self, ab, html, json, Format};
use crate::tls::{TlsSettings, TlsVersion, Trust};
use crate::{merge, Error};

/// `tern bench`: load one or more URLs and report.
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    /// `compare` or `merge`; without one, load the URLs.
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// How to load.
    #[command(flatten)]
    pub load: LoadArgs,
    /// What to print.
    #[command(flatten)]
    pub output: OutputArgs,
    /// A session replay instead of a load of URLs.
    #[command(flatten)]
    pub replay: crate::replay::ReplayArgs,
    /// Relative weights of the URLs, comma-separated, one per URL (default all 1).
    #[arg(long, value_delimiter = ',', value_name = "W,W,...")]
    pub weights: Vec<u32>,
    /// Measure the CPU time of this process and all its descendants over the
    /// measured window.
    #[arg(long, value_name = "PID", conflicts_with = "server_cgroup")]
    pub server_pid: Option<u32>,
    /// Measure the CPU time of this cgroup (v2; relative paths are under
    /// /sys/fs/cgroup) over the measured window.
    #[arg(long, value_name = "PATH")]
    pub server_cgroup: Option<PathBuf>,
    /// The URLs to load (`http[s]://host:port/path`; the port defaults to 80 or 443).
    #[arg(value_name = "URL", required = true)]
    pub urls: Vec<String>,
}

/// The subcommands of `tern bench`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum BenchCommand {
    /// Run the same load against several servers in interleaved rounds.
    Compare(Box<CompareArgs>),
    /// Merge JSON results of simultaneous runs (several machines) exactly.
    Merge(MergeArgs),
    /// Draw a workload model from access logs (WebStone-SS), and optionally
    /// a document root that matches it.
    Model(Box<ModelArgs>),
}

/// `tern bench compare`.
#[derive(Debug, Clone, clap::Args)]
pub struct CompareArgs {
    /// How to load each server (warm-up defaults to 1s here).
    #[command(flatten)]
    pub load: LoadArgs,
    /// Rounds; each runs every server once, in the order given.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Print JSON (every run, histograms included) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report to this file: every run,
    /// one line per server (its rounds end to end).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    /// Servers: NAME=URL, optionally with ,pid=PID or ,cgroup=PATH for CPU accounting.
    #[arg(value_name = "NAME=URL[,pid=PID]", required = true)]
    pub servers: Vec<String>,
}

/// `tern bench merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// Report format of the merged result.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Also write a self-contained HTML report of the merged result to
    /// this file (each interval's percentiles are the largest of the
    /// files': an upper bound).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Result files written by `tern bench --json` (or --save).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// `tern bench model`.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// Access logs, plain or gzipped, in any order (they are read oldest
    /// first).
    #[arg(
        value_name = "LOG",
        required_unless_present = "from",
        conflicts_with = "from"
    )]
    pub logs: Vec<PathBuf>,
    /// Write the model (TOML) to this file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The logs' format (default: detected from each file's first lines).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<LogFormatArg>,
    /// A user's requests within this of the previous one are one page.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, default_value = "15s")]
    pub page_gap: Duration,
    /// A user's pages less than this apart are one session.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, default_value = "5m")]
    pub session_gap: Duration,
    /// A user is a client address and its user agent (many users behind a
    /// proxy), not the address alone.
    #[arg(long)]
    pub by_agent: bool,
    /// Keep every distinct page as its own class (no reduction heuristics).
    #[arg(long)]
    pub no_reduce: bool,
    /// Write a document root matching the model into this (new or empty)
    /// directory: files of the logged sizes, CGI scripts for the dynamic
    /// ones, and a tern configuration (routes.toml) serving them.
    #[arg(long, value_name = "DIR")]
    pub materialize: Option<PathBuf>,
    /// What each CGI script costs the server.
    #[arg(long, value_enum, default_value_t = CostArg::Trivial, requires = "materialize")]
    pub cost: CostArg,
    /// Read this model instead of logs (to materialize it).
    #[arg(long, value_name = "MODEL")]
    pub from: Option<PathBuf>,
}

/// `tern bench model --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormatArg {
    /// NCSA Common Log Format.
    Common,
    /// NCSA Combined (Common with referer and user agent).
    Combined,
    /// tern's JSON lines.
    Json,
}

/// `tern bench model --cost`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CostArg {
    /// Print the body and exit.
    Trivial,
    /// Increment a counter file under a lock, as the report's counter script.
    Counter,
    /// Search a few MB of text: tens of milliseconds of CPU a request.
    Cpu,
    /// No scripts: the dynamic paths as static files of their logged
    /// sizes (the static-only baseline).
    Static,
}

/// Load options shared by `tern bench` and `tern bench compare`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// Connections (closed loop), or most requests in flight (open loop).
    #[arg(short = 'c', long, default_value_t = 1, value_name = "N")]
    pub connections: u32,
    /// Measured requests (default: a 10s duration).
    #[arg(short = 'n', long, value_name = "N", conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Measured duration, e.g. 10s, 500ms, 2m.
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = duration_arg)]
    pub duration: Option<Duration>,
    /// Keep connections alive (as ab -k; default: a new connection per request).
    #[arg(short = 'k', long)]
    pub keepalive: bool,
    /// Open loop: requests per second, whatever the server does.
    #[arg(long, value_name = "REQ_PER_S")]
    pub rate: Option<f64>,
    /// Open-loop arrivals.
    #[arg(long, value_enum, default_value_t = ArrivalArg::Constant, requires = "rate")]
    pub arrival: ArrivalArg,
    /// Load before measuring (default 0; 1s for compare).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub warmup: Option<Duration>,
    /// Load after the measured requests (default 0).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub cooldown: Option<Duration>,
    /// Timeout of each request, counted from when it was due.
    #[arg(short = 's', long, value_name = "DURATION", value_parser = duration_arg, default_value = "10s")]
    pub timeout: Duration,
    /// Method (default GET, or POST with a body).
    #[arg(short = 'm', long, value_name = "METHOD")]
    pub method: Option<String>,
    /// Extra header "Name: value" (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Request body from a file (as ab -p).
    #[arg(short = 'p', long = "body-file", value_name = "FILE")]
    pub body_file: Option<PathBuf>,
    /// Content-Type of the body (as ab -T).
    #[arg(short = 'T', long = "content-type", value_name = "TYPE")]
    pub content_type: Option<String>,
    /// HTTP/2: h2c with prior knowledge on http:// URLs, h2 by ALPN on https:// ones.
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2 requests in flight per connection.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "http2")]
    pub streams: u32,
    /// Threads, each with its share of the connections (as wrk -t).
    #[arg(short = 't', long, default_value_t = 1, value_name = "N")]
    pub threads: u32,
    /// Seed of Poisson arrivals.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seed: u64,
    /// This machine's part of a run shared by N machines (I from 0): each
    /// runs the same command with its own I; -c, -n and --rate are the
    /// whole run's, and `tern bench merge` adds the shards' JSON results
    /// exactly.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// TLS version offered to https:// URLs (default: 1.2 and 1.3).
    #[arg(long, value_enum, value_name = "1.2|1.3")]
    pub tls_version: Option<TlsVersionArg>,
    /// No TLS session resumption: every new connection makes a full handshake.
    #[arg(long)]
    pub no_resume: bool,
    /// Trust the PEM root certificates of this file (default: the system's).
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// Accept any server certificate (handshake signatures are still checked).
    /// There is no -k for it: -k is keep-alive, as in ab.
    #[arg(long)]
    pub insecure: bool,
}

/// `--tls-version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TlsVersionArg {
    /// TLS 1.2 only.
    #[value(name = "1.2")]
    Tls12,
    /// TLS 1.3 only.
    #[value(name = "1.3")]
    Tls13,
}

/// Open-loop arrival process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (Poisson process).
    Poisson,
}

/// Output options of `tern bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Same as --format json.
    #[arg(long, conflicts_with_all = ["format", "csv"])]
    pub json: bool,
    /// Same as --format csv (ab -e compatible).
    #[arg(long, conflicts_with = "format")]
    pub csv: bool,
    /// Also write the ab -e CSV to this file.
    #[arg(short = 'e', long = "csv-file", value_name = "FILE")]
    pub csv_file: Option<PathBuf>,
    /// Also write the JSON result to this file (for `tern bench merge`).
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Also write a self-contained HTML report (charts of latency over
    /// time, the percentile spectrum, throughput and errors) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

impl OutputArgs {
    pub(crate) fn format(&self) -> Format {
        if self.json {
            Format::Json
        } else if self.csv {
            Format::Csv
        } else {
            self.format
        }
    }
}

/// clap's parser of durations ("10s", "500ms", "2m"); `tern suite` parses
/// its own with it.
pub fn duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// Runs `tern bench` (any subcommand) and returns the exit status.
pub fn run_bench(args: BenchArgs) -> ExitCode {
    exit_with("tern bench", bench(args))
}

/// The exit status of a tool's run, its error (if any) printed on stderr
/// after `tool`: 0 when it ran, 2 for invalid arguments, 1 when the tool
/// itself failed. `tern suite` ends the same way.
pub fn exit_with(tool: &str, r: Result<(), Error>) -> ExitCode {
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{tool}: {e}");
            if e.is_usage() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn bench(args: BenchArgs) -> Result<(), Error> {
    match args.command {
        Some(BenchCommand::Compare(c)) => return compare_main(*c),
        Some(BenchCommand::Merge(m)) => return merge_main(m),
        Some(BenchCommand::Model(m)) => return model_main(*m),
        None => {}
    }
    if let Some(model) = &args.replay.model {
        return crate::replay::main(&args, model);
    }
    let mut targets = args
        .urls
        .iter()
        .map(|u| Target::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    if !args.weights.is_empty() {
        if args.weights.len() != targets.len() {
            return Err(Error::usage(format!(
                "--weights has {} values for {} URLs",
                args.weights.len(),
                targets.len()
            )));
        }
        for (t, w) in targets.iter_mut().zip(&args.weights) {
            t.weight = *w;
        }
    }
    let plan = Plan::new(targets, settings(&args.load, Duration::ZERO)?)?;
    let server_cpu = server_cpu(&args)?;
    let format = args.output.format();
    let counters = Arc::new(ProgressCounters::default());
    let stop = StopHandle::new();
    let _interrupt = Interrupt::watch(stop.clone());
    let progress = (!args.output.quiet).then(|| {
        let style = match (format, plan.settings().stop) {
            (Format::Ab, Stop::Count(n)) => {
                ab::heartbeat_every(n).map(|every| Style::AbHeartbeat { every })
            }
            // ab -t counts as 50000 requests.
            (Format::Ab, Stop::Duration(_)) => {
                ab::heartbeat_every(50_000).map(|every| Style::AbHeartbeat { every })
            }
            (_, Stop::Count(n)) => Some(Style::Bar(Extent::Requests(n))),
            (_, Stop::Duration(d)) => {
                let w = plan.settings().windows;
                Some(Style::Bar(Extent::Time(w.warmup + d + w.cooldown)))
            }
        };
        style.map(|s| Progress::start(Arc::clone(&counters), s))
    });
    let control = RunControl {
        stop,
        progress: Some(counters),
        server_cpu,
    };
    let result = run(&plan, &control)?;
    drop(progress);
    print(&report::render(&result, format))?;
    if let Some(path) = &args.output.csv_file {
        write_file(path, &report::csv::render(&result))?;
    }
    if let Some(path) = &args.output.save {
        write_file(path, &json::render(&result))?;
    }
    if let Some(path) = &args.output.html {
        let title = format!("tern bench {}", args.urls.join(" "));
        write_file(path, &html::render_runs(&title, &[("run", &result)], None))?;
    }
    Ok(())
}

fn compare_main(args: CompareArgs) -> Result<(), Error> {
    let contenders = args
        .servers
        .iter()
        .map(|s| Contender::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    for c in &contenders {
        if let Some(src) = &c.cpu {
            src.read()
                .map_err(|e| Error::usage(format!("{}: {e}", c.name)))?;
        }
    }
    let plan = Plan::new(
        vec![contenders[0].target.clone()],
        settings(&args.load, Duration::from_secs(1))?,
    )?;
    let stop = StopHandle::new();
    let _interrupt = Interrupt::watch(stop.clone());
    let quiet = args.quiet;
    let comparison = compare::compare(&plan, &contenders, args.rounds, &stop, |round, name, r| {
        if !quiet {
            eprintln!(
                "round {round}: {name}: {:.1} req/s, {} errors",
                r.requests_per_second(),
                r.counts.errors.total()
            );
        }
    })?;
    if let Some(path) = &args.html {
        write_file(path, &html::render_comparison(&comparison))?;
    }
    if args.json {
        let mut text =
            serde_json::to_string_pretty(&comparison).expect("a comparison always serialises");
        text.push('\n');
        print(&text)
    } else {
        print(&format!(
            "tern bench compare: {}\n\n{}",
            plan,
            compare::render(&comparison)
        ))
    }
}

fn merge_main(args: MergeArgs) -> Result<(), Error> {
    if let Some(merged) = crate::replay::merge_files(&args.files)? {
        if let Some(path) = &args.html {
            write_file(path, &html::render_replay(&merged))?;
        }
        return match args.json || args.format == Format::Json {
            true => print(&format!(
                "{}\n",
                serde_json::to_string_pretty(&merged).expect("a replay result serializes")
            )),
            false => print(&crate::replay::render(&merged)),
        };
    }
    let merged = merge::merge_files(&args.files)?;
    if let Some(path) = &args.html {
        let title = format!("tern bench merge: {} runs", merged.runs);
        write_file(
            path,
            &html::render_runs(&title, &[("merged", &merged)], None),
        )?;
    }
    let format = if args.json { Format::Json } else { args.format };
    print(&report::render(&merged, format))
}

fn model_main(args: ModelArgs) -> Result<(), Error> {
    use tern_workload::materialize::{self, Cost};
    // The library's errors name their file; thresholds that make no sense
    // are the command line's fault.
    let failed = |e: tern_workload::Error| match e {
        tern_workload::Error::Options(m) => Error::usage(m),
        e => Error::system("model", std::io::Error::other(e)),
    };
    let model = match &args.from {
        Some(path) => {
            let model = tern_workload::Model::load(path)
                .map_err(|e| Error::system("model", std::io::Error::other(e)))?;
            print(&tern_workload::summary::render(&model, &[]))?;
            model
        }
        None => {
            let options = tern_workload::Options {
                page_gap: args.page_gap,
                session_gap: args.session_gap,
                by_agent: args.by_agent,
                reduce: !args.no_reduce,
                format: args.format.map(|f| match f {
                    LogFormatArg::Common => tern_workload::LogFormat::Common,
                    LogFormatArg::Combined => tern_workload::LogFormat::Combined,
                    LogFormatArg::Json => tern_workload::LogFormat::Json,
                }),
            };
            let x = tern_workload::extract(&args.logs, &options).map_err(failed)?;
            print(&tern_workload::summary::render_extraction(&x))?;
            x.model
        }
    };
    if let Some(path) = &args.output {
        write_file(path, &model.to_toml())?;
        print(&format!("\nmodel written to {}\n", path.display()))?;
    }
    if let Some(dir) = &args.materialize {
        let cost = match args.cost {
            CostArg::Trivial => Cost::Trivial,
            CostArg::Counter => Cost::Counter,
            CostArg::Cpu => Cost::Cpu,
            CostArg::Static => Cost::Static,
        };
        let done = materialize::materialize(&model, dir, cost).map_err(failed)?;
        print(&format!("\n{done}"))?;
    }
    Ok(())
}

/// Builds plan settings from load arguments; `default_warmup` when none given.
pub fn settings(load: &LoadArgs, default_warmup: Duration) -> Result<PlanSettings, Error> {
    let mut request = RequestSpec::default();
    if let Some(path) = &load.body_file {
        let body = std::fs::read(path)
            .map_err(|e| Error::usage(format!("body file {}: {e}", path.display())))?;
        request.body = Bytes::from(body);
        request.method = http::Method::POST;
    }
    if let Some(m) = &load.method {
        request.method = http::Method::from_bytes(m.as_bytes())
            .map_err(|_| Error::usage(format!("invalid method {m:?}")))?;
    }
    for h in &load.headers {
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| Error::usage(format!("header {h:?}: expected \"Name: value\"")))?;
        let (name, value) = (name.trim(), value.trim());
        if http::header::HeaderName::from_bytes(name.as_bytes()).is_err()
            || http::header::HeaderValue::from_str(value).is_err()
        {
            return Err(Error::usage(format!("invalid header {h:?}")));
        }
        request.headers.push((name.to_owned(), value.to_owned()));
    }
    if let Some(ct) = &load.content_type {
        if http::header::HeaderValue::from_str(ct).is_err() {
            return Err(Error::usage(format!("invalid content type {ct:?}")));
        }
        request
            .headers
            .push(("Content-Type".to_owned(), ct.clone()));
    }
    let connections = load.connections;
    let settings = PlanSettings {
        request,
        load: match load.rate {
            None => Load::Closed { connections },
            Some(rate) => Load::Open {
                rate,
                arrival: match load.arrival {
                    ArrivalArg::Constant => Arrival::Constant,
                    ArrivalArg::Poisson => Arrival::Poisson,
                },
                connections,
            },
        },
        stop: match (load.requests, load.duration) {
            (Some(n), _) => Stop::Count(n),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => Stop::Duration(Duration::from_secs(10)),
        },
        windows: Windows {
            warmup: load.warmup.unwrap_or(default_warmup),
            cooldown: load.cooldown.unwrap_or(Duration::ZERO),
        },
        reuse: if load.keepalive {
            Reuse::KeepAlive
        } else {
            Reuse::Close
        },
        protocol: if load.http2 {
            Protocol::Http2 {
                streams: load.streams,
            }
        } else {
            Protocol::Http1
        },
        timeout: load.timeout,
        threads: load.threads,
        seed: load.seed,
        tls: tls_settings(load),
        shard: load.shard.unwrap_or_default(),
    };
    Ok(settings)
}

/// The server CPU source `--server-pid` or `--server-cgroup` names, read
/// once now so that a wrong one is an argument error before any load.
pub(crate) fn server_cpu(args: &BenchArgs) -> Result<Option<CpuSource>, Error> {
    let source = match (args.server_pid, &args.server_cgroup) {
        (Some(pid), _) => Some(CpuSource::Tree(pid)),
        (None, Some(path)) => Some(CpuSource::cgroup(path)),
        (None, None) => None,
    };
    if let Some(src) = &source {
        src.read().map_err(|e| Error::usage(e.to_string()))?;
    }
    Ok(source)
}

/// The TLS options of `load`.
pub(crate) fn tls_settings(load: &LoadArgs) -> TlsSettings {
    TlsSettings {
        version: match load.tls_version {
            None => TlsVersion::Any,
            Some(TlsVersionArg::Tls12) => TlsVersion::Tls12,
            Some(TlsVersionArg::Tls13) => TlsVersion::Tls13,
        },
        resume: !load.no_resume,
        trust: match (&load.cacert, load.insecure) {
            (Some(path), _) => Trust::CaFile(path.clone()),
            (None, true) => Trust::Insecure,
            (None, false) => Trust::System,
        },
    }
}

/// Prints a report on stdout.
pub fn print(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::system("writing the report", e)),
    }
}

/// Writes a report into a file, the error naming it.
pub fn write_file(path: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|source| Error::File {
        path: path.to_owned(),
        source,
    })
}

/// Turns Ctrl-C (and SIGTERM, SIGHUP) into a stop of the run, so that the
/// partial report is printed and every started process is stopped, for as
/// long as it lives.
///
/// tokio's signal handling stays installed for the rest of the process once
/// used; `tern bench` and `tern suite` end right after their run.
#[derive(Debug)]
pub struct Interrupt {
    done: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Interrupt {
    /// Watches for the signals until dropped; one of them stops `stop`.
    pub fn watch(stop: StopHandle) -> Interrupt {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tern-bench-interrupt".into())
            .spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async move {
                    use tokio::signal::unix::{signal, SignalKind};
                    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
                        signal(SignalKind::interrupt()),
                        signal(SignalKind::terminate()),
                        signal(SignalKind::hangup()),
                    ) else {
                        return;
                    };
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                        _ = hup.recv() => {}
                        _ = rx => return,
                    }
                    eprintln!("interrupted: stopping");
                    stop.stop();
                });
            })
            .ok();
        Interrupt {
            done: Some(tx),
            thread,
        }
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Tern {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Top {
        Bench(Box<BenchArgs>),
    }

    fn bench_args(argv: &[&str]) -> Result<BenchArgs, clap::Error> {
        let mut full = vec!["tern", "bench"];
        full.extend_from_slice(argv);
        match Tern::try_parse_from(full)?.command {
            Top::Bench(b) => Ok(*b),
        }
    }

    #[test]
    fn parses_ab_style_arguments() {
        let a = bench_args(&["-n", "1000", "-c", "10", "-k", "http://127.0.0.1:8080/"]).unwrap();
        assert_eq!(
            (a.load.requests, a.load.connections, a.load.keepalive),
            (Some(1000), 10, true)
        );
        let s = settings(&a.load, Duration::ZERO).unwrap();
        assert_eq!((s.stop, s.reuse), (Stop::Count(1000), Reuse::KeepAlive));
        assert!(a.command.is_none());

        let a = bench_args(&[
            "--rate",
            "500",
            "--arrival",
            "poisson",
            "-d",
            "2s",
            "-c",
            "8",
            "http://h/",
        ])
        .unwrap();
        let s = settings(&a.load, Duration::ZERO).unwrap();
        assert_eq!(
            s.load,
            Load::Open {
                rate: 500.0,
                arrival: Arrival::Poisson,
                connections: 8
            }
        );
        assert_eq!(s.stop, Stop::Duration(Duration::from_secs(2)));
    }

    #[test]
    fn parses_subcommands() {
        let a = bench_args(&[
            "compare",
            "--rounds",
            "2",
            "-n",
            "5",
            "a=http://h/",
            "b=http://i/,pid=1",
        ])
        .unwrap();
        match a.command {
            Some(BenchCommand::Compare(c)) => assert_eq!(
                (c.rounds, c.servers.len(), c.load.requests),
                (2, 2, Some(5))
            ),
            other => panic!("{other:?}"),
        }
        let a = bench_args(&["merge", "a.json", "b.json"]).unwrap();
        assert!(matches!(a.command, Some(BenchCommand::Merge(m)) if m.files.len() == 2));
    }

    #[test]
    fn model_reads_logs_writes_a_model_and_materializes_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.log");
        std::fs::write(
            &log,
            "192.0.2.1 - - [24/Nov/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 1234 \"-\" \"curl/8\"\n\
             192.0.2.1 - - [24/Nov/2026:10:00:01 +0000] \"GET /a.png HTTP/1.1\" 200 99 \"-\" \"curl/8\"\n\
             192.0.2.1 - - [24/Nov/2026:10:01:00 +0000] \"GET /s?q=1 HTTP/1.1\" 200 10 \"-\" \"curl/8\"\n",
        )
        .unwrap();
        let out = dir.path().join("model.toml");
        let (log_s, out_s) = (log.to_str().unwrap(), out.to_str().unwrap());
        let a = bench_args(&["model", log_s, "-o", out_s, "--page-gap", "10s"]).unwrap();
        assert_eq!(run_bench(a), ExitCode::SUCCESS);
        let model = tern_workload::Model::load(&out).unwrap();
        assert_eq!((model.summary.pages, model.rules.page_gap), (2, 10.0));
        let site = dir.path().join("site");
        let a = bench_args(&[
            "model",
            "--from",
            out_s,
            "--materialize",
            site.to_str().unwrap(),
            "--cost",
            "counter",
        ])
        .unwrap();
        assert_eq!(run_bench(a), ExitCode::SUCCESS);
        assert_eq!(
            std::fs::metadata(site.join("htdocs/a.png")).unwrap().len(),
            99
        );
        assert!(site.join("routes.toml").exists());
        // Bad thresholds are the command line's fault; a missing log is not.
        let a = bench_args(&["model", log_s, "--page-gap", "0s"]).unwrap();
        assert_eq!(run_bench(a), ExitCode::from(2));
        let missing = dir.path().join("missing.log");
        let a = bench_args(&["model", missing.to_str().unwrap()]).unwrap();
        assert_eq!(run_bench(a), ExitCode::FAILURE);
        // The materialized directory must be new or empty.
        let a = bench_args(&["model", log_s, "--materialize", site.to_str().unwrap()]).unwrap();
        assert_eq!(run_bench(a), ExitCode::FAILURE);
        assert!(bench_args(&["model"]).is_err(), "logs or --from");
        assert!(bench_args(&["model", "--from", out_s, log_s]).is_err());
        assert!(bench_args(&["model", log_s, "--cost", "cpu"]).is_err());
        assert!(bench_args(&["model", log_s, "--format", "xml"]).is_err());
        assert!(bench_args(&["model", log_s, "--session-gap", "5 minutes"]).is_err());
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(bench_args(&[]).is_err(), "a URL is required");
        assert!(
            bench_args(&["-n", "5", "-d", "1s", "http://h/"]).is_err(),
            "-n conflicts with -d"
        );
        assert!(bench_args(&["-d", "ten", "http://h/"]).is_err());
        assert!(
            bench_args(&["--arrival", "poisson", "http://h/"]).is_err(),
            "--arrival needs --rate"
        );
        let bad_header = bench_args(&["-H", "nocolon", "http://h/"]).unwrap();
        assert!(settings(&bad_header.load, Duration::ZERO)
            .unwrap_err()
            .is_usage());
        let bad_method = bench_args(&["-m", "GE T", "http://h/"]).unwrap();
        assert!(settings(&bad_method.load, Duration::ZERO)
            .unwrap_err()
            .is_usage());
        // Semantic errors exit with 2.
        let code = run_bench(bench_args(&["-c", "0", "http://127.0.0.1:1/"]).unwrap());
        assert_eq!(code, ExitCode::from(2));
        let code = run_bench(bench_args(&["ftp://127.0.0.1:1/"]).unwrap());
        assert_eq!(code, ExitCode::from(2));
        let code = run_bench(
            bench_args(&["--cacert", "/nonexistent/ca.pem", "https://127.0.0.1:1/"]).unwrap(),
        );
        assert_eq!(code, ExitCode::from(2));
        let code = run_bench(bench_args(&["--weights", "1,2", "http://127.0.0.1:1/"]).unwrap());
        assert_eq!(code, ExitCode::from(2));
    }
}
