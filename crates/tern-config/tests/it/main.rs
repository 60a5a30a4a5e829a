//! Loading real files: a full configuration, defaults, and errors that name
//! file, line and key.

mod reference;

use std::path::Path;
use std::time::Duration;

use tern_config::*;

fn write(dir: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("tern.toml");
    std::fs::write(&p, body).unwrap();
    p
}

fn errors(dir: &Path, body: &str) -> Vec<ConfigError> {
    load(&write(dir, body)).unwrap_err().0
}

#[test]
fn full_config_loads_with_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::create_dir(dir.path().join("files")).unwrap();
    let p = write(
        dir.path(),
        r#"
[server]
workers = 3
grace_period = "2s"
http1 = "hyper"

[[listen]]
address = "127.0.0.1:0"
[[listen]]
address = "[::1]:8443"
[[listen]]
address = "unix:tern.sock"

[limits]
max_header_bytes = "32k"
max_headers = 50
max_uri_bytes = 4096
max_body_bytes = "1m"
header_read_timeout = "5s"
keepalive_timeout = 30
send_timeout = "45s"
max_connections = 100

[access_log]
path = "logs/access.log"
format = "json"

[cache]
max_bytes = "8m"
max_entry_bytes = "64k"
revalidate = "250ms"

[[site]]
hosts = ["Example.com", "*.example.org"]
root = "www"
index = ["index.htm", "index.html"]
directory_listing = true
mime = { md = "text/markdown; charset=utf-8" }
max_ranges = 5

[[site.headers]]
path = "*.css"
set = { "Cache-Control" = "max-age=60" }

[[site.route]]
prefix = "/files/"
handler = "static"
root = "files"
cache = false

[[site]]
default = true
root = "www"
"#,
    );
    let cfg = load(&p).unwrap();
    assert_eq!(cfg.server.workers, 3);
    assert_eq!(cfg.server.grace_period, Duration::from_secs(2));
    assert_eq!(cfg.server.http1, Http1::Hyper);
    assert_eq!(cfg.listeners.len(), 3);
    assert_eq!(
        cfg.listeners[1].addr,
        ListenAddr::Tcp("[::1]:8443".parse().unwrap())
    );
    assert_eq!(
        cfg.listeners[2].addr,
        ListenAddr::Unix(dir.path().join("tern.sock"))
    );
    assert_eq!(cfg.limits.max_header_bytes, 32 << 10);
    assert_eq!(cfg.limits.max_headers, 50);
    assert_eq!(cfg.limits.max_body_bytes, 1 << 20);
    assert_eq!(cfg.limits.keepalive_timeout, Duration::from_secs(30));
    assert_eq!(cfg.limits.send_timeout, Duration::from_secs(45));
    assert_eq!(cfg.access_log.as_ref().unwrap().format, LogFormat::Json);
    assert_eq!(
        cfg.access_log.as_ref().unwrap().path,
        dir.path().join("logs/access.log")
    );
    assert_eq!(cfg.cache.revalidate, Duration::from_millis(250));
    let s = &cfg.sites[0];
    assert_eq!(s.hosts, ["example.com", "*.example.org"]);
    assert!(s.static_files.directory_listing);
    assert_eq!(s.static_files.mime["md"], "text/markdown; charset=utf-8");
    assert_eq!(
        s.header_rules[0].set,
        [("cache-control".to_owned(), "max-age=60".to_owned())]
    );
    assert_eq!(s.routes[0].matcher, RouteMatcher::Prefix("/files".into()));
    let HandlerConfig::Static(r) = &s.routes[0].handler else {
        panic!("static route expected")
    };
    assert_eq!(r.root, dir.path().join("files"));
    assert!(!r.cache);
    // Inherited from the site:
    assert_eq!(r.max_ranges, 5);
    assert!(r.directory_listing);
    assert_eq!(cfg.default_site().name, "default");
}

