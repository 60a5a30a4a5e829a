//! The core's one error type: what the environment builder, the head
//! reader and admission refuse, and the status each answers with.

use tern_handler::HandlerError;

/// Why the core refused a request or a program's answer. Each variant
/// says what the client gets: [`Error::status_error`] maps it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two request header names map to the same variable (`X-A` and `X_A`
    /// both make HTTP_X_A); the request is refused (400).
    #[error("header fields `{0}` and `{1}` map to the same variable")]
    HeaderCollision(String, String),
    /// A header value starts with `() {` and the route refuses those (400).
    #[error("header `{0}` looks like a bash function definition (Shellshock)")]
    Shellshock(String),
    /// A value that cannot go into an environment (NUL) (400).
    #[error("`{0}` contains a NUL byte")]
    NulInValue(String),
    /// A name or value longer than the way to the program can say (FastCGI
    /// lengths are 31 bits) (400).
    #[error("a variable of {0} bytes is longer than the gateway can pass")]
    TooLong(usize),
    /// The program's response head was malformed (502).
    #[error("bad response head: {0}")]
    Head(#[from] HeadError),
    /// Every slot is busy and the queue is full, or the wait in it took
    /// too long (503).
    #[error("{0}")]
    Busy(&'static str),
}

/// How a program's response head was malformed: each is a 502 and a log
/// line naming the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeadError {
    /// The program's output ended before the blank line that ends the head.
    #[error("the output ended before the end of the header ({0} bytes)")]
    Truncated(usize),
    /// The head is larger than the cap.
    #[error("the header is larger than {0} bytes")]
    TooLarge(usize),
    /// The head has no fields at all.
    #[error("no header fields")]
    Empty,
    /// A line that is not `name: value`.
    #[error("line {0}: not a header field")]
    NotAField(usize),
    /// A field continued on the next line (obsolete line folding).
    #[error("line {0}: folded header line")]
    Folded(usize),
    /// A field name that is not an HTTP token.
    #[error("line {0}: bad field name")]
    BadName(usize),
    /// CR, NUL or another control character inside a value.
    #[error("line {0}: control character in the value of `{1}`")]
    BadValue(usize, String),
    /// `Status`, `Location` or `Content-Type` more than once.
    #[error("`{0}` given more than once")]
    Repeated(&'static str),
    /// `Status` is not `3DIGIT [SP reason]` in 200..=599, or an NPH
    /// status line is not `HTTP/x.y 3DIGIT [reason]`.
    #[error("bad status `{0}`")]
    BadStatus(String),
    /// `Location` is neither a local path nor an absolute URI.
    #[error("bad Location `{0}`")]
    BadLocation(String),
    /// A document without `Content-Type` (and without `Status`).
    #[error("no Content-Type")]
    NoContentType,
}

impl Error {
    /// The client-facing error for this failure.
    pub fn status_error(self) -> HandlerError {
        let reason = self.to_string();
        match self {
            Error::HeaderCollision(..)
            | Error::Shellshock(_)
            | Error::NulInValue(_)
            | Error::TooLong(_) => HandlerError::BadRequest(reason),
            Error::Head(_) => HandlerError::BadGateway(reason),
            Error::Busy(_) => HandlerError::Unavailable(reason),
        }
    }
}
