//! Stub: the run-time engines shipped with tern (filled in by the CGIplus work).
