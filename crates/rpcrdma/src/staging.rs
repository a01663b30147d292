//! From plans to work requests, the part of the transport engine that needs no device:
//! RDMA Reads of a [`ReadPlan`], staging of RDMA Write sources into registered buffers, the
//! Send's bytes, and per-connection credit accounting.
//!
//! # Staging
//!
//! Every byte the device reads must lie in registered memory. Pieces of a reply's bulk data
//! ([`xdr::Segment::Bulk`]) that already are slices of the registered pool (the `registered`
//! predicate) are posted in place: NFS READ data with a Write chunk is read by `pread` straight
//! into a pool buffer, so it goes from the page cache to the client's memory with that one
//! copy. Any other piece (a heap buffer) is copied by [`stage_writes`] into bulk pool buffers,
//! contiguously, so that each RDMA Write gathers as few pieces as possible.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::ddp::{RdmaWrite, SendPlan};
use crate::header::RdmaSegment;
use crate::read_plan::ReadPlan;

/// Where one gathered piece of an RDMA Write comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Src {
    /// A slice of registered memory, posted in place.
    Direct(Bytes),
    /// Bytes copied into staging buffer `buf` at `offset`.
    Staged {
        /// Index of the staging buffer.
        buf: usize,
        /// Offset in it.
        offset: usize,
        /// Length.
        len: usize,
    },
}

/// One copy into a staging buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageCopy {
    /// The bytes to copy.
    pub data: Bytes,
    /// Index of the staging buffer.
    pub buf: usize,
    /// Offset in it.
    pub offset: usize,
}

/// The RDMA Writes of a reply with their sources resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StagedWrites {
    /// Each Write: the requester's segment (R_key, address, bytes written) and its sources.
    pub writes: Vec<(RdmaSegment, Vec<Src>)>,
    /// Copies to make before posting.
    pub copies: Vec<StageCopy>,
    /// Bytes used in each staging buffer (its length is the number of buffers needed).
    pub used: Vec<usize>,
}

impl StagedWrites {
    /// Bytes copied into staging buffers.
    pub fn staged_bytes(&self) -> usize {
        self.used.iter().sum()
    }
}

fn push_src(srcs: &mut Vec<Src>, s: Src) {
    if let (
        Some(Src::Staged {
            buf: pb,
            offset: po,
            len: pl,
        }),
        Src::Staged { buf, offset, len },
    ) = (srcs.last_mut(), &s)
    {
        if *pb == *buf && *po + *pl == *offset {
            *pl += len;
            return;
        }
    }
    srcs.push(s);
}

fn stage_pass(
    writes: &[RdmaWrite],
    registered: &dyn Fn(&Bytes) -> bool,
    buf_size: usize,
) -> StagedWrites {
    let mut out = StagedWrites::default();
    let (mut buf, mut off) = (0usize, 0usize);
    for w in writes {
        let mut srcs = Vec::new();
        for piece in w.data.iter().filter(|p| !p.is_empty()) {
            if registered(piece) {
                srcs.push(Src::Direct(piece.clone()));
                continue;
            }
            let mut rest = piece.clone();
            while !rest.is_empty() {
                if off == buf_size {
                    buf += 1;
                    off = 0;
                }
                let take = rest.len().min(buf_size - off);
                let data = rest.split_to(take);
                out.copies.push(StageCopy {
                    data,
                    buf,
                    offset: off,
                });
                push_src(
                    &mut srcs,
                    Src::Staged {
                        buf,
                        offset: off,
                        len: take,
                    },
                );
                off += take;
                if out.used.len() <= buf {
                    out.used.resize(buf + 1, 0);
                }
                out.used[buf] = off;
            }
        }
        out.writes.push((w.remote, srcs));
    }
    out
}

/// Resolves the sources of `writes`: pieces for which `registered` holds are posted in place,
/// the others are copied into staging buffers of `buf_size` bytes, back to back. When some
/// Write would gather more than `max_sge` pieces, everything is staged instead (contiguous
/// copies merge into one piece per staging buffer touched).
pub fn stage_writes(
    writes: &[RdmaWrite],
    registered: &dyn Fn(&Bytes) -> bool,
    buf_size: usize,
    max_sge: usize,
) -> StagedWrites {
    let buf_size = buf_size.max(1);
    let first = stage_pass(writes, registered, buf_size);
    if first.writes.iter().all(|(_, s)| s.len() <= max_sge.max(1)) {
        return first;
    }
    stage_pass(writes, &|_| false, buf_size)
}

