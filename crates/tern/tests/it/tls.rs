//! TLS listeners, driven by real TLS clients (curl and `openssl s_client`):
//! certificates chosen by SNI and by key type, ALPN, session resumption,
//! what CGI programs see, plain HTTP sent to a TLS port, a handshake that
//! stalls, and certificates that cannot be used — refused by `tern check`
//! and, on reload, while the old one keeps serving.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

use crate::check::check;
use crate::{config, docroot, Tern, BIN};

/// A test CA, its root in `dir/name-ca.pem`.
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Ca {
    pub(crate) fn new(dir: &Path, name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("tern test CA {name}"));
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.join(format!("{name}-ca.pem")), issuer.pem()).unwrap();
        Ca { issuer }
    }

    /// A certificate for `names` with a key of `alg`, written to
    /// `dir/file.pem` and `dir/file.key`.
    pub(crate) fn issue(
        &self,
        dir: &Path,
        file: &str,
        names: &[&str],
        alg: &'static rcgen::SignatureAlgorithm,
    ) {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, format!("{file} {}", names[0]));
        let key = KeyPair::generate_for(alg).unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(dir.join(format!("{file}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{file}.key")), key.serialize_pem()).unwrap();
    }
}

impl Ca {
    /// A client certificate for `cn`, written to `dir/file.pem` and
    /// `dir/file.key`.
    fn issue_client(&self, dir: &Path, file: &str, cn: &str) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(dir.join(format!("{file}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{file}.key")), key.serialize_pem()).unwrap();
    }
}

pub(crate) const ECDSA: &rcgen::SignatureAlgorithm = &rcgen::PKCS_ECDSA_P256_SHA256;

/// A docroot whose index is `index`, with the CA "one" (`one-ca.pem`) and
/// its ECDSA certificate for `a.test` (`a.pem`, `a.key`).
fn site_for_a(index: &[u8]) -> (tempfile::TempDir, Ca) {
    let dir = docroot(&[("index.html", index)]);
    let ca = Ca::new(dir.path(), "one");
    ca.issue(dir.path(), "a", &["a.test"], ECDSA);
    (dir, ca)
}
const RSA: &rcgen::SignatureAlgorithm = &rcgen::PKCS_RSA_SHA256;

/// A TLS listener serving `{dir}/www` with the certificates `files` (each
/// `{dir}/F.pem` and `{dir}/F.key`), `tls_extra` in its tls table.
pub(crate) fn tls_config(files: &[&str], tls_extra: &str, top: &str, site_extra: &str) -> String {
    let certs = files
        .iter()
        .map(|f| format!("{{ cert = \"{{dir}}/{f}.pem\", key = \"{{dir}}/{f}.key\" }}"))
        .collect::<Vec<_>>()
        .join(", ");
    config(
        &format!("[listen.tls]\ncertificates = [{certs}]\n{tls_extra}\n{top}"),
        site_extra,
    )
}

/// curl, trusting `ca`, to `https://{name}:{port}{path}` reached at the
/// server's address; `-w` prints the HTTP version after the body.
fn curl(t: &Tern, ca: &Path, name: &str, path: &str, extra: &[&str]) -> Output {
    let port = t.addr().port();
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert"])
        .arg(ca)
        .arg("--resolve")
        .arg(format!("{name}:{port}:127.0.0.1"))
        .args(["-w", "\n%{http_version}"])
        .args(extra)
        .arg(format!("https://{name}:{port}{path}"))
        .stdin(Stdio::null())
        .output()
        .expect("run curl");
    out
}

