//! Read chunks on the receive side (RFC 8166 3.4.5, 3.5.3): which RDMA Reads pull a call's
//! chunks, and where every byte of the reassembled RPC call goes.
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
//! The call is rebuilt in one registered buffer of [`ReadPlan::message_len`] bytes, each byte
//! written once at its final offset: every RDMA Read lands where its data belongs in the call
//! (a Position-Zero chunk is read in pieces around the data items inserted into it), and only
//! the inline bytes around the chunks (the RPC header and arguments, a few hundred bytes) and
//! the roundup padding are written by the CPU ([`ReadPlan::fill`]). A WRITE payload is never
//! copied: the program gets it as a slice of the buffer the RDMA Read filled.

use std::ops::Range;

use crate::header::{Header, Proc, RdmaSegment};
use crate::limits::ValidationError;

/// One RDMA Read: pull `remote.length` bytes from the requester into the message buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RdmaRead {
    /// The requester's segment, or the part of it that lands at `local_offset`.
    pub remote: RdmaSegment,
    /// Where the bytes go in the message buffer.
    pub local_offset: usize,
}

/// Where one data-item Read chunk belongs in the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlacedChunk {
    /// The chunk's position in the unreduced call.
    pub position: u32,
    /// Offset in the reduced message (inline bytes or Position-Zero chunk) where it is inserted.
    pub base_offset: usize,
    /// Offset of its data in the reassembled call.
    pub offset: usize,
    /// Bytes of data (roundup padding not included).
    pub len: usize,
}

/// Inline bytes the CPU copies into the message buffer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InlineCopy {
    from: Range<usize>,
    at: usize,
}

/// The RDMA Reads a call needs and where every byte of the call goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadPlan {
    reads: Vec<RdmaRead>,
    copies: Vec<InlineCopy>,
    pads: Vec<Range<usize>>,
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
        for c in &header.read_list {
            if c.segments.iter().any(|s| s.length == 0) {
                return Err(ValidationError::ZeroLengthReadSegment {
                    position: c.position,
                });
            }
        }
        let mut plan = ReadPlan {
            xid: header.xid,
            ..ReadPlan::default()
        };
        let base: &[RdmaSegment] = call.map_or(&[], |c| &c.segments);
        let base_len = match call {
            Some(c) => {
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
            plan.place_base(base, consumed..consumed + gap, assembled)?;
            consumed += gap;
            let mut at = u64::from(position);
            for s in &c.segments {
                plan.push_read(*s, at)?;
                at += u64::from(s.length);
            }
            let len = c.len();
            if pad4(len) > len {
                plan.pads
                    .push(to_usize(at)?..to_usize(u64::from(position) + pad4(len))?);
            }
            plan.chunks.push(PlacedChunk {
                position,
                base_offset: to_usize(consumed)?,
                offset: to_usize(u64::from(position))?,
                len: to_usize(len)?,
            });
            assembled = u64::from(position) + pad4(len);
        }
        plan.place_base(base, consumed..base_len, assembled)?;
        plan.base_len = to_usize(base_len)?;
        plan.message_len = to_usize(assembled + (base_len - consumed))?;
        Ok(plan)
    }

    /// Places bytes `range` of the reduced message at offset `at` of the call: a copy from the
    /// inline stream, or RDMA Reads of the parts of the Position-Zero chunk's segments
    /// (`base`) that hold them.
    fn place_base(
        &mut self,
        base: &[RdmaSegment],
        range: Range<u64>,
        at: u64,
    ) -> Result<(), ValidationError> {
        if range.is_empty() {
            return Ok(());
        }
        if base.is_empty() {
            self.copies.push(InlineCopy {
                from: to_usize(range.start)?..to_usize(range.end)?,
                at: to_usize(at)?,
            });
            return Ok(());
        }
        let mut start = 0u64; // offset of `s` in the Position-Zero chunk
        for s in base {
            let end = start + u64::from(s.length);
            let lo = range.start.max(start);
            let hi = range.end.min(end);
            if lo < hi {
                let part = RdmaSegment {
                    handle: s.handle,
                    // hi - lo <= s.length, a u32
                    length: (hi - lo) as u32,
                    offset: s.offset.wrapping_add(lo - start),
                };
                self.push_read(part, at + (lo - range.start))?;
            }
            start = end;
        }
        Ok(())
    }

    fn push_read(&mut self, remote: RdmaSegment, at: u64) -> Result<(), ValidationError> {
        self.reads.push(RdmaRead {
            remote,
            local_offset: to_usize(at)?,
        });
        self.pull_len += remote.length as usize;
        Ok(())
    }

    /// The RDMA Reads to post, each to its final offset in the message buffer.
    pub fn reads(&self) -> &[RdmaRead] {
        &self.reads
    }

    /// True when the call has no Read chunks: the inline bytes are the whole call.
    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }

    /// Bytes the RDMA Reads pull from the requester.
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

    /// Length of the reassembled RPC call, padding included: the message buffer's size.
    pub fn message_len(&self) -> usize {
        self.message_len
    }

    /// Bytes [`ReadPlan::fill`] copies from the inline stream.
    pub fn copied_len(&self) -> usize {
        self.copies.iter().map(|c| c.from.len()).sum()
    }

    /// Every byte range of the call the plan writes (Reads, inline copies, padding), sorted by
    /// offset. For a valid plan they tile `0..message_len()` without gap or overlap, which is
    /// what makes the reassembled call exactly the requester's (the tests and the fuzz target
    /// check it).
    pub fn extents(&self) -> Vec<Range<usize>> {
        let mut v: Vec<Range<usize>> = self
            .reads
            .iter()
            .map(|r| r.local_offset..r.local_offset + r.remote.length as usize)
            .chain(self.copies.iter().map(|c| c.at..c.at + c.from.len()))
            .chain(self.pads.iter().cloned())
            .collect();
        v.sort_by_key(|r| r.start);
        v
    }

    /// Writes what the RDMA Reads do not into the message buffer `msg`: the inline bytes
    /// around the chunks (`inline` is the received bytes after the transport header, ignored
    /// for a Position-Zero chunk) and the roundup padding. The Reads and this touch disjoint
    /// bytes, so either may come first; together they fill `msg[..message_len]` exactly.
    pub fn fill(&self, inline: &[u8], msg: &mut [u8]) -> Result<(), ValidationError> {
        if msg.len() < self.message_len
            || (self.call_len.is_none() && inline.len() != self.base_len)
        {
            return Err(ValidationError::PlanMismatch);
        }
        for c in &self.copies {
            msg[c.at..c.at + c.from.len()].copy_from_slice(&inline[c.from.clone()]);
        }
        for p in &self.pads {
            msg[p.clone()].fill(0);
        }
        Ok(())
    }

    /// Checks the reassembled call: a Position-Zero chunk must carry the call whose XID the
    /// transport header announced (RFC 8166 4.1.1).
    pub fn check(&self, msg: &[u8]) -> Result<(), ValidationError> {
        if self.call_len.is_none() {
            return Ok(());
        }
        let Some(w) = msg.get(..4) else {
            return Err(ValidationError::NoRpcMessage);
        };
        let rpc = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
        if rpc != self.xid {
            return Err(ValidationError::XidMismatch {
                header: self.xid,
                rpc,
            });
        }
        Ok(())
    }
}
