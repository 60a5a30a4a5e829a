//! A stand-in for the `tern` binary's `bench` and `suite` commands, for
//! trying the CLI before the lead mounts it: `cargo run -p tern-bench
//! --example tern-bench -- bench -n 1000 -c 10 -k http://127.0.0.1:8080/`.

use std::process::ExitCode;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(name = "tern")]
struct Tern {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Load a server and report (ab-compatible).
    Bench(Box<tern_bench::cli::BenchArgs>),
    /// Rebuild the founding reports' tables for tern and its peers.
    Suite(Box<tern_bench::cli::SuiteArgs>),
}

fn main() -> ExitCode {
    match Tern::parse().command {
        Command::Bench(a) => tern_bench::cli::run_bench(*a),
        Command::Suite(a) => tern_bench::cli::run_suite(*a),
    }
}
