//! Session replay: a [`Model`] drawn from access logs, played against a
//! server the way its users loaded it (WebStone-SS).
//!
//! Sessions arrive open-loop at the model's rate (or one given), each from
//! its intended start whatever the server or the tool is doing. A session
//! is a user: it walks its pages (a session class drawn by weight, or a
//! walk of the transitions), and for each page fetches the front file,
//! then the rest in parallel over up to six keep-alive connections of its
//! own, as a browser does; then it thinks, and moves on. The headline
//! figure is **page latency**: from the page's intended start to the last
//! byte of its last file. A page's intended start is the session's start
//! for its first page, and the previous page's end plus the think time for
//! the others, so a stalled server shows up in the latency of every page it
//! delays, not as a slower tool.
//!
//! Each request is recorded as `tern bench` records one (from its intended
//! start: the page's, for the front; the front's end, for the rest), so the
//! per-request figures and reports are the usual ones.
//!
//! A replay always ends by itself: sessions stop arriving after the session
//! count or at the end of the duration; at the end of the duration, the
//! sessions under way finish the page they are on and start no other;
//! requests still out after their timeout count as timeouts.

mod args;
mod report;

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::ToSocketAddrs;
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tern_workload::{Model, END, START};

use crate::cpu::CpuSource;
use crate::driver::h1::{H1Client, H1Request};
use crate::driver::stream::Endpoint;
use crate::driver::wire::request_bytes;
use crate::driver::StopHandle;
use crate::histogram::{new_histogram, serde_v2};
use crate::plan::{Arrival, RequestSpec, Reuse, Shard, Target};
use crate::recorder::{Clock, Intervals, Recorder, ResultContext};
use crate::result::{CpuFigures, RunResult, Timeline};
use crate::sample::Outcome;
use crate::schedule::{Phase, SplitMix64, Ticket};
use crate::tls::TlsSettings;
use crate::Error;

pub(crate) use args::main;
pub use args::{ReplayArgs, SessionArrival, WalkArg};
pub use report::render;

/// The format tag of a replay's JSON result.
pub const FORMAT: &str = "tern-replay/1";

/// A connection's read buffer (see [`H1Client::with_buffer`]).
const CONNECTION_BUFFER: usize = 16 * 1024;

/// Sessions under way at most; more arrivals are counted as dropped.
pub const MAX_SESSIONS_IN_FLIGHT: usize = 100_000;

/// The longest think time slept (a day): a replay ends at its duration
/// anyway, and a model edited by hand may hold any number.
const MAX_THINK: f64 = 86_400.0;

/// Session rates accepted: a gap between arrivals of a microsecond to
/// about eleven days.
const RATES: std::ops::RangeInclusive<f64> = 0.000_001..=1_000_000.0;

/// `seconds` as a think time: NaN and negatives are none, and it is at
/// most [`MAX_THINK`].
fn think_time(seconds: f64) -> Duration {
    if seconds.is_nan() {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(seconds.clamp(0.0, MAX_THINK))
}

/// How a session chooses its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Walk {
    /// A session class of the model, drawn by its count: the logged
    /// sequences, replayed as they were.
    Sessions,
    /// A walk of the model's transitions from `start` to `end` (WESSBAS's
    /// Markov form): sequences the log never held, in its proportions.
    Transitions,
}

/// What a replay needs besides the model and the base URL.
#[derive(Debug, Clone)]
pub struct ReplaySettings {
    /// Sessions started per second.
    pub sessions_per_second: f64,
    /// Constant or Poisson gaps between session starts.
    pub arrival: Arrival,
    /// Think times are the model's times this (0 = none).
    pub think_scale: f64,
    /// How sessions choose their pages.
    pub walk: Walk,
    /// Sessions stop arriving after this long.
    pub duration: Duration,
    /// ...or after this many sessions, whichever comes first.
    pub sessions: Option<u64>,
    /// Connections per user at most (browsers: 6 per host).
    pub user_connections: usize,
    /// Longest wait for a response, from when its request was due.
    pub timeout: Duration,
    /// Seed of arrivals, session choices and think times.
    pub seed: u64,
    /// TLS, for an `https://` base.
    pub tls: TlsSettings,
    /// This machine's part of a replay shared by several: it starts every
    /// N-th session of the whole (the rate and the count are the whole's).
    pub shard: Shard,
}

