//! Access: a site's realms (`[[site.access]]`) and rate limits
//! (`[[site.limit]]`), decided after routing.
//!
//! **Realms** are WASD's path authorization with nginx's vocabulary. The
//! first realm whose conditions hold decides; a request no realm covers is
//! open. A realm checks the client's address (`deny`, then `allow`), a
//! password (HTTP Basic against an htpasswd file, then the `users` and
//! `groups` it requires), or both:
//!
//! | `satisfy` | granted when |
//! |---|---|
//! | `all` (default) | every check the realm has passes: a refused address is 403 whatever the password; a missing or wrong password is 401 |
//! | `any` | the address passes (and the realm has address rules), or the password does; else 401 if the realm asks for a password, 403 if not |
//!
//! **Limits** follow nginx's `limit_req`: each limit whose conditions hold
//! counts the request under its key (the client's address, or the user a
//! realm granted) and passes, delays or refuses it (see [`crate::limit`]).

use std::hash::BuildHasher as _;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use http::header::HeaderValue;
use http::StatusCode;
use ipnet::IpNet;

use crate::cond::{in_networks, Conditions, Request};
use crate::limit::{RateLimit, RateZone, Verdict};
use crate::password::{GroupFile, PasswordFile, VerifiedCache};

/// How a realm's address and password checks combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Satisfy {
    /// Every check must pass.
    All,
    /// One check is enough.
    Any,
}

/// A realm's password check.
#[derive(Clone, Debug)]
pub struct Passwords {
    /// The htpasswd file, as read when the configuration was loaded.
    pub file: Arc<PasswordFile>,
    /// Where it was read from, for log lines.
    pub path: String,
}

/// Who a realm admits once they proved who they are.
#[derive(Clone, Debug, Default)]
pub struct Admits {
    /// Users admitted by name (empty with no `groups`: anyone proven).
    pub users: Vec<String>,
    /// Groups admitted, from `group_file`.
    pub groups: Vec<String>,
    /// The group file, if the realm admits groups.
    pub group_file: Option<Arc<GroupFile>>,
}

impl Admits {
    fn admits(&self, user: &str) -> bool {
        (self.users.is_empty() && self.groups.is_empty())
            || self.users.iter().any(|u| u == user)
            || self
                .group_file
                .as_ref()
                .is_some_and(|g| self.groups.iter().any(|group| g.is_member(user, group)))
    }
}

/// One `[[site.access]]` block.
#[derive(Clone, Debug)]
pub struct Realm {
    /// When the realm applies.
    pub conditions: Conditions,
    /// The realm's name, sent in the `WWW-Authenticate` challenge.
    pub name: String,
    /// Networks refused.
    pub deny: Vec<IpNet>,
    /// Networks admitted (empty: any not denied).
    pub allow: Vec<IpNet>,
    /// The password check, if any.
    pub passwords: Option<Passwords>,
    /// Whether a verified TLS client certificate proves who the client is
    /// (its subject DN, as mod_ssl's `SSLUserName SSL_CLIENT_S_DN`).
    pub certificate: bool,
    /// Who is admitted once proven.
    pub admits: Admits,
    /// How the checks combine.
    pub satisfy: Satisfy,
    /// Where it is configured.
    pub origin: String,
}

/// Who a realm granted a request to, and how they proved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The user name, or a client certificate's subject DN.
    pub name: Arc<str>,
    /// `Basic` or `SSL` (CGI's `AUTH_TYPE`).
    pub scheme: &'static str,
}

/// What a limit counts requests by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitKey {
    /// The client's address.
    Client,
    /// The user a realm granted (requests without one are not counted).
    User,
}

/// One `[[site.limit]]` block, as configured.
#[derive(Clone, Debug)]
pub struct LimitRule {
    /// When the limit applies.
    pub conditions: Conditions,
    /// What requests are counted by.
    pub key: LimitKey,
    /// Rate, burst and delay.
    pub limit: RateLimit,
    /// The status of a refusal (429 unless configured).
    pub status: StatusCode,
    /// How many keys the limit remembers.
    pub keys: usize,
    /// Where it is configured.
    pub origin: String,
}

