//! The load plan: what to send, how hard and for how long. A [`Plan`] is
//! validated once by [`Plan::new`]; the schedule and the driver only read it.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::tls::TlsSettings;
use crate::Error;

/// One URL to load, with its share of the requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// Host as written in the URL; sent in `Host` and resolved once per run.
    pub host: String,
    /// TCP port (80, or 443 for https, when the URL has none).
    pub port: u16,
    /// An `https://` URL: TLS, SNI from `host`.
    #[serde(default)]
    pub tls: bool,
    /// Path and query, `/` when the URL has none.
    pub path: String,
    /// Relative share of the requests (default 1). With weights 3 and 1 the
    /// first URL gets exactly 3 of every 4 requests.
    pub weight: u32,
}

impl Target {
    /// Parses an `http[s]://host[:port][/path][?query]` URL; anything
    /// without a host is refused.
    pub fn parse(url: &str) -> Result<Target, Error> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| Error::usage(format!("invalid URL {url:?}: {e}")))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => {
                return Err(Error::usage(format!(
                    "invalid URL {url:?}: expected http[s]://host[:port]/path"
                )))
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| Error::usage(format!("invalid URL {url:?}: no host")))?;
        if authority.as_str().contains('@') {
            return Err(Error::usage(format!(
                "invalid URL {url:?}: user info is not supported"
            )));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err(Error::usage(format!("invalid URL {url:?}: no host")));
        }
        let path = match uri.path_and_query() {
            Some(pq) if !pq.as_str().is_empty() => pq.as_str().to_owned(),
            _ => "/".to_owned(),
        };
        Ok(Target {
            url: url.to_owned(),
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(if tls { 443 } else { 80 }),
            tls,
            path,
            weight: 1,
        })
    }

    /// The same target with another weight.
    pub fn with_weight(mut self, weight: u32) -> Target {
        self.weight = weight;
        self
    }

    /// The scheme's port: 443 for https, 80 for http.
    pub fn default_port(&self) -> u16 {
        if self.tls {
            443
        } else {
            80
        }
    }

    /// `host:port`, bracketing IPv6 literals, as sent in the `Host` header.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// What every request carries besides its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// Method (default GET).
    pub method: http::Method,
    /// Extra headers, sent in order after `Host` (a `Host` given here replaces
    /// the URL's).
    pub headers: Vec<(String, String)>,
    /// Request body (default empty); sent with a `Content-Length`.
    pub body: Bytes,
}

impl Default for RequestSpec {
    fn default() -> RequestSpec {
        RequestSpec {
            method: http::Method::GET,
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }
}

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "model")]
pub enum Load {
    /// Closed loop (ab, wrk): each connection sends its next request when the
    /// previous one is done. The server's speed sets the rate.
    Closed {
        /// Concurrent connections (ab `-c`).
        connections: u32,
    },
    /// Open loop (wrk2, vegeta): requests are due at a fixed total rate
    /// whatever the server does; latency counts from the time a request was
    /// due, so a stalled server shows up (no coordinated omission).
    Open {
        /// Requests per second, over all connections and threads.
        rate: f64,
        /// Spacing of the due times.
        arrival: Arrival,
        /// Most requests in flight at once (connections, times HTTP/2
        /// streams). A request due while all are busy waits, and the wait
        /// counts in its corrected latency.
        connections: u32,
    },
}

impl Load {
    /// Connections (closed loop) or the in-flight limit (open loop).
    pub fn connections(&self) -> u32 {
        match *self {
            Load::Closed { connections } | Load::Open { connections, .. } => connections,
        }
    }
}

/// Spacing of open-loop due times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exactly `1/rate` apart.
    Constant,
    /// Exponential gaps with mean `1/rate` (a Poisson process), seeded.
    Poisson,
}

/// When the measured part of a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this many measured requests (ab `-n`).
    Count(u64),
    /// After this long (wrk `-d`), counted from the end of the warm-up.
    Duration(#[serde(with = "duration_us")] Duration),
}

/// Time before and after the measured window when load runs but nothing is
/// counted (WCAT's 10 s warm-up and cool-down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Windows {
    /// Load before measuring starts (default none).
    #[serde(with = "duration_us")]
    pub warmup: Duration,
    /// Load after the measured part has been sent, so that its last requests
    /// still meet a loaded server (default none).
    #[serde(with = "duration_us")]
    pub cooldown: Duration,
}

