//! Taking FastCGI records out of bytes as they arrive: the incremental
//! [`Decoder`], and [`parse_pairs`] for name-value content.
//!
//! The decoder waits until a whole record (header, content, padding) is
//! in the buffer, then splits it off: stream content comes out as `Bytes`
//! sharing the buffer's memory. A record is at most 8 + 65535 + 255
//! bytes, so the buffer never has to grow past that for one record, and
//! the header is checked as soon as its 8 bytes are in, before the
//! content is waited for.

use bytes::{Buf, Bytes, BytesMut};

use super::record::{
    Connection, Header, Pair, ProtocolStatus, Record, RecordError, RecordType, RequestId, Role,
    Side, Stream, FLAG_KEEP_CONN, HEADER_LEN, MAX_CONTENT_LEN,
};

/// How a [`Decoder`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecoderConfig {
    /// The end of the connection this decoder is on; it refuses the
    /// record types that end never receives. Default: [`Side::Client`].
    pub side: Side,
    /// The longest record content accepted; a longer one is an error
    /// before its content is read. Default: [`MAX_CONTENT_LEN`] (65535),
    /// the most a record can carry.
    pub max_content_len: usize,
}

impl Default for DecoderConfig {
    fn default() -> Self {
        Self {
            side: Side::Client,
            max_content_len: MAX_CONTENT_LEN,
        }
    }
}

/// Reads records from bytes fed to it in pieces of any size.
#[derive(Clone, Debug)]
pub struct Decoder {
    config: DecoderConfig,
}

impl Decoder {
    /// A decoder with `config`.
    pub fn new(config: DecoderConfig) -> Self {
        Self { config }
    }

    /// Takes the next whole record from the front of `buf`. `Ok(None)`
    /// means more bytes are needed (and `buf` has room reserved for the
    /// rest of the record); nothing is consumed until a record is whole.
    /// After an error the connection is out of step and must be closed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Record>, RecordError> {
        let Some(head) = buf.first_chunk::<HEADER_LEN>() else {
            return Ok(None);
        };
        let header = Header::parse(*head)?;
        let kind = self.check(&header)?;
        let content_len = usize::from(header.content_len);
        let total = HEADER_LEN + content_len + usize::from(header.padding_len);
        if buf.len() < total {
            buf.reserve(total - buf.len());
            return Ok(None);
        }
        // The header goes with the content and is stepped over in the
        // frozen record (a pointer's move); the buffer moves once more
        // only for padding, which libfcgi's 8 KB records have none of.
        let mut content = buf.split_to(HEADER_LEN + content_len).freeze();
        content.advance(HEADER_LEN);
        if header.padding_len > 0 {
            buf.advance(usize::from(header.padding_len));
        }
        body(kind, header.request_id, content).map(Some)
    }

    /// Everything the header alone can refuse.
    fn check(&self, header: &Header) -> Result<RecordType, RecordError> {
        let kind = RecordType::from_code(header.record_type)
            .ok_or(RecordError::UnknownRecordType(header.record_type))?;
        if !kind.arrives_at(self.config.side) {
            return Err(RecordError::Unexpected(kind, self.config.side));
        }
        if kind.is_management() != (header.request_id == 0) {
            return Err(RecordError::RequestId(kind, header.request_id));
        }
        let len = usize::from(header.content_len);
        if len > self.config.max_content_len {
            let cap = self.config.max_content_len;
            return Err(RecordError::TooLong { len, cap });
        }
        let fixed = match kind {
            RecordType::BeginRequest | RecordType::EndRequest | RecordType::UnknownType => Some(8),
            RecordType::AbortRequest => Some(0),
            _ => None,
        };
        match fixed {
            Some(want) if want != len => Err(RecordError::BodyLength(kind, len)),
            _ => Ok(kind),
        }
    }
}

