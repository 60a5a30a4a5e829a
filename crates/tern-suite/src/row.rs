//! The row registry: what the suite measures. A row is a URL path, a load
//! (connections, keep-alive), the server variant it needs (file cache on or
//! off) and the feature a server must offer to take part; fixtures are the
//! files the rows need in the docroot.
//!
//! [`Registry::seed`] holds seven sections. "static": the static-file rows
//! of the founding reports (WASD 21.1: 0 KB and 64 KB files at 1 and 10
//! connections, cache on and off; the 3.9 MB transfer-rate file), each
//! without keep-alive as in the reports and with it. "cgi": a process per
//! request, the reports' "Hello!" and a 64 KB body from C programs compiled
//! at start, at 1 and 10 connections, with and without keep-alive.
//! "persistent" (WASD 21.2): one C program run as CGI and under CGIplus, and
//! a C FastCGI responder, started beside the server or by it, on the same
//! grid.
//! "engines" (WASD's persistent scripting table): face2face.pl in a Perl
//! engine and as CGI, face2face.php and php_info.php on php-fpm, and
//! face2face.php through php-cgi.
//! "wasm" (the IIS report's ISAPI table): a "Hello!" and a 64 KB
//! WebAssembly module run in process (tern), beside the static 0 KB and
//! 64 KB files, the same bodies from CGI programs, and the persistent ways
//! (CGIplus, a spawned FastCGI responder), on the same grid.
//! "ssl" (the IIS report's Table 4.3 and WASD 21.3): an 8 KB file,
//! WebAssembly, FastCGI, CGI and WASD's 0 KB and 64 KB files, each plain
//! and over TLS (full handshakes, resumed sessions, keep-alive).
//! "webstone" (the WebStone-SS seed experiment): no measured rows but a
//! model's sessions replayed (the `webstone` module); its rows, one per way
//! of serving the model's dynamic pages, are only checked.
//! A [`Comparison`] asks for a ratio of two ways under a table.
//! New rows come the same way: `add_fixture` for their files, `add_row`
//! with a new [`Feature`] if need be, and the servers that offer it take
//! part (a server's spec says which it offers).

use serde::{Deserialize, Serialize};

/// What a server must support to take part in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Feature {
    /// Files from the docroot.
    StaticFiles,
    /// CGI programs under `/cgi-bin/`, a process per request.
    Cgi,
    /// CGIplus scripts under `/cgiplus-bin/`, each started once and looping
    /// over requests (tern).
    CgiPlus,
    /// The suite's C FastCGI responder under `/fcgi/`, processes on a Unix
    /// socket started by the suite for the server.
    FastCgi,
    /// The same responder under `/fcgi-spawn/`, its processes run by the
    /// server itself (tern's `command`).
    FastCgiSpawned,
    /// Perl scripts under `/rte/` in persistent interpreters (tern's Perl
    /// run-time engine).
    PerlEngine,
    /// PHP scripts under `/php/` on a php-fpm started by the suite for the
    /// server.
    PhpFpm,
    /// PHP scripts under `/phpcgi/` run by php-cgi, a process per request.
    PhpCgi,
    /// WebAssembly modules (WAGI) under `/wasm/`, run in process, a fresh
    /// sandboxed instance per request (tern).
    Wasm,
}

impl Feature {
    /// Every feature a server may be set up with beyond its static files.
    pub const GATEWAYS: [Feature; 8] = [
        Feature::Cgi,
        Feature::CgiPlus,
        Feature::FastCgi,
        Feature::FastCgiSpawned,
        Feature::PerlEngine,
        Feature::PhpFpm,
        Feature::PhpCgi,
        Feature::Wasm,
    ];

    /// The URL prefix the rows use and the servers map, the same on every
    /// server; its scripts live in the docroot directory of that name.
    pub fn prefix(self) -> &'static str {
        match self {
            Feature::StaticFiles => "/",
            Feature::Cgi => "/cgi-bin",
            Feature::CgiPlus => "/cgiplus-bin",
            Feature::FastCgi => "/fcgi",
            Feature::FastCgiSpawned => "/fcgi-spawn",
            Feature::PerlEngine => "/rte",
            Feature::PhpFpm => "/php",
            Feature::PhpCgi => "/phpcgi",
            Feature::Wasm => "/wasm",
        }
    }

    /// For notes: "CGI", "php-fpm".
    pub fn label(self) -> &'static str {
        match self {
            Feature::StaticFiles => "static files",
            Feature::Cgi => "CGI",
            Feature::CgiPlus => "CGIplus",
            Feature::FastCgi => "FastCGI",
            Feature::FastCgiSpawned => "spawned FastCGI",
            Feature::PerlEngine => "a Perl engine",
            Feature::PhpFpm => "php-fpm",
            Feature::PhpCgi => "php-cgi",
            Feature::Wasm => "WebAssembly",
        }
    }

    /// Its rows start a process per request, through the server's CGI
    /// machinery (whose children some gateways never reap).
    pub fn is_cgi(self) -> bool {
        matches!(self, Feature::Cgi | Feature::PhpCgi)
    }
}

/// How the body length a server returns is checked before measuring.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthCheck {
    /// Exactly `body_bytes`.
    #[default]
    Exact,
    /// At least `body_bytes`: the body differs from server to server
    /// (phpinfo() prints the request's environment), but an error page
    /// would be shorter.
    AtLeast,
}

impl LengthCheck {
    /// Whether a body of `got` bytes passes when `expected` were asked for.
    pub fn accepts(self, expected: u64, got: u64) -> bool {
        match self {
            LengthCheck::Exact => got == expected,
            LengthCheck::AtLeast => got >= expected,
        }
    }
}

/// Which variant of a server a row needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheMode {
    /// The server's file cache on (servers without a knob run as they are).
    On,
    /// The file cache off (only servers with a knob: tern, nginx, lighttpd).
    Off,
}

/// TLS on a row's connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsMode {
    /// Plain HTTP (the default).
    #[default]
    Off,
    /// HTTPS, every handshake full (`tern bench --no-resume`).
    Full,
    /// HTTPS, sessions resumed (the bench's default); with keep-alive, one
    /// handshake per connection.
    Resumed,
}

/// One row of the tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowSpec {
    /// Table it belongs to ("static", "cgi").
    pub section: String,
    /// What is fetched ("0 KB file").
    pub case: String,
    /// URL path, the same on every server.
    pub path: String,
    /// Body length every server must return (checked before measuring).
    pub body_bytes: u64,
    /// How `body_bytes` is checked.
    #[serde(default)]
    pub length: LengthCheck,
    /// Server variant.
    pub cache: CacheMode,
    /// Concurrent connections.
    pub connections: u32,
    /// Keep-alive on.
    pub keepalive: bool,
    /// What a server must offer.
    pub needs: Feature,
    /// TLS (the "ssl" rows), on the server's TLS port.
    #[serde(default)]
    pub tls: TlsMode,
}

