//! tern's server: listeners, hyper connections (HTTP/1.1 and HTTP/2),
//! routing by Host and path, limits and timeouts, access records, atomic
//! reload and graceful shutdown. It knows no concrete handler: the `tern`
//! binary builds a [`Site`] of `Arc<dyn Handler>`s and hands it over.
//!
//! A request's way: `listen` (accept, TCP_NODELAY) -> `conn` (hyper, timeouts)
//! -> `service` (id, limits, path decoding, routing) -> handler -> header
//! rules -> `body` (byte count; at its end the access record).
#![forbid(unsafe_code)]

mod admit;
mod body;
mod conn;
mod headers;
mod hpack_guard;
mod listen;
mod route;
mod server;
mod service;
mod site;
mod timeout;
mod version;

pub use body::ServerBody;
pub use headers::{HeaderRules, RuleError};
pub use listen::{BindError, BoundListener};
pub use route::{Match, Router, SiteRoutes, Target};
pub use server::{Server, ServerHandle};
pub use site::Site;
