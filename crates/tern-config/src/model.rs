//! The validated configuration model. Everything here has been checked: a
//! running server never meets an invalid value. Each setting documents its
//! default where it is declared, as a link to the constant in
//! [`defaults`](crate::defaults) that the walkers use;
//! `docs/configuration.md` is the user's view.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::address::ListenAddr;
use crate::defaults;

/// A whole configuration: listeners, limits, logs and sites.
#[derive(Clone, Debug)]
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
    /// The admin listener (metrics, status, health); `None`: off.
    pub admin: Option<AdminConfig>,
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
    /// in flight may take to finish. Default: [`GRACE_PERIOD`](crate::defaults::GRACE_PERIOD).
    pub grace_period: Duration,
    /// On SIGTERM/SIGINT, how long tern goes on serving, with readiness
    /// already answering 503, before it stops accepting and drains: the
    /// time a load balancer (a Kubernetes endpoint removal) takes to stop
    /// sending new connections. Default: zero.
    pub shutdown_delay: Duration,
    /// Which HTTP/1 connection loop serves plain and TLS HTTP/1
    /// connections (`http1 = "tern"` or `"hyper"`). Default: tern.
    pub http1: Http1,
}

/// The HTTP/1 connection loop (`[server] http1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Http1 {
    /// hyper's, for every request.
    Hyper,
    /// tern's own (`tern-h1`) for requests without a body; hyper's for
    /// the rest of a connection from the first request with one.
    #[default]
    Tern,
}

/// The admin listener (`[admin]`): metrics, the status page, the request
/// history, the live trace, health and readiness.
#[derive(Clone, Debug, PartialEq)]
pub struct AdminConfig {
    /// Where it listens (TCP or a Unix socket); `None`: no listener of
    /// its own (the pages are served on sites' `handler = "admin"` routes
    /// only).
    pub listen: Option<ListenAddr>,
    /// Networks whose clients it serves besides loopback (TCP). Default:
    /// none (loopback only).
    pub allow: Vec<ipnet::IpNet>,
    /// Upper bounds (seconds) of the request-duration and first-byte
    /// histograms. Default: OpenTelemetry's advisory buckets.
    pub duration_buckets: Vec<f64>,
    /// Requests the request history keeps. Default: 1000; 0 keeps none.
    pub request_history: usize,
    /// The activity history's file (per-minute totals for 28 days).
    /// Default: `activity.bin` in the state directory; `None` when
    /// `activity_history = false` (kept in memory only).
    pub activity_file: Option<PathBuf>,
}

/// One listening socket (`[[listen]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    /// The address: TCP (IPv4 or IPv6) or a Unix socket path.
    pub addr: ListenAddr,
    /// TLS on this listener (`[listen.tls]`), or plain HTTP.
    pub tls: Option<TlsConfig>,
    /// A plain listener that sends every client to HTTPS
    /// (`redirect_to_https = true`): the index, in `listeners`, of the
    /// first TLS listener, whose port the redirects name.
    pub redirect_to_https: Option<usize>,
}

/// A listener's TLS (`[listen.tls]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    /// Certificates with their keys, chosen per connection by the name the
    /// client asks for (SNI) and the key types it accepts; the first is
    /// the default. May be empty when `acme` is set.
    pub certificates: Vec<CertificateConfig>,
    /// The protocol versions offered.
    pub profile: TlsProfile,
    /// What a client gets that names no configured host, or none.
    pub unknown_names: UnknownNames,
    /// Client certificates (mutual TLS), if asked for.
    pub client_auth: Option<ClientAuth>,
    /// A certificate from tern's own local CA (`internal`), for
    /// development: after the configured `certificates`, or the default
    /// when there are none.
    pub internal: Option<InternalCa>,
    /// Session ticket keys shared by several tern processes
    /// (`ticket_key_file`); without them, keys are made in memory and
    /// rotate.
    pub ticket_keys: Option<TicketKeys>,
    /// Certificates ordered and renewed from an ACME CA (`acme`), if asked for.
    pub acme: Option<AcmeConfig>,
}

