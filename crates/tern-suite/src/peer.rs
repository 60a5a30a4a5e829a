//! Peers: nginx, lighttpd, Apache, h2o and Caddy, each with the smallest
//! config that serves the suite's docroot on one loopback port like the
//! others: access logging off, 2 workers where the server has them (nginx
//! workers, h2o threads, Caddy's GOMAXPROCS, Apache limited to 2 processes;
//! lighttpd is one process), keep-alive request limits raised, sendfile where
//! the server uses it, and the file cache on or off where the server has a
//! knob (nginx `open_file_cache`, lighttpd `stat-cache-engine`). Each runs
//! in the foreground, so that the suite can measure and stop its process
//! tree. Modelled on the configs of `bench/peers.sh` (the peer baseline).
//!
//! Gateways, for the rows that need them ([`Gateway`]), as `bench/peers.sh`
//! sets them up. CGI: `/cgi-bin/` maps to the docroot's `cgi-bin/` on every
//! server; nginx passes it to fcgiwrap over a Unix socket (the suite starts
//! fcgiwrap, see [`crate::fcgiwrap`]), lighttpd runs it with mod_cgi and
//! Apache with mod_cgid; h2o and Caddy have no CGI and sit those rows out.
//! FastCGI: `/fcgi/` goes to the suite's responder and `*.php` under
//! `/php/` to php-fpm, each peer's own (the suite starts one of each per
//! server), on every peer (nginx `fastcgi_pass`, lighttpd
//! mod_fastcgi, Apache mod_proxy_fcgi, h2o `fastcgi.connect`, Caddy's
//! fastcgi transport and `php_fastcgi`), a new connection per request as
//! each does by default. php-cgi: lighttpd's mod_cgi runs `*.php` under
//! `/phpcgi/` with it. CGIplus, spawned FastCGI, the Perl engine and
//! WebAssembly are tern's own.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::gateway::Gateway;
use crate::process::{find_program, RunAs};
use crate::row::{CacheMode, Feature};

/// A server the suite can compare tern with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerKind {
    /// nginx.
    Nginx,
    /// lighttpd.
    Lighttpd,
    /// Apache httpd (Debian's `apache2`), event MPM.
    Apache2,
    /// h2o.
    H2o,
    /// Caddy.
    Caddy,
}

/// How to start a server: program, arguments, extra environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Executable.
    pub program: PathBuf,
    /// Arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

/// Where and how a peer is to run.
#[derive(Debug, Clone)]
pub struct PeerSetup<'a> {
    /// The peer's own directory (has `run/` and `logs/`).
    pub dir: &'a Path,
    /// The docroot.
    pub docroot: &'a Path,
    /// Loopback port.
    pub port: u16,
    /// Cache variant (`None`: the server has no knob).
    pub cache: Option<CacheMode>,
    /// The user to drop to when started as root.
    pub user: Option<RunAs>,
    /// The gateways beyond static files (none: static files only).
    pub gateways: &'a [Gateway<'a>],
    /// A second, TLS, port serving the same (for the "ssl" rows).
    pub tls: Option<TlsListen<'a>>,
}

/// A TLS port and the certificate it serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsListen<'a> {
    /// Loopback port.
    pub port: u16,
    /// Certificate (PEM).
    pub cert: &'a Path,
    /// Its key (PEM).
    pub key: &'a Path,
}

impl PeerSetup<'_> {
    /// The gateway for `feature`, if it is to be served.
    fn gateway(&self, feature: Feature) -> Option<&Gateway<'_>> {
        self.gateways.iter().find(|g| g.feature() == feature)
    }

    /// Whether any of `features` is to be served.
    fn any(&self, features: &[Feature]) -> bool {
        self.gateways
            .iter()
            .any(|g| features.contains(&g.feature()))
    }
}

/// The CGI machinery a peer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgiGateway {
    /// nginx passes requests over FastCGI to fcgiwrap, which forks the program.
    Fcgiwrap,
    /// lighttpd's mod_cgi forks the program and waits for it.
    ModCgi,
    /// Apache's mod_cgid asks its cgid daemon to fork the program.
    ModCgid,
}

impl CgiGateway {
    /// "nginx+fcgiwrap"-style label part.
    pub fn label(self) -> &'static str {
        match self {
            CgiGateway::Fcgiwrap => "fcgiwrap",
            CgiGateway::ModCgi => "mod_cgi",
            CgiGateway::ModCgid => "mod_cgid",
        }
    }

    /// The program processes are reaped by nobody (fcgiwrap's workers and
    /// cgid ignore SIGCHLD), so their CPU reaches no parent's cutime and
    /// escapes a process-tree count (peer-baseline.md §2.6).
    pub fn children_cpu_escapes(self) -> bool {
        matches!(self, CgiGateway::Fcgiwrap | CgiGateway::ModCgid)
    }
}

