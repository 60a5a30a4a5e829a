//! The ApacheBench 2.3 report (as shipped with httpd 2.4.x), line for line:
//! the same fields, printf widths, rounding (`(µs + 500) / 1000`), integer
//! means, n − 1 standard deviations, the inverted-parity median, floor-index
//! percentiles and the "median and mean ... not within a normal deviation"
//! warnings.
//!
//! The figures come from histograms, not from sorted samples: identical for
//! values under 2048 µs, within 0.1 % above (see [`crate::histogram`]).
//! Mapping of tern-bench's classes onto ab's "Failed requests" breakdown:
//! Connect = connect errors, Receive = resets and timeouts, Length = body
//! length differing from the first response, Exceptions = protocol errors.
//! "Total" and the percentages use the corrected latency (from the due time);
//! in a closed loop that is the time from the start of the request, as in ab.

use std::fmt::Write as _;

use crate::histogram::Stats;
use crate::result::RunResult;

/// One row of ab's "Connection Times (ms)" table, in µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AbRow {
    /// Smallest.
    pub min: u64,
    /// Integer mean (sum / count, truncated, as ab).
    pub mean: u64,
    /// Sample standard deviation around the integer mean.
    pub sd: f64,
    /// ab's median (see [`ab_median`]).
    pub median: u64,
    /// Largest.
    pub max: u64,
}

/// ab's failure breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AbFailures {
    /// "Connect".
    pub connect: u64,
    /// "Receive".
    pub receive: u64,
    /// "Length".
    pub length: u64,
    /// "Exceptions".
    pub exceptions: u64,
}

impl AbFailures {
    fn total(&self) -> u64 {
        self.connect + self.receive + self.length + self.exceptions
    }
}

/// Everything ab prints, before formatting.
#[derive(Debug, Clone, PartialEq)]
pub struct AbFigures {
    /// `Server` header of the first response ("" when none).
    pub server_software: String,
    /// The TLS session of an `https://` run.
    pub tls: Option<crate::result::TlsSession>,
    /// Host of the (first) URL.
    pub hostname: String,
    /// Its port.
    pub port: u16,
    /// Its path.
    pub path: String,
    /// Body length of the first response.
    pub document_length: u64,
    /// Requests in flight at most.
    pub concurrency: u64,
    /// From the first request's start to the last response, µs.
    pub time_taken_us: u64,
    /// Complete responses.
    pub complete: u64,
    /// Failures.
    pub failed: AbFailures,
    /// Non-2xx responses.
    pub non_2xx: u64,
    /// `Some(responses kept alive)` when keep-alive was on (ab `-k`).
    pub keepalive: Option<u64>,
    /// Bytes received.
    pub total_transferred: u64,
    /// `Some(bytes sent)` when requests had a body (ab `-p`/`-u`).
    pub body_sent: Option<u64>,
    /// Bytes received after the heads.
    pub html_transferred: u64,
    /// Connect, Processing, Waiting, Total; `None` with no responses.
    pub rows: Option<[AbRow; 4]>,
    /// The TLS handshake, its own row after Connect (not in ab, which counts
    /// it in Connect); `None` without TLS or responses.
    pub handshake: Option<AbRow>,
    /// Full and resumed TLS handshakes; `None` without TLS.
    pub handshakes: Option<(u64, u64)>,
    /// Total time at 50, 66, 75, 80, 90, 95, 98, 99 and 100 %, µs; `None`
    /// with fewer than two responses.
    pub percentiles: Option<[u64; 9]>,
    /// ab prints progress lines ("Completed 100 requests") when a run has
    /// more than 150 requests; that changes the "(be patient)" line.
    pub heartbeat: bool,
}

/// ab's percentages.
pub const PERCENTS: [u64; 9] = [50, 66, 75, 80, 90, 95, 98, 99, 100];

/// ab's median of `n` sorted values given by `nth`: for an odd count above
/// one it averages elements n/2 and n/2 + 1 (sic), else it takes n/2.
pub fn ab_median(n: u64, nth: impl Fn(u64) -> u64) -> u64 {
    if n > 1 && n % 2 == 1 {
        (nth(n / 2) + nth(n / 2 + 1)) / 2
    } else {
        nth(n / 2)
    }
}

