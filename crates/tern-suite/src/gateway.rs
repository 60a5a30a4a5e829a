//! How one server serves one gateway URL space ([`Feature::prefix`]): a
//! [`Gateway`] names the socket or program behind it. tern's config and the
//! peers' configs are all written from these, so that a row's URL means the
//! same thing on every server. Which gateways a server gets, and the
//! processes behind them, the suite decides elsewhere (`backends.rs`).

use std::path::Path;

use crate::row::Feature;

/// How one server serves one gateway feature.
#[derive(Debug, Clone, Copy)]
pub enum Gateway<'a> {
    /// `/cgi-bin/` as CGI; nginx passes it to fcgiwrap.
    Cgi {
        /// fcgiwrap's socket, for nginx.
        fcgiwrap: Option<&'a Path>,
    },
    /// `/cgiplus-bin/` as CGIplus scripts.
    CgiPlus,
    /// `/fcgi/` to the server's own FastCGI responder.
    FastCgi {
        /// The responder's socket.
        socket: &'a Path,
    },
    /// `/fcgi-spawn/` to processes of the responder the server runs.
    FastCgiSpawned {
        /// The responder's executable.
        program: &'a Path,
    },
    /// `/rte/` in the server's Perl engine.
    PerlEngine,
    /// `*.php` under `/php/` to the server's own php-fpm.
    PhpFpm {
        /// php-fpm's socket.
        socket: &'a Path,
    },
    /// `*.php` under `/phpcgi/` run by php-cgi as CGI.
    PhpCgi {
        /// php-cgi's executable.
        program: &'a Path,
    },
    /// `/wasm/<stem>` runs the module `wasm/<stem>.wat` in process.
    Wasm,
}

impl Gateway<'_> {
    /// The feature it serves.
    pub fn feature(&self) -> Feature {
        match self {
            Gateway::Cgi { .. } => Feature::Cgi,
            Gateway::CgiPlus => Feature::CgiPlus,
            Gateway::FastCgi { .. } => Feature::FastCgi,
            Gateway::FastCgiSpawned { .. } => Feature::FastCgiSpawned,
            Gateway::PerlEngine => Feature::PerlEngine,
            Gateway::PhpFpm { .. } => Feature::PhpFpm,
            Gateway::PhpCgi { .. } => Feature::PhpCgi,
            Gateway::Wasm => Feature::Wasm,
        }
    }
}