/// Waits (at most 20 s) until curl trusting `ca` gets `a.test`'s index:
/// the server has taken a new certificate.
fn wait_until_trusted(t: &Tern, ca: &Path) {
    let until = Instant::now() + Duration::from_secs(20);
    while !curl(t, ca, "a.test", "/", &[]).status.success() {
        assert!(
            Instant::now() < until,
            "the new certificate is not served:\n{}",
            t.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn ok_body(out: &Output, t: &Tern) -> String {
    assert!(
        out.status.success(),
        "curl failed: {}\nlog:\n{}",
        String::from_utf8_lossy(&out.stderr),
        t.log()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `openssl s_client` to the server with `args`, sending `input`;
/// stdout and stderr together.
fn s_client(t: &Tern, args: &[&str], input: &str) -> (bool, String) {
    let mut child = Command::new("openssl")
        .arg("s_client")
        .arg("-connect")
        .arg(t.addr().to_string())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run openssl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn sni_chooses_the_certificate_and_alpn_the_protocol() {
    let (dir, ca) = site_for_a(b"hello over tls");
    ca.issue(dir.path(), "b", &["*.b.test", "b.test"], ECDSA);
    let t = Tern::start_in(BIN, &tls_config(&["a", "b"], "", "", ""), dir);
    let root = t.file("one-ca.pem");

    for name in ["a.test", "x.b.test", "b.test"] {
        let body = ok_body(&curl(&t, &root, name, "/", &["--http2"]), &t);
        assert_eq!(body, "hello over tls\n2", "{name}");
    }
    let body = ok_body(&curl(&t, &root, "a.test", "/", &["--http1.1"]), &t);
    assert_eq!(body, "hello over tls\n1.1");
    // A wildcard covers one label only.
    let out = curl(&t, &root, "y.x.b.test", "/", &[]);
    assert!(!out.status.success(), "a two-label name matched *.b.test");
}

#[test]
fn an_ecdsa_and_an_rsa_certificate_for_the_same_names_each_go_to_who_can_use_it() {
    let dir = docroot(&[("index.html", b"x")]);
    let ca = Ca::new(dir.path(), "one");
    ca.issue(dir.path(), "ec", &["a.test"], ECDSA);
    ca.issue(dir.path(), "rsa", &["a.test"], RSA);
    let t = Tern::start_in(BIN, &tls_config(&["ec", "rsa"], "", "", ""), dir);
    let cert_of = |sigalgs: &str| {
        let (ok, text) = s_client(
            &t,
            &["-servername", "a.test", "-tls1_3", "-sigalgs", sigalgs],
            "",
        );
        assert!(ok, "{sigalgs}: {text}\nlog:\n{}", t.log());
        text.lines()
            .find(|l| l.starts_with("subject="))
            .unwrap_or_else(|| panic!("no subject in {text}"))
            .to_owned()
    };
    assert!(cert_of("ecdsa_secp256r1_sha256").contains("ec a.test"));
    assert!(cert_of("rsa_pss_rsae_sha256").contains("rsa a.test"));
}

#[test]
fn unknown_names_get_the_first_certificate_or_are_refused() {
    let (dir, ca) = site_for_a(b"x");
    ca.issue(dir.path(), "b", &["b.test"], ECDSA);
    let t = Tern::start_in(BIN, &tls_config(&["a", "b"], "", "", ""), dir);
    let (ok, text) = s_client(&t, &["-servername", "unknown.test"], "");
    assert!(ok, "{text}");
    assert!(text.contains("subject=CN = a a.test"), "{text}");
    let (ok, text) = s_client(&t, &["-noservername"], "");
    assert!(ok && text.contains("subject=CN = a a.test"), "{text}");

    let (dir, _) = site_for_a(b"x");
    let t = Tern::start_in(
        BIN,
        &tls_config(&["a"], "unknown_names = \"refuse\"", "", ""),
        dir,
    );
    let (ok, text) = s_client(&t, &["-servername", "unknown.test"], "");
    assert!(!ok, "an unknown name was served:\n{text}");
    assert!(t.wait_log("TLS handshake failed"), "{}", t.log());
    // No name at all is refused too.
    let (ok, text) = s_client(&t, &["-noservername"], "");
    assert!(!ok, "a client without SNI was served:\n{text}");
    let (ok, text) = s_client(&t, &["-servername", "a.test"], "");
    assert!(ok, "{text}");
}

#[test]
fn modern_offers_tls13_only() {
    let (dir, _) = site_for_a(b"x");
    let t = Tern::start_in(
        BIN,
        &tls_config(&["a"], "profile = \"modern\"", "", ""),
        dir,
    );
    let (ok, _) = s_client(&t, &["-servername", "a.test", "-tls1_2"], "");
    assert!(!ok, "TLS 1.2 was accepted");
    let (ok, text) = s_client(&t, &["-servername", "a.test", "-tls1_3"], "");
    assert!(ok, "{text}");
}

#[test]
fn sessions_resume_over_tls12_and_tls13() {
    let (dir, _) = site_for_a(b"x");
    let admin = "[admin]\nlisten = \"127.0.0.1:0\"\nactivity_history = false\n";
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", admin, ""), dir);
    for version in ["-tls1_2", "-tls1_3"] {
        let session = t.file(&format!("session{version}"));
        let session = session.to_string_lossy();
        // A request, so that a TLS 1.3 ticket (sent after the handshake)
        // is read before the session is saved.
        let get = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
        let (ok, text) = s_client(
            &t,
            &[
                "-servername",
                "a.test",
                version,
                "-sess_out",
                &session,
                "-ign_eof",
            ],
            get,
        );
        assert!(ok && text.contains("New, "), "{version}: {text}");
        let (ok, text) = s_client(
            &t,
            &[
                "-servername",
                "a.test",
                version,
                "-sess_in",
                &session,
                "-ign_eof",
            ],
            get,
        );
        assert!(
            ok && text.contains("Reused, "),
            "{version}: not resumed:\n{text}"
        );
    }
    // A client that does not speak TLS, then the count of each kind.
    let plain = super::request(t.addr(), b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n").unwrap();
    assert_eq!(plain.status, 400);
    let text = super::observe::admin_get(t.admin_addr(), "/metrics", None).text();
    let count = |result: &str| {
        let line = format!("tern_tls_handshakes_total{{result=\"{result}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {line} in\n{text}"))
    };
    assert_eq!(
        (count("full"), count("resumed"), count("failed")),
        (2, 2, 1)
    );
}

#[test]
fn cgi_programs_see_https_and_the_ssl_variables() {
    let dir = docroot(&[("index.html", b"x")]);
    tern_testkit::install(
        &dir.path().join("cgi/env.cgi"),
        b"#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv\n",
        0o755,
    );
    let ca = Ca::new(dir.path(), "one");
    ca.issue(dir.path(), "a", &["a.test"], ECDSA);
    let route = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\n";
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", "", route), dir);
    let port = t.addr().port().to_string();
    let body = ok_body(
        &curl(
            &t,
            &t.file("one-ca.pem"),
            "a.test",
            "/cgi-bin/env.cgi",
            &["--tlsv1.3"],
        ),
        &t,
    );
    let env: Vec<(&str, &str)> = body.lines().filter_map(|l| l.split_once('=')).collect();
    let var = |n: &str| env.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
    assert_eq!(var("HTTPS"), Some("on"), "{body}");
    assert_eq!(var("REQUEST_SCHEME"), Some("https"));
    assert_eq!(var("SERVER_PORT"), Some(port.as_str()));
    assert_eq!(var("SSL_PROTOCOL"), Some("TLSv1.3"));
    assert_eq!(var("SSL_TLS_SNI"), Some("a.test"));
    assert!(
        var("SSL_CIPHER").is_some_and(|c| c.starts_with("TLS13_")),
        "{body}"
    );
}

#[test]
fn plain_http_sent_to_a_tls_port_is_answered_400_and_closed() {
    let (dir, _) = site_for_a(b"x");
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), dir);
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");
    assert!(answer.contains("use https://"), "{answer}");
    assert!(
        t.wait_log("plain HTTP request sent to a TLS listener"),
        "{}",
        t.log()
    );
}

#[test]
fn a_handshake_that_stalls_is_closed_within_the_header_read_timeout() {
    let (dir, _) = site_for_a(b"x");
    let t = Tern::start_in(
        BIN,
        &tls_config(&["a"], "", "[limits]\nheader_read_timeout = \"1s\"\n", ""),
        dir,
    );
    let mut s = TcpStream::connect(t.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // The start of a ClientHello record, and then nothing.
    s.write_all(&[22, 3, 1, 0, 200, 1, 0]).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 64];
    let n = tern_testkit::read_some(&mut s, &mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the server answered a stalled handshake");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        t.wait_log("TLS handshake not finished within header_read_timeout"),
        "{}",
        t.log()
    );
    // Others are served meanwhile and after.
    let (ok, text) = s_client(&t, &["-servername", "a.test"], "");
    assert!(ok, "{text}");
}

#[test]
fn check_names_file_line_and_key_of_a_key_that_does_not_match() {
    let (dir, ca) = site_for_a(b"x");
    ca.issue(dir.path(), "b", &["b.test"], ECDSA);
    let cfg = config(
        "[listen.tls]\ncertificates = [\n  { cert = \"{dir}/a.pem\", key = \"{dir}/b.key\" },\n]\n",
        "",
    )
    .replace("{dir}", &dir.path().to_string_lossy());
    let file = dir.path().join("tern.toml");
    std::fs::write(&file, cfg).unwrap();
    let out = check(&file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("tern.toml:5: listen[0].tls.certificates[0]"),
        "{err}"
    );
    assert!(err.contains("does not belong to the certificate"), "{err}");
}

#[test]
fn a_reload_rotates_the_certificate_and_a_bad_new_one_leaves_the_old_serving() {
    let dir = docroot(&[("index.html", b"rotating")]);
    let one = Ca::new(dir.path(), "one");
    let two = Ca::new(dir.path(), "two");
    one.issue(dir.path(), "a", &["a.test"], ECDSA);
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), dir);
    let (root_one, root_two) = (t.file("one-ca.pem"), t.file("two-ca.pem"));
    ok_body(&curl(&t, &root_one, "a.test", "/", &[]), &t);

    // A certificate from another CA, and SIGHUP.
    two.issue(t.path(), "a", &["a.test"], ECDSA);
    t.signal(1);
    wait_until_trusted(&t, &root_two);

    // A key that does not match: the reload is refused, the served
    // certificate stays.
    two.issue(t.path(), "other", &["other.test"], ECDSA);
    std::fs::copy(t.file("other.key"), t.file("a.key")).unwrap();
    t.signal(1);
    assert!(
        t.wait_log("does not belong to the certificate"),
        "{}",
        t.log()
    );
    ok_body(&curl(&t, &root_two, "a.test", "/", &[]), &t);
}

#[test]
fn the_json_and_combined_tls_access_logs_record_the_tls_protocol_and_cipher() {
    for (format, protocol, cipher) in [
        (
            "json",
            r#""tls_protocol":"TLSv1.2""#,
            r#""tls_cipher":"TLS_ECDHE_ECDSA_WITH_"#,
        ),
        ("combined_tls", "\" TLSv1.2 ", " TLS_ECDHE_ECDSA_WITH_"),
    ] {
        let (dir, _) = site_for_a(b"x");
        let log = format!("[access_log]\npath = \"{{dir}}/access.log\"\nformat = \"{format}\"\n");
        let mut t = Tern::start_in(BIN, &tls_config(&["a"], "", &log, ""), dir);
        ok_body(
            &curl(
                &t,
                &t.file("one-ca.pem"),
                "a.test",
                "/",
                &["--tlsv1.2", "--tls-max", "1.2"],
            ),
            &t,
        );
        t.signal(15);
        assert!(t.wait_exit(Duration::from_secs(10)).unwrap().success());
        let line = std::fs::read_to_string(t.file("access.log")).unwrap();
        assert!(line.contains(protocol), "{format}: {line}");
        assert!(line.contains(cipher), "{format}: {line}");
    }
}

#[test]
fn certificate_files_replaced_on_disk_are_served_without_a_signal() {
    let dir = docroot(&[("index.html", b"watched")]);
    let one = Ca::new(dir.path(), "one");
    let two = Ca::new(dir.path(), "two");
    std::fs::create_dir(dir.path().join("certs")).unwrap();
    one.issue(&dir.path().join("certs"), "a", &["a.test"], ECDSA);
    let t = Tern::start_in(BIN, &tls_config(&["certs/a"], "", "", ""), dir);
    let (root_one, root_two) = (t.file("one-ca.pem"), t.file("two-ca.pem"));
    ok_body(&curl(&t, &root_one, "a.test", "/", &[]), &t);

    // A renewal tool's way: the new pair written aside, then renamed over
    // the old files, one after the other.
    let fresh = t.file("fresh");
    std::fs::create_dir(&fresh).unwrap();
    two.issue(&fresh, "a", &["a.test"], ECDSA);
    for f in ["a.key", "a.pem"] {
        std::fs::rename(fresh.join(f), t.file("certs").join(f)).unwrap();
    }
    wait_until_trusted(&t, &root_two);
    assert!(
        t.wait_log("certificate files changed: configuration reloaded"),
        "{}",
        t.log()
    );
}

#[test]
fn client_certificates_are_required_or_optional_and_reach_cgi_programs() {
    let env_cgi = b"#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv\n";
    let route = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\n";
    let start = |mode: &str| {
        let dir = docroot(&[("index.html", b"x")]);
        tern_testkit::install(&dir.path().join("cgi/env.cgi"), env_cgi, 0o755);
        let servers = Ca::new(dir.path(), "one");
        servers.issue(dir.path(), "a", &["a.test"], ECDSA);
        let clients = Ca::new(dir.path(), "clients");
        clients.issue_client(dir.path(), "alice", "alice");
        let stranger = Ca::new(dir.path(), "stranger");
        stranger.issue_client(dir.path(), "mallory", "mallory");
        let auth =
            format!("client_auth = {{ ca = \"{{dir}}/clients-ca.pem\", mode = \"{mode}\" }}");
        Tern::start_in(BIN, &tls_config(&["a"], &auth, "", route), dir)
    };
    let with_cert = |t: &Tern, who: &str| {
        let (cert, key) = (t.file(&format!("{who}.pem")), t.file(&format!("{who}.key")));
        let args = [
            "--cert".to_owned(),
            cert.to_string_lossy().into_owned(),
            "--key".to_owned(),
            key.to_string_lossy().into_owned(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        curl(
            t,
            &t.file("one-ca.pem"),
            "a.test",
            "/cgi-bin/env.cgi",
            &args,
        )
    };

    let t = start("require");
    let body = ok_body(&with_cert(&t, "alice"), &t);
    assert!(body.contains("SSL_CLIENT_VERIFY=SUCCESS\n"), "{body}");
    assert!(body.contains("SSL_CLIENT_S_DN=CN=alice\n"), "{body}");
    assert!(
        body.contains("SSL_CLIENT_I_DN=CN=tern test CA clients\n"),
        "{body}"
    );
    assert!(body.contains("SSL_CLIENT_M_SERIAL="), "{body}");
    let none = curl(&t, &t.file("one-ca.pem"), "a.test", "/cgi-bin/env.cgi", &[]);
    assert!(
        !none.status.success(),
        "served without a client certificate"
    );
    assert!(
        !with_cert(&t, "mallory").status.success(),
        "a stranger's certificate was taken"
    );
    assert!(t.wait_log("TLS handshake failed"), "{}", t.log());

    let t = start("optional");
    let body = ok_body(
        &curl(&t, &t.file("one-ca.pem"), "a.test", "/cgi-bin/env.cgi", &[]),
        &t,
    );
    assert!(body.contains("SSL_CLIENT_VERIFY=NONE\n"), "{body}");
    assert!(!body.contains("SSL_CLIENT_S_DN"), "{body}");
    let body = ok_body(&with_cert(&t, "alice"), &t);
    assert!(body.contains("SSL_CLIENT_S_DN=CN=alice\n"), "{body}");
}

/// A realm with `certificate = true`: a verified client certificate proves
/// who the client is (its subject DN is the user scripts see); without
/// one the client is refused, and a realm's `users` are subject DNs.
#[test]
fn a_client_certificate_proves_the_user_to_a_realm() {
    let env_cgi = b"#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv\n";
    let dir = docroot(&[("index.html", b"x")]);
    tern_testkit::install(&dir.path().join("cgi/env.cgi"), env_cgi, 0o755);
    let servers = Ca::new(dir.path(), "one");
    servers.issue(dir.path(), "a", &["a.test"], ECDSA);
    let clients = Ca::new(dir.path(), "clients");
    clients.issue_client(dir.path(), "alice", "alice");
    clients.issue_client(dir.path(), "bob", "bob");
    let site = "[[site.route]]\nprefix = \"/cgi-bin\"\nhandler = \"cgi\"\ndir = \"{dir}/cgi\"\n\n\
                [[site.access]]\npath = \"/cgi-bin/**\"\ncertificate = true\nusers = [\"CN=alice\"]\n";
    let auth = "client_auth = { ca = \"{dir}/clients-ca.pem\", mode = \"optional\" }";
    let t = Tern::start_in(BIN, &tls_config(&["a"], auth, "", site), dir);
    let as_user = |who: Option<&str>| {
        let mut args = vec!["-w".to_owned(), "\n%{http_code}".to_owned()];
        if let Some(who) = who {
            args.extend([
                "--cert".to_owned(),
                t.file(&format!("{who}.pem")).to_string_lossy().into_owned(),
                "--key".to_owned(),
                t.file(&format!("{who}.key")).to_string_lossy().into_owned(),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = curl(
            &t,
            &t.file("one-ca.pem"),
            "a.test",
            "/cgi-bin/env.cgi",
            &args,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let alice = as_user(Some("alice"));
    assert!(alice.ends_with("\n200"), "{alice}\n{}", t.log());
    assert!(alice.contains("REMOTE_USER=CN=alice\n"), "{alice}");
    assert!(alice.contains("AUTH_TYPE=SSL\n"), "{alice}");
    // Proven, but not among the realm's users.
    assert!(as_user(Some("bob")).ends_with("\n403"));
    // No certificate, and no password to ask for.
    assert!(as_user(None).ends_with("\n403"));
    assert!(t.wait_log("no verified client certificate"), "{}", t.log());
}

#[test]
fn a_plain_listener_sends_clients_to_https_but_not_acme_challenges() {
    let (dir, _) = site_for_a(b"secure");
    let cfg = "[[listen]]\naddress = \"127.0.0.1:0\"\nredirect_to_https = true\n\
               [[listen]]\naddress = \"127.0.0.1:0\"\n[listen.tls]\n\
               certificates = [{ cert = \"{dir}/a.pem\", key = \"{dir}/a.key\" }]\n\
               [[site]]\nroot = \"{dir}/www\"\n";
    let t = Tern::start_in(BIN, cfg, dir);
    let plain = t.addr().port();

    let r = crate::request(
        t.addr(),
        b"POST /x?y=1 HTTP/1.1\r\nHost: a.test:1234\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 308, "{}", t.log());
    let location = r.header("location").unwrap().to_owned();
    assert!(location.starts_with("https://a.test:"), "{location}");
    assert!(location.ends_with("/x?y=1"), "{location}");
    assert!(!location.contains(&format!(":{plain}/")), "{location}");

    // Followed by a real client, it ends on the TLS listener.
    let out = Command::new("curl")
        .args(["-sS", "-L", "--max-time", "20", "--cacert"])
        .arg(t.file("one-ca.pem"))
        .args(["--connect-to", "a.test::127.0.0.1:"])
        .arg(format!("http://a.test:{plain}/"))
        .output()
        .unwrap();
    assert_eq!(ok_body(&out, &t), "secure");

    // An ACME HTTP-01 challenge is answered over plain HTTP (here: 404).
    let r = crate::request(
        t.addr(),
        b"GET /.well-known/acme-challenge/token HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_ne!(r.status, 308);

    // Without a TLS listener there is nowhere to send clients.
    let file = t.file("plain.toml");
    std::fs::write(
        &file,
        "[[listen]]\naddress = \"127.0.0.1:0\"\nredirect_to_https = true\n[[site]]\nroot = \"www\"\n",
    )
    .unwrap();
    let out = check(&file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("plain.toml:3: listen[0].redirect_to_https: no listener has [listen.tls]"),
        "{err}"
    );
}

#[test]
fn tls_internal_serves_https_from_a_local_root_that_is_kept_across_restarts() {
    let state = tempfile::tempdir().unwrap();
    let root = state.path().join("pki/root.pem");
    let start = || {
        Tern::spawn_env(
            BIN,
            &["serve", "--listen", "127.0.0.1:0", "--tls-internal"],
            &[("TERN_STATE_DIR", state.path())],
            tempfile::tempdir().unwrap(),
        )
    };
    let t = start();
    let said = t.stdout();
    assert!(
        said.contains(&format!("trust its root: curl --cacert {}", root.display())),
        "{said}"
    );
    for name in ["localhost", "127.0.0.1"] {
        let body = ok_body(&curl(&t, &root, name, "/", &[]), &t);
        assert!(body.contains("tern"), "{body}");
    }
    let first_root = std::fs::read(&root).unwrap();
    drop(t);
    let t = start();
    assert_eq!(
        std::fs::read(&root).unwrap(),
        first_root,
        "the root is kept"
    );
    ok_body(&curl(&t, &root, "localhost", "/", &[]), &t);
    // A name the certificate is not for does not verify.
    let other = curl(&t, &root, "other.test", "/", &[]);
    assert!(!other.status.success());
}

#[test]
fn an_internal_certificate_is_for_the_configured_names() {
    let dir = docroot(&[("index.html", b"dev")]);
    let t = Tern::start_in(
        BIN,
        &config(
            "[listen.tls]\ninternal = { names = [\"dev.test\"], dir = \"{dir}/pki\" }\n",
            "",
        ),
        dir,
    );
    let root = t.file("pki/root.pem");
    assert_eq!(
        ok_body(&curl(&t, &root, "dev.test", "/", &[]), &t),
        "dev\n2"
    );
    assert!(!curl(&t, &root, "localhost", "/", &[]).status.success());
}

#[test]
fn servers_sharing_a_ticket_key_file_resume_each_others_sessions() {
    let (dir, _) = site_for_a(b"x");
    let mut key = [0u8; 80];
    for (i, b) in key.iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    std::fs::write(dir.path().join("ticket.key"), key).unwrap();
    let copy = twin(dir.path(), &["a.pem", "a.key", "ticket.key"]);
    let shared = "ticket_key_file = \"{dir}/ticket.key\"";
    let a = Tern::start_in(BIN, &tls_config(&["a"], shared, "", ""), dir);
    let b = Tern::start_in(BIN, &tls_config(&["a"], shared, "", ""), copy);
    let get = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    for version in ["-tls1_2", "-tls1_3"] {
        let session = a.file(&format!("session{version}"));
        let session = session.to_string_lossy();
        let args =
            |io: &'static str| vec!["-servername", "a.test", version, io, &session, "-ign_eof"];
        let (ok, text) = s_client(&a, &args("-sess_out"), get);
        assert!(ok && text.contains("New, "), "{version}: {text}");
        let (ok, text) = s_client(&b, &args("-sess_in"), get);
        assert!(
            ok && text.contains("Reused, "),
            "{version}: a session from the other server did not resume:\n{text}"
        );
    }
}

#[test]
fn servers_with_keys_of_their_own_do_not_resume_each_others_sessions() {
    let (dir, _) = site_for_a(b"x");
    let copy = twin(dir.path(), &["a.pem", "a.key"]);
    let a = Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), dir);
    let b = Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), copy);
    let session = a.file("session");
    let session = session.to_string_lossy();
    let get = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    let args =
        |io: &'static str| vec!["-servername", "a.test", "-tls1_3", io, &session, "-ign_eof"];
    let (ok, text) = s_client(&a, &args("-sess_out"), get);
    assert!(ok && text.contains("New, "), "{text}");
    let (ok, text) = s_client(&b, &args("-sess_in"), get);
    assert!(ok && text.contains("New, "), "{text}");
}

/// A second server's directory: `files` of `dir` and its `www/index.html`.
fn twin(dir: &Path, files: &[&str]) -> tempfile::TempDir {
    let copy = docroot(&[(
        "index.html",
        &std::fs::read(dir.join("www/index.html")).unwrap(),
    )]);
    for f in files {
        std::fs::copy(dir.join(f), copy.path().join(f)).unwrap();
    }
    copy
}

#[test]
fn certificates_rotated_under_load_fail_no_handshake_and_no_request() {
    let dir = docroot(&[("index.html", b"busy")]);
    let cas = [Ca::new(dir.path(), "one"), Ca::new(dir.path(), "two")];
    cas[0].issue(dir.path(), "a", &["a.test"], ECDSA);
    // Clients trust both roots: whichever certificate is served verifies.
    let bundle = [
        std::fs::read(dir.path().join("one-ca.pem")).unwrap(),
        std::fs::read(dir.path().join("two-ca.pem")).unwrap(),
    ]
    .concat();
    std::fs::write(dir.path().join("both-ca.pem"), bundle).unwrap();
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), dir);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (done, failures) = std::thread::scope(|s| {
        let clients: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let (mut done, mut failures) = (0, Vec::new());
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        // A new connection, so a new handshake, each time.
                        let out = curl(&t, &t.file("both-ca.pem"), "a.test", "/", &[]);
                        match out.status.success() && out.stdout.starts_with(b"busy") {
                            true => done += 1,
                            false => {
                                failures.push(String::from_utf8_lossy(&out.stderr).into_owned())
                            }
                        }
                    }
                    (done, failures)
                })
            })
            .collect();
        // Six rotations between the two CAs, each written to a temporary
        // name and renamed into place (as a renewal tool does), then SIGHUP;
        // certwatch sees the renames too.
        for i in 1..=6 {
            let ca = &cas[i % 2];
            ca.issue(t.path(), "next", &["a.test"], ECDSA);
            std::fs::rename(t.file("next.key"), t.file("a.key")).unwrap();
            std::fs::rename(t.file("next.pem"), t.file("a.pem")).unwrap();
            t.signal(1);
            std::thread::sleep(Duration::from_millis(400));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        clients.into_iter().map(|c| c.join().unwrap()).fold(
            (0, Vec::new()),
            |(n, mut f), (d, more)| {
                f.extend(more);
                (n + d, f)
            },
        )
    });
    assert!(
        failures.is_empty(),
        "{} failed of {}: {failures:#?}\n{}",
        failures.len(),
        done + failures.len(),
        t.log()
    );
    assert!(
        done >= 10,
        "only {done} requests were made during the rotations"
    );
    // The last rotation (to CA "one", i = 6) is what is served now.
    wait_until_trusted(&t, &t.file("one-ca.pem"));
    assert!(
        !curl(&t, &t.file("two-ca.pem"), "a.test", "/", &[])
            .status
            .success(),
        "the certificate did not rotate:\n{}",
        t.log()
    );
}

#[test]
fn garbage_old_versions_and_broken_hellos_are_closed_with_a_log_line_each() {
    let (dir, _) = site_for_a(b"x");
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), dir);
    let closed = |bytes: &[u8]| {
        let mut s = TcpStream::connect(t.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(bytes).unwrap();
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        // At most a TLS alert record (type 21), never HTTP.
        assert!(
            answer.is_empty() || answer[0] == 21,
            "{bytes:?} was answered {answer:?}"
        );
    };
    // A handshake record whose body is garbage.
    closed(&[
        22, 3, 1, 0, 8, 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef,
    ]);
    // A ClientHello cut short, then the client's half-close.
    closed(&[22, 3, 1, 0, 200, 1, 0, 0, 196, 3, 3]);
    // Not TLS at all, and not HTTP either.
    closed(&[0, 1, 2, 3, 4, 5, 6, 7]);
    let failures = || t.log().matches("TLS handshake failed").count();
    let until = Instant::now() + Duration::from_secs(10);
    while failures() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(failures() >= 2, "{}", t.log());
    // An old protocol (TLS 1.1; the client's own floor lowered) is refused.
    let (ok, text) = s_client(
        &t,
        &[
            "-servername",
            "a.test",
            "-tls1_1",
            "-cipher",
            "DEFAULT@SECLEVEL=0",
        ],
        "",
    );
    assert!(!ok, "TLS 1.1 was served:\n{text}");
    // And nothing of it cost the others their service.
    let (ok, text) = s_client(&t, &["-servername", "a.test"], "");
    assert!(ok, "{text}");
}

