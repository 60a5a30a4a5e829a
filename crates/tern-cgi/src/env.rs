//! The CGI/1.1 environment (RFC 3875 §4.1): meta-variables built from the
//! request, the connection and the script that was found. Pure: no clock,
//! no file system, no reading of tern's own environment (the allow-listed
//! variables come in as values).
//!
//! What is set:
//! - the RFC's meta-variables: GATEWAY_INTERFACE, SERVER_SOFTWARE,
//!   SERVER_NAME, SERVER_PORT, SERVER_PROTOCOL, REQUEST_METHOD,
//!   QUERY_STRING (always, `""` when there is none), SCRIPT_NAME,
//!   PATH_INFO and PATH_TRANSLATED (only when there is path info),
//!   REMOTE_ADDR, REMOTE_HOST (the address: tern never looks up names),
//!   CONTENT_LENGTH (when there is a body) and CONTENT_TYPE (when sent).
//!   AUTH_TYPE and REMOTE_USER stay unset because tern authenticates no
//!   one (the RFC sets them only then), and REMOTE_IDENT because tern never
//!   makes ident (RFC 1413) calls;
//! - the extras every backend expects: REQUEST_URI, SCRIPT_FILENAME,
//!   DOCUMENT_ROOT, REMOTE_PORT, SERVER_ADDR, REQUEST_SCHEME, HTTPS=on (TLS
//!   only) and REDIRECT_STATUS=200 (PHP's `force-cgi-redirect`);
//! - each request header as `HTTP_` + the name upper-cased with `-` as
//!   `_`; repeated fields joined with `, ` (`; ` for Cookie).
//!
//! What is refused or withheld, by default:
//! - `Proxy` never becomes HTTP_PROXY (httpoxy, CVE-2016-5385 and kin:
//!   libraries take HTTP_PROXY as their outbound proxy);
//! - `Authorization` only with `pass_authorization` (any local user can
//!   read a process's environment); `Proxy-Authorization` never;
//! - Content-Type and Content-Length are carried only as CONTENT_TYPE and
//!   CONTENT_LENGTH (RFC §4.1.18), and Transfer-Encoding not at all (stdin
//!   has no transfer coding); a `Content_Type` look-alike is dropped;
//! - names with characters other than letters, digits, `-` and `_` are
//!   dropped (Apache), and so are names with `_` unless the route sets
//!   `underscores_in_headers` (Apache 2.4, nginx: `X_Forwarded_For` would
//!   pass for the `X-Forwarded-For` a front proxy vouches for); two names that map to one variable (`X-A` and `X_A`)
//!   refuse the request, since either could be the one a script trusts
//!   (lighttpd flags the same collision);
//! - with `refuse_shellshock`, any value starting with `() {` refuses the
//!   request (CVE-2014-6271: old bash imports such values as functions).

use std::ffi::{OsStr, OsString};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use http::request::Parts;
use http::{header, HeaderName, Version};
use tern_config::EnvPolicy;
use tern_handler::{AuthUser, ConnInfo, OriginalTarget, PeerAddr, Redirected, ScriptEnv};

use crate::Error;

/// A script's environment: names and values with no NUL byte, and no
/// variable set twice. Only [`build`] makes one.
///
/// Held as one block of `NAME=VALUE` entries, each ended by a NUL, as a C
/// environment is laid out: building it costs two allocations rather than
/// two per variable, and WASI's `environ_get` copies the block as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgiEnv {
    block: Vec<u8>,
    vars: Vec<Span>,
}

/// Where a variable lies in the block: its name is `start..eq`, its value
/// `eq + 1..end`, and its NUL at `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: usize,
    eq: usize,
    end: usize,
}

impl CgiEnv {
    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.iter()
            .find(|(n, _)| n.as_bytes() == name.as_bytes())
            .map(|(_, v)| v)
    }

    /// Every variable, in the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars.iter().map(|s| {
            (
                OsStr::from_bytes(&self.block[s.start..s.eq]),
                OsStr::from_bytes(&self.block[s.eq + 1..s.end]),
            )
        })
    }

    /// How many variables are set.
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether no variable is set (never true for a built environment).
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The whole environment as a C block: `NAME=VALUE` and a NUL for each
    /// variable, in order.
    pub fn block(&self) -> &[u8] {
        &self.block
    }

    /// Where each variable's entry starts in [`CgiEnv::block`].
    pub fn offsets(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.vars.iter().map(|s| s.start)
    }
}

/// The script that was found, as the environment names it.
#[derive(Clone, Copy, Debug)]
pub struct ScriptVars<'a> {
    /// The URL path of the script (`/cgi-bin/env.cgi`), decoded.
    pub script_name: &'a str,
    /// The script's file (`/srv/cgi-bin/env.cgi`).
    pub script_filename: &'a Path,
    /// The rest of the decoded path after the script (`/a/b`), or `""`.
    pub path_info: &'a str,
    /// The site's document root.
    pub document_root: &'a Path,
}

