//! tern-workload: load drawn from a site's own access logs, as Harvard's
//! WebStone-SS drew it.
//!
//! A log goes one way: lines → users (the client address, optionally with
//! its user agent) → pages (the files a user fetched within `page_gap` of
//! each other) → sessions (pages less than `session_gap` apart) → page
//! classes, reduced by the report's three heuristics → a [`Model`]: page
//! classes, session classes, page-to-page transitions (WESSBAS's Markov
//! form), think times, session lengths and the session arrival rate by
//! hour. The model is TOML a person can read and edit; `tern bench
//! --model` replays it.
//!
//! [`extract`] reads logs (plain or gzipped, in any order, overlapping or
//! not: their lines are merged by time, in any of tern's formats) into an
//! [`Extraction`] in bounded memory; [`summary::render_extraction`] prints
//! what it found (and [`summary::render`] what a model holds);
//! [`materialize`] writes a
//! document root (files of the logged sizes, CGI scripts for the dynamic
//! ones, and a tern configuration serving them) that matches a model.
#![forbid(unsafe_code)]

mod assemble;
mod error;
mod extract;
pub mod materialize;
pub mod model;
mod read;
mod reduce;
pub mod summary;
mod target;

pub use assemble::is_dynamic;
pub use error::Error;
pub use model::{
    Arrivals, FileRef, Model, ModelError, PageClass, Quantiles, Reduction, Rules, SessionClass,
    Source, Summary, END, START,
};
pub use read::{
    extract, format_name, Extraction, LogFile, Malformed, Options, PAGE_GAP, SESSION_GAP,
};
pub use reduce::{NEAR_FILE_SETS, SAME_FILE_SETS, SAME_FRONT_PAGE};
pub use tern_accesslog::{rfc3339_seconds, LogFormat};
