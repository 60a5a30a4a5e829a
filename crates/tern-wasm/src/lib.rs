//! tern's in-process WebAssembly handler: the modern ISAPI, with a crash
//! that ends one request instead of the server.
//!
//! A route's module is a WASI preview 1 *command* run with CGI semantics
//! (WAGI): the CGI variables (built by `tern-cgi`'s environment builder)
//! are its whole environment, the request body its stdin, and its stdout a
//! CGI response (put together by `tern-cgi`'s assembler); stderr
//! goes to the log, tagged with the request id. It sees no file system
//! unless the route grants one read-only directory, and no network.
//!
//! The pieces: `engine` compiles the module once per route (on an engine
//! with epoch interruption and a pooling allocator sized from the route's
//! limits) into an `InstancePre`; `run` makes a fresh instance per request
//! with its limits (memory, time, output) and says how it ended;
//! `tern_cgi::Limiter` (shared with CGI) bounds the runs at once and
//! the requests waiting for one;
//! `output` carries stdout to the handler through a bounded channel (and
//! bounds stderr); the request body is read whole before a run takes an
//! instance, and is the run's stdin;
//! `environ` gives the module the core's environment block as it is;
//! `Wagi` (`wagi`) ties them to a request, answering a short run
//! whole and a long one as a stream (`stream`).
//!
//! A route's file may instead be a component of the WASI HTTP proxy
//! world, run as `wasmtime serve` runs it; [`Wasm`] (`dispatch`) tells
//! the two apart. In `proxy`: `compile` compiles and links it into a
//! `ProxyPre`, `run` runs one instance per request with the same limits,
//! the module itself turns the request into its incoming-request and its
//! response-outparam into the response, whose body `body` streams.
//!
//! `tally` counts what the runs came to (running, finished, failures by
//! cause) for [`Wasm`]'s report to the status page and the metrics.
#![forbid(unsafe_code)]

mod dispatch;
mod engine;
mod environ;
mod error;
mod limits;
mod output;
mod proxy;
mod run;
mod store;
mod stream;
mod tally;
mod wagi;

pub use dispatch::Wasm;
pub use engine::prepare_process;
pub use error::Error;
