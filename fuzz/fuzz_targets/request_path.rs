//! Path decoding never panics, and what it accepts is normalised: no dot
//! segments, no empty segments, no NUL or backslash, idempotent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_handler::path::DecodedPath;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = DecodedPath::parse(raw) {
        let s = p.as_str();
        assert!(s.starts_with('/'));
        assert!(!s.contains('\0') && !s.contains('\\'));
        assert!(p.segments().all(|seg| seg != "." && seg != ".."));
        assert!(!s.contains("//"));
        // Decoding a decoded path again changes nothing unless it has '%'.
        if !s.contains('%') {
            assert_eq!(DecodedPath::parse(s).as_ref().map(DecodedPath::as_str), Ok(s));
        }
    }
});
