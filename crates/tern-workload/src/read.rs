//! Reading access logs into a model: files opened plain or gunzipped (told
//! by their magic bytes, not their names), each file's format given or
//! detected, the files' lines merged by time (rotated files one after
//! another, overlapping ones, two servers' say, interleaved), malformed
//! lines counted and the first few named by `FILE:LINE`.
//!
//! Limits: a line longer than 64 KiB is malformed (skipped without being
//! held in memory), as is a target longer than 8 KiB, one not starting
//! with `/`, or a method that is no HTTP token; a target's whitespace and
//! control characters are percent-encoded (a replay puts it on a request
//! line). A line more than 24 hours from the time its file had reached is
//! skipped and counted as out of range, unless the next line confirms the
//! jump. A gzip file cut short is read up to the cut, and a note says so.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use flate2::bufread::MultiGzDecoder;
use tern_accesslog::{parse, AccessRecord, LogFormat};

use crate::assemble::{self, Origin};
use crate::extract::{micros, Cut, Extractor, SECOND};
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
/// The longest line read: a longer one is malformed, skipped without
/// being held in memory.
const MAX_LINE: usize = 64 * 1024;
/// The longest request target kept (a longer one is malformed).
const MAX_TARGET: usize = 8 * 1024;
/// A line further than this from the time its file's lines reached is
/// out of range (unless the next line confirms the jump).
const OUT_OF_RANGE: i64 = 24 * 3600 * SECOND;

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
    /// The files in the order opened (by their first request).
    pub files: Vec<LogFile>,
    /// The first malformed lines (at most 5; `model.source.malformed`
    /// counts them all).
    pub malformed: Vec<Malformed>,
    /// Most users held open at once: the extractor's memory, which stays
    /// bounded by the users active within the session gap.
    pub peak_users: usize,
    /// Pages closed early because they reached 1,000 files or 15 minutes
    /// (a client that never paused a page gap).
    pub forced_page_closes: u64,
    /// Sessions closed early because they reached 1,000 pages or 24 hours.
    pub forced_session_closes: u64,
    /// Lines skipped because their time was more than 24 hours away from
    /// the time the file's lines had reached (a clock gone wrong).
    pub out_of_range: u64,
    /// What else a person should know about the reading (a truncated gzip
    /// file, say), one sentence each.
    pub notes: Vec<String>,
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

/// A raw line.
enum Raw {
    /// A line (without its line end; may be blank).
    Text(String),
    /// A line longer than [`MAX_LINE`], skipped unread.
    TooLong,
}

/// A log's lines, each at most [`MAX_LINE`] bytes held in memory.
struct Lines {
    path: PathBuf,
    r: Box<dyn BufRead>,
    buf: Vec<u8>,
    /// Lines read (numbered from 1).
    n: u64,
    done: bool,
    /// The file ended inside a gzip member: what came before is kept.
    truncated: bool,
}

impl Lines {
    fn open(path: &Path) -> Result<Lines, Error> {
        Ok(Lines {
            path: path.to_owned(),
            r: open(path)?,
            buf: Vec::new(),
            n: 0,
            done: false,
            truncated: false,
        })
    }

    /// The next line and its number; `None` at the end (or where a gzip
    /// file was cut short, which sets `truncated`: a line cut there is
    /// dropped).
    fn next(&mut self) -> Result<Option<(u64, Raw)>, Error> {
        if self.done {
            return Ok(None);
        }
        self.buf.clear();
        let (mut any, mut too_long) = (false, false);
        loop {
            let chunk = match self.r.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.done = true;
                    self.truncated = true;
                    return Ok(None);
                }
                Err(e) => return Err(Error::io(&self.path, e)),
            };
            if chunk.is_empty() {
                self.done = true;
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (take, end) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (chunk.len(), false),
            };
            if !too_long {
                if self.buf.len() + take > MAX_LINE + 2 {
                    too_long = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(&chunk[..take]);
                }
            }
            self.r.consume(take);
            if end {
                break;
            }
        }
        self.n += 1;
        if too_long {
            return Ok(Some((self.n, Raw::TooLong)));
        }
        let line = String::from_utf8_lossy(&self.buf);
        let line = line.trim_end_matches(['\n', '\r']);
        if line.len() > MAX_LINE {
            return Ok(Some((self.n, Raw::TooLong)));
        }
        Ok(Some((self.n, Raw::Text(line.to_owned()))))
    }

    /// The note for a file cut short, if it was.
    fn note(&self) -> Option<String> {
        self.truncated.then(|| {
            format!(
                "{}: truncated (the gzip data ends early); its first {} lines were read",
                self.path.display(),
                self.n
            )
        })
    }
}

