//! Session replay (`tern bench --model`) against a server that records what
//! it received: the right pages, a page's files in parallel per user, think
//! times honoured, open loop (a paused server shows in page latency), and a
//! run that always ends by itself.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Signal};
use tern_bench::histogram::Stats;
use tern_bench::replay::{replay, ReplayResult, ReplaySettings, Walk};
use tern_bench::{Arrival, Shard, StopHandle, Target};
use tern_workload::{
    Arrivals, FileRef, Model, PageClass, Quantiles, Rules, SessionClass, Source, Summary, END,
    START,
};

use super::open::{PausableServer, TIMING};
use super::server::TestServer;

fn file(path: &str) -> FileRef {
    FileRef {
        path: path.into(),
        method: "GET".into(),
        bytes: 10,
        status: 200,
        dynamic: false,
    }
}

pub(crate) fn page(id: &str, files: &[&str]) -> PageClass {
    PageClass {
        id: id.into(),
        count: 1,
        files: files.iter().map(|f| file(f)).collect(),
    }
}

/// A model of `pages`, whose sessions are `sessions` (page ids), with a
/// fixed think time.
pub(crate) fn model(pages: Vec<PageClass>, sessions: &[&[&str]], think: f64) -> Model {
    Model {
        source: Source {
            files: vec!["test".into()],
            format: "combined".into(),
            lines: 0,
            malformed: 0,
            first: "2026-11-25T00:00:00Z".into(),
            last: "2026-11-25T00:00:00Z".into(),
        },
        rules: Rules {
            page_gap: 15.0,
            session_gap: 300.0,
            by_agent: false,
        },
        summary: Summary {
            users: 0,
            sessions: 0,
            pages: 0,
            requests: 0,
            page_classes_before: 0,
            reductions: vec![],
        },
        pages,
        sessions: sessions
            .iter()
            .map(|s| SessionClass {
                pages: s.iter().map(|p| p.to_string()).collect(),
                count: 1,
            })
            .collect(),
        transitions: BTreeMap::new(),
        think_time: Quantiles {
            points: vec![think, think],
        },
        session_pages: Quantiles {
            points: vec![1.0, 2.0],
        },
        arrivals: Arrivals {
            rate: 1.0,
            by_hour: vec![0.0; 24],
        },
    }
}

fn settings(rate: f64, sessions: Option<u64>, duration: Duration) -> ReplaySettings {
    ReplaySettings {
        sessions_per_second: rate,
        arrival: Arrival::Constant,
        think_scale: 1.0,
        walk: Walk::Sessions,
        duration,
        sessions,
        user_connections: 6,
        timeout: Duration::from_secs(5),
        seed: 1,
        tls: Default::default(),
        shard: Default::default(),
    }
}

fn run(m: Model, base: &str, s: ReplaySettings) -> ReplayResult {
    m.check().unwrap();
    let r = replay(
        m,
        "model.toml",
        &Target::parse(base).unwrap(),
        s,
        &StopHandle::new(),
        None,
    )
    .unwrap();
    // The JSON result carries everything, histograms included.
    let back = tern_bench::replay::parse(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back.pages.pages, r.pages.pages);
    r
}

