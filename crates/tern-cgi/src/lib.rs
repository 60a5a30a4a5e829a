//! tern's CGI core: what every way of running a program with CGI
//! semantics shares, whatever carries the request to the program (a
//! process per request, a persistent worker over FastCGI or CGIplus in
//! `tern-gateway`, a WebAssembly module in `tern-wasm`).
//!
//! - [`env`](mod@env) builds the CGI/1.1 meta-variables (RFC 3875 §4) with
//!   the security defaults (httpoxy, Authorization, header-name collisions
//!   and underscores, Shellshock);
//! - [`response`] parses a program's response head strictly and decides
//!   between a document, a client redirect and a local redirect;
//! - [`Assembler`] turns the output after the head into a response: settle,
//!   then answer whole or stream;
//! - [`Limiter`] admits requests to a route's slots and queue;
//! - [`fail`] turns a failure into a status and one log line.
//!
//! Everything but the limiter is pure: no sockets, clocks or files; the
//! runners drive it and own the I/O.
#![forbid(unsafe_code)]

mod assemble;
pub mod env;
mod error;
mod fail;
mod limit;
pub mod response;

pub use assemble::{Assembler, Delivery, Step, WHOLE_MAX};
pub use error::{Error, HeadError};
pub use fail::fail;
pub use limit::Limiter;
