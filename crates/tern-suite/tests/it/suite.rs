//! `tern suite`: servers started on loopback, measured row by row, stopped.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use tern_bench::StopHandle;
use tern_suite::peer::PeerKind;
use tern_suite::{default_search_path, run, table, SuiteConfig, SuiteReport};

fn quick(mut c: SuiteConfig) -> SuiteConfig {
    c.registry.retain_sections(&["static".to_owned()]);
    c.registry.retain_matching("0 KB");
    c.duration = Duration::from_millis(150);
    c.warmup = Duration::from_millis(50);
    c.timeout = Duration::from_secs(3);
    c.quiet = true;
    c
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

/// Every server and every backend it used were stopped.
fn assert_all_stopped(r: &SuiteReport) {
    for s in &r.servers {
        assert!(!alive(s.pid), "{} (pid {}) still runs", s.name, s.pid);
        for b in &s.backends {
            assert!(
                !alive(b.pid),
                "{}'s {} (pid {}) still runs",
                s.name,
                b.name,
                b.pid
            );
        }
    }
}

/// A stand-in for tern: a script that takes tern's `serve --config FILE
/// [--no-cache]`, reads the TOML the suite wrote (listener, site root,
/// routes) and serves it with Python's http.server, running the programs of
/// the CGI and CGIplus routes as CGI (forked and waited for, like tern; the
/// suite's CGIplus program answers as CGI without CGIPLUSEOF), noting its
/// arguments and every route (handler, prefix or extension, and where it
/// goes). FastCGI and engine routes are noted, not served. A listener with
/// `[listen.tls]` is served over TLS with its certificate (Python's ssl,
/// which resumes sessions).
fn fake_tern(dir: &Path) -> std::path::PathBuf {
    fake_tern_speaking_tls(dir, true)
}

/// The stand-in, serving its TLS listeners as told or, with `tls` false,
/// as plain HTTP (a server whose TLS is broken).
fn fake_tern_speaking_tls(dir: &Path, tls: bool) -> std::path::PathBuf {
    let script = dir.join("tern");
    let log = dir.join("args.log");
    std::fs::write(
        &script,
        format!(
            r#"#!/usr/bin/env python3
# serve --config FILE [--no-cache]
import http.server, os, ssl, sys, threading, tomllib
args = sys.argv[1:]
assert args[:2] == ["serve", "--config"], args
with open(args[2], "rb") as f:
    conf = tomllib.load(f)
site = conf["site"][0]
root = site["root"]
def describe(r):
    where = r.get("prefix") or "*." + r.get("extension", "")
    to = r.get("connect") or r.get("dir") or " ".join(r.get("command", []))
    return " | %s %s -> %s" % (r["handler"], where, to)
routes = [r for r in site.get("route", [])
          if r.get("handler") in ("cgi", "cgiplus") and "prefix" in r
          and "engine" not in r and "interpreter" not in r]
with open("{}", "a") as f:
    f.write(" ".join(args) + "".join(describe(r) for r in site.get("route", [])) + "\n")
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
servers = []
for listen in conf["listen"]:
    host, port = listen["address"].rsplit(":", 1)
    server = Server((host, int(port)), Handler)
    if "tls" in listen and {}:
        pair = listen["tls"]["certificates"][0]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pair["cert"], pair["key"])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    servers.append(server)
for server in servers[1:]:
    threading.Thread(target=server.serve_forever, daemon=True).start()
servers[0].serve_forever()
"#,
            log.display(),
            if tls { "True" } else { "False" }
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
    let mut rows = tern_suite::row::Registry::new();
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
    // fcgiwrap is nginx's backend, and went with it.
    assert_eq!(report.servers[0].backends[0].name, "fcgiwrap");
    assert!(md.contains(", with fcgiwrap)"), "{md}");
    assert_all_stopped(&report);
}

/// Live processes whose command line holds `text` (a temp dir's path).
fn processes_of(text: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let pid = e.file_name().to_string_lossy().parse::<u32>();
            pid.is_ok_and(alive)
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("cmdline")).ok())
        .filter(|c| c.contains(text))
        .count()
}

fn has(name: &str) -> bool {
    default_search_path().iter().any(|d| d.join(name).is_file())
}

