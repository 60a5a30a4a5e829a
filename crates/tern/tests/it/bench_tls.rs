//! `tern bench` over TLS against a real tern TLS listener: requests complete,
//! handshakes are counted full or resumed as `--no-resume` says, HTTP/2 by
//! ALPN works, and a certificate the bench does not trust is an error that
//! names the URL and the reason.

use std::process::{Command, Output, Stdio};

use crate::tls::{tls_config, Ca, ECDSA};
use crate::{docroot, Tern, BIN};

/// A TLS listener serving an 8 KB index with a certificate for 127.0.0.1
/// issued by the CA "one" (`one-ca.pem` in its directory).
fn tls_server() -> Tern {
    let dir = docroot(&[("index.html", &[b'x'; 8192])]);
    let ca = Ca::new(dir.path(), "one");
    ca.issue(dir.path(), "a", &["127.0.0.1"], ECDSA);
    Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), dir)
}

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(["-q", "-s", "10s"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run tern bench")
}

/// `tern bench --json` with `args`: the result, after checking it ran.
fn bench_json(t: &Tern, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = bench(&all);
    assert!(
        out.status.success(),
        "tern bench {args:?} failed: {}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        t.log()
    );
    serde_json::from_slice(&out.stdout).expect("tern bench --json prints JSON")
}

fn url(t: &Tern) -> String {
    format!("https://127.0.0.1:{}/", t.addr().port())
}

/// (responses, errors, full handshakes, resumed handshakes).
fn counts(r: &serde_json::Value) -> (u64, u64, u64, u64) {
    let c = &r["counts"];
    let errors: u64 = ["connect", "timeout", "reset", "protocol"]
        .iter()
        .map(|k| c["errors"][k].as_u64().unwrap())
        .sum();
    (
        c["responses"].as_u64().unwrap(),
        errors,
        c["handshakes"]["full"].as_u64().unwrap(),
        c["handshakes"]["resumed"].as_u64().unwrap(),
    )
}

#[test]
fn bench_over_tls_completes_every_request_and_resumes_sessions_unless_told_not_to() {
    let t = tls_server();
    let ca = t.file("one-ca.pem");
    let ca = ca.to_str().unwrap();
    let u = url(&t);

    // A new connection per request, resumption on: the first handshake is
    // full, the rest resume the session it left.
    let r = bench_json(&t, &["--cacert", ca, "-n", "40", "-c", "1", &u]);
    let (responses, errors, full, resumed) = counts(&r);
    assert_eq!((responses, errors), (40, 0), "{r}");
    assert_eq!(full + resumed, 40, "a handshake per request: {r}");
    assert!(full >= 1 && resumed >= 30, "sessions were not resumed: {r}");
    assert_eq!(r["document_length"].as_u64(), Some(8192));
    // What was negotiated: TLS 1.3, the server's first suite; no SNI for an
    // IP address.
    assert_eq!(r["tls"]["protocol"], "TLSv1.3", "{r}");
    assert_eq!(r["tls"]["cipher"], "TLS13_AES_128_GCM_SHA256", "{r}");
    assert!(r["tls"]["server_name"].is_null(), "{r}");

    // --no-resume: every handshake is full.
    let r = bench_json(
        &t,
        &["--cacert", ca, "--no-resume", "-n", "30", "-c", "3", &u],
    );
    assert_eq!(counts(&r), (30, 0, 30, 0), "{r}");

    // TLS 1.2 resumes too.
    let r = bench_json(
        &t,
        &["--cacert", ca, "--tls-version", "1.2", "-n", "20", &u],
    );
    let (responses, errors, full, resumed) = counts(&r);
    assert_eq!((responses, errors, full + resumed), (20, 0, 20), "{r}");
    assert!(resumed >= 15, "TLS 1.2 sessions were not resumed: {r}");
    assert_eq!(r["tls"]["protocol"], "TLSv1.2", "{r}");
    assert_eq!(
        r["tls"]["cipher"], "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "{r}"
    );

    // ab's report carries ab's TLS lines.
    let out = bench(&["--format", "ab", "--cacert", ca, "-n", "5", &u]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("SSL/TLS Protocol:       TLSv1.3,TLS13_AES_128_GCM_SHA256,128,128\n"),
        "{text}"
    );

    // Keep-alive: one handshake per connection.
    let r = bench_json(&t, &["--cacert", ca, "-k", "-n", "50", "-c", "2", &u]);
    let (responses, errors, full, resumed) = counts(&r);
    assert_eq!((responses, errors), (50, 0), "{r}");
    assert_eq!(full + resumed, 2, "{r}");

    // --insecure trusts nothing but still completes the handshake.
    let r = bench_json(&t, &["--insecure", "--no-resume", "-n", "5", &u]);
    assert_eq!(counts(&r), (5, 0, 5, 0), "{r}");
}

#[test]
fn bench_speaks_h2_over_tls_by_alpn() {
    let t = tls_server();
    let ca = t.file("one-ca.pem");
    let r = bench_json(
        &t,
        &[
            "--cacert",
            ca.to_str().unwrap(),
            "--http2",
            "--streams",
            "4",
            "-n",
            "60",
            "-c",
            "2",
            &url(&t),
        ],
    );
    let (responses, errors, full, resumed) = counts(&r);
    assert_eq!((responses, errors), (60, 0), "{r}");
    assert_eq!(full + resumed, 2, "one connection per -c: {r}");
    assert!(
        r["plan"].as_str().unwrap().contains("h2 with 4 streams"),
        "{r}"
    );
}

#[test]
fn bench_names_the_url_and_the_reason_of_an_untrusted_certificate() {
    let t = tls_server();
    let other = tempfile::tempdir().unwrap();
    Ca::new(other.path(), "other");
    let other_ca = other.path().join("other-ca.pem");
    let u = url(&t);
    let out = bench(&["--cacert", other_ca.to_str().unwrap(), "-n", "5", &u]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&u) && stderr.contains("invalid peer certificate"),
        "{stderr}"
    );

    let missing = other.path().join("missing.pem");
    let out = bench(&["--cacert", missing.to_str().unwrap(), "-n", "5", &u]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&*missing.to_string_lossy()), "{stderr}");
}

#[test]
fn suite_ssl_rows_run_tern_plain_and_over_tls_with_the_ratio() {
    let out = Command::new(BIN)
        .args(["suite", "-q", "--tern", BIN, "--sections", "ssl"])
        .args(["--only", "8 KB file", "-d", "300ms", "--warmup", "100ms"])
        .stdin(Stdio::null())
        .output()
        .expect("run tern suite");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "| 8 KB file | 1 | no | on | tern |",
        "| 8 KB file over TLS (full handshakes) | 10 | no | on | tern |",
        "| 8 KB file over TLS (resumed) | 1 | no | on | tern |",
        "| 8 KB file over TLS | 10 | yes | on | tern |",
        "Note: req/s of 8 KB file over TLS over 8 KB file: tern ",
        "(c=10, full handshakes)",
        "/handshake |",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
    assert!(!text.contains("[1]"), "a cell has a note:\n{text}");
}
