//! One run of a proxy component: a fresh [`Store`] with the request's
//! WASI context (no environment, no network, stdout and stderr captured
//! for the log, at most one read-only directory), a memory budget over
//! all of the component's memories, the epoch deadline, an instance from
//! the pool, and `wasi:http/incoming-handler#handle` called to the end.
//! The component answers through its response-outparam while it runs;
//! the run itself says only how it ended, decided here.

use std::path::PathBuf;
use std::sync::Arc;

use tern_handler::RequestId;
use tokio::time::Instant;
use wasmtime::component::Resource;
use wasmtime::{Store, Trap};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};
use wasmtime_wasi_http::p2::types::{HostIncomingRequest, HostResponseOutparam};

use super::compile::CompiledProxy;
use super::store::{ProxyStore, State};
use crate::limits::{on_tick, Limits, MemoryBudget, MemoryLimit};
use crate::output::Capture;
use crate::Error;

/// What a run is given besides its request.
#[derive(Debug)]
pub(crate) struct RunSetup {
    /// argv[0]: the component's file name.
    pub(crate) arg0: String,
    /// The read-only directory given as `/`.
    pub(crate) dir: Option<PathBuf>,
    pub(crate) limits: Limits,
    /// Where stdout and stderr go (logged when the run ends).
    pub(crate) output: Capture,
    /// When the run is stopped, whatever it is doing.
    pub(crate) deadline: Instant,
}

/// A store with the request's context and limits.
pub(crate) fn store(compiled: &CompiledProxy, setup: &RunSetup) -> Result<ProxyStore, Error> {
    let mut wasi = WasiCtxBuilder::new();
    wasi.args(std::slice::from_ref(&setup.arg0))
        .stdout(setup.output.clone())
        .stderr(setup.output.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    if let Some(dir) = &setup.dir {
        wasi.preopened_dir(dir, "/", FsPerms::ReadOnly)
            .map_err(|e| Error::Instantiate(format!("opening {}: {e:#}", dir.display())))?;
    }
    let state = State::new(wasi.build(), MemoryBudget::new(setup.limits.memory));
    let mut store = Store::new(compiled.pre.engine(), state);
    store.limiter(|s| s.budget());
    // As for modules: the component yields to the runtime every tick
    // and is stopped past its deadline.
    let deadline = setup.deadline;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| on_tick(deadline).map_err(wasmtime::Error::new));
    Ok(store)
}

/// Instantiates the component in `store` and calls its handler with
/// `request` and `outparam`, until it returns or a limit stops it. The
/// store comes back with the ending: the response body's writer lives in
/// it, and it is dropped only once the ending is known (a body whose
/// writer is gone looks finished).
///
/// # Cancel safety
/// Dropping the future stops the component where it is and frees its
/// instance; its output is logged all the same.
pub(crate) async fn run(
    compiled: &CompiledProxy,
    mut store: ProxyStore,
    request: Resource<HostIncomingRequest>,
    outparam: Resource<HostResponseOutparam>,
    setup: RunSetup,
    log: OutputLog,
) -> (Result<(), Error>, ProxyStore) {
    let _log = log;
    let limits = setup.limits;
    let handled = tokio::time::timeout_at(setup.deadline, async {
        let proxy = compiled.pre.instantiate_async(&mut store).await?;
        proxy
            .wasi_http_incoming_handler()
            .call_handle(&mut store, request, outparam)
            .await
    })
    .await;
    let ending = match handled {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(cause(e, limits)),
        // Blocked in the host (a client that does not read the body),
        // where the epoch deadline cannot reach it.
        Err(_) => Err(Error::Timeout(limits.timeout)),
    };
    (ending, store)
}

fn cause(e: wasmtime::Error, limits: Limits) -> Error {
    if e.downcast_ref::<MemoryLimit>().is_some() {
        return Error::OutOfMemory(limits.memory);
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Error::Timeout(limits.timeout),
        Some(t) => Error::Trap(t.to_string()),
        None => Error::Trap(format!("{e:#}")),
    }
}

/// The component's stdout and stderr, a log line per line, tagged with
/// the request id, when the run ends or is dropped.
#[derive(Debug)]
pub(crate) struct OutputLog {
    pub(crate) output: Capture,
    pub(crate) name: Arc<str>,
    pub(crate) id: RequestId,
}

impl Drop for OutputLog {
    fn drop(&mut self) {
        let (bytes, dropped) = self.output.take();
        let (id, module) = (self.id, &*self.name);
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            tracing::warn!(%id, module, "wasm output: {}", String::from_utf8_lossy(line));
        }
        if dropped > 0 {
            tracing::warn!(%id, module, "wasm output: {dropped} more bytes dropped");
        }
    }
}
