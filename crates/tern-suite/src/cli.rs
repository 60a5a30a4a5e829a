//! The command line of `tern suite`, as a clap argument struct that the
//! `tern` binary mounts:
//!
//! ```text
//! #[derive(clap::Subcommand)]
//! enum Command {
//!     /// Rebuild the founding reports' tables for tern and its peers.
//!     Suite(Box<tern_suite::cli::SuiteArgs>),
//! }
//! // ...
//! Command::Suite(a) => tern_suite::cli::run_suite(*a),
//! ```
//!
//! Arguments become a [`SuiteConfig`] here, every value checked; the run
//! then prints its tables on stdout and ends as `tern bench` does (the
//! shell around it is `tern_bench::cli`'s): exit status 0 when the suite
//! ran (servers that did not are in its notes), 2 for invalid arguments,
//! 1 when the suite itself failed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tern_bench::cli::{duration_arg, exit_with, print, write_file, Interrupt};
use tern_bench::{Error, StopHandle};

use crate::config::SuiteConfig;
use crate::peer::PeerKind;
use crate::{table, webstone};

/// `tern suite`: tern (and installed peers) on loopback, the seed tables.
#[derive(Debug, Clone, clap::Args)]
pub struct SuiteArgs {
    /// Peers to start beside tern, comma-separated (nginx,lighttpd,apache2,h2o,caddy, or all).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub peers: Vec<String>,
    /// The tern binary to start (default: this executable).
    #[arg(long, value_name = "PATH", conflicts_with = "no_tern")]
    pub tern: Option<PathBuf>,
    /// Measure only the peers.
    #[arg(long)]
    pub no_tern: bool,
    /// A run under a minute: short warm-up and windows.
    #[arg(long)]
    pub quick: bool,
    /// Rounds; cells show the median over rounds.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub rounds: u32,
    /// Measured time per cell (default 5s; 300ms with --quick).
    #[arg(short = 'd', long, value_name = "DURATION", value_parser = duration_arg)]
    pub duration: Option<Duration>,
    /// Warm-up per cell (default 1s; 100ms with --quick).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub warmup: Option<Duration>,
    /// Only these sections, comma-separated (static, cgi, persistent, engines,
    /// wasm, ssl, webstone; default: all).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub sections: Vec<String>,
    /// Only rows whose name contains this text (e.g. "64 KB").
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// The workload model the webstone section replays (`tern bench model`'s
    /// TOML; default: a bundled synthetic news site).
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// Sessions started per second in the webstone section's replays.
    #[arg(long, default_value_t = 10.0, value_name = "R")]
    pub webstone_rate: f64,
    /// The model's think times times this in the webstone section (0: none).
    #[arg(long, default_value_t = 0.1, value_name = "X")]
    pub think_scale: f64,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Also write suite.md, suite.json and suite.html into this directory.
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs `tern suite` and returns the exit status.
pub fn run_suite(args: SuiteArgs) -> ExitCode {
    exit_with("tern suite", suite_main(args))
}

fn suite_main(args: SuiteArgs) -> Result<(), Error> {
    let config = suite_config(&args)?;
    let stop = StopHandle::new();
    let _interrupt = Interrupt::watch(stop.clone());
    let report = crate::run(&config, &stop)?;
    let markdown = table::markdown(&report);
    let json_text = table::json(&report);
    if let Some(dir) = &args.output {
        std::fs::create_dir_all(dir).map_err(|source| Error::File {
            path: dir.clone(),
            source,
        })?;
        write_file(&dir.join("suite.md"), &markdown)?;
        write_file(&dir.join("suite.json"), &json_text)?;
        write_file(&dir.join("suite.html"), &crate::html::render(&report))?;
    }
    if let Some(path) = &args.html {
        write_file(path, &crate::html::render(&report))?;
    }
    print(if args.json { &json_text } else { &markdown })
}

/// Arguments to config: [`SuiteConfig::new`]'s defaults, then what the
/// command line asks for, every value checked here.
fn suite_config(a: &SuiteArgs) -> Result<SuiteConfig, Error> {
    let tern = if a.no_tern {
        None
    } else {
        match &a.tern {
            // The servers run in their own directories: a relative path is
            // made absolute here, against the directory it was given in.
            Some(p) => Some(std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            None => Some(
                std::env::current_exe().map_err(|e| Error::system("finding this executable", e))?,
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
    webstone_config(a, &mut c)?;
    if let Some(text) = &a.only {
        c.registry.retain_matching(text);
        if c.registry.rows().is_empty() {
            return Err(Error::usage(format!("no row matches {text:?}")));
        }
    }
    c.quiet = a.quiet;
    Ok(c)
}

/// The webstone section's model, rate and think times.
fn webstone_config(a: &SuiteArgs, c: &mut SuiteConfig) -> Result<(), Error> {
    if !(a.webstone_rate > 0.0 && a.webstone_rate.is_finite()) {
        return Err(Error::usage(format!(
            "--webstone-rate must be above 0 (got {})",
            a.webstone_rate
        )));
    }
    if !(a.think_scale >= 0.0 && a.think_scale.is_finite()) {
        return Err(Error::usage(format!(
            "--think-scale must be 0 or more (got {})",
            a.think_scale
        )));
    }
    c.webstone.sessions_per_second = a.webstone_rate;
    c.webstone.think_scale = a.think_scale;
    if let Some(path) = &a.model {
        if !c.registry.sections().contains(&webstone::SECTION) {
            return Err(Error::usage(
                "--model is for the webstone section, which is not selected",
            ));
        }
        c.webstone.model =
            tern_workload::Model::load(path).map_err(|e| Error::usage(e.to_string()))?;
        c.webstone.model_name = path.display().to_string();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    #[derive(clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        args: SuiteArgs,
    }

    #[test]
    fn a_relative_tern_binary_is_made_absolute_against_the_working_directory() {
        let cmd = Cmd::try_parse_from(["suite", "--tern", "target/release/tern"]).unwrap();
        let cfg = suite_config(&cmd.args).unwrap();
        let tern = cfg.tern.unwrap();
        assert!(tern.is_absolute(), "{}", tern.display());
        assert_eq!(
            tern,
            std::env::current_dir().unwrap().join("target/release/tern")
        );
    }

    #[test]
    fn webstone_takes_a_model_a_rate_and_a_think_scale() {
        let parse = |args: &[&str]| {
            let cmd = Cmd::try_parse_from([&["suite"], args].concat()).unwrap();
            suite_config(&cmd.args)
        };
        let c = parse(&["--sections", "webstone"]).unwrap();
        assert_eq!(c.registry.sections(), ["webstone"]);
        assert_eq!(c.webstone.model_name, webstone::BUNDLED_NAME);
        assert_eq!(c.webstone.sessions_per_second, 10.0);
        assert_eq!(c.webstone.think_scale, 0.1);

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("model.toml");
        let mut model = webstone::bundled_model();
        model.pages.truncate(3);
        model.sessions.clear();
        model.transitions = [(
            tern_workload::START.to_owned(),
            [(model.pages[0].id.clone(), 1.0)].into(),
        )]
        .into();
        model.save(&file).unwrap();
        let f = file.to_str().unwrap();
        let c = parse(&["--model", f, "--webstone-rate", "3", "--think-scale", "0"]).unwrap();
        assert_eq!(c.webstone.model, model);
        assert_eq!(c.webstone.model_name, f);
        assert_eq!(
            (c.webstone.sessions_per_second, c.webstone.think_scale),
            (3.0, 0.0)
        );

        for (args, says) in [
            (vec!["--webstone-rate", "0"], "--webstone-rate"),
            (vec!["--think-scale=-1"], "--think-scale"),
            (vec!["--sections", "static", "--model", f], "not selected"),
            (vec!["--model", "/nonexistent/model.toml"], "/nonexistent"),
        ] {
            let e = parse(&args).unwrap_err().to_string();
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }
}
