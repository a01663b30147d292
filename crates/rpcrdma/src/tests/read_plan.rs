use proptest::prelude::*;

use super::{call, message, rpc_bytes, seg};
use crate::header::*;
use crate::limits::{Limits, ValidationError};
use crate::read_plan::*;

const XID: u32 = 0x5151_0002;

fn pad(n: usize) -> usize {
    (n + 3) & !3
}

/// Rebuilds the call the way the transport does: the plan's inline copies and padding, then
/// each RDMA Read with its remote bytes from `remote` (the content of the requester's memory
/// for a segment, given its handle, offset and length). Also checks that the plan's extents
/// tile the call.
fn rebuild(
    plan: &ReadPlan,
    inline: &[u8],
    remote: &dyn Fn(&RdmaSegment) -> Vec<u8>,
) -> Result<Vec<u8>, ValidationError> {
    let mut next = 0;
    for r in plan.extents() {
        assert_eq!(
            r.start,
            next,
            "extents do not tile the call: {:?}",
            plan.extents()
        );
        next = r.end;
    }
    assert_eq!(next, plan.message_len());
    let mut buf = vec![0xa5u8; plan.message_len()];
    plan.fill(inline, &mut buf)?;
    for r in plan.reads() {
        let data = remote(&r.remote);
        assert_eq!(data.len(), r.remote.length as usize);
        buf[r.local_offset..r.local_offset + data.len()].copy_from_slice(&data);
    }
    plan.check(&buf)?;
    Ok(buf)
}

#[test]
fn write_payload_is_spliced_with_roundup_padding() {
    // NFSv3 WRITE: 100 bytes of RPC header and arguments up to and including the data length
    // word; the 4097-byte payload comes in a Read chunk of two segments. NFSv4 would have
    // more operations after it: model that with 12 trailing inline bytes.
    let data: Vec<u8> = (0..4097).map(|i| (i % 253) as u8).collect();
    let inline = {
        let mut v = rpc_bytes(XID, 112);
        v[96..100].copy_from_slice(&4097u32.to_be_bytes());
        v
    };
    let h = call(
        XID,
        Proc::Msg,
        vec![ReadChunk {
            position: 100,
            segments: vec![seg(0xa, 4096, 0x7000), seg(0xb, 1, 0x9000)],
        }],
        vec![],
        None,
    );
    let c = Limits::default()
        .accept_call(&message(&h, &inline))
        .unwrap();
    let plan = &c.reads;
    // the payload is read straight to its place in the call, right after the header
    assert_eq!(
        plan.reads(),
        &[
            RdmaRead {
                remote: seg(0xa, 4096, 0x7000),
                local_offset: 100
            },
            RdmaRead {
                remote: seg(0xb, 1, 0x9000),
                local_offset: 4196
            },
        ]
    );
    assert_eq!(plan.pull_len(), 4097);
    assert_eq!(plan.copied_len(), 112);
    assert_eq!(plan.message_len(), 112 + 4100);
    // header part (copied), payload (read), 3 bytes of roundup, the rest (copied)
    assert_eq!(
        plan.extents(),
        vec![0..100, 100..4196, 4196..4197, 4197..4200, 4200..4212]
    );
    let got = rebuild(plan, &c.inline, &|s| match s.handle {
        0xa => data[..4096].to_vec(),
        _ => data[4096..].to_vec(),
    })
    .unwrap();
    let mut expect = inline[..100].to_vec();
    expect.extend_from_slice(&data);
    expect.extend_from_slice(&[0, 0, 0]);
    expect.extend_from_slice(&inline[100..]);
    assert_eq!(got, expect);
}

#[test]
fn chunk_that_includes_its_roundup_gets_no_extra_padding() {
    let inline = rpc_bytes(XID, 40);
    let h = call(
        XID,
        Proc::Msg,
        vec![ReadChunk {
            position: 40,
            segments: vec![seg(1, 8, 0)],
        }],
        vec![],
        None,
    );
    let c = Limits::default()
        .accept_call(&message(&h, &inline))
        .unwrap();
    assert_eq!(c.reads.extents(), vec![0..40, 40..48]);
    let got = rebuild(&c.reads, &c.inline, &|_| vec![1, 2, 3, 4, 5, 0, 0, 0]).unwrap();
    assert_eq!(got.len(), 48);
    assert_eq!(&got[40..], &[1, 2, 3, 4, 5, 0, 0, 0]);
}