#[test]
fn defaults_apply_to_a_minimal_site() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = for_root(dir.path(), &[]).unwrap();
    assert_eq!(
        cfg.listeners[0].addr,
        ListenAddr::Tcp("127.0.0.1:8080".parse().unwrap())
    );
    assert_eq!(cfg.limits.max_header_bytes, 16 << 10);
    assert_eq!(cfg.limits.header_read_timeout, Duration::from_secs(10));
    assert!(cfg.cache.enabled);
    assert_eq!(cfg.cache.max_entry_bytes, 4 << 20);
    let st = &cfg.sites[0].static_files;
    assert_eq!(st.index, ["index.html"]);
    assert!(!st.directory_listing && !st.follow_symlinks && !st.dotfiles);
    assert!(st.precompressed && st.cache);
    assert!(cfg.access_log.is_none());
}

#[test]
fn every_error_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let errs = errors(
        dir.path(),
        "[limits]\nmax_body_bytes = \"12 parsecs\"\nheader_read_timeout = 0\n\n[[site]]\nroot = \"missing-dir\"\nbogus = 1\n",
    );
    let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
    let file = dir.path().join("tern.toml");
    let f = file.display();
    assert_eq!(
        text,
        [
            format!("{f}:2: limits.max_body_bytes: unknown size unit `parsecs` (use k, m or g)"),
            format!("{f}:3: limits.header_read_timeout: must be more than zero"),
            text[2].clone(),
            format!("{f}:7: site[0].bogus: unknown key"),
        ]
    );
    assert!(
        text[2].starts_with(&format!("{f}:6: site[0].root: `")),
        "{}",
        text[2]
    );
}

#[test]
fn an_unknown_http1_loop_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let errs = errors(
        dir.path(),
        "[server]\nhttp1 = \"nginx\"\n[[site]]\nroot = \".\"\n",
    );
    let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
    let f = dir.path().join("tern.toml");
    assert_eq!(
        text,
        [format!(
            "{}:2: server.http1: `nginx` is not an HTTP/1 loop: expected \"hyper\" or \"tern\"",
            f.display()
        )]
    );
}

#[test]
fn syntax_error_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let errs = errors(dir.path(), "[[site]]\nroot = \"x\"\nindex = [\n");
    assert_eq!(errs.len(), 1);
    assert!(errs[0].line >= 3, "{:?}", errs[0]);
    assert!(errs[0].message.starts_with("TOML syntax"), "{}", errs[0]);
}

#[test]
fn wrong_types_and_bad_values_are_each_reported() {
    let dir = tempfile::tempdir().unwrap();
    let errs = errors(
        dir.path(),
        r#"
[[listen]]
address = "localhost:80"
[[listen]]
address = 8080
[access_log]
path = "a.log"
format = "fancy"
[[site]]
root = "."
hosts = ["a.example", "bad host:80"]
directory_listing = "yes"
[[site.route]]
prefix = "cgi-bin"
handler = "static"
[[site.route]]
extension = "php"
handler = "teleport"
[[site.headers]]
path = "[*.css"
set = { "Content-Length" = "5", "X-Evil" = "a\nb" }
"#,
    );
    let keys: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        keys,
        [
            (3, "listen[0].address"),
            (5, "listen[1].address"),
            (8, "access_log.format"),
            (11, "site[0].hosts"),
            (12, "site[0].directory_listing"),
            (14, "site[0].route[0].prefix"),
            (18, "site[0].route[1].handler"),
            (20, "site[0].headers[0].path"),
            (21, "site[0].headers[0].set.Content-Length"),
            (21, "site[0].headers[0].set.X-Evil"),
        ],
        "{errs:#?}"
    );
}

#[test]
fn a_config_without_sites_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let errs = errors(dir.path(), "[[listen]]\naddress = \"127.0.0.1:1\"\n");
    assert_eq!(errs[0].key, "site");
}

#[test]
fn unreadable_file_is_an_error_naming_it() {
    let errs = load(Path::new("/nonexistent/tern.toml")).unwrap_err();
    assert!(errs
        .to_string()
        .starts_with("/nonexistent/tern.toml: cannot read the file"));
}

