//! Reading access logs into a model: files opened plain or gunzipped (told
//! by their magic bytes, not their names), each file's format given or
//! detected, files read oldest first (by their first request, so rotated
//! files come before the current one), line by line, malformed lines
//! counted and the first few named by `FILE:LINE`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use flate2::bufread::MultiGzDecoder;
use tern_accesslog::{parse, LogFormat};

use crate::assemble::{self, Origin};
use crate::extract::{micros, Cut, Extractor};
use crate::model::{Model, Rules};
use crate::Error;

/// WebStone-SS's page gap: files fetched within this of each other are one
/// page.
pub const PAGE_GAP: Duration = Duration::from_secs(15);
/// WebStone-SS's session gap: pages less than this apart are one session.
pub const SESSION_GAP: Duration = Duration::from_secs(300);

/// Non-empty lines looked at to detect a file's format.
const DETECT_LINES: usize = 20;
/// Malformed lines named in an [`Extraction`] (the rest are counted).
const MALFORMED_SHOWN: usize = 5;

/// How logs are read and cut into users, pages and sessions.
#[derive(Clone, Debug)]
pub struct Options {
    /// A user's requests within this of the previous one are one page.
    /// Default: [`PAGE_GAP`].
    pub page_gap: Duration,
    /// A user's pages starting less than this after the previous page
    /// ended are one session. Default: [`SESSION_GAP`].
    pub session_gap: Duration,
    /// A user is a client address and its user agent, not the address
    /// alone. Default: false.
    pub by_agent: bool,
    /// Apply the three reduction heuristics. Default: true.
    pub reduce: bool,
    /// The log format; `None` detects each file's from its first lines.
    /// Default: `None`.
    pub format: Option<LogFormat>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            page_gap: PAGE_GAP,
            session_gap: SESSION_GAP,
            by_agent: false,
            reduce: true,
            format: None,
        }
    }
}

/// A line that did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// The file, as given.
    pub file: String,
    /// Its line number (from 1).
    pub line: u64,
    /// Why it did not parse.
    pub error: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.error)
    }
}

/// One log file as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFile {
    /// The file, as given.
    pub path: PathBuf,
    /// Its format (given or detected); `None` for a file with no lines.
    pub format: Option<LogFormat>,
    /// Non-empty lines read.
    pub lines: u64,
    /// Lines that did not parse.
    pub malformed: u64,
}

/// A model drawn from logs, and how the reading went.
#[derive(Debug)]
pub struct Extraction {
    /// The model.
    pub model: Model,
    /// The files in the order read (oldest first).
    pub files: Vec<LogFile>,
    /// The first malformed lines (at most 5; `model.source.malformed`
    /// counts them all).
    pub malformed: Vec<Malformed>,
    /// Most users held open at once: the extractor's memory, which stays
    /// bounded by the users active within the session gap.
    pub peak_users: usize,
}

/// The name of a format as a model records it.
pub fn format_name(format: LogFormat) -> &'static str {
    match format {
        LogFormat::Common => "common",
        LogFormat::Combined | LogFormat::CombinedTls => "combined",
        LogFormat::Json => "json",
    }
}

/// Opens a log, gunzipping it when it starts with gzip's magic bytes.
fn open(path: &Path) -> Result<Box<dyn BufRead>, Error> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut r = BufReader::with_capacity(64 * 1024, file);
    let head = r.fill_buf().map_err(|e| Error::io(path, e))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(
            64 * 1024,
            MultiGzDecoder::new(r),
        )))
    } else {
        Ok(Box::new(r))
    }
}

/// Calls `f` with each non-empty line of `path` and its number, until it
/// breaks.
fn each_line(path: &Path, mut f: impl FnMut(u64, &str) -> ControlFlow<()>) -> Result<(), Error> {
    let mut r = open(path)?;
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        let read = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if read == 0 {
            return Ok(());
        }
        n += 1;
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        if f(n, line).is_break() {
            return Ok(());
        }
    }
}

