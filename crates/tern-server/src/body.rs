//! The response body as the server sends it: the handler's body plus a guard
//! that, when the body finishes or is dropped (client gone), ends the
//! request's activity and writes its access record.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tern_accesslog::{AccessLog, AccessRecord};
use tern_handler::ResponseBody;

use crate::timeout::Activity;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What is known of a request for its access record.
#[derive(Debug)]
pub(crate) struct LogEntry {
    pub(crate) log: AccessLog,
    pub(crate) record: AccessRecord,
    pub(crate) started: Instant,
}

impl LogEntry {
    pub(crate) fn now(log: AccessLog, record: AccessRecord) -> Self {
        LogEntry {
            log,
            record,
            started: Instant::now(),
        }
    }
}

/// Ends one request when dropped.
#[derive(Debug)]
pub(crate) struct RequestGuard {
    pub(crate) activity: Arc<Activity>,
    pub(crate) log: Option<Box<LogEntry>>,
    pub(crate) bytes: u64,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.activity.end();
        if let Some(mut e) = self.log.take() {
            e.record.bytes = self.bytes;
            if e.record.status == 0 {
                // Dropped before the handler answered: the client went away
                // (nginx logs this as 499).
                e.record.status = 499;
            }
            e.record.duration = e.started.elapsed();
            e.log.log(e.record);
        }
    }
}

/// A response body with its request guard.
#[derive(Debug)]
pub struct ServerBody {
    inner: ResponseBody,
    guard: Option<RequestGuard>,
}

impl ServerBody {
    pub(crate) fn new(inner: ResponseBody, guard: RequestGuard) -> Self {
        ServerBody {
            inner,
            guard: Some(guard),
        }
    }
}

impl Body for ServerBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let res = Pin::new(&mut this.inner).poll_frame(cx);
        match &res {
            Poll::Ready(Some(Ok(f))) => {
                if let (Some(d), Some(g)) = (f.data_ref(), this.guard.as_mut()) {
                    g.bytes += d.len() as u64;
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => {
                // Finished (or failed): the request is over now, not when
                // hyper gets around to dropping the body.
                this.guard = None;
            }
            Poll::Pending => {}
        }
        res
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// An access record's fields known when the request arrives.
pub(crate) fn record_for<B>(
    req: &http::Request<B>,
    conn: &tern_handler::ConnInfo,
    id: u64,
) -> AccessRecord {
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
    }
}
