//! `handler = "cgi"` routes: the script directory, the interpreter, the
//! limits and the environment policy of a CGI route.

use std::path::{Path, PathBuf};

use crate::load::LoadOptions;
use crate::model::{CgiConfig, RouteMatcher, CGI_RESERVED_NAMES};
use crate::walk::{Span, Table, Walker};

/// The settings of a CGI route. `site_root` is the site's document root
/// (`None` when the site has none, which was reported already); `matcher`
/// is the route's, when valid. Every key is read even when an earlier one
/// failed, so that each error is reported.
pub(crate) fn walk_cgi(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    matcher: Option<&RouteMatcher>,
    base: &Path,
    opts: LoadOptions,
) -> Option<CgiConfig> {
    let dir = script_dir(w, t, site_root, matcher, base, opts);
    let interpreter = match w.string_spanned(t, "interpreter") {
        Some((i, span)) => program(w, t, "interpreter", PathBuf::from(i), span, opts),
        None => None,
    };
    let policy = crate::persistent::policy(w, t);
    let admission = crate::persistent::admission(w, t, 100_000);
    Some(CgiConfig {
        dir: dir?,
        document_root: site_root?.to_path_buf(),
        interpreter,
        policy,
        admission,
    })
}

/// `dir`, the directory holding a route's scripts: required for a prefix
/// route, the site's root by default for an extension route.
pub(crate) fn script_dir(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    matcher: Option<&RouteMatcher>,
    base: &Path,
    opts: LoadOptions,
) -> Option<PathBuf> {
    match w.string_spanned(t, "dir") {
        Some((d, span)) => Some(directory(w, t, base.join(d), span, opts)),
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

/// An absolute form of `dir`, checked to be a directory when paths are
/// checked.
pub(crate) fn directory(
    w: &mut Walker<'_>,
    t: &Table<'_>,
    dir: PathBuf,
    span: Span,
    opts: LoadOptions,
) -> PathBuf {
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    if opts.check_paths {
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

/// The interpreter: an absolute path (PATH is never searched: the program
/// that runs scripts is fixed at load), to an executable file when paths
/// are checked.
pub(crate) fn program(
    w: &mut Walker<'_>,
    t: &Table<'_>,
    key: &str,
    path: PathBuf,
    span: Span,
    opts: LoadOptions,
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
    if opts.check_paths {
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

/// `env_allow`: environment variable names, none of them one the CGI
/// environment sets itself.
pub(crate) fn env_names(w: &mut Walker<'_>, t: &mut Table<'_>) -> Vec<String> {
    let Some(list) = w.strings_spanned(t, "env_allow") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, span) in list {
        let valid = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
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