impl PeerKind {
    /// Every peer, in table order.
    pub const ALL: [PeerKind; 5] = [
        PeerKind::Nginx,
        PeerKind::Lighttpd,
        PeerKind::Apache2,
        PeerKind::H2o,
        PeerKind::Caddy,
    ];

    /// Its name on the command line and in the tables.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::Nginx => "nginx",
            PeerKind::Lighttpd => "lighttpd",
            PeerKind::Apache2 => "apache2",
            PeerKind::H2o => "h2o",
            PeerKind::Caddy => "caddy",
        }
    }

    /// Parses a name from [`PeerKind::name`].
    pub fn parse(name: &str) -> Option<PeerKind> {
        PeerKind::ALL.into_iter().find(|p| p.name() == name.trim())
    }

    /// True for servers with a file-cache knob (they run twice: cache on and off).
    pub fn has_cache_knob(self) -> bool {
        matches!(self, PeerKind::Nginx | PeerKind::Lighttpd)
    }

    /// Whether it can serve rows that need `feature` (given the backends).
    pub fn offers(self, feature: Feature) -> bool {
        match feature {
            Feature::StaticFiles => true,
            Feature::Cgi => self.cgi_gateway().is_some(),
            Feature::FastCgi | Feature::PhpFpm => true,
            Feature::PhpCgi => self == PeerKind::Lighttpd,
            Feature::CgiPlus | Feature::FastCgiSpawned | Feature::PerlEngine | Feature::Wasm => {
                false
            }
        }
    }

    /// How it runs CGI programs, if it can.
    pub fn cgi_gateway(self) -> Option<CgiGateway> {
        match self {
            PeerKind::Nginx => Some(CgiGateway::Fcgiwrap),
            PeerKind::Lighttpd => Some(CgiGateway::ModCgi),
            PeerKind::Apache2 => Some(CgiGateway::ModCgid),
            PeerKind::H2o | PeerKind::Caddy => None,
        }
    }

    /// The executable, looked for in `search`.
    pub fn find(self, search: &[PathBuf]) -> Option<PathBuf> {
        find_program(search, self.name())
    }

    /// Writes the config into `setup.dir` and returns how to start it.
    pub fn configure(self, program: &Path, s: &PeerSetup<'_>) -> Result<Launch, String> {
        let run = s.dir.join("run");
        let logs = s.dir.join("logs");
        if let Some(g) = s.gateways.iter().find(|g| !self.offers(g.feature())) {
            return Err(format!(
                "{} cannot serve {}",
                self.name(),
                g.feature().label()
            ));
        }
        let (conf_name, text) = match self {
            PeerKind::Nginx => ("nginx.conf", nginx(s, &run, &logs)?),
            PeerKind::Lighttpd => ("lighttpd.conf", lighttpd(s, &logs)),
            PeerKind::Apache2 => ("apache2.conf", apache2(s, &run, &logs)?),
            PeerKind::H2o => ("h2o.yaml", h2o(s, &logs)),
            PeerKind::Caddy => ("Caddyfile", caddy(s)),
        };
        let conf = s.dir.join(conf_name);
        std::fs::write(&conf, text).map_err(|e| format!("writing {}: {e}", conf.display()))?;
        let c = conf.display().to_string();
        let (args, env): (Vec<String>, Vec<(String, String)>) = match self {
            PeerKind::Nginx => (
                vec![
                    "-p".into(),
                    format!("{}/", run.display()),
                    "-c".into(),
                    c,
                    "-e".into(),
                    logs.join("error.log").display().to_string(),
                    "-g".into(),
                    "daemon off;".into(),
                ],
                vec![],
            ),
            PeerKind::Lighttpd => (vec!["-D".into(), "-f".into(), c], vec![]),
            PeerKind::Apache2 => (vec!["-f".into(), c, "-DFOREGROUND".into()], vec![]),
            PeerKind::H2o => (vec!["-c".into(), c], vec![]),
            PeerKind::Caddy => {
                let home = run.display().to_string();
                (
                    vec![
                        "run".into(),
                        "--config".into(),
                        c,
                        "--adapter".into(),
                        "caddyfile".into(),
                    ],
                    vec![
                        ("GOMAXPROCS".into(), "2".into()),
                        ("HOME".into(), home.clone()),
                        ("XDG_DATA_HOME".into(), home.clone()),
                        ("XDG_CONFIG_HOME".into(), home),
                    ],
                )
            }
        };
        Ok(Launch {
            program: program.to_owned(),
            args,
            env,
        })
    }
}

