//! tern's gateways: how a request reaches a program and how the program's
//! answer comes back.
//!
//! One core, several transports. The core is pure and shared: [`env`]
//! builds the CGI/1.1 meta-variables (RFC 3875 §4) with the security
//! defaults (httpoxy, Authorization, header-name collisions, Shellshock),
//! and [`response`] parses a script's response head strictly and decides
//! between a document, a client redirect and a local redirect. The
//! transport here is CGI, a process per request.
#![forbid(unsafe_code)]

pub mod env;
mod error;
mod resolve;
pub mod response;

pub use error::{Error, HeadError};
