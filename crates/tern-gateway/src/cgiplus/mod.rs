//! Stub: the CGIplus transport (filled in by the CGIplus work).
