//! HTTP Basic authentication against Apache htpasswd files, for the
//! authorization phase: the password file ([`PasswordFile`]), the group
//! file ([`GroupFile`]) and a cache of credentials verified recently
//! ([`VerifiedCache`]).
//!
//! Pure: the caller reads the files and passes their text, and passes the
//! [`Instant`] of each check.
//!
//! # Schemes
//!
//! | prefix | scheme | checked with |
//! |---|---|---|
//! | `$2y$`, `$2b$`, `$2a$` | bcrypt (`htpasswd -B`) | the `bcrypt` crate |
//! | `$apr1$` | Apache's MD5 (`htpasswd -m`, its default) | here, by hand |
//! | `{SHA}` | base64 of SHA-1 (`htpasswd -s`) | `sha1` |
//! | `{SSHA}` | base64 of SHA-1(password ‖ salt) ‖ salt | `sha1` |
//! | `$5$`, `$6$` | SHA-256 and SHA-512 crypt (`htpasswd -2`, `-5`) | the `sha-crypt` crate |
//!
//! Anything else (plain text, DES crypt, `$1$` md5-crypt, argon2...) is
//! refused when the file is read, with a message that names the user and
//! what the hash looks like, never the hash itself. Every hash's shape is
//! checked then too, so that a check never meets a malformed one.
//!
//! # Timing
//!
//! The final digests are compared in constant time. A user the file does
//! not have costs about as much as a wrong password: the password is
//! checked against a fixed dummy hash of the file's most common scheme
//! (with the most common cost or rounds), and the answer is no.
//!
//! Passwords longer than [`MAX_PASSWORD_LEN`] bytes are refused without
//! any hashing: SHA-crypt's work grows with the password's length (and a
//! part of it with the square of it), so a long password in a request
//! would cost the server far more than it costs the client. `htpasswd`
//! itself refuses passwords longer than 256 bytes.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use sha1::Sha1;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The longest password checked, in bytes; longer ones are wrong without
/// any hashing (see the module's documentation).
pub const MAX_PASSWORD_LEN: usize = 1024;

/// A hash scheme tern can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `$2y$`, `$2b$`, `$2a$`: bcrypt.
    Bcrypt,
    /// `$apr1$`: Apache's MD5 (md5-crypt with its own magic).
    Apr1,
    /// `{SHA}`: base64 of an unsalted SHA-1.
    Sha1,
    /// `{SSHA}`: base64 of SHA-1(password ‖ salt) ‖ salt.
    Ssha,
    /// `$5$`: SHA-256 crypt.
    Sha256Crypt,
    /// `$6$`: SHA-512 crypt.
    Sha512Crypt,
}

impl Scheme {
    /// Every scheme, in declaration order (the order of [`PasswordFile::schemes`]).
    const ALL: [Scheme; 6] = [
        Scheme::Bcrypt,
        Scheme::Apr1,
        Scheme::Sha1,
        Scheme::Ssha,
        Scheme::Sha256Crypt,
        Scheme::Sha512Crypt,
    ];

    /// The scheme's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Bcrypt => "bcrypt",
            Scheme::Apr1 => "apr1-md5",
            Scheme::Sha1 => "{SHA}",
            Scheme::Ssha => "{SSHA}",
            Scheme::Sha256Crypt => "sha256-crypt",
            Scheme::Sha512Crypt => "sha512-crypt",
        }
    }
}

/// Which scheme a stored hash is in: `$2y$`, `$2b$`, `$2a$` bcrypt;
/// `$apr1$`; `{SHA}` base64 of SHA-1; `{SSHA}` base64 of
/// SHA-1(password‖salt)‖salt; `$5$`, `$6$` SHA-crypt (with optional
/// `rounds=N$`). `None` for anything else (plain text, DES crypt, `$1$`
/// md5-crypt, argon2...).
///
/// This looks at the prefix only; [`PasswordFile::parse`] also checks the
/// rest of the hash's shape.
pub fn classify(hash: &str) -> Option<Scheme> {
    const PREFIXES: [(&str, Scheme); 8] = [
        ("$2y$", Scheme::Bcrypt),
        ("$2b$", Scheme::Bcrypt),
        ("$2a$", Scheme::Bcrypt),
        ("$apr1$", Scheme::Apr1),
        ("{SHA}", Scheme::Sha1),
        ("{SSHA}", Scheme::Ssha),
        ("$5$", Scheme::Sha256Crypt),
        ("$6$", Scheme::Sha512Crypt),
    ];
    PREFIXES
        .iter()
        .find(|(prefix, _)| hash.starts_with(prefix))
        .map(|&(_, scheme)| scheme)
}

/// Why a password file was refused: its line (1-based) and the reason.
/// The reason never contains the hash itself (secrets are never shown),
/// but names the user and, for an unknown format, what it looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct ParseError {
    /// The line, counted from 1.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// The alphabet of crypt(3)'s base64 (apr1, SHA-crypt, DES).
const CRYPT_ALPHABET: &[u8; 64] =
    b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Standard base64 for `{SHA}` and `{SSHA}`, with or without padding.
const LDAP_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A stored hash, split into what its check needs.
#[derive(Clone)]
enum Hash {
    /// The whole hash, for `bcrypt::verify`, and its cost.
    Bcrypt { full: String, cost: u32 },
    /// The salt (1 to 8 bytes) and the 22 encoded digest characters.
    Apr1 { salt: String, digest: String },
    /// The SHA-1 of the password.
    Sha1 { digest: [u8; 20] },
    /// The SHA-1 of password ‖ salt, and the salt.
    Ssha { digest: [u8; 20], salt: Vec<u8> },
    /// SHA-256 crypt: rounds, salt (1 to 16 bytes), 43 encoded digest characters.
    Sha256Crypt {
        rounds: usize,
        salt: String,
        digest: String,
    },
    /// SHA-512 crypt: rounds, salt (1 to 16 bytes), 86 encoded digest characters.
    Sha512Crypt {
        rounds: usize,
        salt: String,
        digest: String,
    },
}

impl Hash {
    fn scheme(&self) -> Scheme {
        match self {
            Hash::Bcrypt { .. } => Scheme::Bcrypt,
            Hash::Apr1 { .. } => Scheme::Apr1,
            Hash::Sha1 { .. } => Scheme::Sha1,
            Hash::Ssha { .. } => Scheme::Ssha,
            Hash::Sha256Crypt { .. } => Scheme::Sha256Crypt,
            Hash::Sha512Crypt { .. } => Scheme::Sha512Crypt,
        }
    }

    /// The scheme and its work factor (bcrypt's cost, SHA-crypt's rounds;
    /// 0 for the others), which decide how long a check takes.
    fn work(&self) -> (Scheme, usize) {
        let factor = match self {
            Hash::Bcrypt { cost, .. } => *cost as usize,
            Hash::Sha256Crypt { rounds, .. } | Hash::Sha512Crypt { rounds, .. } => *rounds,
            Hash::Apr1 { .. } | Hash::Sha1 { .. } | Hash::Ssha { .. } => 0,
        };
        (self.scheme(), factor)
    }

