//! [`Wasm`], the handler: a request's way through it. The body is read
//! whole (the server's body limit bounds it), the CGI environment built
//! by the gateway's builder, a slot taken (at most `max_concurrent` runs,
//! one pool slot each), the module run on the blocking pool, and its
//! stdout parsed by the gateway's head reader into a response. Every
//! failure becomes a status and one log line naming the module and the
//! cause.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{header, HeaderValue, Method, Response, StatusCode};
use http_body_util::BodyExt as _;
use tern_config::WasmConfig;
use tern_gateway::env::{self, EnvInput, EnvPolicy, ScriptVars};
use tern_gateway::response::{Head, HeadReader, Mode, Reply, MAX_HEAD_BYTES};
use tern_handler::path::DecodedPath;
use tern_handler::{Exchange, Handler, HandlerFuture, RequestId, ResponseBody};
use tokio::sync::Semaphore;

use crate::engine::Compiled;
use crate::run::{self, Ending, Finished, Limits, RunInput};
use crate::Error;

/// Runs a WebAssembly module per request with CGI semantics (WAGI).
/// Immutable once built: the module is compiled in [`Wasm::new`], and a
/// configuration reload builds a new handler from the file as it is then.
#[derive(Debug, Clone)]
pub struct Wasm {
    route: Arc<Route>,
}

#[derive(Debug)]
struct Route {
    compiled: Compiled,
    module: PathBuf,
    /// The module's file name: its argv[0], and its name in log lines.
    name: String,
    document_root: PathBuf,
    dir: Option<PathBuf>,
    limits: Limits,
    pass_authorization: bool,
    refuse_shellshock: bool,
    slots: Arc<Semaphore>,
}

impl Wasm {
    /// Compiles the module of `cfg` and readies it to run. Fails when the
    /// file is not valid WebAssembly (or WebAssembly text, for `.wat`), or
    /// is not a WASI command (no `_start` or no `memory` export).
    pub fn new(cfg: &WasmConfig) -> Result<Wasm, Error> {
        let compiled = Compiled::load(cfg)?;
        let name = cfg.module.file_name().map_or_else(
            || cfg.module.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Wasm {
            route: Arc::new(Route {
                compiled,
                module: cfg.module.clone(),
                name,
                document_root: cfg.document_root.clone(),
                dir: cfg.dir.clone(),
                limits: Limits {
                    memory: cfg.memory_limit,
                    timeout: cfg.timeout,
                    output: cfg.max_output_bytes,
                    stderr: cfg.max_stderr_bytes,
                },
                pass_authorization: cfg.pass_authorization,
                refuse_shellshock: cfg.refuse_shellshock,
                slots: Arc::new(Semaphore::new(cfg.max_concurrent.max(1))),
            }),
        })
    }
}

impl Handler for Wasm {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        let route = self.route.clone();
        Box::pin(async move {
            let id = exchange.id;
            let path = exchange.path.clone();
            match Route::answer(&route, exchange).await {
                Ok(resp) => resp,
                Err(e) => fail(&route.name, e, id, &path),
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
        let body = body
            .collect()
            .await
            .map_err(tern_gateway::Error::Body)?
            .to_bytes();
        let (script_name, path_info) = split(&route.pattern, &path);
        let env = env::build(&EnvInput {
            request: &parts,
            conn: &conn,
            script: ScriptVars {
                script_name,
                script_filename: &this.module,
                path_info,
                document_root: &this.document_root,
            },
            content_length: (!body.is_empty()).then_some(body.len() as u64),
            policy: EnvPolicy {
                pass_authorization: this.pass_authorization,
                refuse_shellshock: this.refuse_shellshock,
                inherited: &[],
            },
        })?;
        let input = RunInput {
            arg0: this.name.clone(),
            env: env
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string_lossy().into_owned(),
                        v.to_string_lossy().into_owned(),
                    )
                })
                .collect(),
            stdin: body,
            dir: this.dir.clone(),
            limits: this.limits,
        };
        // The semaphore is never closed.
        let slot = this
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::Instantiate("the route is shutting down".into()))?;
        let me = this.clone();
        // The run blocks its thread until the module ends or its deadline
        // passes, so it goes to the blocking pool. If the client leaves
        // meanwhile, the run still ends by its limits and frees the slot.
        let finished = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            run::run(&me.compiled, input)
        })
        .await
        .map_err(|e| Error::Trap(format!("the run panicked: {e}")))?;
        log_stderr(&this.name, id, &finished);
        respond(finished, &parts)
    }
}

/// SCRIPT_NAME and PATH_INFO for the route's pattern, as for a FastCGI
/// route without a directory: a prefix route is the script, the rest of
/// the path its PATH_INFO; an extension route's script is the whole path.
fn split<'a>(pattern: &'a str, path: &'a DecodedPath) -> (&'a str, &'a str) {
    let full = path.as_str();
    if pattern.starts_with("*.") {
        (full, "")
    } else if pattern == "/" {
        ("", full)
    } else {
        (pattern, full.strip_prefix(pattern).unwrap_or(""))
    }
}

/// The response a finished run asks for.
fn respond(f: Finished, parts: &Parts) -> Result<Response<ResponseBody>, Error> {
    let code = match f.ending {
        Ending::Exited(code) => code,
        Ending::Failed(e) => return Err(e),
    };
    let mut reader = HeadReader::new(Mode::Cgi, MAX_HEAD_BYTES);
    let head = reader.push(&f.stdout).map_err(tern_gateway::Error::Head)?;
    let (reply, body) = match head {
        Some(h) => h,
        // A module that fails before its head is answered as a failed
        // script is; after a whole head, its status is its own business.
        None if code != 0 => return Err(Error::Exit(code)),
        None => return Err(tern_gateway::Error::Head(reader.truncated()).into()),
    };
    let body = if parts.method == Method::HEAD {
        Bytes::new()
    } else {
        body
    };
    Ok(match reply {
        Reply::Document(h) | Reply::ClientRedirect(h) => render(h, body),
        // A handler never calls back into the router: the client is sent
        // to the path instead, and gets the same resource.
        Reply::LocalRedirect(target) => client_redirect(&target),
    })
}

fn render(head: Head, body: Bytes) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::full(body));
    *resp.status_mut() = head.status;
    *resp.headers_mut() = head.headers;
    if let Some(reason) = head.reason {
        if let Ok(r) = hyper::ext::ReasonPhrase::try_from(reason) {
            resp.extensions_mut().insert(r);
        }
    }
    resp
}

fn client_redirect(target: &str) -> Response<ResponseBody> {
    let mut resp = Response::new(ResponseBody::empty());
    *resp.status_mut() = StatusCode::FOUND;
    if let Ok(v) = HeaderValue::from_str(target) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
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

/// The one place a failure becomes a response and a log line.
fn fail(name: &str, e: Error, id: RequestId, path: &DecodedPath) -> Response<ResponseBody> {
    let err = e.status_error();
    let status = err.status();
    if status.is_client_error() {
        tracing::info!(%id, %path, module = name, "wasm: {}: {err}", status.as_u16());
    } else {
        tracing::warn!(%id, %path, module = name, "wasm: {}: {err}", status.as_u16());
    }
    err.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_name_and_path_info_follow_the_pattern() {
        let p = DecodedPath::parse("/app/a/b").unwrap();
        assert_eq!(split("/app", &p), ("/app", "/a/b"));
        assert_eq!(split("/", &p), ("", "/app/a/b"));
        assert_eq!(split("*.wasm", &p), ("/app/a/b", ""));
    }
}