/// Parses a checked record's content; a stream's is moved into its
/// record as it is.
fn body(kind: RecordType, request_id: u16, content: Bytes) -> Result<Record, RecordError> {
    let stream = |stream: Stream, content: Bytes| -> Result<Record, RecordError> {
        let id = request_id_of(kind, request_id)?;
        Ok(Record::Stream {
            id,
            stream,
            content,
        })
    };
    Ok(match kind {
        RecordType::BeginRequest => Record::BeginRequest {
            id: request_id_of(kind, request_id)?,
            role: Role::from_code(u16::from_be_bytes([content[0], content[1]])),
            connection: if content[2] & FLAG_KEEP_CONN != 0 {
                Connection::Keep
            } else {
                Connection::Close
            },
        },
        RecordType::AbortRequest => Record::AbortRequest {
            id: request_id_of(kind, request_id)?,
        },
        RecordType::EndRequest => Record::EndRequest {
            id: request_id_of(kind, request_id)?,
            app_status: u32::from_be_bytes([content[0], content[1], content[2], content[3]]),
            protocol_status: ProtocolStatus::from_code(content[4])
                .ok_or(RecordError::ProtocolStatus(content[4]))?,
        },
        RecordType::Params => stream(Stream::Params, content)?,
        RecordType::Stdin => stream(Stream::Stdin, content)?,
        RecordType::Stdout => stream(Stream::Stdout, content)?,
        RecordType::Stderr => stream(Stream::Stderr, content)?,
        RecordType::Data => stream(Stream::Data, content)?,
        // GET_VALUES values are empty by the spec; any sent are ignored.
        RecordType::GetValues => {
            Record::GetValues(parse_pairs(&content)?.into_iter().map(|(n, _)| n).collect())
        }
        RecordType::GetValuesResult => Record::GetValuesResult(parse_pairs(&content)?),
        RecordType::UnknownType => Record::UnknownType(content[0]),
    })
}

/// The id of a request's record; `check` has refused id 0 already.
fn request_id_of(kind: RecordType, id: u16) -> Result<RequestId, RecordError> {
    RequestId::new(id).ok_or(RecordError::RequestId(kind, id))
}

/// Splits name-value content (one management record, or a whole PARAMS
/// stream joined) into pairs sharing its memory. A length in the 4-byte
/// form may announce up to 2 GiB, so each is checked against what is
/// left before anything is sliced.
pub fn parse_pairs(content: &Bytes) -> Result<Vec<Pair>, RecordError> {
    let mut rest = content.clone();
    let mut pairs = Vec::new();
    while !rest.is_empty() {
        let name_len = pair_length(&mut rest)?;
        let value_len = pair_length(&mut rest)?;
        if rest.len() < name_len || rest.len() - name_len < value_len {
            return Err(RecordError::PairOverrun);
        }
        let name = rest.split_to(name_len);
        let value = rest.split_to(value_len);
        pairs.push((name, value));
    }
    Ok(pairs)
}

/// One length: a byte below 128, or 4 bytes with the top bit set.
fn pair_length(rest: &mut Bytes) -> Result<usize, RecordError> {
    let first = *rest.first().ok_or(RecordError::PairOverrun)?;
    if first < 0x80 {
        rest.advance(1);
        return Ok(usize::from(first));
    }
    let wide = rest.first_chunk::<4>().ok_or(RecordError::PairOverrun)?;
    let len = u32::from_be_bytes(*wide) & 0x7fff_ffff;
    rest.advance(4);
    // A 31-bit length fits usize on every target tern builds for.
    Ok(len as usize)
}

#[cfg(test)]
mod tests {
    use super::super::encode;
    use super::*;

    const ID: RequestId = RequestId::ONE;

    fn decoder(side: Side) -> Decoder {
        Decoder::new(DecoderConfig {
            side,
            ..DecoderConfig::default()
        })
    }

    /// Every record in `bytes`, which must end on a record boundary.
    fn decode_all(side: Side, bytes: &[u8]) -> Result<Vec<Record>, RecordError> {
        let mut buf = BytesMut::from(bytes);
        let mut out = Vec::new();
        let mut dec = decoder(side);
        while let Some(record) = dec.decode(&mut buf)? {
            out.push(record);
        }
        assert!(buf.is_empty(), "{} bytes left", buf.len());
        Ok(out)
    }

