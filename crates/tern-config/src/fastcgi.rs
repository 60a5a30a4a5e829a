//! `handler = "fastcgi"` routes: where the application is (addresses,
//! parsed here into the type the gateway connects with, or a program tern
//! runs), where its scripts are, its pool, and its connections.

use std::path::Path;

use crate::address::FcgiAddress;
use crate::defaults;
use crate::fields::{command, directory, gateway_policy};
use crate::model::{FastCgiApp, FastCgiConfig};
use crate::pool::walk_pool;
use crate::walk::{Table, Walker};

/// The settings of a FastCGI route.
pub(crate) fn walk_fastcgi(
    w: &mut Walker<'_>,
    t: &mut Table<'_>,
    site_root: Option<&Path>,
) -> Option<FastCgiConfig> {
    let connect = w.one_or_more_strings(t, "connect");
    let command = command(w, t, "command");
    let app = match (connect, command) {
        (Some(_), Some(_)) => {
            w.error(
                t.span(),
                t.key_path("connect"),
                "give either `connect` (a running server) or `command` (a program tern runs), not both",
            );
            None
        }
        (Some(list), None) => {
            let given = !list.is_empty();
            let mut addrs = Vec::new();
            for (a, span) in list {
                // Parsed here into the type the gateway connects with:
                // `check` and `serve` cannot disagree about an address.
                match a.parse::<FcgiAddress>() {
                    Ok(addr) => addrs.push(addr),
                    Err(e) => w.error(span, t.key_path("connect"), e.to_string()),
                }
            }
            if addrs.is_empty() {
                if !given {
                    w.error(t.span(), t.key_path("connect"), "no address given");
                }
                None
            } else {
                Some(FastCgiApp::Connect(addrs))
            }
        }
        (None, Some(c)) => c.map(FastCgiApp::Spawn),
        (None, None) => {
            if !t.contains("connect") && !t.contains("command") {
                w.error(
                    t.span(),
                    t.key_path("connect"),
                    "missing: `connect = \"unix:/run/php/php-fpm.sock\"` (a running server) or `command = [\"/usr/bin/php-cgi\"]` (a program tern runs)",
                );
            }
            None
        }
    };
    let dir = w.string_spanned(t, "dir").map(|d| directory(w, t, d));
    // By the key, not by its value, so that a bad command does not turn
    // min_processes into an unknown key.
    let spawned = t.contains("command");
    let pool = walk_pool(w, t, spawned);
    let policy = gateway_policy(w, t);
    let connect_timeout = w
        .duration(t, "connect_timeout", true)
        .unwrap_or(defaults::CONNECT_TIMEOUT);
    let keep_connections = w
        .bool(t, "keep_connections")
        .unwrap_or(defaults::KEEP_CONNECTIONS);
    Some(FastCgiConfig {
        app: app?,
        dir,
        document_root: site_root?.to_path_buf(),
        pool: pool?,
        policy,
        connect_timeout,
        keep_connections,
    })
}