/// One page class's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassFigures {
    /// The class id (`p1`).
    pub id: String,
    /// Its front file.
    pub front: String,
    /// Files per page.
    pub files: usize,
    /// Pages fetched whole (every file answered).
    pub pages: u64,
    /// Pages with a failed file or an error status (4xx, 5xx).
    pub errors: u64,
    /// Page latency (µs) from the intended start: of every page, a failed
    /// one at the time it failed.
    #[serde(with = "serde_v2")]
    pub latency: Histogram<u64>,
    /// Page latency (µs) from when the tool actually started the page.
    #[serde(with = "serde_v2")]
    pub latency_uncorrected: Histogram<u64>,
    /// `latency` read out, for readers of the JSON (jq, a script): kept
    /// in step with the histogram by [`ReplayResult::summarize`].
    #[serde(default)]
    pub summary: PageSummary,
}

/// Percentiles of a page class's latency, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PageSummary {
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The slowest page.
    pub max_ms: f64,
}

/// Sessions, by how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCounts {
    /// Sessions started.
    pub started: u64,
    /// Sessions that fetched every page they meant to.
    pub completed: u64,
    /// Sessions ended early by the end of the run (between pages).
    pub cut: u64,
    /// Sessions still in the middle of a page when the run ended and its
    /// grace (twice the timeout) ran out, or when it was stopped.
    #[serde(default)]
    pub abandoned: u64,
    /// Sessions not started because [`MAX_SESSIONS_IN_FLIGHT`] were under
    /// way: the server (or the tool) had fallen that far behind.
    #[serde(default)]
    pub dropped: u64,
}

/// What a replay measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    /// Always [`FORMAT`].
    pub format: String,
    /// The model's file, as given.
    pub model: String,
    /// The base URL.
    pub base: String,
    /// The replay in one line.
    pub plan: String,
    /// Sessions.
    pub sessions: SessionCounts,
    /// Every page (all classes together).
    pub pages: ClassFigures,
    /// Per page class, in the model's order (classes no session reached are
    /// left out).
    pub classes: Vec<ClassFigures>,
    /// Every request, as `tern bench` reports a run.
    pub requests: RunResult,
    /// Pages interval by interval, by when each page ended: pages fetched
    /// whole as responses (their latency from the intended start), pages
    /// with a failed file as errors (empty in older files).
    #[serde(default)]
    pub page_timeline: Timeline,
    /// The shards this result holds (one, unless merged), so that a merge
    /// can refuse a shard given twice.
    #[serde(default)]
    pub shards: Vec<Shard>,
}

impl ClassFigures {
    fn new(id: &str, front: &str, files: usize) -> ClassFigures {
        ClassFigures {
            id: id.to_owned(),
            front: front.to_owned(),
            files,
            pages: 0,
            errors: 0,
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            summary: PageSummary::default(),
        }
    }

    fn summarize(&mut self) {
        let ms = |us: u64| us as f64 / 1000.0;
        let h = &self.latency;
        self.summary = if h.is_empty() {
            PageSummary::default()
        } else {
            PageSummary {
                p50_ms: ms(h.value_at_quantile(0.5)),
                p90_ms: ms(h.value_at_quantile(0.9)),
                p99_ms: ms(h.value_at_quantile(0.99)),
                max_ms: ms(h.max()),
            }
        };
    }

    fn record(&mut self, page: &PageOutcome) {
        if page.failed || page.error_status {
            self.errors += 1;
        }
        if !page.failed {
            self.pages += 1;
        }
        // A page that failed counts at the time it failed (its timeout, at
        // least, when the server did not answer): an overloaded server
        // cannot better its percentiles by failing pages.
        record_us(&mut self.latency, page.done - page.intended);
        record_us(
            &mut self.latency_uncorrected,
            page.done - page.started.max(page.intended),
        );
    }
}

fn record_us(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    h.saturating_record(us.clamp(1, crate::histogram::MAX_US));
}

