//! [`Proxy`]: a request's way through a `wasi:http/proxy` component, as
//! `wasmtime serve` runs one. A slot is taken (the same admission as for
//! modules), the request becomes the component's incoming-request (its
//! body streamed in as the component reads it), and the run is driven in
//! the request's own task until the component sets its response-outparam.
//! The response then starts, its body streamed from the component's
//! outgoing-body while the run, if still going, goes on as a task of its
//! own. Every failure before the head becomes a status and one log line
//! naming the component and the cause.

mod body;
mod compile;
mod run;
mod store;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{header, HeaderValue, Response};
use http_body_util::BodyExt as _;
use tern_cgi::Limiter;
use tern_config::WasmConfig;
use tern_handler::{
    BodyError, ConnInfo, Exchange, HandlerFuture, PeerAddr, RequestBody, ResponseBody,
};
use tokio::sync::oneshot;
use tokio::time::Instant;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};

use crate::limits::Limits;
use crate::output::Capture;
use crate::tally::Tally;
use crate::Error;

use body::ProxyBody;
use compile::CompiledProxy;
use run::{OutputLog, RunSetup};
use store::ProxyStore;

/// Serves a route's proxy component.
#[derive(Debug, Clone)]
pub(crate) struct Proxy {
    route: Arc<Route>,
}

#[derive(Debug)]
struct Route {
    compiled: Arc<CompiledProxy>,
    /// The component's file name: its argv[0], and its name in log lines.
    name: Arc<str>,
    dir: Option<std::path::PathBuf>,
    limits: Limits,
    admission: Limiter,
    tally: Arc<Tally>,
}

impl Proxy {
    /// Compiles the component `binary` (read from `cfg.module`); its runs
    /// are counted in `tally`.
    pub(crate) fn new(cfg: &WasmConfig, binary: &[u8], tally: Arc<Tally>) -> Result<Proxy, Error> {
        Ok(Proxy {
            route: Arc::new(Route {
                compiled: Arc::new(CompiledProxy::load(cfg, binary)?),
                name: crate::run::module_name(&cfg.module),
                dir: cfg.dir.clone(),
                limits: Limits::of(cfg),
                admission: Limiter::new(&cfg.admission),
                tally,
            }),
        })
    }

    pub(crate) fn call(&self, exchange: Exchange) -> HandlerFuture {
        let route = self.route.clone();
        HandlerFuture::new(async move {
            let id = exchange.id;
            let path = exchange.path.clone();
            match Route::answer(&route, exchange).await {
                Ok(resp) => resp,
                Err(e) => tern_cgi::fail("wasm", Some(&route.name), e.status_error(), id, &path),
            }
        })
    }
}

/// A run of the component, handing back its store with its ending.
type RunFuture = Pin<Box<dyn Future<Output = (Result<(), Error>, ProxyStore)> + Send>>;

/// What the component put in its response-outparam.
type Outcome = Result<Response<wasmtime_wasi_http::p2::body::HyperOutgoingBody>, ErrorCode>;