/// The RDMA Reads of a call, all landing in one buffer (index 0 of the batch) at the plan's
/// offsets: exactly the requester's advertised segments (or parts of them), nothing else.
pub fn read_requests(plan: &ReadPlan) -> Vec<verbs::WorkRequest> {
    plan.reads()
        .iter()
        .map(|r| verbs::WorkRequest::Read {
            buf: 0,
            offset: r.local_offset,
            len: r.remote.length,
            rkey: r.remote.handle,
            remote_addr: r.remote.offset,
        })
        .collect()
}

/// Copies the Send of `plan` (transport header, then the inline message) into `dst`; `None`
/// when it does not fit.
pub fn gather_send(plan: &SendPlan, dst: &mut [u8]) -> Option<usize> {
    let len = plan.send_len();
    if len > dst.len() {
        return None;
    }
    let mut at = 0;
    for p in plan.send_pieces() {
        dst[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    Some(at)
}

/// Calls received on a connection and not answered yet, which the peer's credits bound.
#[derive(Debug, Default)]
pub struct Credits {
    in_flight: AtomicU32,
}

/// One unanswered call; dropping it (when the reply is posted, or when the call gets none)
/// gives the credit back.
#[derive(Debug)]
pub struct CreditGuard(Arc<Credits>);

impl Credits {
    /// Counts a new call; returns the calls now in flight (this one included) and its guard.
    pub fn begin(self: &Arc<Self>) -> (u32, CreditGuard) {
        let n = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        (n, CreditGuard(self.clone()))
    }

    /// Calls in flight.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Acquire)
    }
}

impl Drop for CreditGuard {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::{Header, Proc, ReadChunk, WriteChunk};
    use crate::limits::Limits;
    use crate::{plan_reply, ValidationError};
    use xdr::{Reply, Segment};

    fn seg(handle: u32, length: u32, offset: u64) -> RdmaSegment {
        RdmaSegment {
            handle,
            length,
            offset,
        }
    }

    fn bytes(n: usize, v: u8) -> Bytes {
        Bytes::from(vec![v; n])
    }

    #[test]
    fn read_chunk_plan_becomes_reads_to_the_advertised_segments() {
        let mut h = Header::msg(7, 128);
        h.read_list = vec![ReadChunk {
            position: 100,
            segments: vec![seg(0x11, 4096, 0x1000), seg(0x11, 100, 0x9000)],
        }];
        let plan = ReadPlan::new(&h, 100).unwrap();
        let wrs = read_requests(&plan);
        assert_eq!(wrs.len(), 2);
        match (&wrs[0], &wrs[1]) {
            (
                verbs::WorkRequest::Read {
                    buf: 0,
                    offset: 100,
                    len: 4096,
                    rkey: 0x11,
                    remote_addr: 0x1000,
                },
                verbs::WorkRequest::Read {
                    buf: 0,
                    offset: 4196,
                    len: 100,
                    rkey: 0x11,
                    remote_addr: 0x9000,
                },
            ) => {}
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(plan.pull_len(), 4196);
    }

    #[test]
    fn write_chunk_reply_is_staged_contiguously_and_never_exceeds_segments() {
        // An NFS READ of 10000 bytes: header inline, data in a 3-segment Write chunk.
        let mut call = Header::msg(9, 128);
        call.write_list = vec![WriteChunk(vec![
            seg(1, 4096, 0x10000),
            seg(1, 4096, 0x20000),
            seg(1, 8192, 0x30000),
        ])];
        let reply = Reply {
            segments: vec![
                Segment::Inline(bytes(120, 1)),
                Segment::Bulk(bytes(10000, 2)),
                Segment::Inline(bytes(8, 3)),
            ],
        };
        let plan = plan_reply(&call, 128, &reply, 4096).unwrap();
        let staged = stage_writes(&plan.writes, &|_| false, 6000, 4);
        // Three Writes, each within its advertised segment, starting at its address.
        let remotes: Vec<_> = staged.writes.iter().map(|(r, _)| *r).collect();
        assert_eq!(
            remotes,
            vec![
                seg(1, 4096, 0x10000),
                seg(1, 4096, 0x20000),
                seg(1, 1808, 0x30000)
            ]
        );
        for ((r, srcs), adv) in staged.writes.iter().zip(call.write_list[0].0.iter()) {
            let total: usize = srcs
                .iter()
                .map(|s| match s {
                    Src::Direct(b) => b.len(),
                    Src::Staged { len, .. } => *len,
                })
                .sum();
            assert_eq!(total as u32, r.length);
            assert!(r.length <= adv.length && r.offset == adv.offset && r.handle == adv.handle);
        }
        // 10000 bytes over staging buffers of 6000: two buffers, the second Write straddles.
        assert_eq!(staged.used, vec![6000, 4000]);
        assert_eq!(staged.writes[1].1.len(), 2);
        assert_eq!(staged.staged_bytes(), 10000);
        let copied: usize = staged.copies.iter().map(|c| c.data.len()).sum();
        assert_eq!(copied, 10000);
    }

    #[test]
    fn registered_pieces_are_posted_in_place() {
        let data = bytes(3000, 5);
        let reg = data.clone();
        let writes = vec![RdmaWrite {
            remote: seg(2, 3000, 0x4000),
            data: vec![data],
        }];
        let st = stage_writes(&writes, &|b| b.as_ptr() == reg.as_ptr(), 1 << 20, 4);
        assert!(st.copies.is_empty());
        assert!(st.used.is_empty());
        assert_eq!(st.writes[0].1, vec![Src::Direct(reg.clone())]);
    }

    #[test]
    fn too_many_pieces_fall_back_to_staging_everything() {
        let pieces: Vec<Bytes> = (0..6).map(|i| bytes(10, i)).collect();
        let writes = vec![RdmaWrite {
            remote: seg(3, 60, 0),
            data: pieces.clone(),
        }];
        // Every other piece "registered": 6 sources, more than max_sge = 2.
        let odd: Vec<*const u8> = pieces
            .iter()
            .skip(1)
            .step_by(2)
            .map(|b| b.as_ptr())
            .collect();
        let st = stage_writes(&writes, &|b| odd.contains(&b.as_ptr()), 1 << 20, 2);
        assert_eq!(
            st.writes[0].1,
            vec![Src::Staged {
                buf: 0,
                offset: 0,
                len: 60
            }]
        );
    }

    #[test]
    fn reply_chunk_and_send_bytes() {
        let mut call = Header::msg(5, 16);
        call.reply_chunk = Some(WriteChunk(vec![seg(4, 65536, 0x8000)]));
        let reply = Reply {
            segments: vec![Segment::Inline(bytes(9000, 7))],
        };
        let plan = plan_reply(&call, 16, &reply, 4096).unwrap();
        assert_eq!(plan.header.proc_, Proc::NoMsg);
        let st = stage_writes(&plan.writes, &|_| false, 1 << 20, 4);
        assert_eq!(st.writes.len(), 1);
        assert_eq!(st.writes[0].0, seg(4, 9000, 0x8000));
        let mut dst = [0u8; 4096];
        let n = gather_send(&plan, &mut dst).unwrap();
        assert_eq!(&dst[..n], &plan.header_bytes[..]);
        assert_eq!(gather_send(&plan, &mut [0u8; 8]), None);
    }

    #[test]
    fn credits_are_counted_and_overrun_detected() {
        let limits = Limits {
            max_credits: 2,
            ..Limits::default()
        };
        let c = Arc::new(Credits::default());
        let (n1, g1) = c.begin();
        let (n2, _g2) = c.begin();
        assert_eq!((n1, n2), (1, 2));
        assert!(limits.check_credits(n2, limits.max_credits).is_ok());
        let (n3, g3) = c.begin();
        assert!(matches!(
            limits.check_credits(n3, limits.max_credits),
            Err(ValidationError::CreditOverrun { .. })
        ));
        drop(g3);
        drop(g1);
        assert_eq!(c.in_flight(), 1);
        assert_eq!(limits.grant(0), 1);
        assert_eq!(limits.grant(500), 2);
    }
}