impl AbFigures {
    /// The figures of a run.
    pub fn from_result(r: &RunResult) -> AbFigures {
        let target = r.targets.first();
        let c = &r.counts;
        let e = &c.errors;
        let h = &r.histograms;
        let complete = c.responses;
        let row = |hist| {
            let s = Stats::of(hist);
            let n = s.count();
            let mean = (s.sum() / u128::from(n.max(1))) as u64;
            AbRow {
                min: s.min(),
                mean,
                sd: s.sd_sample(mean as f64),
                median: ab_median(n, |k| s.nth(k)),
                max: s.max(),
            }
        };
        let total = Stats::of(&h.latency);
        let tls = r.targets.iter().any(|t| t.tls);
        AbFigures {
            server_software: r.server_software.clone().unwrap_or_default(),
            tls: r.tls.clone(),
            hostname: target.map(|t| t.host.clone()).unwrap_or_default(),
            port: target.map_or(80, |t| t.port),
            path: target.map(|t| t.path.clone()).unwrap_or_default(),
            document_length: r.document_length.unwrap_or(0),
            concurrency: r.concurrency,
            time_taken_us: r.window.end_unix_us.saturating_sub(r.window.start_unix_us),
            complete,
            failed: AbFailures {
                connect: e.connect,
                receive: e.reset + e.timeout,
                length: c.length_mismatches,
                exceptions: e.protocol,
            },
            non_2xx: c.non_2xx(),
            keepalive: r.keepalive.then_some(c.kept_alive),
            total_transferred: c.bytes_total,
            body_sent: (r.request_body_bytes > 0).then_some(c.bytes_sent),
            html_transferred: c.bytes_body,
            rows: (complete > 0).then(|| {
                [
                    row(&h.connect),
                    row(&h.processing),
                    row(&h.ttfb),
                    row(&h.latency),
                ]
            }),
            handshake: (complete > 0 && tls).then(|| row(&h.handshake)),
            handshakes: tls.then_some((c.handshakes.full, c.handshakes.resumed)),
            percentiles: (complete > 1).then(|| {
                PERCENTS.map(|p| {
                    if p >= 100 {
                        total.nth(complete - 1)
                    } else {
                        total.nth(complete * p / 100)
                    }
                })
            }),
            heartbeat: complete + c.errors.total() > 150,
        }
    }
}

/// The key bits of a cipher suite, by its name (ab prints OpenSSL's).
fn cipher_bits(cipher: &str) -> u32 {
    if cipher.contains("AES_128") {
        128
    } else {
        256
    }
}

/// `ap_round_ms`: µs to ms, half up.
fn round_ms(us: u64) -> u64 {
    (us + 500) / 1000
}

