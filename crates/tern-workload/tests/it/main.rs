//! tern-workload's integration tests: logs with a known ground truth
//! written to real files (plain, gzipped, rotated, damaged), read back into
//! models, and models materialized into document roots that real Perl runs.

mod big;
mod extract;
mod gen;
mod logs;
mod materialize;
