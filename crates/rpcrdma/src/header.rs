//! The RPC-over-RDMA version 1 transport header (RFC 8166 section 4: XDR in 4.1, fixed fields
//! in 4.2, chunk lists in 4.3, RDMA_ERROR in 4.5).
//!
//! ```text
//! rdma_xid | rdma_vers | rdma_credit | rdma_proc | body
//! RDMA_MSG / RDMA_NOMSG body:  read list | write list | reply chunk   [RPC message follows for RDMA_MSG]
//! RDMA_ERROR body:             ERR_VERS low high  |  ERR_CHUNK
//! ```
//!
//! The Read list is a linked list (`bool present; read_segment`) of read segments; segments
//! that follow one another with the same position make up one Read chunk (RFC 8166 3.4.5).
//! The Write list is a linked list of Write chunks, each a counted array of segments
//! (RFC 8166 3.4.6). The Reply chunk is an optional Write chunk.
//!
//! Decoding bounds every count by [`Limits`] before anything is stored: list items are counted
//! as they are read and arrays are checked against both the limit and the bytes left.

use bytes::Bytes;
use xdr::{Decoder, Encoder};

use crate::limits::{Limits, ValidationError};

/// The only protocol version this crate speaks.
pub const RPCRDMA_VERSION: u32 = 1;
/// `rdma_proc` value: an RPC message follows the header inline.
pub const RDMA_MSG: u32 = 0;
/// `rdma_proc` value: the RPC message is not inline (it is in a Read or the Reply chunk).
pub const RDMA_NOMSG: u32 = 1;
/// `rdma_proc` value of the padded message type that RFC 8166 section 4.6 withdrew.
pub const RDMA_MSGP: u32 = 2;
/// `rdma_proc` value of the withdrawn "reply done" message (RFC 8166 section 4.6).
pub const RDMA_DONE: u32 = 3;
/// `rdma_proc` value: a transport-level error report.
pub const RDMA_ERROR: u32 = 4;
/// `rdma_err` value: the peer does not support the header's version.
pub const ERR_VERS: u32 = 1;
/// `rdma_err` value: the chunks or the header could not be parsed or used.
pub const ERR_CHUNK: u32 = 2;
/// Length of the four fixed words (xid, vers, credit, proc).
pub const FIXED_LEN: usize = 16;
/// Smallest RDMA_MSG/RDMA_NOMSG header: the fixed words plus three empty lists (RFC 8166 4.5).
pub const MIN_HEADER_LEN: usize = 28;
/// Encoded size of one `rdma_segment` (handle, length, 64-bit offset).
pub const SEGMENT_LEN: usize = 16;
/// Encoded size of one Read list entry: discriminator, position and segment.
pub const READ_ENTRY_LEN: usize = 4 + 4 + SEGMENT_LEN;

/// One registered memory region of the requester: R_key, length in bytes, remote address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RdmaSegment {
    /// The R_key (steering tag) of the region.
    pub handle: u32,
    /// Length of the region in bytes.
    pub length: u32,
    /// Remote virtual address or offset of the region.
    pub offset: u64,
}

/// One Read list entry as it appears on the wire: a position and a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReadSegment {
    /// Byte offset in the unreduced RPC message where the chunk's data belongs.
    pub position: u32,
    /// The requester memory to pull from.
    pub seg: RdmaSegment,
}

/// Read segments that follow one another with the same position: one data item (or, at
/// position zero, the whole RPC call).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadChunk {
    /// Byte offset in the unreduced RPC message; zero marks the Position-Zero Read chunk.
    pub position: u32,
    /// The segments, concatenated in order.
    pub segments: Vec<RdmaSegment>,
}

impl ReadChunk {
    /// Total bytes described by the segments.
    pub fn len(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.length)).sum()
    }

    /// True when the segments describe no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True for the Position-Zero Read chunk, which carries the whole RPC call.
    pub fn is_call_chunk(&self) -> bool {
        self.position == 0
    }
}

/// A Write chunk: requester memory the responder may RDMA Write into, filled in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct WriteChunk(pub Vec<RdmaSegment>);