impl RowSpec {
    /// "64 KB file, c=10, keep-alive, cache off"; TLS rows end with
    /// ", TLS full handshakes" or ", TLS resumed".
    pub fn name(&self) -> String {
        format!(
            "{}, c={}, {}, cache {}{}",
            self.case,
            self.connections,
            if self.keepalive {
                "keep-alive"
            } else {
                "no keep-alive"
            },
            match self.cache {
                CacheMode::On => "on",
                CacheMode::Off => "off",
            },
            match self.tls {
                TlsMode::Off => "",
                TlsMode::Full => ", TLS full handshakes",
                TlsMode::Resumed => ", TLS resumed",
            }
        )
    }

    /// The case as the tables print it: with how TLS rows handshake
    /// ("8 KB file over TLS (full handshakes)").
    pub fn case_label(&self) -> String {
        match (self.tls, self.keepalive) {
            (TlsMode::Off, _) | (TlsMode::Resumed, true) => self.case.clone(),
            (TlsMode::Full, _) => format!("{} (full handshakes)", self.case),
            (TlsMode::Resumed, false) => format!("{} (resumed)", self.case),
        }
    }
}

/// A file the rows need, relative to the docroot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixture {
    /// Path under the docroot (`cgi-bin/hello.cgi`).
    pub path: String,
    /// Contents.
    pub contents: FixtureContents,
    /// Its permission bits: 0o755 for programs and scripts, 0o644 for
    /// data, 0o666 for state the scripts write (servers may run them as
    /// another user).
    pub mode: u32,
}

/// What a fixture holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixtureContents {
    /// This many bytes of a fixed printable pattern (the same on every run,
    /// and not trivially compressible).
    Pattern(u64),
    /// These bytes.
    Bytes(Vec<u8>),
    /// A program compiled from this C source with `cc -O2` (skipped, with
    /// the rows that fetch it, when there is no compiler).
    C(String),
    /// A script run by `interpreter` (an absolute path, written as its
    /// `#!` line before `body`; skipped, with the rows that fetch it, when
    /// the interpreter is not installed).
    Script {
        /// The interpreter.
        interpreter: String,
        /// The script after the `#!` line.
        body: String,
    },
}

impl Fixture {
    /// A pattern-filled data file.
    pub fn pattern(path: &str, len: u64) -> Fixture {
        Fixture {
            path: path.to_owned(),
            contents: FixtureContents::Pattern(len),
            mode: 0o644,
        }
    }

    /// A program compiled from C source.
    pub fn c_program(path: &str, source: &str) -> Fixture {
        Fixture {
            path: path.to_owned(),
            contents: FixtureContents::C(source.to_owned()),
            mode: 0o755,
        }
    }

    /// An executable script with a `#!interpreter` line.
    pub fn script(path: &str, interpreter: &str, body: &str) -> Fixture {
        Fixture {
            path: path.to_owned(),
            contents: FixtureContents::Script {
                interpreter: interpreter.to_owned(),
                body: body.to_owned(),
            },
            mode: 0o755,
        }
    }

    /// A file of this text, readable by all.
    pub fn text(path: &str, text: &str) -> Fixture {
        Fixture::bytes(path, text.as_bytes().to_vec())
    }

    /// A file of these bytes, readable by all.
    pub fn bytes(path: &str, bytes: Vec<u8>) -> Fixture {
        Fixture {
            path: path.to_owned(),
            contents: FixtureContents::Bytes(bytes),
            mode: 0o644,
        }
    }

    /// A file the scripts read and write, writable by every user.
    pub fn state(path: &str, bytes: Vec<u8>) -> Fixture {
        Fixture {
            mode: 0o666,
            ..Fixture::bytes(path, bytes)
        }
    }

    /// The URL path that fetches it.
    pub fn url_path(&self) -> String {
        format!("/{}", self.path)
    }

    /// A program or script: made only when a row fetches it.
    fn is_program(&self) -> bool {
        matches!(
            self.contents,
            FixtureContents::C(_) | FixtureContents::Script { .. }
        )
    }
}

/// The CGI "Hello!" program: the reports' smallest script.
pub const HELLO_C: &str = include_str!("fixtures/hello.c");

/// The CGI 64 KB program: 65536 bytes of body in one write.
pub const BODY_64K_C: &str = include_str!("fixtures/64k.c");

/// One C program for both ways of the "persistent" section: plain CGI, or
/// a CGIplus loop when `CGIPLUSEOF` is in its environment; "Hello!", or
/// 65536 bytes when its SCRIPT_NAME holds "64k".
pub const CGIPLUS_C: &str = include_str!("fixtures/cgiplus.c");

/// The Perl interpreter the Perl fixtures name in their `#!` line.
pub const PERL: &str = "/usr/bin/perl";

/// WASD's face2face.pl: "a simple script ... to measure the script
/// environment and its activation latencies".
pub const FACE2FACE_PL: &str = "print \"Content-Type:  text/html\\n\\n<B>Hello!</B>\\n\";\n";

/// WASD's face2face.php (PHP drops the newline after `?>`: 13 bytes).
pub const FACE2FACE_PHP: &str = "<?php echo \"<B>Hello!</B>\"; ?>\n";

/// The standard php_info.php: a script that does some work.
pub const PHP_INFO_PHP: &str = "<?php phpinfo();\n";

/// The least phpinfo() output accepted (about 70 KB on Debian's PHP 8; an
/// error page is far shorter).
pub const PHP_INFO_MIN_BYTES: u64 = 16_384;

/// The WebAssembly modules of the "wasm" rows, each behind its own route
/// `/wasm/<stem>` (a wasm route runs one module).
pub const WASM_MODULES: [&str; 2] = ["hello", "64k"];

/// Where a WebAssembly module of the rows lives in the docroot: WAT text,
/// which tern compiles when it builds the route.
pub fn wasm_module_path(stem: &str) -> String {
    format!("{}/{stem}.wat", &Feature::Wasm.prefix()[1..])
}

/// The "Hello!" module: the CGI program's response, in one write.
pub fn wasm_hello() -> &'static str {
    include_str!("fixtures/hello.wat")
}

/// The 64 KB module: as the CGI program, 65 536 bytes of `x` after the
/// head, the body made at run time rather than shipped in the module.
pub fn wasm_64k() -> &'static str {
    include_str!("fixtures/64k.wat")
}

/// Two ways to serve the same thing in one section, whose req/s the suite
/// divides per server and load, under the section's table ("CGIplus over
/// CGI").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The section.
    pub section: String,
    /// The row case measured (`"Hello!" CGIplus`).
    pub case: String,
    /// The row case it is divided by (`"Hello!" CGI`).
    pub baseline: String,
    /// The ratio aimed for, printed with it (`≥ 10×`).
    pub goal: Option<String>,
}

/// The rows and fixtures of a suite run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    rows: Vec<RowSpec>,
    fixtures: Vec<Fixture>,
    comparisons: Vec<Comparison>,
}