#[test]
fn cgi_routes_load_with_defaults_settings_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::create_dir(dir.path().join("cgi-bin")).unwrap();
    let p = write(
        dir.path(),
        r#"
[limits]
send_timeout = "7s"
[[site]]
root = "www"
[[site.route]]
prefix = "/cgi-bin/"
handler = "cgi"
dir = "cgi-bin"
timeout = "5s"
max_concurrent = 4
queue = 8
queue_timeout = "250ms"
pass_authorization = true
refuse_shellshock = false
env_allow = ["LANG", "PATH", "LANG"]
max_stderr_bytes = "1k"
[[site.route]]
extension = "pl"
handler = "cgi"
interpreter = "/usr/bin/perl"
"#,
    );
    let cfg = load(&p).unwrap();
    let routes = &cfg.sites[0].routes;
    let www = dir.path().join("www");
    assert_eq!(
        routes[0],
        Route {
            matcher: RouteMatcher::Prefix("/cgi-bin".into()),
            handler: HandlerConfig::Cgi(CgiConfig {
                dir: dir.path().join("cgi-bin"),
                document_root: www.clone(),
                interpreter: None,
                policy: GatewayPolicy {
                    timeout: Duration::from_secs(5),
                    env: EnvPolicy {
                        pass_authorization: true,
                        refuse_shellshock: false,
                        underscores_in_headers: false,
                        env_allow: vec!["LANG".into()],
                    },
                    max_stderr_bytes: 1024,
                    slow_request: None,
                    // From `[limits]`.
                    send_timeout: Duration::from_secs(7),
                },
                admission: Admission {
                    max_concurrent: 4,
                    queue: 8,
                    queue_timeout: Duration::from_millis(250),
                },
            }),
        }
    );
    // An extension route runs scripts found under the site's root, with
    // every default.
    assert_eq!(
        routes[1].handler,
        HandlerConfig::Cgi(CgiConfig {
            dir: www.clone(),
            document_root: www,
            interpreter: Some("/usr/bin/perl".into()),
            policy: GatewayPolicy {
                timeout: Duration::from_secs(30),
                env: EnvPolicy {
                    pass_authorization: false,
                    refuse_shellshock: true,
                    underscores_in_headers: false,
                    env_allow: Vec::new(),
                },
                max_stderr_bytes: 64 * 1024,
                slow_request: None,
                send_timeout: Duration::from_secs(7),
            },
            admission: Admission {
                max_concurrent: 32,
                queue: 100,
                queue_timeout: Duration::from_secs(10),
            },
        })
    );

    let errs = errors(
        dir.path(),
        r#"
[[site]]
root = "www"
[[site.route]]
prefix = "/cgi-bin"
handler = "cgi"
[[site.route]]
prefix = "/scripts"
handler = "cgi"
dir = "missing"
interpreter = "perl"
timeout = 0
env_allow = ["SCRIPT_NAME", "HTTP_PROXY", "1BAD"]
wat = 1
"#,
    );
    let keys: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        keys,
        [
            (4, "site[0].route[0].dir"),
            (10, "site[0].route[1].dir"),
            (11, "site[0].route[1].interpreter"),
            (12, "site[0].route[1].timeout"),
            (13, "site[0].route[1].env_allow"),
            (13, "site[0].route[1].env_allow"),
            (13, "site[0].route[1].env_allow"),
            (14, "site[0].route[1].wat"),
        ],
        "{errs:#?}"
    );
}