    /// Whether `password` hashes to this, comparing the final digests in
    /// constant time.
    fn verify(&self, password: &[u8]) -> bool {
        match self {
            // The shape was checked when the file was read, so an error
            // here cannot happen; it would be a refusal anyway.
            Hash::Bcrypt { full, .. } => bcrypt::verify(password, full).unwrap_or(false),
            Hash::Apr1 { salt, digest } => apr1_digest(password, salt.as_bytes())
                .as_slice()
                .ct_eq(digest.as_bytes())
                .into(),
            Hash::Sha1 { digest } => Sha1::digest(password).as_slice().ct_eq(digest).into(),
            Hash::Ssha { digest, salt } => {
                let mut h = Sha1::new();
                h.update(password);
                h.update(salt);
                h.finalize().as_slice().ct_eq(digest).into()
            }
            // `sha256_crypt_b64` rather than `sha256_check`: the latter takes
            // the password as `&str` (Basic credentials are bytes, often
            // Latin-1) and unwraps its decoding of the stored digest. The
            // computed digest is encoded instead and compared with the stored
            // characters, which are canonical (checked when the file was read).
            Hash::Sha256Crypt {
                rounds,
                salt,
                digest,
            } => sha_crypt::Sha256Params::new(*rounds)
                .and_then(|p| sha_crypt::sha256_crypt_b64(password, salt.as_bytes(), &p))
                .is_ok_and(|computed| computed.as_bytes().ct_eq(digest.as_bytes()).into()),
            Hash::Sha512Crypt {
                rounds,
                salt,
                digest,
            } => sha_crypt::Sha512Params::new(*rounds)
                .and_then(|p| sha_crypt::sha512_crypt_b64(password, salt.as_bytes(), &p))
                .is_ok_and(|computed| computed.as_bytes().ct_eq(digest.as_bytes()).into()),
        }
    }

    /// A fixed hash of the same scheme and work factor, for the checks of
    /// users a file does not have. Its password is unknown (a random one,
    /// thrown away), and the answer is ignored anyway.
    fn dummy((scheme, factor): (Scheme, usize)) -> Option<Hash> {
        let text = match scheme {
            Scheme::Bcrypt => {
                format!("$2y${factor:02}$rbrfELmY.FRnYjrspHdTQ.jUt7x2NcM3nL1Q20Tc6vQn1Mz1eIx9i")
            }
            Scheme::Apr1 => "$apr1$R9o3lf6B$VGX2MbtTU6S09xt.JNWMs1".to_owned(),
            Scheme::Sha1 => "{SHA}AAAAAAAAAAAAAAAAAAAAAAAAAAA=".to_owned(),
            Scheme::Ssha => "{SSHA}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==".to_owned(),
            Scheme::Sha256Crypt => format!(
                "$5$rounds={factor}$mWKjS10u8Ih8Q9gq$J/.f1N/5sv2kKBvFQqIRlMQlSyya7Ppne7L6StLYYE8"
            ),
            Scheme::Sha512Crypt => format!(
                "$6$rounds={factor}$uiKRzK63If/Grxy8$xF2yk0jHXZZIhGWj.BIGDUhphk0FQup3VCP5Pn6veDxzFQuzbCdjWCiSVSQuZtNV//yJQhYgTr3ajvnuyGHni/"
            ),
        };
        parse_hash(&text).ok()
    }
}

/// Checks a stored hash's shape and splits it. The error says what is
/// wrong without quoting the hash.
fn parse_hash(hash: &str) -> Result<Hash, String> {
    let Some(scheme) = classify(hash) else {
        return Err(format!(
            "a hash tern cannot check ({}); use bcrypt (htpasswd -B)",
            describe_unknown(hash)
        ));
    };
    let malformed = |what: &str| format!("a malformed {} hash ({what})", scheme.name());
    match scheme {
        Scheme::Bcrypt => parse_bcrypt(hash).map_err(|w| malformed(&w)),
        Scheme::Apr1 => parse_apr1(&hash["$apr1$".len()..]).map_err(|w| malformed(&w)),
        Scheme::Sha1 => match LDAP_BASE64.decode(&hash["{SHA}".len()..]) {
            Ok(bytes) => <[u8; 20]>::try_from(bytes.as_slice())
                .map(|digest| Hash::Sha1 { digest })
                .map_err(|_| malformed(&format!("{} bytes, not 20", bytes.len()))),
            Err(_) => Err(malformed("not base64")),
        },
        Scheme::Ssha => match LDAP_BASE64.decode(&hash["{SSHA}".len()..]) {
            Ok(bytes) if bytes.len() > 20 => {
                let (digest, salt) = bytes.split_at(20);
                Ok(Hash::Ssha {
                    digest: digest.try_into().map_err(|_| malformed("no digest"))?,
                    salt: salt.to_vec(),
                })
            }
            Ok(bytes) => Err(malformed(&format!(
                "{} bytes, not a 20-byte digest and a salt",
                bytes.len()
            ))),
            Err(_) => Err(malformed("not base64")),
        },
        Scheme::Sha256Crypt => parse_sha_crypt(&hash["$5$".len()..], 43, 16)
            .map(|(rounds, salt, digest)| Hash::Sha256Crypt {
                rounds,
                salt,
                digest,
            })
            .map_err(|w| malformed(&w)),
        Scheme::Sha512Crypt => parse_sha_crypt(&hash["$6$".len()..], 86, 4)
            .map(|(rounds, salt, digest)| Hash::Sha512Crypt {
                rounds,
                salt,
                digest,
            })
            .map_err(|w| malformed(&w)),
    }
}

/// `$2y$NN$` + 22 characters of salt + 31 of digest, in bcrypt's base64,
/// decoded as `bcrypt::verify` will decode them.
fn parse_bcrypt(hash: &str) -> Result<Hash, String> {
    // classify() saw "$2?$".
    let rest = &hash[4..];
    let Some((cost, tail)) = rest.split_once('$') else {
        return Err("no cost".to_owned());
    };
    if cost.len() != 2 || !cost.bytes().all(|b| b.is_ascii_digit()) {
        return Err("the cost is not two digits".to_owned());
    }
    let cost: u32 = cost.parse().map_err(|_| "the cost is not a number")?;
    if !(4..=31).contains(&cost) {
        return Err(format!("cost {cost}, not between 4 and 31"));
    }
    if tail.len() != 53 || !tail.is_ascii() {
        return Err("the salt and digest are not 53 characters".to_owned());
    }
    let (salt, digest) = tail.split_at(22);
    match bcrypt::BASE_64.decode(salt) {
        Ok(s) if s.len() == 16 => {}
        _ => return Err("the salt does not decode".to_owned()),
    }
    match bcrypt::BASE_64.decode(digest) {
        Ok(d) if d.len() == 23 => {}
        _ => return Err("the digest does not decode".to_owned()),
    }
    Ok(Hash::Bcrypt {
        full: hash.to_owned(),
        cost,
    })
}

/// After `$apr1$`: a salt of 1 to 8 characters, `$`, 22 digest characters.
fn parse_apr1(rest: &str) -> Result<Hash, String> {
    let Some((salt, digest)) = rest.split_once('$') else {
        return Err("no '$' after the salt".to_owned());
    };
    if salt.is_empty() {
        return Err("no salt".to_owned());
    }
    if salt.len() > 8 {
        return Err("a salt longer than 8 characters".to_owned());
    }
    check_crypt_digest(digest, 22, 4)?;
    Ok(Hash::Apr1 {
        salt: salt.to_owned(),
        digest: digest.to_owned(),
    })
}

/// After `$5$` or `$6$`: optional `rounds=N$`, a salt of 1 to 16
/// characters, `$`, the digest. Returns rounds, salt and digest.
fn parse_sha_crypt(
    rest: &str,
    digest_len: usize,
    last_limit: u8,
) -> Result<(usize, String, String), String> {
    let mut fields = rest.split('$');
    let mut salt = fields.next().unwrap_or_default();
    let mut rounds = sha_crypt::ROUNDS_DEFAULT;
    if let Some(n) = salt.strip_prefix("rounds=") {
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err("rounds= is not a number".to_owned());
        }
        rounds = match n.parse::<usize>() {
            Ok(r) if (sha_crypt::ROUNDS_MIN..=sha_crypt::ROUNDS_MAX).contains(&r) => r,
            _ => {
                return Err(format!(
                    "rounds={n}, not between {} and {}",
                    sha_crypt::ROUNDS_MIN,
                    sha_crypt::ROUNDS_MAX
                ))
            }
        };
        salt = fields.next().unwrap_or_default();
    }
    if salt.is_empty() {
        return Err("no salt".to_owned());
    }
    if salt.len() > 16 {
        return Err("a salt longer than 16 characters".to_owned());
    }
    let Some(digest) = fields.next() else {
        return Err("no digest after the salt".to_owned());
    };
    if fields.next().is_some() {
        return Err("more '$' fields than rounds, salt and digest".to_owned());
    }
    check_crypt_digest(digest, digest_len, last_limit)?;
    Ok((rounds, salt.to_owned(), digest.to_owned()))
}