/// WASD's "3.9 MB" file: 7700 blocks of 512 bytes.
pub const SIZE_3_9_MB: u64 = 3_942_400;

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Every section: static files, CGI, persistent programs, engines,
    /// WebAssembly, TLS, and the "webstone" replays.
    pub fn seed() -> Registry {
        let mut r = Registry::static_files();
        r.append(Registry::cgi());
        r.append(Registry::persistent());
        r.append(Registry::engines());
        r.append(Registry::wasm());
        r.append(Registry::ssl());
        r.append(Registry::webstone());
        r
    }

    /// The static-file rows of the founding reports.
    pub fn static_files() -> Registry {
        let mut r = Registry::new();
        r.add_fixture(Fixture::pattern("empty.html", 0));
        r.add_fixture(Fixture::pattern("64k.bin", 65_536));
        r.add_fixture(Fixture::pattern("4m.bin", SIZE_3_9_MB));
        let files = [
            ("0 KB file", "/empty.html", 0),
            ("64 KB file", "/64k.bin", 65_536),
        ];
        for (case, path, len) in files {
            for keepalive in [false, true] {
                for connections in [1, 10] {
                    for cache in [CacheMode::On, CacheMode::Off] {
                        r.add_row(RowSpec {
                            section: "static".to_owned(),
                            case: case.to_owned(),
                            path: path.to_owned(),
                            body_bytes: len,
                            length: LengthCheck::Exact,
                            cache,
                            connections,
                            keepalive,
                            needs: Feature::StaticFiles,
                            tls: TlsMode::Off,
                        });
                    }
                }
            }
        }
        for keepalive in [false, true] {
            for connections in [1, 10] {
                r.add_row(RowSpec {
                    section: "static".to_owned(),
                    case: "3.9 MB file".to_owned(),
                    path: "/4m.bin".to_owned(),
                    body_bytes: SIZE_3_9_MB,
                    length: LengthCheck::Exact,
                    cache: CacheMode::On,
                    connections,
                    keepalive,
                    needs: Feature::StaticFiles,
                    tls: TlsMode::Off,
                });
            }
        }
        r
    }

    /// The CGI rows: "Hello!" (7 bytes) and 64 KB from C programs in
    /// `/cgi-bin/`, at 1 and 10 connections, without keep-alive and with it.
    pub fn cgi() -> Registry {
        let mut r = Registry::new();
        r.add_fixture(Fixture::c_program("cgi-bin/hello.cgi", HELLO_C));
        r.add_fixture(Fixture::c_program("cgi-bin/64k.cgi", BODY_64K_C));
        let programs = [
            ("\"Hello!\"", "/cgi-bin/hello.cgi", 7),
            ("64 KB", "/cgi-bin/64k.cgi", 65_536),
        ];
        for (case, path, len) in programs {
            for keepalive in [false, true] {
                for connections in [1, 10] {
                    r.add_row(RowSpec {
                        section: "cgi".to_owned(),
                        case: case.to_owned(),
                        path: path.to_owned(),
                        body_bytes: len,
                        length: LengthCheck::Exact,
                        cache: CacheMode::On,
                        connections,
                        keepalive,
                        needs: Feature::Cgi,
                        tls: TlsMode::Off,
                    });
                }
            }
        }
        r
    }

    /// The "persistent" rows: "Hello!" and 64 KB at 1 and 10 connections,
    /// without keep-alive and with it, each served four ways: one C program
    /// ([`CGIPLUS_C`]) as CGI under `/cgi-bin/` and under CGIplus under
    /// `/cgiplus-bin/`, and the C FastCGI responder, started beside the
    /// server under `/fcgi/` and spawned by the server under `/fcgi-spawn/`.
    /// CGIplus is compared with CGI.
    pub fn persistent() -> Registry {
        const SECTION: &str = "persistent";
        let mut r = Registry::new();
        for dir in [Feature::Cgi, Feature::CgiPlus] {
            for stem in ["hello", "64k"] {
                let path = format!("{}/plus-{stem}.cgi", &dir.prefix()[1..]);
                r.add_fixture(Fixture::c_program(&path, CGIPLUS_C));
            }
        }
        let ways = [
            ("CGI", Feature::Cgi),
            ("CGIplus", Feature::CgiPlus),
            ("FastCGI", Feature::FastCgi),
            ("FastCGI spawned", Feature::FastCgiSpawned),
        ];
        let bodies = [("\"Hello!\"", "hello", 7), ("64 KB", "64k", 65_536)];
        for (body, stem, len) in bodies {
            for keepalive in [false, true] {
                for connections in [1, 10] {
                    for (way, needs) in ways {
                        let path = match needs {
                            Feature::Cgi | Feature::CgiPlus => {
                                format!("{}/plus-{stem}.cgi", needs.prefix())
                            }
                            _ => format!("{}/{stem}", needs.prefix()),
                        };
                        r.add_row(RowSpec {
                            section: SECTION.to_owned(),
                            case: format!("{body} {way}"),
                            path,
                            body_bytes: len,
                            length: LengthCheck::Exact,
                            cache: CacheMode::On,
                            connections,
                            keepalive,
                            needs,
                            tls: TlsMode::Off,
                        });
                    }
                }
            }
            r.add_comparison(Comparison {
                section: SECTION.to_owned(),
                case: format!("{body} CGIplus"),
                baseline: format!("{body} CGI"),
                goal: None,
            });
        }
        r
    }

    /// The "engines" rows, WASD's persistent scripting table: face2face.pl
    /// in a Perl engine under `/rte/` and as CGI (perl started per
    /// request); face2face.php and php_info.php on php-fpm under `/php/`,
    /// and face2face.php through php-cgi under `/phpcgi/`; at 1 and 10
    /// connections, without keep-alive and with it. Each engine is compared
    /// with its process-per-request way.
    pub fn engines() -> Registry {
        const SECTION: &str = "engines";
        let mut r = Registry::new();
        r.add_fixture(Fixture::script("cgi-bin/face2face.pl", PERL, FACE2FACE_PL));
        r.add_fixture(Fixture::script("rte/face2face.pl", PERL, FACE2FACE_PL));
        r.add_fixture(Fixture::text("php/face2face.php", FACE2FACE_PHP));
        r.add_fixture(Fixture::text("php/php_info.php", PHP_INFO_PHP));
        r.add_fixture(Fixture::text("phpcgi/face2face.php", FACE2FACE_PHP));
        let ways = [
            ("face2face.pl CGI", Feature::Cgi, "face2face.pl", 14),
            (
                "face2face.pl Perl engine",
                Feature::PerlEngine,
                "face2face.pl",
                14,
            ),
            (
                "face2face.php php-fpm",
                Feature::PhpFpm,
                "face2face.php",
                13,
            ),
            (
                "face2face.php php-cgi",
                Feature::PhpCgi,
                "face2face.php",
                13,
            ),
            (
                "php_info.php php-fpm",
                Feature::PhpFpm,
                "php_info.php",
                PHP_INFO_MIN_BYTES,
            ),
        ];
        for keepalive in [false, true] {
            for connections in [1, 10] {
                for (case, needs, file, len) in ways {
                    r.add_row(RowSpec {
                        section: SECTION.to_owned(),
                        case: case.to_owned(),
                        path: format!("{}/{file}", needs.prefix()),
                        body_bytes: len,
                        length: if file == "php_info.php" {
                            LengthCheck::AtLeast
                        } else {
                            LengthCheck::Exact
                        },
                        cache: CacheMode::On,
                        connections,
                        keepalive,
                        needs,
                        tls: TlsMode::Off,
                    });
                }
            }
        }
        for (case, baseline) in [
            ("face2face.pl Perl engine", "face2face.pl CGI"),
            ("face2face.php php-fpm", "face2face.php php-cgi"),
        ] {
            r.add_comparison(Comparison {
                section: SECTION.to_owned(),
                case: case.to_owned(),
                baseline: baseline.to_owned(),
                goal: None,
            });
        }
        r
    }

    /// The "wasm" rows, the IIS report's ISAPI table: the modules
    /// [`WASM_MODULES`] ("Hello!" and 64 KB) run in process under
    /// `/wasm/`, beside the static 0 KB and 64 KB files, the CGI programs
    /// of the same bodies, and the persistent ways (CGIplus, the FastCGI
    /// responder spawned by the server), at 1 and 10 connections, without
    /// keep-alive and with it. WebAssembly is compared with the static file
    /// (the goal: at least half its rate at 10 connections; IIS 5's ISAPI
    /// had 0.47×) and with CGI (at least 10×).
    pub fn wasm() -> Registry {
        const SECTION: &str = "wasm";
        let mut r = Registry::new();
        r.add_fixture(Fixture::pattern("empty.html", 0));
        r.add_fixture(Fixture::pattern("64k.bin", 65_536));
        r.add_fixture(Fixture::c_program("cgi-bin/hello.cgi", HELLO_C));
        r.add_fixture(Fixture::c_program("cgi-bin/64k.cgi", BODY_64K_C));
        for stem in ["hello", "64k"] {
            let path = format!("{}/plus-{stem}.cgi", &Feature::CgiPlus.prefix()[1..]);
            r.add_fixture(Fixture::c_program(&path, CGIPLUS_C));
        }
        r.add_fixture(Fixture::text(&wasm_module_path("hello"), wasm_hello()));
        r.add_fixture(Fixture::text(&wasm_module_path("64k"), wasm_64k()));
        let bodies = [
            ("\"Hello!\"", "hello", "0 KB file", "/empty.html", 7),
            ("64 KB", "64k", "64 KB file", "/64k.bin", 65_536),
        ];
        for (body, stem, file, file_path, len) in bodies {
            let ways = [
                (
                    format!("{body} WebAssembly"),
                    Feature::Wasm,
                    format!("/wasm/{stem}"),
                ),
                (file.to_owned(), Feature::StaticFiles, file_path.to_owned()),
                (
                    format!("{body} CGI"),
                    Feature::Cgi,
                    format!("/cgi-bin/{stem}.cgi"),
                ),
                (
                    format!("{body} CGIplus"),
                    Feature::CgiPlus,
                    format!("/cgiplus-bin/plus-{stem}.cgi"),
                ),
                (
                    format!("{body} FastCGI spawned"),
                    Feature::FastCgiSpawned,
                    format!("/fcgi-spawn/{stem}"),
                ),
            ];
            for keepalive in [false, true] {
                for connections in [1, 10] {
                    for (case, needs, path) in &ways {
                        r.add_row(RowSpec {
                            section: SECTION.to_owned(),
                            case: case.clone(),
                            path: path.clone(),
                            body_bytes: if *needs == Feature::StaticFiles && stem == "hello" {
                                0
                            } else {
                                len
                            },
                            length: LengthCheck::Exact,
                            cache: CacheMode::On,
                            connections,
                            keepalive,
                            needs: *needs,
                            tls: TlsMode::Off,
                        });
                    }
                }
            }
            let goals = [
                (file.to_owned(), "≥ 0.5× at c=10"),
                (format!("{body} CGI"), "≥ 10×"),
            ];
            for (baseline, goal) in goals {
                r.add_comparison(Comparison {
                    section: SECTION.to_owned(),
                    case: format!("{body} WebAssembly"),
                    baseline,
                    goal: Some(goal.to_owned()),
                });
            }
        }
        r
    }

    /// The "ssl" rows: the IIS 5 report's Table 4.3 (an 8 KB file,
    /// in-process WebAssembly for ISAPI, the persistent FastCGI responder,
    /// CGI) and WASD's file rows (0 KB and 64 KB), at 1 and 10
    /// connections, each without TLS and with it, in three ways of
    /// connecting: a new connection per request with every handshake full
    /// (as the reports' clients did), a new connection with the session
    /// resumed, and keep-alive. TLS over plain is compared per server, as
    /// the seeds did (IIS: 1109 req/s static without SSL, 48 with).
    pub fn ssl() -> Registry {
        const SECTION: &str = "ssl";
        let mut r = Registry::new();
        r.add_fixture(Fixture::pattern("8k.bin", 8_192));
        r.add_fixture(Fixture::pattern("empty.html", 0));
        r.add_fixture(Fixture::pattern("64k.bin", 65_536));
        r.add_fixture(Fixture::c_program("cgi-bin/hello.cgi", HELLO_C));
        r.add_fixture(Fixture::text(&wasm_module_path("hello"), wasm_hello()));
        let cases = [
            (
                "8 KB file",
                "/8k.bin".to_owned(),
                8_192,
                Feature::StaticFiles,
            ),
            (
                "\"Hello!\" WebAssembly",
                format!("{}/hello", Feature::Wasm.prefix()),
                7,
                Feature::Wasm,
            ),
            (
                "\"Hello!\" FastCGI",
                format!("{}/hello", Feature::FastCgi.prefix()),
                7,
                Feature::FastCgi,
            ),
            (
                "\"Hello!\" CGI",
                "/cgi-bin/hello.cgi".to_owned(),
                7,
                Feature::Cgi,
            ),
            (
                "0 KB file",
                "/empty.html".to_owned(),
                0,
                Feature::StaticFiles,
            ),
            (
                "64 KB file",
                "/64k.bin".to_owned(),
                65_536,
                Feature::StaticFiles,
            ),
        ];
        // Plain, then TLS, side by side at each load.
        let modes = [
            (false, TlsMode::Off),
            (false, TlsMode::Full),
            (false, TlsMode::Resumed),
            (true, TlsMode::Off),
            (true, TlsMode::Resumed),
        ];
        for (case, path, len, needs) in &cases {
            for connections in [1, 10] {
                for (keepalive, tls) in modes {
                    r.add_row(RowSpec {
                        section: SECTION.to_owned(),
                        case: if tls == TlsMode::Off {
                            (*case).to_owned()
                        } else {
                            format!("{case} over TLS")
                        },
                        path: path.clone(),
                        body_bytes: *len,
                        length: LengthCheck::Exact,
                        cache: CacheMode::On,
                        connections,
                        keepalive,
                        needs: *needs,
                        tls,
                    });
                }
            }
            r.add_comparison(Comparison {
                section: SECTION.to_owned(),
                case: format!("{case} over TLS"),
                baseline: (*case).to_owned(),
                goal: None,
            });
        }
        r
    }

    /// The "webstone" rows (see the `webstone` module): one per [`Program`]
    /// that can serve a model's dynamic files, each fetching its URL (the
    /// static way: the 0 KB file). They are checked, not measured: they
    /// bring in the programs, the scripts' state and the gateways, and
    /// their check tells which programs each server can run in the
    /// section's replays.
    pub fn webstone() -> Registry {
        use tern_workload::materialize::{corpus, CORPUS_BYTES};
        let mut r = Registry::new();
        r.add_fixture(Fixture::pattern(&STATIC_CHECK[1..], 0));
        let plus = format!("{}/plus-hello.cgi", &Feature::CgiPlus.prefix()[1..]);
        r.add_fixture(Fixture::c_program(&plus, CGIPLUS_C));
        // tern routes every module of WASM_MODULES: both are written.
        r.add_fixture(Fixture::text(&wasm_module_path("hello"), wasm_hello()));
        r.add_fixture(Fixture::text(&wasm_module_path("64k"), wasm_64k()));
        r.add_fixture(Fixture::state(
            &format!("{WEBSTONE_STATE}/counter"),
            b"0\n".to_vec(),
        ));
        r.add_fixture(Fixture::bytes(
            &format!("{WEBSTONE_STATE}/corpus.txt"),
            corpus(CORPUS_BYTES),
        ));
        for program in Program::ALL {
            let url = program.url();
            if program.script.perl_file().is_some() {
                if let Some(url) = &url {
                    r.add_fixture(Fixture::script(
                        &url[1..],
                        PERL,
                        &program.script.perl_body(),
                    ));
                }
            }
            r.add_row(RowSpec {
                section: WEBSTONE.to_owned(),
                case: format!("dynamic pages {}", program.label()),
                body_bytes: if url.is_some() { 7 } else { 0 },
                path: url.unwrap_or_else(|| STATIC_CHECK.to_owned()),
                length: LengthCheck::Exact,
                cache: CacheMode::On,
                connections: 1,
                keepalive: true,
                needs: program.way.feature(),
                tls: TlsMode::Off,
            });
        }
        r
    }

    /// Whether any row speaks TLS (the servers then get a TLS port).
    pub fn uses_tls(&self) -> bool {
        self.rows.iter().any(|r| r.tls != TlsMode::Off)
    }

    /// Adds another registry's rows, fixtures and comparisons after these.
    /// A fixture at a path already here is the same file (sections share
    /// the static files and CGI programs) and is not added twice.
    pub fn append(&mut self, other: Registry) {
        self.rows.extend(other.rows);
        for f in other.fixtures {
            self.add_fixture(f);
        }
        self.comparisons.extend(other.comparisons);
    }

    /// Asks for a ratio under a section's table.
    pub fn add_comparison(&mut self, comparison: Comparison) {
        self.comparisons.push(comparison);
    }

    /// The comparisons.
    pub fn comparisons(&self) -> &[Comparison] {
        &self.comparisons
    }

    /// Adds a row (rows are measured and printed in the order added).
    pub fn add_row(&mut self, row: RowSpec) {
        self.rows.push(row);
    }

    /// Adds a file to the docroot, unless one is already at its path.
    pub fn add_fixture(&mut self, fixture: Fixture) {
        if !self.fixtures.iter().any(|f| f.path == fixture.path) {
            self.fixtures.push(fixture);
        }
    }

    /// The rows.
    pub fn rows(&self) -> &[RowSpec] {
        &self.rows
    }

    /// The fixtures.
    pub fn fixtures(&self) -> &[Fixture] {
        &self.fixtures
    }

    /// Keeps only the rows whose name contains `text`.
    pub fn retain_matching(&mut self, text: &str) {
        self.rows.retain(|r| r.name().contains(text));
    }

    /// The sections, in row order.
    pub fn sections(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.section.as_str()) {
                out.push(&r.section);
            }
        }
        out
    }

    /// Keeps only the rows of these sections.
    pub fn retain_sections(&mut self, sections: &[String]) {
        self.rows.retain(|r| sections.contains(&r.section));
    }

    /// Removes the rows of `section`; returns how many there were.
    pub fn remove_section(&mut self, section: &str) -> usize {
        let before = self.rows.len();
        self.rows.retain(|r| r.section != section);
        before - self.rows.len()
    }

    /// Removes the rows that fetch `url_path`; returns how many there were.
    pub fn remove_rows_fetching(&mut self, url_path: &str) -> usize {
        let before = self.rows.len();
        self.rows.retain(|r| r.path != url_path);
        before - self.rows.len()
    }

    /// Removes the rows that need `feature`; returns how many there were.
    pub fn remove_rows_needing(&mut self, feature: Feature) -> usize {
        let before = self.rows.len();
        self.rows.retain(|r| r.needs != feature);
        before - self.rows.len()
    }

    /// Whether any row needs `feature`.
    pub fn needs(&self, feature: Feature) -> bool {
        self.rows.iter().any(|r| r.needs == feature)
    }

    /// The gateway features the rows need, in [`Feature::GATEWAYS`] order.
    pub fn gateways(&self) -> Vec<Feature> {
        Feature::GATEWAYS
            .into_iter()
            .filter(|&f| self.needs(f))
            .collect()
    }

    /// The fixtures worth making: data files always, programs and scripts
    /// only when a row fetches them (compiling is the slow part of the
    /// start, and a missing interpreter matters only then).
    pub fn fixtures_in_use(&self) -> Vec<Fixture> {
        self.fixtures
            .iter()
            .filter(|f| !f.is_program() || self.rows.iter().any(|r| r.path == f.url_path()))
            .cloned()
            .collect()
    }
}

