//! tern's ACME client (RFC 8555, on `instant-acme`): certificates for the
//! names a listener's `acme` table lists, ordered from the CA, kept in the
//! state directory and renewed, with the challenges answered by tern's own
//! listeners.
//!
//! - One [`Manager`] per server process outlives every configuration
//!   generation: a reload that keeps an `acme` table keeps its task (no
//!   second order), one that drops it stops it.
//! - Each task (`task.rs`) serves what the state directory holds at start,
//!   orders when there is nothing or when renewal is due (ARI's suggested
//!   window when the CA offers it, else ⅔ of the lifetime: `schedule.rs`),
//!   writes the new pair atomically (`state.rs`) and swaps it into the
//!   [`ManagedCert`] every handshake reads: no reload, no restart.
//! - An order (`order.rs`) answers HTTP-01 through the shared
//!   [`Challenges`] (the plain listeners serve the token) or TLS-ALPN-01
//!   (the TLS listeners serve the challenge certificate to ALPN
//!   `acme-tls/1`).
//! - A CA that is down, slow or refuses costs nothing but a log line
//!   naming the order's URL: the old certificate keeps serving, and the
//!   task retries with a capped exponential backoff.
#![forbid(unsafe_code)]

mod order;
mod schedule;
mod state;
mod task;

use std::sync::{Arc, Mutex};

use tern_config::AcmeConfig;
use tern_tls::{AcmeLink, Challenges, ManagedCert};
use tokio_util::sync::CancellationToken;

/// Why an order or a step around it failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CA answered with an error, or could not be reached; `at` is the
    /// order's URL once there is one, else the directory's.
    #[error("{at}: {source}")]
    Acme {
        /// The order's URL, or the directory's before there is an order.
        at: String,
        /// What went wrong.
        source: instant_acme::Error,
    },
    /// The order went somewhere it should not (an invalid authorization,
    /// no challenge of the configured type, a timeout).
    #[error("{at}: {reason}")]
    Order {
        /// The order's URL, or the directory's.
        at: String,
        /// What went wrong.
        reason: String,
    },
    /// The state directory could not be read or written.
    #[error("state `{path}`: {source}")]
    State {
        /// The file or directory.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What identifies one task: the table as configured, without where it
/// is written (moving it in the file is no reason to order again).
fn key_of(cfg: &AcmeConfig) -> AcmeConfig {
    AcmeConfig {
        origin: String::new(),
        ..cfg.clone()
    }
}

#[derive(Debug)]
struct Running {
    cert: Arc<ManagedCert>,
    stop: CancellationToken,
}

/// The ACME tasks of a server process, one per distinct `acme` table.
#[derive(Debug)]
pub struct Manager {
    challenges: Arc<Challenges>,
    /// By table (few: a linear search).
    running: Mutex<Vec<(AcmeConfig, Running)>>,
    stop: CancellationToken,
}

impl Default for Manager {
    fn default() -> Self {
        Manager::new()
    }
}

impl Manager {
    /// A manager with no tasks.
    pub fn new() -> Manager {
        Manager {
            challenges: Arc::new(Challenges::default()),
            running: Mutex::new(Vec::new()),
            stop: CancellationToken::new(),
        }
    }

    /// The open challenges (the plain listeners answer HTTP-01 from them).
    pub fn challenges(&self) -> Arc<Challenges> {
        self.challenges.clone()
    }

    /// The link of a listener with `cfg` to its certificate, starting the
    /// task that keeps it the first time this table is seen. Must be
    /// called inside a tokio runtime, which runs the task.
    pub fn link(&self, cfg: &AcmeConfig) -> AcmeLink {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let key = key_of(cfg);
        let cert = match running.iter().find(|(k, _)| *k == key) {
            Some((_, r)) => r.cert.clone(),
            None => {
                let cert = Arc::new(ManagedCert::new(cfg.names.clone()));
                let stop = self.stop.child_token();
                tokio::spawn(task::run(
                    cfg.clone(),
                    cert.clone(),
                    self.challenges.clone(),
                    stop.clone(),
                ));
                running.push((
                    key,
                    Running {
                        cert: cert.clone(),
                        stop,
                    },
                ));
                cert
            }
        };
        AcmeLink {
            cert,
            challenges: self.challenges.clone(),
        }
    }

    /// Stops the tasks of tables that `keep` no longer has (after a
    /// reload).
    pub fn retain<'a>(&self, keep: impl IntoIterator<Item = &'a AcmeConfig>) {
        let keep: Vec<AcmeConfig> = keep.into_iter().map(key_of).collect();
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|(k, r)| {
            let kept = keep.contains(k);
            if !kept {
                tracing::info!(names = ?k.names, "ACME: no longer configured, stopped");
                r.stop.cancel();
            }
            kept
        });
    }

    /// Stops every task (the server is stopping).
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(state: &std::path::Path, origin: &str, names: &[&str]) -> AcmeConfig {
        AcmeConfig {
            names: names.iter().map(|n| n.to_string()).collect(),
            // Nothing listens on port 1: each order fails and backs off.
            directory: "https://127.0.0.1:1/dir".into(),
            email: None,
            challenge: Default::default(),
            directory_ca: None,
            state: state.to_owned(),
            timeout: std::time::Duration::from_secs(300),
            origin: origin.into(),
        }
    }

    #[tokio::test]
    async fn a_reload_keeps_a_table_s_task_and_stops_a_dropped_one() {
        let dir = tempfile::tempdir().unwrap();
        let m = Manager::new();
        let a = m.link(&table(dir.path(), "tern.toml:3", &["a.test"]));
        // The same table, moved in the file: the same task and certificate.
        let again = m.link(&table(dir.path(), "tern.toml:9", &["a.test"]));
        assert!(Arc::ptr_eq(&a.cert, &again.cert));
        let b = m.link(&table(dir.path(), "tern.toml:5", &["b.test"]));
        assert!(!Arc::ptr_eq(&a.cert, &b.cert));
        let stops = |m: &Manager| {
            m.running
                .lock()
                .unwrap()
                .iter()
                .map(|(_, r)| r.stop.clone())
                .collect::<Vec<_>>()
        };
        let before = stops(&m);
        assert_eq!(before.len(), 2);
        m.retain([&table(dir.path(), "tern.toml:3", &["b.test"])]);
        assert!(before[0].is_cancelled() && !before[1].is_cancelled());
        assert_eq!(stops(&m).len(), 1);
        m.stop();
        assert!(before[1].is_cancelled());
    }
}
