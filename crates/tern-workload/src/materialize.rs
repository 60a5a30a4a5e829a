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
//! refused (and reported) when it holds a `..` segment, a NUL, a control
//! character or anything else not printable, or is not UTF-8; files are
//! only ever created inside a directory this function created or found
//! empty, so nothing is written outside DIR. Nothing from the model goes
//! into a generated script except through `perl_str` (a double-quoted
//! Perl string of printable ASCII, every other byte and every sigil,
//! quote and backslash written `\x{..}`), into routes.toml except through
//! TOML's own string writer, or into paths.txt except escaped (tabs and
//! line ends cannot split an entry).
//!
//! Sizes: a file larger than [`MAX_FILE_BYTES`] is refused, and a script's
//! response is cut to it. Files are not synced one by one (that made a
//! large root slow to write): this is a benchmark fixture, and a crash
//! while writing it means writing it again.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::model::{FileRef, Model};
use crate::target::{is_html_name, path_of, query_of};
use crate::Error;

/// The URL prefix the dynamic paths are rewritten to, where the CGI route
/// finds the scripts.
pub const SCRIPT_PREFIX: &str = "/_tern_cgi";

/// The largest file (and CGI response) written: 1 GiB. A larger logged
/// size is refused (reported in [`Materialized::rejected`]); a script's
/// response is cut to it.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Bytes of the text corpus the `cpu` scripts search.
pub const CORPUS_BYTES: usize = 4 << 20;

/// The [`Cost::Counter`] work in Perl: adds one to the number in the file
/// named by `$counter_path` (created if missing) under an exclusive
/// `flock`. `tern suite`'s webstone scripts run the same lines.
pub const PERL_COUNTER: &str = r#"use Fcntl qw(:flock O_RDWR O_CREAT);
sysopen(my $fh, $counter_path, O_RDWR | O_CREAT, 0644) or die "counter $counter_path: $!";
flock($fh, LOCK_EX) or die "flock: $!";
my $line = <$fh>;
my $count = (defined $line && $line =~ /^(\d+)/) ? $1 : 0;
seek($fh, 0, 0);
truncate($fh, 0);
print $fh $count + 1, "\n";
close($fh) or die "counter: $!";
"#;

/// The [`Cost::Cpu`] work in Perl: reads the corpus ([`corpus`]) named by
/// `$corpus_path` and counts the words starting with three stems, by
/// regular expression. `tern suite`'s webstone scripts run the same lines.
pub const PERL_SEARCH: &str = r#"open(my $corpus, '<', $corpus_path) or die "corpus $corpus_path: $!";
my $text = do { local $/; <$corpus> };
close($corpus);
my $hits = 0;
for my $word (qw(nebula quartz harbor)) {
    $hits++ while $text =~ /\b\Q$word\E\w*/g;
}
"#;

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
            writeln!(f, "  refused {}: {}", field(&r.target), field(&r.reason))?;
        }
        writeln!(
            f,
            "serve it: tern serve --config {} --listen 127.0.0.1:8080",
            self.dir.join("routes.toml").display()
        )
    }
}

/// Whether `c` may stand in a materialized path: no control character
/// (C0, DEL, C1), and none of the invisible characters that change how
/// text reads (line and paragraph separators, zero-width and direction
/// marks, the byte order mark).
fn printable(c: char) -> bool {
    !(c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
        ))
}

/// The decoded path of a target as safe relative segments (`.` and empty
/// segments dropped); a path ending in `/` gets `index.html`. Refused: no
/// leading `/`, a NUL, a `..` segment, a decoded path that is not UTF-8
/// or holds a control character or anything else not printable.
fn segments(target: &str) -> Result<Vec<Vec<u8>>, String> {
    let path = path_of(target);
    if !path.starts_with('/') {
        return Err("does not start with /".into());
    }
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    if decoded.contains(&0) {
        return Err("a NUL in the path".into());
    }
    let Ok(text) = std::str::from_utf8(&decoded) else {
        return Err("the decoded path is not UTF-8 (not printable)".into());
    };
    if let Some(c) = text.chars().find(|&c| !printable(c)) {
        return Err(format!(
            "a control character or one not printable ({}) in the decoded path",
            c.escape_unicode()
        ));
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
    debug_assert!(bytes <= MAX_FILE_BYTES);
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
    // Not synced: see the module docs.
    f.flush()
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

/// `s` as a Perl double-quoted string literal: letters, digits and
/// `/ . - _ , : = +` as they are, every other byte (sigils `$ @ %`,
/// quotes, backslashes, braces, control characters, each byte of a
/// non-ASCII character) as `\x{HH}`. The literal is printable ASCII, has
/// nothing to interpolate and no line end, and means exactly the bytes of
/// `s` (Perl without `use utf8` reads a byte string).
fn perl_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"/.-_,:=+ ".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{{{b:02X}}}"));
        }
    }
    out.push('"');
    out
}