/// The section of the WebStone-SS replays (the `webstone` module).
pub const WEBSTONE: &str = "webstone";

/// How a server serves the model's dynamic files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Way {
    /// As static files of their logged size: the static-only baseline.
    Static,
    /// A CGI program, a process per request.
    Cgi,
    /// tern's Perl engine: the CGI scripts in one kept interpreter.
    PerlEngine,
    /// The CGIplus "Hello!" program, started once (tern).
    CgiPlus,
    /// The C FastCGI responder started beside the server.
    FastCgi,
    /// The same responder spawned by the server (tern).
    FastCgiSpawned,
    /// The "Hello!" WebAssembly module, in process (tern).
    Wasm,
}

impl Way {
    /// What a server must offer to serve this way.
    pub fn feature(self) -> Feature {
        match self {
            Way::Static => Feature::StaticFiles,
            Way::Cgi => Feature::Cgi,
            Way::PerlEngine => Feature::PerlEngine,
            Way::CgiPlus => Feature::CgiPlus,
            Way::FastCgi => Feature::FastCgi,
            Way::FastCgiSpawned => Feature::FastCgiSpawned,
            Way::Wasm => Feature::Wasm,
        }
    }

    /// As the table names it.
    pub fn label(self) -> &'static str {
        match self {
            Way::Static => "static",
            Way::Cgi => "CGI",
            Way::PerlEngine => "Perl engine",
            Way::CgiPlus => "CGIplus",
            Way::FastCgi => "FastCGI",
            Way::FastCgiSpawned => "FastCGI spawned",
            Way::Wasm => "WebAssembly",
        }
    }
}

