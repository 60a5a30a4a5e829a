//! A route's limits on one run, and how a store enforces them, for both
//! runners (WAGI modules and proxy components): the memory budget over
//! an instance's memories and the epoch tick that yields to the runtime
//! and stops a run past its deadline.

use std::time::Duration;

use tern_config::WasmConfig;
use wasmtime::{ResourceLimiter, Trap, UpdateDeadline};

/// A route's limits on one run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) memory: u64,
    pub(crate) timeout: Duration,
    pub(crate) output: u64,
    pub(crate) stderr: u64,
}

impl Limits {
    /// The limits `cfg` sets.
    pub(crate) fn of(cfg: &WasmConfig) -> Limits {
        Limits {
            memory: cfg.memory_limit,
            timeout: cfg.timeout,
            output: cfg.max_output_bytes,
            stderr: cfg.max_stderr_bytes,
        }
    }
}

/// What a running module does at an epoch tick: yield to the runtime and
/// go on for another tick, or stop with [`Trap::Interrupt`] (a timeout)
/// once the deadline has passed.
pub(crate) fn on_tick(deadline: tokio::time::Instant) -> Result<UpdateDeadline, Trap> {
    if tokio::time::Instant::now() >= deadline {
        return Err(Trap::Interrupt);
    }
    // tokio's own yield: it wakes the task only after the runtime has
    // polled its sockets and timers, so a looping module cannot keep the
    // thread's other connections from being noticed.
    Ok(UpdateDeadline::YieldCustom(
        1,
        Box::pin(tokio::task::yield_now()),
    ))
}

/// The error a `memory.grow` past the limit raises: a trap, not the
/// `-1` the module could ignore and retry forever.
#[derive(Debug, thiserror::Error)]
#[error("memory beyond the limit of {0} bytes")]
pub(crate) struct MemoryLimit(usize);

/// The route's memory limit over all of an instance's memories: a module
/// has one; a component is one program, whatever number of memories its
/// toolchain gave it.
#[derive(Debug)]
pub(crate) struct MemoryBudget {
    limit: usize,
    used: usize,
}

impl MemoryBudget {
    pub(crate) fn new(limit: u64) -> MemoryBudget {
        MemoryBudget {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            used: 0,
        }
    }
}

impl ResourceLimiter for MemoryBudget {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let used = self.used.saturating_add(desired.saturating_sub(current));
        if used > self.limit {
            return Err(wasmtime::Error::new(MemoryLimit(self.limit)));
        }
        self.used = used;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // The pool's table limit applies.
        Ok(true)
    }
}
