//! Certificates from an ACME CA: Pebble, Let's Encrypt's test CA, run on
//! loopback by each test (Debian's `pebble` package; `scripts/test-all`
//! installs it, and the tests say so and pass when it is missing). Pebble
//! validates against tern's own ports (its `httpPort` and `tlsPort`), and
//! resolves `localhost` to 127.0.0.1 itself. Issuance by HTTP-01 and by
//! TLS-ALPN-01, renewal swapped in without a restart, a reload that
//! orders nothing new, and a CA that is down.

use std::io::{BufRead as _, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

use crate::{docroot, Tern, BIN};

const SIGHUP: i32 = 1;

/// The name Pebble resolves to 127.0.0.1 without a DNS server of ours.
const NAME: &str = "localhost";

/// Pebble's binary, or `None` (and a line saying the test is skipped).
fn pebble_bin() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("pebble"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        eprintln!(
            "SKIPPED: pebble is not installed (apt-get install pebble; scripts/test-all does)"
        );
    }
    found
}

/// A port free on 127.0.0.1 a moment ago, outside the ephemeral range
/// (Pebble must know tern's ports before either starts).
fn free_port() -> u16 {
    tern_suite::process::free_port().unwrap()
}

/// A Pebble process, killed (by its pid) and reaped when dropped.
struct Pebble {
    child: Child,
    log: Arc<Mutex<String>>,
    acme_port: u16,
    mgmt_port: u16,
    /// The root its HTTPS certificate chains to (`directory_ca`).
    https_ca: PathBuf,
}