/// Connection reuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reuse {
    /// A new connection per request, `Connection: close` (ab's default; the
    /// founding reports ran this way).
    Close,
    /// Keep connections open (ab `-k`, wrk).
    KeepAlive,
}

/// Wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2: over cleartext TCP with prior knowledge (h2c) for http URLs,
    /// chosen by ALPN (`h2`) for https ones; connections are always kept
    /// open.
    Http2 {
        /// Requests in flight on each connection.
        streams: u32,
    },
}

/// Every setting of a plan besides its targets. Defaults: one connection,
/// closed loop, 10 s, no warm-up or cool-down, a new connection per request,
/// HTTP/1.1, 10 s timeout, one thread.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanSettings {
    /// Method, headers and body of every request.
    pub request: RequestSpec,
    /// Closed or open loop.
    pub load: Load,
    /// When the measured part ends.
    pub stop: Stop,
    /// Unmeasured time before and after.
    pub windows: Windows,
    /// Keep-alive or not (HTTP/1.1 only).
    pub reuse: Reuse,
    /// HTTP/1.1 or h2c.
    pub protocol: Protocol,
    /// Longest wait for a complete response, counted from the time the request
    /// was due; then it is a timeout error.
    pub timeout: Duration,
    /// OS threads, each with its own event loop and share of the connections
    /// (wrk `-t`). At most the number of connections.
    pub threads: u32,
    /// Seed of the Poisson arrivals.
    pub seed: u64,
    /// Versions, resumption and trust of `https://` targets.
    pub tls: TlsSettings,
    /// This machine's part of a run shared by several (default: the whole).
    pub shard: Shard,
}

/// One of several machines sharing a run (`--shard I/N`): the run's
/// connections, count and rate are split over all of them, and their JSON
/// results merge exactly (`tern bench merge`) into the run's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This machine's index, from 0.
    pub index: u32,
    /// How many machines share the run.
    pub count: u32,
}

impl Default for Shard {
    fn default() -> Shard {
        Shard { index: 0, count: 1 }
    }
}

impl Shard {
    /// Parses `I/N` (0 <= I < N).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("{text:?}: expected I/N, such as 0/4"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| format!("{text:?}: {i:?} is not a shard index"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("{text:?}: {n:?} is not a number of shards"))?;
        if count == 0 || index >= count {
            return Err(format!(
                "{text:?}: the index must be at least 0 and below the number of shards"
            ));
        }
        Ok(Shard { index, count })
    }
}

impl Default for PlanSettings {
    fn default() -> PlanSettings {
        PlanSettings {
            request: RequestSpec::default(),
            load: Load::Closed { connections: 1 },
            stop: Stop::Duration(Duration::from_secs(10)),
            windows: Windows::default(),
            reuse: Reuse::Close,
            protocol: Protocol::Http1,
            timeout: Duration::from_secs(10),
            threads: 1,
            seed: 1,
            tls: TlsSettings::default(),
            shard: Shard::default(),
        }
    }
}

/// A validated plan: at least one target, sane numbers.
#[derive(Debug, Clone)]
pub struct Plan {
    targets: Vec<Target>,
    settings: PlanSettings,
}