/// A page class ready to fetch: its files' request bytes, the front first.
#[derive(Debug)]
struct PagePlan {
    /// Index of each file in the run's file table (for the recorder).
    files: Vec<usize>,
}

/// The run's shared, read-only part.
#[derive(Debug)]
struct Run {
    model: Model,
    settings: ReplaySettings,
    endpoint: Endpoint,
    /// Every distinct file's request, by index.
    requests: Vec<H1Request>,
    /// Per page class (in the model's order).
    pages: Vec<PagePlan>,
    /// Page class ids to their index.
    ids: HashMap<String, usize>,
    stop: StopHandle,
    /// Set when sessions must start no new page.
    closing: StopHandle,
}

/// What the tasks add to as pages and requests finish.
#[derive(Debug)]
struct Tally {
    recorder: Recorder,
    /// Pages by when they ended.
    page_intervals: Intervals,
    all: ClassFigures,
    classes: Vec<ClassFigures>,
    sessions: SessionCounts,
}

/// One page as fetched.
#[derive(Debug)]
struct PageOutcome {
    intended: Instant,
    started: Instant,
    done: Instant,
    /// A file got no complete response.
    failed: bool,
    /// A file was answered 4xx or 5xx (a model whose files the target does
    /// not have shows up here).
    error_status: bool,
}

/// Replays `model` (read from `model_path`) against `base` and returns what
/// it measured. `Err` only when the tool cannot run (an unusable base URL,
/// no runtime, an unreadable CPU source).
pub fn replay(
    model: Model,
    model_path: &str,
    base: &Target,
    settings: ReplaySettings,
    stop: &StopHandle,
    server_cpu: Option<&CpuSource>,
) -> Result<ReplayResult, Error> {
    if !RATES.contains(&settings.sessions_per_second) {
        return Err(Error::usage(format!(
            "the session rate must be from {} to {} sessions/s (got {})",
            RATES.start(),
            RATES.end(),
            settings.sessions_per_second
        )));
    }
    model
        .check()
        .map_err(|e| Error::usage(format!("{model_path}: {e}")))?;
    if settings.walk == Walk::Sessions && model.sessions.is_empty() {
        return Err(Error::usage(
            "the model has no session classes: use --walk transitions",
        ));
    }
    if settings.walk == Walk::Transitions && !model.transitions.contains_key(START) {
        return Err(Error::usage(
            "the model has no transitions from \"start\": use --walk sessions",
        ));
    }
    let endpoint = endpoint(base, &settings.tls)?;
    let (requests, pages, targets) = plan_requests(&model, base);
    let arrival = match settings.arrival {
        Arrival::Constant => "constant",
        Arrival::Poisson => "poisson",
    };
    let walk = match settings.walk {
        Walk::Sessions => "logged session classes",
        Walk::Transitions => "walks of the transitions",
    };
    let mut plan = format!(
        "replay of {model_path}: {:.3} sessions/s ({arrival}), {walk}, think time x{}, {} connections per user, for {:?}",
        settings.sessions_per_second, settings.think_scale, settings.user_connections, settings.duration,
    );
    if let Some(n) = settings.sessions {
        plan.push_str(&format!(" or {n} sessions"));
    }
    // The timeline starts with the run.
    let clock = Clock::now();
    let tally = Rc::new(RefCell::new(Tally {
        recorder: Recorder::with_origin(targets.len(), clock.instant()),
        page_intervals: Intervals::starting(clock.instant()),
        all: ClassFigures::new("all", "", 0),
        classes: model
            .pages
            .iter()
            .map(|p| ClassFigures::new(&p.id, &p.files[0].path, p.files.len()))
            .collect(),
        sessions: SessionCounts::default(),
    }));
    let ids = model_ids(&model);
    let shard = settings.shard;
    let run = Rc::new(Run {
        model,
        settings,
        endpoint,
        requests,
        ids,
        pages,
        stop: stop.clone(),
        closing: StopHandle::new(),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::system("starting the replay's runtime", e))?;
    let cpu_start = match server_cpu {
        Some(src) => Some(src.read()?),
        None => None,
    };
    let began = Instant::now();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, arrivals(Rc::clone(&run), Rc::clone(&tally)));
    let window = began.elapsed();
    let cpu = match (server_cpu, cpu_start) {
        (Some(src), Some(start)) => src.read().ok().map(|end| (src.describe(), end - start)),
        _ => None,
    };
    drop(local);
    drop(run);
    let tally = Rc::try_unwrap(tally)
        .expect("every task has ended")
        .into_inner();
    let mut requests = tally.recorder.into_result(ResultContext {
        clock,
        targets,
        plan: plan.clone(),
        concurrency: 0,
        keepalive: true,
        request_body_bytes: 0,
    });
    requests.document_length = None;
    if let Some((source, seconds)) = cpu {
        requests.server_cpu = Some(CpuFigures::new(
            source,
            seconds.as_secs_f64(),
            requests.counts.responses,
            requests.counts.handshakes.total(),
        ));
    }
    if stop.is_stopped() {
        requests.notes.push(format!(
            "stopped early, after {:.1} s",
            window.as_secs_f64()
        ));
    }
    let mut result = ReplayResult {
        format: FORMAT.to_owned(),
        model: model_path.to_owned(),
        base: base.url.clone(),
        plan,
        sessions: tally.sessions,
        pages: tally.all,
        classes: tally
            .classes
            .into_iter()
            .filter(|c| c.pages + c.errors > 0)
            .collect(),
        requests,
        page_timeline: tally.page_intervals.summarize(&clock),
        shards: vec![shard],
    };
    result.summarize();
    Ok(result)
}

