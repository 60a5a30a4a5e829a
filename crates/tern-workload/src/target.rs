//! Request targets as logged: their path and query, and whether one names
//! an HTML page. One place, so that the reducer, the assembler and the
//! materializer split targets the same way.

/// The path part of a target: everything before the first `?` or `#`.
pub(crate) fn path_of(target: &str) -> &str {
    target.split(['?', '#']).next().unwrap_or_default()
}

/// The query of a target (after the first `?`, before a `#`); `""` when
/// none.
pub(crate) fn query_of(target: &str) -> &str {
    target
        .split_once('?')
        .map_or("", |(_, q)| q.split('#').next().unwrap_or_default())
}

/// Whether a file name (a path's last segment) names an HTML page: it is
/// empty (a directory), ends with `.html` or `.htm`, or has no extension.
pub(crate) fn is_html_name(last: &str) -> bool {
    let lower = last.to_ascii_lowercase();
    last.is_empty() || lower.ends_with(".html") || lower.ends_with(".htm") || !last.contains('.')
}

/// Whether a request target names an HTML page: its path (query and
/// fragment ignored) ends with `/`, or its last segment is an HTML name
/// ([`is_html_name`]).
pub(crate) fn is_html_page(target: &str) -> bool {
    is_html_name(path_of(target).rsplit('/').next().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_into_path_and_query() {
        assert_eq!(path_of("/a.html?x=1#top"), "/a.html");
        assert_eq!(path_of("/a.html#top?x"), "/a.html");
        assert_eq!(query_of("/a?x=1#top"), "x=1");
        assert_eq!(query_of("/a#top"), "");
    }

    #[test]
    fn html_pages_are_recognised() {
        for t in [
            "/",
            "/a/",
            "/a.html",
            "/b.HTM",
            "/about",
            "/x.html?q=1",
            "/y.htm#s",
        ] {
            assert!(is_html_page(t), "{t}");
        }
        for t in ["/a.png", "/style.css", "/x.cgi?a=b", "/z.png#a.html"] {
            assert!(!is_html_page(t), "{t}");
        }
    }
}