/// Everything the environment is built from.
#[derive(Clone, Copy, Debug)]
pub struct EnvInput<'a> {
    /// The request's method, URI, version and headers.
    pub request: &'a Parts,
    /// The connection it came on.
    pub conn: &'a ConnInfo,
    /// The script.
    pub script: ScriptVars<'a>,
    /// The body's exact length, when there is a body (a spooled body has
    /// one by now).
    pub content_length: Option<u64>,
    /// The route's policy: which headers pass, which values refuse the
    /// request.
    pub policy: &'a EnvPolicy,
    /// Variables taken from tern's own environment (PATH and the
    /// route's `env_allow`), set first; a name the CGI environment sets
    /// itself is skipped.
    pub inherited: &'a [(OsString, OsString)],
}

/// What `SERVER_SOFTWARE` says.
pub const SERVER_SOFTWARE: &str = concat!("tern/", env!("CARGO_PKG_VERSION"));

/// Names set by [`build`] itself, never taken from tern's environment.
const OWN: &[&str] = tern_config::CGI_RESERVED_NAMES;

/// How an environment is laid out as its variables are set: as a C
/// environment block ([`CgiEnv`], what a process or a WebAssembly module
/// is given), or as FastCGI's PARAMS stream (`tern-gateway` writes the
/// pairs straight into their records). One pass either way: a block built
/// and then encoded as PARAMS cost a FastCGI request two copies of every
/// variable, and a fifth of tern's instructions.
///
/// [`build_into`] sets each variable as: [`Layout::start`] with the
/// lengths of its name and value, the name's bytes appended to
/// [`Layout::bytes`], [`Layout::middle`], the value's bytes appended,
/// [`Layout::end`].
pub trait Layout {
    /// The environment built.
    type Env;
    /// Where names and values are appended.
    fn bytes(&mut self) -> &mut Vec<u8>;
    /// A variable with a name of `name_len` bytes and a value of
    /// `value_len` bytes begins.
    fn start(&mut self, name_len: usize, value_len: usize);
    /// Its name is written; its value follows.
    fn middle(&mut self);
    /// Its value is written.
    fn end(&mut self);
    /// The name of a variable set so far whose name or value holds a NUL
    /// byte, if any: one pass over everything, not a search per variable
    /// (that cost more than the rest of setting it).
    fn nul(&self) -> Option<String>;
    /// The environment, every variable set.
    fn finish(self) -> Result<Self::Env, Error>;
}

/// Builds the environment, or refuses the request (a header collision, a
/// Shellshock-looking value, a NUL).
pub fn build(input: &EnvInput<'_>) -> Result<CgiEnv, Error> {
    let vars = input.inherited.len() + 24 + input.request.headers.len();
    build_into(input, Block::with_capacity(vars))
}