impl WriteChunk {
    /// Total bytes the segments can hold (in a reply header: bytes actually written).
    pub fn capacity(&self) -> u64 {
        self.0.iter().map(|s| u64::from(s.length)).sum()
    }

    /// The segments in fill order.
    pub fn segments(&self) -> &[RdmaSegment] {
        &self.0
    }
}

/// The body of an RDMA_ERROR message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// ERR_VERS: the inclusive range of versions the sender supports.
    Vers {
        /// Lowest supported version.
        low: u32,
        /// Highest supported version.
        high: u32,
    },
    /// ERR_CHUNK: the header or its chunks could not be parsed or used.
    Chunk,
}

impl ErrorKind {
    /// The ERR_VERS body this implementation sends: version 1 only.
    pub const OUR_VERSIONS: ErrorKind = ErrorKind::Vers {
        low: RPCRDMA_VERSION,
        high: RPCRDMA_VERSION,
    };
}

/// The message type (`rdma_proc`) with its type-specific body. RDMA_MSGP and RDMA_DONE are
/// never produced: RFC 8166 section 4.6 withdrew them and decoding rejects them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proc {
    /// RDMA_MSG: the RPC message follows the chunk lists inline.
    Msg,
    /// RDMA_NOMSG: the RPC message travels in a Position-Zero Read chunk or the Reply chunk.
    NoMsg,
    /// RDMA_ERROR with its error body.
    Error(ErrorKind),
}

impl Proc {
    /// The `rdma_proc` value on the wire.
    pub fn wire_value(&self) -> u32 {
        match self {
            Proc::Msg => RDMA_MSG,
            Proc::NoMsg => RDMA_NOMSG,
            Proc::Error(_) => RDMA_ERROR,
        }
    }
}

/// A decoded or to-be-encoded RPC-over-RDMA version 1 transport header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// `rdma_xid`: mirrors the XID of the RPC message.
    pub xid: u32,
    /// `rdma_vers`: 1 (an RDMA_ERROR echoes the version of the message it answers).
    pub vers: u32,
    /// `rdma_credit`: credits requested (in a call) or granted (in a reply).
    pub credits: u32,
    /// `rdma_proc` and its body.
    pub proc_: Proc,
    /// Read chunks in wire order (adjacent segments with equal positions grouped).
    pub read_list: Vec<ReadChunk>,
    /// Write chunks in wire order.
    pub write_list: Vec<WriteChunk>,
    /// The Reply chunk, if any.
    pub reply_chunk: Option<WriteChunk>,
}

impl Header {
    /// An RDMA_MSG header without chunks.
    pub fn msg(xid: u32, credits: u32) -> Self {
        Header {
            xid,
            vers: RPCRDMA_VERSION,
            credits,
            proc_: Proc::Msg,
            read_list: Vec::new(),
            write_list: Vec::new(),
            reply_chunk: None,
        }
    }

    /// An RDMA_ERROR header answering a message whose first two words were `xid` and `vers`
    /// (RFC 8166 4.5: both are echoed), granting `credits`.
    pub fn error(xid: u32, vers: u32, credits: u32, kind: ErrorKind) -> Self {
        Header {
            xid,
            vers,
            credits,
            proc_: Proc::Error(kind),
            read_list: Vec::new(),
            write_list: Vec::new(),
            reply_chunk: None,
        }
    }

    /// The Position-Zero Read chunk (the whole RPC call), if the Read list starts with one.
    pub fn call_chunk(&self) -> Option<&ReadChunk> {
        self.read_list.first().filter(|c| c.is_call_chunk())
    }

