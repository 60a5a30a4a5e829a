//! `tern bench compare`: the same load against several servers in
//! interleaved rounds (A B C, A B C, ...), each run with its own warm-up, so
//! that slow drifts of the machine (other work, thermal limits, caches) fall
//! on every server alike, as the WASD report interleaved its runs. Reports
//! each round, then per server the median and spread over rounds and the
//! ratio against the first server.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::cpu::CpuSource;
use crate::driver::{run, RunControl, StopHandle};
use crate::histogram::Stats;
use crate::plan::{Plan, Target};
use crate::result::RunResult;
use crate::Error;

/// One server in a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Contender {
    /// Its name in the report.
    pub name: String,
    /// Its URL.
    pub target: Target,
    /// Whose CPU to count for it.
    pub cpu: Option<CpuSource>,
}

impl Contender {
    /// Parses `NAME=URL[,pid=PID][,cgroup=PATH]`.
    pub fn parse(spec: &str) -> Result<Contender, Error> {
        let (name, mut rest) = spec
            .split_once('=')
            .filter(|(n, _)| !n.is_empty() && !n.contains('/'))
            .ok_or_else(|| {
                Error::usage(format!(
                    "{spec:?}: expected NAME=URL[,pid=PID][,cgroup=PATH]"
                ))
            })?;
        let mut cpu = None;
        // Options are peeled off the end, so URLs may contain commas.
        while let Some((head, tail)) = rest.rsplit_once(',') {
            if let Some(pid) = tail.strip_prefix("pid=") {
                let pid = pid
                    .parse()
                    .map_err(|_| Error::usage(format!("{spec:?}: pid must be a number")))?;
                cpu = Some(CpuSource::Tree(pid));
            } else if let Some(path) = tail.strip_prefix("cgroup=") {
                cpu = Some(CpuSource::cgroup(path));
            } else {
                break;
            }
            rest = head;
        }
        Ok(Contender {
            name: name.to_owned(),
            target: Target::parse(rest)?,
            cpu,
        })
    }
}

/// Every run of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Server names, in the order given.
    pub names: Vec<String>,
    /// `rounds[r][i]`: round `r`, server `i`.
    pub rounds: Vec<Vec<RunResult>>,
}

/// Runs `plan`'s settings against each contender, `rounds` times,
/// interleaved. Stops early (keeping finished rounds) when `stop` fires.
pub fn compare(
    plan: &Plan,
    contenders: &[Contender],
    rounds: u32,
    stop: &StopHandle,
    mut on_run: impl FnMut(u32, &str, &RunResult),
) -> Result<Comparison, Error> {
    if contenders.is_empty() {
        return Err(Error::usage("compare needs at least one NAME=URL"));
    }
    if rounds == 0 {
        return Err(Error::usage("--rounds must be at least 1"));
    }
    let plans = contenders
        .iter()
        .map(|c| plan.with_targets(vec![c.target.clone()]))
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Comparison {
        names: contenders.iter().map(|c| c.name.clone()).collect(),
        rounds: Vec::new(),
    };
    for round in 1..=rounds {
        let mut results = Vec::with_capacity(contenders.len());
        for (c, p) in contenders.iter().zip(&plans) {
            if stop.is_stopped() {
                return Ok(out);
            }
            let control = RunControl {
                stop: stop.clone(),
                progress: None,
                server_cpu: c.cpu.clone(),
            };
            let r = run(p, &control)?;
            on_run(round, &c.name, &r);
            results.push(r);
        }
        out.rounds.push(results);
    }
    Ok(out)
}

/// Median, smallest and largest of some values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// Of `values` (all zero when empty).
    pub fn of(values: &[f64]) -> Spread {
        if values.is_empty() {
            return Spread {
                median: 0.0,
                min: 0.0,
                max: 0.0,
            };
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }

    /// (max − min) / median, in percent.
    pub fn percent(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median * 100.0
        }
    }
}

/// One server's figures over the rounds, as both the text and the HTML
/// reports print them.
#[derive(Debug, Clone)]
pub struct ServerSummary {
    /// Requests per second over the rounds.
    pub rps: Spread,
    /// Median over rounds of the corrected p50, in ms.
    pub p50_ms: f64,
    /// Median over rounds of the corrected p99, in ms.
    pub p99_ms: f64,
    /// Failed requests, all rounds together.
    pub errors: u64,
    /// Median over rounds of the server's CPU µs per request, when measured.
    pub cpu_us: Option<f64>,
    /// The median req/s over the first server's; `None` when that is 0.
    pub ratio: Option<f64>,
}