/// `s` for one field of paths.txt or a line of the report: backslashes,
/// tabs, line ends and other control characters escaped (`\t`, `\n`,
/// `\u{..}`), so that an entry stays one line of tab-separated fields.
fn field(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' || !printable(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
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
    // The path only as a Perl string (never raw in a comment, where a
    // line end would end the comment).
    s.push_str(&format!(
        "# Written by `tern bench model --materialize`: a body of the size\n# logged for each query, at most {MAX_FILE_BYTES} bytes.\nuse strict;\nuse warnings;\nmy $logged_path = {};\n",
        perl_str(path)
    ));
    s.push_str("my %bytes = (\n");
    for (q, f) in &d.by_query {
        s.push_str(&format!(
            "    {} => {},\n",
            perl_str(q),
            f.bytes.min(MAX_FILE_BYTES)
        ));
    }
    s.push_str(");\n");
    s.push_str(&format!(
        "my $query = defined $ENV{{QUERY_STRING}} ? $ENV{{QUERY_STRING}} : '';\nmy $n = exists $bytes{{$query}} ? $bytes{{$query}} : {};\n$n = {MAX_FILE_BYTES} if $n > {MAX_FILE_BYTES};\n",
        d.first.bytes.min(MAX_FILE_BYTES)
    ));
    match cost {
        // Static never reaches here: its dynamic paths are files.
        Cost::Trivial | Cost::Static => {}
        Cost::Counter => {
            s.push_str(&format!(
                "use FindBin;\nmy $counter_path = \"$FindBin::Bin/../state/\" . {};\n",
                perl_str(&format!("{name}.count"))
            ));
            s.push_str(PERL_COUNTER);
        }
        Cost::Cpu => {
            s.push_str("use FindBin;\nmy $corpus_path = \"$FindBin::Bin/../state/corpus.txt\";\n");
            s.push_str(PERL_SEARCH);
        }
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

/// Deterministic text for the `cpu` scripts to search: `bytes` bytes of
/// words from a fixed list, in lines of about 72 characters.
pub fn corpus(bytes: usize) -> Vec<u8> {
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
        if f.bytes > MAX_FILE_BYTES {
            done.rejected.push(Rejected {
                target: f.path.clone(),
                reason: format!(
                    "{} bytes, larger than the {MAX_FILE_BYTES} bytes a file may have",
                    f.bytes
                ),
            });
            continue;
        }
        let rel = field(&String::from_utf8_lossy(&segs.join(&b'/')));
        if let Some(other) = written.get(&segs) {
            listing.push_str(&format!(
                "{}\thtdocs/{rel}\t(as {})\n",
                field(&f.path),
                field(other)
            ));
            continue;
        }
        let path = join(&htdocs, &segs);
        let html = segs
            .last()
            .is_some_and(|l| is_html_name(&String::from_utf8_lossy(l)));
        let made = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| write_body(&path, f.bytes, html));
        match made {
            Ok(()) => {
                dotfiles |= segs.iter().any(|s| s.starts_with(b"."));
                done.files = done.files.saturating_add(1);
                done.file_bytes = done.file_bytes.saturating_add(f.bytes);
                written.insert(segs, f.path.clone());
                listing.push_str(&format!("{}\thtdocs/{rel}\n", field(&f.path)));
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
        done.scripts = done.scripts.saturating_add(1);
        done.dynamic_targets = done.dynamic_targets.saturating_add(d.by_query.len() as u64);
        for f in d.by_query.values() {
            listing.push_str(&format!("{}\tcgi-bin/{name}\n", field(&f.path)));
        }
        rules.push_str(&format!(
            "\n[[site.rules]]\nregex = {}\nrewrite = {}\nflow = \"break\"\n",
            toml_str(&regex_literal(&decoded)),
            toml_str(&format!("{SCRIPT_PREFIX}/{name}"))
        ));
    }
    for r in &done.rejected {
        listing.push_str(&format!(
            "{}\t# refused: {}\n",
            field(&r.target),
            field(&r.reason)
        ));
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
    fn strings_for_perl_toml_and_the_listing_are_escaped() {
        let nasty = "a'b\"c$d@e%f\\g\nh\ri\tj{k}\u{7f}ü#";
        let p = perl_str(nasty);
        assert!(p.starts_with('"') && p.ends_with('"'), "{p}");
        let inner = &p[1..p.len() - 1];
        // Only letters, digits, the safe punctuation and \x{HH} escapes.
        let mut rest = inner;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix("\\x{") {
                assert!(r.len() >= 3 && r.as_bytes()[2] == b'}', "{p}");
                assert!(r[..2].bytes().all(|b| b.is_ascii_hexdigit()), "{p}");
                rest = &r[3..];
            } else {
                let c = rest.as_bytes()[0];
                assert!(
                    c.is_ascii_alphanumeric() || b"/.-_,:=+ ".contains(&c),
                    "{p}"
                );
                rest = &rest[1..];
            }
        }
        let t: toml::Table = toml::from_str(&format!("k = {}", toml_str(nasty))).unwrap();
        assert_eq!(t["k"].as_str(), Some(nasty));
        let f = field(nasty);
        assert!(!f.contains(['\n', '\r', '\t', '\u{7f}']), "{f}");
    }

    #[test]
    fn regex_literals_match_only_themselves() {
        assert_eq!(regex_literal("/a.php"), r"^/a\.php$");
        assert_eq!(regex_literal("/x(1)+[y]"), r"^/x\(1\)\+\[y\]$");
    }
}
