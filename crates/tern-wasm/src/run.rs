//! One run of a module: a fresh [`Store`] with the request's WASI context
//! (the CGI variables as its environment, the body as stdin, the pipe to
//! the handler as stdout, a bounded capture for stderr, at most one
//! read-only directory), the memory cap and the epoch deadline, an
//! instance from the pool, and `_start` called to the end. A future, run
//! on the server's own thread: the module yields to the runtime at every
//! epoch tick and whenever its stdin or stdout must wait, so a long or
//! blocked run never holds up the other requests on that thread. The
//! result is an [`Ending`], decided here and turned into a response by
//! the handler.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use tern_cgi::env::CgiEnv;
use wasmtime::{Store, Trap};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtxBuilder};

use crate::engine::Compiled;
use crate::limits::{on_tick, Limits, MemoryBudget, MemoryLimit};
use crate::output::{Capture, ClientGone, OutputLimit, Pipe, Stalled};
use crate::store::State;
use crate::Error;

/// Everything one run needs from the request and the route.
#[derive(Debug)]
pub(crate) struct RunInput {
    /// argv[0]: the module's file name.
    pub(crate) arg0: String,
    /// The CGI variables: the module's whole environment.
    pub(crate) env: CgiEnv,
    /// The request body.
    pub(crate) stdin: Stdin,
    /// Where stdout goes.
    pub(crate) stdout: Pipe,
    /// The read-only directory given as `/`.
    pub(crate) dir: Option<PathBuf>,
    pub(crate) limits: Limits,
}

/// Where stdin comes from.
#[derive(Debug)]
pub(crate) enum Stdin {
    /// The body, read whole before the run (or none).
    Memory(Bytes),
}

/// The route's file name: a run's argv[0], and its name in log lines.
pub(crate) fn module_name(path: &Path) -> Arc<str> {
    path.file_name()
        .map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
        .into()
}

/// What a run left behind (its stdout went to the pipe).
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) stderr: Bytes,
    /// Bytes of stderr past its limit, dropped.
    pub(crate) stderr_dropped: u64,
    pub(crate) ending: Ending,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) enum Ending {
    /// `_start` returned (status 0) or the module called `proc_exit`.
    Exited(i32),
    /// A limit stopped it, it trapped, or it could not start.
    Failed(Error),
}

/// Runs the module once, until it ends or a limit stops it.
///
/// # Cancel safety
/// Dropping the future stops the module where it is (wasmtime unwinds
/// its stack) and frees its instance; nothing else is left behind.
pub(crate) async fn run(compiled: &Compiled, input: RunInput) -> Finished {
    let stderr = Capture::new(input.limits.stderr);
    let ending = match start(compiled, input, &stderr).await {
        Ok(()) => Ending::Exited(0),
        Err(e) => e,
    };
    let (stderr, stderr_dropped) = stderr.take();
    Finished {
        stderr,
        stderr_dropped,
        ending,
    }
}

async fn start(compiled: &Compiled, input: RunInput, stderr: &Capture) -> Result<(), Ending> {
    let limits = input.limits;
    let deadline = tokio::time::Instant::now() + limits.timeout;
    let mut wasi = WasiCtxBuilder::new();
    // The environment is not the context's: see `crate::environ`.
    wasi.args(&[input.arg0])
        .stdout(input.stdout.until(deadline))
        // File access (a granted directory) stays on the blocking pool:
        // a cold disk read must not stall the thread's other requests.
        .stderr(stderr.clone());
    match input.stdin {
        Stdin::Memory(b) => wasi.stdin(MemoryInputPipe::new(b)),
    };
    if let Some(dir) = &input.dir {
        wasi.preopened_dir(dir, "/", FsPerms::ReadOnly)
            .map_err(|e| {
                Ending::Failed(Error::Instantiate(format!(
                    "opening {}: {e:#}",
                    dir.display()
                )))
            })?;
    }
    let state = State {
        wasi: wasi.build_p1(),
        env: input.env,
        cap: MemoryBudget::new(limits.memory),
    };
    let mut store = Store::new(&compiled.engine, state);
    store.limiter(|s| &mut s.cap);
    // Every tick, the module yields to the runtime; past the deadline it
    // is stopped. Wall-clock time, as the pipe's deadline is: a run
    // waiting on its client counts too.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| on_tick(deadline).map_err(wasmtime::Error::new));
    let instance = compiled
        .pre
        .instantiate_async(&mut store)
        .await
        .map_err(|e| classify(e, limits))?;
    let entry = instance
        .get_typed_func::<(), ()>(&mut store, "_start")
        .map_err(|e| Ending::Failed(Error::Instantiate(format!("{e:#}"))))?;
    entry
        .call_async(&mut store, ())
        .await
        .map_err(|e| classify(e, limits))
}

/// Names the cause of a failed run: the module's own exit, one of the
/// route's limits, or a trap.
fn classify(e: wasmtime::Error, limits: Limits) -> Ending {
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        return Ending::Exited(exit.0);
    }
    Ending::Failed(cause(e, limits))
}

fn cause(e: wasmtime::Error, limits: Limits) -> Error {
    if e.downcast_ref::<OutputLimit>().is_some() {
        return Error::OutputTooLarge(limits.output);
    }
    if e.downcast_ref::<MemoryLimit>().is_some() {
        return Error::OutOfMemory(limits.memory);
    }
    if e.downcast_ref::<Stalled>().is_some() {
        return Error::Timeout(limits.timeout);
    }
    if e.downcast_ref::<ClientGone>().is_some() {
        return Error::Abandoned;
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Error::Timeout(limits.timeout),
        Some(t) => Error::Trap(t.to_string()),
        None => Error::Trap(format!("{e:#}")),
    }
}
