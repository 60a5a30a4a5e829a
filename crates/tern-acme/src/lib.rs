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

use std::collections::HashMap;
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

/// What identifies one task: the configuration without where it is
/// written (moving the table in the file is no reason to order again).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    names: Vec<String>,
    directory: String,
    email: Option<String>,
    challenge: String,
    directory_ca: Option<std::path::PathBuf>,
    state: std::path::PathBuf,
}

impl Key {
    fn of(cfg: &AcmeConfig) -> Key {
        Key {
            names: cfg.names.clone(),
            directory: cfg.directory.clone(),
            email: cfg.email.clone(),
            challenge: format!("{:?}", cfg.challenge),
            directory_ca: cfg.directory_ca.clone(),
            state: cfg.state.clone(),
        }
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
    running: Mutex<HashMap<Key, Running>>,
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
            running: Mutex::new(HashMap::new()),
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
        let key = Key::of(cfg);
        let cert = match running.get(&key) {
            Some(r) => r.cert.clone(),
            None => {
                let cert = Arc::new(ManagedCert::new(cfg.names.clone()));
                let stop = self.stop.child_token();
                tokio::spawn(task::run(
                    cfg.clone(),
                    cert.clone(),
                    self.challenges.clone(),
                    stop.clone(),
                ));
                running.insert(
                    key,
                    Running {
                        cert: cert.clone(),
                        stop,
                    },
                );
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
        let keep: Vec<Key> = keep.into_iter().map(Key::of).collect();
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|k, r| {
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
