//! The HTML report (`--html FILE`): written for a run (through the command
//! line), a comparison of two servers and a session replay; its three
//! charts are there; text from the input is escaped; and it renders in
//! headless Chromium without a console message.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Mutex;
use std::time::Duration;

use clap::Parser;
use rustix::process::{kill_process, Signal};
use tern_bench::cli::{run_bench, BenchArgs};
use tern_bench::compare::{compare, Contender};
use tern_bench::replay::{replay, ReplaySettings, Walk};
use tern_bench::report::{html, json};
use tern_bench::{Arrival, Load, Plan, PlanSettings, Reuse, Stop, StopHandle, Target};
use tern_workload::Model;

use super::open::{PausableServer, TIMING};
use super::replay::{model as replay_model, page};
use crate::server::TestServer;
use crate::{closed, run};

/// The ids of the three charts of a run.
const CHARTS: [&str; 3] = [
    "id=\"latency-over-time\"",
    "id=\"percentile-spectrum\"",
    "id=\"throughput-over-time\"",
];

#[derive(Debug, Parser)]
struct Tern {
    #[command(subcommand)]
    command: Top,
}

#[derive(Debug, clap::Subcommand)]
enum Top {
    Bench(Box<BenchArgs>),
}

/// `tern bench ARGS...`, as the binary runs it.
fn tern_bench(args: &[&str]) -> ExitCode {
    let mut argv = vec!["tern", "bench"];
    argv.extend_from_slice(args);
    match Tern::try_parse_from(argv).unwrap().command {
        Top::Bench(b) => run_bench(*b),
    }
}

fn assert_charts(page: &str) {
    for id in CHARTS {
        assert!(page.contains(id), "{id} missing");
    }
    assert!(page.matches("<svg").count() >= 3);
    assert!(
        !page.contains("<script"),
        "no script, and nothing unescaped"
    );
    assert!(
        !page.contains(" src=") && !page.contains(" href="),
        "self-contained: nothing to fetch"
    );
}

/// Chromium, or a failure that says how to get it.
fn chromium() -> PathBuf {
    for p in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!(
        "chromium is not installed (looked for /usr/bin/chromium): run scripts/test-all, which installs it"
    );
}

/// One browser at a time: each is heavy on a small machine.
static BROWSER: Mutex<()> = Mutex::new(());

/// Opens `file` in headless Chromium: returns the rendered DOM, checks that
/// the page logged nothing on its console, and writes a screenshot to
/// `shot` (`width` x `height`) that must be a non-empty PNG.
fn render_in_chromium(file: &Path, shot: &Path, width: u32, height: u32) -> String {
    let _one = BROWSER.lock().unwrap_or_else(|p| p.into_inner());
    let home = tempfile::tempdir().unwrap();
    let url = format!("file://{}", file.display());
    let size = format!("--window-size={width},{height}");
    let run = |extra: &str| {
        let out = Command::new(chromium())
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--enable-logging=stderr",
                "--v=0",
                "--hide-scrollbars",
                &size,
                extra,
                &url,
            ])
            .env("HOME", home.path())
            .output()
            .expect("chromium runs (scripts/test-all installs it)");
        assert!(out.status.success(), "{out:?}");
        out
    };
    let dom = run("--dump-dom");
    let stderr = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let page = String::from_utf8_lossy(&dom.stdout).into_owned();
    run(&format!("--screenshot={}", shot.display()));
    let png = std::fs::read(shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    // To look at them: TERN_BENCH_KEEP_REPORTS=DIR keeps the reports and
    // their screenshots.
    if let Some(keep) = std::env::var_os("TERN_BENCH_KEEP_REPORTS") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).unwrap();
        for f in [file, shot] {
            std::fs::copy(f, keep.join(f.file_name().unwrap())).unwrap();
        }
    }
    page
}