    /// The Read list as wire entries, in order.
    pub fn read_segments(&self) -> impl Iterator<Item = ReadSegment> + '_ {
        self.read_list.iter().flat_map(|c| {
            c.segments.iter().map(move |s| ReadSegment {
                position: c.position,
                seg: *s,
            })
        })
    }

    /// Every segment of every chunk: Read list, Write list, then Reply chunk.
    pub fn all_segments(&self) -> impl Iterator<Item = &RdmaSegment> + '_ {
        self.read_list
            .iter()
            .flat_map(|c| c.segments.iter())
            .chain(self.write_list.iter().flat_map(|c| c.0.iter()))
            .chain(self.reply_chunk.iter().flat_map(|c| c.0.iter()))
    }

    /// Bytes [`Header::encode`] produces.
    pub fn encoded_len(&self) -> usize {
        FIXED_LEN
            + match &self.proc_ {
                Proc::Error(ErrorKind::Vers { .. }) => 12,
                Proc::Error(ErrorKind::Chunk) => 4,
                Proc::Msg | Proc::NoMsg => {
                    let reads: usize = self.read_list.iter().map(|c| c.segments.len()).sum();
                    let writes: usize = self
                        .write_list
                        .iter()
                        .map(|c| 8 + SEGMENT_LEN * c.0.len())
                        .sum();
                    let reply = self
                        .reply_chunk
                        .as_ref()
                        .map_or(0, |c| 4 + SEGMENT_LEN * c.0.len());
                    reads * READ_ENTRY_LEN + 4 + writes + 4 + 4 + reply
                }
            }
    }

    /// Encodes the header. For RDMA_ERROR the chunk lists are not part of the message and are
    /// ignored; a Read chunk without segments encodes as nothing.
    pub fn encode(&self) -> Bytes {
        let mut e = Encoder::with_capacity(self.encoded_len());
        e.u32(self.xid);
        e.u32(self.vers);
        e.u32(self.credits);
        e.u32(self.proc_.wire_value());
        match &self.proc_ {
            Proc::Error(ErrorKind::Vers { low, high }) => {
                e.u32(ERR_VERS);
                e.u32(*low);
                e.u32(*high);
            }
            Proc::Error(ErrorKind::Chunk) => e.u32(ERR_CHUNK),
            Proc::Msg | Proc::NoMsg => {
                for rs in self.read_segments() {
                    e.bool(true);
                    e.u32(rs.position);
                    encode_segment(&mut e, &rs.seg);
                }
                e.bool(false);
                for wc in &self.write_list {
                    e.bool(true);
                    encode_write_chunk(&mut e, wc);
                }
                e.bool(false);
                e.optional(self.reply_chunk.as_ref(), encode_write_chunk);
            }
        }
        e.finish().to_bytes()
    }

    /// Decodes the header at the start of a received message and returns it with the offset
    /// of the first byte after it (where an RDMA_MSG's RPC message begins).
    ///
    /// Counts and lengths are bounded by `limits` as they are read. A message shorter than the
    /// fixed words, or one that is not an RDMA_ERROR and is shorter than [`MIN_HEADER_LEN`],
    /// fails with [`ValidationError::Short`] (RFC 8166 4.5: its XID cannot be trusted). The
    /// version is checked before anything after `rdma_proc` is parsed.
    pub fn decode(msg: &Bytes, limits: &Limits) -> Result<(Header, usize), ValidationError> {
        if msg.len() > limits.max_inline {
            return Err(ValidationError::MessageTooLong {
                len: msg.len(),
                max: limits.max_inline,
            });
        }
        if msg.len() < FIXED_LEN {
            return Err(ValidationError::Short { len: msg.len() });
        }
        let mut d = Decoder::new(msg.clone());
        let xid = d.u32()?;
        let vers = d.u32()?;
        let credits = d.u32()?;
        let proc_ = d.u32()?;

        if proc_ == RDMA_ERROR {
            // The position and value of rdma_proc and RDMA_ERROR are fixed for all versions;
            // an error we cannot decode is silently discarded (RFC 8166 4.5).
            if vers != RPCRDMA_VERSION {
                return Err(ValidationError::BadErrorMessage);
            }
            let kind = match d.u32().map_err(|_| ValidationError::BadErrorMessage)? {
                ERR_VERS => {
                    let low = d.u32().map_err(|_| ValidationError::BadErrorMessage)?;
                    let high = d.u32().map_err(|_| ValidationError::BadErrorMessage)?;
                    ErrorKind::Vers { low, high }
                }
                ERR_CHUNK => ErrorKind::Chunk,
                _ => return Err(ValidationError::BadErrorMessage),
            };
            let end = msg.len() - d.remaining();
            return Ok((Header::error(xid, vers, credits, kind), end));
        }
        if msg.len() < MIN_HEADER_LEN {
            return Err(ValidationError::Short { len: msg.len() });
        }
        if vers != RPCRDMA_VERSION {
            return Err(ValidationError::BadVersion { vers });
        }
        let proc_ = match proc_ {
            RDMA_MSG => Proc::Msg,
            RDMA_NOMSG => Proc::NoMsg,
            RDMA_MSGP => return Err(ValidationError::MsgpNotSupported),
            RDMA_DONE => return Err(ValidationError::DoneNotSupported),
            other => return Err(ValidationError::BadProc(other)),
        };
        let read_list = decode_read_list(&mut d, limits)?;
        let write_list = decode_write_list(&mut d, limits)?;
        let reply_chunk = if d.bool()? {
            Some(decode_write_chunk(&mut d, limits)?)
        } else {
            None
        };
        let end = msg.len() - d.remaining();
        Ok((
            Header {
                xid,
                vers,
                credits,
                proc_,
                read_list,
                write_list,
                reply_chunk,
            },
            end,
        ))
    }
}

