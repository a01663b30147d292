//! Resource limits, validation of received headers, and what to do about a bad one.
//!
//! # Dispositions (RFC 8166 section 4.5)
//!
//! * A message too short to hold a header (fewer than 28 bytes, or 16 for RDMA_ERROR) cannot
//!   be trusted even for its XID: it is silently discarded.
//! * A version other than 1: RDMA_ERROR / ERR_VERS with our range (1, 1), echoing the XID and
//!   the version (RFC 8166 4.5.1).
//! * Any other XDR or chunk problem in a call header (bad `rdma_proc`, RDMA_MSGP, truncated or
//!   malformed lists, RDMA_NOMSG without a Position-Zero Read chunk, an XID that differs from
//!   the RPC message's, or chunks beyond our limits): RDMA_ERROR / ERR_CHUNK, then the call is
//!   dropped; the connection stays up (RFC 8166 4.5.3; knfsd `svc_rdma_send_error_msg`).
//! * RDMA_DONE (withdrawn by RFC 8166 4.6) and an RDMA_ERROR sent to the responder: silently
//!   discarded, never answered (knfsd does the same; answering an error invites a loop).
//! * The peer overrunning its credits or its inline threshold: close the connection. RFC 8166
//!   3.3.1 says exceeding the grant "may signal an error, possibly terminating the connection";
//!   both mean the peer ignores the connection's negotiated resources, so nothing it sends on
//!   this connection can be relied on.
//!
//! # Credits (RFC 8166 3.3.1, 4.2.3)
//!
//! In a call `rdma_credit` is the number of credits the requester asks for; in a reply it is
//! the number the responder grants, and the granted value MUST NOT be zero (it would
//! deadlock). A request value is never an error: [`Limits::grant`] returns
//! `min(max(requested, 1), max_credits)`, so a request of 0 still gets 1 credit (the connection
//! cannot stall) and a request of 2^32-1 gets `max_credits`. The Linux client asks for its
//! slot count (128) in every call, so against it this equals knfsd, which ignores the request
//! and always grants its fixed maximum.
//!
//! # Sharing the receive queue (flow control)
//!
//! All connections of a device receive from one shared receive queue, so the credits granted
//! are a share of its buffers: [`Limits::fair_share`] caps each connection's grant at
//! `receive buffers / connections` (never below [`MIN_SHARE`], never above `max_credits`),
//! recomputed for every reply. A connection that arrives lowers everyone's next grant; one
//! that leaves raises it. The grant only bounds what a well-behaved client sends; when many
//! connections burst at once and the queue runs dry anyway, the client's Send gets an RNR NAK
//! and is retried by its adapter (we accept with `rnr_retry_count` 7, "retry forever", which
//! the connection manager hands to the client's QP), so a dry queue costs latency, never the
//! connection. The credit overrun check stays against `max_credits`, the most ever granted: a
//! client may have calls in flight from a larger earlier grant.

use bytes::Bytes;

use crate::header::{ErrorKind, Header, Proc};
use crate::read_plan;

/// Receive-side resource limits; every count and length from the wire is checked against them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most Read list entries (segments) in one header, all chunks together.
    pub max_read_segments: usize,
    /// Most Write chunks in the Write list. 1: the Linux client uses at most one and RFC 8267
    /// lets NFS clients rely on servers accepting one.
    pub max_write_chunks: usize,
    /// Most segments in one Write chunk or the Reply chunk.
    pub max_segments_per_chunk: usize,
    /// Largest segment length accepted, in bytes.
    pub max_segment_len: u32,
    /// Largest message we receive: the negotiated inline receive size (our Receive buffers).
    pub max_inline: usize,
    /// Most credits granted to a peer.
    pub max_credits: u32,
}

/// Largest NFS READ/WRITE payload the server is configured for (1 MiB).
pub const MAX_IO: u32 = 1 << 20;

/// Bytes per bulk buffer: a call with a Read chunk is rebuilt in one (its inline part is at
/// most the largest inline size), so a WRITE of [`MAX_IO`] needs this much.
pub const BULK_SIZE: usize = MAX_IO as usize + crate::private_data::MAX_INLINE as usize;

