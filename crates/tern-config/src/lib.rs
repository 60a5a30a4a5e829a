//! tern's configuration: a TOML file is walked into the public [`Config`]
//! model. Every error names the file, the line and the key, and loading
//! reports every error it finds, not just the first. A [`Config`] is always
//! valid: a running server has no "invalid config" paths.
#![forbid(unsafe_code)]

mod address;
pub mod defaults;
mod error;
mod gateway;
mod load;
mod model;
mod persistent;
mod site;
mod units;
mod walk;
mod wasm;

pub use address::{FcgiAddress, ParseAddressError};
pub use error::{ConfigError, ConfigErrors};
pub use load::{for_root, load, parse, LoadOptions};
pub use model::*;
