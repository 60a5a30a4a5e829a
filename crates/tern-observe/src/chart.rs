//! Self-contained SVG line and area charts for the status page: one `<svg>`
//! element per chart, no script, no external asset, no font file, so the
//! page works offline and under a strict Content-Security-Policy.
//!
//! The output is deterministic (same chart, same bytes) so tests compare
//! substrings, and coordinates carry at most one decimal to keep it small.
//! Text and grid lines use `currentColor`, so a chart follows the page's
//! text colour (light or dark) without styles of its own.

use std::fmt::Write;

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    /// The name shown in the legend.
    pub label: &'a str,
    /// A CSS colour, e.g. `"#2a7ab0"`.
    pub color: &'a str,
    /// One value per step; NaN or missing (a series shorter than the
    /// longest) means no data.
    pub points: &'a [f64],
}

/// A time chart: the first point at `start` (Unix seconds), one point every
/// `step` seconds.
#[derive(Debug, Clone)]
pub struct Chart<'a> {
    /// The title, shown above the plot and given to screen readers.
    pub title: &'a str,
    /// The unit shown on the y axis: `"req/min"`, `"bytes/min"`, `"s"`.
    pub unit: &'a str,
    /// The time of the first point, in Unix seconds.
    pub start: u64,
    /// Seconds between two points (0 is taken as 1).
    pub step: u64,
    /// The lines; the first is also drawn as a lightly filled area.
    pub series: Vec<Series<'a>>,
    /// Width in pixels (at least 160 is used).
    pub width: u32,
    /// Height in pixels (at least 100 is used).
    pub height: u32,
}

// Margins of the plot area: room for the y labels on the left, the title
// above, the x labels and the legend below.
const LEFT: f64 = 60.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 26.0;
const BOTTOM: f64 = 44.0;
// Roughly the width an x label needs, to keep them from overlapping.
const X_LABEL_WIDTH: f64 = 64.0;

