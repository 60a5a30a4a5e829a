//! CGIplus over pipes: WASD's persistent scripts on Linux. A script in any
//! language becomes persistent by looping: it reads a request's
//! variables and body from stdin, writes an ordinary CGI response to
//! stdout, then the end-of-response sentinel tern gave it in CGIPLUSEOF,
//! and waits for the next request. `docs/cgiplus.md` is the protocol's
//! specification, written for script authors; this is tern's side.
//!
//! # Pieces
//!
//! - [`Sentinels`]: the per-process CGIPLUSEOF, CGIPLUSESC and CGIPLUSEOT,
//!   random, for the worker's environment ([`Sentinels::env`]).
//! - [`Pipes`]: an idle worker as its pool keeps it: the two pipe ends as
//!   plain non-blocking descriptors (the pool is shared by every worker
//!   thread's runtime, so nothing in it is tied to one), its sentinels,
//!   its [`Mode`], and whether a newline after its last sentinel is still
//!   to come.
//! - [`start`]: one request. It wraps the pipes for the current runtime,
//!   writes the variables (and a body in memory) in one write, and
//!   returns a [`CgiplusUpstream`] for the rest of the body and a
//!   [`CgiplusDownstream`] for the response, which implement
//!   [`Upstream`](crate::persist::Upstream) and
//!   [`Downstream`](crate::persist::Downstream).
//! - [`reunite`]: after [`Event::End`](crate::persist::Event::End), the
//!   two halves back into [`Pipes`] for the pool, or the reason the worker
//!   cannot take another request ([`NotReusable`]).
//!
//! # Framing decisions
//!
//! - Record mode cannot carry a value with CR or LF (a decoded
//!   `PATH_INFO` with `%0A`): such a request is refused
//!   ([`Refusal::LineBreak`], a 400) rather than escaped, and the worker
//!   stays usable. A struct-mode worker gets it as it is.
//! - Struct-mode lengths are `u32` little-endian: a header value (a big
//!   Cookie) can pass 64 KiB, which WASD's `u16` cannot say, and every
//!   machine tern runs on is little-endian. Items carry no NUL.
//! - A `!CGIPLUS: struct` callout applies from the next request that
//!   starts after tern read it. The start line (`!` or `!!<len>`) always
//!   says which form follows, so a script never has to guess.
//! - After the sentinel a script may write one `\n` and nothing else
//!   until it has read the next request. The newline is swallowed even
//!   when it arrives late (at the start of the next response, where a
//!   CGI response can never begin with an empty line); anything else
//!   makes the worker [`NotReusable::TrailingOutput`].
//! - A script must read the whole body: unread request bytes would be
//!   taken for the next request. [`reunite`] refuses a worker that still
//!   has some in the pipe when tern takes it back
//!   ([`NotReusable::UnreadInput`]), but that is a best effort: a looping
//!   script may already be reading them as its next start line, and a
//!   buffered reader may hold them in its own buffer.
//! - A body in memory is written by [`start`]; a streamed one through
//!   [`Upstream::send`](crate::persist::Upstream::send) and counted
//!   against CONTENT_LENGTH: more, or less by
//!   [`Upstream::finish`](crate::persist::Upstream::finish), is an error
//!   and the worker is not reused.

mod encode;
mod request;
mod scan;
mod sentinel;

use std::io;
use std::os::fd::{AsFd as _, OwnedFd};

pub use encode::{Mode, Refusal};
pub use request::{start, CgiplusDownstream, CgiplusUpstream, StartBody, StartError};
pub use sentinel::Sentinels;

use scan::Scanner;

/// An idle CGIplus worker's side of its pipes, as its pool keeps it
/// between requests.
#[derive(Debug)]
pub struct Pipes {
    /// The write end of the worker's stdin.
    stdin: OwnedFd,
    /// The read end of the worker's stdout.
    stdout: OwnedFd,
    /// Boxed: it is large, and `Pipes` moves at every request.
    framing: Box<Framing>,
    mode: Mode,
    /// The last sentinel was not followed by its newline yet: a `\n`
    /// that starts the next response is the late newline, not output.
    swallow_newline: bool,
}

impl Pipes {
    /// A freshly started worker: `stdin` is the write end of its stdin
    /// pipe, `stdout` the read end of its stdout pipe (blocking or not;
    /// [`start`] makes them non-blocking), and `sentinels` what its
    /// environment was given. It starts in [`Mode::Record`].
    pub fn new(stdin: OwnedFd, stdout: OwnedFd, sentinels: Sentinels) -> Pipes {
        Pipes {
            stdin,
            stdout,
            framing: Box::new(Framing {
                scanner: Scanner::new(&sentinels),
                sentinels,
            }),
            mode: Mode::Record,
            swallow_newline: false,
        }
    }

    /// How the next request's variables will be sent.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The worker's sentinels.
    pub fn sentinels(&self) -> &Sentinels {
        &self.framing.sentinels
    }
}

/// A worker's sentinels, and the same ready to search for.
#[derive(Debug)]
struct Framing {
    scanner: Scanner,
    sentinels: Sentinels,
}

/// Why a worker cannot carry another request after this one: its pool
/// kills and replaces it. Log the reason.
#[derive(Debug, thiserror::Error)]
pub enum NotReusable {
    /// The response did not end with the sentinel (the worker broke, or
    /// the caller stopped reading before [`Event::End`](crate::persist::Event::End)).
    #[error("the response did not end with the sentinel")]
    NotEnded,
    /// The body was not all sent, or a send failed or was cancelled.
    #[error("the request body was not completely sent")]
    BodyUnsent,
    /// The worker wrote bytes other than one newline after its sentinel.
    #[error("the script wrote {0} bytes after its end-of-response sentinel")]
    TrailingOutput(usize),
    /// The worker left part of its request unread in its stdin (a body it
    /// did not read), which it would take for the next request.
    #[error("the script left {0} bytes of its request unread")]
    UnreadInput(u64),
    /// Taking the pipes back from the runtime, or asking the pipe how much
    /// it holds, failed.
    #[error("taking back the pipes: {0}")]
    Io(#[from] io::Error),
}

/// After [`Event::End`](crate::persist::Event::End): the worker's pipes
/// back as plain descriptors, in step for the next request (with the mode
/// its callouts asked for), or why it cannot take one.
pub fn reunite(up: CgiplusUpstream, down: CgiplusDownstream) -> Result<Pipes, NotReusable> {
    let up = up.into_finished().ok_or(NotReusable::BodyUnsent)?;
    let down = down.into_ended()?;
    let stdin = up.into_nonblocking_fd()?;
    let unread = rustix::io::ioctl_fionread(stdin.as_fd()).map_err(io::Error::from)?;
    if unread > 0 {
        return Err(NotReusable::UnreadInput(unread));
    }
    Ok(Pipes {
        stdin,
        stdout: down.rx.into_nonblocking_fd()?,
        framing: down.framing,
        mode: down.next_mode,
        swallow_newline: down.swallow_newline,
    })
}
