//! Stub: the FastCGI client connection (filled in by the FastCGI transport work).
