//! Targets built from a match: `/blog/$1?$query`, `${year}`, `$host`.
//!
//! A template is parsed once, when the configuration is loaded, against
//! the captures its rule's regex has, so that a reference to a capture
//! that does not exist is a configuration error and never a surprise at
//! run time. The syntax:
//!
//! - `$1`..`$9` and `${12}`: numbered captures (`$0` is the whole match);
//! - `${name}`: a named capture;
//! - `$path` (the decoded path), `$query` (the query as the client sent
//!   it, without `?`), `$host`, `$scheme`, `$method`, `$remote_addr`, or
//!   the same in braces (`${path}`);
//! - `$$`: a dollar sign.
//!
//! The first literal `?` splits a template into its path and its query,
//! so that a `?` inside a capture (a decoded `%3F`) never starts a query.

use std::borrow::Cow;
use std::fmt::Write as _;

/// A variable a template can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Var {
    /// The decoded path, as the rules see it now.
    Path,
    /// The query, raw, without `?` (empty when there is none).
    Query,
    /// The request's host (its one authority), as sent.
    Host,
    /// `http` or `https`.
    Scheme,
    /// The method.
    Method,
    /// The client's address (no port).
    RemoteAddr,
}

impl Var {
    fn named(name: &str) -> Option<Var> {
        Some(match name {
            "path" => Var::Path,
            "query" => Var::Query,
            "host" => Var::Host,
            "scheme" => Var::Scheme,
            "method" => Var::Method,
            "remote_addr" => Var::RemoteAddr,
            _ => return None,
        })
    }

    /// The name a template writes it by.
    pub fn name(self) -> &'static str {
        match self {
            Var::Path => "path",
            Var::Query => "query",
            Var::Host => "host",
            Var::Scheme => "scheme",
            Var::Method => "method",
            Var::RemoteAddr => "remote_addr",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Capture(usize),
    Var(Var),
}

/// The captures a rule's condition offers to its templates.
#[derive(Clone, Debug, Default)]
pub struct Captures {
    /// How many groups, counting the whole match (0 when there is no regex).
    pub count: usize,
    /// Named groups, with their numbers.
    pub names: Vec<(String, usize)>,
}

impl Captures {
    /// The groups of `re`.
    pub fn of(re: &regex::Regex) -> Captures {
        Captures {
            count: re.captures_len(),
            names: re
                .capture_names()
                .enumerate()
                .filter_map(|(i, n)| Some((n?.to_owned(), i)))
                .collect(),
        }
    }
}

/// A parsed template: its path part and, after the first literal `?`, its
/// query part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    path: Vec<Piece>,
    /// `None`: the template has no `?` (the request's query is kept).
    query: Option<Vec<Piece>>,
}

/// The values a template is expanded with.
#[derive(Debug)]
pub struct Values<'a> {
    /// The captures of the rule's regex (empty without one).
    pub captures: &'a [Option<&'a str>],
    /// The decoded path.
    pub path: &'a str,
    /// The raw query.
    pub query: Option<&'a str>,
    /// The host, if any.
    pub host: Option<&'a str>,
    /// Whether the connection is TLS.
    pub secure: bool,
    /// The method.
    pub method: &'a str,
    /// The client's address (`None` over a Unix socket).
    pub client: Option<std::net::IpAddr>,
}

impl Values<'_> {
    fn var(&self, v: Var) -> Cow<'_, str> {
        Cow::Borrowed(match v {
            Var::Path => self.path,
            Var::Query => self.query.unwrap_or(""),
            Var::Host => self.host.unwrap_or(""),
            Var::Scheme => {
                if self.secure {
                    "https"
                } else {
                    "http"
                }
            }
            Var::Method => self.method,
            // Formatted only for a template that names it.
            Var::RemoteAddr => {
                return self
                    .client
                    .map_or(Cow::Borrowed(""), |ip| Cow::Owned(ip.to_string()))
            }
        })
    }
}

/// How a template is expanded: into a path the rules go on with (decoded
/// text), or into a URL a client is sent to (percent-encoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// An internal path: decoded, as the rules and handlers see paths.
    Decoded,
    /// A redirect target: values are percent-encoded for where they land.
    Url,
}

/// A template expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expanded {
    /// The path (or, for a URL, everything before the query).
    pub path: String,
    /// The query, when the template has a `?`.
    pub query: Option<String>,
}