fn encode_segment(e: &mut Encoder, s: &RdmaSegment) {
    e.u32(s.handle);
    e.u32(s.length);
    e.u64(s.offset);
}

fn encode_write_chunk(e: &mut Encoder, c: &WriteChunk) {
    e.u32(c.0.len() as u32);
    for s in &c.0 {
        encode_segment(e, s);
    }
}

fn decode_segment(d: &mut Decoder, limits: &Limits) -> Result<RdmaSegment, ValidationError> {
    let handle = d.u32()?;
    let length = d.u32()?;
    let offset = d.u64()?;
    if length > limits.max_segment_len {
        return Err(ValidationError::SegmentTooLong {
            len: length,
            max: limits.max_segment_len,
        });
    }
    Ok(RdmaSegment {
        handle,
        length,
        offset,
    })
}

fn decode_read_list(d: &mut Decoder, limits: &Limits) -> Result<Vec<ReadChunk>, ValidationError> {
    let mut chunks: Vec<ReadChunk> = Vec::new();
    let mut count = 0usize;
    while d.bool()? {
        count += 1;
        if count > limits.max_read_segments {
            return Err(ValidationError::TooManyReadSegments {
                max: limits.max_read_segments,
            });
        }
        let position = d.u32()?;
        let seg = decode_segment(d, limits)?;
        if seg.length == 0 {
            return Err(ValidationError::ZeroLengthReadSegment { position });
        }
        match chunks.last_mut() {
            Some(c) if c.position == position => c.segments.push(seg),
            _ => chunks.push(ReadChunk {
                position,
                segments: vec![seg],
            }),
        }
    }
    Ok(chunks)
}

fn decode_write_list(d: &mut Decoder, limits: &Limits) -> Result<Vec<WriteChunk>, ValidationError> {
    let mut chunks = Vec::new();
    while d.bool()? {
        if chunks.len() >= limits.max_write_chunks {
            return Err(ValidationError::TooManyWriteChunks {
                max: limits.max_write_chunks,
            });
        }
        chunks.push(decode_write_chunk(d, limits)?);
    }
    Ok(chunks)
}

fn decode_write_chunk(d: &mut Decoder, limits: &Limits) -> Result<WriteChunk, ValidationError> {
    let n = match d.array_len(limits.max_segments_per_chunk, SEGMENT_LEN) {
        Ok(n) => n,
        Err(xdr::XdrError::TooLong { len, .. }) => {
            return Err(ValidationError::TooManySegments {
                count: len,
                max: limits.max_segments_per_chunk,
            })
        }
        Err(e) => return Err(e.into()),
    };
    let mut segs = Vec::with_capacity(n);
    for _ in 0..n {
        segs.push(decode_segment(d, limits)?);
    }
    Ok(WriteChunk(segs))
}
