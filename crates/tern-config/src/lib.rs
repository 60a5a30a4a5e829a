//! tern's configuration: a TOML file is walked into the public [`Config`]
//! model. Every error names the file, the line and the key, and loading
//! reports every error it finds, not just the first. A [`Config`] is always
//! valid: a running server has no "invalid config" paths.
#![forbid(unsafe_code)]

mod address;
mod admin;
mod cgi;
mod cgiplus;
pub mod defaults;
mod error;
mod fastcgi;
mod fields;
mod load;
mod model;
mod pool;
mod rules;
mod site;
mod tls;
mod units;
mod walk;
mod wasm;

pub use address::{FcgiAddress, ListenAddr, ParseAddressError, ParseListenError};
pub use error::{ConfigError, ConfigErrors};
pub use load::{for_root, load, parse};
pub use model::*;
pub use walk::LoadOptions;
