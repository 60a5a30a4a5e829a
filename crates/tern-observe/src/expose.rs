//! The scrape's text: the Prometheus text format (0.0.4) and OpenMetrics 1.0
//! text, written by hand.
//!
//! Why by hand: tern keeps its counters in per-thread shards and renders them
//! only when scraped, while the Rust client crates each bring their own
//! registry and storage (a second copy of every figure, updated on the
//! request path) and each writes only one of the two formats. The writer is
//! small: an [`Exposition`] is one `String` that families and samples are
//! appended to, and [`Format::negotiate`] picks the format from the scraper's
//! `Accept` header.
//!
//! Names (of metrics and labels) come from tern's own code, so they are only
//! checked in debug builds; label values and HELP text may come from
//! configuration (a listener's or a route's name), so they are escaped.

use std::fmt::Write as _;

/// Which text format a scrape gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format, version 0.0.4: what every scraper reads.
    Prometheus,
    /// OpenMetrics 1.0 text: asked for by Prometheus itself, ends in `# EOF`.
    OpenMetrics,
}

impl Format {
    /// From a request's Accept header: OpenMetrics when it names
    /// `application/openmetrics-text` (with any version parameter, q>0),
    /// else the Prometheus text format.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::Prometheus;
        };
        // Media ranges are comma-separated, each `type/subtype;param=value...`.
        // Only the quality parameter matters: OpenMetrics 1.0.0 is the only
        // version written, and an older version asked for is read the same
        // way by the scrapers that ask for it. `*/*` does not count, so a
        // generic client (curl, a browser) gets the older, simpler format.
        let wants_openmetrics = accept.split(',').any(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            if !media.eq_ignore_ascii_case("application/openmetrics-text") {
                return false;
            }
            parts
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                // An unreadable q counts as a refusal: the fallback is the
                // format every scraper reads.
                .is_none_or(|(_, q)| q.trim().parse::<f64>().is_ok_and(|q| q > 0.0))
        });
        if wants_openmetrics {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// "text/plain; version=0.0.4; charset=utf-8" or
    /// "application/openmetrics-text; version=1.0.0; charset=utf-8".
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A metric family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A monotonically increasing total; its samples are `<name>_total`.
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Observations counted into buckets, with their sum and count.
    Histogram,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// A scrape's text, written family by family.
///
/// Call [`family`](Exposition::family), then that family's samples, then the
/// next family; [`finish`](Exposition::finish) gives the text.
#[derive(Debug)]
pub struct Exposition {
    format: Format,
    out: String,
    /// The current family's name (without `_total`), reused between
    /// families so that only the first long name allocates.
    name: String,
    /// The current family's kind, to catch a sample of the wrong kind in
    /// debug builds.
    kind: Option<Kind>,
}

impl Exposition {
    /// An empty scrape in `format`.
    pub fn new(format: Format) -> Exposition {
        Exposition {
            format,
            out: String::with_capacity(4096),
            name: String::new(),
            kind: None,
        }
    }

    /// Starts a family: `# HELP`, `# TYPE` (and `# UNIT` in OpenMetrics when
    /// `unit` is given; the name must then end in `_<unit>`). `name` is the
    /// family name without `_total` for counters. In the Prometheus format a
    /// counter's HELP/TYPE lines name it `<name>_total`; in OpenMetrics they
    /// name `<name>` and the samples are `<name>_total`.
    pub fn family(&mut self, name: &str, kind: Kind, unit: Option<&str>, help: &str) {
        debug_assert!(is_metric_name(name), "bad metric name {name:?}");
        debug_assert!(
            !(kind == Kind::Counter && name.ends_with("_total")),
            "counter {name:?} is named without _total"
        );
        if let Some(unit) = unit {
            debug_assert!(
                name.len() > unit.len() + 1
                    && name.ends_with(unit)
                    && name[..name.len() - unit.len()].ends_with('_'),
                "metric {name:?} does not end in _{unit}"
            );
        }
        self.name.clear();
        self.name.push_str(name);
        self.kind = Some(kind);

        // The Prometheus format has no family name apart from its samples', so
        // a counter is announced under the name its samples carry.
        let suffix = match (self.format, kind) {
            (Format::Prometheus, Kind::Counter) => "_total",
            _ => "",
        };
        let out = &mut self.out;
        let _ = write!(out, "# HELP {name}{suffix} ");
        write_help(out, help, self.format);
        let _ = writeln!(out, "\n# TYPE {name}{suffix} {}", kind.as_str());
        if let (Format::OpenMetrics, Some(unit)) = (self.format, unit) {
            let _ = writeln!(out, "# UNIT {name} {unit}");
        }
    }

    /// A counter sample of the current family (`<name>_total{labels} value`).
    pub fn counter(&mut self, labels: &[(&str, &str)], value: f64) {
        debug_assert_eq!(
            self.kind,
            Some(Kind::Counter),
            "counter sample in {:?}",
            self.name
        );
        self.sample("_total", labels, None, |out| write_value(out, value));
    }

    /// A gauge sample of the current family.
    pub fn gauge(&mut self, labels: &[(&str, &str)], value: f64) {
        debug_assert_eq!(
            self.kind,
            Some(Kind::Gauge),
            "gauge sample in {:?}",
            self.name
        );
        self.sample("", labels, None, |out| write_value(out, value));
    }

    /// A histogram of the current family: `bounds` are the buckets' upper
    /// bounds (ascending, finite), `counts` the observations per bucket, not
    /// cumulative, with one more entry for +Inf
    /// (`counts.len() == bounds.len() + 1`); writes the cumulative
    /// `_bucket{...,le="…"}` lines ending with `le="+Inf"`, then `_sum` and
    /// `_count`.
    pub fn histogram(&mut self, labels: &[(&str, &str)], bounds: &[f64], counts: &[u64], sum: f64) {
        debug_assert_eq!(
            self.kind,
            Some(Kind::Histogram),
            "histogram in {:?}",
            self.name
        );
        debug_assert_eq!(
            counts.len(),
            bounds.len() + 1,
            "one count per bucket and +Inf"
        );
        debug_assert!(bounds.iter().all(|b| b.is_finite()), "finite bounds");
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]), "ascending bounds");
        debug_assert!(labels.iter().all(|(k, _)| *k != "le"), "le is the bucket's");

        let mut cumulative = 0u64;
        for (i, &count) in counts.iter().enumerate() {
            cumulative = cumulative.saturating_add(count);
            let le = bounds.get(i).copied();
            self.sample("_bucket", labels, Some(le), |out| {
                let _ = write!(out, "{cumulative}");
            });
        }
        self.sample("_sum", labels, None, |out| write_value(out, sum));
        self.sample("_count", labels, None, |out| {
            let _ = write!(out, "{cumulative}");
        });
    }

    /// The text; OpenMetrics ends with `# EOF\n`.
    pub fn finish(mut self) -> String {
        if self.format == Format::OpenMetrics {
            self.out.push_str("# EOF\n");
        }
        self.out
    }

    /// One sample line: `<name><suffix>{labels[,le="…"]} <value>\n`. `le` is
    /// `Some(None)` for the `+Inf` bucket.
    fn sample(
        &mut self,
        suffix: &str,
        labels: &[(&str, &str)],
        le: Option<Option<f64>>,
        value: impl FnOnce(&mut String),
    ) {
        debug_assert!(self.kind.is_some(), "sample before any family");
        let out = &mut self.out;
        out.push_str(&self.name);
        out.push_str(suffix);
        if !labels.is_empty() || le.is_some() {
            out.push('{');
            for (i, (key, val)) in labels.iter().enumerate() {
                debug_assert!(is_label_name(key), "bad label name {key:?}");
                if i > 0 {
                    out.push(',');
                }
                out.push_str(key);
                out.push_str("=\"");
                write_label_value(out, val);
                out.push('"');
            }
            if let Some(le) = le {
                if !labels.is_empty() {
                    out.push(',');
                }
                out.push_str("le=\"");
                match le {
                    // Always with a decimal point or an exponent (`1.0`,
                    // `0.005`, `1e-7`), as the Python client writes bounds,
                    // so the same bucket has the same label in every scrape
                    // whichever client wrote it.
                    Some(bound) => {
                        let _ = write!(out, "{bound:?}");
                    }
                    None => out.push_str("+Inf"),
                }
                out.push('"');
            }
            out.push('}');
        }
        out.push(' ');
        value(out);
        out.push('\n');
    }
}

