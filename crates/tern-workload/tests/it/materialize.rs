//! Document roots materialized from models: sizes exact, traversal
//! refused, scripts that Perl runs, and a configuration tern accepts.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use tern_accesslog::LogFormat;
use tern_workload::materialize::{materialize, Cost};
use tern_workload::{
    extract, Arrivals, FileRef, Model, Options, PageClass, Quantiles, Rules, SessionClass, Source,
    Summary, START,
};

use crate::extract::write_log;
use crate::gen::{self, Precision};

fn file(path: &str, bytes: u64) -> FileRef {
    FileRef {
        path: path.into(),
        method: "GET".into(),
        bytes,
        status: 200,
        dynamic: tern_workload::is_dynamic("GET", path),
    }
}

/// A model of one page holding `files`.
fn model_of(files: Vec<FileRef>) -> Model {
    Model {
        source: Source {
            files: vec!["hand".into()],
            format: "combined".into(),
            lines: 1,
            malformed: 0,
            first: "2026-11-24T00:00:00Z".into(),
            last: "2026-11-24T00:00:00Z".into(),
        },
        rules: Rules {
            page_gap: 15.0,
            session_gap: 300.0,
            by_agent: false,
        },
        summary: Summary {
            users: 1,
            sessions: 1,
            pages: 1,
            requests: files.len() as u64,
            page_classes_before: 1,
            reductions: vec![],
        },
        pages: vec![PageClass {
            id: "p1".into(),
            count: 1,
            files,
        }],
        sessions: vec![SessionClass {
            pages: vec!["p1".into()],
            count: 1,
        }],
        transitions: BTreeMap::from([(START.into(), BTreeMap::from([("p1".into(), 1.0)]))]),
        think_time: Quantiles { points: vec![0.0] },
        session_pages: Quantiles { points: vec![1.0] },
        arrivals: Arrivals {
            rate: 1.0,
            by_hour: vec![0.0; 24],
        },
    }
}

