//! The row registry: what the suite measures. A row is a URL path, a load
//! (connections, keep-alive), the server variant it needs (file cache on or
//! off) and the feature a server must offer to take part; fixtures are the
//! files the rows need in the docroot.
//!
//! [`Registry::seed`] holds two sections. "static": the static-file rows of
//! the founding reports (WASD 21.1: 0 KB and 64 KB files at 1 and 10
//! connections, cache on and off; the 3.9 MB transfer-rate file), each
//! without keep-alive as in the reports and with it. "cgi": a process per
//! request, the reports' "Hello!" and a 64 KB body from C programs compiled
//! at start, at 1 and 10 connections, with and without keep-alive.
//! Persistent-script and WebAssembly rows come the same way: `add_fixture`
//! for their scripts, `add_row` with a new [`Feature`], and the servers that
//! offer it (see [`super::server::ServerSpec::offers`]) take part.

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
    /// Server variant.
    pub cache: CacheMode,
    /// Concurrent connections.
    pub connections: u32,
    /// Keep-alive on.
    pub keepalive: bool,
    /// What a server must offer.
    pub needs: Feature,
}

impl RowSpec {
    /// "64 KB file, c=10, keep-alive, cache off".
    pub fn name(&self) -> String {
        format!(
            "{}, c={}, {}, cache {}",
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
            }
        )
    }
}

/// A file the rows need, relative to the docroot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixture {
    /// Path under the docroot (`cgi-bin/hello.cgi`).
    pub path: String,
    /// Contents.
    pub contents: FixtureContents,
    /// Make it executable (scripts).
    pub executable: bool,
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
}

impl Fixture {
    /// A pattern-filled data file.
    pub fn pattern(path: &str, len: u64) -> Fixture {
        Fixture {
            path: path.to_owned(),
            contents: FixtureContents::Pattern(len),
            executable: false,
        }
    }

    /// A program compiled from C source.
    pub fn c_program(path: &str, source: &str) -> Fixture {
        Fixture {
            path: path.to_owned(),
            contents: FixtureContents::C(source.to_owned()),
            executable: true,
        }
    }

    /// The URL path that fetches it.
    pub fn url_path(&self) -> String {
        format!("/{}", self.path)
    }
}

/// The CGI "Hello!" program: the reports' smallest script.
pub const HELLO_C: &str = r#"#include <stdio.h>
int main(void) { fputs("Content-Type: text/plain\n\nHello!\n", stdout); return 0; }
"#;

/// The CGI 64 KB program: 65536 bytes of body in one write.
pub const BODY_64K_C: &str = r#"#include <stdio.h>
#include <string.h>
static char body[65536];
int main(void) {
    memset(body, 'x', sizeof body);
    fputs("Content-Type: application/octet-stream\n\n", stdout);
    fwrite(body, 1, sizeof body, stdout);
    return 0;
}
"#;

/// The rows and fixtures of a suite run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    rows: Vec<RowSpec>,
    fixtures: Vec<Fixture>,
}

/// WASD's "3.9 MB" file: 7700 blocks of 512 bytes.
pub const SIZE_3_9_MB: u64 = 3_942_400;

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Every section: static files, then CGI.
    pub fn seed() -> Registry {
        let mut r = Registry::static_files();
        r.append(Registry::cgi());
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
                            cache,
                            connections,
                            keepalive,
                            needs: Feature::StaticFiles,
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
                    cache: CacheMode::On,
                    connections,
                    keepalive,
                    needs: Feature::StaticFiles,
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
                        cache: CacheMode::On,
                        connections,
                        keepalive,
                        needs: Feature::Cgi,
                    });
                }
            }
        }
        r
    }

    /// Adds another registry's rows and fixtures after these.
    pub fn append(&mut self, other: Registry) {
        self.rows.extend(other.rows);
        self.fixtures.extend(other.fixtures);
    }

    /// Adds a row (rows are measured and printed in the order added).
    pub fn add_row(&mut self, row: RowSpec) {
        self.rows.push(row);
    }

    /// Adds a file to the docroot.
    pub fn add_fixture(&mut self, fixture: Fixture) {
        self.fixtures.push(fixture);
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

    /// Removes the rows that fetch `url_path`; returns how many there were.
    pub fn remove_rows_fetching(&mut self, url_path: &str) -> usize {
        let before = self.rows.len();
        self.rows.retain(|r| r.path != url_path);
        before - self.rows.len()
    }

    /// Whether any row needs `feature`.
    pub fn needs(&self, feature: Feature) -> bool {
        self.rows.iter().any(|r| r.needs == feature)
    }

    /// The fixtures worth making: data files always, programs only when a
    /// row fetches them (compiling is the slow part of the start).
    pub fn fixtures_in_use(&self) -> Vec<Fixture> {
        self.fixtures
            .iter()
            .filter(|f| {
                !matches!(f.contents, FixtureContents::C(_))
                    || self.rows.iter().any(|r| r.path == f.url_path())
            })
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut r = Registry::seed();
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
}