/// What the authorize phase decided.
#[derive(Debug)]
pub enum AccessVerdict {
    /// On to the handler, after `delay` (zero: at once), as `user` if a
    /// realm granted one.
    Pass {
        /// Who, when a password or a certificate granted the request.
        user: Option<Identity>,
        /// How long a limit holds the request back.
        delay: Duration,
    },
    /// 401 with a challenge for this realm.
    Challenge {
        /// The realm's name.
        realm: String,
        /// For the log line.
        reason: String,
    },
    /// A password to check against its hash first: slow by design
    /// (bcrypt takes milliseconds), so the caller runs [`Verify::run`] off
    /// its event loop, then asks [`Access::verified`] for the verdict.
    Verify(Box<Verify>),
    /// 403.
    Forbidden {
        /// For the log line.
        reason: String,
    },
    /// Refused by a limit.
    Limited {
        /// The limit's status (429 by default).
        status: StatusCode,
        /// For `Retry-After`.
        retry_after: Duration,
        /// The log line to write now, if this refusal is the one of its
        /// period that is logged (with how many it stands for).
        log: Option<String>,
    },
}

/// A site's realms and limits, compiled, with the limits' tables and the
/// cache of verified passwords.
#[derive(Debug)]
pub struct Access {
    realms: Vec<Realm>,
    limits: Vec<(LimitRule, RateZone)>,
    verified: VerifiedCache,
    /// This set of realms among all the server has built (a reload makes a
    /// new one): what a connection's [`Proven`] was proven against.
    id: u64,
    /// Keys the hash a connection remembers of its `Authorization` value.
    hasher: std::collections::hash_map::RandomState,
}

/// What one connection remembers of the credentials it proved last, so
/// that a client sending the same `Authorization` value on every request
/// (as browsers do) is not decoded, hashed and looked up again: a keyed
/// hash of the value (never the value), the realm, who it proved, and
/// when. The server keeps one per connection.
#[derive(Debug, Default)]
pub struct Proven(Option<Box<ProvenEntry>>);

#[derive(Debug)]
struct ProvenEntry {
    access: u64,
    realm: usize,
    key: u64,
    identity: Identity,
    at: Instant,
}

/// Where `Access` ids come from.
static ACCESS_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A password check the verdict waits for (see [`AccessVerdict::Verify`]).
pub struct Verify {
    realm: usize,
    user: Arc<str>,
    password: Vec<u8>,
    file: Arc<PasswordFile>,
    file_id: u64,
}

impl std::fmt::Debug for Verify {
    /// The user only: never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verify")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl Verify {
    /// Checks the password against its hash: blocking, milliseconds for
    /// bcrypt. Run it where blocking is allowed.
    pub fn run(&self) -> bool {
        self.file.verify(&self.user, &self.password)
    }
}

/// Verified credentials remembered (per site).
const VERIFIED_ENTRIES: usize = 1024;
/// For how long.
const VERIFIED_FOR: Duration = Duration::from_secs(60);
/// At most one log line per limit per this long.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// A trace of what access decided, for `tern explain`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AccessTrace {
    /// The realm that decided (its origin and name), if any.
    pub realm: Option<String>,
    /// The limits that applied (their origins, with rate and burst).
    pub limits: Vec<String>,
}

impl Access {
    /// Compiles realms and limits; `None` when there are neither.
    pub fn new(realms: Vec<Realm>, limits: Vec<LimitRule>) -> Option<Access> {
        if realms.is_empty() && limits.is_empty() {
            return None;
        }
        Some(Access {
            realms,
            limits: limits
                .into_iter()
                .map(|l| {
                    let zone = RateZone::new(l.limit, l.keys);
                    (l, zone)
                })
                .collect(),
            verified: VerifiedCache::new(VERIFIED_ENTRIES, VERIFIED_FOR),
            id: ACCESS_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            hasher: std::collections::hash_map::RandomState::new(),
        })
    }

    /// The realms, in order.
    pub fn realms(&self) -> &[Realm] {
        &self.realms
    }

    /// Which realm and limits would apply to `req`, without checking or
    /// counting anything.
    pub fn explain(&self, req: &Request<'_>) -> AccessTrace {
        AccessTrace {
            realm: self
                .realms
                .iter()
                .find(|r| r.conditions.hold(req))
                .map(|r| format!("{} (realm \"{}\")", r.origin, r.name)),
            limits: self
                .limits
                .iter()
                .filter(|(l, _)| l.conditions.hold(req))
                .map(|(l, _)| format!("{}: {}, burst {}", l.origin, l.limit.rate, l.limit.burst))
                .collect(),
        }
    }

