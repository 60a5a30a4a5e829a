//! The row registry: what the suite measures. A row is a URL path, a load
//! (connections, keep-alive), the server variant it needs (file cache on or
//! off) and the feature a server must offer to take part; fixtures are the
//! files the rows need in the docroot.
//!
//! [`Registry::seed`] holds the static-file rows of the founding reports
//! (WASD 21.1: 0 KB and 64 KB files at 1 and 10 connections, cache on and
//! off; the 3.9 MB transfer-rate file), each without keep-alive as in the
//! reports and with it. Later work adds CGI, persistent-script and
//! WebAssembly rows the same way: `add_fixture` for its scripts, `add_row`
//! with a new [`Feature`], and the servers that offer it (see
//! [`super::server::ServerSpec::offers`]) take part; the others show "n/a".

use serde::{Deserialize, Serialize};

/// What a server must support to take part in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Feature {
    /// Files from the docroot.
    StaticFiles,
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
    /// Table it belongs to ("static").
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
}

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

    /// The static-file rows of the founding reports.
    pub fn seed() -> Registry {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_has_the_wasd_grid() {
        let r = Registry::seed();
        assert_eq!(r.rows().len(), 2 * 2 * 2 * 2 + 4);
        assert!(r.rows().iter().all(|row| row.needs == Feature::StaticFiles));
        let names: Vec<String> = r.rows().iter().map(RowSpec::name).collect();
        assert!(names.contains(&"64 KB file, c=10, no keep-alive, cache off".to_owned()));
        let mut filtered = r.clone();
        filtered.retain_matching("3.9 MB");
        assert_eq!(filtered.rows().len(), 4);
    }
}
