//! [`Wagi`], the WAGI runner: a request's way through a WASI command
//! module run with CGI semantics. The body is read
//! whole first, in memory (the server's body limit bounds it, and its
//! pace is enforced as it is read), so that a slow client holds no
//! instance and CONTENT_LENGTH is exact. The CGI environment is built
//! by the CGI core's builder, a slot taken (at most `max_concurrent` runs,
//! one pool slot each, and a bounded queue for the rest), and the module
//! run as a future in the request's own task while its stdout goes to the
//! core's `Assembler`, which parses the head and settles the body (at
//! [`SETTLE`]): no hand-off to another thread, which cost more than the
//! sandbox itself. A run still going
//! when the response starts streaming becomes a task of its own on the
//! same runtime. Every failure becomes a status and one log line naming
//! the module and the cause.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::request::Parts;
use http::{header, Method, Response};
use http_body_util::BodyExt as _;
use tern_cgi::env::{self, EnvInput, ScriptVars};
use tern_cgi::response::{local_redirect, Mode, Reply};
use tern_cgi::{Assembler, Delivery, HeadError, Limiter, Step};
use tern_config::{EnvPolicy, WasmConfig};
use tern_handler::{Exchange, Handler, HandlerFuture, RequestId, ResponseBody};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::engine::Compiled;
use crate::limits::Limits;
use crate::output;
use crate::run::{self, Ending, Finished, RunInput, Stdin};
use crate::stream::{Streamed, Tail};
use crate::tally::Tally;
use crate::Error;

/// Runs a WebAssembly module per request with CGI semantics (WAGI).
/// Immutable once built: the module is compiled in [`Wagi::new`], and a
/// configuration reload builds a new handler from the file as it is then.
#[derive(Debug, Clone)]
pub(crate) struct Wagi {
    route: Arc<Route>,
}

#[derive(Debug)]
struct Route {
    compiled: Compiled,
    module: PathBuf,
    /// The module's file name: its argv[0], and its name in log lines.
    name: Arc<str>,
    document_root: PathBuf,
    dir: Option<PathBuf>,
    limits: Limits,
    env: EnvPolicy,
    admission: Limiter,
    tally: Arc<Tally>,
}

impl Wagi {
    /// Compiles the module of `cfg` and readies it to run. Fails when the
    /// file is not valid WebAssembly (or WebAssembly text, for `.wat`), or
    /// is not a WASI command (no `_start` or no `memory` export). Its runs
    /// are counted in `tally`.
    pub(crate) fn new(cfg: &WasmConfig, binary: &[u8], tally: Arc<Tally>) -> Result<Wagi, Error> {
        let compiled = Compiled::load(cfg, binary)?;
        let name = run::module_name(&cfg.module);
        Ok(Wagi {
            route: Arc::new(Route {
                compiled,
                module: cfg.module.clone(),
                name,
                document_root: cfg.document_root.clone(),
                dir: cfg.dir.clone(),
                limits: Limits::of(cfg),
                env: cfg.env.clone(),
                admission: Limiter::new(&cfg.admission),
                tally,
            }),
        })
    }
}

impl Handler for Wagi {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
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

    fn kind(&self) -> &'static str {
        "wasm"
    }
}

impl Route {
    async fn answer(
        this: &Arc<Route>,
        exchange: Exchange,
    ) -> Result<Response<ResponseBody>, Error> {
        let Exchange {
            request,
            path,
            conn,
            route,
            id,
        } = exchange;
        let (parts, body) = request.into_parts();
        // Read whole before the request takes an instance: a client that
        // sends slowly holds only its connection, and its pace is bounded
        // as the body is read.
        let declared = parts.headers.contains_key(header::CONTENT_LENGTH);
        let body = body.collect().await.map_err(Error::Body)?.to_bytes();
        let content_length = (declared || !body.is_empty()).then_some(body.len() as u64);
        let stdin = Stdin::Memory(body);
        let (script_name, path_info) = route.pattern.split(&path);
        let env = env::build(&EnvInput {
            request: &parts,
            conn: &conn,
            script: ScriptVars {
                script_name,
                script_filename: &this.module,
                path_info,
                document_root: &this.document_root,
            },
            content_length,
            policy: &this.env,
            inherited: &[],
        })?;
        let (stdout, mut rx) = output::pipe(this.limits.output);
        let input = RunInput {
            arg0: this.name.to_string(),
            env,
            stdin,
            stdout,
            dir: this.dir.clone(),
            limits: this.limits,
        };
        let slot = this.admission.admit().await?;
        let me = this.clone();
        // Driven by this task until the response starts: a request that
        // fails, or needs no body, drops it, which stops the module.
        let run: RunFuture = Box::pin(async move {
            let _slot = slot;
            let _active = me.tally.start();
            let finished = run::run(&me.compiled, input).await;
            if let Ending::Failed(e) = &finished.ending {
                me.tally.failed(e);
            }
            log_stderr(&me.name, id, &finished);
            finished.ending
        });
        let mut run = Running {
            run: Run::Here(run),
        };
        let mut assembler = Assembler::new(Mode::Cgi, SETTLE, parts.method == Method::HEAD);
        let mut settle_until = None;
        let (reply, delivery) = loop {
            let next = match settle_until {
                None => Some(run.recv(&mut rx).await),
                Some(at) => tokio::time::timeout_at(at, run.recv(&mut rx)).await.ok(),
            };
            let step = match next {
                Some(Some(chunk)) => assembler.push(chunk),
                None => assembler.settled(),
                Some(None) => {
                    // The output ended with the run: nothing streams.
                    let (reply, delivery) = ended(&mut assembler, run.ended().await)?;
                    return this.respond(reply, delivery, None, rx, id, &parts);
                }
            };
            match step {
                Step::Read => {}
                Step::Settle(d) => settle_until = Some(Instant::now() + d),
                Step::Respond(reply, delivery) => break (reply, delivery),
                Step::Fail(e) => return Err(tern_cgi::Error::Head(e).into()),
                Step::Forward(_) | Step::Last(_) | Step::Short => {
                    unreachable!("output is forwarded only once the response started")
                }
            }
        };
        this.respond(reply, delivery, Some(run), rx, id, &parts)
    }

