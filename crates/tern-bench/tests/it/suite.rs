//! `tern suite`: servers started on loopback, measured row by row, stopped.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use tern_bench::suite::peer::PeerKind;
use tern_bench::suite::{default_search_path, run, table, SuiteConfig, SuiteReport};
use tern_bench::StopHandle;

fn quick(mut c: SuiteConfig) -> SuiteConfig {
    c.registry.retain_sections(&["static".to_owned()]);
    c.registry.retain_matching("0 KB");
    c.duration = Duration::from_millis(150);
    c.warmup = Duration::from_millis(50);
    c.timeout = Duration::from_secs(3);
    c.quiet = true;
    c
}

fn assert_all_stopped(r: &SuiteReport) {
    for s in &r.servers {
        let alive = std::fs::read_to_string(format!("/proc/{}/stat", s.pid))
            .is_ok_and(|stat| !stat.contains(") Z "));
        assert!(!alive, "{} (pid {}) still runs", s.name, s.pid);
    }
}

/// A stand-in for tern: a script that takes tern's `serve --config FILE
/// [--no-cache]`, reads the TOML the suite wrote (listener, site root, CGI
/// routes) and serves it with Python's http.server, running the CGI routes'
/// programs as CGI (forked and waited for, like tern), noting its arguments
/// and its routes.
fn fake_tern(dir: &Path) -> std::path::PathBuf {
    let script = dir.join("tern");
    let log = dir.join("args.log");
    std::fs::write(
        &script,
        format!(
            r#"#!/usr/bin/env python3
# serve --config FILE [--no-cache]
import http.server, os, sys, tomllib
args = sys.argv[1:]
assert args[:2] == ["serve", "--config"], args
with open(args[2], "rb") as f:
    conf = tomllib.load(f)
site = conf["site"][0]
root = site["root"]
routes = [r for r in site.get("route", []) if r.get("handler") == "cgi"]
with open("{}", "a") as f:
    f.write(" ".join(args) + "".join(" | cgi %s -> %s" % (r["prefix"], r["dir"]) for r in routes) + "\n")
class Handler(http.server.CGIHTTPRequestHandler):
    cgi_directories = [r["prefix"] for r in routes]
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def translate_path(self, path):
        for r in routes:
            if path.startswith(r["prefix"] + "/"):
                return os.path.join(r["dir"], path[len(r["prefix"]) + 1:].split("?")[0])
        return super().translate_path(path)
    def log_message(self, *a):
        pass
class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # 5 by default: 10 connections would meet SYN retries
host, port = conf["listen"][0]["address"].rsplit(":", 1)
Server((host, int(port)), Handler).serve_forever()
"#,
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn tern_is_started_as_told_measured_and_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let config = quick(SuiteConfig::new(Some(fake_tern(dir.path()))));
    let report = run(&config, &StopHandle::new()).unwrap();
    assert_eq!(report.servers.len(), 2, "{:?}", report.notes);
    let args = std::fs::read_to_string(dir.path().join("args.log")).unwrap();
    let lines: Vec<&str> = args.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines
        .iter()
        .all(|l| l.starts_with("serve --config /") && !l.contains(" | cgi ")));
    assert_eq!(
        lines.iter().filter(|l| l.ends_with("--no-cache")).count(),
        1
    );
    // 0 KB rows: 2 connection counts x keep-alive on/off x cache on/off, one tern each.
    assert_eq!(report.rows.len(), 8);
    for row in &report.rows {
        assert_eq!(row.cells.len(), 1);
        let cell = &row.cells[0];
        assert!(cell.note.is_none(), "{}: {:?}", row.row.name(), cell.note);
        assert!(cell.rps.unwrap().median > 0.0);
        assert!(cell.server_cpu_s.is_some());
    }
    let md = table::markdown(&report);
    assert!(md.contains("| 0 KB file | 10 | yes | off | tern |"), "{md}");
    assert!(table::json(&report).contains("\"rows\""));
    assert_all_stopped(&report);
}

#[test]
fn peers_run_beside_each_other_or_are_skipped_with_a_note() {
    let mut config = quick(SuiteConfig::new(None));
    config.peers = vec![PeerKind::Nginx];
    config.registry.retain_matching("c=1, no keep-alive");
    let report = run(&config, &StopHandle::new()).unwrap();
    if PeerKind::Nginx.find(&default_search_path()).is_some() {
        // nginx runs twice: open_file_cache on and off.
        assert_eq!(report.servers.len(), 2, "{:?}", report.notes);
        assert_eq!(report.rows.len(), 2);
        for row in &report.rows {
            let cell = &row.cells[0];
            assert_eq!(cell.server, "nginx");
            assert!(cell.note.is_none() && cell.errors == 0, "{cell:?}");
            assert!(cell.responses > 0);
        }
    } else {
        assert!(report
            .notes
            .iter()
            .any(|n| n.contains("nginx: not installed")));
    }
    assert_all_stopped(&report);
}

#[test]
fn a_peer_that_is_not_installed_is_skipped() {
    let empty = tempfile::tempdir().unwrap();
    let mut config = quick(SuiteConfig::new(None));
    config.peers = PeerKind::ALL.to_vec();
    config.search_path = vec![empty.path().to_owned()];
    let report = run(&config, &StopHandle::new()).unwrap();
    assert!(report.servers.is_empty());
    for p in PeerKind::ALL {
        let note = format!("{}: not installed, skipped", p.name());
        assert!(report.notes.contains(&note), "{:?}", report.notes);
    }
    assert!(table::markdown(&report).contains("note: caddy: not installed"));
}

#[test]
fn a_server_serving_the_wrong_bytes_gets_a_note_not_figures() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(SuiteConfig::new(Some(fake_tern(dir.path()))));
    config
        .registry
        .retain_matching("c=1, no keep-alive, cache on");
    // Expect a length the server will not send.
    let mut rows = tern_bench::suite::row::Registry::new();
    for f in config.registry.fixtures() {
        rows.add_fixture(f.clone());
    }
    let mut row = config.registry.rows()[0].clone();
    row.body_bytes = 12345;
    rows.add_row(row);
    config.registry = rows;
    let report = run(&config, &StopHandle::new()).unwrap();
    let cell = &report.rows[0].cells[0];
    assert!(cell.rps.is_none());
    assert!(
        cell.note
            .as_deref()
            .unwrap_or("")
            .contains("expected 200 with 12345"),
        "{cell:?}"
    );
    assert!(table::markdown(&report).contains("[1] 0 KB file"));
    assert_all_stopped(&report);
}

