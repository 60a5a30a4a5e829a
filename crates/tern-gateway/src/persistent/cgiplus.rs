//! [`CgiPlus`], the handler of CGIplus workers: each script a persistent
//! program of its own (a pool per script, made at its first request and
//! again when the file changes), or a run-time engine (Perl, Python,
//! another) that runs many scripts.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use http::request::Parts;
use tern_config::{CgiPlusConfig, Engine, PoolSettings};
use tern_handler::path::DecodedPath;
use tern_handler::{
    ConnInfo, Exchange, Handler, HandlerFuture, PoolReport, RequestBody, RequestId, RoutePattern,
};
use tern_pool::{Pool, Stats};

use super::{counters, pool_config, report, run_on, start_pool, Common, Target};
use crate::dispatch::{self, Answer, Run};
use crate::workers::{self, CgiplusWorkers};
use crate::{spawn, Error};

/// Runs CGIplus workers: each script a persistent program of its own, or
/// a run-time engine (Perl, Python, another) that runs many scripts.
#[derive(Debug, Clone)]
pub struct CgiPlus {
    route: Arc<PlusRoute>,
}

#[derive(Debug)]
struct PlusRoute {
    common: Common,
    name: String,
    pool: PoolSettings,
    inherited: Vec<(OsString, OsString)>,
    workers: PlusWorkers,
}

/// Per script: the file's modification time when its pool was made, and
/// the pool.
type ScriptPools = HashMap<PathBuf, (Option<(i64, i64)>, Pool<CgiplusWorkers>)>;

#[derive(Debug)]
enum PlusWorkers {
    /// A pool per script, made at its first request and made again when
    /// the file changes (the old one drains).
    Scripts(Mutex<ScriptPools>),
    /// One engine for every script.
    Engine {
        pool: Pool<CgiplusWorkers>,
        /// Where tern's own engines were written (kept while in use).
        _files: Option<tempfile::TempDir>,
    },
}

impl CgiPlus {
    /// Builds the handler for `cfg`; `name` names its pools in logs.
    pub fn new(cfg: &CgiPlusConfig, name: &str) -> Result<CgiPlus, Error> {
        spawn::seal_inherited_descriptors();
        let common = CgiPlus::common(cfg)?;
        let inherited = spawn::inherited(&cfg.policy.env.env_allow, |n| std::env::var_os(n));
        let engine = |program: PathBuf, args: Vec<OsString>, env: Vec<(String, String)>| {
            CgiplusWorkers::new(
                program,
                args,
                workers::env(&inherited, &env),
                cfg.dir.clone(),
            )
        };
        let workers = match &cfg.engine {
            Engine::Scripts => PlusWorkers::Scripts(Mutex::new(HashMap::new())),
            Engine::Perl | Engine::Python => {
                let files = tempfile::Builder::new()
                    .prefix("tern-rte-")
                    .tempdir()
                    .map_err(Error::Io)?;
                let (perl, python) = crate::rte::write_to(files.path()).map_err(Error::Io)?;
                let (interp, script) = if matches!(cfg.engine, Engine::Perl) {
                    ("/usr/bin/perl", perl)
                } else {
                    ("/usr/bin/python3", python)
                };
                let factory = engine(PathBuf::from(interp), vec![script.into()], Vec::new());
                PlusWorkers::Engine {
                    pool: start_pool(pool_config(name.to_owned(), &cfg.pool), factory)?,
                    _files: Some(files),
                }
            }
            Engine::Command(c) => {
                let factory = engine(
                    c.program.clone(),
                    c.args.iter().map(OsString::from).collect(),
                    c.env.clone(),
                );
                PlusWorkers::Engine {
                    pool: start_pool(pool_config(name.to_owned(), &cfg.pool), factory)?,
                    _files: None,
                }
            }
        };
        Ok(CgiPlus {
            route: Arc::new(PlusRoute {
                common,
                name: name.to_owned(),
                pool: cfg.pool.clone(),
                inherited,
                workers,
            }),
        })
    }
}

impl CgiPlus {
    /// What [`CgiPlus::new`] builds before it starts anything, for
    /// `tern check` (as [`FastCgi::check`](crate::FastCgi::check)).
    pub fn check(cfg: &CgiPlusConfig) -> Result<(), Error> {
        CgiPlus::common(cfg).map(drop)
    }

    fn common(cfg: &CgiPlusConfig) -> Result<Common, Error> {
        // Only a script that runs itself must be executable.
        let scripts = matches!(cfg.engine, Engine::Scripts);
        Common::new(
            "cgiplus",
            Some(&cfg.dir),
            scripts,
            &cfg.document_root,
            &cfg.policy,
        )
    }

    /// Each pool's name and counters, for a status page.
    pub fn pools(&self) -> Vec<(String, Stats)> {
        match &self.route.workers {
            PlusWorkers::Engine { pool, .. } => vec![counters(pool)],
            PlusWorkers::Scripts(map) => map
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .map(|(_, p)| counters(p))
                .collect(),
        }
    }
}

impl Handler for CgiPlus {
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

    /// A report per pool: the engine's, or each script's
    /// (`<route> <script>`) as made so far.
    fn report(&self, out: &mut Vec<PoolReport>) {
        let kind = Run::kind(&*self.route);
        match &self.route.workers {
            PlusWorkers::Engine { pool, .. } => out.push(report(kind, pool)),
            PlusWorkers::Scripts(map) => {
                // Cloned out first: a snapshot takes each pool's lock, and
                // requests wait on this map's lock for their script's pool.
                let pools: Vec<_> = map
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .values()
                    .map(|(_, p)| p.clone())
                    .collect();
                out.extend(pools.iter().map(|p| PoolReport {
                    gates_readiness: false,
                    ..report(kind, p)
                }));
            }
        }
    }
}

impl PlusRoute {
    /// The pool of `script`'s own processes: made now if it has none, or
    /// made anew if the file changed since.
    fn script_pool(&self, target: &Target<'_>) -> Result<Pool<CgiplusWorkers>, Error> {
        let (script, mtime) = (target.script.filename.as_path(), target.modified);
        let PlusWorkers::Scripts(map) = &self.workers else {
            unreachable!("only for per-script routes");
        };
        let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, pool)) = map.get(script) {
            if *seen == mtime {
                return Ok(pool.clone());
            }
        }
        let cwd = script.parent().unwrap_or(Path::new("/")).to_owned();
        let factory =
            CgiplusWorkers::new(script.to_owned(), Vec::new(), self.inherited.clone(), cwd);
        let name = format!("{} {}", self.name, script.display());
        let pool = start_pool(pool_config(name, &self.pool), factory)?;
        // A replaced pool drains: its idle workers stop, busy ones finish.
        map.insert(script.to_owned(), (mtime, pool.clone()));
        Ok(pool)
    }
}

impl Run for PlusRoute {
    fn kind(&self) -> &'static str {
        "cgiplus"
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
        let target = self.common.target(path, pattern)?;
        let pool = match &self.workers {
            PlusWorkers::Scripts(_) => self.script_pool(&target)?,
            PlusWorkers::Engine { pool, .. } => pool.clone(),
        };
        let (env, body) = self.common.prepare(parts, body, conn, &target).await?;
        let settings = self.common.settings(parts, id, target.script.label.clone());
        run_on(&[&pool], env, body, settings).await
    }
}