#[test]
fn fastcgi_and_cgiplus_routes_load_with_defaults_settings_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    let cfg = load(&write(
        dir.path(),
        r#"
[[site]]
root = "www"
[[site.route]]
extension = "php"
handler = "fastcgi"
connect = ["unix:/run/php/fpm.sock", "10.0.0.2:9000"]
dir = "www"
max_connections = 8
[[site.route]]
prefix = "/app"
handler = "fastcgi"
command = ["/bin/cat", "-u"]
env = { A = "1" }
min_processes = 0
max_processes = 2
max_requests = 500
max_age = "1h"
timeout = "5s"
[[site.route]]
prefix = "/plus"
handler = "cgiplus"
dir = "bin"
[[site.route]]
extension = "py"
handler = "cgiplus"
engine = "python"
"#,
    ))
    .unwrap();
    let routes = &cfg.sites[0].routes;
    let HandlerConfig::FastCgi(php) = &routes[0].handler else {
        panic!("{:?}", routes[0]);
    };
    assert_eq!(
        php.app,
        FastCgiApp::Connect(vec![
            "unix:/run/php/fpm.sock".parse().unwrap(),
            "10.0.0.2:9000".parse().unwrap()
        ])
    );
    assert_eq!(php.dir.as_deref(), Some(dir.path().join("www").as_path()));
    assert_eq!((php.pool.min, php.pool.max, php.pool.queue), (0, 8, 100));
    assert_eq!(php.connect_timeout, Duration::from_secs(3));
    let HandlerConfig::FastCgi(app) = &routes[1].handler else {
        panic!("{:?}", routes[1]);
    };
    assert_eq!(
        app.app,
        FastCgiApp::Spawn(CommandConfig {
            program: "/bin/cat".into(),
            args: vec!["-u".into()],
            env: vec![("A".into(), "1".into())],
        })
    );
    assert_eq!(app.dir, None);
    assert_eq!(
        (app.pool.min, app.pool.max, app.pool.max_requests),
        (0, 2, 500)
    );
    assert_eq!(app.pool.max_age, Some(Duration::from_secs(3600)));
    assert_eq!(app.policy.timeout, Duration::from_secs(5));
    let HandlerConfig::CgiPlus(plus) = &routes[2].handler else {
        panic!("{:?}", routes[2]);
    };
    assert_eq!(plus.engine, Engine::Scripts);
    assert_eq!((plus.pool.min, plus.pool.max), (1, 4));
    assert_eq!(plus.pool.idle_timeout, Duration::from_secs(60));
    let HandlerConfig::CgiPlus(py) = &routes[3].handler else {
        panic!("{:?}", routes[3]);
    };
    assert_eq!(py.engine, Engine::Python);
    assert_eq!(
        py.dir,
        dir.path().join("www"),
        "an extension route defaults to the site root"
    );

    let errs = errors(
        dir.path(),
        r#"
[[site]]
root = "www"
[[site.route]]
prefix = "/a"
handler = "fastcgi"
[[site.route]]
prefix = "/b"
handler = "fastcgi"
connect = ["unix:relative.sock", "nohost", "h:0", "::1:9000"]
[[site.route]]
prefix = "/c"
handler = "fastcgi"
connect = "/x.sock"
command = ["/bin/cat"]
[[site.route]]
prefix = "/d"
handler = "fastcgi"
command = ["cat"]
min_processes = 5
max_processes = 2
queue = 0
[[site.route]]
prefix = "/e"
handler = "cgiplus"
engine = "ruby"
[[site.route]]
prefix = "/f"
handler = "fastcgi"
connect = "/x.sock"
env = { A = "1" }
"#,
    );
    let keys: Vec<(usize, &str)> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    assert_eq!(
        keys,
        [
            (4, "site[0].route[0].connect"),
            (10, "site[0].route[1].connect"),
            (10, "site[0].route[1].connect"),
            (10, "site[0].route[1].connect"),
            (10, "site[0].route[1].connect"),
            (11, "site[0].route[2].connect"),
            (19, "site[0].route[3].command"),
            (22, "site[0].route[3].queue"),
            (16, "site[0].route[3].min_processes"),
            (26, "site[0].route[4].engine"),
            (23, "site[0].route[4].dir"),
            (31, "site[0].route[5].env"),
        ],
        "{errs:#?}"
    );
    // `check` and `serve` share one parser now: an unbracketed IPv6
    // address (`serve` used to refuse what `check` let through) and port 0
    // (`check` refused what `serve` took) are errors of the config itself.
    let msgs: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("`::1:9000`") && m.contains("brackets")),
        "{msgs:#?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m.contains("`h:0`") && m.contains("port 0")),
        "{msgs:#?}"
    );
}

