//! Stub: pool tests.
