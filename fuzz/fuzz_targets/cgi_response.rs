//! A script's response head never panics the parser, in either mode, and
//! what it accepts is safe to send: no CR, LF or NUL in any header value or
//! reason phrase (response splitting), and a local redirect is a path. The
//! head reader's two entry points (output copied, or parsed where it lies)
//! agree on every output.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use tern_cgi::response::{parse, Head, HeadReader, Mode, Reply, MAX_HEAD_BYTES};

/// Bytes that would end or cut a line of the HTTP/1 head tern sends.
fn unsafe_byte(b: &u8) -> bool {
    matches!(b, b'\r' | b'\n' | b'\0')
}

fn check_head(head: &Head) {
    for (name, value) in &head.headers {
        assert!(
            !value.as_bytes().iter().any(unsafe_byte),
            "{name}: {value:?}"
        );
    }
    if let Some(reason) = &head.reason {
        assert!(!reason.iter().any(unsafe_byte), "reason {reason:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    for mode in [Mode::Cgi, Mode::Nph] {
        match parse(data, mode) {
            Ok(Reply::Document(head) | Reply::ClientRedirect(head)) => check_head(&head),
            Ok(Reply::LocalRedirect(path)) => {
                assert_eq!(mode, Mode::Cgi, "NPH scripts answer for themselves");
                assert!(path.starts_with('/') && !path.starts_with("//"), "{path:?}");
                assert!(!path.bytes().any(|b| unsafe_byte(&b)), "{path:?}");
            }
            Err(_) => {}
        }
        let mut copied = HeadReader::new(mode, MAX_HEAD_BYTES);
        let mut sliced = HeadReader::new(mode, MAX_HEAD_BYTES);
        assert_eq!(
            copied.push(data),
            sliced.push_bytes(Bytes::copy_from_slice(data))
        );
    }
});
