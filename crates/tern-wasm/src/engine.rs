//! A route's compiled module: the wasmtime [`Engine`] (epoch interruption,
//! the pooling allocator sized from the route's limits), the module
//! compiled once and checked to be a WASI command, and an
//! [`InstancePre`] with WASI preview 1 linked in its async form (a run is
//! a future on the server's own thread, not a blocking call), from which
//! each request's instance is made. The epoch clock is a thread that
//! ticks the engine while the route lives: each tick makes a running
//! module yield to the runtime, and ends it past its timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tern_config::WasmConfig;
use wasmtime::{
    Config, Enabled, Engine, ExternType, InstanceAllocationStrategy, InstancePre, Linker, Module,
    PoolingAllocationConfig,
};

use crate::store::State;
use crate::Error;

/// How often the epoch advances: the granularity of the timeout, and
/// the longest a running module keeps its thread from other requests.
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// The compiled module, ready to instantiate.
pub(crate) struct Compiled {
    pub(crate) engine: Engine,
    pub(crate) pre: InstancePre<State>,
    /// Stops the epoch thread when the route is dropped (on reload).
    _clock: EpochClock,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("clock", &self._clock)
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// Compiles the module `binary` (read from `cfg.module`) for an
    /// engine sized from `cfg`.
    pub(crate) fn load(cfg: &WasmConfig, binary: &[u8]) -> Result<Compiled, Error> {
        let engine = engine(cfg)?;
        let bad = |reason: String| Error::Load {
            path: cfg.module.clone(),
            reason,
        };
        let module =
            Module::new(&engine, binary).map_err(|e| bad(format!("not a valid module: {e:#}")))?;
        check_exports(&module, cfg.memory_limit).map_err(bad)?;
        let mut linker: Linker<State> = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_async(&mut linker, |s: &mut State| &mut s.wasi)
            .and_then(|()| crate::environ::add_to_linker(&mut linker))
            .map_err(|e| Error::Engine(format!("{e:#}")))?;
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| bad(format!("{e:#}")))?;
        let clock = EpochClock::start(engine.clone())
            .map_err(|e| Error::Engine(format!("starting the epoch thread: {e}")))?;
        Ok(Compiled {
            engine,
            pre,
            _clock: clock,
        })
    }
}

/// Sets up, while the process has one thread, what wasmtime sets up lazily
/// for the whole process: the `/proc/self/pagemap` file behind
/// `pagemap_scan`, opened on the first pooling engine. Its fork handler reads
/// it in every forked child; a child forked by another thread (a pool
/// starting a FastCGI worker) while the first engine was being made would
/// wait forever for an initialisation that only the parent finishes, before
/// its exec. A forked child seen stuck so (one thread, in a futex wait, with
/// tern's command line) is why this exists. Costs one small engine.
pub fn prepare_process() {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_core_instances(1)
        .total_memories(1)
        .total_tables(1)
        .total_component_instances(0)
        .max_memory_size(1 << 16)
        .pagemap_scan(Enabled::Auto);
    let mut config = Config::new();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    // A failure here is reported again, with its route, when a route makes
    // its engine.
    let _ = Engine::new(&config);
}

/// Bytes of each linear memory kept resident (zeroed by memset) between
/// instances.
const MEMORY_KEEP_RESIDENT: usize = 1 << 20;

/// The same for tables.
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Decommits gathered before the kernel is asked, so that a TLB flush
/// covers many instances.
const DECOMMIT_BATCH: usize = 16;

/// An engine for one route: compiled code is specific to it, and its pool
/// holds as many instances as the route may run at once.
fn engine(cfg: &WasmConfig) -> Result<Engine, Error> {
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool(cfg)));
    Engine::new(&config).map_err(|e| Error::Engine(format!("{e:#}")))
}

/// A route's pooling allocator, for a module's instances: one slot per
/// run the route may have at once, and the reset tuned for short runs.
/// A component route widens the counts (`proxy::compile`).
pub(crate) fn pool(cfg: &WasmConfig) -> PoolingAllocationConfig {
    let slots = u32::try_from(cfg.admission.max_concurrent).unwrap_or(u32::MAX);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_core_instances(slots)
        .total_memories(slots)
        .total_tables(slots)
        .total_component_instances(0)
        .max_memories_per_module(1)
        .max_memory_size(usize::try_from(cfg.memory_limit).unwrap_or(usize::MAX))
        // A finished instance's memory is reset with memset up to this
        // much instead of madvise(MADV_DONTNEED): on this VM every madvise
        // flushed the TLB of the other CPU by interrupt, 17% of a "Hello!"
        // request's CPU. Larger memories still go back to the kernel, in
        // batches.
        .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
        .table_keep_resident(TABLE_KEEP_RESIDENT)
        // Where the kernel has PAGEMAP_SCAN (Linux 6.7), only the pages a
        // run wrote are reset, not all of the resident part: a "Hello!"
        // run dirties two pages of its 64 KiB.
        .pagemap_scan(Enabled::Auto)
        .decommit_batch_size(DECOMMIT_BATCH);
    pool
}

/// A WASI command exports `_start` (a function without parameters or
/// results) and `memory`, and needs no more memory to start than it may
/// have.
fn check_exports(module: &Module, memory_limit: u64) -> Result<(), String> {
    let mut start = false;
    let mut memory = false;
    for export in module.exports() {
        match (export.name(), export.ty()) {
            ("_start", ExternType::Func(f)) => {
                if f.params().len() != 0 || f.results().len() != 0 {
                    return Err("`_start` must take and return nothing".into());
                }
                start = true;
            }
            ("memory", ExternType::Memory(m)) => {
                let needed = m.minimum().saturating_mul(m.page_size());
                if needed > memory_limit {
                    return Err(format!(
                        "its memory starts at {needed} bytes, more than memory_limit ({memory_limit})"
                    ));
                }
                memory = true;
            }
            _ => {}
        }
    }
    match (start, memory) {
        (true, true) => Ok(()),
        (false, _) => Err("no `_start` export: not a WASI command".into()),
        (true, false) => Err("no `memory` export".into()),
    }
}

/// The thread that advances the engine's epoch every [`TICK`]; stopped
/// (and joined) when dropped.
#[derive(Debug)]
pub(crate) struct EpochClock {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl EpochClock {
    pub(crate) fn start(engine: Engine) -> std::io::Result<EpochClock> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = thread::Builder::new()
            .name("tern-wasm-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    thread::sleep(TICK);
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochClock {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochClock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // At most one tick's wait.
            let _ = t.join();
        }
    }
}