/// The chart as one `<svg>` element (no external assets, no script), to be
/// inlined in an HTML page.
pub fn svg(chart: &Chart<'_>) -> String {
    let width = f64::from(chart.width.max(160));
    let height = f64::from(chart.height.max(100));
    let plot_w = width - LEFT - RIGHT;
    let plot_h = height - TOP - BOTTOM;
    let bottom = TOP + plot_h;
    let step = chart.step.max(1);
    let n = chart
        .series
        .iter()
        .map(|s| s.points.len())
        .max()
        .unwrap_or(0);

    // Downsampled first, so the scale is that of what is drawn (the maximum
    // of a pixel's points is one of the points: the same maximum).
    let columns = (plot_w as usize).max(1);
    let drawn: Vec<Vec<(f64, f64)>> = chart
        .series
        .iter()
        .map(|s| downsample(s.points, n, columns))
        .collect();
    let peak = drawn
        .iter()
        .flatten()
        .map(|&(_, v)| v)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let has_data = peak > 0.0;
    let max = nice_max(peak);

    let title = escape(chart.title);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{title}\" \
         font-family=\"sans-serif\" font-size=\"11\" fill=\"currentColor\">\
         <title>{title}</title>",
        w = num(width),
        h = num(height),
    );
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">{title}</text>\
         <text x=\"{}\" y=\"16\" text-anchor=\"end\" opacity=\"0.7\">{}</text>",
        num(LEFT),
        num(LEFT - 6.0),
        escape(chart.unit),
    );

    // The y grid: 0 to the nice maximum in 4 or 5 steps.
    let intervals = y_intervals(max);
    out.push_str("<g stroke=\"currentColor\" stroke-opacity=\"0.15\">");
    for i in 0..=intervals {
        let y = bottom - plot_h * i as f64 / intervals as f64;
        let _ = write!(
            out,
            "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>",
            num(LEFT),
            num(LEFT + plot_w),
            y = num(y),
        );
    }
    out.push_str("</g><g text-anchor=\"end\" opacity=\"0.7\">");
    for i in 0..=intervals {
        let y = bottom - plot_h * i as f64 / intervals as f64;
        let value = max * i as f64 / intervals as f64;
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\">{}</text>",
            num(LEFT - 6.0),
            num(y + 4.0),
            escape(&format_value(value, chart.unit)),
        );
    }
    out.push_str("</g>");

    // The axes.
    let _ = write!(
        out,
        "<path d=\"M{l} {t}V{b}H{r}\" fill=\"none\" stroke=\"currentColor\" stroke-opacity=\"0.5\"/>",
        l = num(LEFT),
        t = num(TOP),
        b = num(bottom),
        r = num(LEFT + plot_w),
    );

    // The x labels, at round UTC times.
    let span = step.saturating_mul(n.saturating_sub(1) as u64);
    let x_of_time = |t: u64| {
        if span == 0 {
            LEFT
        } else {
            LEFT + plot_w * (t - chart.start) as f64 / span as f64
        }
    };
    out.push_str("<g text-anchor=\"middle\" opacity=\"0.7\">");
    for t in x_ticks(chart.start, span, plot_w) {
        let x = x_of_time(t);
        let label = if span < 2 * 86_400 {
            time_label(t)
        } else {
            date_label(t)
        };
        let _ = write!(
            out,
            "<line x1=\"{x}\" y1=\"{b}\" x2=\"{x}\" y2=\"{b4}\" stroke=\"currentColor\"/>\
             <text x=\"{x}\" y=\"{ty}\">{label}</text>",
            x = num(x),
            b = num(bottom),
            b4 = num(bottom + 4.0),
            ty = num(bottom + 15.0),
        );
    }
    out.push_str("</g>");

    // The series: areas first (under every line), then the lines.
    let x_of_index = |i: f64| {
        if n <= 1 {
            LEFT
        } else {
            LEFT + plot_w * i / (n - 1) as f64
        }
    };
    let y_of = |v: f64| bottom - plot_h * (v.max(0.0) / max).min(1.0);
    if has_data {
        if let (Some(first), Some(points)) = (chart.series.first(), drawn.first()) {
            for run in runs(points) {
                let mut pts = String::new();
                let _ = write!(pts, "{},{}", num(x_of_index(run[0].0)), num(bottom));
                for &(i, v) in run {
                    let _ = write!(pts, " {},{}", num(x_of_index(i)), num(y_of(v)));
                }
                let last = run[run.len() - 1].0;
                let _ = write!(pts, " {},{}", num(x_of_index(last)), num(bottom));
                let _ = write!(
                    out,
                    "<polygon points=\"{pts}\" fill=\"{}\" fill-opacity=\"0.15\" stroke=\"none\"/>",
                    escape(first.color),
                );
            }
        }
        for (series, points) in chart.series.iter().zip(&drawn) {
            let color = escape(series.color);
            for run in runs(points) {
                if let [(i, v)] = run {
                    // A lone point between gaps: a line of one point draws
                    // nothing, so a dot.
                    let _ = write!(
                        out,
                        "<circle cx=\"{}\" cy=\"{}\" r=\"1.5\" fill=\"{color}\"/>",
                        num(x_of_index(*i)),
                        num(y_of(*v)),
                    );
                    continue;
                }
                let pts: Vec<String> = run
                    .iter()
                    .map(|&(i, v)| format!("{},{}", num(x_of_index(i)), num(y_of(v))))
                    .collect();
                let _ = write!(
                    out,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" \
                     stroke-width=\"1.5\" stroke-linejoin=\"round\"/>",
                    pts.join(" "),
                );
            }
        }
    } else {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" opacity=\"0.6\">no data</text>",
            num(LEFT + plot_w / 2.0),
            num(TOP + plot_h / 2.0),
        );
    }

    // The legend, under the x labels.
    let mut x = LEFT;
    let y = height - 8.0;
    for series in &chart.series {
        let _ = write!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"{}\">{}</text>",
            num(x),
            num(y - 9.0),
            escape(series.color),
            num(x + 14.0),
            num(y),
            escape(series.label),
        );
        // An estimate of the label's width: the SVG is not measured.
        x += 28.0 + 6.5 * series.label.chars().count() as f64;
    }
    out.push_str("</svg>");
    out
}