/// What runs for a dynamic file: the report's three Perl scripts (the
/// same files as CGI and in the Perl engine), or a way's "Hello!"
/// program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Script {
    /// The file itself (the static way).
    File,
    /// The way's "Hello!" program (C, or the WebAssembly module).
    Hello,
    /// The report's trivial Perl script: print and exit.
    Trivial,
    /// The report's counter: a number in a file, incremented under an
    /// exclusive lock ([`tern_workload::materialize::PERL_COUNTER`]).
    Counter,
    /// The report's CPU-heavy search: a regular expression over a 4 MiB
    /// text ([`tern_workload::materialize::PERL_SEARCH`]).
    Search,
}

impl Script {
    /// The Perl script's file name (`None`: not a Perl script).
    fn perl_file(self) -> Option<&'static str> {
        match self {
            Script::File | Script::Hello => None,
            Script::Trivial => Some("ws-trivial.pl"),
            Script::Counter => Some("ws-counter.pl"),
            Script::Search => Some("ws-search.pl"),
        }
    }

    /// The Perl script's text after its `#!` line: the work, then
    /// "Hello!" (7 bytes of body, as every program of the suite). The
    /// state it keeps is in [`WEBSTONE_STATE`], found from
    /// `SCRIPT_FILENAME` (CGI does not promise a working directory), or
    /// from `$0` where a server does not set it (Python's CGI handler).
    fn perl_body(self) -> String {
        use tern_workload::materialize::{PERL_COUNTER, PERL_SEARCH};
        let state = format!(
            "my ($dir) = ($ENV{{SCRIPT_FILENAME}} || $0) =~ m{{^(.*)/[^/]*$}} or die \"no SCRIPT_FILENAME, and $0 names no directory\";\nmy $state = \"$dir/../{WEBSTONE_STATE}\";\n"
        );
        let work = match self {
            Script::File | Script::Hello | Script::Trivial => String::new(),
            Script::Counter => {
                format!("{state}my $counter_path = \"$state/counter\";\n{PERL_COUNTER}")
            }
            Script::Search => {
                format!("{state}my $corpus_path = \"$state/corpus.txt\";\n{PERL_SEARCH}")
            }
        };
        format!("use strict;\nuse warnings;\n{work}print \"Content-Type: text/plain\\n\\nHello!\\n\";\n")
    }
}