/// A TLS client, in one thread (OpenSSL's, from Python): sends `head`;
/// once the answer has begun, pipelines `flood` bytes of `next`, reading
/// on only once 64 KiB of them are sent (as `answer_under_a_flood`); prints
/// how the connection ended and the answer's body length.
const TLS_FLOOD: &str = r#"
import select, socket, ssl, sys
port, ca, head, nxt, flood = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
ctx = ssl.create_default_context(cafile=ca)
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="a.test")
s.settimeout(10)
s.sendall(head.encode().decode("unicode_escape").encode())
got = s.recv(65536)
s.setblocking(False)
chunk = nxt.encode().decode("unicode_escape").encode() * 1000
sent, end = 0, None
while end is None:
    reading = sent >= min(flood, 64 << 10)
    r, w, _ = select.select([s] if reading else [], [s] if sent < flood else [], [], 10)
    if not r and not w:
        end = "silence"
    if w:
        try:
            sent += s.send(chunk)
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
            pass
        except OSError:
            sent = flood
    if r or (reading and s.pending()):
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    end = "end"
                    break
                got += d
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except OSError as e:
            end = type(e).__name__
print(end, len(got.partition(b"\r\n\r\n")[2]), got[:15].decode("latin-1"))
"#;

/// Over TLS as over plain sockets, requests pipelined behind one that
/// asked to close do not cost it its answer (`bad_input`'s test of the
/// same): the server sends its close_notify and reads off what still
/// arrives before it closes, where closing with bytes unread resets the
/// connection and throws away what of the answer is still in the send
/// queue.
#[test]
fn over_tls_requests_pipelined_behind_a_close_do_not_cut_its_answer_short() {
    const LEN: usize = 4 << 20;
    let dir = docroot(&[("big.bin", &vec![b'x'; LEN])]);
    let ca = Ca::new(dir.path(), "one");
    ca.issue(dir.path(), "a", &["a.test"], ECDSA);
    let root = dir.path().join("one-ca.pem");
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", "", ""), dir);
    for round in 0..3 {
        let out = Command::new("python3")
            .args(["-c", TLS_FLOOD, &t.addr().port().to_string()])
            .arg(&root)
            .args([
                r"GET /big.bin HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
                r"GET /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\n",
                &LEN.to_string(),
            ])
            .output()
            .expect("python3 (scripts/test-all installs it)");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "round {round}: {out:?}");
        assert_eq!(
            text.trim(),
            format!("end {LEN} HTTP/1.1 200 OK"),
            "round {round}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A FastCGI answer of eight records goes out over TLS as it does in the
/// clear: the pieces in one vectored write, which rustls frames into its
/// records. curl gets it whole over HTTP/1.1 and HTTP/2, on one
/// connection twice.
#[test]
fn a_fastcgi_answer_in_many_records_arrives_whole_over_tls() {
    let (dir, _ca) = site_for_a(b"x");
    let app = super::persistent::fastcgi_app(dir.path());
    let route = format!(
        "[[site.route]]\nprefix = \"/app\"\nhandler = \"fastcgi\"\ncommand = [\"{app}\"]\nmin_processes = 1\nmax_processes = 1\n"
    );
    let t = Tern::start_in(BIN, &tls_config(&["a"], "", "", &route), dir);
    let port = t.addr().port();
    for version in ["--http1.1", "--http2"] {
        let url = format!("https://a.test:{port}/app/64k");
        let body = ok_body(
            &curl(
                &t,
                &t.file("one-ca.pem"),
                "a.test",
                "/app/64k",
                &[version, &url],
            ),
            &t,
        );
        // Two answers, each followed by the version curl printed.
        let v = if version == "--http2" { "2" } else { "1.1" };
        let want = format!("{x}\n{v}{x}\n{v}", x = "x".repeat(65536));
        assert!(
            body == want,
            "{version}: {} bytes, {:?}...",
            body.len(),
            &body[..body.len().min(100)]
        );
    }
}