/// A digest in crypt's base64: `len` characters of its alphabet, the last
/// one below `last_limit` (it carries fewer than 6 bits; the others are 0
/// in any digest crypt wrote, so another value could never match).
fn check_crypt_digest(digest: &str, len: usize, last_limit: u8) -> Result<(), String> {
    let values: Option<Vec<u8>> = digest.bytes().map(crypt_value).collect();
    match values {
        Some(v) if v.len() == len => {
            if v.last().is_some_and(|&last| last < last_limit) {
                Ok(())
            } else {
                Err("the digest's last character is out of range".to_owned())
            }
        }
        _ => Err(format!("the digest is not {len} characters of ./0-9A-Za-z")),
    }
}

/// The value of a character of crypt's base64.
fn crypt_value(c: u8) -> Option<u8> {
    CRYPT_ALPHABET
        .iter()
        .position(|&a| a == c)
        .and_then(|p| u8::try_from(p).ok())
}

/// What an uncheckable hash looks like, without quoting it.
fn describe_unknown(hash: &str) -> &'static str {
    const LDAP_LABELS: [(&str, &str); 12] = [
        ("{PLAIN}", "a {PLAIN} password"),
        ("{CLEARTEXT}", "a {CLEARTEXT} password"),
        ("{CRYPT}", "an LDAP {CRYPT} hash"),
        ("{MD5}", "an LDAP {MD5} hash"),
        ("{SMD5}", "an LDAP {SMD5} hash"),
        ("{SHA256}", "an LDAP {SHA256} hash"),
        ("{SSHA256}", "an LDAP {SSHA256} hash"),
        ("{SHA512}", "an LDAP {SHA512} hash"),
        ("{SSHA512}", "an LDAP {SSHA512} hash"),
        ("{ARGON2}", "an LDAP {ARGON2} hash"),
        ("{BCRYPT}", "an LDAP {BCRYPT} hash"),
        ("{PBKDF2}", "an LDAP {PBKDF2} hash"),
    ];
    const CRYPT_IDS: [(&str, &str); 9] = [
        ("1", "md5-crypt ($1$)"),
        (
            "2x",
            "bcrypt $2x$, the variant for hashes from a flawed implementation",
        ),
        ("2", "bcrypt $2$, the original variant"),
        ("y", "yescrypt ($y$)"),
        ("gy", "gost-yescrypt ($gy$)"),
        ("7", "scrypt ($7$)"),
        ("sha1", "sha1-crypt ($sha1$)"),
        ("md5", "Sun md5-crypt ($md5$)"),
        ("3", "NT hash ($3$)"),
    ];
    if hash.is_empty() {
        return "an empty hash";
    }
    if let Some(rest) = hash.strip_prefix('$') {
        let id = rest.split(['$', ',']).next().unwrap_or_default();
        if id.starts_with("argon2") {
            return "argon2";
        }
        if id.starts_with("pbkdf2") {
            return "pbkdf2";
        }
        if let Some((_, what)) = CRYPT_IDS.iter().find(|(i, _)| *i == id) {
            return what;
        }
        return "an unknown '$'-prefixed crypt scheme, or plain text?";
    }
    if hash.starts_with('{') {
        if let Some((_, what)) = LDAP_LABELS.iter().find(|(l, _)| hash.starts_with(l)) {
            return what;
        }
        return "an unknown '{...}' scheme, or plain text?";
    }
    let all_crypt = |s: &str| s.bytes().all(|b| crypt_value(b).is_some());
    if hash.len() == 13 && all_crypt(hash) {
        return "DES crypt or plain text?";
    }
    if hash.len() == 20 && hash.starts_with('_') && all_crypt(&hash[1..]) {
        return "BSDi extended DES crypt or plain text?";
    }
    "plain text?"
}

/// Apache's MD5 (`$apr1$`): md5-crypt with the magic `$apr1$`, as its 22
/// encoded digest characters.
fn apr1_digest(password: &[u8], salt: &[u8]) -> [u8; 22] {
    use md5::Md5;
    const MAGIC: &[u8] = b"$apr1$";

    // The alternate sum: password, salt, password.
    let mut alt = Md5::new();
    alt.update(password);
    alt.update(salt);
    alt.update(password);
    let alt = alt.finalize();

    let mut ctx = Md5::new();
    ctx.update(password);
    ctx.update(MAGIC);
    ctx.update(salt);
    // As many bytes of the alternate sum as the password is long.
    for chunk in password.chunks(16) {
        ctx.update(&alt[..chunk.len()]);
    }
    // For each bit of the length, low to high: a zero byte for a 1, the
    // password's first byte for a 0.
    let mut n = password.len();
    while n > 0 {
        if n & 1 == 1 {
            ctx.update([0u8]);
        } else {
            ctx.update(&password[..1]);
        }
        n >>= 1;
    }
    let mut sum: [u8; 16] = ctx.finalize().into();

    // 1000 rounds to slow guessing down.
    for i in 0..1000 {
        let mut round = Md5::new();
        if i % 2 == 1 {
            round.update(password);
        } else {
            round.update(sum);
        }
        if i % 3 != 0 {
            round.update(salt);
        }
        if i % 7 != 0 {
            round.update(password);
        }
        if i % 2 == 1 {
            round.update(sum);
        } else {
            round.update(password);
        }
        sum = round.finalize().into();
    }

    // The final encoding: bytes taken three at a time in md5-crypt's
    // order, each group written as four characters, low bits first; the
    // last byte alone as two.
    let mut out = [0u8; 22];
    let mut pos = 0;
    let mut put = |mut v: u32, chars: usize| {
        for _ in 0..chars {
            out[pos] = CRYPT_ALPHABET[(v & 0x3f) as usize];
            v >>= 6;
            pos += 1;
        }
    };
    for (a, b, c) in [(0, 6, 12), (1, 7, 13), (2, 8, 14), (3, 9, 15), (4, 10, 5)] {
        put(
            (u32::from(sum[a]) << 16) | (u32::from(sum[b]) << 8) | u32::from(sum[c]),
            4,
        );
    }
    put(u32::from(sum[11]), 2);
    out
}

/// A file's lines that matter: (line number from 1, line trimmed of
/// surrounding whitespace), without blank lines and `#` comments. A
/// leading byte order mark is skipped; `\r\n` line ends are fine.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim_matches(|c: char| c.is_ascii_whitespace())))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
}

/// An htpasswd file: `user:hash` lines.
///
/// Blank lines and lines starting with `#` are ignored, a trailing `\r`
/// (and surrounding whitespace) is tolerated. A line without `:`, an empty
/// user, a duplicate user, or a hash [`classify`] refuses or whose shape is
/// wrong is an error. `Default` is the empty file (no user passes).
#[derive(Clone, Default)]
pub struct PasswordFile {
    users: HashMap<String, Hash>,
    /// What an unknown user's password is checked against.
    dummy: Option<Hash>,
}