/// `v` as a compact number with the unit's suffix where it reads better:
/// `"1.5k"` (SI, for counts such as req/min), `"1.5 MB"` (bytes, in 1000s,
/// for a unit starting with "bytes" or "B"), `"250 ms"` / `"2.5 s"`
/// (seconds, for the unit "s").
pub fn format_value(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return String::from("-");
    }
    if unit == "s" {
        return if v == 0.0 {
            String::from("0")
        } else if v.abs() >= 1.0 {
            format!("{} s", compact(v))
        } else if v.abs() >= 0.001 {
            format!("{} ms", compact(v * 1e3))
        } else {
            format!("{} µs", compact(v * 1e6))
        };
    }
    if unit.starts_with("bytes") || unit.starts_with('B') {
        const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
        let mut scaled = v;
        let mut i = 0;
        while scaled.abs() >= 1000.0 && i < UNITS.len() - 1 {
            scaled /= 1000.0;
            i += 1;
        }
        return format!("{} {}", trimmed(scaled), UNITS[i]);
    }
    compact(v)
}

/// `v` with an SI prefix (k, M, G, T, P) and up to 3 significant digits.
fn compact(v: f64) -> String {
    const PREFIXES: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    let mut scaled = v;
    let mut i = 0;
    while scaled.abs() >= 1000.0 && i < PREFIXES.len() - 1 {
        scaled /= 1000.0;
        i += 1;
    }
    format!("{}{}", trimmed(scaled), PREFIXES[i])
}

/// Up to 3 significant digits (more left of the point), trailing zeros
/// dropped: 1.5, 250, 0.02.
fn trimmed(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    if s == "-0" {
        String::from("0")
    } else {
        s.to_string()
    }
}

/// The smallest 1, 2 or 5 × 10^k at or above `v` (1 for nothing to show).
fn nice_max(v: f64) -> f64 {
    if !v.is_finite() || v <= 0.0 {
        return 1.0;
    }
    let power = 10f64.powi(v.log10().floor() as i32);
    for d in [1.0, 2.0, 5.0, 10.0] {
        // The tolerance keeps 0.3 (0.30000000000000004 after scaling) from
        // becoming 0.5 because of a rounding error.
        if d * power >= v * (1.0 - 1e-9) {
            return d * power;
        }
    }
    10.0 * power
}

/// Grid intervals for a nice maximum: 2 × 10^k in 4 steps of 0.5, the
/// others (1 and 5) in 5 steps, so the labels stay round.
fn y_intervals(max: f64) -> usize {
    let leading = max / 10f64.powi(max.log10().floor() as i32);
    if (leading - 2.0).abs() < 1e-6 {
        4
    } else {
        5
    }
}

/// The points of a series as (position in the original index space, value),
/// one per point, or, with more points than `columns`, one per column with
/// the maximum of its points so a one-minute spike stays visible. Missing
/// points (past the series' end) and infinities are NaN.
fn downsample(points: &[f64], n: usize, columns: usize) -> Vec<(f64, f64)> {
    let at = |i: usize| match points.get(i) {
        Some(v) if v.is_finite() => *v,
        _ => f64::NAN,
    };
    if n <= columns {
        return (0..n).map(|i| (i as f64, at(i))).collect();
    }
    (0..columns)
        .map(|c| {
            let from = c * n / columns;
            let to = ((c + 1) * n / columns).max(from + 1);
            let max = (from..to)
                .map(at)
                .filter(|v| !v.is_nan())
                .fold(f64::NAN, f64::max);
            ((from + to - 1) as f64 / 2.0, max)
        })
        .collect()
}

/// The runs of consecutive points with a value: a NaN ends a run (a gap).
fn runs(points: &[(f64, f64)]) -> impl Iterator<Item = &[(f64, f64)]> {
    points
        .split(|(_, v)| v.is_nan())
        .filter(|run| !run.is_empty())
}