/// Each page class id's index.
fn model_ids(model: &Model) -> HashMap<String, usize> {
    model
        .pages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.clone(), i))
        .collect()
}

/// Resolves the base URL's host once and prepares TLS for https.
fn endpoint(base: &Target, tls: &TlsSettings) -> Result<Endpoint, Error> {
    let addr = (base.host.as_str(), base.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next());
    let tls = if base.tls {
        Some((
            crate::tls::client_config(tls, b"http/1.1")?,
            crate::tls::server_name(&base.host)?,
        ))
    } else {
        None
    };
    Ok(Endpoint { addr, tls })
}

/// Every distinct file's request bytes, each page class's files as indices
/// into them, and the targets (for the recorder and the report).
fn plan_requests(model: &Model, base: &Target) -> (Vec<H1Request>, Vec<PagePlan>, Vec<Target>) {
    let mut requests = Vec::new();
    let mut targets: Vec<Target> = Vec::new();
    let mut index = HashMap::new();
    let pages = model
        .pages
        .iter()
        .map(|p| PagePlan {
            files: p
                .files
                .iter()
                .map(|f| {
                    let key = (f.method.clone(), f.path.clone());
                    *index.entry(key).or_insert_with(|| {
                        // A base URL with a path puts the site under it.
                        let path = format!("{}{}", base.path.trim_end_matches('/'), f.path);
                        let target = Target {
                            url: format!("{}://{}{path}", scheme(base), base.authority()),
                            path,
                            ..base.clone()
                        };
                        let method = http::Method::from_bytes(f.method.as_bytes())
                            .unwrap_or(http::Method::GET);
                        let spec = RequestSpec {
                            // A logged POST is replayed with an empty body.
                            method: method.clone(),
                            ..RequestSpec::default()
                        };
                        requests.push(H1Request {
                            endpoint: 0,
                            bytes: request_bytes(&target, &spec, Reuse::KeepAlive),
                            head: method == http::Method::HEAD,
                        });
                        targets.push(target);
                        requests.len() - 1
                    })
                })
                .collect(),
        })
        .collect();
    (requests, pages, targets)
}

fn scheme(t: &Target) -> &'static str {
    if t.tls {
        "https"
    } else {
        "http"
    }
}

