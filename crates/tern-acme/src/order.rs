//! One order, from the account to the certificate: the account loaded from
//! the state directory or created once, the order placed, each
//! authorization's challenge opened (HTTP-01 token or TLS-ALPN-01
//! certificate in the shared [`Challenges`]) and marked ready, the order
//! finalized with a CSR for a fresh ECDSA P-256 key, the chain fetched.
//! The opened challenges are closed however the order ends.

use std::sync::Arc;
use std::time::Duration;

use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, CertificateIdentifier, ChallengeType,
    Identifier, NewAccount, NewOrder, OrderStatus, RetryPolicy,
};
use rcgen::{CertificateParams, CustomExtension, DistinguishedName, KeyPair};
use tern_config::{AcmeChallenge, AcmeConfig};
use tern_tls::Challenges;

use crate::state;
use crate::Error;

/// How long the CA may take to validate, and then to issue.
const POLL: RetryPolicy = RetryPolicy::new()
    .initial_delay(Duration::from_millis(250))
    .backoff(1.5)
    .timeout(Duration::from_secs(90));

/// The account on the CA of `cfg`: from the state directory, or created
/// (and kept there) the first time.
pub(crate) async fn account(cfg: &AcmeConfig) -> Result<Account, Error> {
    let at = || cfg.directory.clone();
    let acme = |source| Error::Acme { at: at(), source };
    let builder = || match &cfg.directory_ca {
        Some(ca) => Account::builder_with_root(ca),
        None => Account::builder(),
    };
    let file = state::account_file(&cfg.state, &cfg.directory);
    let kept = {
        let file = file.clone();
        blocking(move || state::read_optional(&file)).await?
    };
    if let Some(json) = kept {
        let creds: AccountCredentials =
            serde_json::from_slice(&json).map_err(|e| Error::Order {
                at: at(),
                reason: format!("account `{}`: {e}", file.display()),
            })?;
        return builder()
            .map_err(acme)?
            .from_credentials(creds)
            .await
            .map_err(acme);
    }
    let contact = cfg.email.as_ref().map(|e| format!("mailto:{e}"));
    let contact: Vec<&str> = contact.iter().map(String::as_str).collect();
    let (account, creds) = builder()
        .map_err(acme)?
        .create(
            &NewAccount {
                contact: &contact,
                terms_of_service_agreed: true,
                only_return_existing: false,
            },
            cfg.directory.clone(),
            None,
        )
        .await
        .map_err(acme)?;
    let json = serde_json::to_vec_pretty(&creds).map_err(|e| Error::Order {
        at: at(),
        reason: format!("account credentials: {e}"),
    })?;
    blocking(move || state::write_atomic(&file, &json, 0o600)).await?;
    tracing::info!(directory = %cfg.directory, id = account.id(), "ACME: account created");
    Ok(account)
}

/// A certificate issued: the chain (PEM) and its key (PEM).
#[derive(Debug)]
pub(crate) struct Issued {
    pub(crate) chain: String,
    pub(crate) key: String,
}

/// Orders a certificate for `cfg.names`; `replaces` names the certificate
/// it renews (ARI) when the CA takes that.
pub(crate) async fn issue(
    account: &Account,
    cfg: &AcmeConfig,
    challenges: &Arc<Challenges>,
    replaces: Option<CertificateIdentifier<'static>>,
) -> Result<Issued, Error> {
    let identifiers: Vec<Identifier> = cfg.names.iter().cloned().map(Identifier::Dns).collect();
    let mut new = NewOrder::new(&identifiers);
    if let Some(r) = replaces {
        new = new.replaces(r);
    }
    let mut order = account
        .new_order(&new)
        .await
        .map_err(|source| Error::Acme {
            at: cfg.directory.clone(),
            source,
        })?;
    let url = order.url().to_owned();
    let acme = |source| Error::Acme {
        at: url.clone(),
        source,
    };
    let fail = |reason: String| Error::Order {
        at: url.clone(),
        reason,
    };
    let mut opened = Opened {
        challenges: challenges.clone(),
        http: Vec::new(),
        alpn: Vec::new(),
    };
    let kind = match cfg.challenge {
        AcmeChallenge::Http01 => ChallengeType::Http01,
        AcmeChallenge::TlsAlpn01 => ChallengeType::TlsAlpn01,
    };
    let mut authorizations = order.authorizations();
    while let Some(authz) = authorizations.next().await {
        let mut authz = authz.map_err(acme)?;
        match authz.status {
            AuthorizationStatus::Pending => {}
            AuthorizationStatus::Valid => continue,
            other => return Err(fail(format!("authorization {}: {other:?}", authz.url()))),
        }
        let mut challenge = authz
            .challenge(kind.clone())
            .ok_or_else(|| fail(format!("the CA offers no {kind:?} challenge")))?;
        let ka = challenge.key_authorization();
        match cfg.challenge {
            AcmeChallenge::Http01 => {
                challenges.open_http01(&challenge.token, ka.as_str());
                opened.http.push(challenge.token.clone());
            }
            AcmeChallenge::TlsAlpn01 => {
                let name = match &challenge.identifier().identifier {
                    Identifier::Dns(n) => n.clone(),
                    other => return Err(fail(format!("identifier {other:?} is not a DNS name"))),
                };
                let cert = alpn_certificate(&name, ka.digest().as_ref()).map_err(fail)?;
                challenges.open_alpn01(&name, cert);
                opened.alpn.push(name);
            }
        }
        challenge.set_ready().await.map_err(acme)?;
    }
    let status = order.poll_ready(&POLL).await.map_err(acme)?;
    if status != OrderStatus::Ready {
        return Err(fail(format!("the order is {status:?}, not ready")));
    }
    let key = KeyPair::generate().map_err(|e| fail(format!("key: {e}")))?;
    let mut params =
        CertificateParams::new(cfg.names.clone()).map_err(|e| fail(format!("CSR: {e}")))?;
    params.distinguished_name = DistinguishedName::new();
    let csr = params
        .serialize_request(&key)
        .map_err(|e| fail(format!("CSR: {e}")))?;
    order.finalize_csr(csr.der()).await.map_err(acme)?;
    let chain = order.poll_certificate(&POLL).await.map_err(acme)?;
    drop(opened);
    Ok(Issued {
        chain,
        key: key.serialize_pem(),
    })
}

/// A TLS-ALPN-01 certificate for `name` (RFC 8737 §3): self-signed, with
/// the critical acmeIdentifier extension holding the SHA-256 digest of the
/// key authorization.
fn alpn_certificate(
    name: &str,
    digest: &[u8],
) -> Result<Arc<tern_tls::rustls::sign::CertifiedKey>, String> {
    let key = KeyPair::generate().map_err(|e| format!("challenge key: {e}"))?;
    let mut params = CertificateParams::new(vec![name.to_owned()])
        .map_err(|e| format!("challenge certificate: {e}"))?;
    params.custom_extensions = vec![CustomExtension::new_acme_identifier(digest)];
    let cert = params
        .self_signed(&key)
        .map_err(|e| format!("challenge certificate: {e}"))?;
    tern_tls::certified_key(cert.pem().as_bytes(), key.serialize_pem().as_bytes())
}

/// The challenges an order opened, closed when it ends.
struct Opened {
    challenges: Arc<Challenges>,
    http: Vec<String>,
    alpn: Vec<String>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        for t in &self.http {
            self.challenges.close_http01(t);
        }
        for n in &self.alpn {
            self.challenges.close_alpn01(n);
        }
    }
}

/// Runs `f` on the blocking pool (file I/O off the runtime's thread).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}