    /// Decides `req`, whose `Authorization` field is `authorization`, on
    /// a connection that remembers what it proved in `proven`. A password
    /// not verified lately comes back as [`AccessVerdict::Verify`].
    pub fn decide(
        &self,
        req: &Request<'_>,
        authorization: Option<&HeaderValue>,
        now: Instant,
        proven: &mut Proven,
    ) -> AccessVerdict {
        let mut user = None;
        if let Some(index) = self.realms.iter().position(|r| r.conditions.hold(req)) {
            match self.realm(index, req, authorization, now, proven) {
                Ok(u) => user = u,
                Err(refusal) => return refusal,
            }
        }
        self.limits(req, user, now)
    }

    /// The verdict once the password `v` asked for was checked (`ok`).
    pub fn verified(&self, v: &Verify, ok: bool, req: &Request<'_>, now: Instant) -> AccessVerdict {
        let realm = &self.realms[v.realm];
        if !ok {
            return AccessVerdict::Challenge {
                realm: realm.name.clone(),
                reason: format!("{}: wrong password for user {:?}", realm.origin, v.user),
            };
        }
        self.verified.remember(v.file_id, &v.user, &v.password, now);
        let identity = Identity {
            name: v.user.clone(),
            scheme: "Basic",
        };
        match self.admitted(realm, identity) {
            Ok(identity) => self.limits(req, Some(identity), now),
            Err(refusal) => refusal,
        }
    }

    /// The rate limits that apply, for a request granted to `user`.
    fn limits(&self, req: &Request<'_>, user: Option<Identity>, now: Instant) -> AccessVerdict {
        let mut delay = Duration::ZERO;
        for (limit, zone) in &self.limits {
            if !limit.conditions.hold(req) {
                continue;
            }
            let key: Vec<u8> = match (limit.key, req.client, &user) {
                (LimitKey::User, _, Some(u)) => u.name.as_bytes().to_vec(),
                (LimitKey::User, _, None) => continue,
                (LimitKey::Client, Some(ip), _) => match ip.to_canonical() {
                    IpAddr::V4(v4) => v4.octets().to_vec(),
                    IpAddr::V6(v6) => v6.octets().to_vec(),
                },
                // A Unix-socket client has no address: all count as one.
                (LimitKey::Client, None, _) => Vec::new(),
            };
            match zone.check(&key, now) {
                Verdict::Pass => {}
                Verdict::Delay(d) => delay = delay.max(d),
                Verdict::Refuse { retry_after } => {
                    let log = zone.refused(now, LOG_EVERY).map(|n| {
                        format!(
                            "{}: {} refused by the limit ({}, burst {}){}",
                            limit.origin,
                            match (limit.key, req.client, &user) {
                                (LimitKey::User, _, Some(u)) => format!("user {:?}", u.name),
                                (_, Some(ip), _) => format!("client {ip}"),
                                _ => "a Unix-socket client".to_owned(),
                            },
                            limit.limit.rate,
                            limit.limit.burst,
                            if n > 1 {
                                format!("; {n} refusals since the last line")
                            } else {
                                String::new()
                            }
                        )
                    });
                    return AccessVerdict::Limited {
                        status: limit.status,
                        retry_after,
                        log,
                    };
                }
            }
        }
        AccessVerdict::Pass { user, delay }
    }

    /// `identity`, if the realm admits it.
    fn admitted(&self, realm: &Realm, identity: Identity) -> Result<Identity, AccessVerdict> {
        if realm.admits.admits(&identity.name) {
            return Ok(identity);
        }
        // Proven, but not admitted: asking again would not help.
        Err(AccessVerdict::Forbidden {
            reason: format!(
                "{}: user {:?} is not among the users or groups the realm admits",
                realm.origin, identity.name
            ),
        })
    }