    fn encoded(records: &[Record]) -> BytesMut {
        let mut buf = BytesMut::new();
        for r in records {
            encode::record(&mut buf, r).unwrap();
        }
        buf
    }

    fn stream(stream: Stream, content: &[u8]) -> Record {
        let content = Bytes::copy_from_slice(content);
        Record::Stream {
            id: ID,
            stream,
            content,
        }
    }

    fn pair(name: &[u8], value: &[u8]) -> Pair {
        (Bytes::copy_from_slice(name), Bytes::copy_from_slice(value))
    }

    fn to_application() -> Vec<Record> {
        let other = RequestId::new(0xbeef).unwrap();
        vec![
            Record::BeginRequest {
                id: ID,
                role: Role::Responder,
                connection: Connection::Keep,
            },
            Record::BeginRequest {
                id: other,
                role: Role::Authorizer,
                connection: Connection::Close,
            },
            Record::BeginRequest {
                id: ID,
                role: Role::Other(9),
                connection: Connection::Keep,
            },
            stream(Stream::Params, b"\x01\x02ABC"),
            stream(Stream::Params, b""),
            stream(Stream::Stdin, b"body"),
            stream(Stream::Stdin, b""),
            stream(Stream::Data, b"filtered file"),
            stream(Stream::Data, b""),
            Record::AbortRequest { id: ID },
            Record::GetValues(vec![Bytes::from_static(b"FCGI_MPXS_CONNS")]),
        ]
    }

    fn to_client() -> Vec<Record> {
        let mut out = vec![
            stream(Stream::Stdout, b"Status: 200\r\n\r\nhello"),
            stream(Stream::Stdout, b""),
            stream(Stream::Stderr, b"warning"),
            Record::GetValuesResult(vec![pair(b"FCGI_MPXS_CONNS", b"0"), pair(b"", b"")]),
            Record::GetValuesResult(vec![]),
            Record::UnknownType(200),
        ];
        for (app_status, protocol_status) in [
            (0, ProtocolStatus::RequestComplete),
            (u32::MAX, ProtocolStatus::CantMpxConn),
            (1, ProtocolStatus::Overloaded),
            (0x0102_0304, ProtocolStatus::UnknownRole),
        ] {
            out.push(Record::EndRequest {
                id: ID,
                app_status,
                protocol_status,
            });
        }
        out
    }

    #[test]
    fn every_record_kind_round_trips() {
        for (side, records) in [
            (Side::Application, to_application()),
            (Side::Client, to_client()),
        ] {
            let bytes = encoded(&records);
            assert_eq!(bytes.len() % 8, 0, "every record is padded");
            assert_eq!(decode_all(side, &bytes).unwrap(), records);
        }
    }

    #[test]
    fn byte_by_byte_equals_all_at_once() {
        for (side, records) in [
            (Side::Application, to_application()),
            (Side::Client, to_client()),
        ] {
            let bytes = encoded(&records);
            let (mut buf, mut dec, mut out) = (BytesMut::new(), decoder(side), Vec::new());
            for &b in &bytes[..] {
                buf.extend_from_slice(&[b]);
                if let Some(record) = dec.decode(&mut buf).unwrap() {
                    out.push(record);
                }
            }
            assert!(buf.is_empty());
            assert_eq!(out, records);
        }
    }

    #[test]
    fn nothing_is_consumed_until_a_record_is_whole() {
        let bytes = encoded(&[stream(Stream::Stdout, b"twelve bytes")]);
        let mut buf = BytesMut::from(&bytes[..bytes.len() - 1]);
        assert_eq!(decoder(Side::Client).decode(&mut buf), Ok(None));
        assert_eq!(buf.len(), bytes.len() - 1);
        assert!(
            buf.capacity() >= bytes.len(),
            "room is reserved for the rest"
        );
    }