#[test]
fn persistent_rows_give_tern_a_route_for_each_way_and_a_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = SuiteConfig::new(Some(fake_tern(dir.path())));
    config.registry.retain_sections(&["persistent".to_owned()]);
    config.registry.retain_matching("c=1, no keep-alive");
    config.registry.retain_matching("\"Hello!\"");
    config.duration = Duration::from_millis(150);
    config.warmup = Duration::from_millis(50);
    config.timeout = Duration::from_secs(3);
    config.quiet = true;
    let report = run(&config, &StopHandle::new()).unwrap();
    if !has("cc") {
        assert!(report.rows.len() <= 2, "{:?}", report.notes);
        return;
    }
    assert_eq!(report.servers.len(), 1, "{:?}", report.notes);
    let args = std::fs::read_to_string(dir.path().join("args.log")).unwrap();
    let line = args.lines().next().unwrap();
    assert!(line.contains(" | cgi /cgi-bin -> /"), "{line}");
    assert!(line.contains(" | cgiplus /cgiplus-bin -> /"), "{line}");
    assert!(line.contains("/www/cgiplus-bin"), "{line}");
    let libfcgi = Path::new(tern_suite::fcgi_app::HEADER).is_file();
    if libfcgi {
        // tern's own responder, in its own directory, and the one it spawns.
        assert!(
            line.contains(" | fastcgi /fcgi -> unix:/")
                && line.contains("/servers/tern-cache-on/fcgi-app.sock"),
            "{line}"
        );
        assert!(line.contains(" | fastcgi /fcgi-spawn -> /"), "{line}");
        assert!(line.contains("/bin/fcgi-app"), "{line}");
    } else {
        assert!(
            report.notes.iter().any(|n| n.contains("libfcgi-dev")),
            "{:?}",
            report.notes
        );
    }
    // The stand-in runs both ways of the C program as CGI: both measured.
    for case in ["\"Hello!\" CGI", "\"Hello!\" CGIplus"] {
        let row = report.rows.iter().find(|r| r.row.case == case).unwrap();
        let cell = &row.cells[0];
        assert!(cell.note.is_none(), "{case}: {:?}", cell.note);
        assert!(cell.responses > 0 && cell.errors == 0, "{cell:?}");
    }
    let md = table::markdown(&report);
    assert!(md.contains("## persistent"), "{md}");
    assert!(
        md.contains("| \"Hello!\" CGIplus | 1 | no | on | tern |"),
        "{md}"
    );
    assert!(
        md.contains("Note: req/s of \"Hello!\" CGIplus over \"Hello!\" CGI: tern "),
        "{md}"
    );
    if libfcgi {
        let names: Vec<&str> = report.servers[0]
            .backends
            .iter()
            .map(|b| b.name.as_str())
            .collect();
        assert_eq!(names, ["fcgi-app"], "its own responder");
        assert!(md.contains(", with fcgi-app)"), "{md}");
    }
    assert_all_stopped(&report);
}

#[test]
fn each_server_gets_its_own_responder_counted_in_its_cpu() {
    use tern_suite::backends::Backends;
    use tern_suite::row::Feature;
    use tern_suite::server::RunningServer;
    use tern_suite::spec::{ServerKind, ServerSpec};
    use tern_suite::workdir::Workdir;

    let dir = tempfile::tempdir().unwrap();
    let cc = default_search_path()
        .into_iter()
        .map(|d| d.join("cc"))
        .find(|p| p.is_file());
    let work = Workdir::create(&[], cc.as_deref()).unwrap();
    let kind = ServerKind::Tern {
        binary: fake_tern(dir.path()),
    };
    let mut notes = Vec::new();
    let (backends, lost) = Backends::start(
        &[Feature::FastCgi],
        std::slice::from_ref(&kind),
        &work,
        &default_search_path(),
        &mut notes,
    );
    if !lost.is_empty() {
        // No compiler or no libfcgi-dev: the rows go, with this reason.
        assert!(lost[0].why.starts_with("FastCGI responder: "), "{lost:?}");
        return;
    }
    let spec = ServerSpec::variants(kind.clone())
        .remove(0)
        .with_features(&backends.available(&[Feature::FastCgi], &kind));
    assert_eq!(spec.features, [Feature::FastCgi]);
    let program = match &kind {
        ServerKind::Tern { binary } => binary.clone(),
        ServerKind::Peer(_) => unreachable!(),
    };
    let first = RunningServer::start(&spec, &program, &work, &backends).unwrap();
    let roots = first.cpu_roots(Feature::FastCgi);
    assert_eq!(roots.len(), 2, "the server and its responder");
    assert_eq!(roots[0], first.pid());
    let cmdline = std::fs::read_to_string(format!("/proc/{}/cmdline", roots[1])).unwrap();
    assert!(cmdline.contains("/bin/fcgi-app"), "{cmdline}");
    assert_eq!(first.cpu_roots(Feature::StaticFiles), [first.pid()]);
    let responders = work.path().join("bin/fcgi-app").display().to_string();
    assert_eq!(processes_of(&responders), 4, "4 processes");
    drop(first);
    assert_eq!(processes_of(&responders), 0, "stopped with its server");
}

