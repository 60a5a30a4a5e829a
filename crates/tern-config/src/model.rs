//! The validated configuration model. Everything here has been checked: a
//! running server never meets an invalid value. Each setting documents its
//! default where it is declared; `docs/configuration.md` is the user's view.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A whole configuration: listeners, limits, logs and sites.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Where the configuration came from (a file path, or `<built-in>`).
    pub source: PathBuf,
    /// Process-wide settings.
    pub server: ServerSettings,
    /// Where to accept connections. At least one.
    pub listeners: Vec<Listener>,
    /// Request and connection limits.
    pub limits: Limits,
    /// The access log; `None` logs no requests.
    pub access_log: Option<AccessLogConfig>,
    /// The file cache shared by all sites.
    pub cache: CacheConfig,
    /// Virtual hosts, in file order. Exactly one is the default (the one
    /// marked `default = true`, else the first).
    pub sites: Vec<Site>,
}

impl Config {
    /// The site that answers requests whose Host matches no site.
    pub fn default_site(&self) -> &Site {
        self.sites
            .iter()
            .find(|s| s.default)
            .unwrap_or(&self.sites[0])
    }
}

/// Process-wide settings (`[server]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSettings {
    /// Worker threads. Default: the number of CPUs.
    pub workers: usize,
    /// On SIGTERM/SIGINT (and for the old config on reload), how long requests
    /// in flight may take to finish. Default: 10 s.
    pub grace_period: Duration,
}

/// One listening socket (`[[listen]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// The address: TCP (IPv4 or IPv6) or a Unix socket path.
    pub addr: ListenAddr,
}

/// A listening address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`.
    Tcp(SocketAddr),
    /// `unix:/run/tern.sock`.
    Unix(PathBuf),
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenAddr::Tcp(a) => write!(f, "{a}"),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Request and connection limits (`[limits]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request head (request line and headers) in bytes; larger gets
    /// 431. Default: 16 KiB.
    pub max_header_bytes: usize,
    /// Most header fields in one request; more gets 431. Default: 100.
    pub max_headers: usize,
    /// Longest request target in bytes; longer gets 414. Default: 8 KiB.
    pub max_uri_bytes: usize,
    /// Largest request body in bytes; larger gets 413. Default: 10 MiB.
    pub max_body_bytes: u64,
    /// Time a client has to send a request's headers; a slower one is
    /// disconnected. Default: 10 s.
    pub header_read_timeout: Duration,
    /// How long an idle keep-alive connection is kept open. Default: 75 s.
    pub keepalive_timeout: Duration,
    /// Most connections open at once; beyond it new connections wait in the
    /// kernel's accept queue. Default: 10 240.
    pub max_connections: usize,
}

/// The access log (`[access_log]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessLogConfig {
    /// The file to append to (relative paths are relative to the config file).
    pub path: PathBuf,
    /// The line format. Default: combined.
    pub format: LogFormat,
}

/// An access log line format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// NCSA Common Log Format.
    Common,
    /// NCSA Combined: common plus Referer and User-Agent.
    Combined,
    /// One JSON object per line.
    Json,
}

/// The file cache (`[cache]`): small and medium files kept in memory as ready
/// responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Whether the cache exists at all (sites may still switch it off for
    /// themselves). Default: true.
    pub enabled: bool,
    /// Total bytes of file bodies kept. Default: 256 MiB.
    pub max_bytes: u64,
    /// Largest file kept; larger files stream from disk. Default: 4 MiB, so
    /// the reports' 3.9 MB file is served from memory: streamed from disk it
    /// costs two copies (pread, then write) against one from the cache, and
    /// measured at half the transfer rate (docs/PERFORMANCE.md).
    pub max_entry_bytes: u64,
    /// How long an entry is served before the file is checked again (a
    /// changed file is served fresh within this time). Default: 1 s.
    pub revalidate: Duration,
}

/// A virtual host (`[[site]]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// The site's name for logs: its first host, or `default`.
    pub name: String,
    /// Host names this site answers (`example.com`, `*.example.com`), lower
    /// case, without port. Empty only for a default site.
    pub hosts: Vec<String>,
    /// Whether this site answers requests for unknown hosts. Default: false
    /// (the first site is the default when none is marked).
    pub default: bool,
    /// How the site serves files (the handler for paths no route claims).
    pub static_files: StaticConfig,
    /// Routes, tried longest prefix first, then extensions in file order.
    pub routes: Vec<Route>,
    /// Response-header rules, applied in file order to every response whose
    /// path matches.
    pub header_rules: Vec<HeaderRule>,
}

/// How a site serves static files (keys directly under `[[site]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticConfig {
    /// The document root, absolute after loading. Required.
    pub root: PathBuf,
    /// Index file names tried for a directory, in order. Default:
    /// `["index.html"]`.
    pub index: Vec<String>,
    /// Whether a directory without an index file is listed. Default: false
    /// (403).
    pub directory_listing: bool,
    /// Whether symbolic links are followed; when true, only links whose target
    /// stays inside the root. Default: false (404).
    pub follow_symlinks: bool,
    /// Whether names starting with `.` are served. Default: false (404).
    pub dotfiles: bool,
    /// Whether `.br`, `.zst` and `.gz` sidecar files are served to clients
    /// that accept them. Default: true.
    pub precompressed: bool,
    /// Extension -> media type overrides, on top of the built-in map
    /// (extension lower case, without the dot).
    pub mime: BTreeMap<String, String>,
    /// Most ranges honoured in one request; a request with more gets the
    /// whole file (200). Default: 100.
    pub max_ranges: usize,
    /// Whether this site uses the file cache. Default: true.
    pub cache: bool,
}