impl Comparison {
    /// Each server's figures over the rounds, in the order given.
    pub fn summaries(&self) -> Vec<ServerSummary> {
        let per = |i: usize, f: &dyn Fn(&RunResult) -> f64| -> Vec<f64> {
            self.rounds.iter().filter_map(|r| r.get(i)).map(f).collect()
        };
        let pct = |q: f64| {
            move |r: &RunResult| Stats::of(&r.histograms.latency).percentile(q) as f64 / 1000.0
        };
        let first = Spread::of(&per(0, &RunResult::requests_per_second)).median;
        (0..self.names.len())
            .map(|i| {
                let rps = Spread::of(&per(i, &RunResult::requests_per_second));
                let cpu: Vec<f64> = self
                    .rounds
                    .iter()
                    .filter_map(|r| r.get(i)?.server_cpu.as_ref().map(|f| f.us_per_request))
                    .collect();
                ServerSummary {
                    p50_ms: Spread::of(&per(i, &pct(50.0))).median,
                    p99_ms: Spread::of(&per(i, &pct(99.0))).median,
                    errors: per(i, &|r| r.counts.errors.total() as f64)
                        .iter()
                        .sum::<f64>() as u64,
                    cpu_us: (!cpu.is_empty()).then(|| Spread::of(&cpu).median),
                    ratio: (first > 0.0).then(|| rps.median / first),
                    rps,
                }
            })
            .collect()
    }
}

/// Renders the rounds and the summary as Markdown tables.
pub fn render(c: &Comparison) -> String {
    let mut o = String::new();
    let n = c.names.len();
    let _ = writeln!(
        o,
        "Requests per second, by round (servers run A B C, A B C, ...):\n"
    );
    let _ = writeln!(o, "| round | {} |", c.names.join(" | "));
    let _ = writeln!(o, "|---:|{}", "---:|".repeat(n));
    for (k, round) in c.rounds.iter().enumerate() {
        let cells: Vec<String> = round
            .iter()
            .map(|r| format!("{:.1}", r.requests_per_second()))
            .collect();
        let _ = writeln!(o, "| {} | {} |", k + 1, cells.join(" | "));
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "| server | req/s median (min–max) | spread | p50 ms | p99 ms | errors | server CPU µs/req | req/s vs {} |",
        c.names.first().map_or("", String::as_str)
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, m) in c.names.iter().zip(c.summaries()) {
        let s = &m.rps;
        let _ = writeln!(
            o,
            "| {name} | {:.1} ({:.1}–{:.1}) | {:.1} % | {:.3} | {:.3} | {} | {} | {} |",
            s.median,
            s.min,
            s.max,
            s.percent(),
            m.p50_ms,
            m.p99_ms,
            m.errors,
            m.cpu_us.map_or("–".to_owned(), |v| format!("{v:.1}")),
            m.ratio.map_or("–".to_owned(), |v| format!("{v:.2}")),
        );
    }
    let _ = writeln!(
        o,
        "\nLatency is the corrected latency (from when each request was due); medians over rounds."
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_contenders() {
        let c = Contender::parse("nginx=http://127.0.0.1:8080/a,b,pid=42").unwrap();
        assert_eq!(c.name, "nginx");
        assert_eq!(c.target.path, "/a,b");
        assert_eq!(c.cpu, Some(CpuSource::Tree(42)));
        let c = Contender::parse("x=http://h/,cgroup=system.slice/nginx.service").unwrap();
        assert_eq!(
            c.cpu,
            Some(CpuSource::Cgroup(
                "/sys/fs/cgroup/system.slice/nginx.service".into()
            ))
        );
        for bad in [
            "http://h/",
            "=http://h/",
            "x=http://h/,pid=abc",
            "x=ftp://h/",
        ] {
            assert!(Contender::parse(bad).unwrap_err().is_usage(), "{bad}");
        }
    }

    #[test]
    fn spreads() {
        let s = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[1.0, 2.0, 3.0, 10.0]).median, 2.5);
        assert_eq!(s.percent(), 100.0);
    }
}