#[test]
fn nginx_serves_fastcgi_and_php_from_its_own_backends() {
    let mut config = SuiteConfig::new(None);
    config.peers = vec![PeerKind::Nginx];
    let mut registry = tern_suite::row::Registry::persistent();
    registry.append(tern_suite::row::Registry::engines());
    registry.retain_matching("c=1, no keep-alive");
    config.registry = registry;
    config.duration = Duration::from_millis(150);
    config.warmup = Duration::from_millis(50);
    config.timeout = Duration::from_secs(3);
    config.quiet = true;
    let report = run(&config, &StopHandle::new()).unwrap();
    let ready = ["nginx", "cc", "fcgiwrap"].iter().all(|p| has(p))
        && Path::new(tern_suite::fcgi_app::HEADER).is_file()
        && tern_suite::php::find_fpm(&default_search_path()).is_some();
    if !ready {
        return; // skipped with notes, as the tests above show
    }
    assert_eq!(report.servers.len(), 1, "{:?}", report.notes);
    let cases: Vec<&str> = report
        .rows
        .iter()
        .filter(|r| !r.cells.is_empty())
        .map(|r| r.row.case.as_str())
        .collect();
    // nginx: CGI through fcgiwrap, FastCGI and php-fpm; not tern's own ways.
    assert_eq!(
        cases,
        [
            "\"Hello!\" CGI",
            "\"Hello!\" FastCGI",
            "64 KB CGI",
            "64 KB FastCGI",
            "face2face.pl CGI",
            "face2face.php php-fpm",
            "php_info.php php-fpm"
        ],
        "{:?}",
        report.notes
    );
    for row in report.rows.iter().filter(|r| !r.cells.is_empty()) {
        let cell = &row.cells[0];
        assert!(
            cell.note.is_none() && cell.errors == 0,
            "{}: {cell:?}",
            row.row.case
        );
        assert!(cell.responses > 0 && cell.server_cpu_s.is_some());
    }
    assert!(report
        .notes
        .contains(&"nginx: no php-cgi; those rows skipped".to_owned()));
    assert_all_stopped(&report);
    let names: Vec<&str> = report.servers[0]
        .backends
        .iter()
        .map(|b| b.name.as_str())
        .collect();
    assert_eq!(names, ["fcgiwrap", "fcgi-app", "php-fpm"]);
}

#[test]
fn ssl_rows_measure_each_server_plain_and_over_tls_with_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(SuiteConfig::new(Some(fake_tern(dir.path()))));
    config.registry = tern_suite::row::Registry::ssl();
    config.registry.retain_matching("8 KB file");
    config.registry.retain_matching("c=1,");
    config.peers = vec![PeerKind::Nginx];
    let report = run(&config, &StopHandle::new()).unwrap();
    // Plain, TLS full, TLS resumed, plain keep-alive, TLS keep-alive.
    assert_eq!(report.rows.len(), 5, "{:?}", report.notes);
    let nginx = PeerKind::Nginx.find(&default_search_path()).is_some();
    for row in &report.rows {
        let servers: Vec<&str> = row.cells.iter().map(|c| c.server.as_str()).collect();
        assert_eq!(
            servers,
            if nginx {
                vec!["tern", "nginx"]
            } else {
                vec!["tern"]
            },
            "{:?}",
            report.notes
        );
        for cell in &row.cells {
            assert!(
                cell.note.is_none() && cell.errors == 0 && cell.responses > 0,
                "{}: {cell:?}",
                row.row.name()
            );
            // Over TLS a new connection per request makes a handshake per
            // request (and the stand-in's HTTP/1.0 keeps no connection).
            let tls = row.row.tls != tern_suite::row::TlsMode::Off;
            if !tls || !row.row.keepalive {
                assert_eq!(
                    cell.cpu_us_per_handshake.is_some(),
                    tls,
                    "{}: {cell:?}",
                    row.row.name()
                );
            }
        }
    }
    let md = table::markdown(&report);
    for line in [
        "| 8 KB file | 1 | no | on | tern |",
        "| 8 KB file over TLS (full handshakes) | 1 | no | on | tern |",
        "| 8 KB file over TLS (resumed) | 1 | no | on | tern |",
        "| 8 KB file over TLS | 1 | yes | on | tern |",
    ] {
        assert!(md.contains(line), "{line}\n{md}");
    }
    let ratio = report
        .footnotes
        .iter()
        .find(|f| f.section == "ssl")
        .unwrap_or_else(|| panic!("no TLS ratio: {md}"));
    assert!(
        ratio
            .text
            .starts_with("req/s of 8 KB file over TLS over 8 KB file: tern "),
        "{}",
        ratio.text
    );
    for load in [
        "(c=1, full handshakes)",
        "(c=1, resumed)",
        "(c=1, keep-alive)",
    ] {
        assert!(ratio.text.contains(load), "{load}: {}", ratio.text);
    }
    if nginx {
        assert!(ratio.text.contains("; nginx "), "{}", ratio.text);
    }
    assert_all_stopped(&report);
}