/// Round UTC times for the x labels within `[start, start + span]`, as many
/// as fit in `width` pixels.
fn x_ticks(start: u64, span: u64, width: f64) -> Vec<u64> {
    const HOURS: [u64; 11] = [
        60, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
    ];
    const DAYS: [u64; 5] = [86_400, 172_800, 259_200, 604_800, 1_209_600];
    if span == 0 {
        return vec![start];
    }
    let fit = ((width / X_LABEL_WIDTH) as u64).max(2);
    let choices: &[u64] = if span < 2 * 86_400 { &HOURS } else { &DAYS };
    let interval = choices
        .iter()
        .copied()
        .find(|&i| span / i < fit)
        .unwrap_or_else(|| span.div_ceil(fit).div_ceil(86_400) * 86_400);
    // Weeks start on a Monday (1970-01-05 is day 4 of the epoch), days
    // and hours on the epoch's multiples.
    let offset = if interval % 604_800 == 0 {
        4 * 86_400
    } else {
        0
    };
    let first = start.saturating_sub(offset).div_ceil(interval) * interval + offset;
    (0..)
        .map(|k| first + k * interval)
        .take_while(|&t| t <= start + span)
        .collect()
}

/// "HH:MM" in UTC.
fn time_label(t: u64) -> String {
    let secs = t % 86_400;
    format!("{:02}:{:02}", secs / 3600, secs / 60 % 60)
}

/// "Nov 24" style month and day, in UTC.
fn date_label(t: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (_, month, day) = civil_from_days(t / 86_400);
    format!("{} {day}", MONTHS[month as usize - 1])
}

