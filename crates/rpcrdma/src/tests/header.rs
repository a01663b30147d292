use bytes::Bytes;
use proptest::prelude::*;

use super::{call, message, rpc_bytes, seg, words};
use crate::header::*;
use crate::limits::{Limits, ValidationError};

fn permissive() -> Limits {
    Limits {
        max_read_segments: 64,
        max_write_chunks: 8,
        max_segments_per_chunk: 64,
        max_segment_len: u32::MAX,
        max_inline: usize::MAX,
        max_credits: u32::MAX,
    }
}

fn roundtrip(h: &Header) {
    let b = h.encode();
    assert_eq!(b.len(), h.encoded_len());
    let (d, off) = Header::decode(&b, &permissive()).unwrap();
    assert_eq!(&d, h);
    assert_eq!(off, b.len());
}

#[test]
fn msg_without_chunks_is_byte_exact() {
    let h = Header::msg(0x0102_0304, 32);
    // xid, vers 1, credit 32, RDMA_MSG, no read list, no write list, no reply chunk
    assert_eq!(
        &h.encode()[..],
        &words(&[0x0102_0304, 1, 32, 0, 0, 0, 0])[..]
    );
    assert_eq!(h.encoded_len(), MIN_HEADER_LEN);
    roundtrip(&h);
}

#[test]
fn read_chunk_call_is_byte_exact_and_payload_offset_is_after_header() {
    // An NFS WRITE whose data item (8192 bytes) moved to a Read chunk at position 132.
    let h = call(
        0x1234_5678,
        Proc::Msg,
        vec![ReadChunk {
            position: 132,
            segments: vec![seg(0xaabb_ccdd, 8192, 0x0000_0001_0000_0000)],
        }],
        vec![],
        None,
    );
    let expect = words(&[
        0x1234_5678,
        1,
        128,
        RDMA_MSG,
        1, // read list entry present
        132,
        0xaabb_ccdd,
        8192,
        0x0000_0001,
        0x0000_0000,
        0, // end of read list
        0, // end of write list
        0, // no reply chunk
    ]);
    assert_eq!(&h.encode()[..], &expect[..]);
    let rpc = rpc_bytes(0x1234_5678, 132);
    let msg = message(&h, &rpc);
    let (d, off) = Header::decode(&msg, &Limits::default()).unwrap();
    assert_eq!(d, h);
    assert_eq!(off, 52);
    assert_eq!(&msg[off..], &rpc[..]);
}

#[test]
fn write_list_and_reply_chunk_are_byte_exact() {
    let h = call(
        7,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![
            seg(0x11, 4096, 0x1000),
            seg(0x22, 8192, 0xffff_ffff_0000_2000),
        ])],
        Some(WriteChunk(vec![seg(0x33, 1024, 0x3000)])),
    );
    let expect = words(&[
        7,
        1,
        128,
        RDMA_MSG, //
        0,        // no read list
        1,
        2, // one write chunk of two segments
        0x11,
        4096,
        0,
        0x1000, //
        0x22,
        8192,
        0xffff_ffff,
        0x2000, //
        0,      // end of write list
        1,
        1, // reply chunk of one segment
        0x33,
        1024,
        0,
        0x3000,
    ]);
    assert_eq!(&h.encode()[..], &expect[..]);
    assert_eq!(h.encoded_len(), 88);
    roundtrip(&h);
}

#[test]
fn errors_are_byte_exact() {
    let vers = Header::error(9, 1, 16, ErrorKind::OUR_VERSIONS);
    assert_eq!(
        &vers.encode()[..],
        &words(&[9, 1, 16, RDMA_ERROR, ERR_VERS, 1, 1])[..]
    );
    roundtrip(&vers);
    let chunk = Header::error(9, 1, 16, ErrorKind::Chunk);
    assert_eq!(
        &chunk.encode()[..],
        &words(&[9, 1, 16, RDMA_ERROR, ERR_CHUNK])[..]
    );
    assert_eq!(chunk.encoded_len(), 20);
    roundtrip(&chunk);
    roundtrip(&Header::error(1, 1, 1, ErrorKind::Vers { low: 1, high: 2 }));
}

#[test]
fn nomsg_with_position_zero_chunk_roundtrips() {
    let h = call(
        5,
        Proc::NoMsg,
        vec![ReadChunk {
            position: 0,
            segments: vec![seg(1, 4096, 0), seg(1, 100, 4096)],
        }],
        vec![],
        Some(WriteChunk(vec![seg(2, 65536, 0)])),
    );
    roundtrip(&h);
    assert_eq!(h.call_chunk().map(ReadChunk::len), Some(4196));
}

