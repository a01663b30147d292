//! How a reply travels: inline in the Send, with its DDP-eligible payload RDMA-written into the
//! call's Write chunk, or wholly RDMA-written into the Reply chunk (RFC 8166 3.5, RFC 8267).
//!
//! # DDP-eligible items (RFC 8267)
//!
//! NFSv2/v3: the WRITE data and SYMLINK path arguments, the READ data and READLINK path
//! results. NFSv4.x COMPOUND: WRITE4args data, the NF4LNK linkdata of CREATE, READ4resok data,
//! READLINK4resok linkdata. Nothing else; in particular no part of an NFSv4.2 READ_PLUS reply
//! is DDP-eligible (its data comes back through the Reply chunk, which is what the Linux client
//! provisions for it). The program layer states eligibility by encoding exactly those results
//! with [`xdr::Encoder::opaque_bulk`] or [`xdr::Encoder::opaque_payload`]: this planner treats
//! every [`Segment::Bulk`] and [`Segment::Pages`] as one DDP-eligible item and every
//! [`Segment::Inline`] and [`Segment::BodyPages`] as ordinary bytes. READ_PLUS data is encoded
//! with [`xdr::Encoder::opaque_body_payload`] (nfs4wire's build script), so it never takes a
//! Write chunk meant for a READ of the same COMPOUND.
//!
//! # Decision, in order
//!
//! 1. Pairing (RFC 8267, RFC 8166 3.4.6): the n-th bulk item of the reply goes to the n-th
//!    Write chunk of the call. A non-empty Write chunk MUST be used for its item, even when the
//!    whole reply would fit inline (knfsd does the same): the payload is RDMA-written into the
//!    chunk's segments in order, its XDR roundup padding is neither written nor sent inline
//!    (RFC 8166 3.4.6.1), and the item's length word stays inline. An empty Write chunk (zero
//!    segments), or a bulk item with no Write chunk left, stays inline with its padding. A
//!    Write chunk whose item never comes (an error reply) is returned unused: same segments,
//!    all lengths zero (RFC 8166 3.4.6.2).
//! 2. If the transport header plus the remaining (reduced) message fit in the negotiated
//!    inline send size: RDMA_MSG, the message follows the header in one gathered Send. A Reply
//!    chunk the call provided is then left unused and returned as absent (what the Linux
//!    client's RDMA_MSG decoder accepts).
//! 3. Else, if the call provided a Reply chunk big enough for the reduced message: the message
//!    is RDMA-written into it (padding included: it is a body chunk) and the header says
//!    RDMA_NOMSG with the Reply chunk's lengths updated to what was written.
//! 4. Else: [`PlanError`]. Nothing has been written yet; the caller answers with RDMA_ERROR /
//!    ERR_CHUNK ([`PlanError::disposition`], [`SendPlan::error`]). That is what knfsd does
//!    (`svc_rdma_sendto` maps -E2BIG/-EINVAL from reply mapping to `svc_rdma_send_error_msg`,
//!    "the server was not able to form a complete Reply") and what RFC 8166 4.5.4 prescribes
//!    for a Reply chunk too small for the reply: ERR_CHUNK tells the requester that no
//!    RPC-level reply is possible for that XID.
//!
//! A Write chunk smaller than its payload is an error, not a partial write: the responder must
//! not write past the chunk (RFC 8166 3.4.6) and a truncated READ payload would be returned
//! with a count that lies. Such a READ is answered RDMA_ERROR / ERR_CHUNK, as knfsd answers it
//! (`svc_rdma_xb_write` fails with -E2BIG for "the client-provided Write chunk is too small");
//! the Linux client sizes each Write chunk to its READ's count.
//!
//! Every Write lands in the requester's memory before the Send that carries the reply (RDMA
//! Writes and the Send are posted in order on one queue pair), so [`SendPlan::writes`] are
//! posted first, then the Send of [`SendPlan::header_bytes`] followed by [`SendPlan::inline`].

use bytes::Bytes;
use xdr::{Reply, Segment};

use crate::header::{ErrorKind, Header, Proc, RdmaSegment, WriteChunk, RPCRDMA_VERSION};
use crate::limits::Disposition;

static ZEROS: [u8; 3] = [0; 3];

/// One RDMA Write: `data` (a gather list) into a requester segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaWrite {
    /// Target: the requester's R_key and address; `length` is the bytes written, which may be
    /// less than the segment the requester advertised.
    pub remote: RdmaSegment,
    /// The bytes to write, in order; slices of the reply's buffers (no copy).
    pub data: Vec<Bytes>,
}

