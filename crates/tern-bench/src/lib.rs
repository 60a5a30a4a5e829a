//! tern-bench: the load generator behind `tern bench` and `tern suite`.
//!
//! A run goes one way: [`Plan`] (targets, closed or open loop, count or
//! duration, warm-up and cool-down) → [`Schedule`] (tickets: which request,
//! due when, in which phase) → [`driver`] (connection tasks send each ticket
//! when due) → one [`Outcome`] per request → [`Recorder`] (HdrHistograms and
//! counters; samples are never kept) → [`RunResult`] → a report (human, ab,
//! JSON, CSV).
//!
//! Latency is measured from each request's *due* time, so a server that
//! stalls cannot hide its stall by slowing the client down (coordinated
//! omission); the uncorrected figure, from the actual send, is kept beside it.
//! Server cost comes from `/proc` or a cgroup ([`cpu`]), over the measured
//! window only.
//!
//! Around single runs: [`compare`] runs several servers in interleaved rounds,
//! [`merge`] adds results from several machines exactly, and [`suite`] starts
//! tern and installed peers and prints the founding reports' tables.
//! [`cli`] holds the clap arguments that the `tern` binary mounts.
//!
//! This crate depends on no server crate: it measures every server the same
//! way.
#![forbid(unsafe_code)]

pub mod cli;
pub mod compare;
pub mod cpu;
pub mod driver;
mod error;
pub mod histogram;
pub mod merge;
pub mod plan;
pub mod progress;
pub mod recorder;
pub mod report;
pub mod result;
pub mod sample;
pub mod schedule;
pub mod suite;

pub use driver::{run, ProgressCounters, RunControl, StopHandle};
pub use error::Error;
pub use plan::{
    Arrival, Load, Plan, PlanSettings, Protocol, RequestSpec, Reuse, Stop, Target, Windows,
};
pub use recorder::Recorder;
pub use result::RunResult;
pub use sample::{ErrorClass, Outcome, Sample};
pub use schedule::{Phase, Schedule, Ticket};
