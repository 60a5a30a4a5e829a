//! A document root that matches a model, so that a replay of the model
//! finds every file it asks for, of the size the log recorded:
//!
//! ```text
//! DIR/htdocs/...      every static file at its logged path, of its logged size
//! DIR/cgi-bin/NAME    a Perl CGI script for each dynamic path
//! DIR/state/          what the scripts' cost needs (counters, a text corpus)
//! DIR/routes.toml     a tern site: root htdocs, each dynamic path routed to its script
//! DIR/paths.txt       each logged target and the file that answers it
//! ```
//!
//! Paths come from logs, so from anyone: a path is percent-decoded and
//! refused (and reported) when it holds a `..` segment or a NUL, and files
//! are only ever created inside a directory this function created or found
//! empty, so nothing is written outside DIR.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::model::{FileRef, Model};
use crate::Error;

/// The URL prefix the dynamic paths are rewritten to, where the CGI route
/// finds the scripts.
pub const SCRIPT_PREFIX: &str = "/_tern_cgi";

/// Bytes of the text corpus the `cpu` scripts search.
const CORPUS_BYTES: usize = 4 << 20;

/// What each CGI script costs the server, besides printing its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// Nothing: print and exit (the report's trivial Perl script).
    Trivial,
    /// Increment a counter file under an exclusive lock (the report's
    /// counter script): I/O and lock contention.
    Counter,
    /// Read a 4 MiB text corpus and count a word in it: tens of
    /// milliseconds of CPU per request.
    Cpu,
    /// No program at all: each dynamic path is a static file of its logged
    /// size (the report's static-only trace, the baseline the script
    /// models are compared with).
    Static,
}

/// A logged target that was not materialized, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// The target as logged.
    pub target: String,
    /// Why it was refused.
    pub reason: String,
}

/// What [`materialize`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Materialized {
    /// The directory.
    pub dir: PathBuf,
    /// Static files written under `htdocs/`.
    pub files: u64,
    /// Their bytes.
    pub file_bytes: u64,
    /// CGI scripts written under `cgi-bin/`.
    pub scripts: u64,
    /// Dynamic targets the scripts answer.
    pub dynamic_targets: u64,
    /// Targets refused (traversal, NUL, a file where a directory must be).
    pub rejected: Vec<Rejected>,
}

impl fmt::Display for Materialized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "materialized {}: {} files ({} bytes) in htdocs, {} CGI scripts for {} dynamic targets in cgi-bin, routes.toml, paths.txt",
            self.dir.display(),
            self.files,
            self.file_bytes,
            self.scripts,
            self.dynamic_targets
        )?;
        for r in &self.rejected {
            writeln!(f, "  refused {}: {}", r.target, r.reason)?;
        }
        writeln!(
            f,
            "serve it: tern serve --config {} --listen 127.0.0.1:8080",
            self.dir.join("routes.toml").display()
        )
    }
}

/// The path part of a target (no query, no fragment).
fn path_of(target: &str) -> &str {
    target.split(['?', '#']).next().unwrap_or_default()
}

/// The query of a target, `""` when none.
fn query_of(target: &str) -> &str {
    target
        .split_once('?')
        .map_or("", |(_, q)| q.split('#').next().unwrap_or_default())
}

/// The decoded path of a target as safe relative segments (`.` and empty
/// segments dropped); a path ending in `/` gets `index.html`.
fn segments(target: &str) -> Result<Vec<Vec<u8>>, String> {
    let path = path_of(target);
    if !path.starts_with('/') {
        return Err("does not start with /".into());
    }
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    if decoded.contains(&0) {
        return Err("a NUL in the path".into());
    }
    let mut out = Vec::new();
    for seg in decoded.split(|&b| b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => return Err("a `..` segment".into()),
            s => out.push(s.to_vec()),
        }
    }
    if decoded.ends_with(b"/") || out.is_empty() {
        out.push(b"index.html".to_vec());
    }
    Ok(out)
}

fn join(base: &Path, segs: &[Vec<u8>]) -> PathBuf {
    let mut p = base.to_path_buf();
    for s in segs {
        p.push(std::ffi::OsStr::from_bytes(s));
    }
    p
}

/// Deterministic filler text (never `<` or `&`, so it is HTML text too).
fn filler(n: usize) -> Vec<u8> {
    const LINE: &[u8] = b"tern bench model filler: a file of the size the access log recorded.\n";
    LINE.iter().copied().cycle().take(n).collect()
}

