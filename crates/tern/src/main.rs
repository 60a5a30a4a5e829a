//! The `tern` binary: the command line, and the one place that knows every
//! crate. `serve` assembles a site from the configuration and runs the
//! server; `check` validates a configuration and builds it as `serve`
//! would, starting nothing. Started under the demo's program names
//! (`argv[0]`), the binary is instead the demo's FastCGI application or
//! compiled CGI program.

mod assemble;
mod certwatch;
mod demo;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc's malloc: per-thread free lists without
/// glibc's consolidation passes. A request's small allocations (the CGI
/// environment, a WebAssembly store's tables, response heads) are freed on
/// the thread that made them, which is the case mimalloc is built for.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// tern: a web server for static files and every kind of script, and the
/// tool that measures it.
#[derive(Parser, Debug)]
#[command(version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve a configuration, a directory, or (with no arguments) the
    /// built-in demo site on 127.0.0.1:8080.
    Serve(serve::ServeArgs),
    /// Validate a configuration file: exit 0, or print every error and exit 1.
    Check {
        /// The configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Load a server: closed or open loop, latency without coordinated
    /// omission, ab-compatible reports, server CPU time.
    Bench(Box<tern_bench::cli::BenchArgs>),
    /// Rebuild the founding reports' tables for tern and installed peers.
    Suite(Box<tern_suite::cli::SuiteArgs>),
}

fn main() -> ExitCode {
    if demo::run_fastcgi() {
        return ExitCode::SUCCESS;
    }
    if demo::run_compiled_cgi() {
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Bench(args) => tern_bench::cli::run_bench(*args),
        Command::Suite(args) => tern_suite::cli::run_suite(*args),
        Command::Check { config } => match tern_config::load(&config) {
            Ok(cfg) => match assemble::check(&cfg) {
                Ok(()) => {
                    println!("{}: ok", config.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{}: {e:#}", config.display());
                    ExitCode::FAILURE
                }
            },
            Err(errors) => {
                eprintln!("{errors}");
                ExitCode::FAILURE
            }
        },
    }
}