impl Pebble {
    /// Starts Pebble in `dir`, validating on `http_port` and `tls_port`,
    /// issuing certificates valid for `validity` seconds.
    fn start(bin: &Path, dir: &Path, http_port: u16, tls_port: u16, validity: u64) -> Pebble {
        // Its own HTTPS certificate, for 127.0.0.1, from a CA of ours.
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "tern test pebble CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let leaf =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        let key = KeyPair::generate().unwrap();
        let leaf = leaf.signed_by(&key, &ca).unwrap();
        let https_ca = dir.join("pebble-ca.pem");
        std::fs::write(&https_ca, ca.pem()).unwrap();
        std::fs::write(dir.join("pebble.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.join("pebble.key"), key.serialize_pem()).unwrap();
        let (acme_port, mgmt_port) = (free_port(), free_port());
        let config = format!(
            r#"{{"pebble": {{
                "listenAddress": "127.0.0.1:{acme_port}",
                "managementListenAddress": "127.0.0.1:{mgmt_port}",
                "certificate": "{dir}/pebble.pem",
                "privateKey": "{dir}/pebble.key",
                "httpPort": {http_port},
                "tlsPort": {tls_port},
                "ocspResponderURL": "",
                "externalAccountBindingRequired": false,
                "certificateValidityPeriod": {validity}
            }}}}"#,
            dir = dir.display()
        );
        std::fs::write(dir.join("pebble.json"), config).unwrap();
        let mut child = Command::new(bin)
            .arg("-config")
            .arg(dir.join("pebble.json"))
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_VA_ALWAYS_VALID", "0")
            .env("PEBBLE_AUTHZREUSE", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start pebble");
        let log = Arc::new(Mutex::new(String::new()));
        for out in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let sink = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let mut l = sink.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let p = Pebble {
            child,
            log,
            acme_port,
            mgmt_port,
            https_ca,
        };
        let until = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", acme_port)).is_err() {
            assert!(
                Instant::now() < until,
                "pebble did not listen:\n{}",
                p.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        p
    }

    fn directory(&self) -> String {
        format!("https://127.0.0.1:{}/dir", self.acme_port)
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The root its certificates chain to, written to `dir/pebble-root.pem`.
    fn root(&self, dir: &Path) -> PathBuf {
        let path = dir.join("pebble-root.pem");
        let out = Command::new("curl")
            .args(["-sS", "--max-time", "20", "--cacert"])
            .arg(&self.https_ca)
            .arg(format!("https://127.0.0.1:{}/roots/0", self.mgmt_port))
            .arg("-o")
            .arg(&path)
            .output()
            .expect("run curl");
        assert!(out.status.success(), "{out:?}");
        path
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tern config: a plain listener on `http`, a TLS one on `https` with
/// `tls`, the site `{dir}/www`.
fn config(http: u16, https: u16, tls: &str) -> String {
    format!(
        "[[listen]]\naddress = \"127.0.0.1:{http}\"\n\
         [[listen]]\naddress = \"127.0.0.1:{https}\"\n[listen.tls]\n{tls}\n\
         [[site]]\nroot = \"{{dir}}/www\"\n"
    )
}

/// `acme = { ... }` for `pebble` with `challenge`, state in `{dir}/state`.
fn acme_table(pebble: &Pebble, challenge: &str) -> String {
    format!(
        "acme = {{ names = [\"{NAME}\"], directory = \"{}\", directory_ca = \"{}\", \
         email = \"ops@example.com\", challenge = \"{challenge}\", state = \"{{dir}}/state\" }}",
        pebble.directory(),
        pebble.https_ca.display()
    )
}

/// The serial and names of the certificate served for `name` on `port`
/// (`openssl x509 -serial -ext subjectAltName`), or `None` without one.
fn served(port: u16, name: &str) -> Option<String> {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-servername", name])
        .stdin(Stdio::null())
        .output()
        .expect("run openssl");
    let text = String::from_utf8_lossy(&out.stdout);
    let begin = text.find("-----BEGIN CERTIFICATE-----")?;
    let end = text.find("-----END CERTIFICATE-----")? + "-----END CERTIFICATE-----".len();
    let mut x509 = Command::new("openssl")
        .args(["x509", "-noout", "-serial", "-ext", "subjectAltName"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run openssl");
    std::io::Write::write_all(x509.stdin.as_mut().unwrap(), text[begin..end].as_bytes()).unwrap();
    let out = x509.wait_with_output().unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Waits (at most `secs`) until `f` gives something.
fn wait_for<T>(
    secs: u64,
    what: &str,
    log: impl Fn() -> String,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let until = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < until,
            "no {what} within {secs} s:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// curl trusting `root` for `https://NAME:port/`.
fn get_trusted(port: u16, root: &Path) -> std::process::Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "20", "--cacert"])
        .arg(root)
        .arg("--resolve")
        .arg(format!("{NAME}:{port}:127.0.0.1"))
        .arg(format!("https://{NAME}:{port}/"))
        .stdin(Stdio::null())
        .output()
        .expect("run curl")
}

#[test]
fn acme_http01_issues_a_certificate_a_reload_orders_no_second_and_a_restart_serves_it() {
    let Some(bin) = pebble_bin() else { return };
    let dir = docroot(&[("index.html", b"issued by pebble")]);
    // The state outlives the first tern, for the restart.
    let state = tempfile::tempdir().unwrap();
    let pebble_dir = tempfile::tempdir().unwrap();
    let (http, https) = (free_port(), free_port());
    let pebble = Pebble::start(&bin, pebble_dir.path(), http, https, 3600);
    let cfg = config(http, https, &acme_table(&pebble, "http-01"))
        .replace("{dir}/state", &state.path().to_string_lossy());
    let mut t = Tern::start_in(BIN, &cfg, dir);
    let both = |t: &Tern| format!("tern:\n{}\npebble:\n{}", t.log(), pebble.log());

    let cert = wait_for(60, "certificate", || both(&t), || served(https, NAME));
    assert!(cert.contains(&format!("DNS:{NAME}")), "{cert}");
    let root = pebble.root(state.path());
    let out = get_trusted(https, &root);
    assert!(out.status.success(), "{out:?}\n{}", both(&t));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "issued by pebble");
    // The pair and the account are kept in the state directory.
    let kept = state.path().join("certs").join(NAME);
    assert!(kept.join("cert.pem").is_file() && kept.join("key.pem").is_file());
    let accounts = || {
        std::fs::read_dir(state.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("account-"))
            .count()
    };
    assert_eq!(accounts(), 1);
    // A token no order opened is not found, on the plain listener.
    let r = crate::request(
        ([127, 0, 0, 1], http).into(),
        b"GET /.well-known/acme-challenge/nope HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!(r.status, 404);

    // A reload keeps the task: no second order, the same certificate.
    t.signal(SIGHUP);
    assert!(t.wait_log("SIGHUP: configuration reloaded"), "{}", both(&t));
    assert_eq!(served(https, NAME).as_deref(), Some(cert.as_str()));
    let issued = || pebble.log().matches("Issued certificate serial").count();
    assert_eq!(issued(), 1, "{}", both(&t));
    assert_eq!(
        t.log().matches("new certificate issued").count(),
        1,
        "{}",
        both(&t)
    );

    // A restart serves the kept certificate and orders nothing.
    t.signal(15);
    assert!(
        t.wait_exit(Duration::from_secs(20)).is_some(),
        "{}",
        both(&t)
    );
    drop(t);
    let t = Tern::start_in(BIN, &cfg, docroot(&[("index.html", b"issued by pebble")]));
    assert!(
        t.wait_log("ACME: serving the kept certificate"),
        "{}",
        both(&t)
    );
    assert_eq!(served(https, NAME).as_deref(), Some(cert.as_str()));
    assert_eq!(issued(), 1, "{}", both(&t));
    assert_eq!(accounts(), 1);
}

#[test]
fn acme_tls_alpn01_issues_and_renews_without_a_restart() {
    let Some(bin) = pebble_bin() else { return };
    let dir = docroot(&[("index.html", b"renewed")]);
    let (http, https) = (free_port(), free_port());
    // Certificates valid for 15 s: renewal is due after 10.
    let pebble = Pebble::start(&bin, dir.path(), http, https, 15);
    let t = Tern::start_in(
        BIN,
        &config(http, https, &acme_table(&pebble, "tls-alpn-01")),
        dir,
    );
    let both = || format!("tern:\n{}\npebble:\n{}", t.log(), pebble.log());

    let first = wait_for(60, "certificate", both, || served(https, NAME));
    assert!(first.contains(&format!("DNS:{NAME}")), "{first}");
    assert!(
        t.log().contains("ACME TLS-ALPN-01 validation answered"),
        "{}",
        both()
    );
    let pid = t.pid();
    let second = wait_for(60, "renewed certificate", both, || {
        served(https, NAME).filter(|c| *c != first)
    });
    assert!(second.contains(&format!("DNS:{NAME}")), "{second}");
    assert_eq!(t.pid(), pid);
    let root = pebble.root(t.path());
    let out = get_trusted(https, &root);
    assert!(out.status.success(), "{out:?}\n{}", both());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "renewed");
}

/// A certificate for NAME from a CA of the test's (`{dir}/ca.pem`),
/// written to `{dir}/old.pem` and `{dir}/old.key`.
fn old_certificate(dir: &Path) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "tern test old CA");
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec![NAME.to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("old.pem"), leaf.pem()).unwrap();
    std::fs::write(dir.join("old.key"), key.serialize_pem()).unwrap();
}

#[test]
fn acme_ca_down_keeps_the_configured_certificate_serving_and_retries() {
    // No Pebble needed: the directory's port has nothing listening.
    let dir = docroot(&[("index.html", b"still serving")]);
    old_certificate(dir.path());
    let (http, https, down) = (free_port(), free_port(), free_port());
    let tls = format!(
        "certificates = [{{ cert = \"{{dir}}/old.pem\", key = \"{{dir}}/old.key\" }}]\n\
         acme = {{ names = [\"{NAME}\"], directory = \"https://127.0.0.1:{down}/dir\", state = \"{{dir}}/state\" }}"
    );
    let t = Tern::start_in(BIN, &config(http, https, &tls), dir);
    let directory = format!("https://127.0.0.1:{down}/dir");
    // The error names the URL and the retry; then it is retried.
    let log = || t.log();
    wait_for(30, "first error", log, || {
        t.log()
            .lines()
            .any(|l| l.contains("ERROR") && l.contains(&directory) && l.contains("retrying in 10s"))
            .then_some(())
    });
    let out = get_trusted(https, &t.path().join("ca.pem"));
    assert!(out.status.success(), "{out:?}\n{}", t.log());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "still serving");
    wait_for(40, "second error", log, || {
        t.log()
            .lines()
            .any(|l| l.contains("ERROR") && l.contains(&directory) && l.contains("retrying in 30s"))
            .then_some(())
    });
    // The managed slot is still empty: the configured certificate serves.
    assert!(t.log().contains("none issued yet"), "{}", t.log());
    let out = get_trusted(https, &t.path().join("ca.pem"));
    assert!(out.status.success(), "{out:?}\n{}", t.log());
}