/// Files of session ticket keys (`ticket_key_file`): the first encrypts new
/// tickets, every one decrypts (so the previous key, listed second, still
/// resumes the sessions it issued).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TicketKeys {
    /// The key files, 80 bytes each (`openssl rand 80`, as nginx's).
    pub files: Vec<PathBuf>,
    /// Where they are configured (`file:line: key`).
    pub origin: String,
}

/// tern's local certificate authority (`internal = true` or a table): a
/// root kept in `dir`, and a certificate it issues for `names`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InternalCa {
    /// The DNS names and IP addresses the certificate is for. Default:
    /// [`INTERNAL_NAMES`](crate::defaults::INTERNAL_NAMES).
    pub names: Vec<String>,
    /// Where the root and the certificates are kept. Default:
    /// [`state_dir`](crate::defaults::state_dir)`/pki`.
    pub dir: PathBuf,
    /// Where it is configured (`file:line: key`), for errors found when the
    /// files are made or read.
    pub origin: String,
}

impl InternalCa {
    /// The local CA with every default: a certificate for
    /// [`INTERNAL_NAMES`](crate::defaults::INTERNAL_NAMES), kept in
    /// [`state_dir`](crate::defaults::state_dir)`/pki`; `origin` names
    /// who asked for it.
    pub fn with_defaults(origin: String) -> InternalCa {
        InternalCa {
            names: defaults::INTERNAL_NAMES
                .iter()
                .map(|n| n.to_string())
                .collect(),
            dir: defaults::state_dir().join("pki"),
            origin,
        }
    }
}

/// Certificates from an ACME CA (RFC 8555) for one set of names
/// (`[listen.tls] acme = { ... }`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcmeConfig {
    /// The names of the certificate (DNS names, lower case); the first is
    /// its subject.
    pub names: Vec<String>,
    /// The CA's directory URL (`https://...`).
    pub directory: String,
    /// A contact address for the account (`mailto:` is added), if any.
    pub email: Option<String>,
    /// How the CA checks that tern serves the names.
    pub challenge: AcmeChallenge,
    /// A PEM root to trust for the CA's own HTTPS instead of the system's
    /// (a test CA such as Pebble), if any.
    pub directory_ca: Option<PathBuf>,
    /// Where the account and the certificates are kept. Default:
    /// [`state_dir`](crate::defaults::state_dir)`/acme`.
    pub state: PathBuf,
    /// How long one attempt may take before it counts as failed (a CA
    /// that hangs is retried like one that refuses). Default:
    /// [`ACME_TIMEOUT`](crate::defaults::ACME_TIMEOUT).
    pub timeout: Duration,
    /// Where it is configured (`file:line: key`), for errors found later.
    pub origin: String,
}

/// An ACME challenge type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AcmeChallenge {
    /// HTTP-01: a token answered at `/.well-known/acme-challenge/` on a
    /// plain listener on port 80 (the default).
    #[default]
    Http01,
    /// TLS-ALPN-01 (RFC 8737): a certificate served to ALPN `acme-tls/1`
    /// on a TLS listener on port 443.
    TlsAlpn01,
}

/// Client certificates on a TLS listener (`client_auth`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientAuth {
    /// The CA certificates (PEM) a client's certificate must chain to.
    pub ca: PathBuf,
    /// Whether a client must present one (`mode = "require"`), or may
    /// (`"optional"`).
    pub required: bool,
    /// Where it is configured (`file:line: key`), for errors found when the
    /// CA file is read.
    pub origin: String,
}

/// One certificate chain and its private key, PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateConfig {
    /// The chain: the server's certificate first, then intermediates.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Where the pair is configured (`file:line: key`), for errors found
    /// when the files are read.
    pub origin: String,
}

/// Protocol versions, after Mozilla's server-side TLS profiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsProfile {
    /// TLS 1.2 and 1.3 (the default).
    #[default]
    Intermediate,
    /// TLS 1.3 only.
    Modern,
}

/// What a client that names no configured host gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnknownNames {
    /// The first certificate (the default).
    #[default]
    Default,
    /// The handshake is refused (nginx's `ssl_reject_handshake`).
    Refuse,
}