#[test]
fn listeners_with_tls_load_and_their_errors_name_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::write(dir.path().join("c.pem"), "").unwrap();
    std::fs::write(dir.path().join("k.pem"), "").unwrap();
    let cfg = load(&write(
        dir.path(),
        "[[listen]]\naddress = \"127.0.0.1:0\"\n\
         [[listen]]\naddress = \"127.0.0.1:0\"\n\
         [listen.tls]\ncertificates = [{ cert = \"c.pem\", key = \"k.pem\" }]\nprofile = \"modern\"\n\
         [[site]]\nroot = \"www\"\n",
    ))
    .unwrap();
    // Port 0 twice is two listeners, each on its own port.
    assert_eq!(cfg.listeners.len(), 2);
    assert_eq!(cfg.listeners[0].tls, None);
    let tls = cfg.listeners[1].tls.as_ref().unwrap();
    assert_eq!(tls.profile, TlsProfile::Modern);
    assert_eq!(tls.unknown_names, UnknownNames::Default);
    assert_eq!(tls.certificates[0].cert, dir.path().join("c.pem"));
    assert!(
        tls.certificates[0]
            .origin
            .ends_with("tern.toml:6: listen[1].tls.certificates[0]"),
        "{}",
        tls.certificates[0].origin
    );

    let text: Vec<String> = errors(
        dir.path(),
        "[[listen]]\naddress = \"127.0.0.1:8443\"\n\
         [listen.tls]\ncertificates = [{ cert = \"missing.pem\" }]\nprofile = \"old\"\nciphers = \"RC4\"\n\
         [[site]]\nroot = \"www\"\n",
    )
    .iter()
    .map(ToString::to_string)
    .collect();
    let has = |s: &str| text.iter().any(|t| t.contains(s));
    assert!(has(":4: listen[0].tls.certificates[0].cert: `"), "{text:?}");
    assert!(
        has(":4: listen[0].tls.certificates[0].key: missing"),
        "{text:?}"
    );
    assert!(has(":5: listen[0].tls.profile: `old`"), "{text:?}");
    assert!(has(":6: listen[0].tls.ciphers: unknown key"), "{text:?}");
}

#[test]
fn tls_from_the_local_ca_and_shared_ticket_keys_load_and_their_errors_name_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::write(dir.path().join("t1.key"), [0u8; 80]).unwrap();
    let cfg = load(&write(
        dir.path(),
        "[[listen]]\naddress = \"127.0.0.1:0\"\n\
         [listen.tls]\ninternal = true\nticket_key_file = \"t1.key\"\n\
         [[listen]]\naddress = \"127.0.0.1:0\"\n\
         [listen.tls]\ninternal = { names = [\"dev.test\", \"10.0.0.1\"], dir = \"pki\" }\n\
         [[site]]\nroot = \"www\"\n",
    ))
    .unwrap();
    let first = cfg.listeners[0].tls.as_ref().unwrap();
    assert!(first.certificates.is_empty());
    let ca = first.internal.as_ref().unwrap();
    assert_eq!(ca.names, ["localhost", "127.0.0.1", "::1"]);
    assert!(ca.dir.ends_with("pki"), "{}", ca.dir.display());
    let keys = first.ticket_keys.as_ref().unwrap();
    assert_eq!(keys.files, [dir.path().join("t1.key")]);
    assert!(
        keys.origin
            .ends_with("tern.toml:5: listen[0].tls.ticket_key_file"),
        "{}",
        keys.origin
    );
    let second = cfg.listeners[1]
        .tls
        .as_ref()
        .unwrap()
        .internal
        .as_ref()
        .unwrap();
    assert_eq!(second.names, ["dev.test", "10.0.0.1"]);
    assert_eq!(second.dir, dir.path().join("pki"));
    assert!(second
        .origin
        .ends_with("tern.toml:9: listen[1].tls.internal"));

    let text: Vec<String> = errors(
        dir.path(),
        "[[listen]]\naddress = \"127.0.0.1:8443\"\n\
         [listen.tls]\ninternal = \"yes\"\nticket_key_file = [\"t1.key\", \"gone.key\"]\n\
         [[listen]]\naddress = \"127.0.0.1:8444\"\n\
         [listen.tls]\ninternal = { names = [], dir = 3 }\n\
         [[listen]]\naddress = \"127.0.0.1:8445\"\n\
         [listen.tls]\ninternal = false\n\
         [[site]]\nroot = \"www\"\n",
    )
    .iter()
    .map(ToString::to_string)
    .collect();
    let has = |s: &str| text.iter().any(|t| t.contains(s));
    assert!(
        has(":4: listen[0].tls.internal: expected true or false"),
        "{text:?}"
    );
    assert!(has(":5: listen[0].tls.ticket_key_file: `"), "{text:?}");
    assert!(has("gone.key`: No such file"), "{text:?}");
    assert!(has(":9: listen[1].tls.internal.names: empty"), "{text:?}");
    assert!(
        has(":9: listen[1].tls.internal.dir: expected a string"),
        "{text:?}"
    );
    assert!(has(":12: listen[2].tls.certificates: missing"), "{text:?}");
}