    /// The response for the module's reply. A streamed body takes the rest
    /// of the output from `rx`, and the run with it; dropping the run (a
    /// HEAD request, a redirect) stops the module.
    fn respond(
        &self,
        reply: Reply,
        delivery: Delivery,
        run: Option<Running>,
        rx: mpsc::Receiver<Bytes>,
        id: RequestId,
        parts: &Parts,
    ) -> Result<Response<ResponseBody>, Error> {
        let head = match reply {
            Reply::Document(h) | Reply::ClientRedirect(h) => h,
            // A handler never calls back into the router: the server
            // follows the redirect.
            Reply::LocalRedirect(target) => {
                return local_redirect(parts, &target)
                    .ok_or_else(|| tern_cgi::Error::Head(HeadError::BadLocation(target)).into())
            }
        };
        let body = match delivery {
            Delivery::Whole(b) => ResponseBody::pieces(b),
            Delivery::Discarded => ResponseBody::empty(),
            Delivery::Stream(first) => ResponseBody::stream(Streamed {
                first: Some(first),
                rx,
                run: run.map(Running::into_tail),
                name: self.name.clone(),
                id,
            }),
        };
        Ok(head.into_response(body))
    }
}

/// How long output after the head is gathered before the response
/// starts: a short run (most are) is answered whole, with a
/// Content-Length and in one write, and a failure in it still gets its
/// status. Apache's `flushwait` is of the same order.
const SETTLE: Duration = Duration::from_millis(20);

/// The answer once the run is over and its output all read. A run that
/// failed fails as itself, and one that exited nonzero before its head was
/// whole as a failed script does; after a whole head, its exit status is
/// its own business and its output is the answer.
fn ended(assembler: &mut Assembler, ending: Ending) -> Result<(Reply, Delivery), Error> {
    let code = match ending {
        Ending::Exited(code) => code,
        Ending::Failed(e) => return Err(e),
    };
    match assembler.end() {
        Step::Respond(reply, delivery) => Ok((reply, delivery)),
        Step::Fail(_) if code != 0 => Err(Error::Exit(code)),
        Step::Fail(e) => Err(tern_cgi::Error::Head(e).into()),
        step => unreachable!("the run ended after its response started: {step:?}"),
    }
}

/// A run of the module, with its slot and its log line.
type RunFuture = Pin<Box<dyn Future<Output = Ending> + Send>>;

/// A run as the handler drives it.
struct Running {
    run: Run,
}

/// Where a run stands.
enum Run {
    /// Still going, polled while the handler waits for its output.
    Here(RunFuture),
    /// Over; its output may still wait in the pipe.
    Ended(Ending),
}

impl Running {
    /// The next chunk of stdout, driving the run meanwhile; `None` once
    /// the run is over and its output all read.
    ///
    /// # Cancel safety
    /// Cancel safe: a chunk is only taken when it is returned, and the
    /// run stays where it was.
    async fn recv(&mut self, rx: &mut mpsc::Receiver<Bytes>) -> Option<Bytes> {
        if let Run::Here(run) = &mut self.run {
            tokio::select! {
                biased;
                chunk = rx.recv() => return chunk,
                ending = run => self.run = Run::Ended(ending),
            }
        }
        // Its store is gone, and with it every sender: the channel holds
        // what is left and then ends.
        rx.recv().await
    }

    /// How the run ended, driving it to its end if need be.
    async fn ended(self) -> Ending {
        match self.run {
            Run::Here(run) => run.await,
            Run::Ended(ending) => ending,
        }
    }

    /// The rest of the run for a streamed body: one still going becomes a
    /// task of its own on this runtime (the body is polled only as the
    /// client reads, and the run must reach its limits regardless).
    fn into_tail(self) -> Tail {
        match self.run {
            Run::Here(run) => Tail::Running(tokio::spawn(run)),
            Run::Ended(ending) => Tail::Ended(ending),
        }
    }
}

/// The module's stderr, a log line per line, tagged with the request id.
fn log_stderr(name: &str, id: RequestId, f: &Finished) {
    for line in f.stderr.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        tracing::warn!(%id, module = name, "wasm stderr: {}", String::from_utf8_lossy(line));
    }
    if f.stderr_dropped > 0 {
        tracing::warn!(%id, module = name, "wasm stderr: {} more bytes dropped", f.stderr_dropped);
    }
}