fn nginx(s: &PeerSetup<'_>, run: &Path, logs: &Path) -> Result<String, String> {
    let mut t = String::new();
    let r = run.display();
    let _ = writeln!(t, "worker_processes 2;");
    if let Some(u) = &s.user {
        let _ = writeln!(t, "user {} {};", u.user, u.group);
    }
    let _ = writeln!(t, "pid {r}/nginx.pid;");
    let _ = writeln!(t, "error_log {}/error.log warn;", logs.display());
    let _ = writeln!(t, "events {{ worker_connections 4096; }}");
    let _ = writeln!(t, "http {{");
    let _ = writeln!(
        t,
        "  types {{ text/html html; application/octet-stream bin; }}"
    );
    let _ = writeln!(t, "  default_type application/octet-stream;");
    let _ = writeln!(t, "  access_log off;");
    let _ = writeln!(t, "  sendfile on; tcp_nopush on; tcp_nodelay on;");
    let _ = writeln!(t, "  keepalive_requests 1000000;");
    let _ = writeln!(t, "  keepalive_timeout 30s;");
    if s.cache != Some(CacheMode::Off) {
        let _ = writeln!(
            t,
            "  open_file_cache max=1000 inactive=60s; open_file_cache_valid 60s; open_file_cache_min_uses 1; open_file_cache_errors on;"
        );
    }
    for temp in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
        let _ = writeln!(t, "  {temp}_temp_path {r}/{temp};");
    }
    if !s.gateways.is_empty() {
        // peers.sh's buffers: a 64 KB response fits, instead of going to a
        // temporary file past the default 8 x 4 KB.
        let _ = writeln!(t, "  fastcgi_buffer_size 16k;\n  fastcgi_buffers 8 16k;");
    }
    let _ = writeln!(
        t,
        "  server {{\n    listen 127.0.0.1:{};\n    root {};",
        s.port,
        s.docroot.display()
    );
    if let Some(tls) = &s.tls {
        let _ = writeln!(
            t,
            "    listen 127.0.0.1:{} ssl;\n    ssl_certificate {};\n    ssl_certificate_key {};\n    ssl_session_cache shared:SSL:10m;\n    ssl_session_timeout 1h;",
            tls.port,
            tls.cert.display(),
            tls.key.display()
        );
    }
    for g in s.gateways {
        let (location, socket) = match *g {
            Gateway::Cgi { fcgiwrap } => (
                "/cgi-bin/".to_owned(),
                fcgiwrap.ok_or("CGI needs fcgiwrap's socket")?,
            ),
            Gateway::FastCgi { socket } => (format!("{}/", Feature::FastCgi.prefix()), socket),
            Gateway::PhpFpm { socket } => {
                (format!("~ ^{}/.*\\.php$", Feature::PhpFpm.prefix()), socket)
            }
            _ => continue, // refused in `configure`
        };
        let _ = writeln!(t, "    location {location} {{");
        for (name, value) in NGINX_FASTCGI_PARAMS {
            let _ = writeln!(t, "      fastcgi_param {name} {value};");
        }
        let _ = writeln!(t, "      fastcgi_pass unix:{};", socket.display());
        let _ = writeln!(t, "    }}");
    }
    let _ = writeln!(t, "  }}\n}}");
    Ok(t)
}

/// The CGI meta-variables nginx hands fcgiwrap (`bench/peers.sh`'s
/// fastcgi_params; fcgiwrap runs `SCRIPT_FILENAME`).
const NGINX_FASTCGI_PARAMS: [(&str, &str); 18] = [
    ("QUERY_STRING", "$query_string"),
    ("REQUEST_METHOD", "$request_method"),
    ("CONTENT_TYPE", "$content_type"),
    ("CONTENT_LENGTH", "$content_length"),
    ("SCRIPT_NAME", "$fastcgi_script_name"),
    ("SCRIPT_FILENAME", "$document_root$fastcgi_script_name"),
    ("REQUEST_URI", "$request_uri"),
    ("DOCUMENT_URI", "$document_uri"),
    ("DOCUMENT_ROOT", "$document_root"),
    ("SERVER_PROTOCOL", "$server_protocol"),
    ("GATEWAY_INTERFACE", "CGI/1.1"),
    ("SERVER_SOFTWARE", "nginx"),
    ("REMOTE_ADDR", "$remote_addr"),
    ("REMOTE_PORT", "$remote_port"),
    ("SERVER_ADDR", "$server_addr"),
    ("SERVER_PORT", "$server_port"),
    ("SERVER_NAME", "$server_name"),
    ("REDIRECT_STATUS", "200"),
];

