//! The admin listener end to end: `/metrics` read by a real Prometheus
//! parser (Python's `prometheus_client`) and checked against the requests
//! the test made, the label guard under a flood of hosts and methods, the
//! status page (JSON here; HTML in headless Chromium), the request
//! history, the activity history across a restart and a corrupt file, the
//! live trace with `tern watch`, health and readiness through SIGTERM with
//! `shutdown_delay`, `tern healthcheck`, and a rolling restart of two
//! replicas under load that loses no request.

use std::collections::HashMap;
use std::io::{BufRead as _, Write as _};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{config, docroot, get, request, Tern, BIN};

/// A config with the admin listener on 127.0.0.1:0, its activity history
/// in the test's directory, and `site_extra` in the site.
fn admin_config(admin_extra: &str, site_extra: &str) -> String {
    config(
        &format!(
            "[admin]\nlisten = \"127.0.0.1:0\"\nactivity_file = \"{{dir}}/activity.bin\"\n{admin_extra}\n"
        ),
        site_extra,
    )
}

/// GET `path` from the admin listener at `admin`.
pub(crate) fn admin_get(admin: SocketAddr, path: &str, accept: Option<&str>) -> super::Response {
    let accept = accept.map_or_else(String::new, |a| format!("Accept: {a}\r\n"));
    request(
        admin,
        format!("GET {path} HTTP/1.1\r\nHost: admin\r\n{accept}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .unwrap_or_else(|e| panic!("admin GET {path}: {e}"))
}

/// One sample as the Python parser read it.
#[derive(Debug, Clone, serde::Deserialize)]
struct Sample {
    name: String,
    labels: HashMap<String, String>,
    value: f64,
}

/// `text` parsed by `prometheus_client` (its Prometheus or OpenMetrics
/// parser): every sample, or the parser's complaint.
fn parse(text: &str, openmetrics: bool) -> Vec<Sample> {
    let module = if openmetrics {
        "prometheus_client.openmetrics.parser"
    } else {
        "prometheus_client.parser"
    };
    let script = format!(
        "import json, sys\nfrom {module} import text_string_to_metric_families as parse\n\
         out = []\nfor f in parse(sys.stdin.read()):\n    for s in f.samples:\n        \
         out.append({{'name': s.name, 'labels': s.labels, 'value': s.value}})\nprint(json.dumps(out))\n"
    );
    // Debian's interpreter: the parser is Debian's python3-prometheus-client
    // (scripts/test-all installs it).
    let mut child = Command::new("/usr/bin/python3")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the parser's JSON")
}

/// The value of the sample `name` whose labels include `labels`, summed
/// over the samples that match.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
        .sum()
}

fn raw(t: &Tern, bytes: &[u8]) -> u16 {
    request(t.addr(), bytes).map_or(0, |r| r.status)
}

#[test]
fn metrics_count_the_requests_made_and_parse_in_both_formats() {
    let dir = docroot(&[("index.html", b"hello"), ("big.bin", &[7u8; 5000])]);
    let t = Tern::start_in(BIN, &admin_config("", ""), dir);
    let admin = t.admin_addr();
    for _ in 0..5 {
        assert_eq!(get(&t, "/").status, 200);
    }
    for _ in 0..3 {
        assert_eq!(get(&t, "/missing").status, 404);
    }
    assert_eq!(get(&t, "/big.bin").status, 200);
    assert_eq!(
        raw(
            &t,
            b"BREW / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        ),
        405
    );
    let r = admin_get(admin, "/metrics", None);
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    let s = parse(&r.text(), false);
    let ok = [
        ("http_route", "/"),
        ("handler", "static"),
        ("http_request_method", "GET"),
        ("http_response_status_code", "200"),
    ];
    assert_eq!(
        value(&s, "http_server_request_duration_seconds_count", &ok),
        6.0
    );
    assert_eq!(
        value(
            &s,
            "http_server_request_duration_seconds_count",
            &[("http_response_status_code", "404")]
        ),
        3.0
    );
    assert_eq!(
        value(
            &s,
            "http_server_request_duration_seconds_count",
            &[
                ("http_request_method", "_OTHER"),
                ("http_response_status_code", "405")
            ]
        ),
        1.0
    );
    // 5 × 5 bytes and 5000 bytes.
    assert_eq!(
        value(&s, "http_server_response_body_size_bytes_sum", &ok),
        5025.0
    );
    let le = |b: &str| {
        let mut l = ok.to_vec();
        l.push(("le", b));
        value(&s, "http_server_response_body_size_bytes_bucket", &l)
    };
    assert_eq!((le("256.0"), le("4096.0"), le("16384.0")), (5.0, 5.0, 6.0));
    assert!(value(&s, "tern_connections_accepted_total", &[]) >= 10.0);
    assert!(value(&s, "process_resident_memory_bytes", &[]) > 0.0);
    // Present; its value may still be 0: the kernel counts CPU in 10 ms
    // ticks, and a fresh server that answered a few requests can have
    // used less.
    assert!(s.iter().any(|x| x.name == "process_cpu_seconds_total"));
    assert!(value(&s, "process_cpu_seconds_total", &[]) >= 0.0);
    assert_eq!(value(&s, "tern_config_generation", &[]), 1.0);

    let r = admin_get(
        admin,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0"),
    );
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    assert!(r.text().ends_with("# EOF\n"));
    let s = parse(&r.text(), true);
    assert_eq!(
        value(&s, "http_server_request_duration_seconds_count", &ok),
        6.0
    );
}

#[test]
fn a_flood_of_hosts_and_methods_adds_no_series() {
    let dir = docroot(&[("index.html", b"hello")]);
    let t = Tern::start_in(BIN, &admin_config("", ""), dir);
    let admin = t.admin_addr();
    let series = || {
        let text = admin_get(admin, "/metrics", None).text();
        text.lines()
            .filter(|l| l.starts_with("http_server_request_duration_seconds_count"))
            .count()
    };
    get(&t, "/");
    let before = series();
    for i in 0..200 {
        let req = format!(
            "GET /{i}?q={i} HTTP/1.1\r\nHost: flood-{i}.example\r\nConnection: close\r\n\r\n"
        );
        raw(&t, req.as_bytes());
        let req = format!("M{i} / HTTP/1.1\r\nHost: x{i}\r\nConnection: close\r\n\r\n");
        raw(&t, req.as_bytes());
    }
    let after = series();
    // Paths and hosts make no label; the 200 methods fold into _OTHER.
    assert!(after <= before + 2, "{before} -> {after} series");
    let text = admin_get(admin, "/metrics", None).text();
    assert!(!text.contains("flood-"), "a host became a label");
    assert!(!text.contains("M17"), "a method became a label");
}

#[test]
fn the_status_page_and_the_request_history_show_the_server() {
    let dir = docroot(&[("index.html", b"hello")]);
    let t = Tern::start_in(BIN, &admin_config("request_history = 3", ""), dir);
    let admin = t.admin_addr();
    for p in ["/", "/a", "/b", "/c?x=1"] {
        get(&t, p);
    }
    let r = admin_get(admin, "/requests", None);
    let recent: Vec<serde_json::Value> = serde_json::from_slice(&r.body).unwrap();
    let targets: Vec<_> = recent
        .iter()
        .map(|r| r["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        ["/c?x=1", "/b", "/a"],
        "the newest 3, newest first"
    );
    assert_eq!(recent[0]["status"], 404);
    assert!(recent[0]["total"].as_f64().unwrap() > 0.0);

    let r = admin_get(admin, "/status?json&hours=1", None);
    assert_eq!(r.status, 200);
    let s: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(s["requests"]["total"], 4);
    assert_eq!(s["config"]["generation"], 1);
    assert_eq!(s["activity"]["minutes"].as_array().unwrap().len(), 60);
    assert!(!s["connections"]["threads"].as_array().unwrap().is_empty());
    let html = admin_get(admin, "/status", None);
    assert_eq!(
        html.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let page = html.text();
    assert_eq!(page.matches("<svg").count(), 3, "three charts");
    assert!(!page.contains("<script"), "no script");
    assert!(!page.contains("src=\"http"), "no external asset");
    // Readiness, health, the rest.
    assert_eq!(admin_get(admin, "/healthz", None).status, 200);
    assert_eq!(admin_get(admin, "/readyz", None).status, 200);
    assert_eq!(admin_get(admin, "/nope", None).status, 404);
    let post = request(
        admin,
        b"POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!(post.status, 405);
}

#[test]
fn the_activity_history_survives_a_restart_and_a_corrupt_file_is_set_aside() {
    let dir = docroot(&[("index.html", b"hello")]);
    let cfg = admin_config("", "");
    let mut t = Tern::start_in(BIN, &cfg, dir);
    for _ in 0..7 {
        get(&t, "/");
    }
    get(&t, "/missing");
    t.signal(15);
    assert!(
        t.wait_exit(Duration::from_secs(15)).is_some(),
        "{}",
        t.log()
    );
    let dir = std::mem::replace(&mut t.dir, tempfile::tempdir().unwrap());
    drop(t);
    assert!(dir.path().join("activity.bin").exists());

    let t = Tern::start_in(BIN, &cfg, dir);
    let s: serde_json::Value =
        serde_json::from_slice(&admin_get(t.admin_addr(), "/status?json&hours=1", None).body)
            .unwrap();
    let (mut ok, mut missing) = (0, 0);
    for m in s["activity"]["minutes"].as_array().unwrap() {
        ok += m["requests"][1].as_u64().unwrap();
        missing += m["requests"][3].as_u64().unwrap();
    }
    assert_eq!((ok, missing), (7, 1), "the last run's minutes came back");
    assert_eq!(s["activity"]["persistent"], true);
    drop(t);

    let dir = docroot(&[("index.html", b"hello")]);
    std::fs::write(dir.path().join("activity.bin"), b"not a history at all").unwrap();
    let t = Tern::start_in(BIN, &cfg, dir);
    let _ = t.admin_addr();
    assert!(t.wait_log("set aside as"), "{}", t.log());
    let aside = std::fs::read_dir(t.path())
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("activity.bin.corrupt-")
        });
    assert!(aside, "the bad file is kept beside");
    assert_eq!(get(&t, "/").status, 200);
}

#[test]
fn tern_watch_shows_each_phase_of_the_requests_its_filter_admits() {
    let dir = docroot(&[("index.html", b"hello"), ("app/x.html", b"x")]);
    let t = Tern::start_in(
        BIN,
        &admin_config(
            "",
            "[[site.rules]]\npath = \"/old/*\"\nrewrite = \"/app/x.html\"\n",
        ),
        dir,
    );
    let admin = t.admin_addr().to_string();
    let mut watch = Command::new(BIN)
        .args(["watch", "--admin", &admin, "--path", "/old/**"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let out = watch.stdout.take().unwrap();
    let sink = lines.clone();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(l);
        }
    });
    // The watcher is attached once the admin listener counts it.
    let end = Instant::now() + Duration::from_secs(10);
    while !admin_get(t.admin_addr(), "/metrics", None)
        .text()
        .contains("tern_watchers 1")
    {
        assert!(Instant::now() < end, "the watcher never attached");
        std::thread::sleep(Duration::from_millis(50));
    }
    get(&t, "/index.html");
    assert_eq!(get(&t, "/old/page").text(), "x");
    let end = Instant::now() + Duration::from_secs(10);
    while !lines.lock().unwrap().iter().any(|l| l.contains(" done ")) {
        assert!(Instant::now() < end, "{:?}", lines.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let lines = lines.lock().unwrap().join("\n");
    for phase in ["request", "rules", "route", "response", "done"] {
        assert!(
            lines.contains(&format!(" {phase} ")),
            "no {phase}:\n{lines}"
        );
    }
    assert!(lines.contains("GET /old/page"), "{lines}");
    // The rule that matched, named as `tern explain` names it.
    assert!(lines.contains("on to /app/x.html; "), "{lines}");
    assert!(
        lines.contains("site[0].rules[0]: rewrite -> /app/x.html"),
        "{lines}"
    );
    assert!(lines.contains("200, 1 bytes"), "{lines}");
    assert!(!lines.contains("/index.html"), "filtered out:\n{lines}");
}

#[test]
fn readiness_turns_503_on_sigterm_while_tern_still_serves_for_shutdown_delay() {
    let dir = docroot(&[("index.html", b"hello")]);
    let cfg = admin_config("", "").replace(
        "[admin]",
        "[server]\nshutdown_delay = \"2s\"\ngrace_period = \"2s\"\n[admin]",
    );
    let mut t = Tern::start_in(BIN, &cfg, dir);
    let admin = t.admin_addr();
    let health = |live: bool| {
        let mut args = vec![
            "healthcheck".to_owned(),
            "--admin".into(),
            admin.to_string(),
        ];
        if live {
            args.push("--live".into());
        }
        Command::new(BIN).args(&args).output().unwrap()
    };
    // Ready once every worker accepts (the admin listener answers from
    // before: 503 until then).
    let end = Instant::now() + Duration::from_secs(10);
    while !health(false).status.success() {
        assert!(Instant::now() < end, "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(admin_get(admin, "/readyz", None).status, 200);
    let signalled = Instant::now();
    t.signal(15);
    let end = Instant::now() + Duration::from_secs(5);
    while admin_get(admin, "/readyz", None).status != 503 {
        assert!(Instant::now() < end, "readiness never turned");
    }
    let r = admin_get(admin, "/readyz", None);
    assert!(r.text().contains("shutting down"), "{}", r.text());
    assert!(!health(false).status.success(), "not ready");
    assert!(health(true).status.success(), "but alive");
    // Still serving during the delay.
    assert_eq!(get(&t, "/").status, 200);
    assert!(
        signalled.elapsed() < Duration::from_secs(2),
        "the test was too slow to tell"
    );
    assert!(
        t.wait_exit(Duration::from_secs(15)).is_some(),
        "{}",
        t.log()
    );
    assert!(
        signalled.elapsed() >= Duration::from_secs(2),
        "stopped before shutdown_delay"
    );
    assert!(t.log().contains("shutdown_delay over"), "{}", t.log());
    // Nothing answers now: the probe says so.
    let out = health(false);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("connecting"));
}

/// Requests to whichever of the replicas' listeners their readiness says
/// is ready, as a load balancer's endpoint list does; counts failures.
#[test]
fn a_rolling_restart_of_two_replicas_under_load_loses_no_request() {
    let cfg = admin_config("", "").replace(
        "[admin]",
        "[server]\nshutdown_delay = \"1s\"\ngrace_period = \"5s\"\n[admin]",
    );
    let start = || Tern::start_in(BIN, &cfg, docroot(&[("index.html", b"hello")]));
    let replicas = [start(), start()];
    // The endpoint list: (serving address, admin address, ready). A replica
    // joins it not ready, as a load balancer lists a new endpoint: tern
    // prints its address once bound, and is ready once every worker
    // accepts, which on a loaded machine comes a little later.
    let endpoints: Arc<Mutex<Vec<(SocketAddr, SocketAddr, bool)>>> = Arc::new(Mutex::new(
        replicas
            .iter()
            .map(|t| (t.addr(), t.admin_addr(), false))
            .collect(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    // The readiness prober, every 100 ms (Kubernetes' is 1 s at the least;
    // shutdown_delay is sized to it).
    let prober = {
        let (endpoints, stop) = (endpoints.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let list: Vec<_> = endpoints.lock().unwrap().clone();
                for (i, (_, admin, _)) in list.iter().enumerate() {
                    let ready = request(
                        *admin,
                        b"GET /readyz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
                    )
                    .is_ok_and(|r| r.status == 200);
                    if let Some(e) = endpoints.lock().unwrap().get_mut(i) {
                        e.2 = ready;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    // The load starts once the prober has seen both replicas ready.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !endpoints.lock().unwrap().iter().all(|e| e.2) {
        assert!(Instant::now() < deadline, "the replicas never became ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let load: Vec<_> = (0..3)
        .map(|k| {
            let (endpoints, stop) = (endpoints.clone(), stop.clone());
            std::thread::spawn(move || {
                let (mut ok, mut failed) = (0u32, Vec::new());
                let mut n = k;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let ready: Vec<SocketAddr> = endpoints
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|e| e.2)
                        .map(|e| e.0)
                        .collect();
                    if ready.is_empty() {
                        failed.push("no replica ready".to_owned());
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                    let to = ready[n % ready.len()];
                    match request(
                        to,
                        b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                    ) {
                        Ok(r) if r.status == 200 => ok += 1,
                        Ok(r) => failed.push(format!("{to}: {}", r.status)),
                        Err(e) => failed.push(format!("{to}: {e}")),
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                (ok, failed)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // Roll each replica in turn: stop it, wait for it to exit, start its
    // successor and put it in the list.
    let mut replicas = Vec::from(replicas);
    for i in 0..2 {
        let mut old = replicas.remove(0);
        old.signal(15);
        assert!(
            old.wait_exit(Duration::from_secs(20)).is_some(),
            "{}",
            old.log()
        );
        let new = start();
        let (addr, admin) = (new.addr(), new.admin_addr());
        {
            let mut list = endpoints.lock().unwrap();
            // The prober decides when it is ready.
            list[i] = (addr, admin, false);
        }
        replicas.push(new);
        std::thread::sleep(Duration::from_millis(700));
    }
    stop.store(true, Ordering::Relaxed);
    prober.join().unwrap();
    let (mut ok, mut failed) = (0, Vec::new());
    for l in load {
        let (o, f) = l.join().unwrap();
        ok += o;
        failed.extend(f);
    }
    assert!(ok > 100, "too little load to tell: {ok}");
    assert!(
        failed.is_empty(),
        "{} failed of {}: {:?}",
        failed.len(),
        ok,
        &failed[..failed.len().min(10)]
    );
}

/// The status page in a real browser (headless Chromium, from Debian):
/// it loads without a console message (no script error, no refused
/// resource under its Content-Security-Policy), its three charts are in
/// the rendered page, and a screenshot is made.
#[test]
fn the_status_page_renders_in_headless_chromium_without_console_errors() {
    let dir = docroot(&[("index.html", b"hello")]);
    let t = Tern::start_in(BIN, &admin_config("", ""), dir);
    for p in ["/", "/", "/missing"] {
        get(&t, p);
    }
    let url = format!("http://{}/status", t.admin_addr());
    let shot = t.file("status.png");
    let chromium = |extra: &[&str]| super::chromium(&url, extra, t.path());
    let dom = chromium(&["--dump-dom"]);
    let stderr = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<_> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let page = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(page.matches("<svg").count(), 3, "three charts rendered");
    assert!(page.contains("Requests per minute"), "{page}");
    let shot_arg = format!("--screenshot={}", shot.display());
    chromium(&[&shot_arg]);
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
}

/// A script request slower than `slow_request` is logged once, while it
/// runs, with its pid and its phase: a CGI script, and a script of a Perl
/// engine (persistent). (An engine's stderr is its own, not the
/// request's: the line with the last stderr line is FastCGI's, whose
/// STDERR records belong to a request.)
#[test]
fn a_slow_script_request_is_logged_once_with_its_pid_and_phase() {
    let dir = docroot(&[]);
    super::write_files(
        &dir.path().join("cgi"),
        &[(
            "slow.sh",
            b"#!/bin/sh\nsleep 1.5\nprintf 'Content-Type: text/plain\\r\\n\\r\\nslow\\n'\n",
        )],
    );
    super::write_files(
        &dir.path().join("scripts"),
        &[(
            "slow.pl",
            b"select(undef, undef, undef, 1.5);\nprint \"Content-Type: text/plain\\r\\n\\r\\nslow\\n\";\n",
        )],
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(
        dir.path().join("cgi/slow.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let site = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\nslow_request = \"300ms\"\n\
                [[site.route]]\nextension = \"pl\"\nhandler = \"cgiplus\"\nengine = \"perl\"\ndir = \"{dir}/scripts\"\nslow_request = \"300ms\"\n";
    let t = Tern::start_in(BIN, &config("", site), dir);
    let fast = get(&t, "/cgi-bin/slow.sh");
    assert_eq!(fast.text(), "slow\n");
    assert!(
        t.wait_log("cgi: slow request: still running after 300ms as pid"),
        "{}",
        t.log()
    );
    assert!(
        t.log().contains("waiting for its response head"),
        "{}",
        t.log()
    );
    assert_eq!(get(&t, "/slow.pl").text(), "slow\n");
    assert!(
        t.wait_log("cgiplus: slow request: still running after 300ms on worker pid"),
        "{}",
        t.log()
    );
    // Once per request, not once per check.
    assert_eq!(t.log().matches("slow request").count(), 2, "{}", t.log());
}

/// A FastCGI pool in the metrics, the status page (a row per worker
/// process, with its pid) and the request history (the worker that served
/// each request); a worker killed shows as crashed.
#[test]
fn pools_show_their_workers_in_metrics_status_and_history() {
    let dir = docroot(&[]);
    let app = super::persistent::fastcgi_app(dir.path());
    let site = format!(
        "[[site.route]]\nprefix = \"/app\"\nhandler = \"fastcgi\"\ncommand = [\"{app}\"]\nmin_processes = 2\nmax_processes = 2\n"
    );
    let t = Tern::start_in(BIN, &admin_config("", &site), dir);
    let admin = t.admin_addr();
    for _ in 0..5 {
        assert_eq!(get(&t, "/app/hello-only").text(), "Hello!\n");
    }
    let s = parse(&admin_get(admin, "/metrics", None).text(), false);
    let pool = [("pool", "default /app"), ("kind", "fastcgi")];
    assert_eq!(value(&s, "tern_pool_requests_total", &pool), 5.0);
    assert_eq!(value(&s, "tern_pool_spawned_total", &pool), 2.0);
    let idle = [pool[0], pool[1], ("state", "idle")];
    assert_eq!(value(&s, "tern_pool_workers", &idle), 2.0);
    assert_eq!(value(&s, "tern_pool_queue_wait_seconds_count", &pool), 5.0);

    let status: serde_json::Value =
        serde_json::from_slice(&admin_get(admin, "/status?json&hours=1", None).body).unwrap();
    let workers = status["pools"][0]["workers"].as_array().unwrap().clone();
    let pids: Vec<u64> = workers.iter().map(|w| w["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.len(), 2, "{workers:?}");
    for pid in &pids {
        assert!(
            Path::new(&format!("/proc/{pid}")).exists(),
            "worker {pid} alive"
        );
    }
    let served: u64 = workers
        .iter()
        .map(|w| w["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(served, 5);
    let recent: Vec<serde_json::Value> =
        serde_json::from_slice(&admin_get(admin, "/requests", None).body).unwrap();
    assert_eq!(recent.len(), 5);
    for r in &recent {
        assert!(pids.contains(&r["worker"].as_u64().unwrap()), "{r}");
        assert!(r["queue_wait"].as_f64().is_some(), "{r}");
    }

    // A worker killed: found dead (by a request that meets it, or by the
    // pool's sweep of its idle workers), counted as a crash, replaced.
    let victim = pids[0];
    assert!(Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status()
        .unwrap()
        .success());
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        assert_eq!(get(&t, "/app/hello-only").status, 200);
        let s = parse(&admin_get(admin, "/metrics", None).text(), false);
        if value(&s, "tern_pool_crashed_total", &pool) == 1.0
            && value(&s, "tern_pool_spawned_total", &pool) == 3.0
        {
            break;
        }
        assert!(Instant::now() < end, "no crash counted:\n{}", t.log());
        std::thread::sleep(Duration::from_millis(100));
    }
}
