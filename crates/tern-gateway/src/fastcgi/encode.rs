//! Appending FastCGI records to a buffer. Every function adds whole
//! records to the end of a `BytesMut`, so a caller can build a request's
//! whole head (and a body in memory) in one buffer and send it with one
//! write.

use bytes::{BufMut, BytesMut};

use super::record::{
    padding_for, Connection, Header, Pair, Record, RecordError, RecordType, RequestId, Role,
    Stream, FLAG_KEEP_CONN, HEADER_LEN, MAX_CONTENT_LEN, MAX_PAIR_PART_LEN,
};

/// Appends one record: header, content, padding. `content` is at most
/// [`MAX_CONTENT_LEN`] bytes (every caller splits before this).
fn put_record(buf: &mut BytesMut, kind: RecordType, id: u16, content: &[u8]) {
    let padding_len = padding_for(content.len());
    buf.reserve(HEADER_LEN + content.len() + usize::from(padding_len));
    buf.put_slice(&header(kind, id, content.len()));
    buf.put_slice(content);
    buf.put_bytes(0, usize::from(padding_len));
}

/// The header of a record of `content_len` bytes (at most
/// [`MAX_CONTENT_LEN`]), padded as [`padding_for`] says.
pub(super) fn header(kind: RecordType, id: u16, content_len: usize) -> [u8; HEADER_LEN] {
    debug_assert!(content_len <= MAX_CONTENT_LEN);
    Header {
        record_type: kind as u8,
        request_id: id,
        content_len: content_len as u16,
        padding_len: padding_for(content_len),
    }
    .to_bytes()
}

/// Appends BEGIN_REQUEST.
pub fn begin_request(buf: &mut BytesMut, id: RequestId, role: Role, connection: Connection) {
    let [role_hi, role_lo] = role.code().to_be_bytes();
    let flags = match connection {
        Connection::Keep => FLAG_KEEP_CONN,
        Connection::Close => 0,
    };
    let body = [role_hi, role_lo, flags, 0, 0, 0, 0, 0];
    put_record(buf, RecordType::BeginRequest, id.get(), &body);
}

/// Appends ABORT_REQUEST.
pub fn abort_request(buf: &mut BytesMut, id: RequestId) {
    put_record(buf, RecordType::AbortRequest, id.get(), &[]);
}

/// Appends END_REQUEST (the application's side; test fixtures).
pub fn end_request(
    buf: &mut BytesMut,
    id: RequestId,
    app_status: u32,
    protocol_status: super::record::ProtocolStatus,
) {
    let [a, b, c, d] = app_status.to_be_bytes();
    let body = [a, b, c, d, protocol_status as u8, 0, 0, 0];
    put_record(buf, RecordType::EndRequest, id.get(), &body);
}

/// Appends `data` to a stream as records of at most [`MAX_CONTENT_LEN`]
/// bytes. Empty `data` appends nothing: an empty record would end the
/// stream, which only [`end_stream`] does.
pub fn stream(buf: &mut BytesMut, id: RequestId, stream: Stream, data: &[u8]) {
    for chunk in data.chunks(MAX_CONTENT_LEN) {
        put_record(buf, stream.record_type(), id.get(), chunk);
    }
}

/// Appends the empty record that ends a stream. PARAMS and STDIN must
/// always be ended, even with no body: an application waits for the empty
/// STDIN before it answers (HAProxy's omission hung backends, haproxy#2499).
pub fn end_stream(buf: &mut BytesMut, id: RequestId, stream: Stream) {
    put_record(buf, stream.record_type(), id.get(), &[]);
}

/// Appends name-value pairs to the PARAMS stream, split across records of
/// at most [`MAX_CONTENT_LEN`] bytes (a pair may straddle two records, as
/// the stream allows). Call [`end_stream`] with [`Stream::Params`] after
/// the last pairs.
pub fn params<'a, I>(buf: &mut BytesMut, id: RequestId, pairs: I) -> Result<(), RecordError>
where
    I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
{
    let mut out = StreamWriter::new(buf, RecordType::Params, id.get());
    for (name, value) in pairs {
        out.write_pair(&pair_lengths(name.len(), value.len())?, name, value);
    }
    out.finish();
    Ok(())
}

/// Appends GET_VALUES asking for `names` (say `FCGI_MPXS_CONNS`).
pub fn get_values<'a, I>(buf: &mut BytesMut, names: I) -> Result<(), RecordError>
where
    I: IntoIterator<Item = &'a [u8]>,
{
    management_pairs(
        buf,
        RecordType::GetValues,
        names.into_iter().map(|n| (n, &b""[..])),
    )
}

/// Appends GET_VALUES_RESULT (the application's side; test fixtures).
pub fn get_values_result<'a, I>(buf: &mut BytesMut, pairs: I) -> Result<(), RecordError>
where
    I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
{
    management_pairs(buf, RecordType::GetValuesResult, pairs)
}

/// Appends UNKNOWN_TYPE for a management record of type `code`.
pub fn unknown_type(buf: &mut BytesMut, code: u8) {
    let body = [code, 0, 0, 0, 0, 0, 0, 0];
    put_record(buf, RecordType::UnknownType, 0, &body);
}