fn lighttpd(s: &PeerSetup<'_>, logs: &Path) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "server.document-root = \"{}\"", s.docroot.display());
    let _ = writeln!(t, "server.bind = \"127.0.0.1\"");
    let _ = writeln!(t, "server.port = {}", s.port);
    if let Some(u) = &s.user {
        let _ = writeln!(t, "server.username = \"{}\"", u.user);
        let _ = writeln!(t, "server.groupname = \"{}\"", u.group);
    }
    let _ = writeln!(t, "server.errorlog = \"{}/error.log\"", logs.display());
    let engine = if s.cache == Some(CacheMode::Off) {
        "disable"
    } else {
        "simple"
    };
    let _ = writeln!(t, "server.stat-cache-engine = \"{engine}\"");
    let _ = writeln!(t, "server.max-keep-alive-requests = 65535");
    let _ = writeln!(t, "server.max-keep-alive-idle = 30");
    let _ = writeln!(t, "index-file.names = ( \"index.html\" )");
    let _ = writeln!(
        t,
        "mimetype.assign = ( \".html\" => \"text/html\", \"\" => \"application/octet-stream\" )"
    );
    let mut modules = Vec::new();
    if s.any(&[Feature::Cgi, Feature::PhpCgi]) {
        modules.push("\"mod_cgi\"");
    }
    if s.any(&[Feature::FastCgi, Feature::PhpFpm]) {
        modules.push("\"mod_fastcgi\"");
    }
    if s.tls.is_some() {
        modules.push("\"mod_openssl\"");
    }
    if !modules.is_empty() {
        let _ = writeln!(t, "server.modules = ( {} )", modules.join(", "));
    }
    if let Some(tls) = &s.tls {
        let _ = writeln!(
            t,
            "$SERVER[\"socket\"] == \"127.0.0.1:{}\" {{\n  ssl.engine = \"enable\"\n  ssl.pemfile = \"{}\"\n  ssl.privkey = \"{}\"\n}}",
            tls.port,
            tls.cert.display(),
            tls.key.display()
        );
    }
    for g in s.gateways {
        match *g {
            Gateway::Cgi { .. } => {
                let _ = writeln!(
                    t,
                    "$HTTP[\"url\"] =~ \"^/cgi-bin/\" {{ cgi.assign = ( \".cgi\" => \"\", \".pl\" => \"\" ) }}"
                );
            }
            Gateway::PhpCgi { program } => {
                let _ = writeln!(
                    t,
                    "$HTTP[\"url\"] =~ \"^{}/\" {{ cgi.assign = ( \".php\" => \"{}\" ) }}",
                    Feature::PhpCgi.prefix(),
                    program.display()
                );
            }
            Gateway::FastCgi { socket } => {
                let _ = writeln!(
                    t,
                    "fastcgi.server = ( \"{}/\" => (( \"socket\" => \"{}\", \"check-local\" => \"disable\" )) )",
                    Feature::FastCgi.prefix(),
                    socket.display()
                );
            }
            Gateway::PhpFpm { socket } => {
                let _ = writeln!(
                    t,
                    "$HTTP[\"url\"] =~ \"^{}/\" {{ fastcgi.server = ( \".php\" => (( \"socket\" => \"{}\" )) ) }}",
                    Feature::PhpFpm.prefix(),
                    socket.display()
                );
            }
            _ => {} // refused in `configure`
        }
    }
    t
}