/// Request and connection limits (`[limits]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request head (request line and headers) in bytes; larger gets
    /// 431. Default: [`MAX_HEADER_BYTES`](crate::defaults::MAX_HEADER_BYTES).
    pub max_header_bytes: usize,
    /// Most header fields in one request; more gets 431. Default:
    /// [`MAX_HEADERS`](crate::defaults::MAX_HEADERS).
    pub max_headers: usize,
    /// Longest request target in bytes; longer gets 414. Default:
    /// [`MAX_URI_BYTES`](crate::defaults::MAX_URI_BYTES).
    pub max_uri_bytes: usize,
    /// Largest request body in bytes; larger gets 413. Default:
    /// [`MAX_BODY_BYTES`](crate::defaults::MAX_BODY_BYTES).
    pub max_body_bytes: u64,
    /// Time a client has to send a request's headers; a slower one is
    /// disconnected. Default: [`HEADER_READ_TIMEOUT`](crate::defaults::HEADER_READ_TIMEOUT).
    pub header_read_timeout: Duration,
    /// Time a client has to send a request body, counted only while tern
    /// waits on it, and extended by one second for every `body_min_rate`
    /// bytes that arrive (Apache's `RequestReadTimeout body=20,MinRate=500`);
    /// a slower client gets 408. Script routes read the body whole before
    /// a request takes a slot, so a slow client holds only its own
    /// connection. Default: [`BODY_TIMEOUT`](crate::defaults::BODY_TIMEOUT).
    pub body_timeout: Duration,
    /// Bytes per second of a body that earn one more second of
    /// `body_timeout`; 0 extends nothing. Default:
    /// [`BODY_MIN_RATE`](crate::defaults::BODY_MIN_RATE).
    pub body_min_rate: u64,
    /// How long an idle keep-alive connection is kept open. Default:
    /// [`KEEPALIVE_TIMEOUT`](crate::defaults::KEEPALIVE_TIMEOUT).
    pub keepalive_timeout: Duration,
    /// Longest a write to the client may wait with nothing of it taken (a
    /// client that stopped reading); the connection is then closed, and
    /// what served it (a script's slot, a file) is let go. Counted from
    /// when a write starts waiting, so a slow reader that keeps reading is
    /// never cut (nginx's `send_timeout`). Default:
    /// [`SEND_TIMEOUT`](crate::defaults::SEND_TIMEOUT).
    pub send_timeout: Duration,
    /// Most connections open at once; beyond it new connections wait in the
    /// kernel's accept queue. Default: [`MAX_CONNECTIONS`](crate::defaults::MAX_CONNECTIONS).
    pub max_connections: usize,
    /// Most connections open at once from one client address (`0`: no
    /// limit); one more is closed at once. Default:
    /// [`MAX_CONNECTIONS_PER_CLIENT`](crate::defaults::MAX_CONNECTIONS_PER_CLIENT).
    pub max_connections_per_client: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_header_bytes: defaults::MAX_HEADER_BYTES,
            max_headers: defaults::MAX_HEADERS,
            max_uri_bytes: defaults::MAX_URI_BYTES,
            max_body_bytes: defaults::MAX_BODY_BYTES,
            header_read_timeout: defaults::HEADER_READ_TIMEOUT,
            body_timeout: defaults::BODY_TIMEOUT,
            body_min_rate: defaults::BODY_MIN_RATE,
            keepalive_timeout: defaults::KEEPALIVE_TIMEOUT,
            send_timeout: defaults::SEND_TIMEOUT,
            max_connections: defaults::MAX_CONNECTIONS,
            max_connections_per_client: defaults::MAX_CONNECTIONS_PER_CLIENT,
        }
    }
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// NCSA Common Log Format.
    Common,
    /// NCSA Combined: common plus Referer and User-Agent; the default.
    #[default]
    Combined,
    /// Combined plus the TLS protocol and cipher, as words (`TLSv1.3
    /// TLS13_AES_128_GCM_SHA256`, `- -` in plain HTTP): Apache's
    /// `%{SSL_PROTOCOL}x %{SSL_CIPHER}x`, nginx's `$ssl_protocol $ssl_cipher`.
    CombinedTls,
    /// One JSON object per line.
    Json,
}