    /// The checks of the realm at `index`: who was granted (if a password
    /// or a certificate proved it), or the refusal.
    fn realm(
        &self,
        index: usize,
        req: &Request<'_>,
        authorization: Option<&HeaderValue>,
        now: Instant,
        proven: &mut Proven,
    ) -> Result<Option<Identity>, AccessVerdict> {
        let realm = &self.realms[index];
        let has_address_rules = !realm.allow.is_empty() || !realm.deny.is_empty();
        let address = if has_address_rules {
            Some(address_allowed(realm, req.client))
        } else {
            None
        };
        let forbidden = |reason: String| AccessVerdict::Forbidden {
            reason: format!("{}: {reason}", realm.origin),
        };
        let proves = realm.passwords.is_some() || realm.certificate;
        match (realm.satisfy, &address) {
            (_, Some(Err(reason))) if realm.satisfy == Satisfy::All || !proves => {
                return Err(forbidden(reason.clone()))
            }
            (Satisfy::Any, Some(Ok(()))) => return Ok(None),
            _ if !proves => return Ok(None),
            _ => {}
        }
        // A verified client certificate proves who the client is.
        let identity = match (realm.certificate, req.client_cert) {
            (true, Some(dn)) => Identity {
                name: Arc::from(dn),
                scheme: "SSL",
            },
            _ => self.password(index, authorization, now, proven)?,
        };
        self.admitted(realm, identity).map(Some)
    }

    /// The user HTTP Basic proves to the realm at `index`, or the refusal:
    /// a challenge when the realm has a password file, else 403 (a
    /// certificate was needed).
    fn password(
        &self,
        index: usize,
        authorization: Option<&HeaderValue>,
        now: Instant,
        proven: &mut Proven,
    ) -> Result<Identity, AccessVerdict> {
        let realm = &self.realms[index];
        let Some(pw) = &realm.passwords else {
            return Err(AccessVerdict::Forbidden {
                reason: format!("{}: no verified client certificate", realm.origin),
            });
        };
        // The value this connection proved last: who it proved, at once.
        let key = authorization.map(|a| self.hasher.hash_one(a.as_bytes()));
        if let (Some(e), Some(key)) = (&proven.0, key) {
            let fresh = now.saturating_duration_since(e.at) < VERIFIED_FOR;
            if e.access == self.id && e.realm == index && e.key == key && fresh {
                return Ok(e.identity.clone());
            }
        }
        let challenge = |reason: String| AccessVerdict::Challenge {
            realm: realm.name.clone(),
            reason: format!("{}: {reason}", realm.origin),
        };
        let mut buf = [0u8; MAX_CREDENTIALS];
        let Some((user, password)) = authorization.and_then(|a| basic_credentials(a, &mut buf))
        else {
            return Err(challenge(match authorization {
                None => "no credentials".to_owned(),
                Some(_) => "credentials that are not Basic user:password".to_owned(),
            }));
        };
        // The file's identity in the cache: its place in memory, which is
        // the same for as long as this configuration (and this cache) lives.
        let file_id = Arc::as_ptr(&pw.file) as usize as u64;
        if !self.verified.cached(file_id, user, password, now) {
            return Err(AccessVerdict::Verify(Box::new(Verify {
                realm: index,
                user: Arc::from(user),
                password: password.to_vec(),
                file: pw.file.clone(),
                file_id,
            })));
        }
        let identity = Identity {
            name: Arc::from(user),
            scheme: "Basic",
        };
        if let Some(key) = key {
            proven.0 = Some(Box::new(ProvenEntry {
                access: self.id,
                realm: index,
                key,
                identity: identity.clone(),
                at: now,
            }));
        }
        Ok(identity)
    }
}

fn address_allowed(realm: &Realm, client: Option<IpAddr>) -> Result<(), String> {
    let Some(ip) = client else {
        // A Unix-socket client has no address: only a realm without
        // `allow` admits it.
        return if realm.allow.is_empty() {
            Ok(())
        } else {
            Err("a Unix-socket client is in no allowed network".to_owned())
        };
    };
    if in_networks(&realm.deny, ip) {
        return Err(format!("client {ip} is denied"));
    }
    if !realm.allow.is_empty() && !in_networks(&realm.allow, ip) {
        return Err(format!("client {ip} is not in an allowed network"));
    }
    Ok(())
}

/// The most bytes of decoded Basic credentials read (a user, `:`, and a
/// password of at most `password::MAX_PASSWORD_LEN`); longer ones are
/// refused.
pub const MAX_CREDENTIALS: usize = 1280;