impl fmt::Debug for PasswordFile {
    /// The user count only: never the hashes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PasswordFile")
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

impl PasswordFile {
    /// Reads an htpasswd file's text.
    pub fn parse(text: &str) -> Result<PasswordFile, ParseError> {
        let mut users: HashMap<String, Hash> = HashMap::new();
        let mut first_line: HashMap<String, usize> = HashMap::new();
        for (line, content) in content_lines(text) {
            let err = |reason: String| ParseError { line, reason };
            // Never quote the line: it may be a bare password or hash.
            let Some((user, hash)) = content.split_once(':') else {
                return Err(err(
                    "no ':' between a user name and a hash (user:hash)".to_owned()
                ));
            };
            if user.is_empty() {
                return Err(err("an empty user name".to_owned()));
            }
            if let Some(first) = first_line.get(user) {
                return Err(err(format!(
                    "user {user} appears twice (first on line {first})"
                )));
            }
            let hash = hash.trim_matches(|c: char| c.is_ascii_whitespace());
            let parsed =
                parse_hash(hash).map_err(|problem| err(format!("user {user}: {problem}")))?;
            first_line.insert(user.to_owned(), line);
            users.insert(user.to_owned(), parsed);
        }
        // The most common scheme and work factor; on a tie, the costlier.
        let mut counts: Vec<((Scheme, usize), usize)> = Vec::new();
        for work in users.values().map(Hash::work) {
            match counts.iter_mut().find(|(w, _)| *w == work) {
                Some((_, n)) => *n += 1,
                None => counts.push((work, 1)),
            }
        }
        let dummy = counts
            .into_iter()
            .max_by_key(|&((scheme, factor), count)| (count, factor, scheme_rank(scheme)))
            .and_then(|(work, _)| Hash::dummy(work));
        Ok(PasswordFile { users, dummy })
    }

    /// Whether the file has `user`.
    pub fn contains(&self, user: &str) -> bool {
        self.users.contains_key(user)
    }

    /// How many users the file has.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Whether the file has no users.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// The schemes in use with their user counts, in [`Scheme`]'s order
    /// (for a warning on weak ones: `{SHA}`, `{SSHA}`, apr1).
    pub fn schemes(&self) -> Vec<(Scheme, usize)> {
        Scheme::ALL
            .iter()
            .map(|&s| (s, self.users.values().filter(|h| h.scheme() == s).count()))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// Checks `password` for `user`, comparing the final digests in
    /// constant time. An unknown user is refused after as much work as a
    /// wrong password (a check against a dummy hash of the file's most
    /// common scheme), so that timing does not tell unknown users from
    /// wrong passwords. A password longer than [`MAX_PASSWORD_LEN`] is
    /// refused at once, whoever the user.
    pub fn verify(&self, user: &str, password: &[u8]) -> bool {
        if password.len() > MAX_PASSWORD_LEN {
            return false;
        }
        match self.users.get(user) {
            Some(hash) => hash.verify(password),
            None => {
                if let Some(dummy) = &self.dummy {
                    std::hint::black_box(dummy.verify(std::hint::black_box(password)));
                }
                false
            }
        }
    }
}

/// A tie-break between schemes, for a deterministic dummy.
fn scheme_rank(scheme: Scheme) -> usize {
    Scheme::ALL.iter().position(|&s| s == scheme).unwrap_or(0)
}

/// Apache's AuthGroupFile: lines `group: user1 user2 ...`.
///
/// A group may appear on several lines; users are separated by
/// whitespace. Blank lines and `#` comments are ignored, `\r` tolerated.
/// A line without `:` or with an empty group name is an error.
#[derive(Debug, Clone, Default)]
pub struct GroupFile {
    groups: HashMap<String, HashSet<String>>,
}

impl GroupFile {
    /// Reads a group file's text.
    pub fn parse(text: &str) -> Result<GroupFile, ParseError> {
        let mut groups: HashMap<String, HashSet<String>> = HashMap::new();
        for (line, content) in content_lines(text) {
            let Some((group, members)) = content.split_once(':') else {
                return Err(ParseError {
                    line,
                    reason: "no ':' after the group name (group: user1 user2)".to_owned(),
                });
            };
            let group = group.trim_matches(|c: char| c.is_ascii_whitespace());
            if group.is_empty() {
                return Err(ParseError {
                    line,
                    reason: "an empty group name".to_owned(),
                });
            }
            groups
                .entry(group.to_owned())
                .or_default()
                .extend(members.split_ascii_whitespace().map(str::to_owned));
        }
        Ok(GroupFile { groups })
    }

    /// Whether `user` is in `group`.
    pub fn is_member(&self, user: &str, group: &str) -> bool {
        self.groups.get(group).is_some_and(|m| m.contains(user))
    }
}

/// Credentials verified recently, so that a bcrypt hash (milliseconds of
/// CPU) is not checked on every request of a browser that sends the same
/// `Authorization` header each time.
///
/// Keyed by a SHA-256 of (a random per-cache key, the caller's file
/// identity, user, password), never the password itself. At most
/// `capacity` entries; when full, the oldest is evicted. An entry is good
/// for `ttl` after its successful check. Failed checks are not cached.
pub struct VerifiedCache {
    /// Random, so that the keys are no help in guessing passwords.
    secret: [u8; 16],
    capacity: usize,
    ttl: Duration,
    state: Mutex<CacheState>,
}

type CacheKey = [u8; 32];

#[derive(Default)]
struct CacheState {
    /// Each key's successful check: when, and its insertion number.
    entries: HashMap<CacheKey, (Instant, u64)>,
    /// Keys in insertion order, with their insertion numbers; an item whose
    /// number is not its key's current one is stale (the key was removed
    /// or inserted again since) and skipped.
    order: VecDeque<(CacheKey, u64)>,
    next: u64,
}

impl fmt::Debug for VerifiedCache {
    /// Not the secret key nor the entries.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedCache")
            .field("capacity", &self.capacity)
            .field("ttl", &self.ttl)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl VerifiedCache {
    /// A cache of at most `capacity` successes, each good for `ttl` (a
    /// capacity or ttl of zero caches nothing).
    pub fn new(capacity: usize, ttl: Duration) -> Self {
        // Two hashes under a randomly keyed hasher: 16 random bytes.
        let random = RandomState::new();
        let mut secret = [0u8; 16];
        secret[..8].copy_from_slice(&random.hash_one(0x7465_726e_u64).to_le_bytes());
        secret[8..].copy_from_slice(&random.hash_one(0x0063_6163_6865_u64).to_le_bytes());
        VerifiedCache {
            secret,
            capacity,
            ttl,
            state: Mutex::new(CacheState::default()),
        }
    }

    /// Whether `password` is `user`'s in `file`: a cached success younger
    /// than ttl, else `file.verify` (a success is then cached). `file_id`
    /// must change whenever the file's contents may have.
    pub fn check(
        &self,
        file_id: u64,
        file: &PasswordFile,
        user: &str,
        password: &[u8],
        now: Instant,
    ) -> bool {
        if self.cached(file_id, user, password, now) {
            return true;
        }
        // The check itself, outside the lock.
        let ok = file.verify(user, password);
        if ok {
            self.remember(file_id, user, password, now);
        }
        ok
    }

    /// Whether `password` is `user`'s in the file `file_id` by a success
    /// younger than ttl, without checking the hash (the cheap half of
    /// [`VerifiedCache::check`], for a caller that checks elsewhere).
    pub fn cached(&self, file_id: u64, user: &str, password: &[u8], now: Instant) -> bool {
        if password.len() > MAX_PASSWORD_LEN {
            return false;
        }
        let key = self.key(file_id, user, password);
        let mut state = self.lock();
        match state.entries.get(&key) {
            Some(&(at, _)) if now.saturating_duration_since(at) < self.ttl => true,
            Some(_) => {
                state.entries.remove(&key);
                false
            }
            None => false,
        }
    }

    /// Remembers a success checked elsewhere (the other half).
    pub fn remember(&self, file_id: u64, user: &str, password: &[u8], now: Instant) {
        if password.len() <= MAX_PASSWORD_LEN {
            let key = self.key(file_id, user, password);
            self.insert(key, now);
        }
    }

    /// How many entries the cache holds (expired ones included until they
    /// are evicted or looked up).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the cache holds no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, CacheState> {
        // The state stays consistent whatever panicked: stale order items
        // are skipped.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn key(&self, file_id: u64, user: &str, password: &[u8]) -> CacheKey {
        let mut h = Sha256::new();
        h.update(self.secret);
        h.update(file_id.to_le_bytes());
        h.update((user.len() as u64).to_le_bytes());
        h.update(user.as_bytes());
        h.update(password);
        h.finalize().into()
    }