/// [`build`], laid out by `layout`.
pub fn build_into<L: Layout>(input: &EnvInput<'_>, layout: L) -> Result<L::Env, Error> {
    let req = input.request;
    let mut env = Builder {
        out: layout,
        shellshock: input.policy.refuse_shellshock,
        shocked: None,
    };
    let rule_env = req.extensions.get::<ScriptEnv>();
    for (name, value) in input.inherited {
        // A variable the site's rules set replaces an inherited one.
        if rule_env.is_some_and(|r| r.0.iter().any(|(n, _)| n.as_bytes() == name.as_bytes())) {
            continue;
        }
        let own = OWN.iter().any(|o| o.as_bytes() == name.as_bytes());
        // Names tern sets from the request or its connection (`SSL_*` only
        // over TLS) never come from the environment.
        let ours = name.as_bytes().starts_with(b"HTTP_") || name.as_bytes().starts_with(b"SSL_");
        if !own && !ours {
            env.push(name.as_bytes(), value.as_bytes());
        }
    }

    let secure = input.conn.secure;
    let scheme = if secure { "https" } else { "http" };
    let host = request_host(req);
    let local = input.conn.local.socket_addr();
    let peer = input.conn.peer.socket_addr();

    env.push(b"GATEWAY_INTERFACE", b"CGI/1.1");
    env.push(b"SERVER_SOFTWARE", SERVER_SOFTWARE.as_bytes());
    match (server_name(host), local) {
        (Some(name), _) => env.push(b"SERVER_NAME", name.as_bytes()),
        (None, Some(a)) => env.push(b"SERVER_NAME", Address::ip(a.ip()).text()),
        (None, None) => env.push(b"SERVER_NAME", b"localhost"),
    }
    match local {
        Some(a) => env.push_number(b"SERVER_PORT", a.port().into()),
        None => env.push(b"SERVER_PORT", unix_server_port(host, secure).as_bytes()),
    }
    env.push(b"SERVER_ADDR", Address::of(&input.conn.local, local).text());
    env.push(b"SERVER_PROTOCOL", protocol(req.version).as_bytes());
    env.push(b"REQUEST_SCHEME", scheme.as_bytes());
    if secure {
        env.push(b"HTTPS", b"on");
    }
    if let Some(tls) = &input.conn.tls {
        // mod_ssl's names (the cipher by its IANA name).
        env.push(b"SSL_PROTOCOL", tls.protocol.as_bytes());
        env.push(b"SSL_CIPHER", tls.cipher.as_bytes());
        if let Some(sni) = &tls.sni {
            env.push(b"SSL_TLS_SNI", sni.as_bytes());
        }
        match &tls.client {
            Some(client) => {
                env.push(b"SSL_CLIENT_VERIFY", b"SUCCESS");
                env.push(b"SSL_CLIENT_S_DN", client.subject.as_bytes());
                env.push(b"SSL_CLIENT_I_DN", client.issuer.as_bytes());
                env.push(b"SSL_CLIENT_M_SERIAL", client.serial.as_bytes());
            }
            None => env.push(b"SSL_CLIENT_VERIFY", b"NONE"),
        }
    }
    env.push(b"REQUEST_METHOD", req.method.as_str().as_bytes());
    // The target the client sent, also when rules rewrote the request's.
    let target = match req.extensions.get::<OriginalTarget>() {
        Some(original) => original.0.as_str(),
        None => req.uri.path_and_query().map_or("/", |p| p.as_str()),
    };
    env.push(b"REQUEST_URI", target.as_bytes());
    env.push(b"QUERY_STRING", req.uri.query().unwrap_or("").as_bytes());
    let s = &input.script;
    env.push(b"SCRIPT_NAME", s.script_name.as_bytes());
    env.push(b"SCRIPT_FILENAME", s.script_filename.as_os_str().as_bytes());
    let root = s.document_root.as_os_str().as_bytes();
    if !s.path_info.is_empty() {
        env.push(b"PATH_INFO", s.path_info.as_bytes());
        // PATH_INFO starts with '/', so this appends rather than replaces.
        let mut base = root;
        while let Some(rest) = base.strip_suffix(b"/") {
            base = rest;
        }
        env.push_joined(b"PATH_TRANSLATED", &[base, s.path_info.as_bytes()], b"");
    }
    env.push(b"DOCUMENT_ROOT", root);
    // REMOTE_HOST is the address too: tern looks up no names.
    let remote = Address::of(&input.conn.peer, peer);
    env.push(b"REMOTE_ADDR", remote.text());
    if let Some(user) = req.extensions.get::<AuthUser>() {
        env.push(b"REMOTE_USER", user.name.as_bytes());
        env.push(b"AUTH_TYPE", user.scheme.as_bytes());
    }
    env.push(b"REMOTE_HOST", remote.text());
    if let Some(p) = peer {
        env.push_number(b"REMOTE_PORT", p.port().into());
    }
    if let Some(len) = input.content_length {
        env.push_number(b"CONTENT_LENGTH", len);
    }
    if let Some(ct) = req.headers.get(header::CONTENT_TYPE) {
        env.push(b"CONTENT_TYPE", ct.as_bytes());
    }
    env.push(b"REDIRECT_STATUS", b"200");
    if let Some(r) = rule_env {
        for (name, value) in &r.0 {
            env.push(name.as_bytes(), value.as_bytes());
        }
    }
    // A request a local redirect made: where it came from (Apache's names).
    if let Some(r) = req.extensions.get::<Redirected>() {
        env.push(b"REDIRECT_URL", r.url.as_bytes());
        if let Some(q) = &r.query {
            env.push(b"REDIRECT_QUERY_STRING", q.as_bytes());
        }
    }

    // Checked once for all of these, not per variable: only a few values
    // can hold a NUL (decoded paths, configured and inherited values, a
    // user name), and a request's headers cannot (`http` refuses NUL in
    // names and values).
    if let Some(name) = env.out.nul() {
        return Err(Error::NulInValue(name));
    }
    headers(&mut env, req, input.policy)?;
    if let Some(name) = env.shocked {
        return Err(Error::Shellshock(name));
    }
    env.out.finish()
}

/// [`CgiEnv`]'s layout: `NAME=VALUE` and a NUL.
struct Block {
    env: CgiEnv,
    /// Where the variable being set starts, and its `=`.
    start: usize,
    eq: usize,
}

impl Block {
    fn with_capacity(vars: usize) -> Block {
        Block {
            env: CgiEnv {
                block: Vec::with_capacity(vars * 32),
                vars: Vec::with_capacity(vars),
            },
            start: 0,
            eq: 0,
        }
    }
}

impl Layout for Block {
    type Env = CgiEnv;

    #[inline]
    fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.env.block
    }

    #[inline]
    fn start(&mut self, _name_len: usize, _value_len: usize) {
        self.start = self.env.block.len();
    }

    #[inline]
    fn middle(&mut self) {
        self.eq = self.env.block.len();
        self.env.block.push(b'=');
    }

    #[inline]
    fn end(&mut self) {
        let end = self.env.block.len();
        self.env.block.push(0);
        self.env.vars.push(Span {
            start: self.start,
            eq: self.eq,
            end,
        });
    }

    /// The block holds more NULs than variables.
    fn nul(&self) -> Option<String> {
        let CgiEnv { block, vars } = &self.env;
        if count_nuls(block) == vars.len() {
            return None;
        }
        vars.iter()
            .find(|s| block[s.start..s.end].contains(&0))
            .map(|s| String::from_utf8_lossy(&block[s.start..s.eq]).into_owned())
    }

    fn finish(self) -> Result<CgiEnv, Error> {
        Ok(self.env)
    }
}

