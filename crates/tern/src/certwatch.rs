//! Certificates noticed when they change on disk, without a SIGHUP: the
//! directories holding the configured certificate and key files are
//! watched (inotify), and a change to one of those files, or to a `..`
//! entry beside them (Kubernetes swaps a secret's files by renaming its
//! `..data` symlink), reloads the configuration as SIGHUP does, once the
//! directory has been quiet for [`QUIET`]. Renewal tools write a
//! certificate and its key one after the other; the pause lets both land.
//! A pair that does not load is refused by the reload like any other
//! error, and the running certificates keep serving.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};
use tern_config::Config;
use tokio::sync::mpsc;

/// How long the watched directories stay quiet before a reload.
const QUIET: Duration = Duration::from_millis(500);

/// The watch over one configuration's certificate files.
pub(crate) struct CertWatch {
    /// Kept alive for its watch; dropped with it.
    _watcher: Option<RecommendedWatcher>,
    events: mpsc::UnboundedReceiver<()>,
    /// A change is known already (it came to the watch this one
    /// replaced): [`CertWatch::changed`] waits only for the quiet.
    due: bool,
}

impl CertWatch {
    /// Watches the certificate, key and ticket key files `cfg` names. With
    /// none, or if watching fails (logged), [`CertWatch::changed`] never
    /// returns. (The local CA's files are tern's own, not watched.)
    pub(crate) fn new(cfg: &Config) -> CertWatch {
        let files: BTreeSet<PathBuf> = cfg
            .listeners
            .iter()
            .filter_map(|l| l.tls.as_ref())
            .flat_map(|t| {
                let pairs = t
                    .certificates
                    .iter()
                    .flat_map(|c| [c.cert.clone(), c.key.clone()]);
                let tickets = t.ticket_keys.iter().flat_map(|k| k.files.iter().cloned());
                pairs.chain(tickets)
            })
            .collect();
        let (tx, events) = mpsc::unbounded_channel();
        let watcher = (!files.is_empty()).then(|| watch(files, tx)).flatten();
        CertWatch::of(watcher, events)
    }

    /// A watch whose changes come on `events`, kept alive by `watcher`.
    fn of(watcher: Option<RecommendedWatcher>, events: mpsc::UnboundedReceiver<()>) -> CertWatch {
        CertWatch {
            _watcher: watcher,
            events,
            due: false,
        }
    }

    /// This watch in place of `old`, taking over a change `old` saw
    /// since its [`CertWatch::changed`] last returned: made while `old`
    /// still watched, so no change falls between the two.
    pub(crate) fn after(mut self, mut old: CertWatch) -> CertWatch {
        self.due = old.due || old.events.try_recv().is_ok();
        self
    }

    /// Returns once the certificate files changed and have been quiet
    /// for [`QUIET`].
    ///
    /// # Cancel safety
    /// Cancel safe: a change seen stays due until this returns, so a
    /// signal that wins the caller's `select!` during the quiet (SIGUSR1
    /// reopening the log) does not make it forgotten.
    pub(crate) async fn changed(&mut self) {
        if !self.due {
            if self.events.recv().await.is_none() {
                return std::future::pending().await;
            }
            self.due = true;
        }
        while let Ok(Some(())) = tokio::time::timeout(QUIET, self.events.recv()).await {}
        self.due = false;
    }
}

/// Watches the directories holding `files`, sending on `tx` when a
/// change concerns one of them; `None` (logged) if watching fails.
fn watch(files: BTreeSet<PathBuf>, tx: mpsc::UnboundedSender<()>) -> Option<RecommendedWatcher> {
    let dirs: BTreeSet<PathBuf> = files
        .iter()
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect();
    let handler = move |event: notify::Result<notify::Event>| {
        let Ok(event) = event else { return };
        if event.paths.iter().any(|p| concerns(&files, p)) {
            let _ = tx.send(());
        }
    };
    let watcher = notify::recommended_watcher(handler).and_then(|mut w| {
        for d in &dirs {
            w.watch(d, RecursiveMode::NonRecursive)?;
        }
        Ok(w)
    });
    watcher
        .inspect_err(|e| {
            tracing::warn!("certificate files are not watched ({e}); SIGHUP reloads them")
        })
        .ok()
}

/// Whether a change at `path` may change one of `files`: the file itself,
/// or a `..` entry in its directory (an atomic swap of a mounted secret).
fn concerns(files: &BTreeSet<PathBuf>, path: &Path) -> bool {
    if files.contains(path) {
        return true;
    }
    let swapped = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".."));
    swapped && files.iter().any(|f| f.parent() == path.parent())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch fed by the test instead of inotify.
    fn fed() -> (mpsc::UnboundedSender<()>, CertWatch) {
        let (tx, events) = mpsc::unbounded_channel();
        (tx, CertWatch::of(None, events))
    }

    #[tokio::test]
    async fn a_change_outlives_a_cancelled_wait_and_a_replaced_watch() {
        use tokio::time::timeout;
        let long = Duration::from_secs(10);
        let (tx, mut w) = fed();
        tx.send(()).unwrap();
        // A signal wins the select while the watch waits for the quiet.
        assert!(timeout(QUIET / 5, w.changed()).await.is_err());
        timeout(long, w.changed())
            .await
            .expect("the change is still due after the cancelled wait");
        // A change while the reload read the files, then the new
        // configuration's watch in place of this one.
        tx.send(()).unwrap();
        let (_fresh_tx, fresh) = fed();
        let mut w = fresh.after(w);
        timeout(long, w.changed())
            .await
            .expect("the new watch takes the change over");
        assert!(
            timeout(QUIET * 2, w.changed()).await.is_err(),
            "and reloads once for it"
        );
    }

    #[test]
    fn only_the_files_and_a_swapped_secret_concern_the_watch() {
        let files: BTreeSet<PathBuf> = ["/etc/tls/site.pem", "/etc/tls/site.key"]
            .into_iter()
            .map(PathBuf::from)
            .collect();
        assert!(concerns(&files, Path::new("/etc/tls/site.pem")));
        assert!(concerns(&files, Path::new("/etc/tls/..data")));
        assert!(concerns(
            &files,
            Path::new("/etc/tls/..2026_11_24_05_00_00.1")
        ));
        assert!(!concerns(&files, Path::new("/etc/tls/access.log")));
        assert!(!concerns(&files, Path::new("/var/..data")));
    }
}