/// A sample value: integral values (below 2^53, where every integer is
/// exact) without a decimal point, others in Rust's shortest round-trip form
/// (which both formats parse, exponent included), and the three specials as
/// both formats spell them.
fn write_value(out: &mut String, v: f64) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else if v.fract() == 0.0 && v.abs() < EXACT {
        // Exact: |v| < 2^53 fits an i64 without rounding; -0.0 becomes 0.
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v:?}");
    }
}

/// A label value between its quotes: backslash, double quote and newline
/// escaped (the same three in both formats).
fn write_label_value(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// HELP text: backslash and newline escaped; in OpenMetrics a double quote
/// too, since its grammar gives HELP the same escaped-string as label values
/// (a bare `"` there is a parse error), while the Prometheus format would
/// keep the backslash of `\"` as text.
fn write_help(out: &mut String, help: &str, format: Format) {
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '"' if format == Format::OpenMetrics => out.push_str("\\\""),
            c => out.push(c),
        }
    }
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`
fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b':')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`
fn is_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(v: f64) -> String {
        let mut s = String::new();
        write_value(&mut s, v);
        s
    }

    #[test]
    fn counter_in_both_formats() {
        let write = |format| {
            let mut e = Exposition::new(format);
            e.family("tern_requests", Kind::Counter, None, "Requests answered.");
            e.counter(&[("listener", "main"), ("code", "200")], 5.0);
            e.counter(&[], 1.5);
            e.finish()
        };
        assert_eq!(
            write(Format::Prometheus),
            "# HELP tern_requests_total Requests answered.\n\
             # TYPE tern_requests_total counter\n\
             tern_requests_total{listener=\"main\",code=\"200\"} 5\n\
             tern_requests_total 1.5\n"
        );
        assert_eq!(
            write(Format::OpenMetrics),
            "# HELP tern_requests Requests answered.\n\
             # TYPE tern_requests counter\n\
             tern_requests_total{listener=\"main\",code=\"200\"} 5\n\
             tern_requests_total 1.5\n\
             # EOF\n"
        );
    }

    #[test]
    fn counter_with_unit() {
        let write = |format| {
            let mut e = Exposition::new(format);
            e.family(
                "process_cpu_seconds",
                Kind::Counter,
                Some("seconds"),
                "CPU time.",
            );
            e.counter(&[], 0.25);
            e.finish()
        };
        assert_eq!(
            write(Format::Prometheus),
            "# HELP process_cpu_seconds_total CPU time.\n\
             # TYPE process_cpu_seconds_total counter\n\
             process_cpu_seconds_total 0.25\n"
        );
        assert_eq!(
            write(Format::OpenMetrics),
            "# HELP process_cpu_seconds CPU time.\n\
             # TYPE process_cpu_seconds counter\n\
             # UNIT process_cpu_seconds seconds\n\
             process_cpu_seconds_total 0.25\n\
             # EOF\n"
        );
    }

    #[test]
    fn gauge_in_both_formats() {
        let write = |format| {
            let mut e = Exposition::new(format);
            e.family("tern_connections", Kind::Gauge, None, "Open connections.");
            e.gauge(&[("listener", "main")], 12.0);
            e.gauge(&[("listener", "tls")], f64::NAN);
            e.finish()
        };
        let body = "# HELP tern_connections Open connections.\n\
                    # TYPE tern_connections gauge\n\
                    tern_connections{listener=\"main\"} 12\n\
                    tern_connections{listener=\"tls\"} NaN\n";
        assert_eq!(write(Format::Prometheus), body);
        assert_eq!(write(Format::OpenMetrics), format!("{body}# EOF\n"));
    }

    #[test]
    fn histogram_in_both_formats() {
        let write = |format| {
            let mut e = Exposition::new(format);
            e.family(
                "tern_request_duration_seconds",
                Kind::Histogram,
                Some("seconds"),
                "Time to answer.",
            );
            e.histogram(
                &[("listener", "main")],
                &[0.005, 1.0, 10.0],
                &[3, 2, 0, 1],
                7.5,
            );
            e.histogram(&[], &[1.0], &[0, 0], 0.0);
            e.finish()
        };
        let samples = "tern_request_duration_seconds_bucket{listener=\"main\",le=\"0.005\"} 3\n\
                       tern_request_duration_seconds_bucket{listener=\"main\",le=\"1.0\"} 5\n\
                       tern_request_duration_seconds_bucket{listener=\"main\",le=\"10.0\"} 5\n\
                       tern_request_duration_seconds_bucket{listener=\"main\",le=\"+Inf\"} 6\n\
                       tern_request_duration_seconds_sum{listener=\"main\"} 7.5\n\
                       tern_request_duration_seconds_count{listener=\"main\"} 6\n\
                       tern_request_duration_seconds_bucket{le=\"1.0\"} 0\n\
                       tern_request_duration_seconds_bucket{le=\"+Inf\"} 0\n\
                       tern_request_duration_seconds_sum 0\n\
                       tern_request_duration_seconds_count 0\n";
        assert_eq!(
            write(Format::Prometheus),
            format!(
                "# HELP tern_request_duration_seconds Time to answer.\n\
                 # TYPE tern_request_duration_seconds histogram\n{samples}"
            )
        );
        assert_eq!(
            write(Format::OpenMetrics),
            format!(
                "# HELP tern_request_duration_seconds Time to answer.\n\
                 # TYPE tern_request_duration_seconds histogram\n\
                 # UNIT tern_request_duration_seconds seconds\n{samples}# EOF\n"
            )
        );
    }

    #[test]
    fn empty_family_keeps_its_header() {
        let mut e = Exposition::new(Format::OpenMetrics);
        e.family("tern_errors", Kind::Counter, None, "Errors.");
        assert_eq!(
            e.finish(),
            "# HELP tern_errors Errors.\n# TYPE tern_errors counter\n# EOF\n"
        );
        assert_eq!(Exposition::new(Format::Prometheus).finish(), "");
        assert_eq!(Exposition::new(Format::OpenMetrics).finish(), "# EOF\n");
    }

    #[test]
    fn escaping() {
        let mut e = Exposition::new(Format::Prometheus);
        e.family("m", Kind::Gauge, None, "a \\ b\nc \"d\"");
        e.gauge(&[("path", "C:\\x\n\"y\"")], 1.0);
        assert_eq!(
            e.finish(),
            "# HELP m a \\\\ b\\nc \"d\"\n\
             # TYPE m gauge\n\
             m{path=\"C:\\\\x\\n\\\"y\\\"\"} 1\n"
        );
        let mut e = Exposition::new(Format::OpenMetrics);
        e.family("m", Kind::Gauge, None, "a \\ b\nc \"d\"");
        assert!(e.finish().starts_with("# HELP m a \\\\ b\\nc \\\"d\\\"\n"));
    }

    #[test]
    fn values() {
        assert_eq!(value(5.0), "5");
        assert_eq!(value(-3.0), "-3");
        assert_eq!(value(-0.0), "0");
        assert_eq!(value(0.1), "0.1");
        assert_eq!(value(1e-7), "1e-7");
        assert_eq!(value(9_007_199_254_740_991.0), "9007199254740991");
        assert_eq!(value(1e20), "1e20");
        assert_eq!(value(f64::INFINITY), "+Inf");
        assert_eq!(value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(value(f64::NAN), "NaN");
        for v in [0.1, 1e-7, 1e20, 123.456, 2f64.powi(60)] {
            assert_eq!(value(v).parse::<f64>().unwrap(), v, "round trip");
        }
    }

    #[test]
    fn negotiate() {
        use Format::*;
        let n = |a| Format::negotiate(a);
        assert_eq!(
            n(Some(
                "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
            )),
            OpenMetrics
        );
        assert_eq!(n(Some("text/plain")), Prometheus);
        assert_eq!(n(None), Prometheus);
        assert_eq!(n(Some("*/*")), Prometheus);
        assert_eq!(n(Some("application/openmetrics-text;q=0")), Prometheus);
        assert_eq!(n(Some("application/openmetrics-text; q=0.0")), Prometheus);
        assert_eq!(n(Some("application/openmetrics-text")), OpenMetrics);
        // What Prometheus 2 sends.
        assert_eq!(
            n(Some(
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                 version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
            )),
            OpenMetrics
        );
        assert_eq!(
            n(Some("text/plain, Application/OpenMetrics-Text;q=0.3")),
            OpenMetrics
        );
        assert_eq!(n(Some("")), Prometheus);
    }

    #[test]
    fn content_types() {
        assert_eq!(
            Format::Prometheus.content_type(),
            "text/plain; version=0.0.4; charset=utf-8"
        );
        assert_eq!(
            Format::OpenMetrics.content_type(),
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        );
    }

    #[test]
    fn names() {
        assert!(is_metric_name("tern:requests_total"));
        assert!(is_metric_name("_x9"));
        assert!(!is_metric_name("9x"));
        assert!(!is_metric_name(""));
        assert!(!is_metric_name("a-b"));
        assert!(is_label_name("listener"));
        assert!(!is_label_name("a:b"));
        assert!(!is_label_name("é"));
    }
}