/// Everything the transport posts to send one reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendPlan {
    /// The reply's transport header.
    pub header: Header,
    /// `header` encoded: the first element of the Send's gather list.
    pub header_bytes: Bytes,
    /// The RPC message bytes that follow the header in the Send (empty for RDMA_NOMSG).
    pub inline: Vec<Bytes>,
    /// RDMA Writes to post before the Send.
    pub writes: Vec<RdmaWrite>,
    /// Bytes written into each Write chunk of the call, in Write list order.
    pub write_chunk_bytes: Vec<u64>,
    /// Bytes written into the Reply chunk, when it was used.
    pub reply_chunk_bytes: Option<u64>,
}

impl SendPlan {
    /// Bytes the Send carries: header plus inline message.
    pub fn send_len(&self) -> usize {
        self.header_bytes.len() + self.inline.iter().map(Bytes::len).sum::<usize>()
    }

    /// The Send's gather list: the header, then the inline pieces.
    pub fn send_pieces(&self) -> impl Iterator<Item = &Bytes> + '_ {
        std::iter::once(&self.header_bytes).chain(self.inline.iter())
    }

    /// A plan that only sends an RDMA_ERROR for the call `xid`/`vers` (both echoed), granting
    /// `credits`. Send it with a plain Send, never Send With Invalidate.
    pub fn error(xid: u32, vers: u32, credits: u32, kind: ErrorKind) -> Self {
        let header = Header::error(xid, vers, credits, kind);
        SendPlan {
            header_bytes: header.encode(),
            header,
            inline: Vec::new(),
            writes: Vec::new(),
            write_chunk_bytes: Vec::new(),
            reply_chunk_bytes: None,
        }
    }
}

/// Why a reply cannot be conveyed with the chunks the call provided.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A DDP-eligible payload is larger than its Write chunk.
    #[error("payload of {payload} bytes exceeds write chunk {chunk} of {capacity} bytes")]
    WriteChunkTooSmall {
        /// Index of the Write chunk in the Write list.
        chunk: usize,
        /// Payload bytes.
        payload: u64,
        /// Bytes the chunk holds.
        capacity: u64,
    },
    /// The reply does not fit inline and is larger than the Reply chunk.
    #[error("reply of {len} bytes exceeds the {capacity}-byte reply chunk")]
    ReplyChunkTooSmall {
        /// Bytes of the (reduced) reply.
        len: u64,
        /// Bytes the Reply chunk holds.
        capacity: u64,
    },
    /// File pages of the reply could not be read into memory.
    #[error("reading the reply's file pages: {0}")]
    Pages(String),
    /// The reply does not fit inline and the call provided no Reply chunk.
    #[error("reply of {len} bytes exceeds the inline send size {max} and there is no reply chunk")]
    ReplyTooLarge {
        /// Bytes the Send would need, header included.
        len: usize,
        /// The negotiated inline send size.
        max: usize,
    },
}

impl PlanError {
    /// Always RDMA_ERROR / ERR_CHUNK for the call (see the module documentation).
    pub fn disposition(&self) -> Disposition {
        Disposition::ReplyError(ErrorKind::Chunk)
    }
}

/// The R_key to invalidate with Send With Invalidate: `Some` when the call's chunks (Read list,
/// Write list and Reply chunk together) name exactly one distinct R_key, `None` when they name
/// none or several (knfsd's `svc_rdma_get_inv_rkey` rule). Use it only when the peer's private
/// data allowed remote invalidation ([`crate::Negotiated::remote_invalidate`]) and never for an
/// RDMA_ERROR.
pub fn remote_invalidate_rkey(call: &Header) -> Option<u32> {
    let mut segs = call.all_segments();
    let first = segs.next()?.handle;
    segs.all(|s| s.handle == first).then_some(first)
}

fn push_padded(out: &mut Vec<Bytes>, b: &Bytes, padded: bool) {
    if !b.is_empty() {
        out.push(b.clone());
    }
    let pad = (4 - b.len() % 4) % 4;
    if padded && pad > 0 {
        out.push(Bytes::from_static(&ZEROS[..pad]));
    }
}

/// Spreads `pieces` over `segs` in order and returns the segments with their lengths set to
/// the bytes written. The caller has checked that the pieces fit.
fn scatter(
    pieces: &[Bytes],
    segs: &[RdmaSegment],
    writes: &mut Vec<RdmaWrite>,
) -> Vec<RdmaSegment> {
    let mut rest = pieces.iter().filter(|b| !b.is_empty()).cloned();
    let mut cur = rest.next();
    let mut out = Vec::with_capacity(segs.len());
    for s in segs {
        let mut room = s.length as usize;
        let mut data = Vec::new();
        let mut written = 0usize;
        while room > 0 {
            let Some(b) = cur.as_mut() else { break };
            let take = room.min(b.len());
            data.push(b.split_to(take));
            room -= take;
            written += take;
            if b.is_empty() {
                cur = rest.next();
            }
        }
        let done = RdmaSegment {
            length: written as u32,
            ..*s
        };
        if written > 0 {
            writes.push(RdmaWrite { remote: done, data });
        }
        out.push(done);
    }
    out
}