/// Default most Read list entries in a header, and most segments in a Write or Reply chunk.
/// The Linux client puts at most 16 segments in a header (RPCRDMA_MAX_HDR_SEGS); this bound
/// also bounds the work requests of one batch, which sizes every connection's send queue
/// ([`MIN_SEND_DEPTH`]).
pub const MAX_SEGMENTS: usize = 32;

/// The smallest send queue that takes any batch the default limits let through: a reply's
/// Write chunk and Reply chunk segments plus its Send, or a call's RDMA Reads (a Position-Zero
/// chunk is read in pieces around the data items: at most twice its segments).
pub const MIN_SEND_DEPTH: u32 = 2 * MAX_SEGMENTS as u32 + 1;

/// Smallest credit cap [`Limits::fair_share`] gives a connection, however many share the
/// receive queue: below this a client cannot keep a few reads and writes in flight.
pub const MIN_SHARE: u32 = 8;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_read_segments: MAX_SEGMENTS,
            max_write_chunks: 1,
            max_segments_per_chunk: MAX_SEGMENTS,
            // 1 MiB of I/O plus room for an RPC reply header in a Reply chunk segment.
            max_segment_len: MAX_IO + 64 * 1024,
            max_inline: 4096,
            max_credits: 128,
        }
    }
}

/// What the transport does with a message that failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Disposition {
    /// Drop the message without any answer; the connection stays up.
    Discard,
    /// Answer with an RDMA_ERROR carrying this body, drop the call; the connection stays up.
    ReplyError(ErrorKind),
    /// Close the connection.
    Close,
}

/// Why a received transport header (or its chunk data) cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The message is shorter than the smallest header for its type.
    #[error("message of {len} bytes is too short for an RPC-over-RDMA header")]
    Short {
        /// Bytes received.
        len: usize,
    },
    /// The message is longer than our inline receive size.
    #[error("message of {len} bytes exceeds the inline receive size {max}")]
    MessageTooLong {
        /// Bytes received.
        len: usize,
        /// The negotiated receive size.
        max: usize,
    },
    /// `rdma_vers` is not 1.
    #[error("unsupported RPC-over-RDMA version {vers}")]
    BadVersion {
        /// The version received.
        vers: u32,
    },
    /// `rdma_proc` holds a value no version-1 message type has.
    #[error("invalid rdma_proc {0}")]
    BadProc(u32),
    /// RDMA_MSGP, withdrawn by RFC 8166 4.6.
    #[error("RDMA_MSGP is not supported")]
    MsgpNotSupported,
    /// RDMA_DONE, withdrawn by RFC 8166 4.6.
    #[error("RDMA_DONE is not supported")]
    DoneNotSupported,
    /// An RDMA_ERROR whose body cannot be decoded.
    #[error("undecodable RDMA_ERROR message")]
    BadErrorMessage,
    /// An RDMA_ERROR arrived where a call was expected.
    #[error("RDMA_ERROR received by the responder")]
    UnexpectedError,
    /// The header runs past the end of the message.
    #[error("header runs past the end of the message")]
    Truncated,
    /// A list discriminator or other XDR value is invalid.
    #[error("malformed header: {0}")]
    Xdr(xdr::XdrError),
    /// More Read list entries than [`Limits::max_read_segments`].
    #[error("more than {max} read segments")]
    TooManyReadSegments {
        /// The limit.
        max: usize,
    },
    /// More Write chunks than [`Limits::max_write_chunks`].
    #[error("more than {max} write chunks")]
    TooManyWriteChunks {
        /// The limit.
        max: usize,
    },
    /// A Write or Reply chunk with more segments than [`Limits::max_segments_per_chunk`].
    #[error("chunk of {count} segments exceeds {max}")]
    TooManySegments {
        /// Segment count from the wire.
        count: u64,
        /// The limit.
        max: usize,
    },
    /// A segment longer than [`Limits::max_segment_len`].
    #[error("segment of {len} bytes exceeds {max}")]
    SegmentTooLong {
        /// Length from the wire.
        len: u32,
        /// The limit.
        max: u32,
    },
    /// A Read segment of length zero: it can carry nothing and no requester needs one.
    #[error("zero-length read segment at position {position}")]
    ZeroLengthReadSegment {
        /// Its position.
        position: u32,
    },
    /// A non-zero Read chunk position that is not a multiple of four.
    #[error("read chunk position {position} is not 4-byte aligned")]
    MisalignedPosition {
        /// The position.
        position: u32,
    },
    /// A Read chunk position past the end of the message it is inserted into.
    #[error("read chunk position {position} is beyond the {len}-byte message")]
    PositionBeyondEnd {
        /// The position.
        position: u32,
        /// Length of the message the chunks are spliced into.
        len: u64,
    },
    /// Read chunks whose positions do not increase, or overlap the previous chunk's data.
    #[error("read chunk position {position} is out of order")]
    PositionOutOfOrder {
        /// The offending position.
        position: u32,
    },
    /// RDMA_MSG with a Position-Zero Read chunk: the call would be both inline and pulled.
    #[error("RDMA_MSG with a position-zero read chunk")]
    MsgWithCallChunk,
    /// RDMA_NOMSG without a Position-Zero Read chunk: the call carries no RPC message.
    #[error("RDMA_NOMSG call without a position-zero read chunk")]
    NoMsgWithoutCallChunk,
    /// An RDMA_MSG call with fewer than four bytes of RPC message.
    #[error("no RPC message follows the header")]
    NoRpcMessage,
    /// `rdma_xid` differs from the XID of the RPC message (RFC 8166 4.5.3).
    #[error("rdma_xid {header:#x} differs from the RPC xid {rpc:#x}")]
    XidMismatch {
        /// XID in the transport header.
        header: u32,
        /// XID in the RPC message.
        rpc: u32,
    },
    /// The peer has more calls outstanding than it was granted credits.
    #[error("{in_flight} calls in flight exceed the {granted} credits granted")]
    CreditOverrun {
        /// Calls received and not yet answered, this one included.
        in_flight: u32,
        /// Credits granted.
        granted: u32,
    },
    /// Pulled Read chunk data or the inline message do not match the plan they were read for
    /// (a local error, not the peer's).
    #[error("pulled data does not match the read plan")]
    PlanMismatch,
}

