//! tern's gateways: the transports that carry a request to a program
//! outside tern and its answer back, around the CGI core of `tern-cgi`
//! (the environment, the response head, the settle-then-answer
//! assembler, admission), which `tern-wasm` shares.
//!
//! Three handlers, one way through (`dispatch` follows local
//! redirects as GET and turns every failure into one status and one log
//! line; `input` reads the request body whole before a request takes a
//! slot or a worker):
//! - [`Cgi`], a process per request: `resolve` finds the script beneath
//!   its directory (contained by `tern-fs`), `spawn` starts it in a
//!   process group of its own, and `session` drives it (stdin and stdout
//!   pumped together, stderr logged, silence timed) until it is reaped;
//! - [`FastCgi`], applications over FastCGI: the record layer, the client
//!   connection and a small responder in [`fastcgi`], to running servers
//!   or to processes tern runs;
//! - [`CgiPlus`]: persistent scripts over pipes ([`cgiplus`]) and the Perl
//!   and Python run-time engines ([`rte`]).
//!
//! The persistent handlers (`persistent`) keep their workers in
//! `tern-pool` pools: `workers` says how each kind carries a request over
//! the channel contract of [`persist`], and `relay` pumps one request's
//! body and events.
//!
//! `unsafe` appears in two places: in `spawn`, two calls that set
//! close-on-exec on descriptors tern inherited, and in [`fastcgi::socket`],
//! registering a socket with the runtime for reading only, reading into a
//! buffer's spare room without zeroing it, and asking how much of what
//! tern wrote the application has not read (`SIOCOUTQ`); none has a safe
//! API.

mod cgi;
pub mod cgiplus;
mod dispatch;
mod error;
pub mod fastcgi;
mod input;
mod output;
pub mod persist;
mod persistent;
mod relay;
mod resolve;
pub mod rte;
mod session;
mod spawn;
mod workers;

pub use cgi::Cgi;
pub use error::Error;
pub use persistent::{CgiPlus, FastCgi};

/// Removes the directory that holds the listening sockets of every
/// FastCGI process tern runs (`<tmp>/tern-<pid>-<random>`), with what is
/// left in it. A pool removes its own as it closes, but a process that
/// exits right after its server stopped does not wait for its pools to
/// close: call this then, last. Pools still closing make no new process.
pub fn remove_socket_dirs() {
    tern_pool::process::remove_run_dir();
}