/// Plans how to send `reply` (the encoded RPC reply) for the call whose transport header is
/// `call`, granting `credits`, when at most `inline_send` bytes fit in one Send (the
/// negotiated send size, transport header included).
pub fn plan_reply(
    call: &Header,
    credits: u32,
    reply: &Reply,
    inline_send: usize,
) -> Result<SendPlan, PlanError> {
    let mut reduced: Vec<Bytes> = Vec::with_capacity(reply.segments.len() + 2);
    let mut ddp: Vec<Option<Bytes>> = vec![None; call.write_list.len()];
    let mut next_chunk = 0;
    for seg in &reply.segments {
        let b = match seg {
            Segment::Inline(b) => {
                push_padded(&mut reduced, b, false);
                continue;
            }
            // not DDP-eligible: with the message's other bytes (read into memory, as below)
            Segment::BodyPages(p) => {
                let b = p.to_bytes().map_err(|e| PlanError::Pages(e.to_string()))?;
                push_padded(&mut reduced, &b, true);
                continue;
            }
            Segment::Bulk(b) => b.clone(),
            // RDMA places data from memory: pages are read into it (READ over RDMA reads into
            // registered memory instead, so this copy is the exception)
            Segment::Pages(p) => p.to_bytes().map_err(|e| PlanError::Pages(e.to_string()))?,
        };
        if let Some(wc) = call.write_list.get(next_chunk) {
            let k = next_chunk;
            next_chunk += 1;
            if !wc.0.is_empty() {
                ddp[k] = Some(b);
                continue;
            }
        }
        push_padded(&mut reduced, &b, true);
    }

    let mut writes = Vec::new();
    let mut write_list = Vec::with_capacity(call.write_list.len());
    let mut write_chunk_bytes = Vec::with_capacity(call.write_list.len());
    for (k, (wc, payload)) in call.write_list.iter().zip(&ddp).enumerate() {
        match payload {
            Some(p) => {
                let capacity = wc.capacity();
                if p.len() as u64 > capacity {
                    return Err(PlanError::WriteChunkTooSmall {
                        chunk: k,
                        payload: p.len() as u64,
                        capacity,
                    });
                }
                let segs = scatter(std::slice::from_ref(p), &wc.0, &mut writes);
                write_list.push(WriteChunk(segs));
                write_chunk_bytes.push(p.len() as u64);
            }
            None => {
                let unused = wc.0.iter().map(|s| RdmaSegment { length: 0, ..*s });
                write_list.push(WriteChunk(unused.collect()));
                write_chunk_bytes.push(0);
            }
        }
    }

    let reduced_len: usize = reduced.iter().map(Bytes::len).sum();
    let mut header = Header {
        xid: call.xid,
        vers: RPCRDMA_VERSION,
        credits,
        proc_: Proc::Msg,
        read_list: Vec::new(),
        write_list,
        reply_chunk: None,
    };
    let inline_len = header.encoded_len() + reduced_len;
    if inline_len <= inline_send {
        return Ok(SendPlan {
            header_bytes: header.encode(),
            header,
            inline: reduced,
            writes,
            write_chunk_bytes,
            reply_chunk_bytes: None,
        });
    }
    let Some(rc) = &call.reply_chunk else {
        return Err(PlanError::ReplyTooLarge {
            len: inline_len,
            max: inline_send,
        });
    };
    let capacity = rc.capacity();
    if reduced_len as u64 > capacity {
        return Err(PlanError::ReplyChunkTooSmall {
            len: reduced_len as u64,
            capacity,
        });
    }
    let segs = scatter(&reduced, &rc.0, &mut writes);
    header.proc_ = Proc::NoMsg;
    header.reply_chunk = Some(WriteChunk(segs));
    if header.encoded_len() > inline_send {
        return Err(PlanError::ReplyTooLarge {
            len: header.encoded_len(),
            max: inline_send,
        });
    }
    Ok(SendPlan {
        header_bytes: header.encode(),
        header,
        inline: Vec::new(),
        writes,
        write_chunk_bytes,
        reply_chunk_bytes: Some(reduced_len as u64),
    })
}