/// Appends any record: the inverse of the decoder. Stream content longer
/// than one record is split, and empty content ends the stream.
pub fn record(buf: &mut BytesMut, record: &Record) -> Result<(), RecordError> {
    match record {
        Record::BeginRequest {
            id,
            role,
            connection,
        } => {
            begin_request(buf, *id, *role, *connection);
        }
        Record::AbortRequest { id } => abort_request(buf, *id),
        Record::EndRequest {
            id,
            app_status,
            protocol_status,
        } => {
            end_request(buf, *id, *app_status, *protocol_status);
        }
        Record::Stream {
            id,
            stream: kind,
            content,
        } if content.is_empty() => {
            end_stream(buf, *id, *kind);
        }
        Record::Stream {
            id,
            stream: kind,
            content,
        } => stream(buf, *id, *kind, content),
        Record::GetValues(names) => get_values(buf, names.iter().map(|n| &n[..]))?,
        Record::GetValuesResult(pairs) => {
            get_values_result(buf, pairs.iter().map(|(n, v): &Pair| (&n[..], &v[..])))?;
        }
        Record::UnknownType(code) => unknown_type(buf, *code),
    }
    Ok(())
}

/// A management record's pairs must fit one record: they are not a
/// stream, and have no empty record to end them.
fn management_pairs<'a, I>(
    buf: &mut BytesMut,
    kind: RecordType,
    pairs: I,
) -> Result<(), RecordError>
where
    I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
{
    let mut content = Vec::new();
    for (name, value) in pairs {
        content.extend_from_slice(&pair_lengths(name.len(), value.len())?);
        content.extend_from_slice(name);
        content.extend_from_slice(value);
        if content.len() > MAX_CONTENT_LEN {
            return Err(RecordError::ManagementTooLong(content.len()));
        }
    }
    put_record(buf, kind, 0, &content);
    Ok(())
}

/// The two lengths that start a pair, each 1 byte below 128 and 4 bytes
/// (top bit set) from 128 on.
pub(super) fn pair_lengths(name_len: usize, value_len: usize) -> Result<LengthBytes, RecordError> {
    let mut out = LengthBytes::default();
    for len in [name_len, value_len] {
        if len < 0x80 {
            out.bytes[out.len] = len as u8;
            out.len += 1;
        } else if len <= MAX_PAIR_PART_LEN {
            let wide = (len as u32 | 0x8000_0000).to_be_bytes();
            out.bytes[out.len..out.len + 4].copy_from_slice(&wide);
            out.len += 4;
        } else {
            return Err(RecordError::PairTooLong(len));
        }
    }
    Ok(out)
}

/// Up to two 4-byte lengths, without allocating.
#[derive(Default)]
pub(super) struct LengthBytes {
    bytes: [u8; 8],
    len: usize,
}

impl std::ops::Deref for LengthBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Writes a stream's bytes straight into the buffer, closing a record
/// whenever it reaches [`MAX_CONTENT_LEN`]: a large value is not copied
/// twice.
struct StreamWriter<'b> {
    buf: &'b mut BytesMut,
    kind: RecordType,
    id: u16,
    /// Where the open record's header is, if one is open.
    open: Option<usize>,
}

impl<'b> StreamWriter<'b> {
    fn new(buf: &'b mut BytesMut, kind: RecordType, id: u16) -> Self {
        Self {
            buf,
            kind,
            id,
            open: None,
        }
    }