/// Runs a CGI script with perl; its output split into head and body.
fn run_script(script: &Path, query: &str) -> (String, Vec<u8>) {
    let out = Command::new("perl")
        .arg(script)
        .env("QUERY_STRING", query)
        .env("REQUEST_METHOD", "GET")
        .output()
        .expect("perl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let split = out
        .stdout
        .windows(2)
        .position(|w| w == b"\n\n")
        .expect("a CGI head");
    let head = String::from_utf8(out.stdout[..split].to_vec()).unwrap();
    (head, out.stdout[split + 2..].to_vec())
}

#[test]
fn a_materialized_root_matches_the_model_and_tern_accepts_its_routes() {
    let truth = gen::generate(20, Precision::Seconds, 4);
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(
        dir.path(),
        "access.log",
        &gen::render_all(&truth.records, LogFormat::Combined),
    );
    let model = extract(&[log], &Options::default()).unwrap().model;
    let root = dir.path().join("site");
    let done = materialize(&model, &root, Cost::Trivial).unwrap();
    assert!(done.rejected.is_empty(), "{:?}", done.rejected);
    let mut statics = 0;
    for f in model.pages.iter().flat_map(|p| &p.files) {
        if f.dynamic {
            continue;
        }
        statics += 1;
        let p = root.join("htdocs").join(f.path.trim_start_matches('/'));
        let body = std::fs::read(&p).unwrap();
        assert_eq!(body.len() as u64, f.bytes, "{}", f.path);
        if f.path.ends_with(".html") {
            assert!(body.starts_with(b"<!doctype html>"), "{}", f.path);
            assert!(body.ends_with(b"</html>\n"));
        }
    }
    // /logo.png is in every class but written once.
    assert_eq!(done.files, statics - (gen::classes().len() as u64 - 1));
    assert_eq!((done.scripts, done.dynamic_targets), (1, 1));

    let script = root.join("cgi-bin/cgi-bin_search.pl");
    let mode = std::fs::metadata(&script).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(std::fs::read_to_string(&script)
        .unwrap()
        .starts_with("#!/usr/bin/perl\n"));
    let (head, body) = run_script(&script, "q=s2");
    assert!(head.contains("Content-Type: text/html"), "{head}");
    assert_eq!(body.len(), 777);
    // An unknown query gets the size of the first one logged.
    assert_eq!(run_script(&script, "q=other").1.len(), 777);

    let paths = std::fs::read_to_string(root.join("paths.txt")).unwrap();
    assert!(
        paths.contains("/cgi-bin/search.pl?q=s2\tcgi-bin/cgi-bin_search.pl\n"),
        "{paths}"
    );
    assert!(
        paths.contains("/s0/index.html\thtdocs/s0/index.html\n"),
        "{paths}"
    );

    // tern's own loader (what `tern check` runs first) accepts the routes.
    let routes = root.join("routes.toml");
    let config = tern_config::load(&routes)
        .unwrap_or_else(|e| panic!("{e}\n{}", std::fs::read_to_string(&routes).unwrap()));
    let text = format!("{config:?}");
    assert!(
        text.contains("_tern_cgi") && text.contains("search"),
        "{text}"
    );
}

#[test]
fn traversal_and_nul_paths_are_refused_and_nothing_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("out");
    let model = model_of(vec![
        file("/ok.html", 300),
        file("/docs/", 50),
        file("/../escape.html", 10),
        file("/a/%2e%2e/%2E%2E/escape2.png", 10),
        file("/a%2f..%2f..%2fescape3", 10),
        file("/x%00y.png", 10),
        file("/cgi-bin/../../escape.cgi?x=1", 10),
        file("/%2e%2e/run.php?y=2", 10),
    ]);
    let done = materialize(&model, &root, Cost::Trivial).unwrap();
    let refused: Vec<&str> = done.rejected.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(refused.len(), 6, "{:?}", done.rejected);
    assert!(done.rejected.iter().any(|r| r.reason.contains("NUL")));
    assert_eq!(done.files, 2);
    assert_eq!(
        std::fs::metadata(root.join("htdocs/ok.html"))
            .unwrap()
            .len(),
        300
    );
    assert_eq!(
        std::fs::metadata(root.join("htdocs/docs/index.html"))
            .unwrap()
            .len(),
        50
    );
    // Nothing but `out` in the temporary directory, nothing named escape
    // anywhere.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("out")]);
    fn walk(p: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            out.push(e.path().display().to_string());
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), out);
            }
        }
    }
    let mut all = Vec::new();
    walk(dir.path(), &mut all);
    assert!(all.iter().all(|p| !p.contains("escape")), "{all:?}");
    let paths = std::fs::read_to_string(root.join("paths.txt")).unwrap();
    assert!(
        paths.contains("/../escape.html\t# refused: a `..` segment"),
        "{paths}"
    );
}

#[test]
fn a_directory_that_holds_files_is_not_written_into() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
    let e = materialize(
        &model_of(vec![file("/a.html", 1)]),
        dir.path(),
        Cost::Trivial,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not empty"), "{e}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn counter_scripts_count_under_a_lock_and_cpu_scripts_search_a_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("counter");
    let mut post = file("/form/submit", 64);
    post.method = "POST".into();
    post.dynamic = true;
    let model = model_of(vec![
        file("/index.html", 10),
        file("/cgi-bin/hits", 3000),
        post,
    ]);
    let done = materialize(&model, &root, Cost::Counter).unwrap();
    assert_eq!(done.scripts, 2);
    let script = root.join("cgi-bin/cgi-bin_hits");
    for _ in 0..3 {
        assert_eq!(run_script(&script, "").1.len(), 3000);
    }
    let count = std::fs::read_to_string(root.join("state/cgi-bin_hits.count")).unwrap();
    assert_eq!(count, "3\n");
    assert_eq!(
        run_script(&root.join("cgi-bin/form_submit"), "").1.len(),
        64
    );

    let root = dir.path().join("cpu");
    materialize(&model, &root, Cost::Cpu).unwrap();
    let corpus = std::fs::metadata(root.join("state/corpus.txt"))
        .unwrap()
        .len();
    assert!(corpus >= 4 << 20, "{corpus}");
    let started = std::time::Instant::now();
    assert_eq!(
        run_script(&root.join("cgi-bin/cgi-bin_hits"), "").1.len(),
        3000
    );
    eprintln!("a cpu script took {:?}", started.elapsed());
    let routes = root.join("routes.toml");
    tern_config::load(&routes)
        .unwrap_or_else(|e| panic!("{e}\n{}", std::fs::read_to_string(&routes).unwrap()));
}

