//! `docs/configuration.md` states the defaults that `tern_config::defaults`
//! holds: each default column read here must name the constant's value.

use std::time::Duration;

use tern_config::defaults::*;
use tern_config::LogFormat;

/// The reference, as the user reads it.
fn reference() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
    std::fs::read_to_string(path).unwrap()
}

/// The lines of the section whose heading contains `heading`, up to the
/// next heading (a `#` inside a code block is a comment, not a heading).
fn section<'a>(doc: &'a str, heading: &str) -> Vec<&'a str> {
    let mut in_code = false;
    let mut lines = doc.lines().filter(|l| {
        in_code ^= l.starts_with("```");
        !in_code && !l.starts_with("```")
    });
    let Some(_) = lines.find(|l| l.starts_with('#') && l.contains(heading)) else {
        panic!("no section `{heading}` in docs/configuration.md");
    };
    lines.take_while(|l| !l.starts_with('#')).collect()
}

/// The default column of the table row whose key column starts with `key`.
fn default_of<'a>(section: &[&'a str], key: &str) -> &'a str {
    let row = section
        .iter()
        .find(|l| l.trim_start_matches('|').trim_start().starts_with(key))
        .unwrap_or_else(|| panic!("no row {key}"));
    row.split('|').nth(2).unwrap().trim()
}

/// A duration as the reference writes one: `"10s"`, `"250ms"`.
fn duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("\"{}s\"", d.as_secs())
    } else {
        format!("\"{}ms\"", d.as_millis())
    }
}

/// A size as the reference writes one: `"16k"`, `"10m"` (either case).
fn size(n: u64) -> String {
    let (n, unit) = match n {
        n if n % (1 << 30) == 0 => (n >> 30, "g"),
        n if n % (1 << 20) == 0 => (n >> 20, "m"),
        n if n % (1 << 10) == 0 => (n >> 10, "k"),
        n => (n, ""),
    };
    format!("\"{n}{unit}\"")
}

/// Asserts the default column of `key` begins with `want` (a code span's
/// backtick aside, case aside), and not merely with its first digits.
fn says(section: &[&str], key: &str, want: impl std::fmt::Display) {
    let want = want.to_string().to_lowercase();
    let cell = default_of(section, &format!("`{key}`"));
    let got = cell.trim_start_matches('`').to_lowercase();
    let whole = got
        .strip_prefix(&want)
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric()));
    assert!(
        whole,
        "`{key}`: the reference says {cell}, the default is {want}"
    );
}

#[test]
fn the_reference_states_the_defaults_the_walkers_use() {
    let doc = reference();

    let s = section(&doc, "`[server]`");
    says(&s, "grace_period", duration(GRACE_PERIOD));
    says(&s, "http1", "\"tern\"");

    let s = section(&doc, "`[[listen]]`");
    assert!(s.join(" ").contains(&format!("tern listens on `{LISTEN}`")));

    let s = section(&doc, "`[limits]`");
    says(&s, "max_header_bytes", size(MAX_HEADER_BYTES as u64));
    says(&s, "max_headers", MAX_HEADERS);
    says(&s, "max_uri_bytes", size(MAX_URI_BYTES as u64));
    says(&s, "max_body_bytes", size(MAX_BODY_BYTES));
    says(&s, "header_read_timeout", duration(HEADER_READ_TIMEOUT));
    says(&s, "body_timeout", duration(BODY_TIMEOUT));
    says(&s, "body_min_rate", BODY_MIN_RATE);
    says(&s, "keepalive_timeout", duration(KEEPALIVE_TIMEOUT));
    says(&s, "max_connections", MAX_CONNECTIONS);
    says(&s, "max_connections_per_client", MAX_CONNECTIONS_PER_CLIENT);

    let s = section(&doc, "`[access_log]`");
    let format = match LogFormat::default() {
        LogFormat::Common => "\"common\"",
        LogFormat::Combined => "\"combined\"",
        LogFormat::CombinedTls => "\"combined_tls\"",
        LogFormat::Json => "\"json\"",
    };
    says(&s, "format", format);

    let s = section(&doc, "`[cache]`");
    says(&s, "enabled", CACHE_ENABLED);
    says(&s, "max_bytes", size(CACHE_MAX_BYTES));
    says(&s, "max_entry_bytes", size(CACHE_MAX_ENTRY_BYTES));
    says(&s, "revalidate", duration(CACHE_REVALIDATE));

    let s = section(&doc, "`[[site]]`");
    let index: Vec<String> = INDEX.iter().map(|i| format!("\"{i}\"")).collect();
    says(&s, "index", format!("[{}]", index.join(", ")));
    says(&s, "directory_listing", DIRECTORY_LISTING);
    says(&s, "follow_symlinks", FOLLOW_SYMLINKS);
    says(&s, "dotfiles", DOTFILES);
    says(&s, "precompressed", PRECOMPRESSED);
    says(&s, "max_ranges", MAX_RANGES);
    says(&s, "cache", SITE_CACHE);

    let s = section(&doc, "`handler = \"cgi\"`");
    says(&s, "timeout", duration(SCRIPT_TIMEOUT));
    says(&s, "max_concurrent", MAX_CONCURRENT);
    says(&s, "queue", QUEUE);
    says(&s, "queue_timeout", duration(QUEUE_TIMEOUT));
    says(&s, "pass_authorization", PASS_AUTHORIZATION);
    says(&s, "refuse_shellshock", REFUSE_SHELLSHOCK);
    says(&s, "underscores_in_headers", UNDERSCORES_IN_HEADERS);
    says(&s, "max_stderr_bytes", size(MAX_STDERR_BYTES));

    let s = section(&doc, "`handler = \"fastcgi\"`");
    let pool = |min| format!("`{min}` / `{POOL_MAX}`");
    assert_eq!(default_of(&s, "`min_processes`"), pool(MIN_PROCESSES));
    assert_eq!(default_of(&s, "`min_connections`"), pool(MIN_CONNECTIONS));
    says(&s, "queue", QUEUE);
    says(&s, "queue_timeout", duration(QUEUE_TIMEOUT));
    says(&s, "idle_timeout", duration(IDLE_TIMEOUT));
    says(&s, "max_requests", MAX_REQUESTS);
    says(&s, "connect_timeout", duration(CONNECT_TIMEOUT));
    says(&s, "keep_connections", KEEP_CONNECTIONS);
    says(&s, "timeout", duration(SCRIPT_TIMEOUT));

    let s = section(&doc, "`handler = \"cgiplus\"`");
    let row = s.iter().find(|l| l.starts_with("| pool keys")).unwrap();
    assert!(row.contains(&format!("`min_processes` (default {MIN_PROCESSES})")));
    assert!(row.contains(&format!("`max_processes` ({POOL_MAX})")));

    let s = section(&doc, "`handler = \"wasm\"`");
    says(&s, "memory_limit", size(MEMORY_LIMIT));
    says(&s, "timeout", duration(WASM_TIMEOUT));
    says(&s, "max_output_bytes", size(MAX_OUTPUT_BYTES));
    says(&s, "max_concurrent", MAX_CONCURRENT);
    says(&s, "queue", QUEUE);
    says(&s, "queue_timeout", duration(QUEUE_TIMEOUT));
    says(&s, "max_stderr_bytes", size(MAX_STDERR_BYTES));
}