fn apache2(s: &PeerSetup<'_>, run: &Path, logs: &Path) -> Result<String, String> {
    let modules = Path::new("/usr/lib/apache2/modules");
    if !modules.join("mod_mpm_event.so").is_file() {
        return Err(format!("no mod_mpm_event.so in {}", modules.display()));
    }
    let m = modules.display();
    let r = run.display();
    let d = s.docroot.display();
    let mut t = String::new();
    let _ = writeln!(t, "ServerRoot \"{r}\"");
    let _ = writeln!(t, "ServerName localhost");
    let _ = writeln!(t, "Listen 127.0.0.1:{}", s.port);
    let _ = writeln!(t, "PidFile {r}/apache2.pid");
    let _ = writeln!(t, "DefaultRuntimeDir {r}");
    let _ = writeln!(t, "Mutex file:{r} default");
    let _ = writeln!(t, "ErrorLog {}/error.log", logs.display());
    let _ = writeln!(t, "LogLevel warn");
    if let Some(u) = &s.user {
        let _ = writeln!(t, "User {}\nGroup {}", u.user, u.group);
    }
    let mut wanted = vec![
        ("mpm_event_module", "mod_mpm_event.so"),
        ("authz_core_module", "mod_authz_core.so"),
        ("mime_module", "mod_mime.so"),
    ];
    if s.gateway(Feature::Cgi).is_some() {
        wanted.push(("alias_module", "mod_alias.so"));
        wanted.push(("cgid_module", "mod_cgid.so"));
    }
    if s.any(&[Feature::FastCgi, Feature::PhpFpm]) {
        wanted.push(("proxy_module", "mod_proxy.so"));
        wanted.push(("proxy_fcgi_module", "mod_proxy_fcgi.so"));
    }
    if s.tls.is_some() {
        wanted.push(("socache_shmcb_module", "mod_socache_shmcb.so"));
        wanted.push(("ssl_module", "mod_ssl.so"));
    }
    for (name, file) in wanted {
        if !modules.join(file).is_file() {
            return Err(format!("no {file} in {}", modules.display()));
        }
        let _ = writeln!(t, "LoadModule {name} {m}/{file}");
    }
    if Path::new("/etc/mime.types").is_file() {
        let _ = writeln!(t, "TypesConfig /etc/mime.types");
    }
    let _ = writeln!(t, "AddType application/octet-stream .bin");
    for line in [
        "HostnameLookups Off",
        "EnableSendfile On",
        "EnableMMAP On",
        "KeepAlive On",
        "MaxKeepAliveRequests 0",
        "KeepAliveTimeout 30",
        "StartServers 2",
        "ServerLimit 2",
        "ThreadsPerChild 25",
        "MinSpareThreads 25",
        "MaxSpareThreads 50",
        "MaxRequestWorkers 50",
    ] {
        let _ = writeln!(t, "{line}");
    }
    let _ = writeln!(t, "DocumentRoot \"{d}\"");
    let _ = writeln!(
        t,
        "<Directory />\n  AllowOverride None\n  Require all denied\n</Directory>"
    );
    let _ = writeln!(
        t,
        "<Directory \"{d}\">\n  Options None\n  AllowOverride None\n  Require all granted\n</Directory>"
    );
    for g in s.gateways {
        match *g {
            Gateway::Cgi { .. } => {
                let _ = writeln!(t, "ScriptSock {r}/cgid.sock");
                let _ = writeln!(t, "ScriptAlias /cgi-bin/ \"{d}/cgi-bin/\"");
                let _ = writeln!(
                    t,
                    "<Directory \"{d}/cgi-bin\">\n  Options +ExecCGI\n</Directory>"
                );
            }
            // Apache names a backend by its URL, whatever the socket: one
            // host name for both would send *.php to the responder
            // (`bench/peers.sh` has them both "localhost").
            Gateway::FastCgi { socket } => {
                let _ = writeln!(
                    t,
                    "ProxyPass \"{}/\" \"unix:{}|fcgi://fcgi-app/\"",
                    Feature::FastCgi.prefix(),
                    socket.display()
                );
            }
            Gateway::PhpFpm { socket } => {
                let _ = writeln!(
                    t,
                    "<Directory \"{d}{}\">\n  <FilesMatch \"\\.php$\">\n    SetHandler \"proxy:unix:{}|fcgi://php-fpm\"\n  </FilesMatch>\n</Directory>",
                    Feature::PhpFpm.prefix(),
                    socket.display()
                );
            }
            _ => {} // refused in `configure`
        }
    }
    if let Some(tls) = &s.tls {
        // The main server's mappings (ScriptAlias, ProxyPass) are the
        // virtual host's too.
        let _ = writeln!(t, "Listen 127.0.0.1:{}", tls.port);
        let _ = writeln!(t, "SSLSessionCache shmcb:{r}/ssl_scache(512000)");
        let _ = writeln!(
            t,
            "<VirtualHost 127.0.0.1:{}>\n  SSLEngine on\n  SSLCertificateFile {}\n  SSLCertificateKeyFile {}\n</VirtualHost>",
            tls.port,
            tls.cert.display(),
            tls.key.display()
        );
    }
    Ok(t)
}