impl Route {
    async fn answer(
        this: &Arc<Route>,
        exchange: Exchange,
    ) -> Result<Response<ResponseBody>, Error> {
        let Exchange {
            request, conn, id, ..
        } = exchange;
        // Read whole before the request takes an instance (as for modules):
        // a client that sends slowly holds only its own connection.
        let (parts, body) = request.into_parts();
        let body = body.collect().await.map_err(Error::Body)?.to_bytes();
        let request = http::Request::from_parts(parts, RequestBody::full(body));
        let slot = this.admission.admit().await?;
        let output = Capture::new(this.limits.stderr);
        let setup = RunSetup {
            arg0: this.name.to_string(),
            dir: this.dir.clone(),
            limits: this.limits,
            output: output.clone(),
            deadline: Instant::now() + this.limits.timeout,
        };
        let mut store = run::store(&this.compiled, &setup)?;
        let scheme = if conn.secure {
            Scheme::Https
        } else {
            Scheme::Http
        };
        let (tx, mut rx) = oneshot::channel();
        let (request, outparam) = {
            let mut http = wasmtime_wasi_http::WasiHttpView::http(store.data_mut());
            let request = http
                .new_incoming_request(scheme, incoming(request, &conn))
                .map_err(|e| Error::Instantiate(format!("the request: {e:#}")))?;
            let outparam = http
                .new_response_outparam(tx)
                .map_err(|e| Error::Instantiate(format!("{e:#}")))?;
            (request, outparam)
        };
        let log = OutputLog {
            output,
            name: this.name.clone(),
            id,
        };
        let me = this.clone();
        let mut run: RunFuture = Box::pin(async move {
            let _slot = slot;
            let _active = me.tally.start();
            let (ending, store) =
                run::run(&me.compiled, store, request, outparam, setup, log).await;
            if let Err(e) = &ending {
                me.tally.failed(e);
            }
            (ending, store)
        });
        // Driven here until the head: a request that fails before it
        // drops the run, which stops the component.
        let (outcome, ended): (Outcome, Option<Result<(), Error>>) = tokio::select! {
            biased;
            outcome = &mut rx => match outcome {
                Ok(o) => (o, None),
                // The outparam was dropped unset, with the store still
                // alive: the run decides.
                Err(_) => return Err(run.await.0.err().unwrap_or_else(unset)),
            },
            (ending, _store) = &mut run => match rx.try_recv() {
                Ok(o) => (o, Some(ending)),
                Err(_) => return Err(ending.err().unwrap_or_else(unset)),
            },
        };
        if let Some(Err(e)) = ended {
            return Err(e);
        }
        let response = outcome.map_err(|code| Error::NoResponse(format!("{code:?}")))?;
        let (parts, inner) = response.into_parts();
        let body = ProxyBody {
            inner,
            // A run still going goes on as a task of its own: the body
            // is polled only as the client reads, and the run must reach
            // its limits regardless.
            run: ended.is_none().then(|| tokio::spawn(run)),
            written: 0,
            limit: this.limits.output,
            done: false,
            name: this.name.clone(),
            id,
        };
        Ok(Response::from_parts(parts, ResponseBody::stream(body)))
    }
}

fn unset() -> Error {
    Error::NoResponse("it returned without setting its response-outparam".into())
}

/// The request as the component's incoming-request is made from: the
/// body's own errors as `wasi:http` names them, and an authority even
/// when the client sent no Host (HTTP/1.0), since the component's
/// request must have one.
fn incoming(
    request: http::Request<RequestBody>,
    conn: &ConnInfo,
) -> http::Request<
    impl http_body::Body<Data = bytes::Bytes, Error = wasmtime_wasi_http::Error> + Send + 'static,
> {
    let mut request = request.map(|b| {
        b.map_err(|e| match e {
            BodyError::TooLarge { limit } => {
                wasmtime_wasi_http::Error::HttpRequestBodySize(Some(limit))
            }
            // hyper's own error as it is; a body tern's HTTP/1 loop
            // decoded broke its framing, or its client left.
            BodyError::Read(e) => match e.downcast::<hyper::Error>() {
                Ok(e) => wasmtime_wasi_http::Error::Hyper(*e),
                Err(_) => wasmtime_wasi_http::Error::HttpProtocolError,
            },
            BodyError::TooSlow { .. } => wasmtime_wasi_http::Error::ConnectionReadTimeout,
        })
    });
    if request.uri().authority().is_none() && !request.headers().contains_key(header::HOST) {
        let host = match &conn.local {
            PeerAddr::Tcp(a) => HeaderValue::from_str(&a.to_string()).ok(),
            PeerAddr::Unix(_) => None,
        };
        request.headers_mut().insert(
            header::HOST,
            host.unwrap_or(HeaderValue::from_static("localhost")),
        );
    }
    request
}