/// The user and password of a `Basic` `Authorization` value (RFC 7617):
/// the scheme case-insensitive, the credentials base64, the user UTF-8
/// and without `:`. Decoded into `buf`, without allocating.
pub fn basic_credentials<'b>(
    v: &HeaderValue,
    buf: &'b mut [u8; MAX_CREDENTIALS],
) -> Option<(&'b str, &'b [u8])> {
    let v = v.as_bytes();
    let (scheme, rest) = v.split_at(v.iter().position(|&b| b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"basic") {
        return None;
    }
    let token = rest.trim_ascii();
    if token.len() > MAX_CREDENTIALS / 3 * 4 {
        return None;
    }
    let n = base64::engine::general_purpose::STANDARD
        .decode_slice(token, buf)
        .ok()?;
    let decoded = &buf[..n];
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = std::str::from_utf8(&decoded[..colon]).ok()?;
    if user.is_empty() || user.bytes().any(|b| b.is_ascii_control()) {
        return None;
    }
    Some((user, &decoded[colon + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A realm over `/p/**` whose file holds `alice` with `line`'s hash.
    fn access(line: &str) -> Access {
        let glob = globset::GlobBuilder::new("/p/**")
            .literal_separator(true)
            .build()
            .unwrap();
        let realm = Realm {
            conditions: Conditions {
                path: Some(crate::cond::PathMatch::Glob(crate::cond::PathGlob::new(
                    glob,
                ))),
                ..Conditions::default()
            },
            name: "r".into(),
            deny: Vec::new(),
            allow: Vec::new(),
            passwords: Some(Passwords {
                file: Arc::new(PasswordFile::parse(line).unwrap()),
                path: "users".into(),
            }),
            certificate: false,
            admits: Admits::default(),
            satisfy: Satisfy::All,
            origin: "t".into(),
        };
        Access::new(vec![realm], Vec::new()).unwrap()
    }

    /// Decides a request for `/p/x` with `authorization`, checking the
    /// password on the spot when asked to (as the server does, elsewhere).
    fn decide(a: &Access, authorization: &str, proven: &mut Proven) -> Option<Arc<str>> {
        let headers = http::HeaderMap::new();
        let req = Request {
            method: &http::Method::GET,
            path: "/p/x",
            query: None,
            host: None,
            headers: &headers,
            client: None,
            secure: false,
            client_cert: None,
        };
        let value = HeaderValue::from_str(authorization).unwrap();
        let now = Instant::now();
        let verdict = match a.decide(&req, Some(&value), now, proven) {
            AccessVerdict::Verify(v) => {
                let ok = v.run();
                a.verified(&v, ok, &req, now)
            }
            v => v,
        };
        match verdict {
            AccessVerdict::Pass { user, .. } => Some(user.expect("a user").name),
            _ => None,
        }
    }

    // `{SHA}` of "one" and of "two": quick to check.
    const ONE: &str = "alice:{SHA}/gW83NxJKAEngaXxoqd8u1OY4QY=";
    const TWO: &str = "alice:{SHA}rXguzax3D8brmmLkT5CHP7l/sms=";
    /// `alice:one` and `alice:two`.
    const ALICE_ONE: &str = "Basic YWxpY2U6b25l";
    const ALICE_TWO: &str = "Basic YWxpY2U6dHdv";

    #[test]
    fn a_connection_remembers_only_what_it_proved_against_these_realms() {
        let a = access(ONE);
        let mut proven = Proven::default();
        // Checked (on the blocking pool, in the server), then taken from
        // the cache of verified credentials, and remembered.
        assert_eq!(decide(&a, ALICE_ONE, &mut proven).as_deref(), Some("alice"));
        assert!(proven.0.is_none());
        assert_eq!(decide(&a, ALICE_ONE, &mut proven).as_deref(), Some("alice"));
        assert!(proven.0.is_some(), "remembered after a success");
        // Again: the memo answers; another value is checked, and refused.
        assert_eq!(decide(&a, ALICE_ONE, &mut proven).as_deref(), Some("alice"));
        assert_eq!(decide(&a, ALICE_TWO, &mut proven), None);
        // A new configuration (the password changed): what the connection
        // proved before counts for nothing.
        let b = access(TWO);
        assert_eq!(decide(&b, ALICE_ONE, &mut proven), None);
        assert_eq!(decide(&b, ALICE_TWO, &mut proven).as_deref(), Some("alice"));
    }
}