    fn insert(&self, key: CacheKey, now: Instant) {
        if self.capacity == 0 || self.ttl.is_zero() {
            return;
        }
        let mut guard = self.lock();
        let state = &mut *guard;
        let number = state.next;
        state.next += 1;
        state.entries.insert(key, (now, number));
        state.order.push_back((key, number));
        while state.entries.len() > self.capacity {
            let Some((old, n)) = state.order.pop_front() else {
                break;
            };
            if state
                .entries
                .get(&old)
                .is_some_and(|&(_, current)| current == n)
            {
                state.entries.remove(&old);
            }
        }
        // Drop stale items now and then, so `order` stays within twice the
        // capacity (amortized: this runs once per `capacity` insertions).
        if state.order.len() > self.capacity.saturating_mul(2) {
            let entries = &state.entries;
            state
                .order
                .retain(|(k, n)| entries.get(k).is_some_and(|&(_, current)| current == *n));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Generated on this machine with apache2-utils' htpasswd and OpenSSL:
    //   htpasswd -nbm alice 'correct horse'
    //   openssl passwd -apr1 -salt ab password  (and the others below)
    const APR1_ALICE: &str = "$apr1$F/KICCsW$Hokypb0UNk1vvRF0WxlJZ.";
    /// (salt, password, hash) from `openssl passwd -apr1 -salt SALT PASSWORD`.
    const APR1_OPENSSL: [(&str, &str, &str); 5] = [
        ("ab", "password", "$apr1$ab$vZXhMKiOqO1yMl8FLQFrs0"),
        (
            "12345678",
            "a much longer password, over thirty-two bytes long",
            "$apr1$12345678$7zNachAn.8ac.0rcGrO7R.",
        ),
        ("xyz", "", "$apr1$xyz$Pix4eE3fQHxJjb6LqtyMK1"),
        (
            "sixteen",
            "0123456789abcdef",
            "$apr1$sixteen$LegbW29cyEwWE8RinT/ZA.",
        ),
        (
            "seventee",
            "0123456789abcdefg",
            "$apr1$seventee$FTx90zifPopVarJKxRkRu1",
        ),
    ];
    // htpasswd -nbB -C 4 bob 'correct horse'; -C 5 bob2 hunter2
    const BCRYPT_BOB: &str = "$2y$04$XD3MY4DglMWvEgR6CBb0muNdPdjHDViXt14Yy9aoOCulj.evs/CoC";
    const BCRYPT_BOB2: &str = "$2y$05$UMPnI6emruiV9DyzBHx9jeEy/DqdcPvZNaQwMaz8IqdqwN.Ra4EqK";
    // htpasswd -nbs carol 'correct horse'
    const SHA_CAROL: &str = "{SHA}L55TUjtiq8FBorTWAZ0jy6g129A=";
    // python3: base64(sha1(b"correct horse" + salt) + salt), salt a1b2c3d4e5f60718
    const SSHA_CORRECT: &str = "{SSHA}PVLZMgHNEdSGCd5PT+tIWHSUyNuhssPU5fYHGA==";
    // htpasswd -nb2 dave 'correct horse'; -nb2 -r 10000
    const SHA256_DAVE: &str = "$5$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2";
    const SHA256_DAVE_10000: &str =
        "$5$rounds=10000$9fkv2dTzsOwzfO7D$O6nx921g8B5R82t3saxBLHshmF90R4gP1UaOAqxgRGA";
    // htpasswd -nb5 erin 'correct horse'; -nb5 -r 10000
    const SHA512_ERIN: &str = "$6$HoI/Brwk7qVzoGl7$ESnQVvxE3czxAG.rkQuLdh.dht56iknOPP/dhtWV6PfEf3mhZbc7W6IXSD6b1/Q4kOYi8gOpebnQN.dXgRWyk.";
    const SHA512_ERIN_10000: &str = "$6$rounds=10000$BupAq5W0GSOJt2Eo$duu.6QW7WVs1QE0SLVwBPYYiv1idSPxTIbWr9tNUQexDA3m9qvTgAqSlV.S.m0BDgW4sogCHUgyaZUdWOuBfP.";
    // openssl passwd -6 -salt 'rounds=1000$abc' x (the fewest rounds allowed)
    const SHA512_X_1000: &str = "$6$rounds=1000$abc$zaWpAwySRl8PX4W2aEMJwxpN82bCKtDZP0RBdOD6W7BQlilBqAsWnAZuS10iUyJZneS8Ob1gxs1BZkqJi1nTi.";

    /// The Latin-1 password "café" (not UTF-8), hashed by htpasswd with
    /// `"$(printf 'caf\xe9')"` (and python3 for {SSHA}, salt "salt").
    const LATIN1: &[u8] = b"caf\xe9";
    const LATIN1_HASHES: [&str; 6] = [
        "$apr1$C0ZM1qsW$U4mhULMfBZYrq5tCkOa5Z/",
        "$2y$04$7LPVgq14Aw9ngX2OJ93OuOlLR.tya4828A5ajEKKOo8aam/UCNYDu",
        "{SHA}0vUrxEBomPxyLAtOMU+bRvyFzeQ=",
        "{SSHA}WLAY/FoNyxvVKQmLRDqMgCMrL2JzYWx0",
        "$5$5d9gzcVgHB4ouEAV$wJBj.rihjhro0UtlTzHXZPMvgQCZQd0MIM5SFeR4nvB",
        "$6$2K/mwFzut521cg7u$ott5rBgRQV539BG5D0.aY98xUs21mZTDjx9lyvcDcgW.W2HL7a/rvIUR652X9VLor7odAMN8oV0Ivq7BUNF5f.",
    ];

    fn one_user(hash: &str) -> PasswordFile {
        PasswordFile::parse(&format!("u:{hash}\n")).expect("a valid hash")
    }

    /// The right password passes; a wrong one, one differing in the last
    /// byte, a truncated one and an extended one fail.
    fn assert_checks(hash: &str, scheme: Scheme, password: &[u8]) {
        assert_eq!(classify(hash), Some(scheme), "{hash}");
        let file = one_user(hash);
        assert_eq!(file.schemes(), vec![(scheme, 1)]);
        assert!(file.verify("u", password), "{hash}: right password refused");
        assert!(!file.verify("u", b"wrong"), "{hash}: wrong password passed");
        let mut last = password.to_vec();
        *last.last_mut().expect("a non-empty password") ^= 1;
        assert!(
            !file.verify("u", &last),
            "{hash}: last byte differs but passed"
        );
        assert!(!file.verify("u", &password[..password.len() - 1]));
        assert!(!file.verify("u", &[password, b"x"].concat()));
        assert!(!file.verify("U", password), "{hash}: another user passed");
        assert!(!file.verify("nobody", password));
    }

    #[test]
    fn apr1_matches_openssl_and_htpasswd() {
        for (salt, password, hash) in APR1_OPENSSL {
            let digest = apr1_digest(password.as_bytes(), salt.as_bytes());
            let expected = &hash[hash.len() - 22..];
            assert_eq!(std::str::from_utf8(&digest).unwrap(), expected, "{hash}");
            let file = one_user(hash);
            assert!(file.verify("u", password.as_bytes()), "{hash}");
            assert!(!file.verify("u", b"password!"), "{hash}");
        }
        let digest = apr1_digest(b"correct horse", b"F/KICCsW");
        assert_eq!(&digest, &APR1_ALICE.as_bytes()[APR1_ALICE.len() - 22..]);
    }

    #[test]
    fn apr1_checks() {
        assert_checks(APR1_ALICE, Scheme::Apr1, b"correct horse");
    }

    #[test]
    fn bcrypt_checks_in_all_prefixes() {
        assert_checks(BCRYPT_BOB, Scheme::Bcrypt, b"correct horse");
        assert_checks(BCRYPT_BOB2, Scheme::Bcrypt, b"hunter2");
        // $2b$ and $2a$ are the same algorithm for these passwords.
        for prefix in ["$2b$", "$2a$"] {
            let hash = format!("{prefix}{}", &BCRYPT_BOB[4..]);
            assert_checks(&hash, Scheme::Bcrypt, b"correct horse");
        }
    }

    #[test]
    fn sha1_checks() {
        assert_checks(SHA_CAROL, Scheme::Sha1, b"correct horse");
        // Padding is optional.
        assert_checks(
            SHA_CAROL.trim_end_matches('='),
            Scheme::Sha1,
            b"correct horse",
        );
    }

    #[test]
    fn ssha_checks() {
        assert_checks(SSHA_CORRECT, Scheme::Ssha, b"correct horse");
    }

    #[test]
    fn sha_crypt_checks_with_and_without_rounds() {
        assert_checks(SHA256_DAVE, Scheme::Sha256Crypt, b"correct horse");
        assert_checks(SHA256_DAVE_10000, Scheme::Sha256Crypt, b"correct horse");
        assert_checks(SHA512_ERIN, Scheme::Sha512Crypt, b"correct horse");
        assert_checks(SHA512_ERIN_10000, Scheme::Sha512Crypt, b"correct horse");
        assert_checks(SHA512_X_1000, Scheme::Sha512Crypt, b"x");
    }

    #[test]
    fn passwords_that_are_not_utf8() {
        for hash in LATIN1_HASHES {
            let scheme = classify(hash).expect("a known scheme");
            assert_checks(hash, scheme, LATIN1);
            // The same text in UTF-8 is another password.
            assert!(!one_user(hash).verify("u", "café".as_bytes()), "{hash}");
        }
    }

    #[test]
    fn overlong_passwords_are_refused_without_hashing() {
        let file = one_user(SHA_CAROL);
        let long = vec![b'a'; MAX_PASSWORD_LEN + 1];
        assert!(!file.verify("u", &long));
        assert!(!file.verify("nobody", &long));
        let cache = VerifiedCache::new(4, Duration::from_secs(60));
        assert!(!cache.check(1, &file, "u", &long, Instant::now()));
        assert!(cache.is_empty());
    }

    #[test]
    fn unknown_users_fail_in_every_scheme() {
        let hashes = [
            BCRYPT_BOB,
            APR1_ALICE,
            SHA_CAROL,
            SSHA_CORRECT,
            SHA256_DAVE,
            SHA512_ERIN,
        ];
        for hash in hashes {
            let file = one_user(hash);
            assert!(file.dummy.is_some(), "{hash}");
            assert!(!file.verify("nobody", b"correct horse"), "{hash}");
            assert!(!file.verify("", b""), "{hash}");
        }
        let empty = PasswordFile::parse("# nobody yet\n").unwrap();
        assert!(empty.is_empty());
        assert!(empty.dummy.is_none());
        assert!(!empty.verify("nobody", b"x"));
        assert!(!PasswordFile::default().verify("nobody", b"x"));
    }

    #[test]
    fn dummies_are_well_formed_for_every_scheme_and_factor() {
        let works = [
            (Scheme::Bcrypt, 4),
            (Scheme::Bcrypt, 12),
            (Scheme::Bcrypt, 31),
            (Scheme::Apr1, 0),
            (Scheme::Sha1, 0),
            (Scheme::Ssha, 0),
            (Scheme::Sha256Crypt, 1000),
            (Scheme::Sha256Crypt, 5000),
            (Scheme::Sha512Crypt, 5000),
            (Scheme::Sha512Crypt, 999_999_999),
        ];
        for work in works {
            let dummy = Hash::dummy(work).unwrap_or_else(|| panic!("{work:?}"));
            assert_eq!(dummy.work(), work);
        }
        // Cheap ones are checked for real (and fail).
        for work in [(Scheme::Bcrypt, 4), (Scheme::Apr1, 0), (Scheme::Ssha, 0)] {
            assert!(!Hash::dummy(work).unwrap().verify(b"correct horse"));
        }
    }

    #[test]
    fn the_dummy_follows_the_most_common_scheme_and_cost() {
        let text = format!(
            "a:{BCRYPT_BOB2}\nb:{}\nc:{BCRYPT_BOB}\nd:{SHA_CAROL}\n",
            BCRYPT_BOB2.replace("$2y$", "$2b$")
        );
        let file = PasswordFile::parse(&text).unwrap();
        assert_eq!(
            file.dummy.as_ref().map(Hash::work),
            Some((Scheme::Bcrypt, 5))
        );
        let file = PasswordFile::parse(&format!(
            "a:{SHA256_DAVE}\nb:{SHA256_DAVE_10000}\nc:{SHA_CAROL}\nd:{SHA256_DAVE}\n"
        ))
        .unwrap();
        assert_eq!(
            file.dummy.as_ref().map(Hash::work),
            Some((Scheme::Sha256Crypt, 5000))
        );
        // A tie: the costlier.
        let file = PasswordFile::parse(&format!("a:{SHA_CAROL}\nb:{SHA512_ERIN_10000}\n")).unwrap();
        assert_eq!(
            file.dummy.as_ref().map(Hash::work),
            Some((Scheme::Sha512Crypt, 10_000))
        );
    }

    #[test]
    fn schemes_count_users() {
        let text = format!(
            "a:{BCRYPT_BOB}\nb:{BCRYPT_BOB2}\nc:{SHA_CAROL}\nd:{APR1_ALICE}\ne:{SHA512_ERIN}\n"
        );
        let file = PasswordFile::parse(&text).unwrap();
        assert_eq!(file.len(), 5);
        assert_eq!(
            file.schemes(),
            vec![
                (Scheme::Bcrypt, 2),
                (Scheme::Apr1, 1),
                (Scheme::Sha1, 1),
                (Scheme::Sha512Crypt, 1),
            ]
        );
        let names: Vec<_> = Scheme::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "bcrypt",
                "apr1-md5",
                "{SHA}",
                "{SSHA}",
                "sha256-crypt",
                "sha512-crypt"
            ]
        );
    }

