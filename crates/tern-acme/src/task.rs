//! The life of one set of names: serve what the state directory holds,
//! then order whenever there is nothing or renewal is due, retrying after
//! errors with a backoff, until stopped.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use instant_acme::{Account, CertificateIdentifier};
use tern_config::AcmeConfig;
use tern_tls::rustls::sign::CertifiedKey;
use tern_tls::{Challenges, ManagedCert};
use tokio_util::sync::CancellationToken;

use crate::order::{self, blocking};
use crate::schedule::{self, Backoff};
use crate::state::CertFiles;
use crate::Error;

/// How often ARI is asked again at most, whatever the CA's Retry-After.
const ARI_POLL_MIN: Duration = Duration::from_secs(3600);
/// The longest sleep before the task looks at its certificate again.
const RECHECK: Duration = Duration::from_secs(3600);

/// The certificate serving now, and what renewal needs to know of it.
struct Held {
    not_before: SystemTime,
    not_after: SystemTime,
    /// Its identifier for ARI (None without an Authority Key Identifier).
    id: Option<CertificateIdentifier<'static>>,
}

impl Held {
    fn of(key: &CertifiedKey) -> Result<Held, String> {
        let der = key.cert.first().ok_or("an empty chain")?;
        let (_, leaf) = x509_parser::parse_x509_certificate(der).map_err(|e| e.to_string())?;
        let at = |t: x509_parser::time::ASN1Time| {
            SystemTime::UNIX_EPOCH + Duration::from_secs(t.timestamp().max(0) as u64)
        };
        let v = leaf.validity();
        Ok(Held {
            not_before: at(v.not_before),
            not_after: at(v.not_after),
            id: CertificateIdentifier::try_from(der).ok(),
        })
    }
}

/// Runs until `stop` (cancel safe at every await: nothing is half done
/// that the next start would not redo).
pub(crate) async fn run(
    cfg: AcmeConfig,
    cert: Arc<ManagedCert>,
    challenges: Arc<Challenges>,
    stop: CancellationToken,
) {
    let names = cfg.names.join(", ");
    let files = CertFiles::new(&cfg.state, &cfg.names);
    let mut held = match kept(&files).await {
        Ok(Some((key, h))) => {
            tracing::info!(names, file = %files.cert().display(), "ACME: serving the kept certificate");
            cert.install(key);
            Some(h)
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(
                names,
                "ACME: the kept certificate is not used ({e}); ordering one"
            );
            None
        }
    };
    let mut account: Option<Account> = None;
    let mut backoff = Backoff::default();
    let mut retry_at: Option<SystemTime> = None;
    loop {
        let now = SystemTime::now();
        let mut due = match &held {
            None => now,
            Some(h) => schedule::renew_at(h.not_before, h.not_after),
        };
        let mut replaces = None;
        let mut wake = due;
        if let Some(h) = &held {
            let asked = tokio::time::timeout(cfg.timeout, renewal_info(&cfg, &mut account, h));
            let answer = tokio::select! {
                r = asked => r.unwrap_or_else(|_| Err("timed out".into())),
                () = stop.cancelled() => return,
            };
            match answer {
                Ok((window, retry_after, id)) => {
                    due = window;
                    replaces = Some(id);
                    wake = due.min(now + retry_after.max(ARI_POLL_MIN));
                }
                Err(e) => tracing::debug!(names, "ACME: no renewal information: {e}"),
            }
        }
        // Look again at least this often: a long sleep on the monotonic
        // clock drifts from the wall clock certificates are dated by.
        wake = wake.min(now + RECHECK);
        if let Some(r) = retry_at {
            wake = wake.max(r);
            due = due.max(r);
            // A CA may refuse to replace a certificate (already replaced,
            // say): after a failure, order without naming it.
            replaces = None;
        }
        let wait = wake.duration_since(now).unwrap_or(Duration::ZERO);
        if !wait.is_zero() {
            tracing::debug!(names, ?wait, "ACME: next look at the certificate");
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stop.cancelled() => return,
        }
        if SystemTime::now() < due {
            continue; // a look before renewal is due (ARI, or RECHECK)
        }
        // A CA that hangs is retried like one that refuses.
        let attempt = tokio::time::timeout(
            cfg.timeout,
            attempt(&cfg, &mut account, &challenges, replaces),
        );
        let result = tokio::select! {
            r = attempt => r.unwrap_or_else(|_| Err(Error::Order {
                at: cfg.directory.clone(),
                reason: format!("no certificate within {:?}", cfg.timeout),
            })),
            () = stop.cancelled() => return,
        };
        let result = result.and_then(|issued| {
            let key = tern_tls::certified_key(issued.chain.as_bytes(), issued.key.as_bytes())
                .map_err(|reason| Error::Order {
                    at: cfg.directory.clone(),
                    reason: format!("the issued certificate: {reason}"),
                })?;
            let h = Held::of(&key).map_err(|reason| Error::Order {
                at: cfg.directory.clone(),
                reason: format!("the issued certificate: {reason}"),
            })?;
            Ok((issued, key, h))
        });
        match result {
            Ok((issued, key, h)) => {
                let f = files.clone();
                if let Err(e) =
                    blocking(move || f.write(issued.chain.as_bytes(), issued.key.as_bytes())).await
                {
                    tracing::error!(
                        names,
                        "ACME: the new certificate is served but not kept: {e}"
                    );
                }
                cert.install(key);
                let until = humantime(h.not_after);
                tracing::info!(names, until, "ACME: new certificate issued and serving");
                held = Some(h);
                backoff.reset();
                retry_at = None;
            }
            Err(e) => {
                let wait = backoff.next();
                let serving = if cert.current().is_some() {
                    "the current certificate keeps serving"
                } else {
                    "none issued yet (a configured certificate for these names serves meanwhile)"
                };
                tracing::error!(
                    names,
                    "ACME: {e}; retrying in {}s, {serving}",
                    wait.as_secs()
                );
                retry_at = Some(SystemTime::now() + wait);
            }
        }
    }
}

