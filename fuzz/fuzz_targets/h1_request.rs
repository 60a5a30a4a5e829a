//! Request heads and bodies from arbitrary bytes, fed in two pieces split
//! at a point the input chooses: nothing panics, a prefix never decides
//! otherwise than the whole, and the body decoders make progress.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use tern_h1::{parse_head, BodyDecoder, ChunkedDecoder, Decoded, Limits};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, input)) = data.split_first() else {
        return;
    };
    let cut = usize::from(cut) * input.len() / 256;
    let limits = Limits {
        max_head_bytes: 4096,
        max_headers: 16,
        max_target: 1024,
        max_trailer_bytes: 512,
        max_chunk_ext_bytes: 256,
    };

    // The head: first the prefix, then the whole.
    let prefix = parse_head(&input[..cut], &limits);
    let whole = parse_head(input, &limits);
    match (&prefix, &whole) {
        (Ok(Some(p)), Ok(Some(w))) => assert_eq!(p.head_len, w.head_len),
        (Ok(Some(_)), _) => panic!("a complete prefix, then {whole:?}"),
        (Err(e), Err(w)) => assert_eq!(e, w),
        (Err(e), _) => panic!("a refused prefix ({e}), then {whole:?}"),
        _ => {}
    }
    if let Ok(Some(head)) = &whole {
        assert!(head.head_len <= input.len());
        let body = &input[head.head_len..];
        let cut = cut.min(body.len());
        decode(BodyDecoder::new(head.framing, &limits), body, cut);
    }

    // The input as a chunked body on its own.
    decode(
        BodyDecoder::Chunked(ChunkedDecoder::new(&limits)),
        input,
        cut,
    );
});

/// Feeds `body` to `decoder` in two pieces; every step must consume input
/// or end.
fn decode(mut decoder: BodyDecoder, body: &[u8], cut: usize) {
    let mut buf = BytesMut::from(&body[..cut]);
    let mut rest = Some(&body[cut..]);
    loop {
        let before = buf.len();
        match decoder.decode(&mut buf) {
            Ok(Decoded::Data(d)) => {
                // Data, and maybe the framing before it, came off the input.
                assert!(!d.is_empty());
                assert!(buf.len() + d.len() <= before);
            }
            Ok(Decoded::End(_)) | Err(_) => return,
            Ok(Decoded::NeedMore) => match rest.take() {
                Some(r) => buf.extend_from_slice(r),
                None => return,
            },
        }
    }
}
