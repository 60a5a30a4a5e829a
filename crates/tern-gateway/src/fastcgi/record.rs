//! FastCGI 1.0 records on the wire: the 8-byte header, typed bodies, the
//! encoder that appends records to a buffer and the incremental decoder
//! that takes them back out. Pure: bytes in, bytes out.

use std::num::NonZeroU16;

use bytes::Bytes;

/// The only protocol version (`FCGI_VERSION_1`).
pub const VERSION_1: u8 = 1;
/// Every record starts with a header of this many bytes.
pub const HEADER_LEN: usize = 8;
/// The most content one record carries: its length is a `u16`.
pub const MAX_CONTENT_LEN: usize = u16::MAX as usize;
/// Bit 0 of BEGIN_REQUEST's flags (`FCGI_KEEP_CONN`).
pub const FLAG_KEEP_CONN: u8 = 1;
/// A name-value length in the 4-byte form has its top bit set, so 31 bits
/// are left for the length itself.
pub const MAX_PAIR_PART_LEN: usize = 0x7fff_ffff;

/// The record types of FastCGI 1.0, by their code on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordType {
    /// Starts a request (web server to application).
    BeginRequest = 1,
    /// Asks the application to stop a request.
    AbortRequest = 2,
    /// The application's last record for a request.
    EndRequest = 3,
    /// The CGI meta-variables, a stream of name-value pairs.
    Params = 4,
    /// The request body.
    Stdin = 5,
    /// The response.
    Stdout = 6,
    /// The application's error output.
    Stderr = 7,
    /// The file a FILTER filters.
    Data = 8,
    /// Asks the application for its limits (management).
    GetValues = 9,
    /// The answer to GET_VALUES (management).
    GetValuesResult = 10,
    /// The application did not know a management record's type.
    UnknownType = 11,
}

impl RecordType {
    /// The type with this code, if FastCGI 1.0 defines one.
    pub fn from_code(code: u8) -> Option<Self> {
        use RecordType::*;
        Some(match code {
            1 => BeginRequest,
            2 => AbortRequest,
            3 => EndRequest,
            4 => Params,
            5 => Stdin,
            6 => Stdout,
            7 => Stderr,
            8 => Data,
            9 => GetValues,
            10 => GetValuesResult,
            11 => UnknownType,
            _ => return None,
        })
    }

    /// Whether this is a management record (request id 0).
    pub fn is_management(self) -> bool {
        matches!(
            self,
            Self::GetValues | Self::GetValuesResult | Self::UnknownType
        )
    }

    /// Whether a decoder on `side` accepts this type from the other end.
    pub fn arrives_at(self, side: Side) -> bool {
        use RecordType::*;
        match side {
            Side::Client => matches!(
                self,
                EndRequest | Stdout | Stderr | GetValuesResult | UnknownType
            ),
            Side::Application => matches!(
                self,
                BeginRequest | AbortRequest | Params | Stdin | Data | GetValues
            ),
        }
    }
}

/// The end of the connection a [`Decoder`](super::Decoder) works for: it accepts only the
/// record types the other end may send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The web server: it reads STDOUT, STDERR, END_REQUEST,
    /// GET_VALUES_RESULT and UNKNOWN_TYPE.
    Client,
    /// The application (test fixtures): it reads BEGIN_REQUEST,
    /// ABORT_REQUEST, PARAMS, STDIN, DATA and GET_VALUES.
    Application,
}

/// What the application is asked to do (BEGIN_REQUEST's role).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Answer the request (1): what CGI does.
    Responder,
    /// Allow or refuse the request (2).
    Authorizer,
    /// Answer from a file sent on the DATA stream (3).
    Filter,
    /// A code FastCGI 1.0 does not define; the application answers
    /// END_REQUEST with [`ProtocolStatus::UnknownRole`].
    Other(u16),
}

impl Role {
    /// The code on the wire.
    pub fn code(self) -> u16 {
        match self {
            Self::Responder => 1,
            Self::Authorizer => 2,
            Self::Filter => 3,
            Self::Other(code) => code,
        }
    }

    /// The role with this code.
    pub fn from_code(code: u16) -> Self {
        match code {
            1 => Self::Responder,
            2 => Self::Authorizer,
            3 => Self::Filter,
            _ => Self::Other(code),
        }
    }
}

/// Who closes the connection after the request (BEGIN_REQUEST's
/// `FCGI_KEEP_CONN` flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connection {
    /// The flag is set: the application keeps the connection open for the
    /// next request, and the web server decides when to close it.
    Keep,
    /// The flag is clear: the application closes the connection after its
    /// END_REQUEST (and so collects the TIME_WAIT sockets).
    Close,
}

/// How the application ended a request (END_REQUEST's protocol status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ProtocolStatus {
    /// The request ran to its end (0).
    RequestComplete = 0,
    /// Refused: the application does not multiplex connections (1).
    CantMpxConn = 1,
    /// Refused: the application is out of some resource (2).
    Overloaded = 2,
    /// Refused: the application does not play the role asked for (3).
    UnknownRole = 3,
}

impl ProtocolStatus {
    /// The status with this code, if FastCGI 1.0 defines one.
    pub fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => Self::RequestComplete,
            1 => Self::CantMpxConn,
            2 => Self::Overloaded,
            3 => Self::UnknownRole,
            _ => return None,
        })
    }
}

/// The id of a request on a connection. Never 0: that id belongs to
/// management records, which have no [`RequestId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(NonZeroU16);

impl RequestId {
    /// The id every common web server uses, since none multiplexes.
    pub const ONE: Self = Self(NonZeroU16::MIN);