/// Every script under `root/cgi-bin`, run with `query`: none may print
/// `INJECTED`.
fn no_script_injects(root: &Path, query: &str) {
    for e in std::fs::read_dir(root.join("cgi-bin")).unwrap() {
        let out = Command::new("perl")
            .arg(e.unwrap().path())
            .env("QUERY_STRING", query)
            .env("REQUEST_METHOD", "GET")
            .output()
            .expect("perl runs");
        let all = [out.stdout, out.stderr].concat();
        assert!(
            !String::from_utf8_lossy(&all).contains("INJECTED"),
            "{}",
            String::from_utf8_lossy(&all)
        );
    }
}

#[test]
fn a_logged_path_cannot_inject_perl_or_break_the_listing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("out");
    let evil = "/cgi-bin/x%0ABEGIN{print(\"INJECTED\\n\")}%0A%23.pl";
    let model = model_of(vec![
        file("/index.html", 10),
        file(evil, 10),
        file("/cgi-bin/y%0D%0AEND{print(\"INJECTED\")}.pl", 10),
        file("/tab%09ed.png", 10),
        file("/del%7F.png", 10),
        file("/nl\nINJECTED\tx.png", 10),
        // Quotes, sigils and backslashes in a query stay data.
        file("/cgi-bin/q.pl?a='$x@y\"\\\\%{z}", 77),
    ]);
    let done = materialize(&model, &root, Cost::Trivial).unwrap();
    let refused: Vec<&str> = done.rejected.iter().map(|r| r.target.as_str()).collect();
    for t in [
        evil,
        "/cgi-bin/y%0D%0AEND{print(\"INJECTED\")}.pl",
        "/tab%09ed.png",
        "/del%7F.png",
        "/nl\nINJECTED\tx.png",
    ] {
        assert!(refused.contains(&t), "{t} in {:?}", done.rejected);
    }
    assert!(done
        .rejected
        .iter()
        .all(|r| r.reason.contains("control") || r.reason.contains("printable")));
    no_script_injects(&root, "");
    let (_, body) = run_script(&root.join("cgi-bin/cgi-bin_q.pl"), "a='$x@y\"\\\\%{z}");
    assert_eq!(body.len(), 77);
    // paths.txt: one line per entry, each a target (starting with /), a
    // tab and what became of it.
    let paths = std::fs::read_to_string(root.join("paths.txt")).unwrap();
    for line in paths.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.starts_with('/'), "{line:?} in\n{paths}");
        assert!(line.matches('\t').count() <= 2, "{line:?}");
    }
    // The refusals are printed escaped too.
    assert!(!done.to_string().contains("\nINJECTED"), "{done}");
    let routes = root.join("routes.toml");
    tern_config::load(&routes)
        .unwrap_or_else(|e| panic!("{e}\n{}", std::fs::read_to_string(&routes).unwrap()));
}

#[test]
fn sizes_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("out");
    let huge = tern_workload::materialize::MAX_FILE_BYTES + 1;
    let model = model_of(vec![
        file("/index.html", 10),
        file("/huge.iso", huge),
        file("/cgi-bin/huge.pl", 5 << 40),
        file("/cgi-bin/huge.pl?q=1", u64::MAX),
    ]);
    let done = materialize(&model, &root, Cost::Trivial).unwrap();
    assert_eq!(done.files, 1);
    assert_eq!(done.file_bytes, 10);
    let r = done
        .rejected
        .iter()
        .find(|r| r.target == "/huge.iso")
        .expect("refused");
    assert!(r.reason.contains("larger than"), "{}", r.reason);
    assert!(!root.join("htdocs/huge.iso").exists());
    let script = std::fs::read_to_string(root.join("cgi-bin/cgi-bin_huge.pl")).unwrap();
    assert!(!script.contains(&(5u64 << 40).to_string()), "{script}");
    assert!(!script.contains(&u64::MAX.to_string()), "{script}");
    assert!(script.contains(&tern_workload::materialize::MAX_FILE_BYTES.to_string()));
}