/// When the CA suggests renewing `held` (ARI, RFC 9773): a time in its
/// window, when to ask again, and the identifier an order names as
/// replaced. The account is loaded if need be (after a restart). Cancel
/// safe.
async fn renewal_info(
    cfg: &AcmeConfig,
    account: &mut Option<Account>,
    held: &Held,
) -> Result<(SystemTime, Duration, CertificateIdentifier<'static>), Box<dyn std::error::Error>> {
    let id = held.id.clone().ok_or("no Authority Key Identifier")?;
    let acct = match account {
        Some(a) => a,
        None => account.insert(order::account(cfg).await?),
    };
    let (info, retry_after) = acct.renewal_info(&id).await?;
    let at = schedule::in_window(
        info.suggested_window.start.into(),
        info.suggested_window.end.into(),
    );
    Ok((at, retry_after, id))
}

/// One attempt: the account (once), then an order. Cancel safe: dropped
/// midway, it closes the challenges it opened and leaves the order to
/// expire at the CA.
async fn attempt(
    cfg: &AcmeConfig,
    account: &mut Option<Account>,
    challenges: &Arc<Challenges>,
    replaces: Option<CertificateIdentifier<'static>>,
) -> Result<order::Issued, Error> {
    let acct = match account {
        Some(a) => a,
        None => account.insert(order::account(cfg).await?),
    };
    order::issue(acct, cfg, challenges, replaces).await
}

/// The pair kept in the state directory, checked, if there is one.
async fn kept(files: &CertFiles) -> Result<Option<(Arc<CertifiedKey>, Held)>, String> {
    let f = files.clone();
    let Some(pair) = blocking(move || f.read())
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let key = tern_tls::certified_key(&pair.chain, &pair.key)?;
    let held = Held::of(&key)?;
    Ok(Some((key, held)))
}

/// Seconds since the epoch, for the log (tern writes no calendar dates
/// of its own).
fn humantime(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