/// Where the webstone scripts keep their state, under the docroot: the
/// counter and the search's corpus.
pub const WEBSTONE_STATE: &str = "ws-state";

/// One way of serving a model's dynamic files in the webstone replays: a
/// way, and what it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Program {
    /// How the server runs it.
    pub way: Way,
    /// What it runs.
    pub script: Script,
}

impl Program {
    /// Every program, the static baseline first: the report's three Perl
    /// scripts as CGI (every server) and in tern's Perl engine, then the
    /// persistent ways' "Hello!" programs.
    pub const ALL: [Program; 11] = [
        Program::new(Way::Static, Script::File),
        Program::new(Way::Cgi, Script::Trivial),
        Program::new(Way::Cgi, Script::Counter),
        Program::new(Way::Cgi, Script::Search),
        Program::new(Way::PerlEngine, Script::Trivial),
        Program::new(Way::PerlEngine, Script::Counter),
        Program::new(Way::PerlEngine, Script::Search),
        Program::new(Way::CgiPlus, Script::Hello),
        Program::new(Way::FastCgi, Script::Hello),
        Program::new(Way::FastCgiSpawned, Script::Hello),
        Program::new(Way::Wasm, Script::Hello),
    ];

    const fn new(way: Way, script: Script) -> Program {
        Program { way, script }
    }

    /// The program of a webstone row (its URL and what it needs).
    pub fn of(row: &RowSpec) -> Option<Program> {
        Program::ALL.into_iter().find(|p| {
            p.way.feature() == row.needs && p.url().as_deref().unwrap_or(STATIC_CHECK) == row.path
        })
    }

    /// As the table names it: "CGI search.pl", "FastCGI Hello! (C)".
    pub fn label(self) -> String {
        match (self.script.perl_file(), self.script) {
            (Some(file), _) => format!("{} {}", self.way.label(), &file[3..]),
            (None, Script::Hello) if self.way == Way::Wasm => {
                format!("{} Hello! (WAT)", self.way.label())
            }
            (None, Script::Hello) => format!("{} Hello! (C)", self.way.label()),
            (None, _) => self.way.label().to_owned(),
        }
    }

    /// The URL that answers every dynamic file (`None`: the files
    /// themselves, under the webstone section's site prefix). The "Hello!"
    /// programs are the "persistent" and "wasm" rows'.
    pub fn url(self) -> Option<String> {
        if let Some(file) = self.script.perl_file() {
            return Some(format!("{}/{file}", self.way.feature().prefix()));
        }
        let hello = match self.way {
            Way::Static => return None,
            Way::Cgi => "/cgi-bin/hello.cgi",
            Way::PerlEngine => "/rte/face2face.pl",
            Way::CgiPlus => "/cgiplus-bin/plus-hello.cgi",
            Way::FastCgi => "/fcgi/hello",
            Way::FastCgiSpawned => "/fcgi-spawn/hello",
            Way::Wasm => "/wasm/hello",
        };
        Some(hello.to_owned())
    }
}