#[test]
fn position_zero_chunk_is_the_whole_call() {
    let rpc = rpc_bytes(XID, 6000);
    let h = call(
        XID,
        Proc::NoMsg,
        vec![ReadChunk {
            position: 0,
            segments: vec![seg(3, 4096, 0x1000), seg(4, 1904, 0x5000)],
        }],
        vec![],
        Some(WriteChunk(vec![seg(5, 8192, 0)])),
    );
    let c = Limits::default().accept_call(&message(&h, &[])).unwrap();
    assert_eq!(c.reads.call_chunk_len(), Some(6000));
    assert_eq!(c.reads.message_len(), 6000);
    let remote = |s: &RdmaSegment| match s.handle {
        3 => rpc[..4096].to_vec(),
        _ => rpc[4096..].to_vec(),
    };
    // the whole call is read, nothing is copied
    assert_eq!(c.reads.extents(), vec![0..4096, 4096..6000]);
    assert_eq!(c.reads.copied_len(), 0);
    assert_eq!(rebuild(&c.reads, &c.inline, &remote).unwrap(), rpc);

    let wrong = rpc_bytes(XID ^ 1, 6000);
    assert_eq!(
        rebuild(&c.reads, &c.inline, &|s| match s.handle {
            3 => wrong[..4096].to_vec(),
            _ => wrong[4096..].to_vec(),
        }),
        Err(ValidationError::XidMismatch {
            header: XID,
            rpc: XID ^ 1
        })
    );
}

#[test]
fn position_zero_chunk_with_a_data_chunk() {
    // A long WRITE call: the reduced call (300 bytes) in the position-zero chunk, the payload
    // (10 bytes) in a Read chunk at position 260 of the call.
    let reduced = rpc_bytes(XID, 300);
    let data = [0xeeu8; 10];
    let h = call(
        XID,
        Proc::NoMsg,
        vec![
            ReadChunk {
                position: 0,
                segments: vec![seg(1, 300, 0)],
            },
            ReadChunk {
                position: 260,
                segments: vec![seg(2, 10, 0)],
            },
        ],
        vec![],
        None,
    );
    let c = Limits::default().accept_call(&message(&h, &[])).unwrap();
    // the call chunk is read in two parts, around the payload read into its place
    assert_eq!(
        c.reads.reads(),
        &[
            RdmaRead {
                remote: seg(1, 260, 0),
                local_offset: 0
            },
            RdmaRead {
                remote: seg(2, 10, 0),
                local_offset: 260
            },
            RdmaRead {
                remote: seg(1, 40, 260),
                local_offset: 272
            },
        ]
    );
    let call_bytes = rebuild(&c.reads, &c.inline, &|s| match s.handle {
        1 => reduced[s.offset as usize..s.offset as usize + s.length as usize].to_vec(),
        _ => data.to_vec(),
    })
    .unwrap();
    let mut expect = reduced[..260].to_vec();
    expect.extend_from_slice(&data);
    expect.extend_from_slice(&[0, 0]);
    expect.extend_from_slice(&reduced[260..]);
    assert_eq!(&call_bytes[..], &expect[..]);
    assert_eq!(call_bytes.len(), c.reads.message_len());
}

