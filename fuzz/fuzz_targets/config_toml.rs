//! Any configuration text yields a config or errors that each name a line
//! within the text; nothing panics.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tern_config::{parse, LoadOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else {
        return;
    };
    let opts = LoadOptions { check_paths: false };
    if let Err(errors) = parse(src, Path::new("fuzz.toml"), opts) {
        let lines = src.lines().count() + 1;
        for e in errors.0 {
            assert!(e.line <= lines, "{e}");
        }
    }
});