impl From<xdr::XdrError> for ValidationError {
    fn from(e: xdr::XdrError) -> Self {
        match e {
            xdr::XdrError::Truncated { .. } => ValidationError::Truncated,
            other => ValidationError::Xdr(other),
        }
    }
}

impl ValidationError {
    /// What the transport does about this error (see the module documentation).
    pub fn disposition(&self) -> Disposition {
        use ValidationError::*;
        match self {
            Short { .. } | DoneNotSupported | BadErrorMessage | UnexpectedError => {
                Disposition::Discard
            }
            BadVersion { .. } => Disposition::ReplyError(ErrorKind::OUR_VERSIONS),
            MessageTooLong { .. } | CreditOverrun { .. } | PlanMismatch => Disposition::Close,
            BadProc(_)
            | MsgpNotSupported
            | Truncated
            | Xdr(_)
            | TooManyReadSegments { .. }
            | TooManyWriteChunks { .. }
            | TooManySegments { .. }
            | SegmentTooLong { .. }
            | ZeroLengthReadSegment { .. }
            | MisalignedPosition { .. }
            | PositionBeyondEnd { .. }
            | PositionOutOfOrder { .. }
            | MsgWithCallChunk
            | NoMsgWithoutCallChunk
            | NoRpcMessage
            | XidMismatch { .. } => Disposition::ReplyError(ErrorKind::Chunk),
        }
    }

    /// The RDMA_ERROR message answering `msg` (the received bytes) when the disposition is
    /// [`Disposition::ReplyError`]: its XID and version echoed, `credits` granted.
    pub fn error_reply(&self, msg: &[u8], credits: u32) -> Option<Bytes> {
        let Disposition::ReplyError(kind) = self.disposition() else {
            return None;
        };
        let word = |i: usize| {
            msg.get(i * 4..i * 4 + 4)
                .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
        };
        let (xid, vers) = (word(0)?, word(1)?);
        Some(Header::error(xid, vers, credits, kind).encode())
    }
}

/// A call that passed validation: its header, the inline RPC bytes, and the RDMA Reads still
/// needed to complete it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The transport header.
    pub header: Header,
    /// The bytes after the header (the RPC call for RDMA_MSG; empty or ignored for RDMA_NOMSG).
    pub inline: Bytes,
    /// RDMA Reads to perform and how to splice their data in; empty when there are none.
    pub reads: read_plan::ReadPlan,
}