/// The file cache (`[cache]`): small and medium files kept in memory as ready
/// responses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// Whether the cache exists at all (sites may still switch it off for
    /// themselves). Default: [`CACHE_ENABLED`](crate::defaults::CACHE_ENABLED).
    pub enabled: bool,
    /// Total bytes of file bodies kept. Default: [`CACHE_MAX_BYTES`](crate::defaults::CACHE_MAX_BYTES).
    pub max_bytes: u64,
    /// Largest file kept; larger files stream from disk. Default:
    /// [`CACHE_MAX_ENTRY_BYTES`](crate::defaults::CACHE_MAX_ENTRY_BYTES).
    pub max_entry_bytes: u64,
    /// How long an entry is served before the file is checked again (a
    /// changed file is served fresh within this time). Default:
    /// [`CACHE_REVALIDATE`](crate::defaults::CACHE_REVALIDATE).
    pub revalidate: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: defaults::CACHE_ENABLED,
            max_bytes: defaults::CACHE_MAX_BYTES,
            max_entry_bytes: defaults::CACHE_MAX_ENTRY_BYTES,
            revalidate: defaults::CACHE_REVALIDATE,
        }
    }
}

/// A virtual host (`[[site]]`).
#[derive(Clone, Debug)]
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
    /// The ordered rules, realms and rate limits (`[[site.rules]]`,
    /// `[[site.access]]`, `[[site.limit]]`).
    pub rules: SiteRules,
}

/// The request rules of one site: `[[site.rules]]`, `[[site.access]]`
/// and `[[site.limit]]`, compiled into the types the phases decide over.
#[derive(Clone, Debug, Default)]
pub struct SiteRules {
    /// The ordered rules, run before routing.
    pub rules: Vec<tern_rules::rule::Rule>,
    /// The realms, first match decides, after routing.
    pub realms: Vec<tern_rules::access::Realm>,
    /// The rate limits, each that matches counts.
    pub limits: Vec<tern_rules::access::LimitRule>,
}

/// How a site serves static files (keys directly under `[[site]]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticConfig {
    /// The document root, absolute after loading. Required.
    pub root: PathBuf,
    /// Index file names tried for a directory, in order. Default:
    /// [`INDEX`](crate::defaults::INDEX).
    pub index: Vec<String>,
    /// Whether a directory without an index file is listed (else 403).
    /// Default: [`DIRECTORY_LISTING`](crate::defaults::DIRECTORY_LISTING).
    pub directory_listing: bool,
    /// Whether symbolic links are followed; when true, only links whose target
    /// stays inside the root (else 404). Default: [`FOLLOW_SYMLINKS`](crate::defaults::FOLLOW_SYMLINKS).
    pub follow_symlinks: bool,
    /// Whether names starting with `.` are served (else 404). Default:
    /// [`DOTFILES`](crate::defaults::DOTFILES).
    pub dotfiles: bool,
    /// Whether `.br`, `.zst` and `.gz` sidecar files are served to clients
    /// that accept them. Default: [`PRECOMPRESSED`](crate::defaults::PRECOMPRESSED).
    pub precompressed: bool,
    /// Extension -> media type overrides, on top of the built-in map
    /// (extension lower case, without the dot).
    pub mime: BTreeMap<String, String>,
    /// Most ranges honoured in one request; a request with more gets the
    /// whole file (200). Default: [`MAX_RANGES`](crate::defaults::MAX_RANGES).
    pub max_ranges: usize,
    /// Whether this site uses the file cache. Default: [`SITE_CACHE`](crate::defaults::SITE_CACHE).
    pub cache: bool,
}