impl Plan {
    /// Checks the settings and builds the plan.
    pub fn new(targets: Vec<Target>, settings: PlanSettings) -> Result<Plan, Error> {
        if targets.is_empty() {
            return Err(Error::usage("no URL to load"));
        }
        if let Some(t) = targets.iter().find(|t| t.weight == 0) {
            return Err(Error::usage(format!(
                "{}: weight must be at least 1",
                t.url
            )));
        }
        let connections = settings.load.connections();
        if connections == 0 {
            return Err(Error::usage("connections (-c) must be at least 1"));
        }
        if let Load::Open { rate, .. } = settings.load {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(Error::usage(
                    "--rate must be a positive number of requests per second",
                ));
            }
        }
        match settings.stop {
            Stop::Count(0) => return Err(Error::usage("requests (-n) must be at least 1")),
            Stop::Duration(d) if d.is_zero() => {
                return Err(Error::usage("duration (-d) must be more than 0"))
            }
            _ => {}
        }
        if settings.timeout.is_zero() {
            return Err(Error::usage("timeout must be more than 0"));
        }
        if settings.threads == 0 {
            return Err(Error::usage("threads (-t) must be at least 1"));
        }
        if settings.threads > connections {
            return Err(Error::usage(format!(
                "threads (-t {}) cannot exceed connections (-c {connections})",
                settings.threads
            )));
        }
        let shard = settings.shard;
        if shard.count == 0 || shard.index >= shard.count {
            return Err(Error::usage(format!(
                "--shard {}/{}: the index must be below the number of shards",
                shard.index, shard.count
            )));
        }
        if u64::from(settings.threads) * u64::from(shard.count) > u64::from(connections) {
            return Err(Error::usage(format!(
                "-c {connections} connections cannot be shared by {} shards of {} threads: give at least {} connections (-c counts all shards together)",
                shard.count,
                settings.threads,
                u64::from(settings.threads) * u64::from(shard.count)
            )));
        }
        if let Stop::Count(n) = settings.stop {
            if n < u64::from(shard.count) {
                return Err(Error::usage(format!(
                    "-n {n} requests cannot be shared by {} shards",
                    shard.count
                )));
            }
        }
        if let Protocol::Http2 { streams: 0 } = settings.protocol {
            return Err(Error::usage("--streams must be at least 1"));
        }
        Ok(Plan { targets, settings })
    }

    /// The URLs, in the order given.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// Everything else.
    pub fn settings(&self) -> &PlanSettings {
        &self.settings
    }

    /// The same settings against other targets (how `compare` loads each
    /// server alike).
    pub fn with_targets(&self, targets: Vec<Target>) -> Result<Plan, Error> {
        Plan::new(targets, self.settings.clone())
    }

    /// True when some target is `https://`.
    pub fn uses_tls(&self) -> bool {
        self.targets.iter().any(|t| t.tls)
    }

    /// Requests in flight at most: connections, times streams for HTTP/2.
    pub fn concurrency(&self) -> u64 {
        let streams = match self.settings.protocol {
            Protocol::Http1 => 1,
            Protocol::Http2 { streams } => streams,
        };
        u64::from(self.settings.load.connections()) * u64::from(streams)
    }
}

impl fmt::Display for Plan {
    /// One line: "closed loop, 10 connections, keep-alive, HTTP/1.1, 1 thread;
    /// 10000 requests; warm-up 1s".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.settings;
        let conns = s.load.connections();
        let plural = |n: u32| if n == 1 { "" } else { "s" };
        match s.load {
            Load::Closed { .. } => write!(f, "closed loop, {conns} connection{}", plural(conns))?,
            Load::Open { rate, arrival, .. } => {
                let kind = match arrival {
                    Arrival::Constant => "constant",
                    Arrival::Poisson => "Poisson",
                };
                write!(
                    f,
                    "open loop at {rate} req/s ({kind}), up to {conns} connection{}",
                    plural(conns)
                )?
            }
        }
        match s.protocol {
            Protocol::Http1 => match s.reuse {
                Reuse::KeepAlive => write!(f, ", keep-alive, HTTP/1.1")?,
                Reuse::Close => write!(f, ", a new connection per request, HTTP/1.1")?,
            },
            Protocol::Http2 { streams } => write!(
                f,
                ", {} with {streams} stream{} per connection",
                if self.uses_tls() { "h2" } else { "h2c" },
                plural(streams)
            )?,
        }
        if self.uses_tls() {
            let version = match s.tls.version {
                crate::tls::TlsVersion::Any => "TLS 1.2/1.3",
                crate::tls::TlsVersion::Tls12 => "TLS 1.2",
                crate::tls::TlsVersion::Tls13 => "TLS 1.3",
            };
            let resume = if s.tls.resume {
                "resumption on"
            } else {
                "full handshakes"
            };
            write!(f, ", {version} ({resume})")?;
        }
        write!(f, ", {} thread{}", s.threads, plural(s.threads))?;
        if s.shard.count > 1 {
            write!(
                f,
                ", shard {}/{} (its part of the whole run described)",
                s.shard.index, s.shard.count
            )?;
        }
        f.write_str("; ")?;
        match s.stop {
            Stop::Count(n) => write!(f, "{n} requests")?,
            Stop::Duration(d) => write!(f, "{} measured", DisplayDuration(d))?,
        }
        if !s.windows.warmup.is_zero() {
            write!(f, ", warm-up {}", DisplayDuration(s.windows.warmup))?;
        }
        if !s.windows.cooldown.is_zero() {
            write!(f, ", cool-down {}", DisplayDuration(s.windows.cooldown))?;
        }
        Ok(())
    }
}

