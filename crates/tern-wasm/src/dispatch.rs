//! [`Wasm`], the route's handler: it decides from the file whether the
//! route runs a WASI command module with CGI semantics (WAGI, `handler`)
//! or a component of the WASI HTTP proxy world (`proxy`), and hands each
//! request to the one it chose.

use std::path::Path;

use tern_config::WasmConfig;
use tern_handler::{Exchange, Handler, HandlerFuture};

use crate::proxy::Proxy;
use crate::Error;

/// Runs a route's WebAssembly per request: a WASI preview 1 command as a
/// CGI script (WAGI), or a `wasi:http/proxy` component as `wasmtime
/// serve` would. Immutable once built: the file is compiled in
/// [`Wasm::new`], and a configuration reload builds a new handler from
/// the file as it is then.
#[derive(Debug, Clone)]
pub struct Wasm {
    runner: Runner,
}

#[derive(Debug, Clone)]
enum Runner {
    Wagi(crate::handler::Wasm),
    Proxy(Proxy),
}

/// What a route's file holds.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// A core module (or something that is not WebAssembly at all: the
    /// module loader names what is wrong with it).
    Module,
    /// A component, in binary form.
    Component(Vec<u8>),
}

impl Wasm {
    /// Compiles the file of `cfg` and readies it to run. Fails when the
    /// file is not valid WebAssembly (or WebAssembly text, for `.wat`),
    /// when a module is not a WASI command (no `_start` or no `memory`
    /// export), or when a component does not export
    /// `wasi:http/incoming-handler` or imports what tern does not give.
    pub fn new(cfg: &WasmConfig) -> Result<Wasm, Error> {
        let runner = match kind(&cfg.module)? {
            Kind::Module => Runner::Wagi(crate::handler::Wasm::new(cfg)?),
            Kind::Component(binary) => Runner::Proxy(Proxy::new(cfg, &binary)?),
        };
        Ok(Wasm { runner })
    }
}

impl Handler for Wasm {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        match &self.runner {
            Runner::Wagi(w) => w.call(exchange),
            Runner::Proxy(p) => p.call(exchange),
        }
    }

    fn kind(&self) -> &'static str {
        "wasm"
    }
}

/// Reads the file far enough to tell a component from a module. Text
/// that does not parse is left to the module loader, whose error names
/// the file and the place.
fn kind(path: &Path) -> Result<Kind, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::Load {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let is_wat = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("wat"));
    if !is_wat {
        return Ok(classify(bytes));
    }
    Ok(match wat::parse_bytes(&bytes) {
        Ok(binary) => classify(binary.into_owned()),
        Err(_) => Kind::Module,
    })
}

/// The preamble's layer field: 0 for a core module, 1 for a component.
fn classify(binary: Vec<u8>) -> Kind {
    let component = binary.starts_with(b"\0asm") && binary.get(6..8) == Some(&[1, 0]);
    if component {
        Kind::Component(binary)
    } else {
        Kind::Module
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preamble_layer_tells_a_component_from_a_module() {
        let module = wat::parse_str("(module)").unwrap();
        let component = wat::parse_str("(component)").unwrap();
        assert_eq!(classify(module), Kind::Module);
        assert!(matches!(classify(component), Kind::Component(_)));
        assert_eq!(classify(b"#!/bin/sh".to_vec()), Kind::Module);
    }
}
