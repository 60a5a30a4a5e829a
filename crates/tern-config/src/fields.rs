//! Field readers shared by the route walkers: directories and programs
//! (checked against the file system when paths are checked), the script
//! directory, environment names, a program tern runs, and the policy and
//! admission keys every script-running route has.

use std::path::{Path, PathBuf};

use crate::model::{
    Admission, CommandConfig, EnvPolicy, GatewayPolicy, RouteMatcher, CGI_RESERVED_NAMES,
};
use crate::walk::{Span, Table, Walker};

/// Most requests that may wait in one route's queue.
pub(crate) const MAX_QUEUE: u64 = 1_000_000;

/// `dir`, the directory holding a route's scripts: required for a prefix
/// route, the site's root by default for an extension route.
pub(crate) fn script_dir(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    matcher: Option<&RouteMatcher>,
) -> Option<PathBuf> {
    match w.string_spanned(t, "dir") {
        Some(d) => Some(directory(w, t, d)),
        None if t.contains("dir") => None,
        None => match matcher {
            Some(RouteMatcher::Extension(_)) => site_root.map(Path::to_path_buf),
            Some(RouteMatcher::Prefix(_)) => {
                w.error(
                    t.span(),
                    t.key_path("dir"),
                    "missing (the directory holding the scripts)",
                );
                None
            }
            None => None,
        },
    }
}

/// An absolute form of `dir` (relative to the file), checked to be a
/// directory when paths are checked.
pub(crate) fn directory(w: &mut Walker<'_>, t: &Table<'_>, (dir, span): (String, Span)) -> PathBuf {
    let dir = w.relative(dir);
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if w.check_paths() {
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => w.error(
                span,
                t.key_path("dir"),
                format!("`{}` is not a directory", dir.display()),
            ),
            Err(e) => w.error(span, t.key_path("dir"), format!("`{}`: {e}", dir.display())),
        }
    }
    dir
}

/// A program tern runs: an absolute path (PATH is never searched: the
/// program is fixed at load), to an executable file when paths are
/// checked.
pub(crate) fn program(
    w: &mut Walker<'_>,
    t: &Table<'_>,
    key: &str,
    path: PathBuf,
    span: Span,
) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let key = t.key_path(key);
    if !path.is_absolute() {
        w.error(
            span,
            key,
            format!("`{}` must be an absolute path", path.display()),
        );
        return None;
    }
    if w.check_paths() {
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {}
            Ok(_) => {
                w.error(
                    span,
                    key,
                    format!("`{}` is not an executable file", path.display()),
                );
                return None;
            }
            Err(e) => {
                w.error(span, key, format!("`{}`: {e}", path.display()));
                return None;
            }
        }
    }
    Some(path)
}

/// `command = ["/usr/bin/php-cgi", "-d", "x=y"]` and `env = { … }`: a
/// program tern runs as a persistent worker. `None`: no command;
/// `Some(None)`: a command with an error (reported).
pub(crate) fn command(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    key: &str,
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
    let path = w.relative(&first);
    let Some(path) = program(w, t, key, path, span) else {
        return Some(None);
    };
    let mut vars = Vec::new();
    for (k, v, span) in env.unwrap_or_default() {
        if !is_env_name(&k) {
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

/// A name a shell would take as a variable: a letter or `_`, then letters,
/// digits and `_`.
fn is_env_name(name: &str) -> bool {
    name.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `env_allow`: environment variable names, none of them one the CGI
/// environment sets itself.
fn env_names(w: &mut Walker<'_>, t: &mut Table<'_>) -> Vec<String> {
    let Some(list) = w.strings_spanned(t, "env_allow") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, span) in list {
        if !is_env_name(&name) {
            w.error(
                span,
                t.key_path("env_allow"),
                format!("`{name}` is not an environment variable name"),
            );
        } else if CGI_RESERVED_NAMES.contains(&name.as_str()) || name.starts_with("HTTP_") {
            w.error(
                span,
                t.key_path("env_allow"),
                format!("`{name}` is set by the CGI environment itself"),
            );
        } else if name != "PATH" && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The timeout, environment policy and stderr limit every gateway route
/// has (CGI, FastCGI, CGIplus).
pub(crate) fn gateway_policy(w: &mut Walker<'_>, t: &mut Table<'_>) -> GatewayPolicy {
    let d = GatewayPolicy::default();
    GatewayPolicy {
        timeout: w.duration(t, "timeout", true).unwrap_or(d.timeout),
        env: env_policy(w, t, true),
        max_stderr_bytes: w
            .size(t, "max_stderr_bytes", 0)
            .unwrap_or(d.max_stderr_bytes),
        slow_request: w.duration(t, "slow_request", true),
        // Set from `[limits]` once the sites are read (load.rs).
        send_timeout: d.send_timeout,
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
            .count(t, "queue", MAX_QUEUE)
            .map_or(d.queue, |n| n as usize),
        queue_timeout: w
            .duration(t, "queue_timeout", true)
            .unwrap_or(d.queue_timeout),
    }
}
