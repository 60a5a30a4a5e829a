//! Session tickets under keys read from files (`ticket_key_file`), so that
//! several tern processes or machines behind one load balancer resume each
//! other's sessions. Without such files, rustls' own ticketer makes keys in
//! memory and rotates them.
//!
//! A key file holds 80 random bytes, as nginx's `ssl_session_ticket_key`
//! (`openssl rand 80 > ticket.key`): a 16-byte name, 32 bytes nginx uses
//! for an HMAC (unused here: AES-GCM authenticates), and a 32-byte AES-256
//! key. A ticket is `name ‖ nonce ‖ AES-256-GCM(state) ‖ tag`, the name
//! also authenticated, so a ticket under an unknown or old key fails to
//! decrypt and the client does a full handshake.

use std::path::Path;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use rustls::server::ProducesTickets;
use tern_config::TicketKeys;

use crate::Error;

/// The bytes of a key file.
const KEY_FILE_LEN: usize = 80;
const NAME_LEN: usize = 16;
/// How long clients are told a ticket is good for. The keys change when
/// the operator rotates the files; tickets under a key no longer listed
/// just fail to decrypt.
const LIFETIME_SECS: u32 = 12 * 60 * 60;

struct Key {
    name: [u8; NAME_LEN],
    aead: LessSafeKey,
}

/// Tickets sealed with the first key and opened with any.
pub(crate) struct FileTicketer {
    keys: Vec<Key>,
    rng: SystemRandom,
}

impl std::fmt::Debug for FileTicketer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileTicketer")
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl FileTicketer {
    /// Reads every file of `cfg`; an error names the file and what is wrong.
    pub(crate) fn load(cfg: &TicketKeys) -> Result<FileTicketer, Error> {
        let keys = cfg
            .files
            .iter()
            .map(|f| {
                read_key(f).map_err(|reason| Error::Certificate {
                    origin: cfg.origin.clone(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(FileTicketer {
            keys,
            rng: SystemRandom::new(),
        })
    }
}

fn read_key(path: &Path) -> Result<Key, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("`{}`: {e}", path.display()))?;
    if bytes.len() != KEY_FILE_LEN {
        return Err(format!(
            "`{}`: a ticket key file holds {KEY_FILE_LEN} bytes (`openssl rand {KEY_FILE_LEN}`), this one {}",
            path.display(),
            bytes.len()
        ));
    }
    let mut name = [0; NAME_LEN];
    name.copy_from_slice(&bytes[..NAME_LEN]);
    let aes = UnboundKey::new(&AES_256_GCM, &bytes[KEY_FILE_LEN - 32..])
        .map_err(|_| format!("`{}`: not a usable AES-256 key", path.display()))?;
    Ok(Key {
        name,
        aead: LessSafeKey::new(aes),
    })
}

impl ProducesTickets for FileTicketer {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        LIFETIME_SECS
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let key = self.keys.first()?;
        let mut nonce = [0; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(NAME_LEN + NONCE_LEN + plain.len() + 16);
        out.extend_from_slice(&key.name);
        out.extend_from_slice(&nonce);
        let mut sealed = plain.to_vec();
        key.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&key.name),
                &mut sealed,
            )
            .ok()?;
        out.extend_from_slice(&sealed);
        Some(out)
    }

    fn decrypt(&self, ticket: &[u8]) -> Option<Vec<u8>> {
        let name = ticket.get(..NAME_LEN)?;
        let nonce = ticket.get(NAME_LEN..NAME_LEN + NONCE_LEN)?;
        let sealed = ticket.get(NAME_LEN + NONCE_LEN..)?;
        let key = self.keys.iter().find(|k| k.name == name)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = sealed.to_vec();
        let plain = key
            .aead
            .open_in_place(nonce, Aad::from(&key.name), &mut buf)
            .ok()?;
        let n = plain.len();
        buf.truncate(n);
        Some(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticketer(dir: &Path, files: &[(&str, [u8; KEY_FILE_LEN])]) -> FileTicketer {
        let mut paths = Vec::new();
        for (name, bytes) in files {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            paths.push(p);
        }
        FileTicketer::load(&TicketKeys {
            files: paths,
            origin: "tern.toml:3: listen.tls.ticket_key_file".into(),
        })
        .unwrap()
    }

    #[test]
    fn a_ticket_opens_under_its_key_listed_anywhere_and_not_under_another() {
        let dir = tempfile::tempdir().unwrap();
        let new = [7u8; KEY_FILE_LEN];
        let mut old = [9u8; KEY_FILE_LEN];
        old[0] = 1;
        let by_old = ticketer(dir.path(), &[("old", old)]);
        let t = by_old.encrypt(b"session state").unwrap();
        assert_ne!(&t[NAME_LEN + NONCE_LEN..], b"session state");
        // Rotated: the new key first, the old one still listed.
        let rotated = ticketer(dir.path(), &[("new", new), ("old", old)]);
        assert_eq!(rotated.decrypt(&t).unwrap(), b"session state");
        let t2 = rotated.encrypt(b"next").unwrap();
        assert_eq!(&t2[..NAME_LEN], &new[..NAME_LEN]);
        // The old key gone: its tickets no longer open.
        let only_new = ticketer(dir.path(), &[("new", new)]);
        assert_eq!(only_new.decrypt(&t), None);
        assert_eq!(only_new.decrypt(&t2).unwrap(), b"next");
    }

    #[test]
    fn tampered_or_short_tickets_do_not_open() {
        let dir = tempfile::tempdir().unwrap();
        let tk = ticketer(dir.path(), &[("k", [3u8; KEY_FILE_LEN])]);
        let mut t = tk.encrypt(b"state").unwrap();
        let last = t.len() - 1;
        t[last] ^= 1;
        assert_eq!(tk.decrypt(&t), None);
        for n in 0..NAME_LEN + NONCE_LEN + 1 {
            assert_eq!(tk.decrypt(&t[..n]), None);
        }
    }

    #[test]
    fn a_key_file_of_the_wrong_size_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("short.key");
        std::fs::write(&p, [0u8; 48]).unwrap();
        let err = FileTicketer::load(&TicketKeys {
            files: vec![p],
            origin: "tern.toml:3: listen.tls.ticket_key_file".into(),
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("tern.toml:3: listen.tls.ticket_key_file: `"),
            "{err}"
        );
        assert!(
            err.contains("short.key`: a ticket key file holds 80 bytes"),
            "{err}"
        );
    }
}
