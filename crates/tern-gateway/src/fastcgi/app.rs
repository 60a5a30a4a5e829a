//! Stub: a small synchronous FastCGI responder library (filled in by the FastCGI transport work).