/// How many NUL bytes `bytes` holds, counted in lanes of bytes, 255 bytes
/// at a time (no lane overflows): counting into a `usize` widened every
/// byte, two instructions each, and cost as much as the checks it
/// replaced. For layouts: their check for a NUL in a name or a value.
pub fn count_nuls(bytes: &[u8]) -> usize {
    bytes
        .chunks(255)
        .map(|c| usize::from(c.iter().fold(0u8, |n, &b| n + u8::from(b == 0))))
        .sum()
}

/// The environment being built, and the first variable whose value looked
/// like a bash function (reported after the other refusals, as it always
/// was).
struct Builder<L> {
    out: L,
    shellshock: bool,
    shocked: Option<String>,
}

impl<L: Layout> Builder<L> {
    // Inlined: a name is a constant at almost every call, and its copy
    // then takes a few moves instead of a call to `memcpy`.
    #[inline(always)]
    fn push(&mut self, name: &[u8], value: &[u8]) {
        self.check(value, || String::from_utf8_lossy(name).into_owned());
        self.out.start(name.len(), value.len());
        self.out.bytes().extend_from_slice(name);
        self.out.middle();
        self.out.bytes().extend_from_slice(value);
        self.out.end();
    }

    /// Notes a value that starts as a bash function definition does
    /// (`() {`), when the route refuses them; `name` says whose.
    fn check(&mut self, value: &[u8], name: impl FnOnce() -> String) {
        if self.shellshock && self.shocked.is_none() && value.starts_with(b"() {") {
            self.shocked = Some(name());
        }
    }

    /// Sets `name` to `parts` joined by `sep`.
    fn push_joined(&mut self, name: &[u8], parts: &[&[u8]], sep: &[u8]) {
        let len = parts.iter().map(|p| p.len()).sum::<usize>()
            + sep.len() * parts.len().saturating_sub(1);
        self.check(parts.first().copied().unwrap_or_default(), || {
            String::from_utf8_lossy(name).into_owned()
        });
        self.out.start(name.len(), len);
        self.out.bytes().extend_from_slice(name);
        self.out.middle();
        let bytes = self.out.bytes();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                bytes.extend_from_slice(sep);
            }
            bytes.extend_from_slice(part);
        }
        self.out.end();
    }

    /// Sets `name` to `n` in decimal.
    fn push_number(&mut self, name: &[u8], n: u64) {
        self.push(name, itoa::Buffer::new().format(n).as_bytes());
    }
}

/// An end of the connection as REMOTE_ADDR and SERVER_ADDR say it: its IP
/// (an IPv4-mapped IPv6 address as IPv4), or `unix:` and the path for a
/// Unix socket (nginx's form). Written by hand into a buffer on the stack:
/// formatting an address into a `String` was a sixth of the whole
/// environment's cost.
enum Address {
    Ip { text: [u8; 48], len: usize },
    Other(String),
}

impl Address {
    fn of(end: &PeerAddr, tcp: Option<SocketAddr>) -> Address {
        match tcp {
            Some(a) => Address::ip(a.ip()),
            None => Address::Other(end.to_string()),
        }
    }

    fn ip(ip: IpAddr) -> Address {
        // The longest IPv6 text: 8 groups of 4 and 7 colons, or 6 groups,
        // 6 colons and a dotted IPv4 address (45).
        let mut text = [0u8; 48];
        let len = match ip.to_canonical() {
            IpAddr::V4(v4) => {
                let mut n = 0;
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        text[n] = b'.';
                        n += 1;
                    }
                    if octet >= 100 {
                        text[n] = b'0' + octet / 100;
                        n += 1;
                    }
                    if octet >= 10 {
                        text[n] = b'0' + octet / 10 % 10;
                        n += 1;
                    }
                    text[n] = b'0' + octet % 10;
                    n += 1;
                }
                n
            }
            IpAddr::V6(v6) => {
                use std::io::Write as _;
                let mut cursor = std::io::Cursor::new(&mut text[..]);
                // 48 bytes hold any IPv6 address's text.
                let _ = write!(cursor, "{v6}");
                cursor.position() as usize
            }
        };
        Address::Ip { text, len }
    }

    fn text(&self) -> &[u8] {
        match self {
            Address::Ip { text, len } => &text[..*len],
            Address::Other(s) => s.as_bytes(),
        }
    }
}

