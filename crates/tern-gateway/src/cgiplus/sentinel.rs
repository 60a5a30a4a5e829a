//! The three per-process strings of CGIplus: the end-of-response sentinel
//! (CGIPLUSEOF) and the callout brackets (CGIPLUSESC, CGIPLUSEOT), random
//! so that no response can contain one by accident or by a client's
//! doing.

use std::ffi::OsString;
use std::fmt;
use std::io;

/// Random bytes in each string: 128 bits, written as 32 hex digits.
const RANDOM_BYTES: usize = 16;

/// A worker process's sentinels. Each is `--tern-cgiplus-<role>-<32 hex>--`:
/// printable (a shell script can `printf '%s'` it), distinct, and none a
/// prefix of another.
///
/// They are secrets: a client that knew a worker's CGIPLUSEOF and got a
/// script to echo it could end a response early and put its own bytes at
/// the start of the next client's response. So `Debug` does not show
/// them, and tern never logs them.
#[derive(Clone, PartialEq, Eq)]
pub struct Sentinels {
    eof: String,
    esc: String,
    eot: String,
}

impl Sentinels {
    /// Fresh sentinels for one process, from getrandom(2).
    pub fn generate() -> io::Result<Sentinels> {
        let mut random = [0u8; 3 * RANDOM_BYTES];
        let mut filled = 0;
        // getrandom(2) returns at most 256 bytes short only when a signal
        // interrupts it; loop anyway rather than trust the count.
        while filled < random.len() {
            filled += rustix::rand::getrandom(
                &mut random[filled..],
                rustix::rand::GetRandomFlags::empty(),
            )?;
        }
        let (a, rest) = random.split_at(RANDOM_BYTES);
        let (b, c) = rest.split_at(RANDOM_BYTES);
        Ok(Sentinels {
            eof: sentinel("eof", a),
            esc: sentinel("esc", b),
            eot: sentinel("eot", c),
        })
    }

    /// The end-of-response sentinel (CGIPLUSEOF).
    pub fn eof(&self) -> &str {
        &self.eof
    }

    /// The bracket that opens a callout (CGIPLUSESC).
    pub fn esc(&self) -> &str {
        &self.esc
    }

    /// The bracket that closes a callout (CGIPLUSEOT).
    pub fn eot(&self) -> &str {
        &self.eot
    }

    /// The variables to add to the worker's environment when it is
    /// started: CGIPLUSEOF, CGIPLUSESC and CGIPLUSEOT.
    pub fn env(&self) -> [(OsString, OsString); 3] {
        [
            ("CGIPLUSEOF".into(), self.eof.clone().into()),
            ("CGIPLUSESC".into(), self.esc.clone().into()),
            ("CGIPLUSEOT".into(), self.eot.clone().into()),
        ]
    }
}

impl fmt::Debug for Sentinels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sentinels").finish_non_exhaustive()
    }
}

fn sentinel(role: &str, random: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(19 + 2 * random.len() + 2);
    s.push_str("--tern-cgiplus-");
    s.push_str(role);
    s.push('-');
    for b in random {
        s.push(HEX[usize::from(b >> 4)].into());
        s.push(HEX[usize::from(b & 0xf)].into());
    }
    s.push_str("--");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_process_gets_different_printable_sentinels() {
        let a = Sentinels::generate().unwrap();
        let b = Sentinels::generate().unwrap();
        assert_ne!(a.eof(), b.eof());
        for s in [a.eof(), a.esc(), a.eot()] {
            assert_eq!(s.len(), "--tern-cgiplus-eof---".len() + 32, "{s}");
            assert!(s.bytes().all(|c| c.is_ascii_graphic()), "{s}");
        }
        assert!(a.eof().starts_with("--tern-cgiplus-eof-"));
        assert!(a.esc().starts_with("--tern-cgiplus-esc-"));
        assert!(a.eot().starts_with("--tern-cgiplus-eot-"));
        let env = a.env();
        assert_eq!(env[0], ("CGIPLUSEOF".into(), a.eof().into()));
        assert_eq!(env[1], ("CGIPLUSESC".into(), a.esc().into()));
        assert_eq!(env[2], ("CGIPLUSEOT".into(), a.eot().into()));
    }

    #[test]
    fn debug_output_keeps_the_sentinels_secret() {
        let s = Sentinels::generate().unwrap();
        let scanner = crate::cgiplus::scan::Scanner::new(&s);
        for shown in [format!("{s:?}"), format!("{scanner:?}")] {
            for secret in [s.eof(), s.esc(), s.eot()] {
                assert!(!shown.contains(&secret[19..51]), "{shown}");
            }
        }
    }
}
