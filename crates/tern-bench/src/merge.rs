//! `tern bench merge`: adds the JSON results of runs made at the same time on
//! several machines into one. Histograms add bucket by bucket and counters
//! add, so the merged percentiles are exactly those of all requests together
//! (never an average of percentiles). The merged window spans all runs, so
//! the rate is right when the runs overlapped in time (clocks in sync).

use std::path::PathBuf;

use crate::report::json;
use crate::result::RunResult;
use crate::Error;

/// Merges results; the first one's description (targets, plan) leads.
pub fn merge(results: Vec<RunResult>) -> Result<RunResult, Error> {
    let mut it = results.into_iter();
    let mut merged = it.next().ok_or_else(|| Error::usage("nothing to merge"))?;
    for r in it {
        merged.merge(&r);
    }
    Ok(merged)
}

/// Reads and merges result files.
pub fn merge_files(paths: &[PathBuf]) -> Result<RunResult, Error> {
    let results = paths
        .iter()
        .map(|p| json::read(p))
        .collect::<Result<Vec<_>, _>>()?;
    merge(results)
}