#[test]
fn acme_tables_load_without_certificates_and_their_errors_name_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::write(dir.path().join("ca.pem"), "").unwrap();
    let cfg = load(&write(
        dir.path(),
        "[[listen]]\naddress = \"127.0.0.1:0\"\n\
         [listen.tls]\n\
         acme = { names = [\"A.Example.com\", \"b.example.com.\"], directory = \"https://ca.test/dir\", \
         email = \"ops@example.com\", challenge = \"tls-alpn-01\", directory_ca = \"ca.pem\", state = \"st\", timeout = \"30s\" }\n\
         [[listen]]\naddress = \"127.0.0.1:0\"\n\
         [listen.tls]\nacme = { names = [\"c.example.com\"], directory = \"https://ca.test/dir\" }\n\
         [[site]]\nroot = \"www\"\n",
    ))
    .unwrap();
    let tls = cfg.listeners[0].tls.as_ref().unwrap();
    assert!(tls.certificates.is_empty());
    let acme = tls.acme.as_ref().unwrap();
    assert_eq!(acme.names, ["a.example.com", "b.example.com"]);
    assert_eq!(acme.directory, "https://ca.test/dir");
    assert_eq!(acme.email.as_deref(), Some("ops@example.com"));
    assert_eq!(acme.challenge, AcmeChallenge::TlsAlpn01);
    assert_eq!(acme.directory_ca, Some(dir.path().join("ca.pem")));
    assert_eq!(acme.state, dir.path().join("st"));
    assert_eq!(acme.timeout, Duration::from_secs(30));
    assert!(
        acme.origin.ends_with("tern.toml:4: listen[0].tls.acme"),
        "{}",
        acme.origin
    );
    // The defaults.
    let acme = cfg.listeners[1]
        .tls
        .as_ref()
        .unwrap()
        .acme
        .as_ref()
        .unwrap();
    assert_eq!(acme.challenge, AcmeChallenge::Http01);
    assert_eq!(acme.state, defaults::state_dir().join("acme"));
    assert_eq!(acme.timeout, defaults::ACME_TIMEOUT);
    assert_eq!(
        (acme.email.as_ref(), acme.directory_ca.as_ref()),
        (None, None)
    );

    let text: Vec<String> = errors(
        dir.path(),
        "[[listen]]\naddress = \"127.0.0.1:8443\"\n\
         [listen.tls]\nacme = { names = [\"*.example.com\", \"10.0.0.1\", \"a_b.test\"], directory = \"http://ca.test/dir\", \
         challenge = \"dns-01\", email = \"nobody\", directory_ca = \"missing.pem\", renew = 3, timeout = 0 }\n\
         [[listen]]\naddress = \"127.0.0.1:8444\"\n\
         [listen.tls]\nacme = { names = [] }\n\
         [[site]]\nroot = \"www\"\n",
    )
    .iter()
    .map(ToString::to_string)
    .collect();
    let has = |s: &str| text.iter().any(|t| t.contains(s));
    assert!(
        has(":4: listen[0].tls.acme.names: `*.example.com`: wildcard"),
        "{text:?}"
    );
    assert!(
        has(":4: listen[0].tls.acme.names: `10.0.0.1`: an IP address"),
        "{text:?}"
    );
    assert!(
        has(":4: listen[0].tls.acme.names: `a_b.test`: not a DNS name"),
        "{text:?}"
    );
    assert!(
        has(":4: listen[0].tls.acme.directory: `http://ca.test/dir`: expected an https:// URL"),
        "{text:?}"
    );
    assert!(
        has(":4: listen[0].tls.acme.challenge: `dns-01`"),
        "{text:?}"
    );
    assert!(has(":4: listen[0].tls.acme.email: `nobody`"), "{text:?}");
    assert!(has(":4: listen[0].tls.acme.directory_ca: `"), "{text:?}");
    assert!(has(":4: listen[0].tls.acme.renew: unknown key"), "{text:?}");
    assert!(
        has(":4: listen[0].tls.acme.timeout: must be more than zero"),
        "{text:?}"
    );
    assert!(has(":8: listen[1].tls.acme.names: empty"), "{text:?}");
    assert!(has(":8: listen[1].tls.acme.directory: missing"), "{text:?}");
    // An `acme` table, even a wrong one, stands in for `certificates`.
    assert!(!has("tls.certificates: missing"), "{text:?}");
}