#[test]
fn pages_are_fetched_front_first_then_in_parallel_and_think_times_are_kept() {
    let server = TestServer::start();
    let front = page(
        "p1",
        &["/a", "/slow/300", "/slow/301", "/slow/302", "/slow/303"],
    );
    let next = page("p2", &["/b"]);
    let m = model(vec![front, next], &[&["p1", "p2"]], 0.4);
    let began = Instant::now();
    let r = run(
        m,
        &server.url("/"),
        settings(20.0, Some(3), Duration::from_secs(10)),
    );
    let took = began.elapsed();

    assert_eq!(
        (r.sessions.started, r.sessions.completed, r.sessions.cut),
        (3, 3, 0)
    );
    assert_eq!((r.pages.pages, r.pages.errors), (6, 0));
    assert_eq!(r.requests.counts.responses, 18);
    for path in [
        "/a",
        "/slow/300",
        "/slow/301",
        "/slow/302",
        "/slow/303",
        "/b",
    ] {
        assert_eq!(server.stats.path(path), 3, "{path}");
    }
    // Three users, each on connections of its own: the four slow files
    // went out in parallel, so a page took one slow answer, not four.
    let p1 = &r.classes[0];
    assert_eq!((p1.id.as_str(), p1.pages), ("p1", 3));
    let p1_max = Stats::of(&p1.latency).max();
    assert!(
        (300_000..900_000).contains(&p1_max),
        "page p1 took {p1_max} µs: the slow files were not fetched in parallel"
    );
    let seen = server.stats.seen.lock().unwrap().clone();
    let mut by_conn: HashMap<u64, Vec<&str>> = HashMap::new();
    for (path, conn, _) in &seen {
        by_conn.entry(*conn).or_default().push(path);
    }
    // The front and the next page on the user's first connection; the
    // slow files spread over four.
    assert_eq!(server.stats.connections(), 12, "{by_conn:?}");
    for paths in by_conn.values() {
        let slow = paths.iter().filter(|p| p.starts_with("/slow/")).count();
        assert!(slow <= 1, "two slow files on one connection: {paths:?}");
    }
    // Each front arrived before its page's other files, and each /b came
    // at least the think time after the last slow file before it.
    let at = |path: &str| -> Vec<Instant> {
        let mut v: Vec<Instant> = seen
            .iter()
            .filter(|(p, _, _)| p == path)
            .map(|(_, _, t)| *t)
            .collect();
        v.sort();
        v
    };
    let fronts = at("/a");
    let slow = at("/slow/300");
    let next = at("/b");
    for i in 0..3 {
        assert!(fronts[i] <= slow[i]);
        let answered = slow[i] + Duration::from_millis(300);
        assert!(
            next[i] >= answered + Duration::from_millis(380),
            "the next page came {:?} after the slow file's answer: think time 0.4 s not kept",
            next[i].saturating_duration_since(answered)
        );
    }
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn transitions_walk_the_markov_chain() {
    let server = TestServer::start();
    let mut m = model(vec![page("p1", &["/a"]), page("p2", &["/b"])], &[], 0.0);
    m.transitions = BTreeMap::from([
        (START.to_owned(), BTreeMap::from([("p1".to_owned(), 1.0)])),
        (
            "p1".to_owned(),
            BTreeMap::from([("p2".to_owned(), 0.5), (END.to_owned(), 0.5)]),
        ),
        ("p2".to_owned(), BTreeMap::from([(END.to_owned(), 1.0)])),
    ]);
    let mut s = settings(200.0, Some(200), Duration::from_secs(10));
    s.walk = Walk::Transitions;
    let r = run(m, &server.url("/"), s);
    assert_eq!(r.sessions.completed, 200);
    assert_eq!(server.stats.path("/a"), 200);
    let b = server.stats.path("/b");
    assert!(
        (60..140).contains(&b),
        "p1 -> p2 taken {b} times of 200 at p = 0.5"
    );
}

#[test]
fn missing_files_count_as_page_errors() {
    let server = TestServer::start();
    let m = model(vec![page("p1", &["/a", "/404"])], &[&["p1"]], 0.0);
    let r = run(
        m,
        &server.url("/"),
        settings(50.0, Some(5), Duration::from_secs(10)),
    );
    assert_eq!((r.pages.pages, r.pages.errors), (5, 5));
    assert_eq!(r.requests.counts.status_class(4), 5);
    let text = tern_bench::replay::render(&r);
    assert!(text.contains("5 with errors"), "{text}");
}

#[test]
fn a_replay_ends_by_itself_cutting_thinking_sessions_short() {
    let server = TestServer::start();
    // Sessions of ten pages with an hour of thinking between them.
    let m = model(vec![page("p1", &["/a"])], &[&["p1"; 10]], 3600.0);
    let began = Instant::now();
    let r = run(
        m,
        &server.url("/"),
        settings(20.0, None, Duration::from_millis(500)),
    );
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(r.sessions.started, 10);
    assert_eq!((r.sessions.completed, r.sessions.cut), (0, 10));
    assert_eq!(r.pages.pages, 10);
}

#[test]
fn a_paused_server_shows_in_page_latency() {
    let _one = TIMING.lock().unwrap_or_else(|p| p.into_inner());
    let server = PausableServer::start();
    let pid = server.pid();
    let pauser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        kill_process(pid, Signal::STOP).unwrap();
        std::thread::sleep(Duration::from_millis(600));
        kill_process(pid, Signal::CONT).unwrap();
    });
    let m = model(vec![page("p1", &["/a", "/b"])], &[&["p1"]], 0.0);
    let r = run(
        m,
        &format!("http://127.0.0.1:{}/", server.port),
        settings(50.0, None, Duration::from_secs(2)),
    );
    pauser.join().unwrap();
    assert_eq!(r.pages.errors, 0);
    assert_eq!(r.sessions.started, 100);
    let s = Stats::of(&r.pages.latency);
    let (p99, max) = (s.percentile(99.0), s.max());
    assert!(
        p99 >= 400_000,
        "page p99 {p99} µs must show the 600 ms pause"
    );
    assert!(
        (500_000..1_500_000).contains(&max),
        "page max {max} µs is about the pause"
    );
    // Sessions due during the pause started on time and waited: about 30
    // of the 100, not only the one or two in flight when it began.
    let waited: u64 = r
        .pages
        .latency
        .iter_recorded()
        .filter(|v| v.value_iterated_to() >= 100_000)
        .map(|v| v.count_at_value())
        .sum();
    assert!(
        waited >= 20,
        "only {waited} pages waited for the paused server"
    );
}