/// (year, month 1..=12, day 1..=31) of a day counted from 1970-01-01:
/// Howard Hinnant's `civil_from_days`, for days on or after the epoch.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// A coordinate with at most one decimal, without "-0" or a trailing ".0".
fn num(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == 0.0 {
        return String::from("0");
    }
    if r == r.trunc() {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// Text made safe for SVG and HTML content and attribute values (the
/// status page uses it too).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV_24_2024: u64 = 1_732_406_400;

    fn chart<'a>(title: &'a str, series: Vec<Series<'a>>) -> Chart<'a> {
        Chart {
            title,
            unit: "req/min",
            start: NOV_24_2024,
            step: 60,
            series,
            width: 600,
            height: 200,
        }
    }

    /// A tiny XML check: tags balance, attributes are quoted, and every `&`
    /// starts an entity.
    fn assert_well_formed(svg: &str) {
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            assert_entities(text);
            let close = rest[open..].find('>').expect("unclosed tag") + open;
            let tag = &rest[open + 1..close];
            assert!(!tag.contains('<'), "`<` inside a tag: {tag}");
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes: {tag}");
            assert_entities(tag);
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop(), Some(name), "mismatched </{name}>");
            } else if !tag.ends_with('/') {
                let name = tag.split_whitespace().next().unwrap();
                stack.push(name);
            }
            rest = &rest[close + 1..];
        }
        assert!(rest.is_empty(), "text after the root: {rest}");
        assert!(stack.is_empty(), "unclosed: {stack:?}");
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>"));
    }

    fn assert_entities(s: &str) {
        for (i, _) in s.match_indices('&') {
            let entity = &s[i..s[i..].find(';').map_or(s.len(), |e| i + e + 1)];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].contains(&entity),
                "bad entity at {}",
                &s[i..]
            );
        }
    }

    #[test]
    fn a_chart_is_well_formed_with_title_axes_and_legend() {
        let points: Vec<f64> = (0..60).map(|i| f64::from(i % 7)).collect();
        let errors = [1.0; 60];
        let c = chart(
            "Requests",
            vec![
                Series {
                    label: "2xx",
                    color: "#2a7ab0",
                    points: &points,
                },
                Series {
                    label: "5xx",
                    color: "#c0392b",
                    points: &errors,
                },
            ],
        );
        let s = svg(&c);
        assert_well_formed(&s);
        assert!(s.contains("role=\"img\""));
        assert!(s.contains("aria-label=\"Requests\""));
        assert!(s.contains("<title>Requests</title>"));
        assert!(s.contains(">req/min</text>"));
        // Peak 6: a maximum of 10 in 5 steps.
        for label in [">0</text>", ">2</text>", ">10</text>"] {
            assert!(s.contains(label), "{label} in {s}");
        }
        // An hour from midnight: HH:MM labels.
        assert!(s.contains(">00:00</text>"));
        assert!(s.contains(">00:30</text>"));
        assert!(s.contains(">2xx</text>") && s.contains(">5xx</text>"));
        assert_eq!(s.matches("<polygon").count(), 1, "the first series' area");
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(!s.contains("no data"));
        assert_eq!(s, svg(&c), "deterministic");
    }

    #[test]
    fn coordinates_have_at_most_one_decimal() {
        let points: Vec<f64> = (0..37).map(|i| f64::from(i * i) / 3.0).collect();
        let s = svg(&chart(
            "t",
            vec![Series {
                label: "a",
                color: "red",
                points: &points,
            }],
        ));
        let start = s.find("<polyline points=\"").unwrap() + 18;
        let coords = &s[start..start + s[start..].find('"').unwrap()];
        for n in coords.split([' ', ',']) {
            let decimals = n.split('.').nth(1).map_or(0, str::len);
            assert!(decimals <= 1, "{n}");
        }
    }

    #[test]
    fn text_is_escaped() {
        let s = svg(&chart(
            "<&> \"q\" 'a'",
            vec![Series {
                label: "a<b",
                color: "\"red\"",
                points: &[1.0, 2.0],
            }],
        ));
        assert_well_formed(&s);
        assert!(s.contains("<title>&lt;&amp;&gt; &quot;q&quot; &#39;a&#39;</title>"));
        assert!(s.contains("aria-label=\"&lt;&amp;&gt; &quot;q&quot; &#39;a&#39;\""));
        assert!(s.contains(">a&lt;b</text>"));
        assert!(s.contains("fill=\"&quot;red&quot;\""));
        assert!(!s.contains("<&>"));
    }

    #[test]
    fn downsampling_keeps_a_spike() {
        // 28 days of minutes on 528 pixels: 76 points a pixel.
        let mut points = vec![1.0; 40_320];
        points[20_000] = 500.0;
        let c = Chart {
            unit: "bytes/min",
            ..chart(
                "Bytes",
                vec![Series {
                    label: "sent",
                    color: "#2a7ab0",
                    points: &points,
                }],
            )
        };
        let s = svg(&c);
        assert_well_formed(&s);
        // The spike sets the scale and is drawn at the top of the plot.
        assert!(s.contains(">500 B</text>"), "{s}");
        assert!(s.contains(&format!(",{} ", num(TOP))), "a point at the top");
        let start = s.find("<polyline points=\"").unwrap() + 18;
        let coords = &s[start..start + s[start..].find('"').unwrap()];
        assert!(coords.split(' ').count() <= 600 - 72);
        // 28 days: month-day labels.
        assert!(s.contains(">Nov 25</text>"), "a Monday");
        assert!(s.contains(">Dec 2</text>"));

        let d = downsample(&[1.0, 9.0, 2.0, f64::NAN, 3.0, 4.0], 6, 3);
        assert_eq!(d, vec![(0.5, 9.0), (2.5, 2.0), (4.5, 4.0)]);
    }

    #[test]
    fn nan_makes_a_gap() {
        let points = [1.0, 2.0, 3.0, f64::NAN, f64::NAN, 2.0, 1.0, f64::NAN, 4.0];
        let s = svg(&chart(
            "Gaps",
            vec![Series {
                label: "a",
                color: "#000",
                points: &points,
            }],
        ));
        assert_well_formed(&s);
        assert_eq!(s.matches("<polyline").count(), 2);
        assert_eq!(s.matches("<polygon").count(), 3);
        assert_eq!(s.matches("<circle").count(), 1, "the lone last point");
    }

    #[test]
    fn a_series_shorter_than_the_others_ends_early() {
        let long = [1.0; 10];
        let short = [2.0; 4];
        let s = svg(&chart(
            "t",
            vec![
                Series {
                    label: "long",
                    color: "#000",
                    points: &long,
                },
                Series {
                    label: "short",
                    color: "#111",
                    points: &short,
                },
            ],
        ));
        let line = s.rfind("<polyline points=\"").unwrap() + 18;
        let coords = &s[line..line + s[line..].find('"').unwrap()];
        assert_eq!(coords.split(' ').count(), 4);
    }

    #[test]
    fn empty_and_all_zero_charts_say_no_data() {
        let zeros = [0.0; 30];
        for c in [
            chart("Empty", vec![]),
            chart(
                "Zero",
                vec![Series {
                    label: "a",
                    color: "#000",
                    points: &zeros,
                }],
            ),
            chart(
                "NaN",
                vec![Series {
                    label: "a",
                    color: "#000",
                    points: &[f64::NAN, f64::NAN],
                }],
            ),
        ] {
            let s = svg(&c);
            assert_well_formed(&s);
            assert!(s.contains(">no data</text>"), "{s}");
            assert!(s.contains("<path d=\"M60 26V"), "axes");
            assert!(s.contains(">1</text>"), "the y scale of nothing");
            assert!(!s.contains("<polyline"));
        }
    }

    #[test]
    fn nice_maxima() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
        assert_eq!(nice_max(7.0), 10.0);
        assert_eq!(nice_max(1234.0), 2000.0);
        assert_eq!(nice_max(1000.0), 1000.0);
        assert_eq!(nice_max(2.0), 2.0);
        assert_eq!(nice_max(4.1), 5.0);
        assert_eq!(nice_max(0.3), 0.5);
        assert_eq!(nice_max(0.07), 0.1);
        assert_eq!(y_intervals(2000.0), 4);
        assert_eq!(y_intervals(1000.0), 5);
        assert_eq!(y_intervals(0.5), 5);
    }

    #[test]
    fn values_are_compact() {
        assert_eq!(format_value(0.0, "req/min"), "0");
        assert_eq!(format_value(1500.0, "req/min"), "1.5k");
        assert_eq!(format_value(2e6, "req/min"), "2M");
        assert_eq!(format_value(0.2, "req/min"), "0.2");
        assert_eq!(format_value(250.0, "req/min"), "250");
        assert_eq!(format_value(1500.0, "bytes/min"), "1.5 KB");
        assert_eq!(format_value(2.5e9, "bytes/min"), "2.5 GB");
        assert_eq!(format_value(0.0, "bytes/min"), "0 B");
        assert_eq!(format_value(0.25, "s"), "250 ms");
        assert_eq!(format_value(2.5, "s"), "2.5 s");
        assert_eq!(format_value(0.0, "s"), "0");
        assert_eq!(format_value(f64::NAN, "s"), "-");
    }

    #[test]
    fn dates_and_times_in_utc() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(NOV_24_2024 / 86_400), (2024, 11, 24));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(date_label(NOV_24_2024), "Nov 24");
        assert_eq!(date_label(NOV_24_2024 + 7 * 86_400 + 3600), "Dec 1");
        assert_eq!(time_label(NOV_24_2024), "00:00");
        assert_eq!(time_label(NOV_24_2024 + 13 * 3600 + 5 * 60 + 59), "13:05");
    }

    #[test]
    fn x_ticks_are_round_and_fit() {
        // An hour on 528 pixels: at most 8 labels, every 10 minutes.
        let t = x_ticks(NOV_24_2024 + 30, 3600, 528.0);
        assert_eq!(t.len(), 6);
        assert!(t.iter().all(|t| t % 600 == 0));
        // 28 days: a week apart, at midnight.
        let t = x_ticks(NOV_24_2024, 28 * 86_400, 528.0);
        assert!(t.len() <= 8 && t.len() >= 2, "{t:?}");
        assert!(t.iter().all(|t| t % 86_400 == 0));
        assert_eq!(x_ticks(5, 0, 528.0), vec![5]);
    }

    #[test]
    fn numbers_have_one_decimal_at_most() {
        assert_eq!(num(1.26), "1.3");
        assert_eq!(num(-0.01), "0");
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.04), "12");
    }
}
