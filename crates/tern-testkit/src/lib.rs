//! Test support for end-to-end tests: start the `tern` binary on
//! 127.0.0.1:0 with a configuration, find its port from its first line of
//! output, send raw bytes (so no client library normalises a hostile
//! request), read and parse responses, signal and stop the process.
#![forbid(unsafe_code)]

mod process;
mod wire;

pub use process::Tern;
pub use wire::{request, Response};