#[test]
fn positions_count_the_unreduced_message() {
    // unreduced: A(8) item1(5 + 3 pad) B(8) item2(4) C(4); reduced inline: A B C
    let a = [0xa0u8; 8];
    let b = [0xb0u8; 8];
    let cc = [0xc0u8; 4];
    let mut inline = XID.to_be_bytes().to_vec();
    inline.extend_from_slice(&a[4..]);
    inline.extend_from_slice(&b);
    inline.extend_from_slice(&cc);
    let h = call(
        XID,
        Proc::Msg,
        vec![
            ReadChunk {
                position: 8,
                segments: vec![seg(1, 5, 0)],
            },
            ReadChunk {
                position: 8 + 8 + 8,
                segments: vec![seg(2, 4, 0)],
            },
        ],
        vec![],
        None,
    );
    let c = Limits::default()
        .accept_call(&message(&h, &inline))
        .unwrap();
    assert_eq!(
        c.reads
            .chunks()
            .iter()
            .map(|p| p.base_offset)
            .collect::<Vec<_>>(),
        vec![8, 16]
    );
    let got = rebuild(&c.reads, &c.inline, &|s| {
        vec![s.handle as u8; s.length as usize]
    })
    .unwrap();
    let mut expect = inline[..8].to_vec();
    expect.extend_from_slice(&[1, 1, 1, 1, 1, 0, 0, 0]);
    expect.extend_from_slice(&b);
    expect.extend_from_slice(&[2, 2, 2, 2]);
    expect.extend_from_slice(&cc);
    assert_eq!(&got[..], &expect[..]);
}

#[test]
fn fill_checks_its_inputs() {
    let inline = rpc_bytes(XID, 40);
    let h = call(
        XID,
        Proc::Msg,
        vec![ReadChunk {
            position: 40,
            segments: vec![seg(1, 16, 0)],
        }],
        vec![],
        None,
    );
    let plan = ReadPlan::new(&h, 40).unwrap();
    assert_eq!(plan.message_len(), 56);
    // a buffer shorter than the call
    assert_eq!(
        plan.fill(&inline, &mut [0; 55]),
        Err(ValidationError::PlanMismatch)
    );
    // inline bytes of another length than planned
    assert_eq!(
        plan.fill(&inline[..36], &mut [0; 56]),
        Err(ValidationError::PlanMismatch)
    );
    // a larger (pool) buffer is fine
    assert!(plan.fill(&inline, &mut [0; 64]).is_ok());
    // a Position-Zero chunk must bring at least an XID
    let h = call(
        XID,
        Proc::NoMsg,
        vec![ReadChunk {
            position: 0,
            segments: vec![seg(1, 3, 0)],
        }],
        vec![],
        None,
    );
    let plan = ReadPlan::new(&h, 0).unwrap();
    assert_eq!(plan.check(&[0, 0, 0]), Err(ValidationError::NoRpcMessage));
    // no chunks: nothing to read, the inline bytes are the call
    let plan = ReadPlan::new(&Header::msg(XID, 1), 40).unwrap();
    assert!(plan.is_empty());
    assert_eq!(plan.extents(), vec![0..40]);
}

#[test]
fn position_zero_chunk_split_around_data_chunks_reads_each_byte_once() {
    // The reduced call spans three segments (100, 60, 140 bytes at different addresses); two
    // data items are inserted into it: 7 bytes at position 120 (inside the second segment),
    // 12 bytes at position 228 (reduced offset 220, inside the third segment).
    let reduced = rpc_bytes(XID, 300);
    let item1 = [0x11u8; 7];
    let item2 = [0x22u8; 12];
    let segs = [seg(1, 100, 0x1000), seg(1, 60, 0x2000), seg(1, 140, 0x3000)];
    let h = call(
        XID,
        Proc::NoMsg,
        vec![
            ReadChunk {
                position: 0,
                segments: segs.to_vec(),
            },
            ReadChunk {
                position: 120,
                segments: vec![seg(2, 7, 0)],
            },
            ReadChunk {
                position: 228,
                segments: vec![seg(3, 12, 0)],
            },
        ],
        vec![],
        None,
    );
    let c = Limits::default().accept_call(&message(&h, &[])).unwrap();
    let addr = |a: u64| -> usize {
        match a {
            0x1000..=0x1fff => (a - 0x1000) as usize,
            0x2000..=0x2fff => 100 + (a - 0x2000) as usize,
            _ => 160 + (a - 0x3000) as usize,
        }
    };
    let got = rebuild(&c.reads, &c.inline, &|s| match s.handle {
        1 => reduced[addr(s.offset)..addr(s.offset) + s.length as usize].to_vec(),
        2 => item1.to_vec(),
        _ => item2.to_vec(),
    })
    .unwrap();
    // 120 bytes of the call, item 1 + 1 pad, then 228 - 128 = 100 bytes, item 2, the rest
    let mut expect = reduced[..120].to_vec();
    expect.extend_from_slice(&item1);
    expect.push(0);
    expect.extend_from_slice(&reduced[120..220]);
    expect.extend_from_slice(&item2);
    expect.extend_from_slice(&reduced[220..]);
    assert_eq!(got, expect);
    // every byte of the requester's call chunk is read exactly once
    let from_call: usize = c
        .reads
        .reads()
        .iter()
        .filter(|r| r.remote.handle == 1)
        .map(|r| r.remote.length as usize)
        .sum();
    assert_eq!(from_call, 300);
    assert_eq!(c.reads.pull_len(), 300 + 7 + 12);
}

