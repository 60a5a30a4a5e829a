//! Parsing any line in any format never panics; a parsed record renders to a
//! line that parses back to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_accesslog::{parse, render, LogFormat};

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    for format in [LogFormat::Common, LogFormat::Combined, LogFormat::Json] {
        if let Ok(rec) = parse(format, line) {
            let mut out = Vec::new();
            render(format, &rec, &mut out);
            let again = std::str::from_utf8(&out).expect("rendered lines are UTF-8");
            assert_eq!(again.matches('\n').count(), 1, "one line");
            let back = parse(format, again.trim_end_matches('\n')).expect("re-parse");
            let mut out2 = Vec::new();
            render(format, &back, &mut out2);
            assert_eq!(out, out2);
        }
    }
});