    #[test]
    fn lengths_at_127_and_128_round_trip() {
        for (n, v) in [(127, 127), (127, 128), (128, 127), (128, 128), (0, 300)] {
            let (name, value) = (vec![b'n'; n], vec![b'v'; v]);
            let mut buf = BytesMut::new();
            encode::get_values_result(&mut buf, [(&name[..], &value[..])]).unwrap();
            let want = Record::GetValuesResult(vec![pair(&name, &value)]);
            assert_eq!(decode_all(Side::Client, &buf).unwrap(), vec![want]);
        }
    }

    #[test]
    fn a_200k_value_spans_records_and_comes_back_whole() {
        let value: Vec<u8> = (0..200 * 1024).map(|i| (i % 251) as u8).collect();
        let pairs: [(&[u8], &[u8]); 2] = [(b"HTTP_COOKIE", &value), (b"A", b"b")];
        let mut buf = BytesMut::new();
        encode::params(&mut buf, ID, pairs).unwrap();
        encode::end_stream(&mut buf, ID, Stream::Params);
        let records = decode_all(Side::Application, &buf).unwrap();
        let mut joined = BytesMut::new();
        let mut lens = Vec::new();
        for r in &records {
            let Record::Stream {
                stream: Stream::Params,
                content,
                ..
            } = r
            else {
                panic!("{r:?}");
            };
            lens.push(content.len());
            joined.extend_from_slice(content);
        }
        // A 1-byte name length, a 4-byte value length; then 1+1 for "A"="b".
        let total = 1 + 4 + 11 + value.len() + 2 + 1 + 1;
        assert_eq!(lens, [65535, 65535, 65535, total - 3 * 65535, 0]);
        let got = parse_pairs(&joined.freeze()).unwrap();
        assert_eq!(got, vec![pair(b"HTTP_COOKIE", &value), pair(b"A", b"b")]);
    }

    #[test]
    fn any_padding_is_skipped() {
        // Content "ok" with 255 bytes of padding, then a second record.
        let mut bytes = vec![1, 6, 0, 1, 0, 2, 255, 0, b'o', b'k'];
        bytes.extend([0xaa; 255]);
        bytes.extend([1, 6, 0, 1, 0, 0, 0, 0]);
        let want = vec![stream(Stream::Stdout, b"ok"), stream(Stream::Stdout, b"")];
        assert_eq!(decode_all(Side::Client, &bytes).unwrap(), want);
    }

