//! Stub: FastCGI connection tests.
