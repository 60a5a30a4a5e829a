//! tern's server: listeners, connections (HTTP/1.1 on tern's own loop and
//! hyper, HTTP/2 on hyper), routing by Host and path, limits and timeouts,
//! access records, atomic reload and graceful shutdown. It knows no
//! concrete handler: the `tern` binary builds a [`Site`] of
//! `Arc<dyn Handler>`s and hands it over.
//!
//! A request's way: `listen` (accept, TCP_NODELAY, TCP_DEFER_ACCEPT by
//! load) -> `lazy` (the socket joins the reactor only when it must wait)
//! -> `conn` (timeouts; `h1`, tern's HTTP/1 loop, or hyper) -> `service`
//! (the phases, in `phase/`: admit, rewrite, route, authorize, the
//! handler, respond) -> `body` (byte count; at its end the log phase) ->
//! `sendfile` (a large cached body from its file, on `h1`).
#![deny(unsafe_code)]

/// `AsyncWrite` for a reader-side layer `$t<T>` that passes every write
/// to its `io` field unchanged (the layers below hyper judge what they
/// read; what hyper writes goes down as it is). `write_through!($t,
/// shutdown, noted)`: the same, but `poll_shutdown` is the layer's own
/// `shutdown`, and each write's outcome passes its `noted` on the way up
/// (with the task's context: a layer may time a write that waits).
/// `write_through!($t, noted)`: `noted`, with the shutdown passed through.
macro_rules! write_through {
    ($t:ident) => {
        write_through!($t, write_passed);

        impl<T> $t<T> {
            #[inline(always)]
            fn write_passed(
                &mut self,
                _cx: &mut std::task::Context<'_>,
                written: std::task::Poll<std::io::Result<usize>>,
            ) -> std::task::Poll<std::io::Result<usize>> {
                written
            }
        }
    };
    ($t:ident, $noted:ident) => {
        write_through!($t, poll_shutdown_through, $noted);

        impl<T: tokio::io::AsyncWrite + Unpin> $t<T> {
            fn poll_shutdown_through(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
            }
        }
    };
    ($t:ident, $shutdown:ident, $noted:ident) => {
        impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for $t<T> {
            fn poll_write(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let written = std::pin::Pin::new(&mut self.io).poll_write(cx, buf);
                self.$noted(cx, written)
            }

            fn poll_write_vectored(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let written = std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
                self.$noted(cx, written)
            }

            fn is_write_vectored(&self) -> bool {
                self.io.is_write_vectored()
            }

            fn poll_flush(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.io).poll_flush(cx)
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                self.$shutdown(cx)
            }
        }

        impl<T: crate::sendfile::SendFile + Unpin> crate::sendfile::SendFile for $t<T> {
            const SENDS_FILES: bool = T::SENDS_FILES;

            fn poll_write_more(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                let written = std::pin::Pin::new(&mut self.io).poll_write_more(cx, buf);
                self.$noted(cx, written)
            }

            fn poll_send_file(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                file: &std::fs::File,
                offset: &mut u64,
                len: usize,
            ) -> std::task::Poll<std::io::Result<usize>> {
                let written =
                    std::pin::Pin::new(&mut self.io).poll_send_file(cx, file, offset, len);
                self.$noted(cx, written)
            }

            fn may_have_unread(&self, ask: bool) -> bool {
                self.io.may_have_unread(ask)
            }

            fn hold_tail(&self) {
                self.io.hold_tail()
            }
        }
    };
}

mod balance;
mod body;
mod clock;
mod conn;
mod explain;
mod h1;
mod h2;
mod hpack_guard;
mod lazy;
mod listen;
mod phase;
mod plaintext;
mod report;
mod rewind;
mod route;
mod sendfile;
mod server;
mod service;
mod site;
mod slot;
mod timeout;
mod tls;
mod version;

pub use body::ServerBody;
pub use explain::Explanation;
pub use listen::{BindError, BoundListener};
pub use phase::authorize::Access;
pub use phase::log::Sinks;
pub use phase::respond::{HeaderRules, RuleError};
pub use phase::rewrite::Rewrite;
pub use phase::{Flow, SiteRules};
pub use route::{Match, Router, SiteRoutes, Target};
pub use server::{Server, ServerHandle};
pub use site::{Http01, Site};