#[test]
fn a_run_writes_an_html_report_that_renders_in_chromium() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.html");
    let code = tern_bench(&[
        "-q",
        "-k",
        "-c",
        "4",
        "--rate",
        "200",
        "-d",
        "2s",
        "--html",
        report.to_str().unwrap(),
        &server.url("/"),
        &server.url("/404"),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let page = std::fs::read_to_string(&report).unwrap();
    assert_charts(&page);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(&server.url("/404")), "the URLs are listed");
    assert!(page.contains("4xx"), "status classes");
    assert!(page.contains("<table id=\"summary\""));
    assert!(page.contains("99.999%"), "the spectrum's ticks");
    assert!(page.contains("viewBox=\"0 0 960 340\""), "charts scale");

    let dom = render_in_chromium(&report, &dir.path().join("run.png"), 1280, 2000);
    assert_charts(&dom);
    assert!(dom.contains("Latency over time"));
}

#[test]
fn text_from_the_input_is_escaped() {
    let server = TestServer::start();
    let mut r = run(&[server.url("/")], closed(1, 20));
    let hostile = "/<script>alert(1)</script>\"'&";
    r.targets[0].url = format!("http://h{hostile}");
    r.targets[0].path = hostile.to_owned();
    r.plan = format!("plan {hostile}");
    r.notes.push(format!("note {hostile}"));
    r.server_software = Some(format!("srv {hostile}"));
    let page = html::render_runs(
        &format!("title {hostile}"),
        &[(&format!("name {hostile}") as &str, &r)],
        None,
    );
    assert!(!page.contains("<script"), "unescaped input");
    assert!(!page.contains("alert(1)</"), "unescaped input");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"));
    assert_charts(&page);
}

#[test]
fn an_empty_run_renders_without_data() {
    let mut settings = closed(1, 3);
    settings.timeout = Duration::from_millis(300);
    let r = run(
        &[format!(
            "http://127.0.0.1:{}/",
            crate::server::refused_port()
        )],
        settings,
    );
    assert_eq!(r.counts.responses, 0);
    let page = html::render_runs("refused", &[("refused", &r)], None);
    assert_charts(&page);
    assert!(page.contains("no data"));
    // Errors show, in red, by class.
    assert!(page.contains("class=\"err\">3<"), "{page}");
}

#[test]
fn a_comparison_overlays_the_servers_and_joins_their_rounds() {
    let (a, b) = (TestServer::start(), TestServer::start());
    let contenders = [
        Contender::parse(&format!("fast={}", a.url("/"))).unwrap(),
        Contender::parse(&format!("slow<b>={}", b.url("/slow/2"))).unwrap(),
    ];
    let mut settings = closed(2, 60);
    settings.reuse = Reuse::KeepAlive;
    settings.windows.warmup = Duration::from_millis(20);
    let plan = Plan::new(vec![Target::parse(&a.url("/")).unwrap()], settings).unwrap();
    let c = compare(&plan, &contenders, 2, &StopHandle::new(), |_, _, _| {}).unwrap();
    let page = html::render_comparison(&c);
    assert_charts(&page);
    assert!(page.contains("<table id=\"comparison\""));
    assert!(page.contains("fast, round 2"));
    assert!(page.contains("slow&lt;b&gt;, round 1"));
    assert!(!page.contains("slow<b>"));
    // One line per server in the spectrum; round boundaries marked.
    assert!(page.contains("<title>fast p99</title>"));
    assert!(page.contains("<title>slow&lt;b&gt; p99</title>"));
    assert!(page.contains("class=\"round\""));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("compare.html");
    std::fs::write(&file, &page).unwrap();
    let dom = render_in_chromium(&file, &dir.path().join("compare.png"), 1280, 2000);
    assert_charts(&dom);
}

