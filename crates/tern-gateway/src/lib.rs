//! tern's gateways: how a request reaches a program and how the program's
//! answer comes back.
//!
//! The CGI core (the environment builder, the response head, the
//! settle-then-answer assembler, admission) is `tern-cgi`, shared with
//! `tern-wasm`; this crate holds the transports around it. `dispatch`
//! follows local redirects and turns every failure into one status and
//! one log line; `input` reads the request body whole before a request
//! takes a slot or a worker.
//!
//! The transports:
//! - [`Cgi`], a process per request: `resolve` finds the script beneath
//!   its directory, `spawn` starts it in a process group of its own, and
//!   `session` drives it (stdin and stdout pumped together, stderr logged,
//!   silence timed) until it is reaped;
//! - [`FastCgi`]: the record layer and client in [`fastcgi`], to running
//!   servers or to processes tern runs, over pooled connections;
//! - [`CgiPlus`]: persistent scripts over pipes ([`cgiplus`]) and the Perl
//!   and Python run-time engines ([`rte`]).
//!
//! Persistent workers live in `tern-pool` pools (`workers` says how each
//! kind carries a request; `relay` pumps one request's body and events).
//!
//! The only `unsafe` is in `spawn`: two calls that set close-on-exec on
//! descriptors tern inherited, for which no safe API exists.

mod cgi;
pub mod cgiplus;
mod dispatch;
mod error;
pub mod fastcgi;
mod input;
mod output;
pub mod persist;
mod pooled;
mod relay;
mod resolve;
pub mod rte;
mod session;
mod spawn;
mod workers;

pub use cgi::Cgi;
pub use dispatch::MAX_LOCAL_REDIRECTS;
pub use error::Error;
pub use pooled::{CgiPlus, FastCgi};

/// Removes the directory that holds the listening sockets of every
/// FastCGI process tern runs (`<tmp>/tern-<pid>-<random>`), with what is
/// left in it. A pool removes its own as it closes, but a process that
/// exits right after its server stopped does not wait for its pools to
/// close: call this then, last. Pools still closing make no new process.
pub fn remove_socket_dirs() {
    tern_pool::process::remove_run_dir();
}
