//! Every default of the configuration, once: the walkers fill a key left
//! out from here, the model's documentation links here, and a test holds
//! `docs/configuration.md` to these values, so the three cannot drift.
//! Grouped by the section they belong to, in the reference's order. (The
//! access log's format is `LogFormat`'s own `Default`.)

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

// [server]

/// How long requests in flight may take to finish at shutdown or reload.
pub const GRACE_PERIOD: Duration = Duration::from_secs(10);

// [[listen]]

/// Where tern listens when no `[[listen]]` is given: loopback only, so a
/// configuration without listeners exposes nothing.
pub const LISTEN: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));

// [listen.tls]

/// The names a certificate from the local CA (`internal = true`) is for.
pub const INTERNAL_NAMES: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// Where tern keeps what it makes for itself (its local CA in `pki/`, ACME
/// accounts and certificates in `acme/`): `$TERN_STATE_DIR`,
/// else `$XDG_DATA_HOME/tern`, else `~/.local/share/tern` (as Caddy keeps
/// its own under `~/.local/share/caddy`), else `/var/lib/tern`.
pub fn state_dir() -> std::path::PathBuf {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(d) = var("TERN_STATE_DIR") {
        return d.into();
    }
    if let Some(d) = var("XDG_DATA_HOME") {
        return std::path::PathBuf::from(d).join("tern");
    }
    match var("HOME") {
        Some(h) => std::path::PathBuf::from(h).join(".local/share/tern"),
        None => "/var/lib/tern".into(),
    }
}

/// How long one ACME attempt (account, order, validation, issuance) may
/// take before it counts as failed.
pub const ACME_TIMEOUT: Duration = Duration::from_secs(300);

// [limits]

/// Largest request head: 16 KiB.
pub const MAX_HEADER_BYTES: usize = 16 << 10;
/// Most header fields in one request.
pub const MAX_HEADERS: usize = 100;
/// Longest request target: 8 KiB.
pub const MAX_URI_BYTES: usize = 8 << 10;
/// Largest request body: 10 MiB.
pub const MAX_BODY_BYTES: u64 = 10 << 20;
/// Time to send a request head.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to send a request body, before `BODY_MIN_RATE` extends it
/// (Apache's `RequestReadTimeout body=20,MinRate=500`).
pub const BODY_TIMEOUT: Duration = Duration::from_secs(20);
/// Bytes per second of a body that earn one more second of `BODY_TIMEOUT`.
pub const BODY_MIN_RATE: u64 = 500;
/// How long an idle keep-alive connection stays open.
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(75);
/// Longest a write of an answer may wait for a client that reads none of
/// it (nginx's `send_timeout`).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// Most connections open at once.
pub const MAX_CONNECTIONS: usize = 10240;
/// `limits.max_connections_per_client`: no limit.
pub const MAX_CONNECTIONS_PER_CLIENT: usize = 0;

// [cache]

/// Whether the file cache exists.
pub const CACHE_ENABLED: bool = true;
/// Total bytes of file bodies the cache keeps: 256 MiB.
pub const CACHE_MAX_BYTES: u64 = 256 << 20;
/// Largest file the cache keeps: 4 MiB, so the reports' 3.9 MB file is
/// served from memory: streamed from disk it costs two copies (pread, then
/// write) against one from the cache, and measured at half the transfer
/// rate (docs/PERFORMANCE.md).
pub const CACHE_MAX_ENTRY_BYTES: u64 = 4 << 20;
/// How long a cache entry is served before its file is checked again.
pub const CACHE_REVALIDATE: Duration = Duration::from_secs(1);

// [[site]] and static routes

/// Index file names tried for a directory.
pub const INDEX: &[&str] = &["index.html"];
/// Whether a directory without an index is listed (otherwise 403).
pub const DIRECTORY_LISTING: bool = false;
/// Whether symbolic links are followed (otherwise 404).
pub const FOLLOW_SYMLINKS: bool = false;
/// Whether names starting with `.` are served (otherwise 404).
pub const DOTFILES: bool = false;
/// Whether `.br`, `.zst` and `.gz` sidecar files are served.
pub const PRECOMPRESSED: bool = true;
/// Most ranges honoured in one request.
pub const MAX_RANGES: usize = 100;
/// Whether a site uses the file cache.
pub const SITE_CACHE: bool = true;

// Gateway routes (CGI, FastCGI, CGIplus); WebAssembly shares the
// environment policy, the admission and the stderr limit.

/// How long a script or worker may stay silent.
pub const SCRIPT_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of a request's stderr written to the error log: 64 KiB.
pub const MAX_STDERR_BYTES: u64 = 64 << 10;
/// Whether `Authorization` reaches programs: no, as Apache's
/// `CGIPassAuth Off` (any local user can read a process's environment).
pub const PASS_AUTHORIZATION: bool = false;
/// Whether header values starting with `() {` are refused.
pub const REFUSE_SHELLSHOCK: bool = true;
/// Whether header names with `_` reach programs: no, as Apache 2.4 and
/// nginx.
pub const UNDERSCORES_IN_HEADERS: bool = false;
/// Most programs of a CGI or WebAssembly route running at once. For CGI:
/// a request is mostly fork and exec, CPU-bound, so more processes than a
/// few per core add memory and context switches, not throughput.
pub const MAX_CONCURRENT: usize = 32;
/// Requests that may wait for a free slot or worker.
pub const QUEUE: usize = 100;
/// How long a request waits for a free slot or worker.
pub const QUEUE_TIMEOUT: Duration = Duration::from_secs(10);

// FastCGI routes

/// How long connecting to an application may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Whether connections are kept between requests (KEEP_CONN).
pub const KEEP_CONNECTIONS: bool = true;

// Pools of persistent workers (FastCGI, CGIplus)

/// Processes kept running for a program tern runs.
pub const MIN_PROCESSES: usize = 1;
/// Idle connections kept to a server tern connects to.
pub const MIN_CONNECTIONS: usize = 0;
/// Most workers of a pool (processes, or connections per address).
pub const POOL_MAX: usize = 4;
/// How long a worker above the minimum may stay idle.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Requests after which a worker is replaced; 0 is never.
pub const MAX_REQUESTS: u64 = 0;

// WebAssembly routes

/// Most linear memory of one instance: 64 MiB.
pub const MEMORY_LIMIT: u64 = 64 << 20;
/// How long one run may take.
pub const WASM_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes a module may write to its stdout: 16 MiB.
pub const MAX_OUTPUT_BYTES: u64 = 16 << 20;

/// Upper bounds (seconds) of the request-duration histograms:
/// OpenTelemetry's advisory buckets for `http.server.request.duration`.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// The admin settings when a site mounts the admin pages and there is no
/// `[admin]` table: no listener of its own, every other setting at its
/// default.
pub fn admin() -> crate::AdminConfig {
    crate::AdminConfig {
        listen: None,
        allow: Vec::new(),
        duration_buckets: DURATION_BUCKETS.into(),
        request_history: REQUEST_HISTORY,
        activity_file: Some(state_dir().join(ACTIVITY_FILE)),
    }
}

/// Requests the admin listener's request history keeps.
pub const REQUEST_HISTORY: usize = 1000;

/// The activity history's file in the state directory.
pub const ACTIVITY_FILE: &str = "activity.bin";
