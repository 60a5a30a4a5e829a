//! Reports: one [`RunResult`], four renderings, plus a self-contained HTML
//! report ([`html`], `--html FILE`) of one run, several, a comparison or a
//! replay. Each renderer is a pure function from figures to text, so each
//! can be checked against a golden sample.

pub mod ab;
pub mod csv;
pub mod html;
pub mod human;
pub mod json;

use crate::result::RunResult;

/// The output formats of `tern bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Summary, latency table and percentile spectrum (default).
    #[default]
    Human,
    /// ApacheBench 2.3's report, line for line.
    Ab,
    /// The full result, histograms included (`tern bench merge` reads it).
    Json,
    /// ab `-e`: the time within which each percentage of requests was served.
    Csv,
}

/// Renders `result` in `format`.
pub fn render(result: &RunResult, format: Format) -> String {
    match format {
        Format::Human => human::render(result),
        Format::Ab => ab::render(&ab::AbFigures::from_result(result)),
        Format::Json => json::render(result),
        Format::Csv => csv::render(result),
    }
}

/// µs as milliseconds with three decimals.
pub(crate) fn ms(us: u64) -> String {
    format!("{:.3}", us as f64 / 1000.0)
}