impl Template {
    /// Parses `s` against the captures its rule offers.
    pub fn parse(s: &str, caps: &Captures) -> Result<Template, String> {
        let mut path = Vec::new();
        let mut query: Option<Vec<Piece>> = None;
        let mut lit = String::new();
        let mut rest = s;
        fn flush(lit: &mut String, out: &mut Vec<Piece>) {
            if !lit.is_empty() {
                out.push(Piece::Lit(std::mem::take(lit)));
            }
        }
        while let Some(c) = rest.chars().next() {
            if c == '?' && query.is_none() {
                flush(&mut lit, &mut path);
                query = Some(Vec::new());
                rest = &rest[1..];
                continue;
            }
            let out = match query.as_mut() {
                Some(q) => q,
                None => &mut path,
            };
            if c != '$' {
                lit.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let after = &rest[1..];
            let (name, len) = if let Some(braced) = after.strip_prefix('{') {
                let end = braced
                    .find('}')
                    .ok_or_else(|| format!("`${{` without `}}` in {s:?}"))?;
                (&braced[..end], end + 2)
            } else if let Some(after_dollar) = after.strip_prefix('$') {
                lit.push('$');
                rest = after_dollar;
                continue;
            } else if after.starts_with(|c: char| c.is_ascii_digit()) {
                (&after[..1], 1)
            } else {
                let end = after
                    .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                    .unwrap_or(after.len());
                if end == 0 {
                    return Err(format!(
                        "a `$` not followed by a capture or a variable in {s:?} (write `$$` for a dollar sign)"
                    ));
                }
                (&after[..end], end)
            };
            rest = &after[len..];
            let piece = if let Ok(n) = name.parse::<usize>() {
                if n >= caps.count {
                    return Err(match caps.count {
                        0 => format!("${name} refers to a capture, and the rule has no regex"),
                        c => format!(
                            "${name} refers to a capture the regex does not have (it has {})",
                            c - 1
                        ),
                    });
                }
                Piece::Capture(n)
            } else if let Some(&(_, i)) = caps.names.iter().find(|(n, _)| n == name) {
                Piece::Capture(i)
            } else if let Some(v) = Var::named(name) {
                Piece::Var(v)
            } else {
                return Err(format!(
                    "unknown variable ${name} (captures $1.., named captures, or one of $path, $query, $host, $scheme, $method, $remote_addr)"
                ));
            };
            flush(&mut lit, out);
            out.push(piece);
        }
        let out = match query.as_mut() {
            Some(q) => q,
            None => &mut path,
        };
        flush(&mut lit, out);
        Ok(Template { path, query })
    }

    /// Whether the template has a query part (`?`).
    pub fn has_query(&self) -> bool {
        self.query.is_some()
    }

    /// Expands the template as plain text (a header or variable value):
    /// its path and query parts joined again by the `?` that split them.
    pub fn expand_text(&self, v: &Values<'_>) -> Result<String, String> {
        let e = self.expand(v, Form::Decoded)?;
        Ok(match e.query {
            Some(q) => format!("{}?{q}", e.path),
            None => e.path,
        })
    }

    /// Expands the template. A value that would put a control character
    /// (CR, LF, NUL...) into the result is refused: never sent, never
    /// routed.
    pub fn expand(&self, v: &Values<'_>, form: Form) -> Result<Expanded, String> {
        let path = expand(&self.path, v, form, Part::Path)?;
        let query = match &self.query {
            Some(q) => Some(expand(q, v, form, Part::Query)?),
            None => None,
        };
        Ok(Expanded { path, query })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Path,
    Query,
}

fn expand(pieces: &[Piece], v: &Values<'_>, form: Form, part: Part) -> Result<String, String> {
    let mut out = String::new();
    for p in pieces {
        let (value, what) = match p {
            Piece::Lit(l) => {
                out.push_str(l);
                continue;
            }
            Piece::Capture(i) => (
                Cow::Borrowed(v.captures.get(*i).copied().flatten().unwrap_or("")),
                None,
            ),
            Piece::Var(var) => (v.var(*var), Some(*var)),
        };
        if let Some(b) = value.bytes().find(|b| b.is_ascii_control()) {
            let name = match (p, what) {
                (_, Some(var)) => format!("${}", var.name()),
                (Piece::Capture(i), _) => format!("${i}"),
                _ => String::new(),
            };
            return Err(format!(
                "{name} would put the control character 0x{b:02x} into the result"
            ));
        }
        // The raw query is already encoded; so is the host, the scheme,
        // the method and an address. Decoded text (the path and captures
        // of it) is encoded for where it lands when the result is a URL;
        // in a decoded path it stays as it is, except that a decoded `?`
        // or `#` cannot start a query there.
        let raw = matches!(
            what,
            Some(Var::Query | Var::Host | Var::Scheme | Var::Method | Var::RemoteAddr)
        );
        match (form, part, raw) {
            (_, _, true) | (Form::Decoded, Part::Path, false) => out.push_str(&value),
            (Form::Url, Part::Path, false) => encode(&mut out, &value, PATH_SAFE),
            (_, Part::Query, false) => encode(&mut out, &value, QUERY_SAFE),
        }
    }
    Ok(out)
}

/// Bytes a path segment may carry as they are (RFC 3986 pchar, and `/`).
const PATH_SAFE: &[u8] = b"-._~!$&'()*+,;=:@/";
/// Bytes a query value may carry as they are (`&` and `=` are encoded: a
/// captured value must not split or end a parameter).
const QUERY_SAFE: &[u8] = b"-._~!$'()*+,;:@/?";

/// Percent-encodes decoded path text for a URI: what is not a path byte
/// as it is (RFC 3986 pchar, and `/`) becomes `%XX`, so that
/// `DecodedPath::parse` reads the result back as the same text (and
/// normalises it, and refuses what it refuses).
pub fn encode_path(out: &mut String, path: &str) {
    encode(out, path, PATH_SAFE);
}

fn encode(out: &mut String, value: &str, safe: &[u8]) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || safe.contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(re: &str) -> (regex::Regex, Captures) {
        let re = regex::Regex::new(re).unwrap();
        let c = Captures::of(&re);
        (re, c)
    }

    fn values<'a>(captures: &'a [Option<&'a str>]) -> Values<'a> {
        Values {
            captures,
            path: "/a b/c",
            query: Some("x=1&y=%20"),
            host: Some("example.test"),
            secure: true,
            method: "GET",
            client: Some(std::net::Ipv4Addr::LOCALHOST.into()),
        }
    }

    #[test]
    fn captures_variables_and_the_query_split() {
        let (re, c) = caps(r"^/blog/(?P<year>\d{4})/(.*)$");
        let t = Template::parse("/posts/${year}/$2?p=$2&$query", &c).unwrap();
        let m = re.captures("/blog/2024/a?b c").unwrap();
        let caps: Vec<Option<&str>> = m.iter().map(|g| g.map(|g| g.as_str())).collect();
        let v = values(&caps);
        let internal = t.expand(&v, Form::Decoded).unwrap();
        assert_eq!(internal.path, "/posts/2024/a?b c");
        assert_eq!(internal.query.as_deref(), Some("p=a?b%20c&x=1&y=%20"));
        let url = t.expand(&v, Form::Url).unwrap();
        assert_eq!(url.path, "/posts/2024/a%3Fb%20c");

        let t = Template::parse("$scheme://$host$path", &Captures::default()).unwrap();
        let e = t.expand(&values(&[]), Form::Url).unwrap();
        assert_eq!(e.path, "https://example.test/a%20b/c");
        assert_eq!(e.query, None);
        assert!(!t.has_query());

        let t = Template::parse("/cost$$5?", &Captures::default()).unwrap();
        let e = t.expand(&values(&[]), Form::Decoded).unwrap();
        assert_eq!((e.path.as_str(), e.query.as_deref()), ("/cost$5", Some("")));
    }

    #[test]
    fn bad_references_are_refused_when_parsed() {
        let none = Captures::default();
        let (_, two) = caps(r"^/(a)/(b)$");
        for (t, c, want) in [
            ("/$1", &none, "the rule has no regex"),
            ("/$3", &two, "does not have (it has 2)"),
            ("/${nope}", &two, "unknown variable $nope"),
            ("/$Path", &two, "not followed by"),
            ("/${1", &two, "without `}`"),
            ("/a$", &two, "write `$$`"),
        ] {
            let e = Template::parse(t, c).unwrap_err();
            assert!(e.contains(want), "{t}: {e}");
        }
        assert!(Template::parse("/$2/${0}", &two).is_ok());
    }

    #[test]
    fn control_characters_never_reach_the_result() {
        let t = Template::parse("/x/$1", &caps("^/(.*)$").1).unwrap();
        let caps = [Some("/a\r\nb"), Some("a\r\nSet-Cookie: x")];
        let e = t.expand(&values(&caps), Form::Url).unwrap_err();
        assert!(e.contains("$1") && e.contains("0x0d"), "{e}");
    }
}