/// The time of the first of `times` (a file's first lines, in order) that
/// the next one confirms (within [`OUT_OF_RANGE`]); the first when none
/// does.
fn confirmed_first(times: &[i64]) -> Option<i64> {
    times
        .windows(2)
        .find(|w| w[0].abs_diff(w[1]) <= OUT_OF_RANGE.unsigned_abs())
        .map(|w| w[0])
        .or(times.first().copied())
}

/// A file's format and first request time, from its first lines; `None`
/// for a file without a non-empty line.
fn probe(path: &Path, given: Option<LogFormat>) -> Result<Option<(LogFormat, i64)>, Error> {
    let mut lines = Vec::new();
    let mut r = Lines::open(path)?;
    while lines.len() < DETECT_LINES {
        match r.next()? {
            None => break,
            Some((_, Raw::Text(line))) if !line.trim().is_empty() => lines.push(line),
            Some(_) => {}
        }
    }
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
        let times: Vec<i64> = lines
            .iter()
            .filter_map(|line| parse(format, line).ok())
            .map(|rec| micros(rec.time))
            .collect();
        if let Some(t) = confirmed_first(&times) {
            if best.is_none_or(|(n, _, _)| times.len() > n) {
                best = Some((times.len(), format, t));
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

/// Whether `method` is an HTTP token (it goes on a request line).
fn is_token(method: &str) -> bool {
    !method.is_empty()
        && method
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A parsed record a replay can send: the target starts with `/`, its
/// whitespace and control characters percent-encoded (a request line
/// holds it verbatim), at most [`MAX_TARGET`] bytes; the method a token.
fn admit(mut rec: AccessRecord) -> Result<AccessRecord, String> {
    if !is_token(&rec.method) {
        return Err(format!("the method {:?} is not an HTTP token", rec.method));
    }
    if !rec.target.starts_with('/') {
        return Err("the target does not start with /".into());
    }
    if rec
        .target
        .chars()
        .any(|c| c.is_ascii_control() || c.is_whitespace())
    {
        let mut out = String::with_capacity(rec.target.len() + 16);
        for c in rec.target.chars() {
            if c.is_ascii_control() || c.is_whitespace() {
                let mut b = [0; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    out.push_str(&format!("%{byte:02X}"));
                }
            } else {
                out.push(c);
            }
        }
        rec.target = out;
    }
    if rec.target.len() > MAX_TARGET {
        return Err(format!(
            "the target is longer than {} KiB",
            MAX_TARGET / 1024
        ));
    }
    Ok(rec)
}

/// A parsed line on its way to the extractor.
struct Parsed {
    time: i64,
    rec: AccessRecord,
    /// The remote as logged when it is no address (Common, Combined).
    remote: Option<String>,
}

/// What reading has found so far across files.
#[derive(Default)]
struct Tally {
    shown: Vec<Malformed>,
    out_of_range: u64,
    notes: Vec<String>,
}

/// One file being read: its lines parsed, checked ([`admit`]) and kept in
/// range: a line more than [`OUT_OF_RANGE`] from the time the file's lines
/// had reached is held back, and kept only if the next line confirms it
/// (a jump in a log that really has a gap), skipped and counted otherwise
/// (a clock gone wrong for one line: a year 9999 would stretch the span
/// and pin the time frontier).
struct Stream {
    index: usize,
    name: String,
    format: LogFormat,
    lines: Lines,
    /// Non-empty lines, and those that did not parse.
    count: u64,
    malformed: u64,
    frontier: Option<i64>,
    held: Option<Parsed>,
    ready: std::collections::VecDeque<Parsed>,
}

impl Stream {
    fn open(index: usize, path: &Path, format: LogFormat) -> Result<Stream, Error> {
        Ok(Stream {
            index,
            name: path.display().to_string(),
            format,
            lines: Lines::open(path)?,
            count: 0,
            malformed: 0,
            frontier: None,
            held: None,
            ready: std::collections::VecDeque::new(),
        })
    }

    fn accept(&mut self, p: Parsed) {
        self.frontier = Some(self.frontier.map_or(p.time, |f| f.max(p.time)));
        self.ready.push_back(p);
    }

    fn near(a: i64, b: i64) -> bool {
        a.abs_diff(b) <= OUT_OF_RANGE.unsigned_abs()
    }

    fn range(&mut self, p: Parsed, tally: &mut Tally) {
        if let Some(h) = self.held.take() {
            if Self::near(h.time, p.time) {
                // Confirmed: the log jumps.
                self.frontier = Some(h.time);
                self.accept(h);
                self.accept(p);
                return;
            }
            tally.out_of_range += 1;
        }
        match self.frontier {
            Some(f) if Self::near(f, p.time) => self.accept(p),
            _ => self.held = Some(p),
        }
    }

    /// The next record, in file order; `None` at the end.
    fn next(&mut self, tally: &mut Tally) -> Result<Option<Parsed>, Error> {
        loop {
            if let Some(p) = self.ready.pop_front() {
                return Ok(Some(p));
            }
            let Some((n, raw)) = self.lines.next()? else {
                if let Some(h) = self.held.take() {
                    if self.frontier.is_none() {
                        self.accept(h);
                        continue;
                    }
                    tally.out_of_range += 1;
                }
                return Ok(None);
            };
            let parsed = match raw {
                Raw::Text(line) if line.trim().is_empty() => continue,
                Raw::Text(line) => parse(self.format, &line)
                    .map_err(|e| e.to_string())
                    .and_then(admit)
                    .map(|rec| {
                        let remote = match (rec.remote, self.format) {
                            (None, LogFormat::Json) | (Some(_), _) => None,
                            (None, _) => line.split(' ').next().map(str::to_owned),
                        };
                        Parsed {
                            time: micros(rec.time),
                            rec,
                            remote,
                        }
                    }),
                Raw::TooLong => Err(format!(
                    "longer than {} KiB (skipped unread)",
                    MAX_LINE / 1024
                )),
            };
            self.count += 1;
            match parsed {
                Ok(p) => self.range(p, tally),
                Err(error) => {
                    self.malformed += 1;
                    if tally.shown.len() < MALFORMED_SHOWN {
                        tally.shown.push(Malformed {
                            file: self.name.clone(),
                            line: n,
                            error,
                        });
                    }
                }
            }
        }
    }
}

/// Reads the logs (in any order, overlapping or not: their lines are
/// merged by time) and draws a model from them.
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
    // A k-way merge by time: each file is read in its order, the file
    // whose next line is the oldest goes next, so overlapping logs (two
    // servers', say) interleave as they happened. A file is opened only
    // when the merge reaches its first request, so rotated files are read
    // one after another, not all at once.
    let mut tally = Tally::default();
    let mut read_order = Vec::new();
    let mut waiting = order.iter().peekable();
    // The files being read, each with its next line; a file read to its
    // end is let go (its reader's buffers with it).
    let mut streams: Vec<Option<(Stream, Parsed)>> = Vec::new();
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
    let done = |s: Stream, files: &mut [LogFile], tally: &mut Tally| {
        files[s.index].lines = s.count;
        files[s.index].malformed = s.malformed;
        tally.notes.extend(s.lines.note());
    };
    loop {
        while let Some(&&(first, i)) = waiting.peek() {
            if heap.peek().is_some_and(|Reverse((t, _))| *t < first) {
                break;
            }
            waiting.next();
            let Some(format) = files[i].format else {
                continue;
            };
            read_order.push(i);
            let mut s = Stream::open(i, &files[i].path, format)?;
            match s.next(&mut tally)? {
                Some(p) => {
                    heap.push(Reverse((p.time, streams.len())));
                    streams.push(Some((s, p)));
                }
                None => done(s, &mut files, &mut tally),
            }
        }
        let Some(Reverse((_, k))) = heap.pop() else {
            break;
        };
        let Some((mut s, p)) = streams[k].take() else {
            continue;
        };
        x.push_from(p.rec, p.remote.as_deref());
        match s.next(&mut tally)? {
            Some(p) => {
                heap.push(Reverse((p.time, k)));
                streams[k] = Some((s, p));
            }
            None => done(s, &mut files, &mut tally),
        }
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
    let (forced_page_closes, forced_session_closes) =
        (extracted.forced_pages, extracted.forced_sessions);
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
        malformed: tally.shown,
        peak_users,
        forced_page_closes,
        forced_session_closes,
        out_of_range: tally.out_of_range,
        notes: tally.notes,
    })
}
