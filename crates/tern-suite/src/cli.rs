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
use crate::table;

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
    /// wasm, ssl; default: all).
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub sections: Vec<String>,
    /// Only rows whose name contains this text (e.g. "64 KB").
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
    /// Print JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Also write suite.md and suite.json into this directory.
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,
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
    if let Some(text) = &a.only {
        c.registry.retain_matching(text);
        if c.registry.rows().is_empty() {
            return Err(Error::usage(format!("no row matches {text:?}")));
        }
    }
    c.quiet = a.quiet;
    Ok(c)
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
}