impl StaticConfig {
    /// Static files from `root`, every other key at its default.
    pub fn with_root(root: PathBuf) -> StaticConfig {
        StaticConfig {
            root,
            index: defaults::INDEX.iter().map(|&i| i.to_owned()).collect(),
            directory_listing: defaults::DIRECTORY_LISTING,
            follow_symlinks: defaults::FOLLOW_SYMLINKS,
            dotfiles: defaults::DOTFILES,
            precompressed: defaults::PRECOMPRESSED,
            mime: BTreeMap::new(),
            max_ranges: defaults::MAX_RANGES,
            cache: defaults::SITE_CACHE,
        }
    }
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

/// The handler a route sends requests to. Exhaustive on purpose: a new
/// kind must be met by every place that builds handlers (`tern`'s
/// assembly), not fall into a catch-all there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandlerConfig {
    /// Static files with the given settings (a route may use another root).
    Static(StaticConfig),
    /// CGI/1.1 scripts (RFC 3875), a process per request.
    Cgi(CgiConfig),
    /// Persistent FastCGI applications.
    FastCgi(FastCgiConfig),
    /// Persistent CGIplus scripts and run-time engines.
    CgiPlus(CgiPlusConfig),
    /// WebAssembly modules run in process (WAGI).
    Wasm(WasmConfig),
    /// The admin pages (status, metrics, live trace, health), mounted on
    /// the site: served to whom the site's access rules let through.
    Admin,
}

impl HandlerConfig {
    /// The policy of a gateway route (CGI, FastCGI, CGIplus).
    pub fn gateway_policy_mut(&mut self) -> Option<&mut GatewayPolicy> {
        match self {
            HandlerConfig::Cgi(c) => Some(&mut c.policy),
            HandlerConfig::FastCgi(c) => Some(&mut c.policy),
            HandlerConfig::CgiPlus(c) => Some(&mut c.policy),
            HandlerConfig::Static(_) | HandlerConfig::Wasm(_) | HandlerConfig::Admin => None,
        }
    }
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
    /// The timeout, the environment policy and the stderr limit. Its
    /// `timeout` is how long a script may go without writing to its
    /// stdout (or taking request body from its stdin): before its headers
    /// the client gets 504; later the response is cut off. The script's
    /// process group is stopped either way.
    pub policy: GatewayPolicy,
    /// How many scripts of this route run at once, and how many requests
    /// wait.
    pub admission: Admission,
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

/// A route served by persistent FastCGI applications
/// (`handler = "fastcgi"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FastCgiConfig {
    /// Where the application is: servers to connect to, or a program tern
    /// runs itself.
    pub app: FastCgiApp,
    /// Where the scripts are, for applications that run script files
    /// (php-fpm, php-cgi, fcgiwrap): the path is looked up beneath it as
    /// for CGI (SCRIPT_FILENAME, SCRIPT_NAME, PATH_INFO; 404 when there is
    /// no such file). Default: none — the application answers every path
    /// of the route itself, SCRIPT_NAME is the route's prefix.
    pub dir: Option<PathBuf>,
    /// The site's document root (DOCUMENT_ROOT).
    pub document_root: PathBuf,
    /// Process or connection pool limits.
    pub pool: PoolSettings,
    /// Timeouts and the environment policy.
    pub policy: GatewayPolicy,
    /// How long connecting to the application may take before the
    /// address counts as failed. Default: [`CONNECT_TIMEOUT`](crate::defaults::CONNECT_TIMEOUT).
    pub connect_timeout: Duration,
    /// For `Connect`: keep connections open between requests (KEEP_CONN),
    /// or open one per request. Default: [`KEEP_CONNECTIONS`](crate::defaults::KEEP_CONNECTIONS).
    pub keep_connections: bool,
}

/// Where a FastCGI application is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FastCgiApp {
    /// Running already (php-fpm, fcgiwrap, a remote host): addresses
    /// (`unix:/path` or `host:port`), load spread over the healthy ones.
    Connect(Vec<crate::FcgiAddress>),
    /// tern runs it: each process gets its own listening socket as fd 0
    /// (the FastCGI convention).
    Spawn(CommandConfig),
}

/// A program tern runs as a persistent worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandConfig {
    /// The program, an absolute path.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it on top of the allow-listed ones (`env`).
    pub env: Vec<(String, String)>,
}

/// A route served by CGIplus workers (`handler = "cgiplus"`): scripts
/// that stay loaded and loop over requests, or a run-time engine that
/// keeps one interpreter loaded for many scripts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgiPlusConfig {
    /// What runs.
    pub engine: Engine,
    /// Where the scripts are (as for CGI).
    pub dir: PathBuf,
    /// The site's document root (DOCUMENT_ROOT).
    pub document_root: PathBuf,
    /// Process pool limits: per script for `Engine::Scripts`, for the
    /// engine otherwise.
    pub pool: PoolSettings,
    /// Timeouts and the environment policy.
    pub policy: GatewayPolicy,
}