proptest! {
    /// Build an unreduced call from pieces, reduce it the way a requester does, and check
    /// that the plan puts it back together, with the reduced call inline or, for a long call,
    /// in a Position-Zero chunk cut into up to four segments.
    #[test]
    fn reduce_then_assemble_is_identity(
        parts in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..5), proptest::collection::vec(any::<u8>(), 1..40), 1usize..4),
            1..4),
        tail_words in proptest::collection::vec(any::<u32>(), 0..4),
        long in any::<bool>(),
        cuts in proptest::collection::vec(any::<u16>(), 0..3),
    ) {
        let mut unreduced = XID.to_be_bytes().to_vec();
        let mut reduced = unreduced.clone();
        let mut read_list = Vec::new();
        let mut contents = Vec::new();
        for (lead, item, nsegs) in &parts {
            // inline words before the item (keeps positions aligned)
            let lead: Vec<u8> = lead.iter().flat_map(|b| [*b; 4]).collect();
            unreduced.extend_from_slice(&lead);
            reduced.extend_from_slice(&lead);
            let position = unreduced.len() as u32;
            unreduced.extend_from_slice(item);
            unreduced.resize(pad(unreduced.len()), 0);
            // split the item over up to nsegs segments
            let n = (*nsegs).min(item.len());
            let step = item.len().div_ceil(n);
            let segments: Vec<RdmaSegment> = item
                .chunks(step)
                .map(|piece| {
                    contents.push(piece.to_vec());
                    seg(contents.len() as u32 - 1, piece.len() as u32, 0)
                })
                .collect();
            read_list.push(ReadChunk { position, segments });
        }
        for w in tail_words {
            unreduced.extend_from_slice(&w.to_be_bytes());
            reduced.extend_from_slice(&w.to_be_bytes());
        }
        let (h, inline) = if long {
            // the reduced call under handle 1000 + i, segment i at address 0x10000 * i
            let mut bounds: Vec<usize> = cuts.iter().map(|c| 1 + *c as usize % reduced.len()).collect();
            bounds.push(0);
            bounds.push(reduced.len());
            bounds.sort_unstable();
            bounds.dedup();
            let segments: Vec<RdmaSegment> = bounds
                .windows(2)
                .enumerate()
                .map(|(i, w)| {
                    contents.push(reduced[w[0]..w[1]].to_vec());
                    seg(contents.len() as u32 - 1, (w[1] - w[0]) as u32, 0x10000 * i as u64)
                })
                .collect();
            read_list.insert(0, ReadChunk { position: 0, segments });
            (call(XID, Proc::NoMsg, read_list, vec![], None), Vec::new())
        } else {
            (call(XID, Proc::Msg, read_list, vec![], None), reduced.clone())
        };
        let c = Limits::default().accept_call(&message(&h, &inline)).unwrap();
        prop_assert_eq!(c.reads.message_len(), unreduced.len());
        let got = rebuild(&c.reads, &c.inline, &|s| {
            let whole = &contents[s.handle as usize];
            // a part of a segment starts at its offset from the segment's address
            let at = (s.offset % 0x10000) as usize;
            whole[at..at + s.length as usize].to_vec()
        })
        .unwrap();
        prop_assert_eq!(&got[..], &unreduced[..]);
    }
}
