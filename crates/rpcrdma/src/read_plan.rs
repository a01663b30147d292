//! Read chunks on the receive side (RFC 8166 3.4.5, 3.5.3): which RDMA Reads pull a call's
//! chunks, and how the pulled data is spliced back into the RPC call.
//!
//! * A Position-Zero Read chunk (RDMA_NOMSG "long call") carries the whole RPC call: the pulled
//!   bytes are the message, and the inline bytes after the transport header are ignored.
//! * A Read chunk at a non-zero position carries one data item (an NFS WRITE payload, a
//!   SYMLINK path) that the requester removed from the message. Positions count bytes of the
//!   *unreduced* message, so a chunk's position includes the (rounded-up) length of every
//!   chunk before it. The length word of the item stays in the inline stream.
//! * XDR roundup: the requester leaves the item's padding out of the inline stream and should
//!   leave it out of the chunk (RFC 8166 3.4.5.2), so the inline stream resumes right at the
//!   position. When reassembling, a chunk whose length is not a multiple of four is followed
//!   by `pad4(len) - len` zero bytes; a chunk that already includes its roundup gets none.
//!   knfsd's `svc_rdma_read_complete_one` does the same (`xdr_align_size(ch_length)`).
//! * When a Position-Zero Read chunk and other Read chunks come together, the other chunks'
//!   positions refer to the call carried in the Position-Zero chunk (knfsd
//!   `svc_rdma_read_call_chunk`).
//!
//! # Zero copy
//!
//! All RDMA Reads land in one local buffer of [`ReadPlan::pull_len`] bytes: the Position-Zero
//! chunk first, then each data chunk in position order, each contiguous. [`ReadPlan::assemble`]
//! returns the call as a list of `Bytes` pieces that are slices of the receive buffer and of
//! that pull buffer, plus static zero padding, so a WRITE payload stays one untouched piece of
//! the pull buffer. Until the RPC decoder can walk a list of pieces, [`assemble_contiguous`]
//! copies the pieces into one buffer (a single piece is returned without copying).

use bytes::{Bytes, BytesMut};

use crate::header::{Header, Proc, RdmaSegment};
use crate::limits::ValidationError;

static ZEROS: [u8; 3] = [0; 3];

/// One RDMA Read: pull `remote.length` bytes from the requester into the pull buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RdmaRead {
    /// The requester's segment (R_key, length, address).
    pub remote: RdmaSegment,
    /// Where the bytes go in the local pull buffer.
    pub local_offset: usize,
}

/// Where one data-item Read chunk lands locally and where it belongs in the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlacedChunk {
    /// The chunk's position in the unreduced call.
    pub position: u32,
    /// Offset in the reduced message (inline bytes or Position-Zero chunk) where it is inserted.
    pub base_offset: usize,
    /// Offset of its data in the pull buffer.
    pub pull_offset: usize,
    /// Bytes of data (roundup padding not included).
    pub len: usize,
}

/// The RDMA Reads a call needs and how to splice their data into the RPC call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPlan {
    reads: Vec<RdmaRead>,
    pull_len: usize,
    call_len: Option<usize>,
    chunks: Vec<PlacedChunk>,
    base_len: usize,
    message_len: usize,
    xid: u32,
}

fn pad4(n: u64) -> u64 {
    (n + 3) & !3
}

fn to_usize(v: u64) -> Result<usize, ValidationError> {
    usize::try_from(v).map_err(|_| ValidationError::PlanMismatch)
}

impl ReadPlan {
    /// Plans the Reads for a call header whose inline RPC bytes (after the transport header)
    /// are `inline_len` long. Checks RDMA_MSG/RDMA_NOMSG against the Position-Zero chunk, and
    /// that non-zero positions are 4-byte aligned, increasing, not inside the previous chunk's
    /// data, and not beyond the end of the message they are inserted into. Counts and lengths
    /// are not checked against [`crate::Limits`] here: for a received header use
    /// [`crate::Limits::validate_call`], which does both.
    pub fn new(header: &Header, inline_len: usize) -> Result<Self, ValidationError> {
        let call = header.call_chunk();
        match (header.proc_, call) {
            (Proc::Error(_), _) => return Err(ValidationError::UnexpectedError),
            (Proc::Msg, Some(_)) => return Err(ValidationError::MsgWithCallChunk),
            (Proc::NoMsg, None) => return Err(ValidationError::NoMsgWithoutCallChunk),
            _ => {}
        }
        let mut plan = ReadPlan {
            xid: header.xid,
            ..ReadPlan::default()
        };
        let mut pull: u64 = 0;
        let base_len = match call {
            Some(c) => {
                plan.push_reads(&mut pull, &c.segments, 0)?;
                let len = c.len();
                plan.call_len = Some(to_usize(len)?);
                len
            }
            None => inline_len as u64,
        };
        let rest = &header.read_list[usize::from(call.is_some())..];
        let mut assembled: u64 = 0; // bytes of the unreduced message placed so far
        let mut consumed: u64 = 0; // bytes of the reduced message placed so far
        for c in rest {
            let position = c.position;
            if position == 0 || u64::from(position) < assembled {
                return Err(ValidationError::PositionOutOfOrder { position });
            }
            if position % 4 != 0 {
                return Err(ValidationError::MisalignedPosition { position });
            }
            let gap = u64::from(position) - assembled;
            if consumed + gap > base_len {
                return Err(ValidationError::PositionBeyondEnd {
                    position,
                    len: base_len,
                });
            }
            consumed += gap;
            let pull_offset = to_usize(pull)?;
            plan.push_reads(&mut pull, &c.segments, position)?;
            let len = c.len();
            plan.chunks.push(PlacedChunk {
                position,
                base_offset: to_usize(consumed)?,
                pull_offset,
                len: to_usize(len)?,
            });
            assembled = u64::from(position) + pad4(len);
        }
        plan.pull_len = to_usize(pull)?;
        plan.base_len = to_usize(base_len)?;
        plan.message_len = to_usize(assembled + (base_len - consumed))?;
        Ok(plan)
    }

