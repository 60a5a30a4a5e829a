//! Addresses, each parsed once here into the type that uses it, so that
//! `tern check` and `tern serve` cannot disagree about one: where tern
//! listens (`[[listen]] address`, and `--listen`), and where a FastCGI
//! application is (`connect = [...]`).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

/// A listening address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:80`.
    Tcp(SocketAddr),
    /// `unix:/run/tern.sock`; a relative path is relative to the
    /// configuration file (to the working directory for `--listen`).
    Unix(PathBuf),
}

/// Why a string is not a [`ListenAddr`]; it names the string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseListenError {
    /// `unix:` and nothing after it.
    #[error("`unix:` needs a socket path")]
    NoPath,
    /// Neither `IP:PORT` nor `unix:PATH`.
    #[error(
        "`{0}` is not an address: use IP:PORT (\"127.0.0.1:8080\", \"[::1]:8080\") or unix:PATH"
    )]
    NotAnAddress(String),
}

/// `127.0.0.1:8080`, `[::1]:8080`, `localhost:8080`? no: only literal
/// addresses (tern never resolves names), or `unix:PATH`.
impl FromStr for ListenAddr {
    type Err = ParseListenError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(p) = s.strip_prefix("unix:") {
            return match p.is_empty() {
                true => Err(ParseListenError::NoPath),
                false => Ok(Self::Unix(PathBuf::from(p))),
            };
        }
        s.parse::<SocketAddr>()
            .map(Self::Tcp)
            .map_err(|_| ParseListenError::NotAnAddress(s.to_owned()))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tcp(a) => write!(f, "{a}"),
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// Where a FastCGI application listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FcgiAddress {
    /// A Unix-domain socket (`unix:/run/php/fpm.sock`, or an absolute path).
    Unix(PathBuf),
    /// A TCP `host:port` (`127.0.0.1:9000`, `[::1]:9000`, `fpm:9000`). A
    /// name is resolved at each connect.
    Tcp(String),
}

/// Why a string is not an [`FcgiAddress`]; it names the string.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("FastCGI address `{input}`: {reason}")]
pub struct ParseAddressError {
    input: String,
    reason: &'static str,
}

impl FromStr for FcgiAddress {
    type Err = ParseAddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = |reason| ParseAddressError {
            input: s.to_owned(),
            reason,
        };
        if let Some(path) = s.strip_prefix("unix:") {
            return match path.starts_with('/') {
                true => Ok(Self::Unix(PathBuf::from(path))),
                false => Err(fail("a Unix socket path must be absolute")),
            };
        }
        if s.starts_with('/') {
            return Ok(Self::Unix(PathBuf::from(s)));
        }
        let (host, port) = s
            .rsplit_once(':')
            .ok_or_else(|| fail("expected host:port, unix:/path or /path"))?;
        match port.parse::<u16>() {
            Ok(0) => return Err(fail("port 0 is no port to connect to")),
            Ok(_) => {}
            Err(_) => return Err(fail("the port is not a number from 1 to 65535")),
        }
        let bare = match host.strip_prefix('[') {
            Some(rest) => rest
                .strip_suffix(']')
                .ok_or_else(|| fail("an IPv6 address needs its closing `]`"))?,
            None if host.contains(':') => {
                return Err(fail("an IPv6 address goes in brackets: [::1]:9000"))
            }
            None => host,
        };
        if bare.is_empty() {
            return Err(fail("the host is empty"));
        }
        Ok(Self::Tcp(s.to_owned()))
    }
}

impl fmt::Display for FcgiAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
            Self::Tcp(host_port) => f.write_str(host_port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_print_back() {
        let cases = [
            (
                "unix:/run/php/fpm.sock",
                FcgiAddress::Unix("/run/php/fpm.sock".into()),
                "unix:/run/php/fpm.sock",
            ),
            (
                "/tmp/a.sock",
                FcgiAddress::Unix("/tmp/a.sock".into()),
                "unix:/tmp/a.sock",
            ),
            (
                "127.0.0.1:9000",
                FcgiAddress::Tcp("127.0.0.1:9000".into()),
                "127.0.0.1:9000",
            ),
            (
                "[::1]:9000",
                FcgiAddress::Tcp("[::1]:9000".into()),
                "[::1]:9000",
            ),
            (
                "fpm.local:9000",
                FcgiAddress::Tcp("fpm.local:9000".into()),
                "fpm.local:9000",
            ),
        ];
        for (input, want, shown) in cases {
            let got: FcgiAddress = input.parse().unwrap();
            assert_eq!(got, want, "{input}");
            assert_eq!(got.to_string(), shown);
        }
    }

    #[test]
    fn bad_addresses_are_refused_naming_the_input() {
        for input in [
            "unix:run/fpm.sock",
            "localhost",
            "host:http",
            "::1:9000",
            "[::1:9000",
            ":9000",
            "host:70000",
            "127.0.0.1:0",
        ] {
            let err = input.parse::<FcgiAddress>().unwrap_err().to_string();
            assert!(err.contains(&format!("`{input}`")), "{err}");
        }
    }
}