#[test]
fn compare_and_merge_write_html_from_the_command_line() {
    let (a, b) = (TestServer::start(), TestServer::start());
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("compare.html");
    let code = tern_bench(&[
        "compare",
        "-q",
        "--rounds",
        "1",
        "-n",
        "30",
        "--warmup",
        "0s",
        "--html",
        report.to_str().unwrap(),
        &format!("a={}", a.url("/")),
        &format!("b={}", b.url("/")),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert_charts(&std::fs::read_to_string(&report).unwrap());

    let r1 = run(&[a.url("/")], closed(1, 30));
    let r2 = run(&[b.url("/")], closed(1, 30));
    let (p1, p2) = (dir.path().join("1.json"), dir.path().join("2.json"));
    std::fs::write(&p1, json::render(&r1)).unwrap();
    std::fs::write(&p2, json::render(&r2)).unwrap();
    let merged = dir.path().join("merged.html");
    let code = tern_bench(&[
        "merge",
        "--html",
        merged.to_str().unwrap(),
        p1.to_str().unwrap(),
        p2.to_str().unwrap(),
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    let page = std::fs::read_to_string(&merged).unwrap();
    assert_charts(&page);
    assert!(page.contains("2 runs merged"));
}

fn model(pages: &[(&str, &[&str])], sessions: &[&[&str]]) -> Model {
    let pages = pages.iter().map(|(id, files)| page(id, files)).collect();
    replay_model(pages, sessions, 0.05)
}

#[test]
fn a_replay_report_leads_with_page_latency() {
    let server = TestServer::start();
    let m = model(
        &[
            ("p1", &["/", "/a", "/b"]),
            ("p2", &["/x<script>alert(1)</script>", "/a"]),
        ],
        &[&["p1", "p2"]],
    );
    m.check().unwrap();
    let r = replay(
        m,
        "model<i>.toml",
        &Target::parse(&server.url("/")).unwrap(),
        ReplaySettings {
            sessions_per_second: 20.0,
            arrival: Arrival::Constant,
            think_scale: 1.0,
            walk: Walk::Sessions,
            duration: Duration::from_millis(1500),
            sessions: None,
            user_connections: 6,
            timeout: Duration::from_secs(5),
            seed: 1,
            tls: Default::default(),
            shard: Default::default(),
        },
        &StopHandle::new(),
        None,
    )
    .unwrap();
    assert!(r.pages.pages > 0);
    assert!(!r.requests.timeline.is_empty(), "a replay has a timeline");
    assert_eq!(
        r.requests.timeline.responses() + r.requests.timeline.errors(),
        r.requests.counts.responses + r.requests.counts.errors.total()
    );
    // Pages have a timeline of their own: every page fetched whole once.
    assert_eq!(r.page_timeline.responses(), r.pages.pages);
    assert_eq!(r.page_timeline.interval_ms, 1000);
    let page = html::render_replay(&r);
    assert_charts(&page);
    assert!(page.contains("id=\"page-latency-spectrum\""));
    assert!(page.contains("id=\"page-latency-over-time\""));
    assert!(page.contains("<table id=\"page-classes\""));
    // Page classes come before the requests.
    let pages_at = page.find("id=\"page-classes\"").unwrap();
    assert!(pages_at < page.find("id=\"latency-over-time\"").unwrap());
    assert!(page.contains("/x&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("model&lt;i&gt;.toml"));

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("replay.html");
    std::fs::write(&file, &page).unwrap();
    let dom = render_in_chromium(&file, &dir.path().join("replay.png"), 1280, 2000);
    assert_charts(&dom);
    assert!(dom.contains("page-latency-spectrum"));
}

/// Writes docs/images/bench-report.png: the report of a 12 s open-loop run
/// (200 req/s) against a server paused for 1.5 s in its middle (run it by name with
/// `--ignored` to refresh the image).
#[test]
#[ignore = "writes the documentation's screenshot"]
fn write_the_documentation_screenshot() {
    let _one = TIMING.lock().unwrap_or_else(|p| p.into_inner());
    let server = PausableServer::start();
    let url = format!("http://127.0.0.1:{}/", server.port);
    let pid = server.pid();
    let pauser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(6500));
        kill_process(pid, Signal::STOP).unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        kill_process(pid, Signal::CONT).unwrap();
    });
    let settings = PlanSettings {
        load: Load::Open {
            rate: 200.0,
            arrival: Arrival::Poisson,
            connections: 16,
        },
        stop: Stop::Duration(Duration::from_secs(12)),
        reuse: Reuse::KeepAlive,
        timeout: Duration::from_secs(5),
        windows: tern_bench::Windows {
            warmup: Duration::from_secs(1),
            cooldown: Duration::ZERO,
        },
        ..PlanSettings::default()
    };
    let r = run(std::slice::from_ref(&url), settings);
    pauser.join().unwrap();
    let page = html::render_runs(&format!("tern bench {url}"), &[("run", &r)], None);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    std::fs::write(&file, &page).unwrap();
    let images = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/images");
    std::fs::create_dir_all(&images).unwrap();
    let dom = render_in_chromium(&file, &images.join("bench-report.png"), 1280, 2200);
    assert_charts(&dom);
}
