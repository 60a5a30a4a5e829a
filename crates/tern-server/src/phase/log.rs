//! The log phase: it runs once for every request, when its response ends
//! (sent whole, failed, or dropped because the client left), whatever
//! answered it, and hands what happened to the [`Sinks`]. Armed at
//! admission as a [`LogPhase`] value that travels with the response body
//! and runs when dropped, so no way out of a request skips it.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tern_accesslog::{AccessLog, AccessRecord};
use tern_handler::ConnInfo;

use crate::timeout::Activity;

/// Where finished requests go. Each sink is a field: an absent one costs
/// one branch per request. The access log today; metrics next.
#[derive(Debug, Default)]
pub struct Sinks {
    /// Where access records go, if anywhere.
    pub access_log: Option<AccessLog>,
}

/// One request's log phase, run when dropped.
#[derive(Debug)]
pub(crate) struct LogPhase {
    activity: Arc<Activity>,
    /// The response's status; 0 until one is chosen.
    status: u16,
    /// Body bytes sent.
    bytes: u64,
    access: Option<Box<AccessEntry>>,
}

/// What the access log needs beyond the status and the byte count.
#[derive(Debug)]
struct AccessEntry {
    log: AccessLog,
    record: AccessRecord,
    started: Instant,
}

impl LogPhase {
    /// Arms the log phase of `req`, admitted (its `Host` settled), on a
    /// connection whose requests in flight `activity` counts.
    pub(crate) fn arm<B>(
        sinks: &Sinks,
        activity: &Arc<Activity>,
        req: &http::Request<B>,
        conn: &ConnInfo,
        id: u64,
    ) -> Self {
        activity.begin();
        LogPhase {
            activity: activity.clone(),
            status: 0,
            bytes: 0,
            access: sinks.access_log.as_ref().map(|log| {
                Box::new(AccessEntry {
                    log: log.clone(),
                    record: record_for(req, conn, id),
                    started: Instant::now(),
                })
            }),
        }
    }

    /// The response's status, when it is chosen.
    pub(crate) fn status(&mut self, status: http::StatusCode) {
        self.status = status.as_u16();
    }

    /// The user a realm granted the request.
    pub(crate) fn user(&mut self, user: &str) {
        if let Some(e) = self.access.as_mut() {
            e.record.user = Some(user.to_owned());
        }
    }

    /// Counts body bytes sent.
    pub(crate) fn sent(&mut self, bytes: usize) {
        self.bytes += bytes as u64;
    }
}

impl Drop for LogPhase {
    fn drop(&mut self) {
        self.activity.end();
        // Dropped before a response was chosen: the client went away
        // (nginx logs this as 499).
        let status = if self.status == 0 { 499 } else { self.status };
        if let Some(mut e) = self.access.take() {
            e.record.status = status;
            e.record.bytes = self.bytes;
            e.record.duration = e.started.elapsed();
            e.log.log(e.record);
        }
    }
}

/// An access record's fields known when the request arrives.
fn record_for<B>(req: &http::Request<B>, conn: &ConnInfo, id: u64) -> AccessRecord {
    let h = req.headers();
    let text = |name: http::header::HeaderName| {
        h.get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let peer = conn.peer.socket_addr();
    AccessRecord {
        time: SystemTime::now(),
        remote: peer.map(|a| a.ip()),
        remote_port: peer.map(|a| a.port()),
        user: None,
        method: req.method().as_str().to_owned(),
        target: req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().to_string(), |p| p.as_str().to_owned()),
        protocol: match req.version() {
            http::Version::HTTP_09 => "HTTP/0.9",
            http::Version::HTTP_10 => "HTTP/1.0",
            http::Version::HTTP_2 => "HTTP/2.0",
            http::Version::HTTP_3 => "HTTP/3.0",
            _ => "HTTP/1.1",
        }
        .to_owned(),
        status: 0,
        bytes: 0,
        referer: text(http::header::REFERER),
        user_agent: text(http::header::USER_AGENT),
        host: text(http::header::HOST).or_else(|| req.uri().authority().map(|a| a.to_string())),
        duration: Default::default(),
        request_id: id,
        tls_protocol: conn.tls.as_ref().map(|t| t.protocol.into()),
        tls_cipher: conn.tls.as_ref().map(|t| t.cipher.into()),
    }
}
