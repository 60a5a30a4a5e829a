//! A stand-in for the `tern` binary's `bench` command, for trying the CLI
//! without the server: `cargo run -p tern-bench --example tern-bench --
//! bench -n 1000 -c 10 -k http://127.0.0.1:8080/`.

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
}

fn main() -> ExitCode {
    match Tern::parse().command {
        Command::Bench(a) => tern_bench::cli::run_bench(*a),
    }
}