/// Prints a duration the way it is typed on the command line (`1.5s`, `200ms`).
#[derive(Debug, Clone, Copy)]
pub struct DisplayDuration(pub Duration);

impl fmt::Display for DisplayDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.subsec_nanos() == 0 {
            write!(f, "{}s", d.as_secs())
        } else if d.as_nanos().is_multiple_of(1_000_000) && d < Duration::from_secs(1) {
            write!(f, "{}ms", d.as_millis())
        } else {
            write!(f, "{}s", d.as_secs_f64())
        }
    }
}

/// Parses `10s`, `500ms`, `2m`, `1h`, `1.5s`, `250us` or a bare number of
/// seconds.
pub fn parse_duration(text: &str) -> Result<Duration, Error> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        Error::usage(format!(
            "invalid duration {text:?} (examples: 10s, 500ms, 2m)"
        ))
    })?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(Error::usage(format!(
                "invalid duration {text:?}: unknown unit {unit:?} (use us, ms, s, m, h)"
            )))
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 1e9 {
        return Err(Error::usage(format!("invalid duration {text:?}")));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Serde for durations as whole microseconds (stable across languages).
pub(crate) mod duration_us {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_micros(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = Target::parse("http://127.0.0.1:8080/a/b?c=d").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a/b?c=d")
        );
        let t = Target::parse("http://localhost").unwrap();
        assert_eq!((t.port, t.path.as_str()), (80, "/"));
        let t = Target::parse("http://[::1]:81/x").unwrap();
        assert_eq!(
            (t.host.as_str(), t.authority()),
            ("::1", "[::1]:81".to_owned())
        );
        let t = Target::parse("https://a.test/x").unwrap();
        assert_eq!(
            (t.tls, t.port, t.authority()),
            (true, 443, "a.test:443".to_owned())
        );
        for bad in [
            "ftp://x/",
            "127.0.0.1:80/",
            "http://",
            "not a url",
            "http://u@h/",
        ] {
            assert!(Target::parse(bad).unwrap_err().is_usage(), "{bad}");
        }
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("40us").unwrap(), Duration::from_micros(40));
        for bad in ["", "s", "10x", "-1s", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            DisplayDuration(Duration::from_millis(200)).to_string(),
            "200ms"
        );
        assert_eq!(DisplayDuration(Duration::from_secs(3)).to_string(), "3s");
        assert_eq!(
            DisplayDuration(Duration::from_millis(1500)).to_string(),
            "1.5s"
        );
    }

    #[test]
    fn rejects_bad_settings() {
        let t = || vec![Target::parse("http://127.0.0.1/").unwrap()];
        let with = |f: &dyn Fn(&mut PlanSettings)| {
            let mut s = PlanSettings::default();
            f(&mut s);
            Plan::new(t(), s)
        };
        assert!(Plan::new(vec![], PlanSettings::default()).is_err());
        assert!(with(&|s| s.load = Load::Closed { connections: 0 }).is_err());
        assert!(with(&|s| s.stop = Stop::Count(0)).is_err());
        assert!(with(&|s| s.threads = 2).is_err());
        assert!(with(&|s| s.load = Load::Open {
            rate: 0.0,
            arrival: Arrival::Constant,
            connections: 1
        })
        .is_err());
        assert!(with(&|s| s.load = Load::Open {
            rate: f64::NAN,
            arrival: Arrival::Poisson,
            connections: 1
        })
        .is_err());
        assert!(with(&|_| {}).is_ok());
        assert!(Plan::new(vec![t()[0].clone().with_weight(0)], PlanSettings::default()).is_err());
    }
}
