//! A small schema walker over a parsed TOML document. It reads typed values
//! out of tables, remembers which keys were read so that unknown keys are
//! reported, and collects every error (with its line and dotted key) instead
//! of stopping at the first, so `tern check` can print them all.
//!
//! Why not serde: serde stops at the first error and loses spans of nested
//! values; the walker keeps both and stays short.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml_edit::{Item, TableLike, Value};

use crate::error::ConfigError;
use crate::units;

/// Where a value sits in the source, when known.
pub(crate) type Span = Option<Range<usize>>;

/// How a configuration is loaded.
#[derive(Clone, Copy, Debug)]
pub struct LoadOptions {
    /// Whether paths (document roots, ...) are checked against the file
    /// system. Default: true.
    pub check_paths: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions { check_paths: true }
    }
}

/// Collects errors against one source text, and knows what every field
/// reader needs besides its table: where relative paths start, and
/// whether paths are checked.
pub(crate) struct Walker<'s> {
    src: &'s str,
    file: PathBuf,
    /// The directory relative paths are relative to: the file's own.
    base: PathBuf,
    opts: LoadOptions,
    pub(crate) errors: Vec<ConfigError>,
}

/// A table being read: its dotted path and the keys read so far.
pub(crate) struct Table<'a> {
    inner: &'a dyn TableLike,
    path: String,
    span: Option<Range<usize>>,
    read: Vec<String>,
}

impl<'a> Table<'a> {
    pub(crate) fn new(inner: &'a dyn TableLike, path: String, span: Option<Range<usize>>) -> Self {
        Table {
            inner,
            path,
            span,
            read: Vec::new(),
        }
    }

    /// The dotted path of `key` in this table.
    pub(crate) fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(crate) fn span(&self) -> Option<Range<usize>> {
        self.span.clone()
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// Whether the table has `key` at all (read or not).
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.inner.get(key).is_some()
    }

    /// Whether `key` holds a table (`[a.key]` or an inline table).
    pub(crate) fn is_table(&self, key: &str) -> bool {
        self.inner.get(key).is_some_and(|i| i.is_table_like())
    }

    /// Marks `key` as read without reading it (its error was already
    /// reported another way).
    pub(crate) fn skip(&mut self, key: &str) {
        self.read.push(key.to_owned());
    }

    /// Whether `key` holds a string.
    pub(crate) fn is_str(&self, key: &str) -> bool {
        self.inner.get(key).is_some_and(|i| i.as_str().is_some())
    }

    /// Where `key`'s value is, for an error found after reading it.
    pub(crate) fn span_of(&self, key: &str) -> Option<Range<usize>> {
        let (k, item) = self.inner.get_key_value(key)?;
        item.span().or_else(|| k.span())
    }

    pub(crate) fn take(&mut self, key: &str) -> Option<(&'a Item, Option<Range<usize>>)> {
        let (k, item) = self.inner.get_key_value(key)?;
        self.read.push(key.to_owned());
        let span = item.span().or_else(|| k.span());
        Some((item, span))
    }
}

impl<'s> Walker<'s> {
    pub(crate) fn new(src: &'s str, file: &Path, opts: LoadOptions) -> Self {
        let base = file
            .parent()
            .map(Path::to_path_buf)
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        Walker {
            src,
            file: file.to_owned(),
            base,
            opts,
            errors: Vec::new(),
        }
    }

    pub(crate) fn file(&self) -> &Path {
        &self.file
    }

    /// `path` from the configuration, relative to the file's directory
    /// unless absolute.
    pub(crate) fn relative(&self, path: impl AsRef<Path>) -> PathBuf {
        self.base.join(path)
    }

    /// Whether paths are checked against the file system.
    pub(crate) fn check_paths(&self) -> bool {
        self.opts.check_paths
    }

    /// `file:line: path`: where something is configured, for an error
    /// found after the walk (when its files are read).
    pub(crate) fn origin(&self, span: Option<Range<usize>>, path: &str) -> String {
        format!("{}:{}: {path}", self.file.display(), self.line_of(span))
    }

    pub(crate) fn line_of(&self, span: Option<Range<usize>>) -> usize {
        match span {
            Some(r) => {
                let end = r.start.min(self.src.len());
                self.src.as_bytes()[..end]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count()
                    + 1
            }
            None => 0,
        }
    }