    fn write(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let start = match self.open {
                Some(start) => start,
                None => {
                    let start = self.buf.len();
                    self.buf.put_bytes(0, HEADER_LEN);
                    self.open = Some(start);
                    start
                }
            };
            let used = self.buf.len() - start - HEADER_LEN;
            let take = data.len().min(MAX_CONTENT_LEN - used);
            self.buf.put_slice(&data[..take]);
            data = &data[take..];
            if used + take == MAX_CONTENT_LEN {
                self.close();
            }
        }
    }

    /// Writes a pair: its lengths, name and value. A pair that fits the
    /// open record (nearly every one: a request's variables usually all
    /// fit one record) is three copies, without [`StreamWriter::write`]'s
    /// bookkeeping per piece, which was most of encoding a request.
    fn write_pair(&mut self, lengths: &[u8], name: &[u8], value: &[u8]) {
        let len = lengths.len() + name.len() + value.len();
        match self.open {
            Some(start) if self.buf.len() - start - HEADER_LEN + len < MAX_CONTENT_LEN => {
                self.buf.reserve(len);
                self.buf.extend_from_slice(lengths);
                self.buf.extend_from_slice(name);
                self.buf.extend_from_slice(value);
            }
            _ => {
                self.write(lengths);
                self.write(name);
                self.write(value);
            }
        }
    }

    /// Fills in the open record's header and pads it.
    fn close(&mut self) {
        let Some(start) = self.open.take() else {
            return;
        };
        let content_len = self.buf.len() - start - HEADER_LEN;
        let padding_len = padding_for(content_len);
        let header = Header {
            record_type: self.kind as u8,
            request_id: self.id,
            content_len: content_len as u16,
            padding_len,
        };
        self.buf[start..start + HEADER_LEN].copy_from_slice(&header.to_bytes());
        self.buf.put_bytes(0, usize::from(padding_len));
    }

    fn finish(mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: RequestId = RequestId::ONE;

    /// A GET with one variable and a two-byte body, each byte checked by
    /// hand against the FastCGI 1.0 spec (§3.3 header, §5.1 body, §3.4
    /// pairs).
    #[test]
    fn golden_small_request() {
        let mut buf = BytesMut::new();
        begin_request(&mut buf, ID, Role::Responder, Connection::Keep);
        params(&mut buf, ID, [(&b"REQUEST_METHOD"[..], &b"GET"[..])]).unwrap();
        end_stream(&mut buf, ID, Stream::Params);
        stream(&mut buf, ID, Stream::Stdin, b"hi");
        end_stream(&mut buf, ID, Stream::Stdin);
        let mut want: Vec<u8> = Vec::new();
        // BEGIN_REQUEST: version 1, type 1, id 1, length 8, no padding;
        // role 1 (RESPONDER), flags 1 (KEEP_CONN), 5 reserved.
        want.extend([1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
        // PARAMS: 19 bytes of content (2 lengths, 14 + 3), padded by 5.
        want.extend([1, 4, 0, 1, 0, 19, 5, 0, 14, 3]);
        want.extend(b"REQUEST_METHODGET");
        want.extend([0; 5]);
        // The empty PARAMS, then STDIN "hi" padded by 6, the empty STDIN.
        want.extend([1, 4, 0, 1, 0, 0, 0, 0]);
        want.extend([1, 5, 0, 1, 0, 2, 6, 0, b'h', b'i', 0, 0, 0, 0, 0, 0]);
        want.extend([1, 5, 0, 1, 0, 0, 0, 0]);
        assert_eq!(&buf[..], &want[..]);
    }

    #[test]
    fn lengths_switch_form_at_128() {
        let mut buf = BytesMut::new();
        let (n127, v128) = (vec![b'n'; 127], vec![b'v'; 128]);
        params(&mut buf, ID, [(&n127[..], &v128[..])]).unwrap();
        assert_eq!(&buf[8..13], &[127, 0x80, 0, 0, 128]);
        assert_eq!(buf[4..6], ((1 + 4 + 127 + 128) as u16).to_be_bytes());
        let big = pair_lengths(MAX_PAIR_PART_LEN, 0).unwrap();
        assert_eq!(&big[..], &[0xff, 0xff, 0xff, 0xff, 0]);
        let too_big = MAX_PAIR_PART_LEN + 1;
        assert_eq!(
            pair_lengths(0, too_big).err(),
            Some(RecordError::PairTooLong(too_big))
        );
    }

    #[test]
    fn empty_stdin_chunk_writes_nothing() {
        let mut buf = BytesMut::new();
        stream(&mut buf, ID, Stream::Stdin, b"");
        assert!(buf.is_empty(), "an empty record would end the stream");
    }

    #[test]
    fn stdin_splits_at_65535_and_pads() {
        let mut buf = BytesMut::new();
        stream(&mut buf, ID, Stream::Stdin, &vec![7; MAX_CONTENT_LEN + 10]);
        // 65535 content + 1 padding, then 10 content + 6 padding.
        assert_eq!(buf.len(), 8 + MAX_CONTENT_LEN + 1 + 8 + 10 + 6);
        assert_eq!(&buf[..8], &[1, 5, 0, 1, 0xff, 0xff, 1, 0]);
        let second = 8 + MAX_CONTENT_LEN + 1;
        assert_eq!(&buf[second..second + 8], &[1, 5, 0, 1, 0, 10, 6, 0]);
    }

    #[test]
    fn get_values_is_one_management_record_with_empty_values() {
        let mut buf = BytesMut::new();
        get_values(&mut buf, [&b"FCGI_MAX_CONNS"[..], b"FCGI_MPXS_CONNS"]).unwrap();
        let mut want = vec![1, 9, 0, 0, 0, 33, 7, 0, 14, 0];
        want.extend(b"FCGI_MAX_CONNS");
        want.extend([15, 0]);
        want.extend(b"FCGI_MPXS_CONNS");
        want.extend([0; 7]);
        assert_eq!(&buf[..], &want[..]);
    }

    #[test]
    fn oversized_management_record_is_refused() {
        let mut buf = BytesMut::new();
        let name = vec![b'x'; MAX_CONTENT_LEN];
        let err = get_values(&mut buf, [&name[..]]).unwrap_err();
        assert_eq!(err, RecordError::ManagementTooLong(MAX_CONTENT_LEN + 5));
        assert!(buf.is_empty());
    }

    #[test]
    fn abort_and_begin_close() {
        let mut buf = BytesMut::new();
        abort_request(&mut buf, ID);
        begin_request(&mut buf, ID, Role::Filter, Connection::Close);
        assert_eq!(&buf[..8], &[1, 2, 0, 1, 0, 0, 0, 0]);
        assert_eq!(&buf[8..], &[1, 1, 0, 1, 0, 8, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0]);
    }
}
