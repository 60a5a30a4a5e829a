//! `handler = "cgiplus"` routes: who runs the scripts (each script
//! itself, one of tern's run-time engines, or another engine), where they
//! are, and the pool of workers.

use std::path::Path;

use crate::fields::{command, gateway_policy, script_dir};
use crate::model::{CgiPlusConfig, Engine, RouteMatcher};
use crate::pool::walk_pool;
use crate::walk::{Table, Walker};

/// The settings of a CGIplus route.
pub(crate) fn walk_cgiplus(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    matcher: Option<&RouteMatcher>,
) -> Option<CgiPlusConfig> {
    let engine_name = w.string_spanned(t, "engine");
    let command = command(w, t, "command");
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
    let dir = script_dir(w, t, site_root, matcher);
    let pool = walk_pool(w, t, true);
    let policy = gateway_policy(w, t);
    Some(CgiPlusConfig {
        engine: engine?,
        dir: dir?,
        document_root: site_root?.to_path_buf(),
        pool: pool?,
        policy,
    })
}