#[test]
fn rules_realms_and_limits_name_file_line_key_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    std::fs::write(
        dir.path().join("odd.htpasswd"),
        "# users\nann:{PLAIN}secret\n",
    )
    .unwrap();
    let errs = errors(
        dir.path(),
        r#"
[[site]]
root = "www"

[[site.rules]]
regex = '^/(a'
redirect = "/b"

[[site.rules]]
regex = '^/(a)$'
rewrite = "/b/$2"

[[site.rules]]
path = "/x"
redirect = ""

[[site.rules]]
path = "/y"
redirect = "/z"
status = 200

[[site.rules]]
path = "/w"
return = 404
rewrite = "/v"

[[site.rules]]
path = "/u"

[[site.rules]]
path = "/t"
rewrite = "/s"
flow = "again"

[[site.rules]]
path = "/r"
try_files = ["$path", "=99"]

[[site.rules]]
path = "/q"
set = { headers = { "Content-Length" = "1" } }

[[site.rules]]
client = "10.0.0.1/8"
return = 403

[[site.rules]]
path = "/e"
set = { env = { HTTP_HOST = "x" } }

[[site.access]]
path = "/a/**"
htpasswd = "missing.htpasswd"

[[site.access]]
path = "/b/**"
htpasswd = "odd.htpasswd"

[[site.access]]
path = "/c/**"

[[site.limit]]
rate = "ten per second"
"#,
    );
    let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
    let all = text.join("\n");
    let f = dir.path().join("tern.toml");
    let f = f.display();
    for want in [
        format!("{f}:6: site[0].rules[0].regex: bad regex"),
        format!("{f}:11: site[0].rules[1].rewrite: $2 refers to a capture the regex does not have (it has 1)"),
        format!("{f}:15: site[0].rules[2].redirect: a redirect needs a target"),
        format!("{f}:20: site[0].rules[3].status: 200 is not a redirect status"),
        "site[0].rules[4].return: a rule has one action, and this one has `rewrite` too".to_owned(),
        "site[0].rules[5]: a rule needs one action".to_owned(),
        "site[0].rules[6].flow: expected \"continue\", \"last\" or \"break\"".to_owned(),
        "site[0].rules[7].try_files[1]: expected a status such as \"=404\"".to_owned(),
        "site[0].rules[8].set.headers.Content-Length: this header is set by the server".to_owned(),
        "site[0].rules[9].client: `10.0.0.1/8` has host bits set (did you mean 10.0.0.0/8?)".to_owned(),
        "site[0].rules[10].set.env.HTTP_HOST: `HTTP_HOST` is set by the CGI environment itself".to_owned(),
        "site[0].access[0].htpasswd: cannot read".to_owned(),
        "site[0].access[1].htpasswd:".to_owned(),
        "odd.htpasswd: line 2: ".to_owned(),
        "site[0].access[2]: an access block checks something".to_owned(),
        "site[0].limit[0].rate:".to_owned(),
    ] {
        assert!(all.contains(&want), "missing {want:?} in\n{all}");
    }
    assert!(
        !all.contains("{PLAIN}secret"),
        "a hash is never shown:\n{all}"
    );
    assert_eq!(errs.len(), 15, "{all}");
}

