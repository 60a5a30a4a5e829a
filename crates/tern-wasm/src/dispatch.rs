//! [`Wasm`], the route's handler: it decides from the file whether the
//! route runs a WASI command module with CGI semantics (WAGI, `wagi`)
//! or a component of the WASI HTTP proxy world (`proxy`), and hands each
//! request to the one it chose.

use std::path::Path;
use std::sync::Arc;

use tern_config::WasmConfig;
use tern_handler::{Exchange, Handler, HandlerFuture, PoolReport};

use crate::proxy::Proxy;
use crate::tally::Tally;
use crate::wagi::Wagi;
use crate::Error;

/// Runs a route's WebAssembly per request: a WASI preview 1 command as a
/// CGI script (WAGI), or a `wasi:http/proxy` component as `wasmtime
/// serve` would. Immutable once built: the file is compiled in
/// [`Wasm::new`], and a configuration reload builds a new handler from
/// the file as it is then.
#[derive(Debug, Clone)]
pub struct Wasm {
    runner: Runner,
    /// Names the route in its report: the module's path unless
    /// [`Wasm::named`] says otherwise.
    name: String,
    /// The most runs at once (`max_concurrent`).
    max: u64,
    /// What the runs came to.
    tally: Arc<Tally>,
}

#[derive(Debug, Clone)]
enum Runner {
    Wagi(Wagi),
    Proxy(Proxy),
}

/// What a route's file holds, in binary form.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    /// A core module (or what the module loader will say is not one).
    Module(Vec<u8>),
    /// A component.
    Component(Vec<u8>),
}

impl Wasm {
    /// Compiles the file of `cfg` and readies it to run. Fails when the
    /// file is not valid WebAssembly (or WebAssembly text, for `.wat`),
    /// when a module is not a WASI command (no `_start` or no `memory`
    /// export), or when a component does not export
    /// `wasi:http/incoming-handler` or imports what tern does not give.
    pub fn new(cfg: &WasmConfig) -> Result<Wasm, Error> {
        let tally = Arc::new(Tally::default());
        let runner = match classify(read(&cfg.module)?) {
            Kind::Module(binary) => Runner::Wagi(Wagi::new(cfg, &binary, tally.clone())?),
            Kind::Component(binary) => Runner::Proxy(Proxy::new(cfg, &binary, tally.clone())?),
        };
        Ok(Wasm {
            runner,
            name: cfg.module.display().to_string(),
            max: cfg.admission.max_concurrent as u64,
            tally,
        })
    }

    /// Names the route in [`Handler::report`] (`site /prefix`), instead
    /// of the module's path.
    #[must_use]
    pub fn named(mut self, name: &str) -> Wasm {
        name.clone_into(&mut self.name);
        self
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

    /// WAGI modules' local redirects (a proxy component has none).
    fn redirects_locally(&self) -> bool {
        matches!(self.runner, Runner::Wagi(_))
    }

    /// One report: its instances running (`busy`, at most `max`), its
    /// runs finished (`requests`, however they ended), and the traps,
    /// timeouts and memory limits among them (`failures`). No workers:
    /// an instance lives for one request.
    fn report(&self, out: &mut Vec<PoolReport>) {
        out.push(PoolReport {
            name: self.name.clone(),
            kind: self.kind(),
            busy: self.tally.running(),
            max: self.max,
            requests: self.tally.finished(),
            failures: self.tally.failures(),
            ..PoolReport::default()
        });
    }
}

/// The file in binary form: a `.wat` file is compiled from its text.
fn read(path: &Path) -> Result<Vec<u8>, Error> {
    let bad = |reason: String| Error::Load {
        path: path.to_owned(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let is_wat = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("wat"));
    if is_wat {
        return wat::parse_bytes(&bytes)
            .map(std::borrow::Cow::into_owned)
            .map_err(|e| bad(format!("not valid WebAssembly text: {e}")));
    }
    if !bytes.starts_with(b"\0asm") {
        return Err(bad(
            "not a WebAssembly binary (no `\\0asm` header; a text module needs a `.wat` name)"
                .into(),
        ));
    }
    Ok(bytes)
}

/// The preamble's layer field: 0 for a core module, 1 for a component.
fn classify(binary: Vec<u8>) -> Kind {
    let component = binary.starts_with(b"\0asm") && binary.get(6..8) == Some(&[1, 0]);
    if component {
        Kind::Component(binary)
    } else {
        Kind::Module(binary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preamble_layer_tells_a_component_from_a_module() {
        let module = wat::parse_str("(module)").unwrap();
        let component = wat::parse_str("(component)").unwrap();
        assert!(matches!(classify(module), Kind::Module(_)));
        assert!(matches!(classify(component), Kind::Component(_)));
    }
}