/// A route (`[[site.route]]`): which requests go to which handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// What the route matches.
    pub matcher: RouteMatcher,
    /// What answers.
    pub handler: HandlerConfig,
}

/// What a route matches, on the decoded, normalised path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteMatcher {
    /// A path prefix on segment boundaries: `/docs` matches `/docs` and
    /// `/docs/a` but not `/docsx`.
    Prefix(String),
    /// A file extension of the path's last segment (lower case, no dot).
    Extension(String),
}

/// The handler a route sends requests to. Later kinds (FastCGI, CGIplus,
/// WebAssembly) add variants.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerConfig {
    /// Static files with the given settings (a route may use another root).
    Static(StaticConfig),
    /// CGI/1.1 scripts (RFC 3875), a process per request.
    Cgi(CgiConfig),
}

/// A CGI route (`handler = "cgi"`): which scripts run, with what
/// environment, and within which limits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgiConfig {
    /// Where the scripts are, absolute after loading. For a prefix route the
    /// path after the prefix is looked up here (`/cgi-bin/a/b` runs `a`
    /// from `dir` when `a` is a file); required. For an extension route
    /// the whole request path is looked up here; default: the site's root.
    pub dir: PathBuf,
    /// The site's document root: DOCUMENT_ROOT, and the base of
    /// PATH_TRANSLATED. Always the site's `root`.
    pub document_root: PathBuf,
    /// A program that runs each script, given the script's path as its
    /// only argument (`"/usr/bin/perl"`); scripts then need not be
    /// executable. Default: none (each script is executed itself and must
    /// have an execute bit).
    pub interpreter: Option<PathBuf>,
    /// How long a script may go without writing to its stdout (or taking
    /// request body from its stdin): before its headers the client gets
    /// 504; later the response is cut off. The script's process group is
    /// stopped either way. Default: 30 s.
    pub timeout: Duration,
    /// Most scripts of this route running at once. Default: 32 (a CGI
    /// request is mostly fork and exec, CPU-bound: more processes than a
    /// few per core add memory and context switches, not throughput).
    pub max_concurrent: usize,
    /// Requests that may wait for a free slot when `max_concurrent`
    /// scripts run; one more is answered 503. Default: 100 (at least 1).
    pub queue: usize,
    /// How long a request waits in the queue before it is answered 503.
    /// Default: 10 s.
    pub queue_timeout: Duration,
    /// Whether the `Authorization` header reaches scripts as
    /// HTTP_AUTHORIZATION. Default: false (Apache's `CGIPassAuth Off`: any
    /// local user can read a process's environment).
    pub pass_authorization: bool,
    /// Whether requests with a header value starting with `() {` are
    /// refused (400), a defence in depth against Shellshock
    /// (CVE-2014-6271) in scripts run by an old bash. Default: true.
    pub refuse_shellshock: bool,
    /// Names of tern's own environment variables passed on to scripts, on
    /// top of PATH (always passed; `/usr/local/bin:/usr/bin:/bin` when tern
    /// has none). Default: none; everything else is withheld.
    pub env_allow: Vec<String>,
    /// Bytes of a request's stderr written to the error log; the rest is
    /// read and dropped (one line says so). Default: 64 KiB.
    pub max_stderr_bytes: u64,
}

/// A response-header rule (`[[site.headers]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderRule {
    /// A glob on the request path (`*.css`, `/static/**`). `*` matches
    /// within a segment, `**` across segments; a pattern without `/` matches
    /// the last segment.
    pub pattern: String,
    /// Headers set (replacing any the handler produced), name lower case.
    pub set: Vec<(String, String)>,
}

/// Meta-variables the CGI environment sets itself (RFC 3875 and the de-facto
/// extras): tern's own environment may never supply them, whatever
/// `env_allow` says (fcgiwrap's `blacklisted_env_vars`). The gateway's
/// environment builder sets exactly these.
pub const CGI_RESERVED_NAMES: &[&str] = &[
    "AUTH_TYPE",
    "CONTENT_LENGTH",
    "CONTENT_TYPE",
    "GATEWAY_INTERFACE",
    "PATH_INFO",
    "PATH_TRANSLATED",
    "QUERY_STRING",
    "REMOTE_ADDR",
    "REMOTE_HOST",
    "REMOTE_IDENT",
    "REMOTE_USER",
    "REQUEST_METHOD",
    "SCRIPT_NAME",
    "SERVER_NAME",
    "SERVER_PORT",
    "SERVER_PROTOCOL",
    "SERVER_SOFTWARE",
    "REQUEST_URI",
    "SCRIPT_FILENAME",
    "DOCUMENT_ROOT",
    "REMOTE_PORT",
    "SERVER_ADDR",
    "REQUEST_SCHEME",
    "HTTPS",
    "REDIRECT_STATUS",
];
