//! `tern bench --model MODEL URL`: the replay's options and its run from
//! the command line.

use std::path::PathBuf;

use tern_workload::Model;

use super::{replay, ReplaySettings, Walk};
use crate::cli::{print, server_cpu, tls_settings, write_file, BenchArgs, Interrupt};
use crate::driver::StopHandle;
use crate::plan::{Arrival, Target};
use crate::report::Format;
use crate::Error;

/// Options of a session replay (with `--model`).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Session replay")]
pub struct ReplayArgs {
    /// Replay the sessions of this model (written by `tern bench model`)
    /// against the URL, which gives the scheme, host and port.
    #[arg(long, value_name = "MODEL.toml")]
    pub model: Option<PathBuf>,
    /// Sessions started per second (default: the model's logged rate, times --scale).
    #[arg(long, value_name = "R", requires = "model", conflicts_with = "scale")]
    pub users_per_second: Option<f64>,
    /// Start sessions at the model's logged rate times this.
    #[arg(long, value_name = "X", requires = "model")]
    pub scale: Option<f64>,
    /// Think times are the model's times this (0: none).
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    pub think_scale: f64,
    /// How sessions choose their pages.
    #[arg(long, value_enum, default_value_t = WalkArg::Sessions)]
    pub walk: WalkArg,
    /// Gaps between session starts.
    #[arg(long, value_enum, default_value_t = SessionArrival::Poisson)]
    pub session_arrival: SessionArrival,
    /// Stop starting sessions after this many (or at the end of -d,
    /// whichever comes first).
    #[arg(long, value_name = "N", requires = "model")]
    pub sessions: Option<u64>,
    /// Connections per user at most (browsers open 6 per host).
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub user_connections: usize,
}

/// `--walk`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WalkArg {
    /// The logged session classes, drawn by their counts.
    Sessions,
    /// Walks of the page-to-page transitions (Markov).
    Transitions,
}

/// `--session-arrival`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SessionArrival {
    /// Evenly spaced.
    Constant,
    /// Exponential gaps (a Poisson process), as independent users arrive.
    Poisson,
}

/// Runs `tern bench --model MODEL URL`.
pub(crate) fn main(args: &BenchArgs, model_path: &std::path::Path) -> Result<(), Error> {
    let load = &args.load;
    let refuse = |what: &str| {
        Err(Error::usage(format!(
            "{what} does not apply to a replay (--model): sessions set the load (see --users-per-second, --user-connections)"
        )))
    };
    if load.requests.is_some() {
        return refuse("-n");
    }
    if load.rate.is_some() {
        return refuse("--rate");
    }
    if load.http2 {
        return refuse("--http2");
    }
    if !args.weights.is_empty() {
        return refuse("--weights");
    }
    if load.connections != 1 {
        return refuse("-c");
    }
    if load.threads != 1 {
        return refuse("-t");
    }
    if load.warmup.is_some() {
        return refuse("--warmup");
    }
    if load.cooldown.is_some() {
        return refuse("--cooldown");
    }
    if args.urls.len() != 1 {
        return Err(Error::usage(format!(
            "a replay takes one URL (the server to load), not {}",
            args.urls.len()
        )));
    }
    let format = args.output.format();
    if !matches!(format, Format::Human | Format::Json) {
        return Err(Error::usage(
            "a replay reports as text or JSON (--json), not ab or CSV",
        ));
    }
    let base = Target::parse(&args.urls[0])?;
    let model = Model::load(model_path).map_err(|e| Error::usage(e.to_string()))?;
    let r = &args.replay;
    let sessions_per_second = match (r.users_per_second, r.scale) {
        (Some(rate), _) => rate,
        (None, scale) => model.arrivals.rate * scale.unwrap_or(1.0),
    };
    if !(r.think_scale >= 0.0 && r.think_scale.is_finite()) {
        return Err(Error::usage(format!(
            "--think-scale must be 0 or more (got {})",
            r.think_scale
        )));
    }
    if r.user_connections == 0 {
        return Err(Error::usage("--user-connections must be at least 1"));
    }
    let server_cpu = server_cpu(args)?;
    let settings = ReplaySettings {
        sessions_per_second,
        arrival: match r.session_arrival {
            SessionArrival::Constant => Arrival::Constant,
            SessionArrival::Poisson => Arrival::Poisson,
        },
        think_scale: r.think_scale,
        walk: match r.walk {
            WalkArg::Sessions => Walk::Sessions,
            WalkArg::Transitions => Walk::Transitions,
        },
        duration: load.duration.unwrap_or(std::time::Duration::from_secs(10)),
        sessions: r.sessions,
        user_connections: r.user_connections,
        timeout: load.timeout,
        seed: load.seed,
        tls: tls_settings(load),
        shard: load.shard.unwrap_or_default(),
    };
    let stop = StopHandle::new();
    let _interrupt = Interrupt::watch(stop.clone());
    let result = replay(
        model,
        &model_path.display().to_string(),
        &base,
        settings,
        &stop,
        server_cpu.as_ref(),
    )?;
    let json = serde_json::to_string_pretty(&result).expect("a replay result serializes");
    match format {
        Format::Json => print(&format!("{json}\n"))?,
        _ => print(&super::render(&result))?,
    }
    if let Some(path) = &args.output.save {
        write_file(path, &json)?;
    }
    if let Some(path) = &args.output.html {
        write_file(path, &crate::report::html::render_replay(&result))?;
    }
    Ok(())
}