/// Who runs a CGIplus route's scripts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Each script is its own persistent program (a pool per script).
    Scripts,
    /// tern's Perl run-time engine runs the scripts (`engine = "perl"`).
    Perl,
    /// tern's Python run-time engine (`engine = "python"`).
    Python,
    /// Another engine speaking CGIplus (`command = [...]`).
    Command(CommandConfig),
}

/// How many workers a persistent route keeps, and when they are
/// replaced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSettings {
    /// Workers kept running even when idle. Default: [`MIN_PROCESSES`](crate::defaults::MIN_PROCESSES)
    /// for a program tern runs, [`MIN_CONNECTIONS`](crate::defaults::MIN_CONNECTIONS) for connections.
    pub min: usize,
    /// Most workers (processes, or connections per address). Default:
    /// [`POOL_MAX`](crate::defaults::POOL_MAX).
    /// For a server tern connects to, keep it at most the server's own
    /// worker count (php-fpm's `pm.max_children`): each pooled connection
    /// holds one of them.
    pub max: usize,
    /// Requests that may wait when all `max` are busy; one more is
    /// answered 503. Default: [`QUEUE`](crate::defaults::QUEUE).
    pub queue: usize,
    /// How long a request waits for a worker before 503. Default:
    /// [`QUEUE_TIMEOUT`](crate::defaults::QUEUE_TIMEOUT).
    pub queue_timeout: Duration,
    /// Idle workers above `min` are stopped after this long. Default:
    /// [`IDLE_TIMEOUT`](crate::defaults::IDLE_TIMEOUT).
    pub idle_timeout: Duration,
    /// A worker is replaced after this many requests; 0 = never. Default:
    /// [`MAX_REQUESTS`](crate::defaults::MAX_REQUESTS).
    pub max_requests: u64,
    /// A worker is replaced when this old (between requests). Default: none.
    pub max_age: Option<Duration>,
}

/// Timeouts, the environment policy and the stderr limit of a gateway
/// route (CGI, FastCGI, CGIplus).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayPolicy {
    /// How long a worker may stay silent: before its headers the client
    /// gets 504 and the worker is replaced. Default: [`SCRIPT_TIMEOUT`](crate::defaults::SCRIPT_TIMEOUT).
    pub timeout: Duration,
    /// What of the request and of tern's environment reaches the program.
    pub env: EnvPolicy,
    /// Bytes of a request's stderr written to the error log; the rest is
    /// read and dropped (one line says so). Default:
    /// [`MAX_STDERR_BYTES`](crate::defaults::MAX_STDERR_BYTES).
    pub max_stderr_bytes: u64,
    /// A script request still running after this long is logged once,
    /// with its process id, the phase it is in and (FastCGI) the
    /// application's last STDERR line (php-fpm's `request_slowlog_timeout`).
    /// Default: none.
    pub slow_request: Option<Duration>,
    /// How long the client may take none of the program's output: then the
    /// program is stopped and its answer cut off. A program held back by
    /// its client is not silent (`timeout` does not end it); this ends it
    /// where the socket's own `send_timeout` cannot see the stall (an
    /// HTTP/2 stream whose window the client keeps shut on a connection it
    /// still reads). Not a key of the route: `[limits] send_timeout`.
    pub send_timeout: Duration,
}

impl Default for GatewayPolicy {
    fn default() -> Self {
        GatewayPolicy {
            timeout: defaults::SCRIPT_TIMEOUT,
            env: EnvPolicy::default(),
            max_stderr_bytes: defaults::MAX_STDERR_BYTES,
            slow_request: None,
            send_timeout: defaults::SEND_TIMEOUT,
        }
    }
}

