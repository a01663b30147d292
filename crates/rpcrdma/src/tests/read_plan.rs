use bytes::Bytes;
use proptest::prelude::*;

use super::{call, message, rpc_bytes, seg};
use crate::header::*;
use crate::limits::{Limits, ValidationError};
use crate::read_plan::*;

const XID: u32 = 0x5151_0002;

fn pad(n: usize) -> usize {
    (n + 3) & !3
}

/// Fills the pull buffer the way the RDMA Reads would: each remote segment's bytes come from
/// `remote`, a map from handle to that segment's content.
fn pull(plan: &ReadPlan, remote: &dyn Fn(&RdmaSegment) -> Vec<u8>) -> Bytes {
    let mut buf = vec![0u8; plan.pull_len()];
    for r in plan.reads() {
        let data = remote(&r.remote);
        buf[r.local_offset..r.local_offset + data.len()].copy_from_slice(&data);
    }
    Bytes::from(buf)
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
    assert_eq!(
        plan.reads(),
        &[
            RdmaRead {
                remote: seg(0xa, 4096, 0x7000),
                local_offset: 0
            },
            RdmaRead {
                remote: seg(0xb, 1, 0x9000),
                local_offset: 4096
            },
        ]
    );
    assert_eq!(plan.pull_len(), 4097);
    assert_eq!(plan.message_len(), 112 + 4100);
    let pulled = pull(plan, &|s| match s.handle {
        0xa => data[..4096].to_vec(),
        _ => data[4096..].to_vec(),
    });
    let pieces = plan.assemble(&c.inline, &pulled).unwrap();
    // header part, payload, 3 bytes of roundup, the rest of the inline stream
    let lens: Vec<usize> = pieces.iter().map(Bytes::len).collect();
    assert_eq!(lens, vec![100, 4097, 3, 12]);
    // the payload is the pull buffer itself, not a copy
    assert_eq!(pieces[1].as_ptr(), pulled.as_ptr());
    assert_eq!(pieces[0].as_ptr(), c.inline.as_ptr());
    let mut expect = inline[..100].to_vec();
    expect.extend_from_slice(&data);
    expect.extend_from_slice(&[0, 0, 0]);
    expect.extend_from_slice(&inline[100..]);
    assert_eq!(&assemble_contiguous(&pieces)[..], &expect[..]);
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
    let pulled = Bytes::from_static(&[1, 2, 3, 4, 5, 0, 0, 0]);
    let pieces = c.reads.assemble(&c.inline, &pulled).unwrap();
    assert_eq!(pieces.len(), 2);
    assert_eq!(assemble_contiguous(&pieces).len(), 48);
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
    let pulled = pull(&c.reads, &|s| match s.handle {
        3 => rpc[..4096].to_vec(),
        _ => rpc[4096..].to_vec(),
    });
    let pieces = c.reads.assemble(&c.inline, &pulled).unwrap();
    assert_eq!(pieces.len(), 1);
    assert_eq!(&pieces[0][..], &rpc[..]);
    // a single piece is handed back without copying
    assert_eq!(assemble_contiguous(&pieces).as_ptr(), pulled.as_ptr());

    let wrong = Bytes::from(rpc_bytes(XID ^ 1, 6000));
    assert_eq!(
        c.reads.assemble(&c.inline, &wrong),
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
    assert_eq!(c.reads.reads()[1].local_offset, 300);
    let pulled = pull(&c.reads, &|s| match s.handle {
        1 => reduced.clone(),
        _ => data.to_vec(),
    });
    let call_bytes = assemble_contiguous(&c.reads.assemble(&c.inline, &pulled).unwrap());
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
    let pulled = pull(&c.reads, &|s| vec![s.handle as u8; s.length as usize]);
    let got = assemble_contiguous(&c.reads.assemble(&c.inline, &pulled).unwrap());
    let mut expect = inline[..8].to_vec();
    expect.extend_from_slice(&[1, 1, 1, 1, 1, 0, 0, 0]);
    expect.extend_from_slice(&b);
    expect.extend_from_slice(&[2, 2, 2, 2]);
    expect.extend_from_slice(&cc);
    assert_eq!(&got[..], &expect[..]);
}

#[test]
fn assemble_checks_its_inputs() {
    let inline = Bytes::from(rpc_bytes(XID, 40));
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
    assert_eq!(
        plan.assemble(&inline, &Bytes::from(vec![0; 15])),
        Err(ValidationError::PlanMismatch)
    );
    assert_eq!(
        plan.assemble(&inline.slice(..36), &Bytes::from(vec![0; 16])),
        Err(ValidationError::PlanMismatch)
    );
    // a larger (pool) buffer is fine
    assert!(plan.assemble(&inline, &Bytes::from(vec![0; 64])).is_ok());
    // no chunks: the inline bytes are the call
    let plan = ReadPlan::new(&Header::msg(XID, 1), 40).unwrap();
    assert!(plan.is_empty());
    let pieces = plan.assemble(&inline, &Bytes::new()).unwrap();
    assert_eq!(pieces, vec![inline.clone()]);
}

proptest! {
    /// Build an unreduced call from pieces, reduce it the way a requester does, and check
    /// that the plan puts it back together.
    #[test]
    fn reduce_then_assemble_is_identity(
        parts in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..5), proptest::collection::vec(any::<u8>(), 1..40), 1usize..4),
            1..4),
        tail_words in proptest::collection::vec(any::<u32>(), 0..4),
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
        let h = call(XID, Proc::Msg, read_list, vec![], None);
        let c = Limits::default().accept_call(&message(&h, &reduced)).unwrap();
        prop_assert_eq!(c.reads.message_len(), unreduced.len());
        let pulled = pull(&c.reads, &|s| contents[s.handle as usize].clone());
        let got = assemble_contiguous(&c.reads.assemble(&c.inline, &pulled).unwrap());
        prop_assert_eq!(&got[..], &unreduced[..]);
    }
}
