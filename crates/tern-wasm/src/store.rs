//! The data of a WAGI run's store: what the engine links against, what
//! `environ` reads the environment from, and what `run` fills for each
//! request. Its own file so that those three depend on it rather than on
//! each other.

use tern_cgi::env::CgiEnv;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::limits::MemoryBudget;

/// A store's data: the WASI context, the request's environment (which
/// `environ` gives the module) and the memory cap.
pub(crate) struct State {
    pub(crate) wasi: WasiP1Ctx,
    pub(crate) env: CgiEnv,
    pub(crate) cap: MemoryBudget,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("cap", &self.cap)
            .finish_non_exhaustive()
    }
}