/// What a route's programs see of the request's headers and of tern's own
/// environment: the policy the gateway's environment builder follows,
/// the same for every kind of route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Whether the `Authorization` header reaches programs as
    /// HTTP_AUTHORIZATION. Default: [`PASS_AUTHORIZATION`](crate::defaults::PASS_AUTHORIZATION).
    pub pass_authorization: bool,
    /// Whether requests with a header value starting with `() {` are
    /// refused (400), a defence in depth against Shellshock
    /// (CVE-2014-6271) in scripts run by an old bash. Default:
    /// [`REFUSE_SHELLSHOCK`](crate::defaults::REFUSE_SHELLSHOCK).
    pub refuse_shellshock: bool,
    /// Whether request headers whose names hold an underscore
    /// (`X_Forwarded_For`) reach programs. Default:
    /// [`UNDERSCORES_IN_HEADERS`](crate::defaults::UNDERSCORES_IN_HEADERS): such a name becomes the same variable
    /// as its hyphenated twin, which a front proxy sets or strips while leaving
    /// this spelling alone, so a client could forge it. A request that
    /// carries both spellings is refused (400) either way.
    pub underscores_in_headers: bool,
    /// Names of tern's own environment variables passed on to programs
    /// tern runs, on top of PATH (always passed;
    /// `/usr/local/bin:/usr/bin:/bin` when tern has none). Default: none;
    /// everything else is withheld. Always empty for WebAssembly routes: a
    /// module sees nothing of tern's environment.
    pub env_allow: Vec<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy {
            pass_authorization: defaults::PASS_AUTHORIZATION,
            refuse_shellshock: defaults::REFUSE_SHELLSHOCK,
            underscores_in_headers: defaults::UNDERSCORES_IN_HEADERS,
            env_allow: Vec::new(),
        }
    }
}

/// How many requests of a route run at once, and how many wait (CGI and
/// WebAssembly routes; persistent routes are bounded by their pool).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admission {
    /// Most requests of the route running at once. Default:
    /// [`MAX_CONCURRENT`](crate::defaults::MAX_CONCURRENT).
    pub max_concurrent: usize,
    /// Requests that may wait for a free slot when `max_concurrent` run;
    /// one more is answered 503. At least 1. Default: [`QUEUE`](crate::defaults::QUEUE).
    pub queue: usize,
    /// How long a request waits in the queue before it is answered 503.
    /// Default: [`QUEUE_TIMEOUT`](crate::defaults::QUEUE_TIMEOUT).
    pub queue_timeout: Duration,
}

impl Default for Admission {
    fn default() -> Self {
        Admission {
            max_concurrent: defaults::MAX_CONCURRENT,
            queue: defaults::QUEUE,
            queue_timeout: defaults::QUEUE_TIMEOUT,
        }
    }
}

/// A WebAssembly route (`handler = "wasm"`): a WASI command module run in
/// process, a fresh sandboxed instance per request, with CGI semantics
/// (WAGI): the CGI variables are its environment, the body its stdin,
/// and its stdout a CGI response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WasmConfig {
    /// The module (`.wasm`, or `.wat` text compiled at load), absolute
    /// after loading; required. It is compiled when tern builds the route,
    /// and again on reload.
    pub module: PathBuf,
    /// The site's document root (DOCUMENT_ROOT). Always the site's `root`.
    pub document_root: PathBuf,
    /// A directory the module may read, seen by it as `/`. Default: none
    /// (the module has no file system at all).
    pub dir: Option<PathBuf>,
    /// Most linear memory one instance may have; growing beyond it ends
    /// the request with 500. Default: [`MEMORY_LIMIT`](crate::defaults::MEMORY_LIMIT).
    pub memory_limit: u64,
    /// How long one run may take; the instance is interrupted and the
    /// client gets 504. Default: [`WASM_TIMEOUT`](crate::defaults::WASM_TIMEOUT).
    pub timeout: Duration,
    /// Most bytes the module may write to its stdout; beyond it the run is
    /// stopped and the client gets 502. Default: [`MAX_OUTPUT_BYTES`](crate::defaults::MAX_OUTPUT_BYTES).
    pub max_output_bytes: u64,
    /// How many instances run at once (each holds a slot of the pooling
    /// allocator) and how many requests wait.
    pub admission: Admission,
    /// What of the request reaches the module (as for CGI; `env_allow`
    /// is always empty).
    pub env: EnvPolicy,
    /// Bytes of a request's stderr written to the error log. Default:
    /// [`MAX_STDERR_BYTES`](crate::defaults::MAX_STDERR_BYTES).
    pub max_stderr_bytes: u64,
}
