//! Integration tests of tern-bench: real sockets on 127.0.0.1 against a tiny
//! test server started by each test, and child processes where a server
//! must be paused.

mod closed;
mod compare;
mod cpu;
mod errors;
mod h2;
mod html;
mod merge;
mod open;
mod replay;
mod reports;
mod server;
mod timeline;

use std::time::Duration;

use tern_bench::{Load, Plan, PlanSettings, RunControl, RunResult, Stop, Target};

/// Settings for a closed loop of `connections` and `n` requests.
pub(crate) fn closed(connections: u32, n: u64) -> PlanSettings {
    PlanSettings {
        load: Load::Closed { connections },
        stop: Stop::Count(n),
        timeout: Duration::from_secs(5),
        ..PlanSettings::default()
    }
}

/// Runs a plan against `urls` and returns the result.
pub(crate) fn run(urls: &[String], settings: PlanSettings) -> RunResult {
    let targets = urls.iter().map(|u| Target::parse(u).unwrap()).collect();
    let plan = Plan::new(targets, settings).unwrap();
    tern_bench::run(&plan, &RunControl::default()).unwrap()
}