    #[test]
    fn malformed_input_names_its_fault() {
        use RecordError::*;
        let cases: &[(&[u8], RecordError)] = &[
            (&[0, 6, 0, 1, 0, 0, 0, 0], Version(0)),
            (&[2, 6, 0, 1, 0, 0, 0, 0], Version(2)),
            (&[1, 0, 0, 1, 0, 0, 0, 0], UnknownRecordType(0)),
            (&[1, 12, 0, 0, 0, 0, 0, 0], UnknownRecordType(12)),
            (
                &[1, 1, 0, 1, 0, 8, 0, 0],
                Unexpected(RecordType::BeginRequest, Side::Client),
            ),
            (
                &[1, 5, 0, 1, 0, 0, 0, 0],
                Unexpected(RecordType::Stdin, Side::Client),
            ),
            (&[1, 6, 0, 0, 0, 0, 0, 0], RequestId(RecordType::Stdout, 0)),
            (
                &[1, 10, 0, 1, 0, 0, 0, 0],
                RequestId(RecordType::GetValuesResult, 1),
            ),
            (
                &[1, 3, 0, 1, 0, 7, 0, 0],
                BodyLength(RecordType::EndRequest, 7),
            ),
            (
                &[1, 11, 0, 0, 0, 9, 0, 0],
                BodyLength(RecordType::UnknownType, 9),
            ),
            (
                &[1, 3, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0],
                ProtocolStatus(4),
            ),
            // A name length of 5 in a 3-byte record.
            (
                &[1, 10, 0, 0, 0, 3, 5, 0, 5, 0, b'x', 0, 0, 0, 0, 0],
                PairOverrun,
            ),
            // A 4-byte length announcing 2 GiB.
            (
                &[1, 10, 0, 0, 0, 8, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 1, 2, 3],
                PairOverrun,
            ),
            // A 4-byte length cut off by the end of the record.
            (
                &[1, 10, 0, 0, 0, 2, 6, 0, 0x80, 0, 0, 0, 0, 0, 0, 0],
                PairOverrun,
            ),
            // A value length missing after the name length.
            (
                &[1, 10, 0, 0, 0, 1, 7, 0, 3, 0, 0, 0, 0, 0, 0, 0],
                PairOverrun,
            ),
        ];
        for (bytes, want) in cases {
            let mut buf = BytesMut::from(*bytes);
            let got = decoder(Side::Client).decode(&mut buf);
            assert_eq!(got.as_ref(), Err(want), "{bytes:?}");
        }
        let abort = [1, 2, 0, 1, 0, 1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let got = decoder(Side::Application).decode(&mut BytesMut::from(&abort[..]));
        assert_eq!(got, Err(BodyLength(RecordType::AbortRequest, 1)));
        let stdout = [1, 6, 0, 1, 0, 0, 0, 0];
        let got = decoder(Side::Application).decode(&mut BytesMut::from(&stdout[..]));
        assert_eq!(got, Err(Unexpected(RecordType::Stdout, Side::Application)));
    }

    #[test]
    fn content_above_the_cap_is_refused_from_its_header() {
        let config = DecoderConfig {
            max_content_len: 100,
            ..DecoderConfig::default()
        };
        // Only the header has arrived: the refusal does not wait for, or
        // make room for, the 101 bytes it announces.
        let mut buf = BytesMut::from(&[1, 6, 0, 1, 0, 101, 3, 0][..]);
        let got = Decoder::new(config).decode(&mut buf);
        assert_eq!(got, Err(RecordError::TooLong { len: 101, cap: 100 }));
        let mut buf = BytesMut::from(&encoded(&[stream(Stream::Stdout, &[0; 100])])[..]);
        assert!(Decoder::new(config).decode(&mut buf).unwrap().is_some());
    }

    /// Records framed right but with any type, id and content: what the
    /// decoder accepts must come back the same after re-encoding.
    fn framed() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        // Fixed bodies are 8 bytes and stream ends are empty: favour both.
        let content = prop_oneof![
            Just(Vec::new()),
            proptest::collection::vec(any::<u8>(), 8),
            proptest::collection::vec(any::<u8>(), 0..40),
        ];
        // Mostly the id the type calls for (0 for management), so that
        // records after the first are reached.
        let wrong_id = prop::bool::weighted(0.1);
        let record = (1u8..12, wrong_id, content, 0u8..10);
        proptest::collection::vec(record, 0..8).prop_map(|records| {
            let mut out = Vec::new();
            for (kind, wrong_id, content, padding) in records {
                let management = RecordType::from_code(kind).is_some_and(RecordType::is_management);
                let header = Header {
                    record_type: kind,
                    request_id: u16::from(management == wrong_id),
                    content_len: content.len() as u16,
                    padding_len: padding,
                };
                out.extend(header.to_bytes());
                out.extend(content);
                out.extend(std::iter::repeat_n(0, padding.into()));
            }
            out
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1024))]
        #[test]
        fn decoded_records_survive_re_encoding(bytes in framed(), raw: Vec<u8>) {
            for side in [Side::Client, Side::Application] {
                for input in [&bytes, &raw] {
                    let mut buf = BytesMut::from(&input[..]);
                    let mut dec = decoder(side);
                    while let Ok(Some(record)) = dec.decode(&mut buf) {
                        let again = decode_all(side, &encoded(std::slice::from_ref(&record)));
                        proptest::prop_assert_eq!(again, Ok(vec![record]));
                    }
                }
            }
        }
    }
}