#[test]
fn shards_of_a_replay_start_their_share_and_merge_into_the_whole() {
    let server = TestServer::start();
    let m = model(vec![page("p1", &["/a", "/b"])], &[&["p1"]], 0.0);
    let url = server.url("/");
    let shards: Vec<ReplayResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..3)
            .map(|index| {
                let (m, url) = (m.clone(), url.clone());
                scope.spawn(move || {
                    let mut s = settings(100.0, Some(10), Duration::from_secs(10));
                    s.shard = Shard { index, count: 3 };
                    run(m, &url, s)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let started: Vec<u64> = shards.iter().map(|r| r.sessions.started).collect();
    assert_eq!(started, vec![4, 3, 3]);
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<std::path::PathBuf> = shards
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let path = dir.path().join(format!("shard-{i}.json"));
            std::fs::write(&path, serde_json::to_string(r).unwrap()).unwrap();
            path
        })
        .collect();
    let merged = tern_bench::replay::merge_files(&files).unwrap().unwrap();
    assert_eq!(merged.sessions.started, 10);
    assert_eq!(merged.pages.pages, 10);
    assert_eq!(merged.requests.counts.responses, 20);
    assert_eq!(merged.classes[0].latency.len(), 10);
    // The JSON's read-out percentiles follow the merged histogram.
    let max_ms = merged.pages.latency.max() as f64 / 1000.0;
    assert_eq!(merged.pages.summary.max_ms, max_ms);
    assert!(merged.pages.summary.p50_ms > 0.0);
    assert_eq!((server.stats.path("/a"), server.stats.path("/b")), (10, 10));
    // A shard given twice is refused, naming the file.
    let twice = [files[0].clone(), files[1].clone(), files[0].clone()];
    let e = tern_bench::replay::merge_files(&twice)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("shard-0.json") && e.contains("given twice"),
        "{e}"
    );
    // Plain runs' results are not taken for a replay's.
    assert!(tern_bench::replay::merge_files(&[dir.path().join("none.json")]).is_err());
}

#[test]
fn pages_that_time_out_count_in_page_latency_at_their_timeout() {
    let server = TestServer::start();
    let m = model(vec![page("p1", &["/a", "/hang"])], &[&["p1"]], 0.0);
    let mut s = settings(20.0, Some(4), Duration::from_secs(5));
    s.timeout = Duration::from_millis(300);
    let r = run(m, &server.url("/"), s);
    assert_eq!((r.pages.pages, r.pages.errors), (0, 4));
    assert_eq!(r.requests.counts.errors.timeout, 4);
    // Failing is no way to better the percentiles: every page is in them,
    // at least its timeout after it was due.
    assert_eq!(r.pages.latency.len(), 4);
    assert!(
        r.pages.latency.min() >= 300_000,
        "{}",
        r.pages.latency.min()
    );
}