/// Writes `bytes` bytes: a small HTML document when `html` and the size
/// allows, padded with filler; filler otherwise.
fn write_body(path: &Path, bytes: u64, html: bool) -> std::io::Result<()> {
    let head: &[u8] = b"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>tern bench model</title></head><body>\n<p>";
    let tail: &[u8] = b"</p></body></html>\n";
    let mut f = std::io::BufWriter::new(fs::File::create_new(path)?);
    let mut left = bytes;
    let with_doc = html && bytes >= (head.len() + tail.len()) as u64;
    if with_doc {
        f.write_all(head)?;
        left -= (head.len() + tail.len()) as u64;
    }
    let chunk = filler(64 * 1024);
    while left > 0 {
        let k = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..k])?;
        left -= k as u64;
    }
    if with_doc {
        f.write_all(tail)?;
    }
    f.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// A file name for a script from its decoded path: safe characters only,
/// never a dot-file or an `nph-` script, unique among `taken`.
fn script_name(path: &str, taken: &mut std::collections::HashSet<String>) -> String {
    let mut name: String = path
        .trim_start_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name = name.trim_start_matches(['.', '_']).to_owned();
    name.truncate(100);
    if name.is_empty() {
        name = "index".into();
    }
    if name.to_ascii_lowercase().starts_with("nph-") {
        name.insert_str(0, "s-");
    }
    let mut unique = name.clone();
    let mut n = 2;
    while !taken.insert(unique.clone()) {
        unique = format!("{name}-{n}");
        n += 1;
    }
    unique
}

/// A Perl single-quoted string.
fn perl_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// A regex matching exactly `s`.
fn regex_literal(s: &str) -> String {
    let mut out = String::from("^");
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('$');
    out
}

/// A TOML string value.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// One dynamic path: the sizes its queries were logged with.
#[derive(Debug)]
struct Dynamic<'a> {
    /// Query → the file logged with it (the first one seen).
    by_query: BTreeMap<&'a str, &'a FileRef>,
    /// The first one seen (in the model's order: the most frequent
    /// classes first), whose size answers unknown queries.
    first: &'a FileRef,
}

fn script(path: &str, d: &Dynamic<'_>, cost: Cost, name: &str) -> String {
    let mut s = String::new();
    s.push_str("#!/usr/bin/perl\n");
    s.push_str(&format!(
        "# Written by `tern bench model --materialize` for {path}:\n# a body of the size logged for each query.\nuse strict;\nuse warnings;\n"
    ));
    s.push_str("my %bytes = (\n");
    for (q, f) in &d.by_query {
        s.push_str(&format!("    {} => {},\n", perl_str(q), f.bytes));
    }
    s.push_str(");\n");
    s.push_str(&format!(
        "my $query = defined $ENV{{QUERY_STRING}} ? $ENV{{QUERY_STRING}} : '';\nmy $n = exists $bytes{{$query}} ? $bytes{{$query}} : {};\n",
        d.first.bytes
    ));
    match cost {
        // Static never reaches here: its dynamic paths are files.
        Cost::Trivial | Cost::Static => {}
        Cost::Counter => s.push_str(&format!(
            r#"use Fcntl qw(:flock O_RDWR O_CREAT);
use FindBin;
sysopen(my $fh, "$FindBin::Bin/../state/" . {counter}, O_RDWR | O_CREAT, 0644) or die "counter: $!";
flock($fh, LOCK_EX) or die "flock: $!";
my $line = <$fh>;
my $count = (defined $line && $line =~ /^(\d+)/) ? $1 : 0;
seek($fh, 0, 0);
truncate($fh, 0);
print $fh $count + 1, "\n";
close($fh) or die "counter: $!";
"#,
            counter = perl_str(&format!("{name}.count"))
        )),
        Cost::Cpu => s.push_str(
            r#"use FindBin;
open(my $corpus, '<', "$FindBin::Bin/../state/corpus.txt") or die "corpus: $!";
my $text = do { local $/; <$corpus> };
close($corpus);
my $hits = 0;
for my $word (qw(nebula quartz harbor)) {
    $hits++ while $text =~ /\b\Q$word\E\w*/g;
}
"#,
        ),
    }
    let status = d.first.status;
    if (400..=599).contains(&status) {
        s.push_str(&format!("print \"Status: {status} As Logged\\n\";\n"));
    }
    s.push_str(
        r#"binmode STDOUT;
print "Content-Type: text/html\n\n";
my $block = 'x' x 65536;
while ($n > 0) {
    my $k = $n < 65536 ? $n : 65536;
    print substr($block, 0, $k);
    $n -= $k;
}
"#,
    );
    s
}

