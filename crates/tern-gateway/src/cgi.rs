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

use http::request::Parts;
use http::Method;
use tern_cgi::env::{self, EnvInput, ScriptVars};
use tern_cgi::response::{Mode, Reply};
use tern_cgi::Limiter;
use tern_config::{CgiConfig, GatewayPolicy};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, HandlerFuture, RequestBody, RequestId, RoutePattern,
};
use tokio::sync::oneshot;

use crate::dispatch::{self, render, Answer, Run};
use crate::input::{Feed, Input, Source};
use crate::resolve::ScriptDir;
use crate::session::{self, ScriptSettings};
use crate::spawn::{self, Program};
use crate::Error;

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
    policy: GatewayPolicy,
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
                policy: cfg.policy.clone(),
                inherited: spawn::inherited(&cfg.policy.env.env_allow, |n| std::env::var_os(n)),
                limiter: Limiter::new(&cfg.admission),
            }),
        })
    }
}

impl Handler for Cgi {
    fn call(&self, exchange: Exchange) -> HandlerFuture {
        dispatch::call(&self.route, exchange)
    }

    /// The route's kind: named once, by its `Run` impl.
    fn kind(&self) -> &'static str {
        Run::kind(&*self.route)
    }

    fn redirects_locally(&self) -> bool {
        true
    }
}

impl Run for Route {
    fn kind(&self) -> &'static str {
        "cgi"
    }

    async fn run(
        &self,
        parts: &Parts,
        path: &DecodedPath,
        body: RequestBody,
        conn: &ConnInfo,
        pattern: &RoutePattern,
        id: RequestId,
    ) -> Result<Answer, Error> {
        let script = self.dir.find(path, pattern, self.interpreter.is_none())?;
        let input = Input::prepare(body, &parts.headers).await?;
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
            policy: &self.policy.env,
            inherited: &self.inherited,
        })?;
        let slot = self.limiter.admit().await?;
        let (stdin, feed) = match input.source {
            Source::Nothing => (Stdio::null(), Feed::Nothing),
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
        let settings = ScriptSettings {
            id,
            script: Arc::from(script.filename.to_string_lossy()),
            mode: if script.nph { Mode::Nph } else { Mode::Cgi },
            discard_body: parts.method == Method::HEAD,
            timeout: self.policy.timeout,
            send_timeout: self.policy.send_timeout,
            max_stderr: self.policy.max_stderr_bytes,
            slow: self.policy.slow_request,
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
