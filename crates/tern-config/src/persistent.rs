//! `handler = "fastcgi"` and `handler = "cgiplus"` routes: where the
//! persistent application is (addresses, or a program tern runs), its
//! pool limits, and the gateway policy shared with CGI.

use std::path::Path;
use std::time::Duration;

use crate::gateway::{directory, env_names, program, script_dir};
use crate::load::LoadOptions;
use crate::model::{
    Admission, CgiPlusConfig, CommandConfig, Engine, EnvPolicy, FastCgiApp, FastCgiConfig,
    GatewayPolicy, PoolSettings, RouteMatcher,
};
use crate::walk::{Table, Walker};
use crate::FcgiAddress;

/// Most workers a pool may have.
const MAX_WORKERS: u64 = 4096;

/// The settings of a FastCGI route.
pub(crate) fn walk_fastcgi(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    base: &Path,
    opts: LoadOptions,
) -> Option<FastCgiConfig> {
    let connect = w.one_or_more_strings(t, "connect");
    let command = command(w, t, "command", base, opts);
    let app = match (connect, command) {
        (Some(_), Some(_)) => {
            w.error(
                t.span(),
                t.key_path("connect"),
                "give either `connect` (a running server) or `command` (a program tern runs), not both",
            );
            None
        }
        (Some(list), None) => {
            let given = !list.is_empty();
            let mut addrs = Vec::new();
            for (a, span) in list {
                // Parsed here into the type the gateway connects with:
                // `check` and `serve` cannot disagree about an address.
                match a.parse::<FcgiAddress>() {
                    Ok(addr) => addrs.push(addr),
                    Err(e) => w.error(span, t.key_path("connect"), e.to_string()),
                }
            }
            if addrs.is_empty() {
                if !given {
                    w.error(t.span(), t.key_path("connect"), "no address given");
                }
                None
            } else {
                Some(FastCgiApp::Connect(addrs))
            }
        }
        (None, Some(c)) => c.map(FastCgiApp::Spawn),
        (None, None) => {
            if !t.contains("connect") && !t.contains("command") {
                w.error(
                    t.span(),
                    t.key_path("connect"),
                    "missing: `connect = \"unix:/run/php/php-fpm.sock\"` (a running server) or `command = [\"/usr/bin/php-cgi\"]` (a program tern runs)",
                );
            }
            None
        }
    };
    let dir = w
        .string_spanned(t, "dir")
        .map(|(d, span)| directory(w, t, base.join(d), span, opts));
    // By the key, not by its value, so that a bad command does not turn
    // min_processes into an unknown key.
    let spawned = t.contains("command");
    let pool = pool(w, t, spawned);
    let policy = policy(w, t);
    let connect_timeout = w
        .duration(t, "connect_timeout", true)
        .unwrap_or(Duration::from_secs(3));
    let keep_connections = w.bool(t, "keep_connections").unwrap_or(true);
    Some(FastCgiConfig {
        app: app?,
        dir,
        document_root: site_root?.to_path_buf(),
        pool: pool?,
        policy,
        connect_timeout,
        keep_connections,
    })
}

/// The settings of a CGIplus route.
pub(crate) fn walk_cgiplus(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    matcher: Option<&RouteMatcher>,
    base: &Path,
    opts: LoadOptions,
) -> Option<CgiPlusConfig> {
    let engine_name = w.string_spanned(t, "engine");
    let command = command(w, t, "command", base, opts);
    let engine = match (engine_name, command) {
        (Some(_), Some(_)) => {
            w.error(
                t.span(),
                t.key_path("engine"),
                "give either `engine` or `command`, not both",
            );
            None
        }
        (Some((e, span)), None) => match e.as_str() {
            "perl" => Some(Engine::Perl),
            "python" => Some(Engine::Python),
            "scripts" => Some(Engine::Scripts),
            other => {
                w.error(
                    span,
                    t.key_path("engine"),
                    format!("`{other}` is not an engine (scripts, perl, python)"),
                );
                None
            }
        },
        (None, Some(c)) => c.map(Engine::Command),
        (None, None) if t.contains("engine") || t.contains("command") => None,
        (None, None) => Some(Engine::Scripts),
    };
    let dir = script_dir(w, t, site_root, matcher, base, opts);
    let pool = pool(w, t, true);
    let policy = policy(w, t);
    Some(CgiPlusConfig {
        engine: engine?,
        dir: dir?,
        document_root: site_root?.to_path_buf(),
        pool: pool?,
        policy,
    })
}

