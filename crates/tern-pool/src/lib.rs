//! Stub: worker supervision (filled in by the pool work).
