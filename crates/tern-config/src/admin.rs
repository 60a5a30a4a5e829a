//! The `[admin]` table: where the admin listener listens, whom it serves,
//! and what the metrics and histories keep.

use crate::address::ListenAddr;
use crate::defaults;
use crate::model::AdminConfig;
use crate::walk::{Table, Walker};

/// The most buckets a duration histogram may have: each is a number per
/// series in every scrape.
const MAX_BUCKETS: usize = 40;

/// The most requests the request history may keep.
const MAX_REQUEST_HISTORY: u64 = 100_000;

pub(crate) fn walk_admin(w: &mut Walker<'_>, top: &mut Table<'_>) -> Option<AdminConfig> {
    let mut t = w.table(top, "admin")?;
    // Without `listen`, the pages are served only where a site mounts
    // them (`handler = "admin"`).
    let listen = match w.string_spanned(&mut t, "listen") {
        Some((a, span)) => match a.parse::<ListenAddr>() {
            Ok(ListenAddr::Unix(p)) => Some(ListenAddr::Unix(w.relative(p))),
            Ok(tcp) => Some(tcp),
            Err(e) => {
                w.error(span, t.key_path("listen"), e.to_string());
                None
            }
        },
        None => None,
    };
    let listen_bad = t.contains("listen") && listen.is_none();
    let allow = crate::rules::networks(w, &mut t, "allow").unwrap_or_default();
    let duration_buckets = buckets(w, &mut t).unwrap_or_else(|| defaults::DURATION_BUCKETS.into());
    let request_history = w
        .integer_in(&mut t, "request_history", 0, MAX_REQUEST_HISTORY)
        .map_or(defaults::REQUEST_HISTORY, |n| n as usize);
    let keep = w.bool(&mut t, "activity_history").unwrap_or(true);
    let file = w.string(&mut t, "activity_file").map(|f| w.relative(f));
    if !keep && t.contains("activity_file") {
        w.error(
            t.span_of("activity_file"),
            t.key_path("activity_file"),
            "set, but activity_history = false keeps no file",
        );
    }
    let activity_file =
        keep.then(|| file.unwrap_or_else(|| defaults::state_dir().join(defaults::ACTIVITY_FILE)));
    w.finish(t);
    if listen_bad {
        return None;
    }
    Some(AdminConfig {
        listen,
        allow,
        duration_buckets,
        request_history,
        activity_file,
    })
}

/// `duration_buckets`: ascending positive seconds.
fn buckets(w: &mut Walker<'_>, t: &mut Table<'_>) -> Option<Vec<f64>> {
    let key = t.key_path("duration_buckets");
    let span = t.span_of("duration_buckets");
    let (item, _) = t.take("duration_buckets")?;
    let Some(arr) = item.as_array() else {
        w.error(span, key, "expected a list of seconds, e.g. [0.01, 0.1, 1]");
        return None;
    };
    let mut out = Vec::with_capacity(arr.len());
    for (i, v) in arr.iter().enumerate() {
        let n = v.as_float().or_else(|| v.as_integer().map(|n| n as f64));
        match n {
            Some(n) if n.is_finite() && n > 0.0 && out.last().is_none_or(|l| n > *l) => out.push(n),
            Some(_) => {
                w.error(
                    v.span(),
                    format!("{key}[{i}]"),
                    "bucket bounds must be positive and ascending",
                );
                return None;
            }
            None => {
                w.error(
                    v.span(),
                    format!("{key}[{i}]"),
                    "expected a number of seconds",
                );
                return None;
            }
        }
    }
    if out.is_empty() || out.len() > MAX_BUCKETS {
        w.error(span, key, format!("expected 1 to {MAX_BUCKETS} bounds"));
        return None;
    }
    Some(out)
}