/// What the static way's row checks: the 0 KB file.
const STATIC_CHECK: &str = "/empty.html";

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn seed_has_the_wasd_grid() {
        let r = Registry::static_files();
        assert_eq!(r.rows().len(), 2 * 2 * 2 * 2 + 4);
        assert!(r.rows().iter().all(|row| row.needs == Feature::StaticFiles));
        let names: Vec<String> = r.rows().iter().map(RowSpec::name).collect();
        assert!(names.contains(&"64 KB file, c=10, no keep-alive, cache off".to_owned()));
        let mut filtered = r.clone();
        filtered.retain_matching("3.9 MB");
        assert_eq!(filtered.rows().len(), 4);
    }

    #[test]
    fn cgi_rows_follow_the_static_ones_and_sections_filter() {
        let mut r = Registry::static_files();
        r.append(Registry::cgi());
        assert_eq!(r.sections(), ["static", "cgi"]);
        let cgi: Vec<&RowSpec> = r.rows().iter().filter(|x| x.section == "cgi").collect();
        assert_eq!(cgi.len(), 2 * 2 * 2);
        assert!(cgi
            .iter()
            .all(|x| x.needs == Feature::Cgi && x.cache == CacheMode::On));
        let names: Vec<String> = cgi.iter().map(|x| x.name()).collect();
        assert!(names.contains(&"\"Hello!\", c=10, keep-alive, cache on".to_owned()));
        assert!(cgi
            .iter()
            .any(|x| x.path == "/cgi-bin/64k.cgi" && x.body_bytes == 65_536));
        assert_eq!(r.fixtures_in_use().len(), 5, "3 files, 2 programs");

        r.retain_sections(&["cgi".to_owned()]);
        assert_eq!(r.rows().len(), 8);
        assert!(r.needs(Feature::Cgi) && !r.needs(Feature::StaticFiles));
        assert_eq!(r.remove_rows_fetching("/cgi-bin/hello.cgi"), 4);
        let programs: Vec<String> = r
            .fixtures_in_use()
            .iter()
            .filter(|f| matches!(f.contents, FixtureContents::C(_)))
            .map(|f| f.path.clone())
            .collect();
        assert_eq!(
            programs,
            ["cgi-bin/64k.cgi"],
            "unused programs are not built"
        );
    }

    #[test]
    fn the_seed_runs_every_section_in_order() {
        let r = Registry::seed();
        assert_eq!(
            r.sections(),
            [
                "static",
                "cgi",
                "persistent",
                "engines",
                "wasm",
                "ssl",
                "webstone"
            ]
        );
        let mut paths: Vec<&str> = r.fixtures().iter().map(|f| f.path.as_str()).collect();
        let all = paths.len();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), all, "sections share fixtures, made once");
        assert_eq!(
            r.gateways(),
            Feature::GATEWAYS,
            "every gateway has rows by default"
        );
        // A section's table may repeat another's row ("wasm" measures the
        // static file and CGI beside its modules), but not its own.
        let names: Vec<(String, String)> = r
            .rows()
            .iter()
            .map(|x| (x.section.clone(), x.name()))
            .collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            names.len(),
            "row names tell a section's rows apart"
        );
    }

    #[test]
    fn persistent_rows_serve_one_program_four_ways() {
        let r = Registry::persistent();
        assert_eq!(r.sections(), ["persistent"]);
        // 2 bodies x 2 keep-alive x 2 connection counts x 4 ways.
        assert_eq!(r.rows().len(), 32);
        let names: Vec<String> = r.rows().iter().map(RowSpec::name).collect();
        for name in [
            "\"Hello!\" CGI, c=1, no keep-alive, cache on",
            "\"Hello!\" CGIplus, c=1, no keep-alive, cache on",
            "\"Hello!\" FastCGI, c=10, keep-alive, cache on",
            "64 KB FastCGI spawned, c=10, no keep-alive, cache on",
            "64 KB CGIplus, c=1, keep-alive, cache on",
        ] {
            assert!(names.contains(&name.to_owned()), "{name}: {names:?}");
        }
        // Each way fetches its own prefix; CGI and CGIplus the same program.
        for row in r.rows() {
            assert!(row.path.starts_with(row.needs.prefix()), "{row:?}");
            assert_eq!(row.length, LengthCheck::Exact);
            let big = row.case.starts_with("64 KB");
            assert_eq!(row.body_bytes, if big { 65_536 } else { 7 });
            assert_eq!(row.path.contains("64k"), big, "the programs look for 64k");
        }
        let programs: Vec<&Fixture> = r
            .fixtures()
            .iter()
            .filter(|f| matches!(&f.contents, FixtureContents::C(c) if c == CGIPLUS_C))
            .collect();
        assert_eq!(
            programs.len(),
            4,
            "hello and 64k, under /cgi-bin/ and /cgiplus-bin/"
        );
        assert_eq!(r.fixtures_in_use().len(), 4, "every program is fetched");
        // The first rows: one load, four ways, side by side.
        let first: Vec<Feature> = r.rows()[..4].iter().map(|x| x.needs).collect();
        assert_eq!(
            first,
            [
                Feature::Cgi,
                Feature::CgiPlus,
                Feature::FastCgi,
                Feature::FastCgiSpawned
            ]
        );
        let pairs: Vec<(&str, &str)> = r
            .comparisons()
            .iter()
            .map(|c| (c.case.as_str(), c.baseline.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("\"Hello!\" CGIplus", "\"Hello!\" CGI"),
                ("64 KB CGIplus", "64 KB CGI")
            ]
        );
    }

    #[test]
    fn engine_rows_are_wasds_persistent_scripting_table() {
        let mut r = Registry::engines();
        assert_eq!(r.rows().len(), 2 * 2 * 5);
        let cases: Vec<&str> = r.rows()[..5].iter().map(|x| x.case.as_str()).collect();
        assert_eq!(
            cases,
            [
                "face2face.pl CGI",
                "face2face.pl Perl engine",
                "face2face.php php-fpm",
                "face2face.php php-cgi",
                "php_info.php php-fpm"
            ]
        );
        let paths: Vec<&str> = r.rows()[..5].iter().map(|x| x.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/cgi-bin/face2face.pl",
                "/rte/face2face.pl",
                "/php/face2face.php",
                "/phpcgi/face2face.php",
                "/php/php_info.php"
            ]
        );
        let info = &r.rows()[4];
        assert_eq!(info.length, LengthCheck::AtLeast);
        assert!(info.length.accepts(PHP_INFO_MIN_BYTES, 73_000));
        assert!(
            !info.length.accepts(PHP_INFO_MIN_BYTES, 500),
            "an error page"
        );
        assert!(LengthCheck::Exact.accepts(13, 13) && !LengthCheck::Exact.accepts(13, 14));
        assert_eq!(r.comparisons().len(), 2);
        // Perl scripts are made only when fetched (a missing perl matters then).
        let scripts = |r: &Registry| {
            r.fixtures_in_use()
                .iter()
                .filter(|f| matches!(f.contents, FixtureContents::Script { .. }))
                .count()
        };
        assert_eq!(scripts(&r), 2);
        r.retain_matching("php");
        assert_eq!(scripts(&r), 0);
        assert_eq!(r.gateways(), [Feature::PhpFpm, Feature::PhpCgi]);
        assert_eq!(r.remove_rows_needing(Feature::PhpFpm), 8);
        assert_eq!(r.gateways(), [Feature::PhpCgi]);
    }

    #[test]
    fn wasm_rows_are_the_isapi_table_with_goals() {
        let r = Registry::wasm();
        assert_eq!(r.sections(), ["wasm"]);
        // 2 bodies x 2 keep-alive x 2 connection counts x 5 ways.
        assert_eq!(r.rows().len(), 40);
        let first: Vec<(&str, &str, u64)> = r.rows()[..5]
            .iter()
            .map(|x| (x.case.as_str(), x.path.as_str(), x.body_bytes))
            .collect();
        assert_eq!(
            first,
            [
                ("\"Hello!\" WebAssembly", "/wasm/hello", 7),
                ("0 KB file", "/empty.html", 0),
                ("\"Hello!\" CGI", "/cgi-bin/hello.cgi", 7),
                ("\"Hello!\" CGIplus", "/cgiplus-bin/plus-hello.cgi", 7),
                ("\"Hello!\" FastCGI spawned", "/fcgi-spawn/hello", 7),
            ]
        );
        for row in r.rows() {
            assert!(row.path.starts_with(row.needs.prefix()), "{row:?}");
            assert_eq!(row.cache, CacheMode::On);
        }
        let goals: Vec<(&str, &str, Option<&str>)> = r
            .comparisons()
            .iter()
            .map(|c| (c.case.as_str(), c.baseline.as_str(), c.goal.as_deref()))
            .collect();
        assert_eq!(
            goals,
            [
                (
                    "\"Hello!\" WebAssembly",
                    "0 KB file",
                    Some("≥ 0.5× at c=10")
                ),
                ("\"Hello!\" WebAssembly", "\"Hello!\" CGI", Some("≥ 10×")),
                ("64 KB WebAssembly", "64 KB file", Some("≥ 0.5× at c=10")),
                ("64 KB WebAssembly", "64 KB CGI", Some("≥ 10×")),
            ]
        );
        // Each compared case has rows at the same loads.
        for c in r.comparisons() {
            for case in [&c.case, &c.baseline] {
                assert_eq!(r.rows().iter().filter(|x| &x.case == case).count(), 4);
            }
        }
        let modules: Vec<&str> = r
            .fixtures()
            .iter()
            .filter(|f| f.path.ends_with(".wat"))
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(modules, ["wasm/hello.wat", "wasm/64k.wat"]);
    }

    #[test]
    fn ssl_rows_pair_every_case_with_itself_over_tls() {
        let r = Registry::ssl();
        assert_eq!(r.sections(), ["ssl"]);
        assert!(r.uses_tls() && !Registry::static_files().uses_tls());
        // 6 cases x 2 connection counts x (plain, TLS full, TLS resumed,
        // plain keep-alive, TLS keep-alive).
        assert_eq!(r.rows().len(), 60);
        let first: Vec<String> = r.rows()[..5].iter().map(RowSpec::name).collect();
        assert_eq!(
            first,
            [
                "8 KB file, c=1, no keep-alive, cache on",
                "8 KB file over TLS, c=1, no keep-alive, cache on, TLS full handshakes",
                "8 KB file over TLS, c=1, no keep-alive, cache on, TLS resumed",
                "8 KB file, c=1, keep-alive, cache on",
                "8 KB file over TLS, c=1, keep-alive, cache on, TLS resumed",
            ]
        );
        assert_eq!(
            r.rows()[1].case_label(),
            "8 KB file over TLS (full handshakes)"
        );
        assert_eq!(r.rows()[4].case_label(), "8 KB file over TLS");
        assert_eq!(
            r.gateways(),
            [Feature::Cgi, Feature::FastCgi, Feature::Wasm]
        );
        for row in r.rows() {
            assert!(row.path.starts_with(row.needs.prefix()), "{row:?}");
        }
        assert_eq!(r.comparisons().len(), 6);
        assert_eq!(r.comparisons()[0].baseline, "8 KB file");
        assert_eq!(r.comparisons()[0].case, "8 KB file over TLS");
    }

    #[test]
    fn webstone_rows_carry_one_program_each_and_bring_it() {
        let r = Registry::webstone();
        assert_eq!(r.sections(), ["webstone"]);
        let ways: Vec<Feature> = r.rows().iter().map(|x| x.needs).collect();
        assert_eq!(ways, Program::ALL.map(|p| p.way.feature()));
        for row in r.rows() {
            assert!(row.path.starts_with(row.needs.prefix()), "{row:?}");
            assert_eq!(row.cache, CacheMode::On);
            assert!(Program::of(row).is_some(), "{row:?}");
        }
        let labels: Vec<String> = Program::ALL.map(Program::label).to_vec();
        assert_eq!(labels[3], "CGI search.pl");
        assert_eq!(labels[5], "Perl engine counter.pl");
        assert_eq!(labels[8], "FastCGI Hello! (C)");
        assert_eq!(
            r.gateways(),
            [
                Feature::Cgi,
                Feature::CgiPlus,
                Feature::FastCgi,
                Feature::FastCgiSpawned,
                Feature::PerlEngine,
                Feature::Wasm
            ]
        );
        let made: Vec<String> = r.fixtures_in_use().into_iter().map(|f| f.path).collect();
        for path in [
            "empty.html",
            "cgi-bin/ws-trivial.pl",
            "cgi-bin/ws-search.pl",
            "rte/ws-counter.pl",
            "ws-state/counter",
            "ws-state/corpus.txt",
            "cgiplus-bin/plus-hello.cgi",
            "wasm/hello.wat",
            "wasm/64k.wat",
        ] {
            assert!(made.iter().any(|m| m == path), "{path}: {made:?}");
        }
        let mut seed = Registry::seed();
        assert_eq!(seed.remove_section("webstone"), Program::ALL.len());
        assert!(!seed.sections().contains(&"webstone"));
    }

    /// The webstone Perl scripts run by a real perl as CGI runs them: from
    /// another working directory, their state found by SCRIPT_FILENAME.
    #[test]
    fn the_webstone_scripts_count_and_search() {
        let dir = tempfile::tempdir().unwrap();
        let docroot = dir.path();
        let r = Registry::webstone();
        for f in r.fixtures() {
            if matches!(f.contents, FixtureContents::Bytes(_)) || f.path.starts_with("cgi-bin/ws-")
            {
                crate::workdir::write_fixture(docroot, f).unwrap();
            }
        }
        let run = |script: Script| {
            let file = docroot.join("cgi-bin").join(script.perl_file().unwrap());
            let out = std::process::Command::new(PERL)
                .arg(&file)
                .current_dir("/")
                .env("SCRIPT_FILENAME", &file)
                .output()
                .unwrap();
            assert!(out.status.success(), "{script:?}: {out:?}");
            assert!(out.stderr.is_empty(), "{script:?}: {out:?}");
            assert_eq!(out.stdout, b"Content-Type: text/plain\n\nHello!\n");
        };
        for script in [
            Script::Trivial,
            Script::Counter,
            Script::Counter,
            Script::Search,
        ] {
            run(script);
        }
        let count = std::fs::read_to_string(docroot.join("ws-state/counter")).unwrap();
        assert_eq!(count, "2\n");
        let state = std::fs::metadata(docroot.join("ws-state/counter")).unwrap();
        assert_eq!(state.permissions().mode() & 0o777, 0o666);
        // Without its state the script fails loudly, not silently.
        std::fs::remove_file(docroot.join("ws-state/corpus.txt")).unwrap();
        let file = docroot.join("cgi-bin/ws-search.pl");
        let out = std::process::Command::new(PERL)
            .arg(&file)
            .env("SCRIPT_FILENAME", &file)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("corpus"),
            "{out:?}"
        );
    }

    #[test]
    fn the_wasm_modules_are_valid_wasi_commands() {
        for text in [wasm_hello(), wasm_64k()] {
            let binary = wat::parse_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert!(binary.starts_with(b"\0asm"));
            assert!(text.contains("(export \"_start\")") && text.contains("(export \"memory\")"));
        }
        assert!(wasm_64k().contains("(i32.const 65536) (i32.const 65536)"));
        assert!(wasm_hello().contains("Content-Type: text/plain\\n\\nHello!\\n"));
    }

    #[test]
    fn the_wasm_modules_write_their_whole_head() {
        // The lengths are written out in the fixtures; the heads are those
        // of the CGI programs.
        for (text, head) in [
            (wasm_hello(), "Content-Type: text/plain\n\nHello!\n"),
            (wasm_64k(), "Content-Type: application/octet-stream\n\n"),
        ] {
            let call = format!("(call $write (i32.const 1024) (i32.const {}))", head.len());
            assert!(text.contains(&call), "{call}\n{text}");
            assert!(text.contains(&format!("{head:?}")), "{head:?}\n{text}");
        }
    }
}
