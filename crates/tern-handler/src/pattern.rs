//! [`RoutePattern`]: what a route matched on, kept as the router's typed
//! decision so that handlers read it rather than parse it back from text,
//! and the two rules that follow from it (which paths the route covers,
//! and where SCRIPT_NAME ends and PATH_INFO begins) are written once.

use std::fmt;
use std::sync::Arc;

use crate::path::DecodedPath;

/// The pattern of the route that chose a handler.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RoutePattern {
    /// A path prefix on segment boundaries, without a trailing slash (`/`
    /// for the site's default route, which covers everything).
    Prefix(Arc<str>),
    /// The extension of the last segment, lower case, without the dot.
    Extension(Arc<str>),
}

impl RoutePattern {
    /// The default route: the prefix `/`.
    pub fn root() -> RoutePattern {
        RoutePattern::Prefix(Arc::from("/"))
    }

    /// Whether this route is the one asked for `path`: a prefix on a
    /// segment boundary, or the extension of the last segment in any case
    /// (the router lower-cases what it compares).
    pub fn covers(&self, path: &DecodedPath) -> bool {
        match self {
            RoutePattern::Prefix(_) => self.beneath(path).is_some(),
            RoutePattern::Extension(e) => {
                path.extension().is_some_and(|x| x.eq_ignore_ascii_case(e))
            }
        }
    }

    /// The part of the URL the route claims, and the rest of `path` below
    /// it: for a prefix route its prefix (`""` for `/`) and what follows
    /// it (`""` or `/...`); for an extension route `""` and the whole
    /// path, since the whole path is looked up. `None` when `path` is not
    /// beneath the prefix.
    pub fn beneath<'a>(&'a self, path: &'a DecodedPath) -> Option<(&'a str, &'a str)> {
        let full = path.as_str();
        match self {
            RoutePattern::Extension(_) => Some(("", full)),
            RoutePattern::Prefix(p) if &**p == "/" => Some(("", full)),
            RoutePattern::Prefix(p) => full
                .strip_prefix(&**p)
                .filter(|rest| rest.is_empty() || rest.starts_with('/'))
                .map(|rest| (&**p, rest)),
        }
    }

    /// SCRIPT_NAME and PATH_INFO when the route itself is the script (no
    /// directory is searched): a prefix route is the script and the rest
    /// of the path its PATH_INFO; an extension route's script is the whole
    /// path, with no PATH_INFO.
    pub fn split<'a>(&'a self, path: &'a DecodedPath) -> (&'a str, &'a str) {
        match self {
            RoutePattern::Extension(_) => (path.as_str(), ""),
            RoutePattern::Prefix(p) => self.beneath(path).unwrap_or((&**p, "")),
        }
    }
}

/// As the configuration writes it: `/cgi-bin`, `*.php`.
impl fmt::Display for RoutePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RoutePattern::Prefix(p) => f.write_str(p),
            RoutePattern::Extension(e) => write!(f, "*.{e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> DecodedPath {
        DecodedPath::parse(s).unwrap()
    }

    fn prefix(s: &str) -> RoutePattern {
        RoutePattern::Prefix(Arc::from(s))
    }

    fn ext(s: &str) -> RoutePattern {
        RoutePattern::Extension(Arc::from(s))
    }

    #[test]
    fn a_prefix_covers_its_subtree_on_segment_boundaries() {
        assert!(prefix("/cgi-bin").covers(&p("/cgi-bin/x")));
        assert!(prefix("/cgi-bin").covers(&p("/cgi-bin")));
        assert!(!prefix("/cgi-bin").covers(&p("/cgi-binx")));
        assert!(RoutePattern::root().covers(&p("/anything")));
    }

    #[test]
    fn an_extension_covers_the_last_segment_in_any_case() {
        assert!(ext("cgi").covers(&p("/a/b.CGI")));
        assert!(!ext("cgi").covers(&p("/a/b.html")));
        assert!(!ext("cgi").covers(&p("/a.cgi/b")));
    }

    #[test]
    fn script_name_and_path_info_follow_the_pattern() {
        let path = p("/app/a/b");
        assert_eq!(prefix("/app").split(&path), ("/app", "/a/b"));
        assert_eq!(RoutePattern::root().split(&path), ("", "/app/a/b"));
        assert_eq!(ext("wasm").split(&path), ("/app/a/b", ""));
    }

    #[test]
    fn beneath_gives_the_claimed_part_and_the_rest() {
        let path = p("/cgi-bin/sub/x.cgi/info");
        assert_eq!(
            prefix("/cgi-bin").beneath(&path),
            Some(("/cgi-bin", "/sub/x.cgi/info"))
        );
        assert_eq!(
            ext("cgi").beneath(&path),
            Some(("", "/cgi-bin/sub/x.cgi/info"))
        );
        assert_eq!(prefix("/cgi").beneath(&path), None);
    }

    #[test]
    fn patterns_display_as_configured() {
        assert_eq!(prefix("/cgi-bin").to_string(), "/cgi-bin");
        assert_eq!(ext("php").to_string(), "*.php");
    }
}