fn h2o(s: &PeerSetup<'_>, logs: &Path) -> String {
    // No pid file: h2o writes it after dropping privileges, and the suite
    // knows the pid anyway.
    let mut t = String::new();
    if let Some(u) = &s.user {
        let _ = writeln!(t, "user: {}", u.user);
    }
    let _ = writeln!(t, "num-threads: 2");
    let _ = writeln!(t, "error-log: {}/error.log", logs.display());
    let _ = writeln!(t, "listen:\n  host: 127.0.0.1\n  port: {}", s.port);
    if let Some(tls) = &s.tls {
        // h2o takes `listen` once per port.
        let _ = writeln!(
            t,
            "listen:\n  host: 127.0.0.1\n  port: {}\n  ssl:\n    certificate-file: {}\n    key-file: {}",
            tls.port,
            tls.cert.display(),
            tls.key.display()
        );
    }
    let _ = writeln!(t, "hosts:\n  \"default\":\n    paths:");
    for g in s.gateways {
        match *g {
            Gateway::FastCgi { socket } => {
                let _ = writeln!(
                    t,
                    "      \"{}/\":\n        fastcgi.connect:\n          port: {}\n          type: unix",
                    Feature::FastCgi.prefix(),
                    socket.display()
                );
            }
            Gateway::PhpFpm { socket } => {
                let p = Feature::PhpFpm.prefix();
                let _ = writeln!(
                    t,
                    "      \"{p}/\":\n        file.dir: {}{p}\n        file.custom-handler:\n          extension: .php\n          fastcgi.connect:\n            port: {}\n            type: unix",
                    s.docroot.display(),
                    socket.display()
                );
            }
            _ => {} // refused in `configure`
        }
    }
    let _ = writeln!(t, "      \"/\":\n        file.dir: {}", s.docroot.display());
    t
}

fn caddy(s: &PeerSetup<'_>) -> String {
    let mut t = format!(
        "{{\n\tadmin off\n\tauto_https off\n\tservers {{\n\t\tprotocols h1\n\t}}\n}}\nhttp://:{} {{\n\tbind 127.0.0.1\n",
        s.port
    );
    let site = caddy_site(s);
    t.push_str(&site);
    if let Some(tls) = &s.tls {
        let _ = write!(
            t,
            "https://127.0.0.1:{} {{\n\tbind 127.0.0.1\n\ttls {} {}\n{site}",
            tls.port,
            tls.cert.display(),
            tls.key.display()
        );
    }
    t
}

