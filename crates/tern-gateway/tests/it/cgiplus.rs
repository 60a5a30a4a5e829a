//! Stub: CGIplus transport tests.