/// A file's format and first request time, from its first lines; `None`
/// for a file without a non-empty line.
fn probe(path: &Path, given: Option<LogFormat>) -> Result<Option<(LogFormat, i64)>, Error> {
    let mut lines = Vec::new();
    each_line(path, |_, line| {
        lines.push(line.to_owned());
        if lines.len() >= DETECT_LINES {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    if lines.is_empty() {
        return Ok(None);
    }
    let candidates = match given {
        Some(f) => vec![f],
        // The richest first: a Combined line also parses as Common.
        None => vec![LogFormat::Json, LogFormat::Combined, LogFormat::Common],
    };
    // The format most of the first lines parse in (the richest on a tie).
    let mut best: Option<(usize, LogFormat, i64)> = None;
    for format in candidates {
        let mut parsed = 0;
        let mut first = None;
        for line in &lines {
            if let Ok(rec) = parse(format, line) {
                parsed += 1;
                first.get_or_insert(micros(rec.time));
            }
        }
        if let Some(t) = first {
            if best.is_none_or(|(n, _, _)| parsed > n) {
                best = Some((parsed, format, t));
            }
        }
    }
    match best {
        Some((_, format, first)) => Ok(Some((format, first))),
        None => Err(Error::NotALog {
            path: path.to_owned(),
            expected: match given {
                Some(f) => format_name(f).to_owned(),
                None => "common, combined, json".to_owned(),
            },
        }),
    }
}

/// Reads the logs (in any order: they are read oldest first) and draws a
/// model from them.
pub fn extract(paths: &[PathBuf], options: &Options) -> Result<Extraction, Error> {
    if options.page_gap.is_zero() || options.session_gap.is_zero() {
        return Err(Error::Options(
            "the page and session gaps must be longer than zero".into(),
        ));
    }
    let mut order = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        let head = probe(path, options.format)?;
        if let Some((_, first)) = head {
            order.push((first, files.len()));
        }
        files.push(LogFile {
            path: path.clone(),
            format: head.map(|(f, _)| f),
            lines: 0,
            malformed: 0,
        });
    }
    // Oldest first; files starting at the same time in the order given.
    order.sort_by_key(|&(first, i)| (first, i));

    let mut x = Extractor::new(Cut::new(
        options.page_gap,
        options.session_gap,
        options.by_agent,
    ));
    let mut shown = Vec::new();
    let mut read_order = Vec::new();
    for &(_, i) in &order {
        let file = &mut files[i];
        let Some(format) = file.format else { continue };
        let name = file.path.display().to_string();
        let (mut lines, mut malformed) = (0u64, 0u64);
        each_line(&file.path, |n, line| {
            lines += 1;
            match parse(format, line) {
                Ok(rec) => x.push(rec),
                Err(e) => {
                    malformed += 1;
                    if shown.len() < MALFORMED_SHOWN {
                        shown.push(Malformed {
                            file: name.clone(),
                            line: n,
                            error: e.to_string(),
                        });
                    }
                }
            }
            ControlFlow::Continue(())
        })?;
        file.lines = lines;
        file.malformed = malformed;
        read_order.push(i);
    }
    let lines: u64 = files.iter().map(|f| f.lines).sum();
    let malformed: u64 = files.iter().map(|f| f.malformed).sum();
    let extracted = x.finish();
    if extracted.requests == 0 {
        return Err(Error::NothingParsed {
            files: paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            lines,
            malformed,
        });
    }
    let mut formats: Vec<&str> = Vec::new();
    for &i in &read_order {
        if let Some(f) = files[i].format {
            if !formats.contains(&format_name(f)) {
                formats.push(format_name(f));
            }
        }
    }
    let peak_users = extracted.peak_users;
    let origin = Origin {
        files: paths.iter().map(|p| p.display().to_string()).collect(),
        format: formats.join(","),
        lines,
        malformed,
    };
    let rules = Rules {
        page_gap: options.page_gap.as_secs_f64(),
        session_gap: options.session_gap.as_secs_f64(),
        by_agent: options.by_agent,
    };
    let model = assemble::model(extracted, origin, rules, options.reduce);
    let files = read_order.iter().map(|&i| files[i].clone()).collect();
    Ok(Extraction {
        model,
        files,
        malformed: shown,
        peak_users,
    })
}
