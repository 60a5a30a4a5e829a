//! tern's configuration: a TOML file is parsed into private raw types, then
//! validated into the public [`Config`] model. Every error names the file,
//! the line and the key. A [`Config`] is always valid.
#![forbid(unsafe_code)]

mod model;

pub use model::*;