#[test]
fn adjacent_read_segments_with_equal_positions_form_one_chunk() {
    let e = |p: u32, h: u32| [1, p, h, 4, 0, 0];
    let mut w = vec![1, 1, 1, RDMA_NOMSG];
    for (p, h) in [(0, 1), (0, 2), (132, 3), (132, 4), (200, 5)] {
        w.extend(e(p, h));
    }
    w.extend([0, 0, 0]);
    let msg = Bytes::from(words(&w));
    let (h, _) = Header::decode(&msg, &Limits::default()).unwrap();
    let shape: Vec<(u32, Vec<u32>)> = h
        .read_list
        .iter()
        .map(|c| (c.position, c.segments.iter().map(|s| s.handle).collect()))
        .collect();
    assert_eq!(
        shape,
        vec![(0, vec![1, 2]), (132, vec![3, 4]), (200, vec![5])]
    );
    assert_eq!(h.read_segments().count(), 5);
    assert_eq!(h.encode(), msg);
}

#[test]
fn unknown_error_body_is_not_decoded() {
    let m = Bytes::from(words(&[1, 1, 1, RDMA_ERROR, 3]));
    assert_eq!(
        Header::decode(&m, &Limits::default()),
        Err(ValidationError::BadErrorMessage)
    );
    let m = Bytes::from(words(&[1, 1, 1, RDMA_ERROR, ERR_VERS, 1]));
    assert_eq!(
        Header::decode(&m, &Limits::default()),
        Err(ValidationError::BadErrorMessage)
    );
}

fn arb_seg(max_len: u32) -> impl Strategy<Value = RdmaSegment> {
    (any::<u32>(), 1..=max_len, any::<u64>()).prop_map(|(h, l, o)| seg(h, l, o))
}

fn arb_write_chunk() -> impl Strategy<Value = WriteChunk> {
    proptest::collection::vec(arb_seg(u32::MAX), 0..5).prop_map(WriteChunk)
}

fn arb_read_list() -> impl Strategy<Value = Vec<ReadChunk>> {
    proptest::collection::vec(
        (
            any::<u32>(),
            proptest::collection::vec(arb_seg(u32::MAX), 1..4),
        ),
        0..5,
    )
    .prop_map(|v| {
        let mut out: Vec<ReadChunk> = Vec::new();
        for (position, segments) in v {
            // adjacent chunks must differ in position, else they are one chunk
            if out.last().is_some_and(|c| c.position == position) {
                continue;
            }
            out.push(ReadChunk { position, segments });
        }
        out
    })
}

fn arb_header() -> impl Strategy<Value = Header> {
    let kind = prop_oneof![
        Just(ErrorKind::Chunk),
        (any::<u32>(), any::<u32>()).prop_map(|(low, high)| ErrorKind::Vers { low, high }),
    ];
    let proc_ = prop_oneof![
        Just(Proc::Msg),
        Just(Proc::NoMsg),
        kind.prop_map(Proc::Error)
    ];
    (
        any::<u32>(),
        any::<u32>(),
        proc_,
        arb_read_list(),
        proptest::collection::vec(arb_write_chunk(), 0..3),
        proptest::option::of(arb_write_chunk()),
    )
        .prop_map(
            |(xid, credits, proc_, read_list, write_list, reply_chunk)| {
                let mut h = Header {
                    xid,
                    vers: RPCRDMA_VERSION,
                    credits,
                    proc_,
                    read_list,
                    write_list,
                    reply_chunk,
                };
                if let Proc::Error(_) = h.proc_ {
                    h.read_list.clear();
                    h.write_list.clear();
                    h.reply_chunk = None;
                }
                h
            },
        )
}

proptest! {
    #[test]
    fn every_header_form_roundtrips(h in arb_header(), tail in proptest::collection::vec(any::<u8>(), 0..16)) {
        let b = h.encode();
        prop_assert_eq!(b.len(), h.encoded_len());
        let mut v = b.to_vec();
        v.extend_from_slice(&tail);
        let (d, off) = Header::decode(&Bytes::from(v), &permissive()).unwrap();
        prop_assert_eq!(d, h);
        prop_assert_eq!(off, b.len());
    }
}