impl Limits {
    /// Credits to grant for a request of `requested`: `min(max(requested, 1), max_credits)`,
    /// never zero (RFC 8166 3.3.1).
    pub fn grant(&self, requested: u32) -> u32 {
        self.grant_within(requested, self.max_credits)
    }

    /// Credits to grant for a request of `requested` when this connection's share of the
    /// receive queue is `share` ([`Limits::fair_share`]): never zero, never above either cap.
    pub fn grant_within(&self, requested: u32, share: u32) -> u32 {
        requested.clamp(1, share.min(self.max_credits).max(1))
    }

    /// This connection's cap when `conns` connections share `recv_buffers` posted receive
    /// buffers: an equal share, at least [`MIN_SHARE`] (or `max_credits` when smaller) and at
    /// most `max_credits`.
    pub fn fair_share(&self, recv_buffers: usize, conns: usize) -> u32 {
        let max = self.max_credits.max(1);
        let share = recv_buffers / conns.max(1);
        u32::try_from(share)
            .unwrap_or(u32::MAX)
            .clamp(MIN_SHARE.min(max), max)
    }

    /// Checks that a newly received call keeps the peer within its grant; `in_flight` counts
    /// the calls not yet answered, this one included.
    pub fn check_credits(&self, in_flight: u32, granted: u32) -> Result<(), ValidationError> {
        if in_flight > granted {
            Err(ValidationError::CreditOverrun { in_flight, granted })
        } else {
            Ok(())
        }
    }

    /// Semantic checks of a decoded call header, given the inline bytes that follow it:
    /// message type, counts and lengths against these limits, Read chunk positions
    /// (aligned, increasing, within the message), and the XID of an inline call. Returns the
    /// plan of RDMA Reads the call needs (empty when it has no Read chunks).
    pub fn validate_call(
        &self,
        header: &Header,
        inline: &[u8],
    ) -> Result<read_plan::ReadPlan, ValidationError> {
        match header.proc_ {
            Proc::Msg | Proc::NoMsg => {}
            Proc::Error(_) => return Err(ValidationError::UnexpectedError),
        }
        self.check_counts(header)?;
        let plan = read_plan::ReadPlan::new(header, inline.len())?;
        if header.proc_ == Proc::Msg {
            let Some(w) = inline.get(..4) else {
                return Err(ValidationError::NoRpcMessage);
            };
            let rpc = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
            if rpc != header.xid {
                return Err(ValidationError::XidMismatch {
                    header: header.xid,
                    rpc,
                });
            }
        }
        Ok(plan)
    }

    /// Decodes and validates a received call message and plans its RDMA Reads.
    pub fn accept_call(&self, msg: &Bytes) -> Result<Call, ValidationError> {
        let (header, offset) = Header::decode(msg, self)?;
        let inline = msg.slice(offset..);
        let reads = self.validate_call(&header, &inline)?;
        Ok(Call {
            header,
            inline,
            reads,
        })
    }

    fn check_counts(&self, h: &Header) -> Result<(), ValidationError> {
        let reads: usize = h.read_list.iter().map(|c| c.segments.len()).sum();
        if reads > self.max_read_segments {
            return Err(ValidationError::TooManyReadSegments {
                max: self.max_read_segments,
            });
        }
        if h.write_list.len() > self.max_write_chunks {
            return Err(ValidationError::TooManyWriteChunks {
                max: self.max_write_chunks,
            });
        }
        for c in h.write_list.iter().chain(h.reply_chunk.iter()) {
            if c.0.len() > self.max_segments_per_chunk {
                return Err(ValidationError::TooManySegments {
                    count: c.0.len() as u64,
                    max: self.max_segments_per_chunk,
                });
            }
        }
        for rc in &h.read_list {
            for s in &rc.segments {
                if s.length == 0 {
                    return Err(ValidationError::ZeroLengthReadSegment {
                        position: rc.position,
                    });
                }
            }
        }
        for s in h.all_segments() {
            if s.length > self.max_segment_len {
                return Err(ValidationError::SegmentTooLong {
                    len: s.length,
                    max: self.max_segment_len,
                });
            }
        }
        Ok(())
    }
}
