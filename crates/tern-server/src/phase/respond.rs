//! The respond phase: response-header rules (`[[site.headers]]`), a glob on
//! the request path and headers to set on every response whose path
//! matches, whatever made it (a handler, or a phase that answered early).
//! Which rules match is decided before the handler runs, from the path the
//! request ends with; the headers are set when the response comes.

use std::sync::Arc;

use globset::{Glob, GlobSet, GlobSetBuilder};
use http::{HeaderMap, HeaderName, HeaderValue};

type Headers = Box<[(HeaderName, HeaderValue)]>;

/// The compiled rules of one site.
#[derive(Debug, Default)]
pub struct HeaderRules {
    set: Option<GlobSet>,
    headers: Arc<[Headers]>,
}

/// The rules one request's path matched, kept until its response comes.
#[derive(Debug)]
pub(crate) struct HeaderHits {
    headers: Arc<[Headers]>,
    hits: Vec<usize>,
}

impl HeaderHits {
    /// Sets the matched rules' headers on `out`, later rules last.
    pub(crate) fn apply(&self, out: &mut HeaderMap) {
        for &i in &self.hits {
            for (n, v) in self.headers[i].iter() {
                out.insert(n.clone(), v.clone());
            }
        }
    }
}

/// A rule the config validated but this module cannot compile.
#[derive(Debug, thiserror::Error)]
#[error("header rule `{pattern}`: {reason}")]
pub struct RuleError {
    pattern: String,
    reason: String,
}

impl HeaderRules {
    /// Compiles rules in order; later rules override earlier ones for the
    /// same header.
    pub fn new(rules: &[tern_config::HeaderRule]) -> Result<Self, RuleError> {
        if rules.is_empty() {
            return Ok(HeaderRules::default());
        }
        let mut b = GlobSetBuilder::new();
        let mut headers = Vec::with_capacity(rules.len());
        for r in rules {
            let err = |reason: String| RuleError {
                pattern: r.pattern.clone(),
                reason,
            };
            // A pattern without '/' matches the last segment anywhere.
            let pat = if r.pattern.contains('/') {
                r.pattern.clone()
            } else {
                format!("**/{}", r.pattern)
            };
            let glob = globset::GlobBuilder::new(&pat)
                .literal_separator(true)
                .build()
                .or_else(|_| Glob::new(&pat))
                .map_err(|e| err(e.to_string()))?;
            b.add(glob);
            let mut set = Vec::with_capacity(r.set.len());
            for (name, value) in &r.set {
                let n = HeaderName::from_bytes(name.as_bytes()).map_err(|e| err(e.to_string()))?;
                let v = HeaderValue::from_str(value).map_err(|e| err(e.to_string()))?;
                set.push((n, v));
            }
            headers.push(set.into_boxed_slice());
        }
        Ok(HeaderRules {
            set: Some(b.build().map_err(|e| RuleError {
                pattern: String::new(),
                reason: e.to_string(),
            })?),
            headers: headers.into(),
        })
    }

    /// Whether there are no rules (the common case: no work per request).
    pub fn is_empty(&self) -> bool {
        self.set.is_none()
    }

    /// The rules `path` matches, or `None` when none does.
    pub(crate) fn decide(&self, path: &str) -> Option<HeaderHits> {
        let hits = self.set.as_ref()?.matches(path);
        (!hits.is_empty()).then(|| HeaderHits {
            headers: self.headers.clone(),
            hits,
        })
    }

    /// Sets the headers of every rule matching `path`.
    pub fn apply(&self, path: &str, out: &mut HeaderMap) {
        if let Some(hits) = self.decide(path) {
            hits.apply(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(p: &str, h: &str, v: &str) -> tern_config::HeaderRule {
        tern_config::HeaderRule {
            pattern: p.into(),
            set: vec![(h.into(), v.into())],
        }
    }

    #[test]
    fn globs_match_segments_and_subtrees() {
        let r = HeaderRules::new(&[
            rule("*.css", "cache-control", "max-age=60"),
            rule("/static/**", "x-static", "1"),
            rule("/static/*.css", "cache-control", "max-age=600"),
        ])
        .unwrap();
        let get = |p: &str| {
            let mut m = HeaderMap::new();
            r.apply(p, &mut m);
            m
        };
        assert_eq!(get("/a/b.css")["cache-control"], "max-age=60");
        assert_eq!(get("/b.css")["cache-control"], "max-age=60");
        assert!(get("/a/b.js").is_empty());
        let m = get("/static/x.css");
        assert_eq!(m["cache-control"], "max-age=600");
        assert_eq!(m["x-static"], "1");
        assert!(
            !get("/static/deep/x.css").contains_key("cache-control")
                || get("/static/deep/x.css")["cache-control"] == "max-age=60"
        );
        assert_eq!(get("/static/deep/y.js")["x-static"], "1");
    }
}