/// Starts sessions at their arrival times until the duration or the count
/// is reached, then lets the sessions under way finish their page.
async fn arrivals(run: Rc<Run>, tally: Rc<RefCell<Tally>>) {
    let s = &run.settings;
    let shard = s.shard;
    // This shard's share of the sessions: its rate, its part of the count,
    // and (constant arrivals) its place between the others' starts.
    let rate = s.sessions_per_second / f64::from(shard.count);
    let count = s
        .sessions
        .map(|n| crate::driver::share(n, shard.count, shard.index));
    let mut rng = SplitMix64(s.seed.wrapping_add(u64::from(shard.index)));
    let start = tokio::time::Instant::now();
    let end = start + s.duration;
    let mut at = start + Duration::from_secs_f64(f64::from(shard.index) / s.sessions_per_second);
    let mut started = 0u64;
    let mut sessions = tokio::task::JoinSet::new();
    loop {
        // The wall clock too: a tool that falls behind its arrivals (a rate
        // it cannot keep) still ends on time.
        let over = at >= end || tokio::time::Instant::now() >= end;
        if over || count.is_some_and(|n| started >= n) || run.stop.is_stopped() {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(at) => {}
            _ = run.stop.stopped() => break,
        }
        started += 1;
        let seed = rng.next_u64();
        // Reap finished sessions as we go: memory stays flat however long
        // the run.
        while sessions.try_join_next().is_some() {}
        if sessions.len() >= MAX_SESSIONS_IN_FLIGHT {
            // The server (or the tool) is so far behind that users pile
            // up: count the ones turned away rather than hold them all.
            tally.borrow_mut().sessions.dropped += 1;
        } else {
            tally.borrow_mut().sessions.started += 1;
            sessions.spawn_local(session(
                Rc::clone(&run),
                Rc::clone(&tally),
                at.into_std(),
                seed,
            ));
        }
        let gap = match s.arrival {
            Arrival::Constant => 1.0 / rate,
            Arrival::Poisson => rng.exponential(rate),
        };
        at += Duration::from_secs_f64(gap);
    }
    // Sessions under way go on until the end of the duration (all of it
    // when the count ended the arrivals), then finish their page.
    let until_end = tokio::time::sleep_until(end);
    tokio::pin!(until_end);
    loop {
        tokio::select! {
            next = sessions.join_next() => if next.is_none() { break },
            _ = &mut until_end => break,
            _ = run.stop.stopped() => break,
        }
    }
    run.closing.stop();
    // Pages under way end within twice the timeout (the front's, then the
    // rest's, each from when it was due); a stop abandons them.
    let grace = tokio::time::sleep(2 * s.timeout + Duration::from_secs(1));
    tokio::pin!(grace);
    loop {
        tokio::select! {
            next = sessions.join_next() => if next.is_none() { break },
            _ = &mut grace => break,
            _ = run.stop.stopped() => break,
        }
    }
    let abandoned = sessions.len() as u64;
    sessions.abort_all();
    while sessions.join_next().await.is_some() {}
    tally.borrow_mut().sessions.abandoned += abandoned;
}

/// One user's session from its intended start.
async fn session(run: Rc<Run>, tally: Rc<RefCell<Tally>>, start: Instant, seed: u64) {
    let mut rng = SplitMix64(seed);
    let pages = session_pages(&run.model, &run.ids, run.settings.walk, &mut rng);
    let mut conns: Vec<H1Client> = Vec::new();
    let mut intended = start;
    let mut completed = true;
    for (n, &class) in pages.iter().enumerate() {
        if n > 0 {
            // Thinking; the end of the run cuts the session short.
            tokio::select! {
                biased;
                _ = run.closing.stopped() => {
                    completed = false;
                    break;
                }
                _ = tokio::time::sleep_until(intended.into()) => {}
            }
        }
        let page = fetch_page(&run, &tally, &mut conns, class, intended).await;
        let mut t = tally.borrow_mut();
        t.classes[class].record(&page);
        t.all.record(&page);
        if page.failed {
            t.page_intervals.error(page.done);
        } else {
            t.page_intervals
                .response(page.done, page.done - page.intended, 0);
        }
        drop(t);
        let think = run.model.think_time.sample(rng.uniform()) * run.settings.think_scale;
        intended = page.done + think_time(think);
    }
    let mut t = tally.borrow_mut();
    if completed {
        t.sessions.completed += 1;
    } else {
        t.sessions.cut += 1;
    }
}