    #[test]
    fn comments_blank_lines_and_crlf() {
        let text = format!(
            "\u{feff}# users\r\n\r\nalice:{APR1_ALICE}\r\n   \r\n  # indented comment\r\nbob:{BCRYPT_BOB}  \r\ncarol: {SHA_CAROL}\ndave:{SHA256_DAVE}"
        );
        let file = PasswordFile::parse(&text).unwrap();
        assert_eq!(file.len(), 4);
        for user in ["alice", "bob", "carol", "dave"] {
            assert!(file.contains(user), "{user}");
            assert!(file.verify(user, b"correct horse"), "{user}");
        }
        assert!(!file.contains("# users"));
        assert!(!file.is_empty());
    }

    #[test]
    fn debug_shows_no_hashes() {
        let file = PasswordFile::parse(&format!("alice:{APR1_ALICE}\nbob:{SHA_CAROL}\n")).unwrap();
        let shown = format!("{file:?}");
        assert!(shown.contains('2'), "{shown}");
        for secret in ["apr1", "Hokypb0", "SHA", "L55TU", "alice"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    /// The error's line, and that its text quotes no part of the hash.
    fn refused(text: &str, secret: &str) -> ParseError {
        let err = PasswordFile::parse(text).expect_err(text);
        let shown = err.to_string();
        assert!(!shown.contains(secret), "{shown:?} shows {secret:?}");
        assert!(
            shown.starts_with(&format!("line {}: ", err.line)),
            "{shown}"
        );
        err
    }

    #[test]
    fn parse_errors_name_the_line_and_not_the_hash() {
        let ok = format!("# header\nalice:{APR1_ALICE}\n\n");
        // No ':': the line may be a bare password, so it is not quoted.
        let err = refused(&format!("{ok}hunter2secret\n"), "hunter2secret");
        assert_eq!(err.line, 4);
        assert!(err.reason.contains("':'"), "{}", err.reason);
        let err = refused(&format!("{ok}:{BCRYPT_BOB}\n"), &BCRYPT_BOB[7..]);
        assert_eq!((err.line, err.reason.as_str()), (4, "an empty user name"));

        let unknown = [
            ("$1$saltsalt$q5I.BjjPaJ6Ys6J9aIzmA/", "md5-crypt ($1$)"),
            ("YpARwXMvDzHy2", "DES crypt or plain text?"),
            ("{PLAIN}hunter2", "{PLAIN}"),
            (
                "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo",
                "argon2",
            ),
            ("$y$j9T$salt$hashhashhash", "yescrypt"),
            (
                "$2x$04$XD3MY4DglMWvEgR6CBb0muNdPdjHDViXt14Yy9aoOCulj.evs/CoC",
                "$2x$",
            ),
            ("hunter2", "plain text?"),
            ("$secret$hunter2", "unknown '$'-prefixed"),
            ("{secret}hunter2", "unknown '{...}'"),
            ("_J9..saltxyzwvu0123456", "plain text?"),
            ("_J9..saltXQ8J7EMD.ym", "BSDi extended DES"),
        ];
        for (hash, what) in unknown {
            let secret = hash.get(hash.len() - 7..).unwrap();
            let err = refused(&format!("{ok}bob:{hash}\n"), secret);
            assert_eq!(err.line, 4, "{hash}");
            assert!(err
                .reason
                .starts_with("user bob: a hash tern cannot check ("));
            assert!(err.reason.contains(what), "{hash}: {}", err.reason);
            assert!(
                err.reason.ends_with("; use bcrypt (htpasswd -B)"),
                "{}",
                err.reason
            );
        }
        let err = refused("bob:\n", "\u{0}");
        assert_eq!(
            err.reason,
            "user bob: a hash tern cannot check (an empty hash); use bcrypt (htpasswd -B)"
        );
        assert_eq!(
            refused("bob:YpARwXMvDzHy2\n", "YpARwXMvDzHy2").reason,
            "user bob: a hash tern cannot check (DES crypt or plain text?); use bcrypt (htpasswd -B)"
        );
    }

    #[test]
    fn malformed_hashes_are_refused_when_read() {
        let b = &BCRYPT_BOB[7..];
        let malformed = [
            // bcrypt
            (format!("$2y$4${b}"), "cost is not two digits"),
            (format!("$2y$03${b}"), "cost 3"),
            (format!("$2y$32${b}"), "cost 32"),
            (format!("$2y$04${}", &b[1..]), "53 characters"),
            (format!("$2y$04${b}x"), "53 characters"),
            (format!("$2y$04$!{}", &b[1..]), "salt does not decode"),
            (format!("$2y$04${}!", &b[..52]), "digest does not decode"),
            ("$2y$04".to_owned(), "no cost"),
            // apr1
            ("$apr1$F/KICCsW".to_owned(), "no '$' after the salt"),
            ("$apr1$$Hokypb0UNk1vvRF0WxlJZ.".to_owned(), "no salt"),
            ("$apr1$F/KICCsWx$Hokypb0UNk1vvRF0WxlJZ.".to_owned(), "longer than 8"),
            ("$apr1$F/KICCsW$Hokypb0UNk1vvRF0WxlJZ".to_owned(), "22 characters"),
            ("$apr1$F/KICCsW$Hokypb0UNk1vvRF0WxlJZ.$".to_owned(), "22 characters"),
            ("$apr1$F/KICCsW$Hokypb0UNk1vvRF0WxlJZ2".to_owned(), "last character"),
            // {SHA} and {SSHA}
            ("{SHA}L55TUjtiq8FBorTWAZ0jy6g129A!".to_owned(), "not base64"),
            ("{SHA}L55TUjtiq8FBorTWAZ0jy6g1".to_owned(), "not 20"),
            ("{SHA}PVLZMgHNEdSGCd5PT+tIWHSUyNuhssPU5fYHGA==".to_owned(), "28 bytes, not 20"),
            ("{SSHA}L55TUjtiq8FBorTWAZ0jy6g129A=".to_owned(), "20 bytes, not a 20-byte digest"),
            ("{SSHA}".to_owned(), "0 bytes"),
            ("{SSHA}PVLZMgHNEdSGCd5PT+tIWHSUyNuhssPU5f*HGA==".to_owned(), "not base64"),
            // SHA-crypt
            ("$5$OxvVw7Nw3uZLdY7a".to_owned(), "no digest"),
            ("$5$$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "no salt"),
            ("$5$rounds=abc$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "not a number"),
            ("$5$rounds=+5000$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "not a number"),
            ("$5$rounds=999$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "rounds=999, not between 1000"),
            ("$5$rounds=1000000000$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "not between"),
            ("$5$rounds=99999999999999999999999$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "not between"),
            ("$5$rounds=5000$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "longer than 16"),
            ("$5$OxvVw7Nw3uZLdY7aX$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2".to_owned(), "longer than 16"),
            ("$5$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl".to_owned(), "43 characters"),
            ("$5$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl!".to_owned(), "43 characters"),
            ("$5$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Plz".to_owned(), "last character"),
            ("$5$OxvVw7Nw3uZLdY7a$Q.JoXBao98weyCxKhH8Y0RF.1zulylijTi1uQnc3Pl2$".to_owned(), "more '$' fields"),
            (SHA512_ERIN.replace("Wyk.", "Wyk2"), "last character"),
            (SHA512_ERIN.replace("Wyk.", "Wyk"), "86 characters"),
        ];
        for (hash, what) in &malformed {
            // The hash's last characters (short ones are all scheme prefix).
            let secret = match hash.len() {
                0..12 => "\u{0}",
                n => &hash[n - 5..],
            };
            let err = refused(&format!("# x\nbob:{hash}\n"), secret);
            assert_eq!(err.line, 2, "{hash}");
            assert!(
                err.reason.starts_with("user bob: a malformed "),
                "{hash}: {}",
                err.reason
            );
            assert!(
                err.reason.contains(what),
                "{hash}: {:?} lacks {what:?}",
                err.reason
            );
        }
    }

    #[test]
    fn duplicate_users_are_refused() {
        let err = refused(
            &format!("alice:{APR1_ALICE}\nbob:{SHA_CAROL}\n# again\nalice:{BCRYPT_BOB}\n"),
            &BCRYPT_BOB[7..],
        );
        assert_eq!(err.line, 4);
        assert_eq!(err.reason, "user alice appears twice (first on line 1)");
    }

    #[test]
    fn classify_table() {
        let table: [(&str, Option<Scheme>); 20] = [
            (BCRYPT_BOB, Some(Scheme::Bcrypt)),
            ("$2b$04$x", Some(Scheme::Bcrypt)),
            ("$2a$04$x", Some(Scheme::Bcrypt)),
            (APR1_ALICE, Some(Scheme::Apr1)),
            (SHA_CAROL, Some(Scheme::Sha1)),
            (SSHA_CORRECT, Some(Scheme::Ssha)),
            (SHA256_DAVE, Some(Scheme::Sha256Crypt)),
            (SHA256_DAVE_10000, Some(Scheme::Sha256Crypt)),
            (SHA512_ERIN, Some(Scheme::Sha512Crypt)),
            (SHA512_ERIN_10000, Some(Scheme::Sha512Crypt)),
            ("$1$saltsalt$q5I.BjjPaJ6Ys6J9aIzmA/", None),
            ("{PLAIN}x", None),
            ("abcdefghijklm", None),
            ("$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", None),
            ("$2x$04$x", None),
            ("$y$j9T$salt$hash", None),
            ("{sha}L55TUjtiq8FBorTWAZ0jy6g129A=", None),
            ("apr1$x$y", None),
            ("", None),
            ("correct horse", None),
        ];
        for (hash, scheme) in table {
            assert_eq!(classify(hash), scheme, "{hash}");
        }
    }

    #[test]
    fn group_membership_across_lines() {
        let text = "# groups\r\nadmins: alice bob\r\n\r\nstaff:carol\tdave  \nadmins:erin\nempty:\n  ops : frank \n";
        let groups = GroupFile::parse(text).unwrap();
        for user in ["alice", "bob", "erin"] {
            assert!(groups.is_member(user, "admins"), "{user}");
        }
        assert!(groups.is_member("carol", "staff"));
        assert!(groups.is_member("dave", "staff"));
        assert!(groups.is_member("frank", "ops"));
        assert!(!groups.is_member("carol", "admins"));
        assert!(!groups.is_member("alice", "staff"));
        assert!(!groups.is_member("alice", "empty"));
        assert!(!groups.is_member("alice", "nobody"));
        assert!(!groups.is_member("", "admins"));
        assert!(!GroupFile::default().is_member("alice", "admins"));
    }

    #[test]
    fn group_file_errors() {
        let err = GroupFile::parse("# g\nadmins: alice\nalice bob\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.reason.contains("':'"), "{}", err.reason);
        let err = GroupFile::parse("admins: alice\n  : bob\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(err.reason, "an empty group name");
    }

    const TTL: Duration = Duration::from_secs(60);

    fn carol() -> PasswordFile {
        PasswordFile::parse(&format!("carol:{SHA_CAROL}\n")).unwrap()
    }

    #[test]
    fn a_success_is_cached() {
        let cache = VerifiedCache::new(16, TTL);
        let with = carol();
        let without = PasswordFile::parse(&format!("other:{SHA_CAROL}\n")).unwrap();
        let t0 = Instant::now();
        assert!(!cache.check(7, &without, "carol", b"correct horse", t0));
        assert!(cache.is_empty());
        assert!(cache.check(7, &with, "carol", b"correct horse", t0));
        assert_eq!(cache.len(), 1);
        // The file no longer has carol, but the same identity: cached.
        let t1 = t0 + Duration::from_secs(59);
        assert!(cache.check(7, &without, "carol", b"correct horse", t1));
        // Another file identity, user or password is another entry.
        assert!(!cache.check(8, &without, "carol", b"correct horse", t1));
        assert!(!cache.check(7, &without, "Carol", b"correct horse", t1));
        assert!(!cache.check(7, &without, "carol", b"correct horsf", t1));
        assert_eq!(cache.len(), 1);
        // The user/password boundary is part of the key.
        let ab = PasswordFile::parse(&format!("ab:{}\n", sha1_hash(b"c"))).unwrap();
        assert!(cache.check(9, &ab, "ab", b"c", t1));
        let a = PasswordFile::default();
        assert!(!cache.check(9, &a, "a", b"bc", t1));
    }

    fn sha1_hash(password: &[u8]) -> String {
        format!(
            "{{SHA}}{}",
            base64::engine::general_purpose::STANDARD.encode(Sha1::digest(password))
        )
    }

    #[test]
    fn a_success_expires_after_ttl() {
        let cache = VerifiedCache::new(16, TTL);
        let without = PasswordFile::default();
        let t0 = Instant::now();
        assert!(cache.check(1, &carol(), "carol", b"correct horse", t0));
        assert!(cache.check(
            1,
            &without,
            "carol",
            b"correct horse",
            t0 + TTL - Duration::from_nanos(1)
        ));
        assert!(!cache.check(1, &without, "carol", b"correct horse", t0 + TTL));
        assert!(cache.is_empty());
        // A success again starts a new period.
        assert!(cache.check(1, &carol(), "carol", b"correct horse", t0 + TTL));
        assert!(cache.check(
            1,
            &without,
            "carol",
            b"correct horse",
            t0 + TTL * 2 - Duration::from_secs(1)
        ));
        // An earlier `now` (another thread's) counts as fresh.
        assert!(cache.check(1, &without, "carol", b"correct horse", t0));
    }

    #[test]
    fn failures_are_not_cached() {
        let cache = VerifiedCache::new(16, TTL);
        let file = carol();
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(!cache.check(1, &file, "carol", b"wrong", t0));
            assert!(!cache.check(1, &file, "nobody", b"correct horse", t0));
        }
        assert!(cache.is_empty());
        assert!(cache.check(1, &file, "carol", b"correct horse", t0));
        assert!(!cache.check(1, &file, "carol", b"wrong", t0));
        assert!(!cache.check(1, &file, "carol", b"correct hors", t0));
        assert!(!cache.check(1, &file, "carol", b"correct horse ", t0));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn capacity_holds_and_the_oldest_goes_first() {
        let cache = VerifiedCache::new(8, TTL);
        let file = carol();
        let gone = PasswordFile::default();
        let t0 = Instant::now();
        for id in 0..100u64 {
            assert!(cache.check(id, &file, "carol", b"correct horse", t0));
            assert!(cache.len() <= 8);
            // Re-checking an entry does not add one.
            assert!(cache.check(id, &file, "carol", b"correct horse", t0));
        }
        assert_eq!(cache.len(), 8);
        assert!(cache.lock().order.len() <= 16);
        // The newest 8 are cached; older ones were evicted.
        for id in 92..100u64 {
            assert!(
                cache.check(id, &gone, "carol", b"correct horse", t0),
                "{id}"
            );
        }
        assert!(!cache.check(91, &gone, "carol", b"correct horse", t0));
        assert!(!cache.check(0, &gone, "carol", b"correct horse", t0));
        // Refreshing an expired entry over and over keeps `order` bounded.
        for i in 1..50u32 {
            let now = t0 + TTL * i;
            assert!(cache.check(99, &file, "carol", b"correct horse", now));
            assert!(cache.len() <= 8);
            assert!(cache.lock().order.len() <= 16);
        }
    }

    #[test]
    fn zero_capacity_or_ttl_caches_nothing() {
        let file = carol();
        let t0 = Instant::now();
        for cache in [
            VerifiedCache::new(0, TTL),
            VerifiedCache::new(8, Duration::ZERO),
        ] {
            assert!(cache.check(1, &file, "carol", b"correct horse", t0));
            assert!(cache.is_empty());
            assert!(!cache.check(1, &PasswordFile::default(), "carol", b"correct horse", t0));
        }
    }

    #[test]
    fn caches_have_their_own_keys_and_hide_them() {
        let a = VerifiedCache::new(1, TTL);
        let b = VerifiedCache::new(1, TTL);
        assert_ne!(a.secret, b.secret);
        assert_ne!(a.key(1, "u", b"p"), b.key(1, "u", b"p"));
        assert_eq!(a.key(1, "u", b"p"), a.key(1, "u", b"p"));
        let shown = format!("{a:?}");
        assert!(shown.contains("capacity: 1"), "{shown}");
        assert!(!shown.contains("secret"), "{shown}");
    }

    #[test]
    fn shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<VerifiedCache>();
        send_sync::<PasswordFile>();
        send_sync::<GroupFile>();
        let cache = VerifiedCache::new(64, TTL);
        let file = carol();
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (cache, file) = (&cache, &file);
                s.spawn(move || {
                    for id in 0..32u64 {
                        assert!(cache.check(t * 100 + id, file, "carol", b"correct horse", t0));
                        assert!(!cache.check(id, file, "carol", b"wrong", t0));
                    }
                });
            }
        });
        assert_eq!(cache.len(), 64);
    }
}