    /// Records an error at `span` for `key`.
    pub(crate) fn error(
        &mut self,
        span: Option<Range<usize>>,
        key: String,
        message: impl Into<String>,
    ) {
        let line = self.line_of(span);
        self.errors.push(ConfigError {
            file: self.file.clone(),
            line,
            key,
            message: message.into(),
        });
    }

    /// Reports every key of `t` that was not read.
    pub(crate) fn finish(&mut self, t: Table<'_>) {
        for (key, _) in t.inner.iter() {
            if !t.read.iter().any(|r| r == key) {
                let span = t.inner.get_key_value(key).and_then(|(k, _)| k.span());
                self.error(span, t.key_path(key), "unknown key");
            }
        }
    }

    fn value<'a>(
        &mut self,
        t: &mut Table<'a>,
        key: &str,
        what: &str,
    ) -> Option<(&'a Value, Option<Range<usize>>)> {
        let (item, span) = t.take(key)?;
        match item.as_value() {
            Some(v) => Some((v, span)),
            None => {
                self.error(span, t.key_path(key), format!("expected {what}"));
                None
            }
        }
    }

    pub(crate) fn string(&mut self, t: &mut Table<'_>, key: &str) -> Option<String> {
        let (v, span) = self.value(t, key, "a string")?;
        match v.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.error(span, t.key_path(key), "expected a string");
                None
            }
        }
    }

    /// A string with its span, for validation by the caller.
    pub(crate) fn string_spanned(
        &mut self,
        t: &mut Table<'_>,
        key: &str,
    ) -> Option<(String, Option<Range<usize>>)> {
        let (v, span) = self.value(t, key, "a string")?;
        match v.as_str() {
            Some(s) => Some((s.to_owned(), span)),
            None => {
                self.error(span, t.key_path(key), "expected a string");
                None
            }
        }
    }

    pub(crate) fn bool(&mut self, t: &mut Table<'_>, key: &str) -> Option<bool> {
        let (v, span) = self.value(t, key, "true or false")?;
        match v.as_bool() {
            Some(b) => Some(b),
            None => {
                self.error(span, t.key_path(key), "expected true or false");
                None
            }
        }
    }

    /// A positive integer no larger than `max`.
    pub(crate) fn count(&mut self, t: &mut Table<'_>, key: &str, max: u64) -> Option<u64> {
        self.integer_in(t, key, 1, max)
    }

    /// An integer from `min` to `max`.
    pub(crate) fn integer_in(
        &mut self,
        t: &mut Table<'_>,
        key: &str,
        min: u64,
        max: u64,
    ) -> Option<u64> {
        let (v, span) = self.value(t, key, "a number")?;
        match v.as_integer() {
            Some(n) if n >= 0 && (n as u64) >= min && (n as u64) <= max => Some(n as u64),
            Some(n) => {
                self.error(
                    span,
                    t.key_path(key),
                    format!("{n} is out of range ({min} to {max})"),
                );
                None
            }
            None => {
                self.error(span, t.key_path(key), "expected a whole number");
                None
            }
        }
    }

    /// A size: an integer of bytes or a string such as `"16k"`; at least `min`.
    pub(crate) fn size(&mut self, t: &mut Table<'_>, key: &str, min: u64) -> Option<u64> {
        let (v, span) = self.value(t, key, "a size")?;
        let parsed = match (v.as_integer(), v.as_str()) {
            (Some(n), _) if n >= 0 => Ok(n as u64),
            (_, Some(s)) => units::parse_size(s),
            _ => Err("expected a size such as 4096 or \"16k\"".to_owned()),
        };
        match parsed {
            Ok(n) if n >= min => Some(n),
            Ok(n) => {
                self.error(
                    span,
                    t.key_path(key),
                    format!("{n} is too small (at least {min})"),
                );
                None
            }
            Err(e) => {
                self.error(span, t.key_path(key), e);
                None
            }
        }
    }

    /// A duration: an integer of seconds or a string such as `"250ms"`;
    /// zero is refused when `nonzero`.
    pub(crate) fn duration(
        &mut self,
        t: &mut Table<'_>,
        key: &str,
        nonzero: bool,
    ) -> Option<Duration> {
        let (v, span) = self.value(t, key, "a duration")?;
        let parsed = match (v.as_integer(), v.as_str()) {
            (Some(n), _) if n >= 0 => Ok(Duration::from_secs(n as u64)),
            (_, Some(s)) => units::parse_duration(s),
            _ => Err("expected a duration such as 10 or \"250ms\"".to_owned()),
        };
        match parsed {
            Ok(d) if nonzero && d.is_zero() => {
                self.error(span, t.key_path(key), "must be more than zero");
                None
            }
            Ok(d) => Some(d),
            Err(e) => {
                self.error(span, t.key_path(key), e);
                None
            }
        }
    }

    /// An array of strings.
    pub(crate) fn strings(&mut self, t: &mut Table<'_>, key: &str) -> Option<Vec<String>> {
        self.strings_spanned(t, key)
            .map(|v| v.into_iter().map(|(s, _)| s).collect())
    }

    /// One string or an array of them, each with its span.
    pub(crate) fn one_or_more_strings(
        &mut self,
        t: &mut Table<'_>,
        key: &str,
    ) -> Option<Vec<(String, Span)>> {
        let (item, span) = t.take(key)?;
        if let Some(s) = item.as_str() {
            return Some(vec![(s.to_owned(), span)]);
        }
        t.read.pop();
        self.strings_spanned(t, key)
    }

    /// An array of strings, each with its span.
    pub(crate) fn strings_spanned(
        &mut self,
        t: &mut Table<'_>,
        key: &str,
    ) -> Option<Vec<(String, Span)>> {
        let (v, span) = self.value(t, key, "a list of strings")?;
        let Some(arr) = v.as_array() else {
            self.error(span, t.key_path(key), "expected a list of strings");
            return None;
        };
        let mut out = Vec::with_capacity(arr.len());
        for (i, item) in arr.iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push((s.to_owned(), item.span())),
                None => {
                    self.error(
                        item.span(),
                        format!("{}[{i}]", t.key_path(key)),
                        "expected a string",
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    /// A table of string values (`mime = { md = "text/markdown" }`), in
    /// file order, with each value's span.
    pub(crate) fn string_map(
        &mut self,
        t: &mut Table<'_>,
        key: &str,
    ) -> Option<Vec<(String, String, Span)>> {
        let (item, span) = t.take(key)?;
        let Some(tl) = item.as_table_like() else {
            self.error(span, t.key_path(key), "expected a table of strings");
            return None;
        };
        let mut out = Vec::new();
        for (k, v) in tl.iter() {
            let vspan = v.span();
            match v.as_str() {
                Some(s) => out.push((k.to_owned(), s.to_owned(), vspan)),
                None => self.error(
                    vspan,
                    format!("{}.{k}", t.key_path(key)),
                    "expected a string",
                ),
            }
        }
        Some(out)
    }

    /// A sub-table (`[limits]` or an inline table).
    pub(crate) fn table<'a>(&mut self, t: &mut Table<'a>, key: &str) -> Option<Table<'a>> {
        let path = t.key_path(key);
        let (item, span) = t.take(key)?;
        match item.as_table_like() {
            Some(tl) => Some(Table::new(tl, path, span)),
            None => {
                self.error(span, path, "expected a table");
                None
            }
        }
    }

    /// An array of tables (`[[site]]` or a list of inline tables).
    pub(crate) fn tables<'a>(&mut self, t: &mut Table<'a>, key: &str) -> Vec<Table<'a>> {
        let base = t.key_path(key);
        let Some((item, span)) = t.take(key) else {
            return Vec::new();
        };
        if let Some(aot) = item.as_array_of_tables() {
            return aot
                .iter()
                .enumerate()
                .map(|(i, tb)| Table::new(tb, format!("{base}[{i}]"), tb.span()))
                .collect();
        }
        if let Some(arr) = item.as_array() {
            let mut out = Vec::new();
            for (i, v) in arr.iter().enumerate() {
                match v.as_inline_table() {
                    Some(it) => out.push(Table::new(it, format!("{base}[{i}]"), it.span())),
                    None => self.error(v.span(), format!("{base}[{i}]"), "expected a table"),
                }
            }
            return out;
        }
        self.error(span, base, "expected a list of tables ([[...]])");
        Vec::new()
    }
}
