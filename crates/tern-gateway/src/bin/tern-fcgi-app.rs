//! Stub: the FastCGI test application.

fn main() {}
