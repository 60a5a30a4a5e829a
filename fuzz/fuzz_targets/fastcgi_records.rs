//! Arbitrary bytes never panic the FastCGI record decoder on either side,
//! feeding them in two pieces decodes the same records as all at once,
//! and every record decoded comes back the same after encoding it again.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use tern_gateway::fastcgi::{encode, Decoder, DecoderConfig, Record, RecordError, Side};

/// Records until the bytes run out or an error; each `Some` consumes at
/// least a header, so the loop ends.
fn decode_all(side: Side, pieces: &[&[u8]]) -> (Vec<Record>, Option<RecordError>) {
    let mut decoder = Decoder::new(DecoderConfig {
        side,
        ..DecoderConfig::default()
    });
    let (mut buf, mut records) = (BytesMut::new(), Vec::new());
    for piece in pieces {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf) {
                Ok(Some(record)) => records.push(record),
                Ok(None) => break,
                Err(err) => return (records, Some(err)),
            }
        }
    }
    (records, None)
}

fuzz_target!(|data: &[u8]| {
    for side in [Side::Client, Side::Application] {
        let (records, err) = decode_all(side, &[data]);
        let split = data
            .first()
            .map_or(0, |&b| usize::from(b) % (data.len() + 1));
        let (head, tail) = data.split_at(split);
        assert_eq!(decode_all(side, &[head, tail]), (records.clone(), err));
        for record in records {
            let mut buf = BytesMut::new();
            encode::record(&mut buf, &record).expect("a decoded record encodes");
            let mut decoder = Decoder::new(DecoderConfig {
                side,
                ..DecoderConfig::default()
            });
            let again = decoder.decode(&mut buf).expect("re-encoded bytes decode");
            assert_eq!(again.as_ref(), Some(&record));
            assert!(buf.is_empty(), "one record re-encodes as one record");
        }
    }
});