/// The page classes (indices) a session visits.
fn session_pages(
    model: &Model,
    ids: &HashMap<String, usize>,
    walk: Walk,
    rng: &mut SplitMix64,
) -> Vec<usize> {
    let index = |id: &str| ids.get(id).copied();
    match walk {
        Walk::Sessions => model
            .pick_session(rng.uniform())
            .map(|s| s.pages.iter().filter_map(|id| index(id)).collect())
            .unwrap_or_default(),
        Walk::Transitions => {
            // A walk ends at `end`; a model whose transitions loop forever
            // is cut at 10 times its longest logged session.
            let limit = (model.session_pages.points.last().copied().unwrap_or(1.0) * 10.0)
                .clamp(1.0, 10_000.0) as usize;
            let mut pages = Vec::new();
            let mut at = START;
            while pages.len() < limit {
                let next = model.next_page(at, rng.uniform());
                if next == END {
                    break;
                }
                let Some(i) = index(next) else { break };
                pages.push(i);
                at = &model.pages[i].id;
            }
            pages
        }
    }
}

/// Fetches one page: the front file on the user's first connection, then
/// the rest spread over up to `user_connections` connections in parallel.
async fn fetch_page(
    run: &Rc<Run>,
    tally: &Rc<RefCell<Tally>>,
    conns: &mut Vec<H1Client>,
    class: usize,
    intended: Instant,
) -> PageOutcome {
    let started = Instant::now();
    let files = &run.pages[class].files;
    let mut page = PageOutcome {
        intended,
        started,
        done: started,
        failed: false,
        error_status: false,
    };
    if conns.is_empty() {
        conns.push(H1Client::with_buffer(
            1,
            Reuse::KeepAlive,
            CONNECTION_BUFFER,
        ));
    }
    let deadline = tokio::time::Instant::from_std(intended) + run.settings.timeout;
    let outcome = conns[0]
        .exchange(&run.requests[files[0]], &run.endpoint, deadline, false)
        .await;
    note(tally, &mut page, files[0], intended, outcome);
    let rest = &files[1..];
    if rest.is_empty() || page.failed {
        return page;
    }
    // The rest are due when the front has arrived, as a browser asks for
    // them once it has read the page.
    let due = page.done;
    let width = run.settings.user_connections.clamp(1, rest.len());
    while conns.len() < width {
        conns.push(H1Client::with_buffer(
            1,
            Reuse::KeepAlive,
            CONNECTION_BUFFER,
        ));
    }
    let deadline = tokio::time::Instant::from_std(due) + run.settings.timeout;
    let mut lanes = tokio::task::JoinSet::new();
    for (lane, mut client) in conns.drain(..width).enumerate() {
        let mine: Vec<usize> = rest.iter().copied().skip(lane).step_by(width).collect();
        let run = Rc::clone(run);
        lanes.spawn_local(async move {
            let mut outcomes = Vec::with_capacity(mine.len());
            for file in mine {
                let o = client
                    .exchange(&run.requests[file], &run.endpoint, deadline, false)
                    .await;
                outcomes.push((file, o));
            }
            (client, outcomes)
        });
    }
    while let Some(joined) = lanes.join_next().await {
        // A lane only ends by finishing (its requests carry their own
        // deadline) or by being aborted with the whole run.
        let Ok((client, outcomes)) = joined else {
            page.failed = true;
            continue;
        };
        conns.push(client);
        for (file, o) in outcomes {
            note(tally, &mut page, file, due, o);
        }
    }
    page
}

/// Records one request's outcome and folds it into its page.
fn note(
    tally: &Rc<RefCell<Tally>>,
    page: &mut PageOutcome,
    file: usize,
    intended: Instant,
    outcome: Outcome,
) {
    match &outcome {
        Outcome::Response(s) => {
            page.done = page.done.max(s.done);
            page.error_status |= s.status >= 400;
        }
        Outcome::Failed { at, .. } => {
            page.done = page.done.max(*at);
            page.failed = true;
        }
    }
    let ticket = Ticket {
        intended,
        phase: Phase::Measured,
        target: file,
    };
    tally.borrow_mut().recorder.record(&ticket, outcome);
}