/// The request headers as HTTP_* variables.
fn headers<L: Layout>(env: &mut Builder<L>, req: &Parts, policy: &EnvPolicy) -> Result<(), Error> {
    // Every name that could become a variable, kept or not, so that a
    // look-alike of a withheld header is caught too: its text, and
    // whether it has a `_`.
    let mut names: Vec<(&HeaderName, &str, bool)> = Vec::with_capacity(req.headers.keys_len());
    let mut underscores = false;
    for name in req.headers.keys() {
        let text = name.as_str();
        let (valid, underscore) = variable_name(text);
        if !valid {
            // A name no shell could hold (`X.Y`, `X:Y` are tokens in
            // HTTP): dropped, as Apache does.
            continue;
        }
        underscores |= underscore;
        names.push((name, text, underscore));
    }
    // Two names become one variable only through a `_`: header names are
    // distinct and lower case, and without `_` the mapping of `-` to `_`
    // is one to one. Few headers: compared pairwise, and only then (most
    // requests have no `_` in any name).
    if underscores {
        for (i, (_, text, _)) in names.iter().enumerate() {
            if let Some((_, first, _)) = names[..i].iter().find(|(_, f, _)| same_variable(f, text))
            {
                return Err(Error::HeaderCollision(
                    (*first).to_owned(),
                    (*text).to_owned(),
                ));
            }
        }
    }
    for (name, var, underscore) in names {
        let withheld = if !policy.underscores_in_headers && underscore {
            // The twin of a hyphenated name a front proxy vouches for
            // (X_Forwarded_For): dropped, as Apache 2.4 and nginx do.
            true
        } else if same_variable(var, "proxy") || same_variable(var, "proxy-authorization") {
            // httpoxy: never, whatever the route says.
            true
        } else if same_variable(var, "authorization") {
            !policy.pass_authorization
        } else {
            // Carried as CONTENT_TYPE / CONTENT_LENGTH; the body on stdin
            // has no transfer coding left (RFC 3875 §4.2).
            ["content-type", "content-length", "transfer-encoding"]
                .iter()
                .any(|w| same_variable(var, w))
        };
        if withheld {
            continue;
        }
        let sep: &[u8] = if name == header::COOKIE { b"; " } else { b", " };
        let values = req.headers.get_all(name);
        let (len, count) = values
            .iter()
            .fold((0, 0), |(len, count), v| (len + v.len(), count + 1));
        if let Some(first) = values.iter().next() {
            env.check(first.as_bytes(), || {
                let mut text = String::from("HTTP_");
                text.extend(var.bytes().map(|b| char::from(variable_byte(b))));
                text
            });
        }
        env.out.start(5 + var.len(), len + sep.len() * (count - 1));
        let bytes = env.out.bytes();
        bytes.extend_from_slice(b"HTTP_");
        bytes.extend(var.bytes().map(variable_byte));
        env.out.middle();
        let bytes = env.out.bytes();
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                bytes.extend_from_slice(sep);
            }
            bytes.extend_from_slice(value.as_bytes());
        }
        env.out.end();
    }
    Ok(())
}

/// Whether a header name becomes a variable (letters, digits, `-` and `_`
/// only), and whether it has a `_`: one pass.
fn variable_name(name: &str) -> (bool, bool) {
    name.bytes().fold((true, false), |(valid, underscore), b| {
        (valid & NAME_BYTE[usize::from(b)], underscore | (b == b'_'))
    })
}

/// A header name's byte in its variable's name: upper case, `-` as `_`.
fn variable_byte(b: u8) -> u8 {
    VARIABLE_BYTE[usize::from(b)]
}

/// [`variable_byte`] as a table, and which bytes a variable's name may
/// hold (letters, digits, `-` and `_`): every byte of every request
/// header's name goes through both, and a byte's comparisons cost ten
/// instructions where a look-up costs two.
const VARIABLE_BYTE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'-' => b'_',
            c => c.to_ascii_uppercase(),
        };
        b += 1;
    }
    table
};
const NAME_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
        b += 1;
    }
    table
};

/// Whether two header names become the same variable.
fn same_variable(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .all(|(x, y)| variable_byte(x) == variable_byte(y))
}

/// The Host the client asked for (`Host`, or the HTTP/2 authority), if it
/// is a plausible host name or IP literal with an optional port.
fn request_host(req: &Parts) -> Option<&str> {
    let raw = match req.headers.get(header::HOST) {
        Some(h) => h.to_str().ok()?,
        None => req.uri.authority()?.as_str(),
    };
    let ok = !raw.is_empty()
        && raw.len() <= 255
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
    ok.then_some(raw)
}

/// Splits `host[:port]` / `[v6][:port]`.
fn split_host(host: &str) -> (&str, Option<&str>) {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => (&host[..=end], host[end + 1..].strip_prefix(':')),
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, Some(p)),
        _ => (host, None),
    }
}

/// The host the client named, without its port.
fn server_name(host: Option<&str>) -> Option<&str> {
    host.map(|h| split_host(h).0).filter(|h| !h.is_empty())
}

/// SERVER_PORT on a Unix socket, which has no port: the one the client
/// used, else the scheme's.
fn unix_server_port(host: Option<&str>, secure: bool) -> &str {
    match host.map(split_host) {
        Some((_, Some(p))) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p,
        _ if secure => "443",
        _ => "80",
    }
}

