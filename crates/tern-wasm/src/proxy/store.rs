//! The data of a proxy run's store: the WASI and `wasi:http` contexts
//! (with no network), their resources, and the memory budget. Its own file
//! so that compiling (which links against it) and running (which fills
//! it) depend on it rather than on each other.

use std::future::Future;

use wasmtime::component::ResourceTable;
use wasmtime::Store;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{
    RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

use crate::limits::MemoryBudget;

/// A store's data: the WASI and `wasi:http` contexts, their resources,
/// and the memory budget.
pub(crate) struct State {
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: NoNetwork,
    budget: MemoryBudget,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl State {
    /// The data of a store with the WASI context `wasi`, `wasi:http`
    /// without a network, and `budget` over its memories.
    pub(crate) fn new(wasi: WasiCtx, budget: MemoryBudget) -> State {
        State {
            table: ResourceTable::new(),
            wasi,
            http: WasiHttpCtx::new(),
            hooks: NoNetwork,
            budget,
        }
    }

    /// The memory budget, for the store's limiter.
    pub(crate) fn budget(&mut self) -> &mut MemoryBudget {
        &mut self.budget
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for State {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// How `wasi:http` reports the fate of a body it sends or receives.
type IoFuture = Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>;

/// `wasi:http/outgoing-handler` as tern grants it: every request is
/// refused, as the component has no network.
#[derive(Debug)]
struct NoNetwork;

impl WasiHttpHooks for NoNetwork {
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> Box<
        dyn Future<Output = wasmtime_wasi_http::Result<(http::Response<WasiBody>, IoFuture)>>
            + Send,
    > {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}

/// A store ready for one request, with its request and outparam.
pub(crate) type ProxyStore = Store<State>;