impl ClassFigures {
    /// Adds `o`'s pages (exact: histograms add bucket by bucket).
    fn add(&mut self, o: &ClassFigures) {
        self.pages += o.pages;
        self.errors += o.errors;
        let _ = self.latency.add(&o.latency);
        let _ = self.latency_uncorrected.add(&o.latency_uncorrected);
    }
}

impl ReplayResult {
    /// Adds the result of another shard of the same replay (`tern bench
    /// merge`): sessions, pages and requests add, and the percentiles are
    /// those of all pages together.
    ///
    /// The results of successive rounds (against restarted servers, say)
    /// merge the same way. Refuses a result given twice (the same shard of
    /// the same window) and shards of different splits.
    pub fn merge(&mut self, o: &ReplayResult) -> Result<(), Error> {
        if o.requests.window == self.requests.window
            && o.shards.iter().any(|s| self.shards.contains(s))
        {
            return Err(Error::usage(
                "the same result is given twice (the same shard of the same run)",
            ));
        }
        if let Some(s) = o
            .shards
            .iter()
            .find(|s| self.shards.iter().any(|m| m.count != s.count))
        {
            return Err(Error::usage(format!(
                "shard {}/{} is not of the same split as the others",
                s.index, s.count
            )));
        }
        self.shards.extend_from_slice(&o.shards);
        self.sessions.started += o.sessions.started;
        self.sessions.completed += o.sessions.completed;
        self.sessions.cut += o.sessions.cut;
        self.sessions.abandoned += o.sessions.abandoned;
        self.sessions.dropped += o.sessions.dropped;
        self.pages.add(&o.pages);
        for c in &o.classes {
            match self.classes.iter_mut().find(|m| m.id == c.id) {
                Some(mine) => mine.add(c),
                None => self.classes.push(c.clone()),
            }
        }
        self.classes.sort_by_key(|c| class_rank(&c.id));
        self.requests.merge(&o.requests);
        self.page_timeline.merge(&o.page_timeline);
        self.summarize();
        Ok(())
    }

    /// Reads the page percentiles out of the histograms into each class's
    /// `summary`.
    pub fn summarize(&mut self) {
        self.pages.summarize();
        for c in &mut self.classes {
            c.summarize();
        }
    }
}

/// `p12` sorts as 12, after `p2`; other ids after every `pN`.
fn class_rank(id: &str) -> (u64, String) {
    let n = id
        .strip_prefix('p')
        .and_then(|n| n.parse().ok())
        .unwrap_or(u64::MAX);
    (n, id.to_owned())
}

/// Merges replay results written by `--save` or `--json` (the shards of
/// one replay); `None` when the first file is not a replay's result (then
/// they are `tern bench` runs, merged as such).
pub fn merge_files(paths: &[std::path::PathBuf]) -> Result<Option<ReplayResult>, Error> {
    let read = |p: &std::path::PathBuf| {
        std::fs::read_to_string(p).map_err(|source| Error::File {
            path: p.clone(),
            source,
        })
    };
    let Some(first) = paths.first() else {
        return Ok(None);
    };
    let text = read(first)?;
    let tag: Option<String> = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("format")?.as_str().map(str::to_owned));
    if tag.as_deref() != Some(FORMAT) {
        return Ok(None);
    }
    let named = |p: &std::path::PathBuf, e: Error| Error::usage(format!("{}: {e}", p.display()));
    let mut merged = parse(&text).map_err(|e| named(first, e))?;
    for p in &paths[1..] {
        let r = parse(&read(p)?).map_err(|e| named(p, e))?;
        merged.merge(&r).map_err(|e| named(p, e))?;
    }
    Ok(Some(merged))
}

/// Reads a replay's JSON result back.
pub fn parse(text: &str) -> Result<ReplayResult, Error> {
    let r: ReplayResult = serde_json::from_str(text)
        .map_err(|e| Error::usage(format!("not a replay result: {e}")))?;
    if r.format != FORMAT {
        return Err(Error::usage(format!(
            "not a replay result: format {:?}, expected {FORMAT:?}",
            r.format
        )));
    }
    Ok(r)
}
