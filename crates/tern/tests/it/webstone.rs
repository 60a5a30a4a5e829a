//! WebStone-SS end to end, through the binary: an access log becomes a
//! model (`tern bench model`), the model a document root with a CGI
//! script for its dynamic page (`--materialize`), tern serves that root
//! from the routes file written beside it, and `tern bench --model`
//! replays the sessions against it.

use std::fmt::Write as _;
use std::process::{Command, Stdio};

use super::{Tern, BIN};

/// A combined log of `users` users: each visits the front page (HTML, a
/// style sheet and an image), then the search (a CGI program), 60 s
/// apart.
fn log(users: u32) -> String {
    let mut out = String::new();
    for u in 0..users {
        let ip = format!("10.1.0.{}", u + 1);
        let minute = u % 50;
        let lines = [
            (minute, 0, "/index.html", 5120),
            (minute, 1, "/style.css", 2048),
            (minute, 1, "/logo.png", 30000),
            (minute + 1, 2, "/cgi-bin/search?q=tern", 700),
        ];
        for (m, s, path, size) in lines {
            let _ = writeln!(
                out,
                "{ip} - - [24/Nov/2026:10:{m:02}:{s:02} +0000] \"GET {path} HTTP/1.1\" 200 {size} \"-\" \"test/1\""
            );
        }
    }
    // Lines are written when responses end: sorted by time, as a server
    // writes them.
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_by_key(|l| l.split('[').nth(1).map(str::to_owned));
    lines.join("\n") + "\n"
}

fn tern(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run tern");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_log_becomes_a_model_a_site_and_a_replay_against_tern() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    std::fs::write(path("access.log"), log(40)).unwrap();
    let (ok, out, err) = tern(&[
        "bench",
        "model",
        &path("access.log"),
        "-o",
        &path("model.toml"),
        "--materialize",
        &path("site"),
        "--cost",
        "counter",
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("users 40, sessions 40, pages 80, requests 160"),
        "{out}"
    );

    let served = tempfile::tempdir().unwrap();
    let t = Tern::spawn(
        BIN,
        &[
            "serve",
            "--config",
            &path("site/routes.toml"),
            "--listen",
            "127.0.0.1:0",
        ],
        served,
    );
    let url = format!("http://{}/", t.addr());
    let (ok, out, err) = tern(&[
        "bench",
        "--model",
        &path("model.toml"),
        "--users-per-second",
        "40",
        "--sessions",
        "20",
        "--think-scale",
        "0",
        "--session-arrival",
        "constant",
        "-d",
        "10s",
        "--json",
        &url,
    ]);
    assert!(ok, "{out}{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["sessions"]["started"], 20, "{out}");
    assert_eq!(r["sessions"]["completed"], 20);
    // Every session fetched the front page and the search: 40 pages, 80
    // requests, all answered 200 from the materialized files and script.
    assert_eq!(r["pages"]["pages"], 40);
    assert_eq!(r["pages"]["errors"], 0);
    assert_eq!(r["requests"]["counts"]["responses"], 80);
    assert_eq!(r["requests"]["counts"]["status"]["200"], 80, "{out}");
    let classes = r["classes"].as_array().unwrap();
    let search = classes
        .iter()
        .find(|c| c["front"].as_str().unwrap().starts_with("/cgi-bin/search"))
        .expect("the search page class");
    assert_eq!(search["pages"], 20);
    // The counter script ran once per search.
    let state = std::fs::read_dir(dir.path().join("site/state"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .find(|text| text.trim().parse::<u64>().is_ok())
        .expect("a counter file under site/state");
    assert_eq!(state.trim(), "20");
    drop(t);
}

/// The suite's seed experiment on tern itself: every way tern serves the
/// bundled site's dynamic pages (static files; the report's three Perl
/// scripts as CGI and in the Perl engine; CGIplus, FastCGI beside it and
/// spawned by it, WebAssembly) replayed, no page lost.
#[test]
fn the_suite_replays_the_bundled_site_on_every_way_tern_serves_it() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("suite.html");
    let out = Command::new(BIN)
        .args(["suite", "-q", "--tern", BIN, "--sections", "webstone"])
        .args(["-d", "1s", "--warmup", "200ms", "--webstone-rate", "20"])
        .args(["--think-scale", "0.05", "--json", "--html"])
        .arg(&html)
        .stdin(Stdio::null())
        .output()
        .expect("run tern suite");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = report["webstone"]["rows"]
        .as_array()
        .expect("the section ran");
    let ways: Vec<&str> = rows.iter().map(|r| r["way"].as_str().unwrap()).collect();
    assert_eq!(
        ways,
        [
            "static",
            "CGI trivial.pl",
            "CGI counter.pl",
            "CGI search.pl",
            "Perl engine trivial.pl",
            "Perl engine counter.pl",
            "Perl engine search.pl",
            "CGIplus Hello! (C)",
            "FastCGI Hello! (C)",
            "FastCGI spawned Hello! (C)",
            "WebAssembly Hello! (WAT)"
        ],
        "{}",
        report["notes"]
    );
    for r in rows {
        assert!(r["note"].is_null(), "{r}");
        assert_eq!(r["all"]["errors"], 0, "{r}");
        assert_eq!(r["request_errors"], 0, "{r}");
        assert!(r["dynamic_pages"]["pages"].as_u64().unwrap() > 0, "{r}");
    }
    // The HTML report renders in a browser, without a console message.
    let url = format!("file://{}", html.display());
    let dom = super::chromium(&url, &["--dump-dom"], dir.path());
    let stderr = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<_> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let page = String::from_utf8_lossy(&dom.stdout);
    assert!(page.contains("id=\"webstone\""), "{page}");
    for way in [
        "CGI search.pl",
        "Perl engine counter.pl",
        "FastCGI spawned",
        "WebAssembly",
    ] {
        assert!(page.contains(way), "{way}: {page}");
    }
}
