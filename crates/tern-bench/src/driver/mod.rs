//! The driver: runs a [`Plan`] and returns its [`RunResult`].
//!
//! One driver for every kind of run. Each OS thread (`-t`) runs a
//! current-thread tokio runtime with its share of the connections, its own
//! [`Schedule`] and its own [`Recorder`]; a connection task loops: take the
//! next ticket, wait until it is due, send, record. Closed or open loop,
//! count or duration, HTTP/1.1 or HTTP/2 are values (the schedule, the stop,
//! the connection kind), never separate functions.
//!
//! The calling thread meanwhile marks the measured window for CPU accounting
//! (warm-up end; duration end or last measured response) and then merges the
//! threads' recorders.

pub(crate) mod h1;
mod h2;
pub(crate) mod stream;
pub(crate) mod wire;

use std::cell::{Cell, RefCell};
use std::net::ToSocketAddrs;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::cpu::CpuSource;
use crate::plan::{Load, Plan, Protocol, Reuse, Stop};
use crate::recorder::{Clock, Recorder, ResultContext};
use crate::result::{CpuFigures, RunResult, TlsSession};
use crate::sample::Outcome;
use crate::schedule::{Pacing, Phase, Schedule, Ticket};
use crate::Error;

use h1::{H1Client, H1Request};
use h2::{H2Pool, H2Request};
use stream::Endpoint;

/// Stops a run early (Ctrl-C): no new requests, in-flight ones abandoned,
/// the result covers what finished. Cheap to clone; shareable across threads.
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<StopInner>);

#[derive(Debug, Default)]
struct StopInner {
    flag: AtomicBool,
    notify: Notify,
}

impl StopHandle {
    /// A handle that has not been stopped.
    pub fn new() -> StopHandle {
        StopHandle::default()
    }

