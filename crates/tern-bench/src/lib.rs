//! tern-bench: the load generator behind `tern bench` (and, through the
//! tern-suite crate, `tern suite`).
//!
//! A run goes one way: [`Plan`] (targets, closed or open loop, count or
//! duration, warm-up and cool-down) → [`Schedule`] (tickets: which request,
//! due when, in which phase) → [`driver`] (connection tasks send each ticket
//! when due) → one [`Outcome`] per request → [`Recorder`] (HdrHistograms and
//! counters, and a per-interval timeline; samples are never kept) →
//! [`RunResult`] → a report (human, ab, JSON, CSV, and a self-contained HTML
//! file with charts).
//!
//! Latency is measured from each request's *due* time, so a server that
//! stalls cannot hide its stall by slowing the client down (coordinated
//! omission); the uncorrected figure, from the actual send, is kept beside it.
//! Server cost comes from `/proc` or a cgroup ([`cpu`]), over the measured
//! window only.
//!
//! Around single runs: [`compare`] runs several servers in interleaved rounds,
//! and [`merge`] adds results from several machines exactly. [`cli`] holds
//! the clap arguments that the `tern` binary mounts. The suite that starts
//! tern and installed peers and prints the founding reports' tables is a
//! program of its own on top of this one (the tern-suite crate).
//!
//! The load generator uses no server code: it measures every server the
//! same way. The one server crate it reaches is tern-accesslog, whose parser
//! `tern bench model` uses (by way of the tern-workload crate) to read access
//! logs, tern's, nginx's or Apache's, into a workload model and to
//! materialize the model's document root.
//!
//! # Using it
//!
//! ```text
//! tern bench -n 10000 -c 10 http://127.0.0.1:8080/         # ab's closed loop, a connection per request
//! tern bench -k -c 50 -d 30s --warmup 5s URL                # keep-alive, like wrk -c50 -d30s
//! tern bench --rate 2000 --arrival poisson -c 64 -d 60s URL # open loop: latency from each due time
//! tern bench --format ab -n 1000 -c 1 URL                   # ApacheBench 2.3's report, line for line
//! tern bench --json --save run.json URL / --csv / -e ab.csv # machine-readable
//! tern bench --rate 1000 -d 60s --html report.html URL      # one HTML file: latency over time, spectrum, throughput
//! tern bench --server-pid $(cat nginx.pid) -k -c 10 URL     # + server CPU s and µs per request
//! tern bench --http2 --streams 8 -c 4 URL                   # h2c with prior knowledge
//! tern bench --cacert ca.pem -c 10 https://a.test:8443/    # a TLS handshake per request (resumed)
//! tern bench --no-resume --server-pid PID -c 10 https://... # full handshakes, server CPU per handshake
//! tern bench compare --rounds 5 -k -c 10 -d 10s nginx=http://127.0.0.1:8081/,pid=123 tern=http://127.0.0.1:8082/
//! tern bench merge host1.json host2.json                    # exact merge of histograms
//! tern bench model -o model.toml access.log access.log.1 access.log.2.gz  # a workload model
//! tern bench model --from model.toml --materialize site/ --cost cpu # its document root and CGI scripts
//! ```
//!
//! # What the numbers mean
//!
//! - **Corrected latency** runs from when a request was *due*: in a closed
//!   loop, when its connection became free; in an open loop, its arrival
//!   time. **Uncorrected** runs from when it was sent. Both are always
//!   recorded; the difference is time spent waiting for a connection (or,
//!   in an open loop, timer slack of under 1 ms).
//! - **Errors** are classed `connect` (refused, unreachable), `timeout` (no
//!   complete response within `--timeout` of the due time), `reset` (reset
//!   or closed mid-response) and `protocol` (not HTTP). Non-2xx responses
//!   are responses, counted by status.
//! - **Warm-up and cool-down** requests are sent but not counted; the
//!   measured window runs from the first measured request's start to the
//!   last one's end, and rates are over that window.
//! - **Server CPU** is user + system time of the given process and all its
//!   descendants (or of a cgroup) between the start and end of the measured
//!   window.
//! - **Percentiles** come from HdrHistograms (1 µs to 1 h, 3 significant
//!   digits: exact below 2.048 ms, within 0.1 % above); samples are never
//!   kept, so memory stays flat for runs of any length.
//! - **The timeline** cuts the measured window into 1 s intervals (each
//!   with its own 2-digit histogram); past 600 intervals neighbours merge
//!   and the width doubles, so it too stays bounded.
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
pub mod replay;
pub mod report;
pub mod result;
pub mod sample;
pub mod schedule;
pub mod tls;

pub use driver::{run, ProgressCounters, RunControl, StopHandle};
pub use error::Error;
pub use plan::{
    Arrival, Load, Plan, PlanSettings, Protocol, RequestSpec, Reuse, Shard, Stop, Target, Windows,
};
pub use recorder::Recorder;
pub use result::RunResult;
pub use sample::{ErrorClass, Handshake, Outcome, Sample};
pub use schedule::{Phase, Schedule, Ticket};
pub use tls::{TlsSettings, TlsVersion, Trust};