    fn push_reads(
        &mut self,
        pull: &mut u64,
        segs: &[RdmaSegment],
        position: u32,
    ) -> Result<(), ValidationError> {
        for s in segs {
            if s.length == 0 {
                return Err(ValidationError::ZeroLengthReadSegment { position });
            }
            self.reads.push(RdmaRead {
                remote: *s,
                local_offset: to_usize(*pull)?,
            });
            *pull += u64::from(s.length);
        }
        Ok(())
    }

    /// The RDMA Reads to post, in pull-buffer order.
    pub fn reads(&self) -> &[RdmaRead] {
        &self.reads
    }

    /// True when the call has no Read chunks: the inline bytes are the whole call.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }

    /// Size of the local buffer all Reads land in.
    pub fn pull_len(&self) -> usize {
        self.pull_len
    }

    /// Length of the Position-Zero Read chunk (the whole call) if there is one.
    pub fn call_chunk_len(&self) -> Option<usize> {
        self.call_len
    }

    /// The data-item chunks in position order.
    pub fn chunks(&self) -> &[PlacedChunk] {
        &self.chunks
    }

    /// Length of the reassembled RPC call, padding included.
    pub fn message_len(&self) -> usize {
        self.message_len
    }

    /// Splices the pulled data into the call. `inline` is the received bytes after the
    /// transport header (ignored for a Position-Zero chunk); `pulled` is the pull buffer after
    /// all Reads completed (at least [`ReadPlan::pull_len`] bytes). Returns the call as pieces
    /// in order; every piece but padding is a slice of `inline` or `pulled`.
    pub fn assemble(&self, inline: &Bytes, pulled: &Bytes) -> Result<Vec<Bytes>, ValidationError> {
        if pulled.len() < self.pull_len {
            return Err(ValidationError::PlanMismatch);
        }
        let base = match self.call_len {
            Some(len) => pulled.slice(..len),
            None if inline.len() == self.base_len => inline.clone(),
            None => return Err(ValidationError::PlanMismatch),
        };
        let mut pieces = Vec::with_capacity(2 * self.chunks.len() + 1);
        let mut cursor = 0;
        for c in &self.chunks {
            if c.base_offset > cursor {
                pieces.push(base.slice(cursor..c.base_offset));
            }
            cursor = c.base_offset;
            pieces.push(pulled.slice(c.pull_offset..c.pull_offset + c.len));
            let pad = (4 - c.len % 4) % 4;
            if pad > 0 {
                pieces.push(Bytes::from_static(&ZEROS[..pad]));
            }
        }
        if cursor < base.len() {
            pieces.push(base.slice(cursor..));
        }
        if self.call_len.is_some() {
            let mut w = [0u8; 4];
            let mut got = 0;
            for p in &pieces {
                let n = (4 - got).min(p.len());
                w[got..got + n].copy_from_slice(&p[..n]);
                got += n;
                if got == 4 {
                    break;
                }
            }
            if got < 4 {
                return Err(ValidationError::NoRpcMessage);
            }
            let rpc = u32::from_be_bytes(w);
            if rpc != self.xid {
                return Err(ValidationError::XidMismatch {
                    header: self.xid,
                    rpc,
                });
            }
        }
        Ok(pieces)
    }
}

/// Joins assembled pieces into one buffer; a single piece is returned as is, without copying.
pub fn assemble_contiguous(pieces: &[Bytes]) -> Bytes {
    match pieces {
        [] => Bytes::new(),
        [one] => one.clone(),
        many => {
            let mut out = BytesMut::with_capacity(many.iter().map(Bytes::len).sum());
            for p in many {
                out.extend_from_slice(p);
            }
            out.freeze()
        }
    }
}
