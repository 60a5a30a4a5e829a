//! The response body as the server sends it: the handler's body plus the
//! request's log phase, which runs when the body finishes or is dropped
//! (client gone).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tern_handler::{FileRegion, ResponseBody, SharedFields};

use crate::phase::log::LogPhase;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A response body with its request's log phase.
#[derive(Debug)]
pub struct ServerBody {
    inner: ResponseBody,
    log: Option<LogPhase>,
}

impl ServerBody {
    pub(crate) fn new(inner: ResponseBody, log: LogPhase) -> Self {
        ServerBody {
            inner,
            log: Some(log),
        }
    }

    /// The file region that holds the whole body, for a connection that
    /// sends it from the file (see `sendfile.rs`); then [`ServerBody::sent`]
    /// says how much went.
    pub(crate) fn take_file(&mut self) -> Option<FileRegion> {
        self.inner.take_file()
    }

    /// The response's shared fields (`tern_handler::SharedFields`), for
    /// the connection to write or put in the map.
    pub(crate) fn take_fields(&mut self) -> Option<Arc<SharedFields>> {
        self.inner.take_fields()
    }

    /// `bytes` of the body went out some other way than `poll_frame`
    /// (from its file), and that is all that will: the request is over.
    pub(crate) fn sent(&mut self, bytes: u64) {
        if let Some(mut log) = self.log.take() {
            log.sent(bytes as usize);
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
                if let (Some(d), Some(log)) = (f.data_ref(), this.log.as_mut()) {
                    log.sent(d.len());
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => {
                // Finished (or failed): the request is over now, not when
                // hyper gets around to dropping the body.
                this.log = None;
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