#[test]
fn acme_ca_refusing_logs_the_order_url_and_the_configured_certificate_serves() {
    let Some(bin) = pebble_bin() else { return };
    let dir = docroot(&[("index.html", b"still serving")]);
    old_certificate(dir.path());
    let (http, https) = (free_port(), free_port());
    // Pebble validates HTTP-01 on a port where nothing listens: it
    // refuses the authorization, and with it the order.
    let pebble = Pebble::start(&bin, dir.path(), free_port(), https, 3600);
    let tls = format!(
        "certificates = [{{ cert = \"{{dir}}/old.pem\", key = \"{{dir}}/old.key\" }}]\n{}",
        acme_table(&pebble, "http-01")
    );
    let t = Tern::start_in(BIN, &config(http, https, &tls), dir);
    let both = || format!("tern:\n{}\npebble:\n{}", t.log(), pebble.log());
    let order = format!("https://127.0.0.1:{}/my-order/", pebble.acme_port);
    wait_for(60, "the refused order in the log", both, || {
        t.log()
            .lines()
            .any(|l| l.contains("ERROR") && l.contains(&order) && l.contains("retrying in 10s"))
            .then_some(())
    });
    let out = get_trusted(https, &t.path().join("ca.pem"));
    assert!(out.status.success(), "{out:?}\n{}", both());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "still serving");
}