#[test]
fn cgi_rows_run_compiled_programs_through_the_cgi_route() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = SuiteConfig::new(Some(fake_tern(dir.path())));
    config.registry.retain_sections(&["cgi".to_owned()]);
    config.duration = Duration::from_millis(150);
    config.warmup = Duration::from_millis(50);
    config.timeout = Duration::from_secs(3);
    config.quiet = true;
    let has_cc = config.search_path.iter().any(|d| d.join("cc").is_file());
    let report = run(&config, &StopHandle::new()).unwrap();
    if !has_cc {
        assert!(report.rows.is_empty(), "{:?}", report.rows);
        return;
    }
    // Only the cache-on tern takes CGI rows; the cache-off one is not started.
    assert_eq!(report.servers.len(), 1, "{:?}", report.notes);
    let args = std::fs::read_to_string(dir.path().join("args.log")).unwrap();
    let line = args.lines().next().unwrap();
    assert!(
        line.starts_with("serve --config /") && !line.contains("--no-cache"),
        "{line}"
    );
    assert!(line.ends_with("/www/cgi-bin"), "{line}");
    assert!(line.contains(" | cgi /cgi-bin -> /"), "{line}");
    // "Hello!" and 64 KB, at c=1 and 10, without and with keep-alive.
    assert_eq!(report.rows.len(), 8);
    for row in &report.rows {
        assert_eq!(row.row.section, "cgi");
        let cell = &row.cells[0];
        assert_eq!(cell.server, "tern");
        assert!(cell.note.is_none(), "{}: {:?}", row.row.name(), cell.note);
        assert!(cell.responses > 0 && cell.errors == 0, "{cell:?}");
        assert!(cell.server_cpu_s.is_some());
    }
    assert!(report.footnotes.is_empty(), "tern reaps its children");
    let md = table::markdown(&report);
    assert!(md.contains("## cgi"), "{md}");
    assert!(!md.contains("## static"), "{md}");
    assert!(md.contains("| \"Hello!\" | 10 | yes | on | tern |"), "{md}");
    assert!(md.contains("| 64 KB | 1 | no | on | tern |"), "{md}");
    assert!(md.contains("cgi: a process per request"), "{md}");
    assert_all_stopped(&report);
}

#[test]
fn without_a_compiler_the_cgi_rows_are_skipped_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let mut config = SuiteConfig::new(Some(fake_tern(dir.path())));
    config.registry.retain_sections(&["cgi".to_owned()]);
    config.search_path = vec![empty.path().to_owned()];
    config.quiet = true;
    let report = run(&config, &StopHandle::new()).unwrap();
    assert!(report.rows.is_empty());
    assert!(report.servers.is_empty(), "nothing left to serve");
    for program in ["cgi-bin/hello.cgi", "cgi-bin/64k.cgi"] {
        let note = format!("{program}: no C compiler (cc) found; its 4 rows skipped");
        assert!(report.notes.contains(&note), "{:?}", report.notes);
    }
}

#[test]
fn nginx_runs_cgi_through_fcgiwrap_with_its_cpu() {
    let search = default_search_path();
    let has = |name: &str| search.iter().any(|d| d.join(name).is_file());
    let mut config = SuiteConfig::new(None);
    config.peers = vec![PeerKind::Nginx];
    config.registry.retain_sections(&["cgi".to_owned()]);
    config.registry.retain_matching("c=1, no keep-alive");
    config.duration = Duration::from_millis(150);
    config.warmup = Duration::from_millis(50);
    config.timeout = Duration::from_secs(3);
    config.quiet = true;
    let report = run(&config, &StopHandle::new()).unwrap();
    if !(has("nginx") && has("cc")) {
        return; // skipped with notes, as the tests above show
    }
    if !has("fcgiwrap") {
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.contains("fcgiwrap not installed")),
            "{:?}",
            report.notes
        );
        return;
    }
    assert_eq!(report.servers.len(), 1, "{:?}", report.notes);
    assert_eq!(report.rows.len(), 2);
    for row in &report.rows {
        let cell = &row.cells[0];
        assert_eq!(cell.gateway.as_deref(), Some("fcgiwrap"));
        assert!(cell.note.is_none() && cell.errors == 0, "{cell:?}");
        assert!(cell.responses > 0);
    }
    assert_eq!(report.footnotes.len(), 1);
    assert_eq!(report.footnotes[0].section, "cgi");
    let md = table::markdown(&report);
    assert!(md.contains("| nginx+fcgiwrap |"), "{md}");
    assert!(md.contains("peer-baseline.md §2.6"), "{md}");
    assert_all_stopped(&report);
    // fcgiwrap went with it: no process of ours still holds a suite socket.
    let leftover = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("cmdline")).ok())
        .any(|c| c.contains("tern-suite-") && c.contains("fcgiwrap.sock"));
    assert!(!leftover, "fcgiwrap still runs");
}
