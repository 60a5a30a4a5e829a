//! `handler = "cgi"` routes: the script directory, the interpreter, the
//! limits and the environment policy of a CGI route.

use std::path::{Path, PathBuf};

use crate::fields::{admission, gateway_policy, program, script_dir};
use crate::model::{CgiConfig, RouteMatcher};
use crate::walk::{Table, Walker};

/// Most scripts of one route running at once.
const MAX_CONCURRENT: u64 = 100_000;

/// The settings of a CGI route. `site_root` is the site's document root
/// (`None` when the site has none, which was reported already); `matcher`
/// is the route's, when valid. Every key is read even when an earlier one
/// failed, so that each error is reported.
pub(crate) fn walk_cgi(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
    matcher: Option<&RouteMatcher>,
) -> Option<CgiConfig> {
    let dir = script_dir(w, t, site_root, matcher);
    // Never relative to the file: an interpreter must be named absolutely.
    let interpreter = match w.string_spanned(t, "interpreter") {
        Some((i, span)) => program(w, t, "interpreter", PathBuf::from(i), span),
        None => None,
    };
    let policy = gateway_policy(w, t);
    let admission = admission(w, t, MAX_CONCURRENT);
    Some(CgiConfig {
        dir: dir?,
        document_root: site_root?.to_path_buf(),
        interpreter,
        policy,
        admission,
    })
}
