//! Integration tests of tern-suite: whole suite runs against a stand-in for
//! tern (a Python script that serves what the suite's config asks for) and
//! against the peers installed on this machine (skipped, as the suite skips
//! them, when they are not).

mod suite;