    /// Asks every run using this handle to stop.
    pub fn stop(&self) {
        self.0.flag.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// True once [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }

    /// Resolves once stopped.
    ///
    /// # Cancel safety
    /// Cancel safe: it holds no state besides a registration.
    pub async fn stopped(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// Live counters the driver adds to as requests finish, for whoever shows
/// progress (the driver knows nothing of displays).
#[derive(Debug, Default)]
pub struct ProgressCounters {
    /// Requests finished (any phase, responses and failures).
    pub done: AtomicU64,
    /// Of which failed.
    pub errors: AtomicU64,
}

/// What a run reports to, and can be stopped by, besides its plan.
#[derive(Debug, Clone, Default)]
pub struct RunControl {
    /// Early stop.
    pub stop: StopHandle,
    /// Counters to bump, when something displays progress.
    pub progress: Option<Arc<ProgressCounters>>,
    /// The server whose CPU time to measure over the window.
    pub server_cpu: Option<CpuSource>,
}

/// Runs the plan to its end (or until stopped) and returns its figures.
/// Failures of the server are in the result; an `Err` means the tool itself
/// could not run (no threads, an unreadable CPU source).
pub fn run(plan: &Plan, control: &RunControl) -> Result<RunResult, Error> {
    if let Some(src) = &control.server_cpu {
        src.read()?;
    }
    let shared = Arc::new(Shared::new(plan, control)?);
    let tls_session = check_tls(plan, &shared)?;
    let shares = thread_shares(plan);
    let clock = Clock::now();
    let (events_tx, events) = mpsc::channel();
    let gate = Arc::new(StartGate::default());
    let mut threads = Vec::with_capacity(shares.len());
    let mut spawn_error = None;
    for share in shares {
        let thread_shared = Arc::clone(&shared);
        let gate = Arc::clone(&gate);
        let events_tx = events_tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("tern-bench-{}", share.index))
            .spawn(move || thread_main(share, &thread_shared, &gate, &events_tx));
        match spawned {
            Ok(handle) => threads.push(handle),
            Err(e) => {
                spawn_error = Some(Error::system("starting a load thread", e));
                // Stops only this run's threads, not the caller's handle.
                shared.abandon.stop();
                break;
            }
        }
    }
    drop(events_tx);
    let start = Instant::now();
    gate.open(start);

    let settings = plan.settings();
    let window_start = start + settings.windows.warmup;
    let client_cpu = CpuSource::Process(std::process::id());
    wait(&events, Until::Time(window_start));
    let cpu_before = (
        control.server_cpu.as_ref().map(CpuSource::read),
        client_cpu.read(),
    );
    match settings.stop {
        Stop::Duration(d) => wait(&events, Until::Time(window_start + d)),
        Stop::Count(_) => wait(&events, Until::MeasuredDone),
    }
    let cpu_after = (
        control.server_cpu.as_ref().map(CpuSource::read),
        client_cpu.read(),
    );

    // Every thread's timeline starts at the measured window's nominal
    // start, so they add interval by interval.
    let mut recorder = Recorder::with_origin(plan.targets().len(), window_start);
    let mut thread_error = None;
    for t in threads {
        match t.join() {
            Ok(Ok(r)) => recorder.merge(r),
            Ok(Err(e)) => thread_error = Some(e),
            Err(_) => {
                thread_error = Some(Error::system(
                    "a load thread",
                    std::io::Error::other("panicked"),
                ))
            }
        }
    }
    if let Some(e) = spawn_error.or(thread_error) {
        return Err(e);
    }

    let mut result = recorder.into_result(ResultContext {
        clock,
        targets: plan.targets().to_vec(),
        plan: plan.to_string(),
        concurrency: plan.concurrency(),
        keepalive: settings.reuse == Reuse::KeepAlive
            || matches!(settings.protocol, Protocol::Http2 { .. }),
        request_body_bytes: settings.request.body.len() as u64,
    });
    result.tls = tls_session;
    let responses = result.counts.responses;
    let handshakes = result.counts.handshakes.total();
    let figures = |before: Result<Duration, Error>,
                   after: Result<Duration, Error>,
                   source: &CpuSource| {
        match (before, after) {
            (Ok(a), Ok(b)) => {
                let seconds = b.saturating_sub(a).as_secs_f64();
                Ok(CpuFigures::new(
                    source.describe(),
                    seconds,
                    responses,
                    handshakes,
                ))
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        }
    };
    if let (Some(src), Some(before), Some(after)) = (&control.server_cpu, cpu_before.0, cpu_after.0)
    {
        match figures(before, after, src) {
            Ok(f) => result.server_cpu = Some(f),
            Err(e) => result.notes.push(format!("server CPU not measured: {e}")),
        }
    }
    result.client_cpu = figures(cpu_before.1, cpu_after.1, &client_cpu).ok();
    if control.stop.is_stopped() {
        result
            .notes
            .push("stopped early; figures cover the requests finished until then".to_owned());
    }
    Ok(result)
}

/// What the calling thread waits for.
#[derive(Debug, Clone, Copy)]
enum Until {
    Time(Instant),
    MeasuredDone,
}

/// Messages from load threads to the calling thread.
#[derive(Debug, Clone, Copy)]
enum Event {
    /// The last measured request (count stop) has finished.
    MeasuredDone,
}

/// Waits for `until`, or until every load thread has ended.
fn wait(events: &mpsc::Receiver<Event>, until: Until) {
    loop {
        let got = match until {
            Until::Time(t) => {
                let now = Instant::now();
                if now >= t {
                    return;
                }
                events.recv_timeout(t - now)
            }
            Until::MeasuredDone => events.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match (got, until) {
            (Ok(Event::MeasuredDone), Until::MeasuredDone) => return,
            (Ok(Event::MeasuredDone), Until::Time(_)) => {}
            (Err(RecvTimeoutError::Timeout), _) => {}
            (Err(RecvTimeoutError::Disconnected), _) => return,
        }
    }
}

/// Holds the load threads until the start instant is known, so that all
/// schedules share it.
#[derive(Debug, Default)]
struct StartGate {
    start: Mutex<Option<Instant>>,
    opened: Condvar,
}

impl StartGate {
    fn open(&self, at: Instant) {
        *self.start.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
        self.opened.notify_all();
    }

    fn wait(&self) -> Instant {
        let mut guard = self.start.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(at) = *guard {
                return at;
            }
            guard = self.opened.wait(guard).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// One thread's part of the plan.
#[derive(Debug, Clone, Copy)]
struct ThreadShare {
    index: u32,
    connections: u32,
    stop: Stop,
    pacing: Pacing,
}

/// Splits connections, requests and rate over the threads: connections as
/// evenly as possible, count and rate in proportion to connections.
///
/// A shard (`--shard I/N`) is one of N machines sharing the run: the split
/// is made over the N × threads threads of all of them, and this machine
/// takes its threads' shares. So the shards' requests add up to exactly
/// the run's count, their rates to its rate, and constant arrivals
/// interleave across machines as they do across threads.
fn thread_shares(plan: &Plan) -> Vec<ThreadShare> {
    let s = plan.settings();
    let threads = s.threads;
    let shard = s.shard;
    let all = threads * shard.count;
    let total = s.load.connections();
    // Connections of the global threads before `g`.
    let conns_before = |g: u32| g * (total / all) + g.min(total % all);
    let mut out = Vec::with_capacity(threads as usize);
    for i in 0..threads {
        let g = shard.index * threads + i;
        let connections = conns_before(g + 1) - conns_before(g);
        let stop = match s.stop {
            // Equal connections: request k of the run is thread k mod
            // `all`'s (constant arrivals interleave that way), so the
            // shares are round-robin and the run ends at its n-th slot.
            Stop::Count(n) if total.is_multiple_of(all) => Stop::Count(share(n, all, g)),
            Stop::Count(n) => {
                // Cumulative rounding, in proportion to connections: the
                // shares add up to exactly n.
                let upto = |g: u32| {
                    (u128::from(n) * u128::from(conns_before(g)) / u128::from(total)) as u64
                };
                Stop::Count(upto(g + 1) - upto(g))
            }
            d @ Stop::Duration(_) => d,
        };
        let pacing = match s.load {
            Load::Closed { .. } => Pacing::Closed,
            Load::Open { rate, arrival, .. } => Pacing::Open {
                rate: rate * f64::from(connections) / f64::from(total),
                arrival,
                offset: Duration::from_secs_f64(f64::from(g) / rate),
            },
        };
        out.push(ThreadShare {
            index: g,
            connections,
            stop,
            pacing,
        });
    }
    out
}

/// Part `g` of `n` split round-robin over `parts` (the first `n % parts`
/// parts take one more): how a count is split over threads and shards
/// whose arrivals interleave.
pub(crate) fn share(n: u64, parts: u32, g: u32) -> u64 {
    n / u64::from(parts) + u64::from(u64::from(g) < n % u64::from(parts))
}

/// Everything the load threads read, built once.
#[derive(Debug)]
struct Shared {
    plan: Plan,
    endpoints: Vec<Endpoint>,
    h1_requests: Vec<H1Request>,
    h2_requests: Vec<H2Request>,
    stop: StopHandle,
    /// Stops this run only (when it cannot be completed).
    abandon: StopHandle,
    progress: Option<Arc<ProgressCounters>>,
    /// The run stops after a count of measured requests (`measured_left`
    /// counts them down; unused for a duration).
    count_stop: bool,
    measured_left: AtomicU64,
}

impl Shared {
    fn new(plan: &Plan, control: &RunControl) -> Result<Shared, Error> {
        let s = plan.settings();
        let tls_config = if plan.uses_tls() {
            let alpn: &[u8] = match s.protocol {
                Protocol::Http1 => b"http/1.1",
                Protocol::Http2 { .. } => b"h2",
            };
            Some(crate::tls::client_config(&s.tls, alpn)?)
        } else {
            None
        };
        let mut keys: Vec<(String, u16, bool)> = Vec::new();
        let mut endpoints = Vec::new();
        let mut h1_requests = Vec::new();
        let mut h2_requests = Vec::new();
        for t in plan.targets() {
            let key = (t.host.clone(), t.port, t.tls);
            let endpoint = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    // Resolved once; an unresolvable host makes every request
                    // a connect error, not a crash.
                    let addr = (t.host.as_str(), t.port)
                        .to_socket_addrs()
                        .ok()
                        .and_then(|mut a| a.next());
                    let tls = match &tls_config {
                        Some(config) if t.tls => {
                            Some((Arc::clone(config), crate::tls::server_name(&t.host)?))
                        }
                        _ => None,
                    };
                    keys.push(key);
                    endpoints.push(Endpoint { addr, tls });
                    keys.len() - 1
                }
            };
            h1_requests.push(H1Request {
                endpoint,
                bytes: wire::request_bytes(t, &s.request, s.reuse),
                head: s.request.method == http::Method::HEAD,
            });
            h2_requests.push(H2Request::new(endpoint, t, &s.request));
        }
        // This machine's share of a count (all of it unless sharded).
        let measured_left = match s.stop {
            Stop::Count(_) => thread_shares(plan)
                .iter()
                .map(|t| match t.stop {
                    Stop::Count(n) => n,
                    Stop::Duration(_) => 0,
                })
                .sum(),
            Stop::Duration(_) => u64::MAX,
        };
        Ok(Shared {
            plan: plan.clone(),
            endpoints,
            h1_requests,
            h2_requests,
            stop: control.stop.clone(),
            abandon: StopHandle::new(),
            progress: control.progress.clone(),
            count_stop: matches!(s.stop, Stop::Count(_)),
            measured_left: AtomicU64::new(measured_left),
        })
    }
}

/// Before any load, one handshake with each `https://` endpoint, so that a
/// certificate the run would never accept is an error naming the URL and
/// the reason, not a report of nothing but connect errors. Endpoints that
/// do not answer at all are left to the run (they are connect errors). The
/// probe does not resume, nor leave a session the run could resume. What
/// the first endpoint negotiated is the run's [`TlsSession`].
fn check_tls(plan: &Plan, shared: &Shared) -> Result<Option<TlsSession>, Error> {
    let mut seen = Vec::new();
    let mut probes: Vec<(String, Endpoint)> = Vec::new();
    for (t, req) in plan.targets().iter().zip(&shared.h1_requests) {
        let e = &shared.endpoints[req.endpoint];
        let Some((config, name)) = &e.tls else {
            continue;
        };
        if seen.contains(&req.endpoint) {
            continue;
        }
        seen.push(req.endpoint);
        let mut fresh = (**config).clone();
        fresh.resumption = rustls::client::Resumption::disabled();
        probes.push((
            t.url.clone(),
            Endpoint {
                addr: e.addr,
                tls: Some((Arc::new(fresh), name.clone())),
            },
        ));
    }
    if probes.is_empty() {
        return Ok(None);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::system("starting the TLS check", e))?;
    rt.block_on(async {
        let mut first = None;
        for (url, endpoint) in &probes {
            let probe = tokio::time::timeout(plan.settings().timeout, stream::open(endpoint));
            match probe.await {
                Ok(Err(e @ stream::OpenError::Handshake(_))) => {
                    return Err(Error::Tls {
                        url: url.clone(),
                        reason: e.to_string(),
                    })
                }
                Ok(Ok(opened)) if first.is_none() => {
                    first = opened.stream.tls_session().map(|mut s| {
                        // SNI is sent for DNS names only, as ab does.
                        s.server_name = match endpoint.tls.as_ref().map(|(_, n)| n) {
                            Some(rustls::pki_types::ServerName::DnsName(d)) => {
                                Some(d.as_ref().to_owned())
                            }
                            _ => None,
                        };
                        s
                    });
                }
                _ => {}
            }
        }
        Ok(first)
    })
}

/// The state the connection tasks of one thread share.
#[derive(Debug)]
struct ThreadState {
    shared: Arc<Shared>,
    schedule: RefCell<Schedule>,
    recorder: RefCell<Recorder>,
    events: mpsc::Sender<Event>,
    timeout: Duration,
    /// Finished requests (and failures) not yet added to the progress counters.
    unreported: Cell<(u64, u64)>,
}

impl ThreadState {
    /// Records an outcome and tells whoever waits for it.
    fn finish(&self, ticket: &Ticket, outcome: Outcome) {
        let failed = matches!(outcome, Outcome::Failed { .. });
        self.recorder.borrow_mut().record(ticket, outcome);
        if self.shared.progress.is_some() {
            // Shared counters are bumped in batches: an atomic add per
            // request would bounce a cache line between threads.
            let (done, errors) = self.unreported.get();
            let (done, errors) = (done + 1, errors + u64::from(failed));
            self.unreported.set((done, errors));
            if done >= PROGRESS_BATCH {
                self.report_progress();
            }
        }
        if self.shared.count_stop
            && ticket.phase == Phase::Measured
            && self.shared.measured_left.fetch_sub(1, Ordering::AcqRel) == 1
        {
            let _ = self.events.send(Event::MeasuredDone);
        }
    }

    /// Adds the locally counted requests to the shared progress counters.
    fn report_progress(&self) {
        let (done, errors) = self.unreported.replace((0, 0));
        if let Some(p) = &self.shared.progress {
            p.done.fetch_add(done, Ordering::Relaxed);
            p.errors.fetch_add(errors, Ordering::Relaxed);
        }
    }
}

/// Requests counted locally before the shared progress counters are bumped.
const PROGRESS_BATCH: u64 = 32;

fn thread_main(
    share: ThreadShare,
    shared: &Arc<Shared>,
    gate: &StartGate,
    events: &mpsc::Sender<Event>,
) -> Result<Recorder, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let start = gate.wait();
    let runtime = runtime.map_err(|e| Error::system("starting a load thread's runtime", e))?;
    let s = shared.plan.settings();
    let weights: Vec<u32> = shared.plan.targets().iter().map(|t| t.weight).collect();
    let state = Rc::new(ThreadState {
        shared: Arc::clone(shared),
        schedule: RefCell::new(Schedule::new(
            start,
            share.pacing,
            share.stop,
            s.windows,
            &weights,
            s.seed.wrapping_add(u64::from(share.index)),
        )),
        recorder: RefCell::new(Recorder::with_origin(
            weights.len(),
            start + s.windows.warmup,
        )),
        events: events.clone(),
        timeout: s.timeout,
        unreported: Cell::new((0, 0)),
    });
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, run_connections(share, Rc::clone(&state)));
    state.report_progress();
    Ok(state.recorder.replace(Recorder::new(0)))
}

/// Starts the connection tasks of one thread and waits for them (or for a stop).
async fn run_connections(share: ThreadShare, state: Rc<ThreadState>) {
    let s = state.shared.plan.settings();
    let endpoints = state.shared.endpoints.len();
    let mut tasks = tokio::task::JoinSet::new();
    match s.protocol {
        Protocol::Http1 => {
            for _ in 0..share.connections {
                let conn = Connection::H1(H1Client::new(endpoints, s.reuse));
                tasks.spawn_local(connection_task(Rc::clone(&state), conn));
            }
        }
        Protocol::Http2 { streams } => {
            for _ in 0..share.connections {
                let pool = H2Pool::new(endpoints);
                for _ in 0..streams {
                    let conn = Connection::H2(pool.clone());
                    tasks.spawn_local(connection_task(Rc::clone(&state), conn));
                }
            }
        }
    }
    let (stop, abandon) = (state.shared.stop.clone(), state.shared.abandon.clone());
    loop {
        tokio::select! {
            joined = tasks.join_next() => if joined.is_none() { break },
            () = stop.stopped() => {
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                break;
            }
            () = abandon.stopped() => {
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// How a task talks to the server.
#[derive(Debug)]
enum Connection {
    H1(H1Client),
    H2(H2Pool),
}

/// The one loop every connection task runs.
async fn connection_task(state: Rc<ThreadState>, mut conn: Connection) {
    loop {
        let ticket = state.schedule.borrow_mut().next(Instant::now());
        let Some(ticket) = ticket else { return };
        wait_until_due(ticket.intended).await;
        let deadline = tokio::time::Instant::from_std(ticket.intended + state.timeout);
        let capture = state.recorder.borrow().wants_server_header();
        let shared = &state.shared;
        let outcome = match &mut conn {
            Connection::H1(client) => {
                let req = &shared.h1_requests[ticket.target];
                let endpoint = &shared.endpoints[req.endpoint];
                client.exchange(req, endpoint, deadline, capture).await
            }
            Connection::H2(pool) => {
                let req = &shared.h2_requests[ticket.target];
                let endpoint = &shared.endpoints[req.endpoint];
                pool.exchange(req, endpoint, deadline, capture).await
            }
        };
        state.finish(&ticket, outcome);
        // Failures that touch no socket (an unresolvable host) complete
        // without ever waiting; yield now and then so that the other tasks
        // and the stop watcher still run.
        tokio::task::coop::consume_budget().await;
    }
}

/// tokio's timers tick in whole milliseconds and fire late by up to one tick.
/// Waking one tick early and sending at once keeps sends within a tick of
/// their due time, early rather than late; the recorder times an early
/// request from when it was actually sent.
const TIMER_TICK: Duration = Duration::from_millis(1);

async fn wait_until_due(due: Instant) {
    let now = Instant::now();
    if due > now + TIMER_TICK {
        tokio::time::sleep_until(tokio::time::Instant::from_std(due - TIMER_TICK)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Arrival, PlanSettings, Target};

    #[test]
    fn shares_add_up() {
        let mut settings = PlanSettings {
            load: Load::Open {
                rate: 1000.0,
                arrival: Arrival::Constant,
                connections: 7,
            },
            stop: Stop::Count(1001),
            threads: 3,
            ..PlanSettings::default()
        };
        let plan = Plan::new(
            vec![Target::parse("http://127.0.0.1:1/").unwrap()],
            settings.clone(),
        )
        .unwrap();
        let shares = thread_shares(&plan);
        assert_eq!(
            shares.iter().map(|s| s.connections).collect::<Vec<_>>(),
            [3, 2, 2]
        );
        let counts: u64 = shares
            .iter()
            .map(|s| match s.stop {
                Stop::Count(n) => n,
                _ => 0,
            })
            .sum();
        assert_eq!(counts, 1001);
        let rate: f64 = shares
            .iter()
            .map(|s| match s.pacing {
                Pacing::Open { rate, .. } => rate,
                Pacing::Closed => 0.0,
            })
            .sum();
        assert!((rate - 1000.0).abs() < 1e-9);
        settings.stop = Stop::Count(2);
        let plan = Plan::new(plan.targets().to_vec(), settings).unwrap();
        let counts: Vec<u64> = thread_shares(&plan)
            .iter()
            .map(|s| match s.stop {
                Stop::Count(n) => n,
                _ => 0,
            })
            .collect();
        assert_eq!(counts.iter().sum::<u64>(), 2);
    }
}