#[test]
fn acme_before_the_first_certificate_a_handshake_fails_cleanly() {
    let dir = docroot(&[("index.html", b"plain still works")]);
    let (http, https, down) = (free_port(), free_port(), free_port());
    let tls = format!(
        "acme = {{ names = [\"{NAME}\"], directory = \"https://127.0.0.1:{down}/dir\", state = \"{{dir}}/state\" }}"
    );
    let mut t = Tern::start_in(BIN, &config(http, https, &tls), dir);
    assert!(t.wait_log("ACME: https://127.0.0.1:"), "{}", t.log());
    // No certificate to serve: the handshake ends with an alert, for the
    // managed name and for any other.
    assert_eq!(served(https, NAME), None);
    assert_eq!(served(https, "other.test"), None);
    assert!(t.wait_log("TLS handshake failed"), "{}", t.log());
    let r = crate::request(
        ([127, 0, 0, 1], http).into(),
        b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    assert_eq!((r.status, r.text().as_str()), (200, "plain still works"));
    assert!(
        t.wait_exit(Duration::from_millis(1)).is_none(),
        "{}",
        t.log()
    );
}

#[test]
fn acme_ca_that_hangs_times_out_and_the_configured_certificate_serves() {
    // A "CA" that takes connections and never answers.
    let slow = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = slow.local_addr().unwrap().port();
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for s in slow.incoming().map_while(Result::ok) {
            keep.lock().unwrap().push(s);
        }
    });
    let dir = docroot(&[("index.html", b"still serving")]);
    old_certificate(dir.path());
    let (http, https) = (free_port(), free_port());
    let directory = format!("https://127.0.0.1:{port}/dir");
    let tls = format!(
        "certificates = [{{ cert = \"{{dir}}/old.pem\", key = \"{{dir}}/old.key\" }}]\n\
         acme = {{ names = [\"{NAME}\"], directory = \"{directory}\", state = \"{{dir}}/state\", timeout = \"1s\" }}"
    );
    let t = Tern::start_in(BIN, &config(http, https, &tls), dir);
    wait_for(
        30,
        "the timeout in the log",
        || t.log(),
        || {
            t.log()
                .lines()
                .any(|l| {
                    l.contains("ERROR")
                        && l.contains(&directory)
                        && l.contains("no certificate within 1s")
                        && l.contains("retrying in 10s")
                })
                .then_some(())
        },
    );
    assert!(!held.lock().unwrap().is_empty());
    let out = get_trusted(https, &t.path().join("ca.pem"));
    assert!(out.status.success(), "{out:?}\n{}", t.log());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "still serving");
}
