//! tern's server: listeners, hyper connections (HTTP/1.1 and HTTP/2),
//! routing by Host and path, limits and timeouts, access records, atomic
//! reload and graceful shutdown. It knows no concrete handler: the `tern`
//! binary builds a [`Site`] of `Arc<dyn Handler>`s and hands it over.
//!
//! A request's way: `listen` (accept, TCP_NODELAY) -> `conn` (hyper, timeouts)
//! -> `service` (the phases, in `phase/`: admit, rewrite, route, authorize,
//! the handler, respond) -> `body` (byte count; at its end the log phase).
#![forbid(unsafe_code)]

mod body;
mod conn;
mod hpack_guard;
mod listen;
mod phase;
mod plaintext;
mod rewind;
mod route;
mod server;
mod service;
mod site;
mod timeout;
mod tls;
mod version;

pub use body::ServerBody;
pub use listen::{BindError, BoundListener};
pub use phase::authorize::Access;
pub use phase::log::Sinks;
pub use phase::respond::{HeaderRules, RuleError};
pub use phase::rewrite::Rewrite;
pub use phase::{Flow, SiteRules};
pub use route::{Match, Router, SiteRoutes, Target};
pub use server::{Server, ServerHandle};
pub use site::Site;