/// `command = ["/usr/bin/php-cgi", "-d", "x=y"]` and `env = { … }`.
/// `None`: no command; `Some(None)`: a command with an error (reported).
fn command(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    key: &str,
    base: &Path,
    opts: LoadOptions,
) -> Option<Option<CommandConfig>> {
    let list = w.one_or_more_strings(t, key);
    let env = w.string_map(t, "env");
    let list = match list {
        Some(l) => l,
        None => {
            if let Some(e) = env {
                if let Some((_, _, span)) = e.first() {
                    w.error(
                        span.clone(),
                        t.key_path("env"),
                        "only for a program tern runs (`command`)",
                    );
                }
            }
            return t.contains(key).then_some(None);
        }
    };
    let mut parts = list.into_iter();
    let Some((first, span)) = parts.next() else {
        w.error(t.span(), t.key_path(key), "an empty command");
        return Some(None);
    };
    let path = base.join(&first);
    let Some(path) = program(w, t, key, path, span, opts) else {
        return Some(None);
    };
    let mut vars = Vec::new();
    for (k, v, span) in env.unwrap_or_default() {
        let valid = k
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            w.error(
                span,
                t.key_path("env"),
                format!("`{k}` is not an environment variable name"),
            );
        } else if v.contains('\0') {
            w.error(
                span,
                t.key_path("env"),
                format!("`{k}` contains a NUL byte"),
            );
        } else {
            vars.push((k, v));
        }
    }
    Some(Some(CommandConfig {
        program: path,
        args: parts.map(|(a, _)| a).collect(),
        env: vars,
    }))
}

fn pool(w: &mut Walker<'_>, t: &mut Table<'_>, spawned: bool) -> Option<PoolSettings> {
    let (min_key, max_key) = if spawned {
        ("min_processes", "max_processes")
    } else {
        ("min_connections", "max_connections")
    };
    let min = w
        .integer_in(t, min_key, 0, MAX_WORKERS)
        .unwrap_or(u64::from(spawned)) as usize;
    let max = w.count(t, max_key, MAX_WORKERS).unwrap_or(4) as usize;
    let queue = w.count(t, "queue", 1_000_000).unwrap_or(100) as usize;
    let queue_timeout = w
        .duration(t, "queue_timeout", true)
        .unwrap_or(Duration::from_secs(10));
    let idle_timeout = w
        .duration(t, "idle_timeout", true)
        .unwrap_or(Duration::from_secs(60));
    let max_requests = w
        .integer_in(t, "max_requests", 0, u64::MAX >> 1)
        .unwrap_or(0);
    let max_age = w.duration(t, "max_age", true);
    if min > max {
        w.error(
            t.span(),
            t.key_path(min_key),
            format!("{min} is more than {max_key} ({max})"),
        );
        return None;
    }
    Some(PoolSettings {
        min,
        max,
        queue,
        queue_timeout,
        idle_timeout,
        max_requests,
        max_age,
    })
}

/// The timeout, environment policy and stderr limit every gateway route
/// has (CGI too).
pub(crate) fn policy(w: &mut Walker<'_>, t: &mut Table<'_>) -> GatewayPolicy {
    GatewayPolicy {
        timeout: w
            .duration(t, "timeout", true)
            .unwrap_or(Duration::from_secs(30)),
        env: env_policy(w, t, true),
        max_stderr_bytes: w.size(t, "max_stderr_bytes", 0).unwrap_or(64 * 1024),
    }
}

/// What a route's programs see: the header policy, and (`inherits`: for
/// programs tern runs) `env_allow`.
pub(crate) fn env_policy(w: &mut Walker<'_>, t: &mut Table<'_>, inherits: bool) -> EnvPolicy {
    let d = EnvPolicy::default();
    EnvPolicy {
        pass_authorization: w
            .bool(t, "pass_authorization")
            .unwrap_or(d.pass_authorization),
        refuse_shellshock: w
            .bool(t, "refuse_shellshock")
            .unwrap_or(d.refuse_shellshock),
        underscores_in_headers: w
            .bool(t, "underscores_in_headers")
            .unwrap_or(d.underscores_in_headers),
        env_allow: if inherits {
            env_names(w, t)
        } else {
            d.env_allow
        },
    }
}

/// `max_concurrent` (at most `max`), `queue` and `queue_timeout`.
pub(crate) fn admission(w: &mut Walker<'_>, t: &mut Table<'_>, max: u64) -> Admission {
    let d = Admission::default();
    Admission {
        max_concurrent: w
            .count(t, "max_concurrent", max)
            .map_or(d.max_concurrent, |n| n as usize),
        queue: w
            .count(t, "queue", 1_000_000)
            .map_or(d.queue, |n| n as usize),
        queue_timeout: w
            .duration(t, "queue_timeout", true)
            .unwrap_or(d.queue_timeout),
    }
}