    /// The id `id`, unless it is 0.
    pub fn new(id: u16) -> Option<Self> {
        NonZeroU16::new(id).map(Self)
    }

    /// The id as it goes on the wire.
    pub fn get(self) -> u16 {
        self.0.get()
    }
}

/// The byte streams of a request: each is a run of records that ends with
/// an empty one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// PARAMS: name-value pairs (see [`parse_pairs`](super::parse_pairs)).
    Params,
    /// STDIN: the request body.
    Stdin,
    /// STDOUT: the response.
    Stdout,
    /// STDERR: the application's error output.
    Stderr,
    /// DATA: a FILTER's file.
    Data,
}

impl Stream {
    /// The record type that carries this stream.
    pub fn record_type(self) -> RecordType {
        match self {
            Self::Params => RecordType::Params,
            Self::Stdin => RecordType::Stdin,
            Self::Stdout => RecordType::Stdout,
            Self::Stderr => RecordType::Stderr,
            Self::Data => RecordType::Data,
        }
    }
}

/// A name and its value, as GET_VALUES_RESULT and PARAMS carry them.
pub type Pair = (Bytes, Bytes);

/// One record, its body parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// BEGIN_REQUEST.
    BeginRequest {
        /// The request.
        id: RequestId,
        /// What the application is to do.
        role: Role,
        /// Whether the application keeps the connection afterwards.
        connection: Connection,
    },
    /// ABORT_REQUEST.
    AbortRequest {
        /// The request.
        id: RequestId,
    },
    /// END_REQUEST.
    EndRequest {
        /// The request.
        id: RequestId,
        /// The application's exit status, as a CGI script's would be.
        app_status: u32,
        /// Whether the request ran or why it was refused.
        protocol_status: ProtocolStatus,
    },
    /// A piece of a stream; empty content ends the stream.
    Stream {
        /// The request.
        id: RequestId,
        /// Which stream.
        stream: Stream,
        /// The bytes, shared with the buffer they were decoded from.
        content: Bytes,
    },
    /// GET_VALUES: the names of the variables asked for.
    GetValues(Vec<Bytes>),
    /// GET_VALUES_RESULT: the variables and their values.
    GetValuesResult(Vec<Pair>),
    /// UNKNOWN_TYPE: the type code the application did not know.
    UnknownType(u8),
}

/// Why bytes are not FastCGI, or a record cannot be encoded. After a
/// decoding error the stream is out of step: close the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A header with a version other than 1.
    #[error("FastCGI version {0}, expected 1")]
    Version(u8),
    /// A type code FastCGI 1.0 does not define.
    #[error("unknown record type {0}")]
    UnknownRecordType(u8),
    /// A type the other end never sends to this side (BEGIN_REQUEST
    /// arriving at the web server, STDOUT at the application).
    #[error("{0:?} record sent to the {1:?} side")]
    Unexpected(RecordType, Side),
    /// A management record with a request id, or a request's record
    /// with id 0.
    #[error("{0:?} record with request id {1}")]
    RequestId(RecordType, u16),
    /// A fixed-size body (BEGIN_REQUEST, END_REQUEST, UNKNOWN_TYPE: 8
    /// bytes; ABORT_REQUEST: 0) of another length.
    #[error("{0:?} body of {1} bytes")]
    BodyLength(RecordType, usize),
    /// END_REQUEST with a protocol status FastCGI 1.0 does not define.
    #[error("unknown protocol status {0}")]
    ProtocolStatus(u8),
    /// Content longer than the decoder's cap.
    #[error("record content of {len} bytes, above the cap of {cap}")]
    TooLong {
        /// The record's content length.
        len: usize,
        /// The configured cap.
        cap: usize,
    },
    /// A name-value pair whose lengths run past the end of its content.
    #[error("a name-value pair runs past the end of its record")]
    PairOverrun,
    /// A name or value too long for a 31-bit length (encoding).
    #[error("a name or value of {0} bytes does not fit a FastCGI length")]
    PairTooLong(usize),
    /// A management record whose pairs do not fit in one record
    /// (encoding).
    #[error("management record content of {0} bytes does not fit one record")]
    ManagementTooLong(usize),
}

/// A record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The type code (not checked: a header may carry any).
    pub record_type: u8,
    /// The request id, 0 for management records.
    pub request_id: u16,
    /// How many content bytes follow the header.
    pub content_len: u16,
    /// How many padding bytes follow the content.
    pub padding_len: u8,
}

impl Header {
    /// Reads a header, refusing any version but 1.
    pub fn parse(bytes: [u8; HEADER_LEN]) -> Result<Self, RecordError> {
        if bytes[0] != VERSION_1 {
            return Err(RecordError::Version(bytes[0]));
        }
        Ok(Self {
            record_type: bytes[1],
            request_id: u16::from_be_bytes([bytes[2], bytes[3]]),
            content_len: u16::from_be_bytes([bytes[4], bytes[5]]),
            padding_len: bytes[6],
        })
    }

    /// The header's bytes (version 1, reserved byte 0).
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let [id_hi, id_lo] = self.request_id.to_be_bytes();
        let [len_hi, len_lo] = self.content_len.to_be_bytes();
        let (kind, pad) = (self.record_type, self.padding_len);
        [VERSION_1, kind, id_hi, id_lo, len_hi, len_lo, pad, 0]
    }
}

/// The padding that brings `content_len` to a multiple of 8, as libfcgi
/// does (aligned records let an application read them in place).
pub(super) fn padding_for(content_len: usize) -> u8 {
    // The result is in 0..8, so it fits.
    (content_len.wrapping_neg() % 8) as u8
}