/// Renders the report, byte for byte as ab prints it on stdout.
pub fn render(f: &AbFigures) -> String {
    let mut o = String::new();
    o.push_str("This is ApacheBench, Version 2.3 <$Revision$>\n");
    o.push_str("Copyright 1996 Adam Twiss, Zeus Technology Ltd, http://www.zeustech.net/\n");
    o.push_str("Licensed to The Apache Software Foundation, http://www.apache.org/\n");
    o.push('\n');
    let _ = write!(o, "Benchmarking {} ", f.hostname);
    o.push_str(if f.heartbeat {
        "(be patient)\n"
    } else {
        "(be patient).....done\n"
    });
    o.push_str("\n\n");
    let _ = writeln!(o, "Server Software:        {}", f.server_software);
    let _ = writeln!(o, "Server Hostname:        {}", f.hostname);
    let _ = writeln!(o, "Server Port:            {}", f.port);
    if let Some(t) = &f.tls {
        // ab: protocol,cipher,alg bits,bits; rustls names its suites by
        // their IANA names and the key's bits are the cipher's.
        let bits = cipher_bits(&t.cipher);
        let _ = writeln!(
            o,
            "SSL/TLS Protocol:       {},{},{bits},{bits}",
            t.protocol, t.cipher
        );
        if let Some(g) = &t.group {
            let _ = writeln!(o, "Server Temp Key:        {g}");
        }
        if let Some(n) = &t.server_name {
            let _ = writeln!(o, "TLS Server Name:        {n}");
        }
    }
    o.push('\n');
    let _ = writeln!(o, "Document Path:          {}", f.path);
    let _ = writeln!(o, "Document Length:        {} bytes", f.document_length);
    o.push('\n');
    let _ = writeln!(o, "Concurrency Level:      {}", f.concurrency);
    let t = f.time_taken_us as f64 / 1e6;
    let _ = writeln!(o, "Time taken for tests:   {:.3} seconds", t);
    let _ = writeln!(o, "Complete requests:      {}", f.complete);
    let bad = f.failed.total();
    let _ = writeln!(o, "Failed requests:        {bad}");
    if bad > 0 {
        let x = &f.failed;
        let _ = writeln!(
            o,
            "   (Connect: {}, Receive: {}, Length: {}, Exceptions: {})",
            x.connect, x.receive, x.length, x.exceptions
        );
    }
    if f.non_2xx > 0 {
        let _ = writeln!(o, "Non-2xx responses:      {}", f.non_2xx);
    }
    if let Some(ka) = f.keepalive {
        let _ = writeln!(o, "Keep-Alive requests:    {ka}");
    }
    if let Some((full, resumed)) = f.handshakes {
        let _ = writeln!(o, "TLS handshakes:         {full} full, {resumed} resumed");
    }
    let _ = writeln!(o, "Total transferred:      {} bytes", f.total_transferred);
    if let Some(sent) = f.body_sent {
        let _ = writeln!(o, "Total body sent:        {sent}");
    }
    let _ = writeln!(o, "HTML transferred:       {} bytes", f.html_transferred);
    if t > 0.0 && f.complete > 0 {
        let done = f.complete as f64;
        let _ = writeln!(o, "Requests per second:    {:.2} [#/sec] (mean)", done / t);
        let _ = writeln!(
            o,
            "Time per request:       {:.3} [ms] (mean)",
            f.concurrency as f64 * t * 1000.0 / done
        );
        let _ = writeln!(
            o,
            "Time per request:       {:.3} [ms] (mean, across all concurrent requests)",
            t * 1000.0 / done
        );
        let _ = writeln!(
            o,
            "Transfer rate:          {:.2} [Kbytes/sec] received",
            f.total_transferred as f64 / 1024.0 / t
        );
        if let Some(sent) = f.body_sent {
            let _ = writeln!(
                o,
                "                        {:.2} kb/s sent",
                sent as f64 / t / 1024.0
            );
            let _ = writeln!(
                o,
                "                        {:.2} kb/s total",
                (f.total_transferred + sent) as f64 / t / 1024.0
            );
        }
    }
    if let Some(rows) = &f.rows {
        o.push_str("\nConnection Times (ms)\n");
        o.push_str("              min  mean[+/-sd] median   max\n");
        let labels = [
            "Connect:    ",
            "Processing: ",
            "Waiting:    ",
            "Total:      ",
        ];
        let line = |o: &mut String, label: &str, r: &AbRow| {
            let _ = writeln!(
                o,
                "{label}{:5} {:4} {:5.1} {:6} {:7}",
                round_ms(r.min),
                round_ms(r.mean),
                r.sd / 1000.0,
                round_ms(r.median),
                round_ms(r.max)
            );
        };
        for (i, (label, r)) in labels.iter().zip(rows).enumerate() {
            line(&mut o, label, r);
            if let (0, Some(h)) = (i, &f.handshake) {
                line(&mut o, "Handshake:  ", h);
            }
        }
        let what = [
            "the initial connection time",
            "the processing time",
            "the waiting time",
            "the total time",
        ];
        for (what, r) in what.iter().zip(rows) {
            let sd = r.sd / 1000.0;
            let d = (round_ms(r.mean) as f64 - round_ms(r.median) as f64).abs();
            if d > 2.0 * sd {
                let _ = writeln!(
                    o,
                    "ERROR: The median and mean for {what} are more than twice the standard\n       deviation apart. These results are NOT reliable."
                );
            } else if d > sd {
                let _ = writeln!(
                    o,
                    "WARNING: The median and mean for {what} are not within a normal deviation\n        These results are probably not that reliable."
                );
            }
        }
    }
    if let Some(p) = &f.percentiles {
        o.push_str("\nPercentage of the requests served within a certain time (ms)\n");
        for (pct, us) in PERCENTS.iter().zip(p) {
            if *pct >= 100 {
                let _ = writeln!(o, " 100%  {:5} (longest request)", round_ms(*us));
            } else {
                let _ = writeln!(o, "  {pct}%  {:5}", round_ms(*us));
            }
        }
    }
    o
}