/// Deterministic text for the `cpu` scripts to search.
fn corpus(bytes: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "alpha", "beacon", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "indigo",
        "juniper", "kelvin", "lumen", "nebula", "orchid", "quartz", "willow",
    ];
    let mut out = Vec::with_capacity(bytes + 16);
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut col = 0;
    while out.len() < bytes {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let w = WORDS[(x >> 60) as usize];
        out.extend_from_slice(w.as_bytes());
        col += w.len() + 1;
        if col > 72 {
            out.push(b'\n');
            col = 0;
        } else {
            out.push(b' ');
        }
    }
    out.truncate(bytes);
    out
}

/// Writes a document root matching `model` into `dir`, which must not
/// exist (its parent must) or be empty.
pub fn materialize(model: &Model, dir: &Path, cost: Cost) -> Result<Materialized, Error> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::NotEmpty {
                    path: dir.to_owned(),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir(dir).map_err(|e| Error::io(dir, e))?;
        }
        Err(e) => return Err(Error::io(dir, e)),
    }
    let io = |p: &Path| {
        let p = p.to_owned();
        move |e| Error::io(p, e)
    };
    let htdocs = dir.join("htdocs");
    let cgi_bin = dir.join("cgi-bin");
    let state = dir.join("state");
    for d in [&htdocs, &cgi_bin, &state] {
        fs::create_dir(d).map_err(io(d))?;
    }

    // Every distinct file, in the model's order (most frequent classes
    // first).
    let mut seen = std::collections::HashSet::new();
    let mut statics: Vec<&FileRef> = Vec::new();
    let mut dynamics: BTreeMap<&str, Dynamic<'_>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for f in model.pages.iter().flat_map(|p| &p.files) {
        if !seen.insert((f.method.as_str(), f.path.as_str())) {
            continue;
        }
        if f.dynamic && cost != Cost::Static {
            let path = path_of(&f.path);
            let d = dynamics.entry(path).or_insert_with(|| {
                order.push(path);
                Dynamic {
                    by_query: BTreeMap::new(),
                    first: f,
                }
            });
            d.by_query.entry(query_of(&f.path)).or_insert(f);
        } else {
            statics.push(f);
        }
    }

    let mut done = Materialized {
        dir: dir.to_owned(),
        ..Materialized::default()
    };
    let mut listing = String::from("# logged target\tfile (relative to this directory)\n");
    let mut written: std::collections::HashMap<Vec<Vec<u8>>, String> =
        std::collections::HashMap::new();
    let mut dotfiles = false;
    // A GET's size before a HEAD's (0 bytes) when both were logged.
    statics.sort_by(|a, b| (&a.path, a.method == "HEAD").cmp(&(&b.path, b.method == "HEAD")));
    for f in statics {
        let segs = match segments(&f.path) {
            Ok(s) => s,
            Err(reason) => {
                done.rejected.push(Rejected {
                    target: f.path.clone(),
                    reason,
                });
                continue;
            }
        };
        let rel = String::from_utf8_lossy(&segs.join(&b'/')).into_owned();
        if let Some(other) = written.get(&segs) {
            listing.push_str(&format!("{}\thtdocs/{rel}\t(as {other})\n", f.path));
            continue;
        }
        let path = join(&htdocs, &segs);
        let last = segs.last().map(|s| String::from_utf8_lossy(s).into_owned());
        let html = last.is_some_and(|l| {
            let l = l.to_ascii_lowercase();
            l.ends_with(".html") || l.ends_with(".htm") || !l.contains('.')
        });
        let made = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| write_body(&path, f.bytes, html));
        match made {
            Ok(()) => {
                dotfiles |= segs.iter().any(|s| s.starts_with(b"."));
                done.files += 1;
                done.file_bytes += f.bytes;
                written.insert(segs, f.path.clone());
                listing.push_str(&format!("{}\thtdocs/{rel}\n", f.path));
            }
            Err(e) => done.rejected.push(Rejected {
                target: f.path.clone(),
                reason: e.to_string(),
            }),
        }
    }

    let mut rules = String::new();
    let mut taken = std::collections::HashSet::new();
    for path in order {
        let d = &dynamics[path];
        let decoded = match segments(path).map(|_| percent_encoding::percent_decode_str(path)) {
            Ok(p) => match p.decode_utf8() {
                Ok(s) => s.into_owned(),
                Err(_) => {
                    done.rejected.push(Rejected {
                        target: path.to_owned(),
                        reason: "the decoded path is not UTF-8".into(),
                    });
                    continue;
                }
            },
            Err(reason) => {
                done.rejected.push(Rejected {
                    target: path.to_owned(),
                    reason,
                });
                continue;
            }
        };
        if decoded == SCRIPT_PREFIX || decoded.starts_with(&format!("{SCRIPT_PREFIX}/")) {
            done.rejected.push(Rejected {
                target: path.to_owned(),
                reason: format!("{SCRIPT_PREFIX} is where the scripts are routed"),
            });
            continue;
        }
        let name = script_name(&decoded, &mut taken);
        let file = cgi_bin.join(&name);
        fs::write(&file, script(&decoded, d, cost, &name)).map_err(io(&file))?;
        fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).map_err(io(&file))?;
        done.scripts += 1;
        done.dynamic_targets += d.by_query.len() as u64;
        for f in d.by_query.values() {
            listing.push_str(&format!("{}\tcgi-bin/{name}\n", f.path));
        }
        rules.push_str(&format!(
            "\n[[site.rules]]\nregex = {}\nrewrite = {}\nflow = \"break\"\n",
            toml_str(&regex_literal(&decoded)),
            toml_str(&format!("{SCRIPT_PREFIX}/{name}"))
        ));
    }
    for r in &done.rejected {
        listing.push_str(&format!("{}\t# refused: {}\n", r.target, r.reason));
    }

    if cost == Cost::Cpu {
        let p = state.join("corpus.txt");
        fs::write(&p, corpus(CORPUS_BYTES)).map_err(io(&p))?;
    }

    let mut routes = String::from(
        "# Written by `tern bench model --materialize`: the model's files under\n\
         # htdocs, and each dynamic path rewritten to its CGI script.\n\
         # tern serve --config routes.toml --listen 127.0.0.1:8080\n\n\
         [[site]]\nroot = \"htdocs\"\n",
    );
    if dotfiles {
        routes.push_str("dotfiles = true\n");
    }
    routes.push_str(&format!(
        "\n[[site.route]]\nprefix = {}\nhandler = \"cgi\"\ndir = \"cgi-bin\"\n",
        toml_str(SCRIPT_PREFIX)
    ));
    routes.push_str(&rules);
    let p = dir.join("routes.toml");
    fs::write(&p, routes).map_err(io(&p))?;
    let p = dir.join("paths.txt");
    fs::write(&p, listing).map_err(io(&p))?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_decoded_and_traversal_refused() {
        let s = |t: &str| {
            segments(t).map(|v| {
                v.iter()
                    .map(|s| String::from_utf8_lossy(s).into_owned())
                    .collect::<Vec<_>>()
                    .join("/")
            })
        };
        assert_eq!(s("/a/b%20c.html?x=1").unwrap(), "a/b c.html");
        assert_eq!(s("/docs/").unwrap(), "docs/index.html");
        assert_eq!(s("/").unwrap(), "index.html");
        assert_eq!(s("/a/./b//c").unwrap(), "a/b/c");
        assert!(s("/a/../../etc/passwd").is_err());
        assert!(s("/a/%2e%2e/%2E%2E/x").is_err());
        assert!(s("/a%2f..%2fb").is_err());
        assert!(s("/a%00b").is_err());
        assert!(s("a/b").is_err());
    }

    #[test]
    fn script_names_are_safe_and_unique() {
        let mut taken = std::collections::HashSet::new();
        assert_eq!(
            script_name("/cgi-bin/search.pl", &mut taken),
            "cgi-bin_search.pl"
        );
        assert_eq!(
            script_name("/cgi-bin/search.pl", &mut taken),
            "cgi-bin_search.pl-2"
        );
        assert_eq!(script_name("/.hidden", &mut taken), "hidden");
        assert_eq!(script_name("/nph-x", &mut taken), "s-nph-x");
        assert_eq!(script_name("/", &mut taken), "index");
        assert_eq!(script_name("/a b/ü", &mut taken), "a_b__");
    }

    #[test]
    fn regex_literals_match_only_themselves() {
        assert_eq!(regex_literal("/a.php"), r"^/a\.php$");
        assert_eq!(regex_literal("/x(1)+[y]"), r"^/x\(1\)\+\[y\]$");
    }
}