#[test]
fn a_server_whose_tls_fails_gets_a_note_on_its_tls_rows_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = quick(SuiteConfig::new(Some(fake_tern_speaking_tls(
        dir.path(),
        false,
    ))));
    config.registry = tern_suite::row::Registry::ssl();
    config.registry.retain_matching("0 KB file");
    config.registry.retain_matching("c=1, no keep-alive");
    let report = run(&config, &StopHandle::new()).unwrap();
    assert_eq!(report.rows.len(), 3, "{:?}", report.notes);
    for row in &report.rows {
        let cell = &row.cells[0];
        if row.row.tls == tern_suite::row::TlsMode::Off {
            assert!(cell.note.is_none() && cell.responses > 0, "{cell:?}");
        } else {
            let note = cell.note.as_deref().unwrap_or_default();
            assert!(
                note.contains("https://127.0.0.1:") && note.contains("TLS handshake failed"),
                "{}: {cell:?}",
                row.row.name()
            );
        }
    }
    assert_all_stopped(&report);
}

#[test]
fn webstone_replays_the_model_against_every_way_the_server_serves() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = SuiteConfig::new(Some(fake_tern(dir.path())));
    config.registry.retain_sections(&["webstone".to_owned()]);
    config.duration = Duration::from_secs(2);
    config.warmup = Duration::from_millis(200);
    config.timeout = Duration::from_secs(3);
    config.quiet = true;
    config.webstone.sessions_per_second = 20.0;
    config.webstone.think_scale = 0.05;
    let report = run(&config, &StopHandle::new()).unwrap();
    assert!(report.rows.is_empty(), "its rows are checked, not measured");
    assert_eq!(report.servers.len(), 1, "cache on only: {:?}", report.notes);
    let w = report.webstone.as_ref().expect("the section ran");
    assert_eq!(w.model, tern_suite::webstone::BUNDLED_NAME);
    assert_eq!(w.dynamic_classes.len(), 2, "the two searches");
    assert_eq!(w.static_classes.len(), 8);
    // The stand-in serves files and CGI (the report's Perl scripts, and
    // CGIplus as CGI); not the Perl engine, FastCGI nor WebAssembly, whose
    // check fails: those are skipped with a note.
    let ways: Vec<&str> = w.rows.iter().map(|r| r.way.as_str()).collect();
    let perl = [
        "static",
        "CGI trivial.pl",
        "CGI counter.pl",
        "CGI search.pl",
    ];
    let with_cc = [&perl[..], &["CGIplus Hello! (C)"]].concat();
    let expected: &[&str] = if has("cc") { &with_cc } else { &perl };
    assert_eq!(ways, expected, "{:?}", report.notes);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("webstone: tern WebAssembly Hello! (WAT): answered 404")),
        "{:?}",
        report.notes
    );
    for r in &w.rows {
        assert_eq!(r.server, "tern");
        assert!(r.note.is_none(), "{}: {:?}", r.way, r.note);
        assert!(r.all.pages > 0 && r.all.errors == 0, "{r:?}");
        assert!(r.static_pages.pages > 0, "{r:?}");
        assert!(r.dynamic_pages.pages > 0, "{r:?}");
        assert_eq!(
            r.all.pages,
            r.static_pages.pages + r.dynamic_pages.pages,
            "{r:?}"
        );
        assert!(r.request_errors == 0 && r.responses >= r.all.pages, "{r:?}");
        assert!(r.cpu_us_per_request.is_some_and(|c| c > 0.0), "{r:?}");
    }
    // The baseline's dynamic pages are one small file each.
    let baseline = &w.rows[0].dynamic_pages;
    assert!(baseline.p50_ms.is_some_and(|p| p < 250.0), "{baseline:?}");

    let md = table::markdown(&report);
    assert!(md.contains("\n## webstone\n"), "{md}");
    assert!(md.contains("Model: bundled news site."), "{md}");
    assert!(md.contains("| tern | static | "), "{md}");
    let json = table::json(&report);
    assert!(json.contains("\"webstone\": {"), "{json}");
    let back: SuiteReport = serde_json::from_str(&json).unwrap();
    let back = back.webstone.unwrap();
    assert_eq!(back.rows.len(), w.rows.len());
    for (b, r) in back.rows.iter().zip(&w.rows) {
        assert_eq!((&b.way, b.all.pages), (&r.way, r.all.pages));
    }
    assert_all_stopped(&report);
}
