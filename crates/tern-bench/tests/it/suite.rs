//! `tern suite`: servers started on loopback, measured row by row, stopped.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use tern_bench::suite::peer::PeerKind;
use tern_bench::suite::{default_search_path, run, table, SuiteConfig, SuiteReport};
use tern_bench::StopHandle;

fn quick(mut c: SuiteConfig) -> SuiteConfig {
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

/// A stand-in for tern: a script that takes tern's `serve` arguments and
/// serves the docroot with Python's http.server, noting its arguments.
fn fake_tern(dir: &Path) -> std::path::PathBuf {
    let script = dir.join("tern");
    let log = dir.join("args.log");
    std::fs::write(
        &script,
        format!(
            r#"#!/usr/bin/env python3
# serve --listen 127.0.0.1:PORT --root DIR [--no-cache]
import http.server, sys
args = sys.argv[1:]
with open("{}", "a") as f:
    f.write(" ".join(args) + "\n")
root = args[4]
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128  # 5 by default: 10 connections would meet SYN retries
Server(("127.0.0.1", int(args[2].rsplit(":", 1)[1])), Handler).serve_forever()
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
        .all(|l| l.starts_with("serve --listen 127.0.0.1:") && l.contains(" --root /")));
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