fn protocol(v: Version) -> &'static str {
    match v {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2.0",
        Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt as _;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn parts(raw: &[(&str, &str)], uri: &str) -> Parts {
        let mut b = http::Request::builder().method("POST").uri(uri);
        for (n, v) in raw {
            b = b.header(*n, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn conn(secure: bool) -> ConnInfo {
        ConnInfo {
            peer: PeerAddr::Tcp("192.0.2.7:51000".parse().unwrap()),
            local: PeerAddr::Tcp("127.0.0.1:8080".parse().unwrap()),
            secure,
            tls: None,
        }
    }

    struct Case {
        parts: Parts,
        conn: ConnInfo,
        inherited: Vec<(OsString, OsString)>,
        path_info: &'static str,
        pass_authorization: bool,
        refuse_shellshock: bool,
        underscores_in_headers: bool,
    }

    impl Case {
        fn new(headers: &[(&str, &str)]) -> Case {
            Case {
                parts: parts(headers, "/cgi-bin/env.cgi/a/b?x=1&y=%20"),
                conn: conn(false),
                inherited: vec![("PATH".into(), "/usr/bin:/bin".into())],
                path_info: "/a/b",
                pass_authorization: false,
                refuse_shellshock: true,
                underscores_in_headers: false,
            }
        }

        fn build(&self) -> Result<CgiEnv, Error> {
            let filename = PathBuf::from("/srv/cgi-bin/env.cgi");
            let root = PathBuf::from("/srv/www/");
            build(&EnvInput {
                request: &self.parts,
                conn: &self.conn,
                script: ScriptVars {
                    script_name: "/cgi-bin/env.cgi",
                    script_filename: &filename,
                    path_info: self.path_info,
                    document_root: &root,
                },
                content_length: Some(5),
                policy: &EnvPolicy {
                    pass_authorization: self.pass_authorization,
                    refuse_shellshock: self.refuse_shellshock,
                    underscores_in_headers: self.underscores_in_headers,
                    env_allow: Vec::new(),
                },
                inherited: &self.inherited,
            })
        }
    }

    fn pairs(env: &CgiEnv) -> Vec<(String, String)> {
        env.iter()
            .map(|(n, v)| {
                (
                    n.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn golden_environment() {
        let env = Case::new(&[
            ("Host", "example.com:8080"),
            ("Content-Type", "text/plain"),
            ("Content-Length", "5"),
            ("User-Agent", "t/1"),
            ("Accept", "a"),
            ("accept", "b"),
            ("Cookie", "a=1"),
            ("Cookie", "b=2"),
            ("X-Forwarded-For", "198.51.100.1"),
        ])
        .build()
        .unwrap();
        let want: Vec<(String, String)> = [
            ("PATH", "/usr/bin:/bin"),
            ("GATEWAY_INTERFACE", "CGI/1.1"),
            ("SERVER_SOFTWARE", SERVER_SOFTWARE),
            ("SERVER_NAME", "example.com"),
            ("SERVER_PORT", "8080"),
            ("SERVER_ADDR", "127.0.0.1"),
            ("SERVER_PROTOCOL", "HTTP/1.1"),
            ("REQUEST_SCHEME", "http"),
            ("REQUEST_METHOD", "POST"),
            ("REQUEST_URI", "/cgi-bin/env.cgi/a/b?x=1&y=%20"),
            ("QUERY_STRING", "x=1&y=%20"),
            ("SCRIPT_NAME", "/cgi-bin/env.cgi"),
            ("SCRIPT_FILENAME", "/srv/cgi-bin/env.cgi"),
            ("PATH_INFO", "/a/b"),
            ("PATH_TRANSLATED", "/srv/www/a/b"),
            ("DOCUMENT_ROOT", "/srv/www/"),
            ("REMOTE_ADDR", "192.0.2.7"),
            ("REMOTE_HOST", "192.0.2.7"),
            ("REMOTE_PORT", "51000"),
            ("CONTENT_LENGTH", "5"),
            ("CONTENT_TYPE", "text/plain"),
            ("REDIRECT_STATUS", "200"),
            ("HTTP_HOST", "example.com:8080"),
            ("HTTP_USER_AGENT", "t/1"),
            ("HTTP_ACCEPT", "a, b"),
            ("HTTP_COOKIE", "a=1; b=2"),
            ("HTTP_X_FORWARDED_FOR", "198.51.100.1"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(pairs(&env), want);
    }

    #[test]
    fn tls_sets_https_and_no_path_info_sets_neither_path_variable() {
        let mut c = Case::new(&[("Host", "h")]);
        c.conn = conn(true);
        c.path_info = "";
        let env = c.build().unwrap();
        assert_eq!(env.get("HTTPS"), Some(OsStr::new("on")));
        assert_eq!(env.get("REQUEST_SCHEME"), Some(OsStr::new("https")));
        assert_eq!(env.get("PATH_INFO"), None);
        assert_eq!(env.get("PATH_TRANSLATED"), None);
        assert_eq!(env.get("SERVER_NAME"), Some(OsStr::new("h")));
        assert_eq!(env.get("SERVER_PORT"), Some(OsStr::new("8080")));
    }

    #[test]
    fn httpoxy_is_never_passed_in_any_casing() {
        for name in ["Proxy", "PROXY", "proxy", "pRoXy"] {
            let env = Case::new(&[(name, "http://evil:1")]).build().unwrap();
            assert_eq!(env.get("HTTP_PROXY"), None, "{name}");
        }
        let env = Case::new(&[("Proxy-Authorization", "Basic eA==")])
            .build()
            .unwrap();
        assert_eq!(env.get("HTTP_PROXY_AUTHORIZATION"), None);
    }

    #[test]
    fn authorization_only_when_the_route_opts_in() {
        let mut c = Case::new(&[("Authorization", "Basic dTpw")]);
        assert_eq!(c.build().unwrap().get("HTTP_AUTHORIZATION"), None);
        c.pass_authorization = true;
        assert_eq!(
            c.build().unwrap().get("HTTP_AUTHORIZATION"),
            Some(OsStr::new("Basic dTpw"))
        );
    }

    #[test]
    fn colliding_header_names_refuse_the_request() {
        let err = Case::new(&[("X-Forwarded-For", "a"), ("X_Forwarded_For", "b")])
            .build()
            .unwrap_err();
        assert!(
            matches!(&err, Error::HeaderCollision(a, b) if a == "x-forwarded-for" && b == "x_forwarded_for"),
            "{err}"
        );
        // Whichever comes first, among other names.
        let err = Case::new(&[("Accept", "*/*"), ("X_A", "1"), ("Host", "h"), ("X-A", "2")])
            .build()
            .unwrap_err();
        assert!(
            matches!(&err, Error::HeaderCollision(a, b) if a == "x_a" && b == "x-a"),
            "{err}"
        );
        // A look-alike of a withheld header collides too.
        let err = Case::new(&[("Content-Type", "a"), ("Content_Type", "b")])
            .build()
            .unwrap_err();
        assert!(matches!(err, Error::HeaderCollision(..)), "{err}");
        // Alone, an underscore name is passed when the route says so,
        // and a Content_Type look-alike is dropped.
        let mut c = Case::new(&[("X_Y", "1"), ("Content_Type", "x")]);
        c.underscores_in_headers = true;
        let env = c.build().unwrap();
        assert_eq!(env.get("HTTP_X_Y"), Some(OsStr::new("1")));
        assert_eq!(env.get("HTTP_CONTENT_TYPE"), None);
    }

    #[test]
    fn underscore_header_names_are_dropped_by_default() {
        let env = Case::new(&[("X_Forwarded_For", "6.6.6.6"), ("X-Real", "1")])
            .build()
            .unwrap();
        assert_eq!(env.get("HTTP_X_FORWARDED_FOR"), None);
        assert_eq!(env.get("HTTP_X_REAL"), Some(OsStr::new("1")));
    }

    #[test]
    fn names_no_shell_could_hold_are_dropped() {
        let env = Case::new(&[("X.Y", "1"), ("X~Z", "2")]).build().unwrap();
        assert!(pairs(&env).iter().all(|(n, _)| !n.starts_with("HTTP_X")));
    }

    #[test]
    fn shellshock_values_refuse_unless_allowed() {
        let mut c = Case::new(&[("User-Agent", "() { :; }; /bin/id")]);
        let err = c.build().unwrap_err();
        assert!(
            matches!(&err, Error::Shellshock(n) if n == "HTTP_USER_AGENT"),
            "{err}"
        );
        c.refuse_shellshock = false;
        let env = c.build().unwrap();
        assert_eq!(
            env.get("HTTP_USER_AGENT"),
            Some(OsStr::new("() { :; }; /bin/id"))
        );
        // Not at the start: harmless, passed.
        let env = Case::new(&[("X", "a () {")]).build().unwrap();
        assert_eq!(env.get("HTTP_X"), Some(OsStr::new("a () {")));
    }

    #[test]
    fn inherited_names_cannot_override_meta_variables() {
        let mut c = Case::new(&[]);
        c.inherited = vec![
            ("PATH".into(), "/bin".into()),
            ("SCRIPT_NAME".into(), "/evil".into()),
            ("HTTP_HOST".into(), "evil".into()),
            ("LANG".into(), "C".into()),
        ];
        let env = c.build().unwrap();
        assert_eq!(env.get("SCRIPT_NAME"), Some(OsStr::new("/cgi-bin/env.cgi")));
        assert_eq!(env.get("HTTP_HOST"), None);
        assert_eq!(env.get("LANG"), Some(OsStr::new("C")));
        let names: Vec<_> = env.iter().map(|(n, _)| n.to_owned()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "no variable set twice");
    }

    #[test]
    fn non_utf8_header_values_pass_as_bytes() {
        let mut p = parts(&[], "/x");
        p.headers.insert(
            "x-latin",
            http::HeaderValue::from_bytes(b"caf\xe9").unwrap(),
        );
        let c = Case {
            parts: p,
            ..Case::new(&[])
        };
        let env = c.build().unwrap();
        assert_eq!(env.get("HTTP_X_LATIN").unwrap().as_bytes(), b"caf\xe9");
    }

    #[test]
    fn the_block_is_a_c_environment_in_order() {
        let env = Case::new(&[("Cookie", "a=1"), ("X-Two", "2")])
            .build()
            .unwrap();
        let block = env.block();
        assert_eq!(block.last(), Some(&0));
        let entries: Vec<&[u8]> = block[..block.len() - 1].split(|&b| b == 0).collect();
        assert_eq!(entries.len(), env.len());
        let offsets: Vec<usize> = env.offsets().collect();
        for (((name, value), entry), at) in env.iter().zip(&entries).zip(&offsets) {
            let mut want = name.as_bytes().to_vec();
            want.push(b'=');
            want.extend_from_slice(value.as_bytes());
            assert_eq!(*entry, &want[..]);
            assert!(block[*at..].starts_with(&want));
        }
        assert_eq!(env.get("HTTP_COOKIE").unwrap(), "a=1");
    }

    #[test]
    fn a_nul_in_a_value_refuses_the_request() {
        let mut c = Case::new(&[]);
        c.inherited
            .push(("TZ".into(), OsString::from_vec(b"a\0b".to_vec())));
        assert!(matches!(c.build(), Err(Error::NulInValue(n)) if n == "TZ"));
    }

    #[test]
    fn unix_sockets_and_odd_hosts() {
        let mut c = Case::new(&[("Host", "bad host")]);
        c.conn = ConnInfo {
            peer: PeerAddr::Unix(Arc::from("")),
            local: PeerAddr::Unix(Arc::from("/run/tern.sock")),
            secure: false,
            tls: None,
        };
        let env = c.build().unwrap();
        assert_eq!(env.get("REMOTE_ADDR"), Some(OsStr::new("unix:")));
        assert_eq!(env.get("REMOTE_PORT"), None);
        assert_eq!(
            env.get("SERVER_ADDR"),
            Some(OsStr::new("unix:/run/tern.sock"))
        );
        assert_eq!(env.get("SERVER_NAME"), Some(OsStr::new("localhost")));
        assert_eq!(env.get("SERVER_PORT"), Some(OsStr::new("80")));

        let mut c = Case::new(&[("Host", "[::1]:9000")]);
        c.conn.peer = PeerAddr::Tcp("[::ffff:10.0.0.1]:5".parse().unwrap());
        let env = c.build().unwrap();
        assert_eq!(env.get("SERVER_NAME"), Some(OsStr::new("[::1]")));
        assert_eq!(env.get("REMOTE_ADDR"), Some(OsStr::new("10.0.0.1")));
    }

    /// Addresses are written in place, digit by digit: every width of
    /// octet, IPv6 as `Ipv6Addr` shows it, and a local address standing
    /// in for a missing Host.
    #[test]
    fn addresses_and_ports_are_written_as_std_shows_them() {
        for (peer, text) in [
            ("0.9.10.99:1", "0.9.10.99"),
            ("100.199.200.255:65535", "100.199.200.255"),
            ("[2001:db8::1:0:0:1]:80", "2001:db8::1:0:0:1"),
            ("[::ffff:255.0.7.10]:80", "255.0.7.10"),
        ] {
            let mut c = Case::new(&[]);
            let addr: SocketAddr = peer.parse().unwrap();
            c.conn.peer = PeerAddr::Tcp(addr);
            c.conn.local = PeerAddr::Tcp(addr);
            let env = c.build().unwrap();
            for name in ["REMOTE_ADDR", "REMOTE_HOST", "SERVER_ADDR", "SERVER_NAME"] {
                assert_eq!(env.get(name), Some(OsStr::new(text)), "{name} of {peer}");
            }
            let port = addr.port().to_string();
            assert_eq!(env.get("REMOTE_PORT"), Some(OsStr::new(&port)));
            assert_eq!(env.get("SERVER_PORT"), Some(OsStr::new(&port)));
        }
    }

    /// A NUL in any value is found, whichever variable holds it, and the
    /// variable is named.
    #[test]
    fn a_nul_in_a_path_value_refuses_the_request_naming_it() {
        let c = Case::new(&[]);
        let filename = PathBuf::from("/srv/cgi-bin/env.cgi");
        let root = PathBuf::from("/srv/www");
        let policy = EnvPolicy::default();
        let input = |path_info| EnvInput {
            request: &c.parts,
            conn: &c.conn,
            script: ScriptVars {
                script_name: "/cgi-bin/env.cgi",
                script_filename: &filename,
                path_info,
                document_root: &root,
            },
            content_length: Some(7),
            policy: &policy,
            inherited: &c.inherited,
        };
        assert!(matches!(build(&input("/a\0b")), Err(Error::NulInValue(n)) if n == "PATH_INFO"));
        let env = build(&input("/a")).unwrap();
        assert_eq!(env.get("CONTENT_LENGTH"), Some(OsStr::new("7")));
    }
}
