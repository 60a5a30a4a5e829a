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
#![forbid(unsafe_code)]

pub mod model;

pub use model::{
    Arrivals, FileRef, Model, ModelError, PageClass, Quantiles, Reduction, Rules, SessionClass,
    Source, Summary, END, START,
};