/// ab's progress lines on stderr: every `max(requests / 10, 100)` requests
/// when a run has more than 150 (`ab -t` counts as 50000 requests).
pub fn heartbeat_every(requests: u64) -> Option<u64> {
    (requests > 150).then(|| (requests / 10).max(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_has_abs_inverted_parity() {
        let v = [1, 2, 3, 10, 20];
        assert_eq!(ab_median(5, |k| v[k as usize]), (3 + 10) / 2);
        let v = [1, 2, 3, 10];
        assert_eq!(ab_median(4, |k| v[k as usize]), 3);
        assert_eq!(ab_median(1, |_| 7), 7);
    }

    #[test]
    fn sanity_lines_follow_abs_rule() {
        let row = |mean, sd, median| AbRow {
            min: 0,
            mean,
            sd,
            median,
            max: 9000,
        };
        let f = AbFigures {
            server_software: "x".into(),
            tls: Some(crate::result::TlsSession {
                protocol: "TLSv1.3".into(),
                cipher: "TLS13_AES_128_GCM_SHA256".into(),
                group: Some("X25519".into()),
                server_name: Some("h".into()),
            }),
            hostname: "h".into(),
            port: 1,
            path: "/".into(),
            document_length: 0,
            concurrency: 1,
            time_taken_us: 1_000_000,
            complete: 3,
            failed: AbFailures {
                connect: 1,
                receive: 2,
                length: 3,
                exceptions: 4,
            },
            non_2xx: 0,
            keepalive: None,
            handshake: None,
            handshakes: None,
            total_transferred: 0,
            body_sent: Some(2048),
            html_transferred: 0,
            rows: Some([
                row(0, 0.0, 0),
                row(3000, 900.0, 1000),
                row(2000, 900.0, 1000),
                row(0, 0.0, 0),
            ]),
            percentiles: None,
            heartbeat: false,
        };
        let text = render(&f);
        assert!(
            text.contains("Benchmarking h (be patient).....done\n\n\nServer Software:        x\n")
        );
        assert!(text.contains(
            "Server Port:            1\n\
             SSL/TLS Protocol:       TLSv1.3,TLS13_AES_128_GCM_SHA256,128,128\n\
             Server Temp Key:        X25519\n\
             TLS Server Name:        h\n\n"
        ));
        assert!(text.contains(
            "Failed requests:        10\n   (Connect: 1, Receive: 2, Length: 3, Exceptions: 4)\n"
        ));
        assert!(text.contains("Total body sent:        2048\n"));
        assert!(text.contains(
            "                        2.00 kb/s sent\n                        2.00 kb/s total\n"
        ));
        assert!(text.contains(
            "ERROR: The median and mean for the processing time are more than twice the standard\n       deviation apart. These results are NOT reliable.\n"
        ));
        assert!(text.contains(
            "WARNING: The median and mean for the waiting time are not within a normal deviation\n        These results are probably not that reliable.\n"
        ));
        assert!(!text.contains("Percentage of the requests"));
        assert_eq!(heartbeat_every(150), None);
        assert_eq!(heartbeat_every(151), Some(100));
        assert_eq!(heartbeat_every(50_000), Some(5000));
    }
}
