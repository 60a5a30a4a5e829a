//! `[[site.headers]]`: response-header rules, checked here (the glob
//! compiles, names and values are valid, no framing header is touched)
//! and compiled by the server.

use crate::model::HeaderRule;
use crate::walk::{Table, Walker};

/// A site's header rules, in file order.
pub(crate) fn walk_headers(w: &mut Walker<'_>, site: &mut Table<'_>) -> Vec<HeaderRule> {
    let mut rules = Vec::new();
    for mut t in w.tables(site, "headers") {
        let pattern = match w.string_spanned(&mut t, "path") {
            Some((p, span)) => match globset::GlobBuilder::new(&p)
                .literal_separator(true)
                .build()
            {
                Ok(_) => Some(p),
                Err(e) => {
                    w.error(span, t.key_path("path"), format!("bad glob: {}", e.kind()));
                    None
                }
            },
            None if t.contains("path") => None,
            None => {
                w.error(
                    t.span(),
                    t.key_path("path"),
                    "missing (a glob such as \"*.css\")",
                );
                None
            }
        };
        let mut set = Vec::new();
        match w.string_map(&mut t, "set") {
            Some(entries) => {
                for (name, value, span) in entries {
                    let key = format!("{}.{name}", t.key_path("set"));
                    let name_ok = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    let value_ok = value
                        .bytes()
                        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f));
                    if !name_ok {
                        w.error(span.clone(), key.clone(), "not a valid header name");
                    }
                    if !value_ok {
                        w.error(
                            span.clone(),
                            key.clone(),
                            "control characters are not allowed in a header value",
                        );
                    }
                    let lower = name.to_ascii_lowercase();
                    if matches!(
                        lower.as_str(),
                        "content-length" | "transfer-encoding" | "connection" | "content-range"
                    ) {
                        w.error(
                            span,
                            key,
                            "this header is set by the server and cannot be overridden",
                        );
                    }
                    set.push((lower, value));
                }
            }
            None if t.contains("set") => {}
            None => w.error(
                t.span(),
                t.key_path("set"),
                "missing (a table of header names to values)",
            ),
        }
        w.finish(t);
        if let Some(pattern) = pattern {
            rules.push(HeaderRule { pattern, set });
        }
    }
    rules
}
