//! A connection's place under the connection limits: one of
//! `max_connections` (a semaphore permit) and, with
//! `max_connections_per_client`, one of its client address's.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tern_handler::ConnInfo;
use tern_rules::limit::{ConnGuard, ConnZone};
use tokio::sync::OwnedSemaphorePermit;

/// Held for as long as the connection is open (it moves with the
/// connection between workers); dropping it frees both places.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    _client: Option<ConnGuard>,
}

impl Slot {
    pub(crate) fn new(permit: OwnedSemaphorePermit, client: Option<ConnGuard>) -> Slot {
        Slot {
            _permit: permit,
            _client: client,
        }
    }
}

/// `max_connections_per_client` (nginx's `limit_conn` keyed by address).
#[derive(Debug)]
pub(crate) struct PerClient {
    zone: Arc<ConnZone>,
    /// Refusals not yet logged, and when the last line was written.
    refused: Mutex<(u64, Option<Instant>)>,
}

/// At most one log line per this long, with the count it stands for.
const LOG_EVERY: Duration = Duration::from_secs(1);

impl PerClient {
    /// The limit (`None` for 0: no limit), remembering up to `clients`
    /// addresses (each with a connection open).
    pub(crate) fn new(max: usize, clients: usize) -> Option<PerClient> {
        (max > 0).then(|| PerClient {
            zone: ConnZone::new(u32::try_from(max).unwrap_or(u32::MAX), clients),
            refused: Mutex::new((0, None)),
        })
    }

    /// A place for one more connection of `info`'s client (a Unix
    /// socket's clients have no address, and no limit); `Err` when the
    /// client has its limit, logged at most once a second.
    pub(crate) fn admit(&self, info: &ConnInfo) -> Result<Option<ConnGuard>, ()> {
        let Some(addr) = info.peer.socket_addr() else {
            return Ok(None);
        };
        let key = match addr.ip().to_canonical() {
            std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
            std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
        };
        if let Some(guard) = self.zone.acquire(&key) {
            return Ok(Some(guard));
        }
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.0 += 1;
        let now = Instant::now();
        if refused
            .1
            .is_none_or(|at| now.duration_since(at) >= LOG_EVERY)
        {
            refused.1 = Some(now);
            let n = std::mem::take(&mut refused.0);
            tracing::warn!(
                peer = %info.peer,
                "connection closed: more than {} connections from this client (max_connections_per_client){}",
                self.zone.max_per_key(),
                if n > 1 { format!("; {n} closed since the last line") } else { String::new() }
            );
        }
        Err(())
    }
}
