//! The state directory: the account's credentials, one per CA
//! (`account-<directory>.json`, mode 0600), and per set of names a
//! directory (`certs/<name>,<name>`) holding `cert.pem` (the chain) and
//! `key.pem` (mode 0600). Each file is written to a temporary name and
//! renamed over the old one, so a reader sees the old file or the new,
//! never half of one; the key lands first, and a crash between the two
//! renames leaves a pair that does not match, which is ordered again.

use std::path::{Path, PathBuf};

use crate::Error;

/// The files of one set of names.
#[derive(Clone, Debug)]
pub(crate) struct CertFiles {
    pub(crate) dir: PathBuf,
}

impl CertFiles {
    pub(crate) fn new(state: &Path, names: &[String]) -> CertFiles {
        CertFiles {
            dir: state.join("certs").join(names.join(",")),
        }
    }

    pub(crate) fn cert(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    pub(crate) fn key(&self) -> PathBuf {
        self.dir.join("key.pem")
    }

    /// The chain and key kept, if both are there.
    pub(crate) fn read(&self) -> Result<Option<Pair>, Error> {
        let read = |p: PathBuf| match std::fs::read(&p) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::State { path: p, source }),
        };
        Ok(match (read(self.cert())?, read(self.key())?) {
            (Some(chain), Some(key)) => Some(Pair { chain, key }),
            _ => None,
        })
    }

    /// Keeps a new chain and key: the key first, each atomically.
    pub(crate) fn write(&self, chain: &[u8], key: &[u8]) -> Result<(), Error> {
        write_atomic(&self.key(), key, 0o600)?;
        write_atomic(&self.cert(), chain, 0o644)
    }
}

/// A chain and its key, PEM.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Pair {
    pub(crate) chain: Vec<u8>,
    pub(crate) key: Vec<u8>,
}

/// Where the account of the CA at `directory` is kept.
pub(crate) fn account_file(state: &Path, directory: &str) -> PathBuf {
    let name = tern_tls::file_name_of(directory.trim_start_matches("https://"));
    state.join(format!("account-{name}.json"))
}

/// Reads `path`, `None` if it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::State {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes `bytes` to `path` whole ([`tern_tls::write_atomic`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    tern_tls::write_atomic(path, bytes, mode).map_err(|source| Error::State {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_written_whole_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let files = CertFiles::new(dir.path(), &["a.test".into(), "b.test".into()]);
        assert!(files.read().unwrap().is_none());
        files.write(b"chain", b"key").unwrap();
        assert_eq!(
            files.read().unwrap(),
            Some(Pair {
                chain: b"chain".to_vec(),
                key: b"key".to_vec()
            })
        );
        assert!(files.cert().ends_with("certs/a.test,b.test/cert.pem"));
        let mode = std::fs::metadata(files.key()).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&files.dir).unwrap().count(), 2);
        assert_eq!(
            account_file(dir.path(), "https://127.0.0.1:14000/dir"),
            dir.path().join("account-127.0.0.1_14000_dir.json")
        );
    }
}
