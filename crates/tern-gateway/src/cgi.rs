//! [`Cgi`], the handler: a process per request. A request's way through
//! it: find the script (`resolve`), ready the body (`input`: streamed, or
//! spooled when its length is unknown), build the environment (`env`),
//! wait for a slot (`limit`), start the script (`spawn`), and hand it to
//! its own task (`session`), which answers with the parsed head; a local
//! redirect runs again here as GET.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use http::request::Parts;
use http::{header, HeaderValue, Method, Response, StatusCode, Uri};
use tern_config::CgiConfig;
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, HandlerFuture, RequestBody, RequestId, ResponseBody,
};
use tokio::sync::oneshot;

use crate::env::{self, EnvInput, EnvPolicy, ScriptVars};
use crate::input::{Feed, Input, Source};
use crate::limit::Limiter;
use crate::resolve::{Scope, ScriptDir};
use crate::response::{Head, Mode, Reply};
use crate::session::{self, Output, Settings};
use crate::spawn::{self, Program};
use crate::{Error, HeadError};

/// Local redirects followed for one request before it is answered 500
/// (a script redirecting to itself, or two to each other).
pub const MAX_LOCAL_REDIRECTS: usize = 10;

/// Runs CGI/1.1 scripts, a process per request. Immutable once built; a
/// configuration reload builds a new one (and reads tern's environment for
/// the allow-list again).
#[derive(Debug, Clone)]
pub struct Cgi {
    route: Arc<Route>,
}

#[derive(Debug)]
struct Route {
    dir: ScriptDir,
    document_root: PathBuf,
    interpreter: Option<PathBuf>,
    timeout: Duration,
    max_stderr: u64,
    pass_authorization: bool,
    refuse_shellshock: bool,
    inherited: Vec<(OsString, OsString)>,
    limiter: Limiter,
}

impl Cgi {
    /// Builds the handler for `cfg`. Fails if the script directory cannot
    /// be opened.
    pub fn new(cfg: &CgiConfig) -> Result<Cgi, Error> {
        spawn::seal_inherited_descriptors();
        let dir = ScriptDir::open(&cfg.dir).map_err(|source| Error::ScriptDir {
            path: cfg.dir.clone(),
            source,
        })?;
        Ok(Cgi {
            route: Arc::new(Route {
                dir,
                document_root: cfg.document_root.clone(),
                interpreter: cfg.interpreter.clone(),
                timeout: cfg.timeout,
                max_stderr: cfg.max_stderr_bytes,
                pass_authorization: cfg.pass_authorization,
                refuse_shellshock: cfg.refuse_shellshock,
                inherited: spawn::inherited(&cfg.env_allow, |n| std::env::var_os(n)),
                limiter: Limiter::new(cfg.max_concurrent, cfg.queue, cfg.queue_timeout),
            }),
        })
    }
}

impl Handler for Cgi {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        Box::pin(self.route.clone().serve(exchange))
    }

    fn kind(&self) -> &'static str {
        "cgi"
    }
}

/// What one run of a script asks for.
enum Answer {
    Response(Response<ResponseBody>),
    /// A local redirect to this path and query.
    Redirect(String),
}

impl Route {
    async fn serve(self: Arc<Self>, exchange: Exchange) -> Response<ResponseBody> {
        let Exchange {
            request,
            mut path,
            conn,
            route,
            id,
        } = exchange;
        let (mut parts, body) = request.into_parts();
        let scope = Scope::of_pattern(&route.pattern);
        let mut body = Some(body);
        for _ in 0..=MAX_LOCAL_REDIRECTS {
            let target = match self.run(&parts, &path, body.take(), &conn, scope, id).await {
                Ok(Answer::Response(r)) => return r,
                Ok(Answer::Redirect(target)) => target,
                Err(e) => return fail(e, id, &path),
            };
            let Some((uri, next)) = local_target(&target) else {
                let e = Error::Head(HeadError::BadLocation(target));
                return fail(e, id, &path);
            };
            if !scope.covers(&next) {
                // tern-server owns routing and a handler never calls back
                // into it, so a path another route serves is sent to the
                // client as a redirect: it gets the same resource.
                tracing::debug!(%id, from = %path, to = %target, "cgi: local redirect outside the route, sent as 302");
                return client_redirect(&target);
            }
            // RFC 3875 §6.2.2: the new request is a GET without a body.
            parts.method = Method::GET;
            parts.uri = uri;
            for h in [
                header::CONTENT_LENGTH,
                header::CONTENT_TYPE,
                header::TRANSFER_ENCODING,
            ] {
                parts.headers.remove(h);
            }
            path = next;
        }
        fail(Error::RedirectLoop(MAX_LOCAL_REDIRECTS), id, &path)
    }