#[test]
fn rules_load_into_the_types_the_phases_use() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    let p = write(
        dir.path(),
        r#"
[[site]]
root = "www"

[[site.rules]]
regex = '^/blog/(?P<year>\d+)/(.*)$'
host = ["example.com", "*.example.com"]
method = ["GET", "HEAD"]
header = { "X-A" = "b*" }
query = { p = "*" }
client = ["127.0.0.1", "::1", "10.0.0.0/8"]
scheme = "https"
redirect = "/posts/${year}/$2"
status = 308

[[site.rules]]
try_files = ["$path", "$path/", "/index.php?$query"]

[[site.limit]]
path = "/login"
rate = "30r/m"
burst = 5
delay = 2
key = "user"
status = 503
keys = 100
"#,
    );
    let cfg = load(&p).unwrap();
    let rules = &cfg.sites[0].rules;
    assert_eq!(rules.rules.len(), 2);
    let r = &rules.rules[0];
    assert_eq!(r.conditions.hosts.len(), 2);
    assert_eq!(r.conditions.methods.len(), 2);
    assert_eq!(r.conditions.clients.len(), 3);
    assert_eq!(r.conditions.secure, Some(true));
    assert!(
        r.origin.ends_with("tern.toml:5: site[0].rules[0]"),
        "{}",
        r.origin
    );
    let l = &rules.limits[0];
    assert_eq!(l.limit.burst, 5);
    assert_eq!(l.limit.delay, tern_rules::limit::Delay::After(2));
    assert_eq!(l.status.as_u16(), 503);
    assert_eq!(l.keys, 100);
}

#[test]
fn the_admin_table_loads_and_its_errors_name_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("www")).unwrap();
    let cfg = load(&write(
        dir.path(),
        "[server]\nshutdown_delay = \"5s\"\n[admin]\nlisten = \"unix:admin.sock\"\nallow = [\"10.0.0.0/8\"]\nduration_buckets = [0.01, 0.1, 1]\nrequest_history = 0\nactivity_file = \"act.bin\"\n[[site]]\nroot = \"www\"\n",
    ))
    .unwrap();
    assert_eq!(cfg.server.shutdown_delay, Duration::from_secs(5));
    let a = cfg.admin.unwrap();
    assert_eq!(
        a.listen,
        Some(ListenAddr::Unix(dir.path().join("admin.sock")))
    );
    assert_eq!(a.allow, ["10.0.0.0/8".parse::<ipnet::IpNet>().unwrap()]);
    assert_eq!(a.duration_buckets, [0.01, 0.1, 1.0]);
    assert_eq!(a.request_history, 0);
    assert_eq!(a.activity_file, Some(dir.path().join("act.bin")));

    // A site that mounts the pages without an [admin] table gets the
    // defaults and no listener.
    let cfg = load(&write(
        dir.path(),
        "[[site]]\nroot = \"www\"\n[[site.route]]\nprefix = \"/tern\"\nhandler = \"admin\"\n",
    ))
    .unwrap();
    let a = cfg.admin.unwrap();
    assert_eq!(a.listen, None);
    assert_eq!(a.request_history, 1000);
    assert_eq!(a.duration_buckets.len(), 14);
    assert!(load(&write(dir.path(), "[[site]]\nroot = \"www\"\n"))
        .unwrap()
        .admin
        .is_none());

    let errs = errors(
        dir.path(),
        "[admin]\nlisten = \"nowhere\"\nallow = [\"10.0.0.0/33\"]\nduration_buckets = [1, 0.5]\nrequest_history = -1\nactivity_history = false\nactivity_file = \"x\"\nbogus = 1\n[[site]]\nroot = \"www\"\n",
    );
    let keys: Vec<_> = errs.iter().map(|e| (e.line, e.key.as_str())).collect();
    for want in [
        (2, "admin.listen"),
        (3, "admin.allow"),
        (4, "admin.duration_buckets[1]"),
        (5, "admin.request_history"),
        (7, "admin.activity_file"),
        (8, "admin.bogus"),
    ] {
        assert!(keys.contains(&want), "{want:?} not in {errs:#?}");
    }
    let errs = errors(
        dir.path(),
        "[admin]\nduration_buckets = []\n[[site]]\nroot = \"www\"\n",
    );
    assert!(errs[0].message.contains("1 to 40"), "{errs:?}");
}
