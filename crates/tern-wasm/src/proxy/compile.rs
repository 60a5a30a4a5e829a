//! A route's compiled proxy component: an [`Engine`] like a module
//! route's (epoch interruption, a pooling allocator sized from the
//! route's limits) but with room for component instances, the component
//! compiled once, linked against WASI preview 2 and `wasi:http`, and
//! checked to export `wasi:http/incoming-handler` by building the
//! [`ProxyPre`] each request's instance comes from.

use tern_config::WasmConfig;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy};
use wasmtime_wasi_http::p2::bindings::ProxyPre;

use super::store::State;
use crate::engine::EpochClock;
use crate::Error;

/// The compiled component, ready to instantiate.
pub(crate) struct CompiledProxy {
    pub(crate) pre: ProxyPre<State>,
    /// Stops the epoch thread when the route is dropped (on reload).
    _clock: EpochClock,
}

impl std::fmt::Debug for CompiledProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledProxy")
            .field("clock", &self._clock)
            .finish_non_exhaustive()
    }
}

impl CompiledProxy {
    /// Compiles the component `binary`, read from `cfg.module`.
    pub(crate) fn load(cfg: &WasmConfig, binary: &[u8]) -> Result<CompiledProxy, Error> {
        let bad = |reason: String| Error::Load {
            path: cfg.module.clone(),
            reason,
        };
        let engine = engine(cfg)?;
        let component = Component::new(&engine, binary)
            .map_err(|e| bad(format!("not a valid component: {e:#}")))?;
        let mut linker: Linker<State> = Linker::new(&engine);
        // All of WASI preview 2, as `wasmtime serve` links by default: a
        // proxy built by a toolchain often imports more than the proxy
        // world (the environment, the file system). The context decides
        // what the component actually gets.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .and_then(|()| wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker))
            .map_err(|e| Error::Engine(format!("{e:#}")))?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| bad(format!("{e:#}")))?;
        let pre = ProxyPre::new(pre).map_err(|e| {
            bad(format!(
                "not a WASI HTTP proxy (no `wasi:http/incoming-handler` export): {e:#}"
            ))
        })?;
        let clock = EpochClock::start(engine)
            .map_err(|e| Error::Engine(format!("starting the epoch thread: {e}")))?;
        Ok(CompiledProxy { pre, _clock: clock })
    }
}

/// Core instances one component may hold: its own modules and the shims
/// and adapters toolchains add.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;

/// Linear memories one component may hold (a toolchain's adapter may
/// have its own beside the program's).
const MEMORIES_PER_COMPONENT: u32 = 2;

/// Tables one component may hold (the shims' indirect-call tables).
const TABLES_PER_COMPONENT: u32 = 4;

/// An engine for one route: a module route's pool (`crate::engine`),
/// widened to an instance of the component, with its core instances,
/// memories and tables, for every run the route may have at once.
fn engine(cfg: &WasmConfig) -> Result<Engine, Error> {
    let slots = u32::try_from(cfg.admission.max_concurrent).unwrap_or(u32::MAX);
    let mut pool = crate::engine::pool(cfg);
    pool.total_component_instances(slots)
        .total_core_instances(slots.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
        .total_memories(slots.saturating_mul(MEMORIES_PER_COMPONENT))
        .total_tables(slots.saturating_mul(TABLES_PER_COMPONENT))
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT);
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .wasm_component_model(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).map_err(|e| Error::Engine(format!("{e:#}")))
}