    async fn run(
        &self,
        parts: &Parts,
        path: &DecodedPath,
        body: Option<RequestBody>,
        conn: &ConnInfo,
        scope: Scope<'_>,
        id: RequestId,
    ) -> Result<Answer, Error> {
        let script = self.dir.find(path, scope, self.interpreter.is_none())?;
        let input = match body {
            Some(b) => Input::prepare(b, &parts.headers).await?,
            None => Input::nothing(),
        };
        let env = env::build(&EnvInput {
            request: parts,
            conn,
            script: ScriptVars {
                script_name: &script.script_name,
                script_filename: &script.filename,
                path_info: &script.path_info,
                document_root: &self.document_root,
            },
            content_length: input.length,
            policy: EnvPolicy {
                pass_authorization: self.pass_authorization,
                refuse_shellshock: self.refuse_shellshock,
                inherited: &self.inherited,
            },
        })?;
        let slot = self.limiter.admit().await?;
        let (stdin, feed) = match input.source {
            Source::Nothing => (Stdio::null(), Feed::Nothing),
            Source::Stream(b) => (Stdio::piped(), Feed::Stream(b)),
            Source::Memory(b) => (Stdio::piped(), Feed::Memory(b)),
            Source::File(f) => (Stdio::from(f), Feed::Nothing),
        };
        let cwd = script.dir().to_owned();
        let program = match &self.interpreter {
            Some(i) => Program {
                path: i.clone(),
                script: Some(script.filename.clone()),
                cwd,
                env,
            },
            None => Program {
                path: script.filename.clone(),
                script: None,
                cwd,
                env,
            },
        };
        // On the blocking pool: the spawning thread waits for the exec (see
        // `spawn`). Dropped meanwhile (the client left), the started script
        // is killed by its group's guard.
        let running = tokio::task::spawn_blocking(move || spawn::start(program, stdin))
            .await
            .map_err(io::Error::other)??;
        let settings = Settings {
            id,
            script: Arc::from(script.filename.to_string_lossy()),
            mode: if script.nph { Mode::Nph } else { Mode::Cgi },
            discard_body: parts.method == Method::HEAD,
            timeout: self.timeout,
            max_stderr: self.max_stderr,
        };
        let (tx, rx) = oneshot::channel();
        tokio::spawn(session::drive(running, feed, settings, tx, slot));
        let (reply, output) = rx
            .await
            .map_err(|_| io::Error::other("the script's task ended without an answer"))??;
        Ok(match reply {
            Reply::LocalRedirect(target) => Answer::Redirect(target),
            Reply::Document(h) | Reply::ClientRedirect(h) => Answer::Response(render(h, output)),
        })
    }
}

/// The URI and decoded path of a local redirect's `/path?query`.
fn local_target(target: &str) -> Option<(Uri, DecodedPath)> {
    let uri: Uri = target.parse().ok()?;
    let path = DecodedPath::parse(uri.path()).ok()?;
    Some((uri, path))
}

fn render(head: Head, output: Output) -> Response<ResponseBody> {
    let body = match output {
        Output::Whole(b) => ResponseBody::full(b),
        Output::Stream(s) => ResponseBody::stream(s),
        Output::Discarded => ResponseBody::empty(),
    };
    let mut resp = Response::new(body);
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

/// The one place a failure becomes a response and a log line.
fn fail(e: Error, id: RequestId, path: &DecodedPath) -> Response<ResponseBody> {
    let err = e.status_error();
    let status = err.status();
    match status {
        StatusCode::NOT_FOUND => tracing::debug!(%id, %path, "cgi: {err}"),
        s if s.is_client_error() => tracing::info!(%id, %path, "cgi: {}: {err}", s.as_u16()),
        s => tracing::warn!(%id, %path, "cgi: {}: {err}", s.as_u16()),
    }
    let mut resp = err.into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}
