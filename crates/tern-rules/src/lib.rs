//! tern's rules core: what the rewrite and authorize phases decide over,
//! compiled once per configuration generation and decided without I/O
//! (the one question a rule asks the file system, whether a `try_files`
//! candidate exists, goes through the caller's [`rule::Probe`]).
//!
//! | module | what |
//! |---|---|
//! | [`cond`] | conditions: path glob or regex, host, method, header, query, client network, scheme |
//! | [`template`] | targets built from captures and variables (`/blog/$1?$query`) |
//! | [`rule`] | the ordered rules: redirect, rewrite, return, try_files, set |
//! | [`access`] | realms (address, password, users and groups) and rate limits |
//! | [`password`] | htpasswd and group files, hash checks, the cache of verified credentials |
//! | [`limit`] | nginx's `limit_req` and `limit_conn` tables |
//!
//! The configuration crate builds these types when it reads a file (so
//! that `tern check`, `tern explain` and `tern serve` decide alike), and
//! the server's phases apply them.

pub mod access;
pub mod cond;
pub mod limit;
pub mod password;
pub mod rule;
pub mod template;