/// What a Caddy site block holds after its address and binding.
fn caddy_site(s: &PeerSetup<'_>) -> String {
    let mut t = format!("\troot * {}\n", s.docroot.display());
    for g in s.gateways {
        match *g {
            Gateway::FastCgi { socket } => {
                let _ = writeln!(
                    t,
                    "\treverse_proxy {}/* unix/{} {{\n\t\ttransport fastcgi\n\t}}",
                    Feature::FastCgi.prefix(),
                    socket.display()
                );
            }
            Gateway::PhpFpm { socket } => {
                let _ = writeln!(
                    t,
                    "\tphp_fastcgi {}/* unix/{}",
                    Feature::PhpFpm.prefix(),
                    socket.display()
                );
            }
            _ => {} // refused in `configure`
        }
    }
    t.push_str("\tfile_server\n}\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_configs_name_port_and_docroot() {
        for p in PeerKind::ALL {
            assert_eq!(PeerKind::parse(p.name()), Some(p));
        }
        assert_eq!(PeerKind::parse("iis"), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run")).unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let setup = PeerSetup {
            dir: dir.path(),
            docroot: Path::new("/srv/www"),
            port: 18999,
            cache: Some(CacheMode::Off),
            user: Some(RunAs {
                user: "www-data".into(),
                group: "www-data".into(),
            }),
            gateways: &[],
            tls: None,
        };
        let launch = PeerKind::Nginx
            .configure(Path::new("/usr/sbin/nginx"), &setup)
            .unwrap();
        assert!(launch.args.contains(&"daemon off;".to_owned()));
        let conf = std::fs::read_to_string(dir.path().join("nginx.conf")).unwrap();
        assert!(conf.contains("listen 127.0.0.1:18999;\n    root /srv/www;"));
        assert!(!conf.contains("cgi-bin"));
        assert!(conf.contains("access_log off;"));
        assert!(!conf.contains("open_file_cache max"), "cache off");
        assert!(conf.contains("user www-data www-data;"));
        PeerKind::Lighttpd
            .configure(Path::new("/usr/sbin/lighttpd"), &setup)
            .unwrap();
        let conf = std::fs::read_to_string(dir.path().join("lighttpd.conf")).unwrap();
        assert!(conf.contains("server.stat-cache-engine = \"disable\""));
        let launch = PeerKind::Caddy
            .configure(Path::new("/usr/bin/caddy"), &setup)
            .unwrap();
        assert!(launch
            .env
            .contains(&("GOMAXPROCS".to_owned(), "2".to_owned())));
        assert!(std::fs::read_to_string(dir.path().join("Caddyfile"))
            .unwrap()
            .contains("http://:18999 {"));
    }

    #[test]
    fn a_tls_port_serves_the_given_certificate_on_every_peer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run")).unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let setup = PeerSetup {
            dir: dir.path(),
            docroot: Path::new("/srv/www"),
            port: 18999,
            cache: None,
            user: None,
            gateways: &[],
            tls: Some(TlsListen {
                port: 18443,
                cert: Path::new("/t/cert.pem"),
                key: Path::new("/t/key.pem"),
            }),
        };
        for (p, file, port) in [
            (PeerKind::Nginx, "nginx.conf", "listen 127.0.0.1:18443 ssl;"),
            (PeerKind::Lighttpd, "lighttpd.conf", "\"127.0.0.1:18443\""),
            (PeerKind::H2o, "h2o.yaml", "port: 18443\n  ssl:"),
            (PeerKind::Caddy, "Caddyfile", "https://127.0.0.1:18443 {"),
        ] {
            p.configure(Path::new("/usr/sbin/x"), &setup).unwrap();
            let conf = std::fs::read_to_string(dir.path().join(file)).unwrap();
            assert!(conf.contains(port), "{file}: {conf}");
            assert!(
                conf.contains("/t/cert.pem") && conf.contains("/t/key.pem"),
                "{file}: {conf}"
            );
            assert!(conf.contains("18999"), "{file}: the plain port stays");
        }
    }

    /// A peer's config with `gateways`, or why it cannot have one.
    fn config_with(p: PeerKind, gateways: &[Gateway<'_>]) -> Result<String, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run")).unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let setup = PeerSetup {
            dir: dir.path(),
            docroot: Path::new("/srv/www"),
            port: 18998,
            cache: Some(CacheMode::On),
            user: None,
            gateways,
            tls: None,
        };
        p.configure(Path::new("/usr/sbin/x"), &setup)?;
        let name = match p {
            PeerKind::Nginx => "nginx.conf",
            PeerKind::Lighttpd => "lighttpd.conf",
            PeerKind::Apache2 => "apache2.conf",
            PeerKind::H2o => "h2o.yaml",
            PeerKind::Caddy => "Caddyfile",
        };
        Ok(std::fs::read_to_string(dir.path().join(name)).unwrap())
    }

    fn has_apache_modules(names: &[&str]) -> bool {
        names
            .iter()
            .all(|n| Path::new("/usr/lib/apache2/modules").join(n).is_file())
    }

    #[test]
    fn cgi_configs_map_cgi_bin_the_same_way() {
        let socket = Path::new("/tmp/suite/fcgiwrap.sock");
        let err = config_with(PeerKind::Nginx, &[Gateway::Cgi { fcgiwrap: None }]).unwrap_err();
        assert!(err.contains("fcgiwrap"), "{err}");
        let via = [Gateway::Cgi {
            fcgiwrap: Some(socket),
        }];
        let conf = config_with(PeerKind::Nginx, &via).unwrap();
        assert!(conf.contains("location /cgi-bin/ {"), "{conf}");
        assert!(conf.contains("fastcgi_pass unix:/tmp/suite/fcgiwrap.sock;"));
        assert!(conf.contains("fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;"));
        assert!(
            conf.contains("fastcgi_buffers 8 16k;"),
            "64 KB stays in memory"
        );
        assert_eq!(conf.matches('{').count(), conf.matches('}').count());

        let conf = config_with(PeerKind::Lighttpd, &via).unwrap();
        assert!(conf.contains("server.modules = ( \"mod_cgi\" )"));
        assert!(conf.contains(
            "$HTTP[\"url\"] =~ \"^/cgi-bin/\" { cgi.assign = ( \".cgi\" => \"\", \".pl\" => \"\" ) }"
        ));

        if has_apache_modules(&["mod_mpm_event.so", "mod_cgid.so"]) {
            let conf = config_with(PeerKind::Apache2, &via).unwrap();
            assert!(conf.contains("/mod_cgid.so\n"));
            assert!(conf.contains("ScriptAlias /cgi-bin/ \"/srv/www/cgi-bin/\""));
            assert!(conf.contains("Options +ExecCGI"));
            assert!(!conf.contains("proxy"));
        }
        let err = config_with(PeerKind::H2o, &via).unwrap_err();
        assert_eq!(err, "h2o cannot serve CGI");
        assert_eq!(PeerKind::H2o.cgi_gateway(), None);
        assert!(PeerKind::Nginx
            .cgi_gateway()
            .unwrap()
            .children_cpu_escapes());
        assert!(!PeerKind::Lighttpd
            .cgi_gateway()
            .unwrap()
            .children_cpu_escapes());
    }

    #[test]
    fn fastcgi_and_php_go_to_the_given_sockets_on_every_peer() {
        let app = Path::new("/w/fcgi-app.sock");
        let fpm = Path::new("/w/php-fpm.sock");
        let both = [
            Gateway::FastCgi { socket: app },
            Gateway::PhpFpm { socket: fpm },
        ];
        for p in PeerKind::ALL {
            assert!(p.offers(Feature::FastCgi) && p.offers(Feature::PhpFpm));
            assert!(!p.offers(Feature::CgiPlus) && !p.offers(Feature::PerlEngine));
            assert!(!p.offers(Feature::FastCgiSpawned));
            assert_eq!(p.offers(Feature::PhpCgi), p == PeerKind::Lighttpd);
        }

        let conf = config_with(PeerKind::Nginx, &both).unwrap();
        assert!(conf.contains("    location /fcgi/ {\n"), "{conf}");
        assert!(conf.contains("fastcgi_pass unix:/w/fcgi-app.sock;"));
        assert!(
            conf.contains("    location ~ ^/php/.*\\.php$ {\n"),
            "{conf}"
        );
        assert!(conf.contains("fastcgi_pass unix:/w/php-fpm.sock;"));
        assert_eq!(conf.matches('{').count(), conf.matches('}').count());

        let conf = config_with(PeerKind::Lighttpd, &both).unwrap();
        assert!(
            conf.contains("server.modules = ( \"mod_fastcgi\" )"),
            "{conf}"
        );
        assert!(conf.contains(
            "fastcgi.server = ( \"/fcgi/\" => (( \"socket\" => \"/w/fcgi-app.sock\", \"check-local\" => \"disable\" )) )"
        ));
        assert!(conf.contains(
            "$HTTP[\"url\"] =~ \"^/php/\" { fastcgi.server = ( \".php\" => (( \"socket\" => \"/w/php-fpm.sock\" )) ) }"
        ));
        let php_cgi = [Gateway::PhpCgi {
            program: Path::new("/usr/bin/php-cgi"),
        }];
        let conf = config_with(PeerKind::Lighttpd, &php_cgi).unwrap();
        assert!(conf.contains(
            "$HTTP[\"url\"] =~ \"^/phpcgi/\" { cgi.assign = ( \".php\" => \"/usr/bin/php-cgi\" ) }"
        ));
        assert!(config_with(PeerKind::Nginx, &php_cgi).is_err());

        if has_apache_modules(&["mod_mpm_event.so", "mod_proxy.so", "mod_proxy_fcgi.so"]) {
            let conf = config_with(PeerKind::Apache2, &both).unwrap();
            assert!(conf.contains("/mod_proxy_fcgi.so\n"));
            assert!(
                conf.contains("ProxyPass \"/fcgi/\" \"unix:/w/fcgi-app.sock|fcgi://fcgi-app/\"")
            );
            assert!(conf.contains(
                "<Directory \"/srv/www/php\">\n  <FilesMatch \"\\.php$\">\n    SetHandler \"proxy:unix:/w/php-fpm.sock|fcgi://php-fpm\"\n"
            ));
            assert!(!conf.contains("cgid"));
        }

        let conf = config_with(PeerKind::H2o, &both).unwrap();
        assert!(conf.ends_with(
            "    paths:\n      \"/fcgi/\":\n        fastcgi.connect:\n          port: /w/fcgi-app.sock\n          type: unix\n\
             \x20     \"/php/\":\n        file.dir: /srv/www/php\n        file.custom-handler:\n          extension: .php\n          fastcgi.connect:\n            port: /w/php-fpm.sock\n            type: unix\n\
             \x20     \"/\":\n        file.dir: /srv/www\n"
        ), "{conf}");

        let conf = config_with(PeerKind::Caddy, &both).unwrap();
        assert!(conf.contains(
            "\troot * /srv/www\n\treverse_proxy /fcgi/* unix//w/fcgi-app.sock {\n\t\ttransport fastcgi\n\t}\n\tphp_fastcgi /php/* unix//w/php-fpm.sock\n\tfile_server\n}\n"
        ), "{conf}");
    }
}
