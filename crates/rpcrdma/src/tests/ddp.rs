use bytes::Bytes;
use proptest::prelude::*;
use xdr::{Encoder, Reply};

use super::{call, seg};
use crate::ddp::*;
use crate::header::*;
use crate::limits::Disposition;

const XID: u32 = 0x0bad_cafe;

/// An RPC reply header (accepted, AUTH_NONE verifier, SUCCESS) followed by an NFSv3 READ
/// result carrying `data` as the bulk item, then `trailer` inline bytes.
fn read_reply(data: &Bytes, trailer: &[u8]) -> Reply {
    let mut e = Encoder::new();
    for w in [XID, 1, 0, 0, 0, 0] {
        e.u32(w);
    }
    e.u32(0); // NFS3_OK
    e.bool(false); // no post-op attributes
    e.u32(data.len() as u32); // count
    e.bool(true); // eof
    e.opaque_bulk(data.clone());
    e.opaque_fixed(trailer);
    e.finish()
}

/// A reply of `n` inline bytes (e.g. a READDIR result), no bulk item.
fn plain_reply(n: usize) -> Reply {
    let mut e = Encoder::new();
    e.u32(XID);
    e.opaque_fixed(&(0..n - 4).map(|i| i as u8).collect::<Vec<u8>>());
    e.finish()
}

fn payload(n: usize) -> Bytes {
    Bytes::from((0..n).map(|i| (i % 251) as u8).collect::<Vec<u8>>())
}

fn concat<'a>(it: impl IntoIterator<Item = &'a Bytes>) -> Vec<u8> {
    it.into_iter().flat_map(|b| b.iter().copied()).collect()
}

fn written(plan: &SendPlan) -> Vec<u8> {
    concat(plan.writes.iter().flat_map(|w| w.data.iter()))
}

fn no_chunks() -> Header {
    call(XID, Proc::Msg, vec![], vec![], None)
}

#[test]
fn small_reply_goes_inline() {
    let r = plain_reply(200);
    let plan = plan_reply(&no_chunks(), 32, &r, 4096).unwrap();
    assert_eq!(plan.header, Header::msg(XID, 32));
    assert_eq!(
        &plan.header_bytes[..],
        &super::words(&[XID, 1, 32, 0, 0, 0, 0])[..]
    );
    assert!(plan.writes.is_empty());
    assert_eq!(concat(&plan.inline), r.to_bytes().to_vec());
    assert_eq!(plan.send_len(), 28 + 200);
    assert_eq!(concat(plan.send_pieces()).len(), 228);
}

#[test]
fn bulk_without_write_chunk_is_flattened_inline_with_padding() {
    let data = payload(5);
    let r = read_reply(&data, &[]);
    let plan = plan_reply(&no_chunks(), 1, &r, 4096).unwrap();
    assert_eq!(plan.header.proc_, Proc::Msg);
    assert_eq!(concat(&plan.inline), r.to_bytes().to_vec());
    assert_eq!(plan.send_len() % 4, 0);
    // the payload is still the caller's buffer, not a copy
    assert!(plan.inline.iter().any(|b| b.as_ptr() == data.as_ptr()));
}

#[test]
fn read_payload_is_spread_over_three_write_segments() {
    let data = payload(10_001);
    let trailer = [9u8; 8]; // something after the item, as in an NFSv4 COMPOUND
    let r = read_reply(&data, &trailer);
    let wc = WriteChunk(vec![
        seg(0x10, 4096, 0x1_0000),
        seg(0x20, 4096, 0x2_0000),
        seg(0x30, 8192, 0x3_0000),
    ]);
    let c = call(XID, Proc::Msg, vec![], vec![wc], None);
    let plan = plan_reply(&c, 64, &r, 4096).unwrap();

    let ranges: Vec<(u32, u64, u32)> = plan
        .writes
        .iter()
        .map(|w| (w.remote.handle, w.remote.offset, w.remote.length))
        .collect();
    assert_eq!(
        ranges,
        vec![
            (0x10, 0x1_0000, 4096),
            (0x20, 0x2_0000, 4096),
            (0x30, 0x3_0000, 10_001 - 8192)
        ]
    );
    for w in &plan.writes {
        assert_eq!(
            w.data.iter().map(Bytes::len).sum::<usize>(),
            w.remote.length as usize
        );
    }
    // the writes carry exactly the payload: no XDR padding
    assert_eq!(written(&plan), data.to_vec());
    assert_eq!(plan.writes[1].data[0].as_ptr(), data[4096..].as_ptr());
    // the reply header returns the Write chunk with the lengths written
    assert_eq!(
        plan.header.write_list,
        vec![WriteChunk(vec![
            seg(0x10, 4096, 0x1_0000),
            seg(0x20, 4096, 0x2_0000),
            seg(0x30, 1809, 0x3_0000)
        ])]
    );
    assert_eq!(plan.write_chunk_bytes, vec![10_001]);
    assert_eq!(plan.header.proc_, Proc::Msg);
    // inline: everything but the payload and its padding; the length word stays
    let flat = r.to_bytes();
    let item_start = 24 + 20; // RPC reply header, status, attrs flag, count, eof, length word
    let mut expect = flat[..item_start].to_vec();
    expect.extend_from_slice(&trailer);
    assert_eq!(concat(&plan.inline), expect);
    assert_eq!(
        u32::from_be_bytes(expect[item_start - 4..item_start].try_into().unwrap()),
        10_001
    );
    let (decoded, _) =
        Header::decode(&plan.header_bytes, &crate::limits::Limits::default()).unwrap();
    assert_eq!(decoded, plan.header);
}

#[test]
fn payload_filling_the_first_segment_leaves_the_second_unused() {
    let data = payload(4096);
    let wc = WriteChunk(vec![seg(1, 4096, 0), seg(2, 4096, 0x8000)]);
    let c = call(XID, Proc::Msg, vec![], vec![wc], None);
    let plan = plan_reply(&c, 1, &read_reply(&data, &[]), 4096).unwrap();
    assert_eq!(plan.writes.len(), 1);
    assert_eq!(
        plan.header.write_list[0],
        WriteChunk(vec![seg(1, 4096, 0), seg(2, 0, 0x8000)])
    );
}

#[test]
fn a_provided_write_chunk_is_used_even_for_a_small_payload() {
    let data = payload(100);
    let c = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![seg(7, 1 << 20, 0)])],
        None,
    );
    let plan = plan_reply(&c, 1, &read_reply(&data, &[]), 4096).unwrap();
    assert_eq!(written(&plan), data.to_vec());
    assert_eq!(plan.header.write_list[0].0[0].length, 100);
}

#[test]
fn write_chunk_too_small_is_an_error_not_a_partial_write() {
    let data = payload(8193);
    let c = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![seg(1, 4096, 0), seg(2, 4096, 0)])],
        Some(WriteChunk(vec![seg(3, 1 << 20, 0)])),
    );
    assert_eq!(c.write_list[0].capacity(), 8192);
    let e = plan_reply(&c, 1, &read_reply(&data, &[]), 4096).unwrap_err();
    assert_eq!(
        e,
        PlanError::WriteChunkTooSmall {
            chunk: 0,
            payload: 8193,
            capacity: 8192
        }
    );
    assert_eq!(e.disposition(), Disposition::ReplyError(ErrorKind::Chunk));
    // a payload of the chunk's size fits
    let capped = payload(8192);
    assert!(plan_reply(&c, 1, &read_reply(&capped, &[]), 4096).is_ok());
}

#[test]
fn write_chunk_without_payload_is_returned_unused() {
    let c = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![seg(1, 4096, 0x10), seg(2, 4096, 0x20)])],
        None,
    );
    // e.g. READ failed with NFS3ERR_IO: no data item in the reply
    let plan = plan_reply(&c, 1, &plain_reply(40), 4096).unwrap();
    assert!(plan.writes.is_empty());
    assert_eq!(
        plan.header.write_list,
        vec![WriteChunk(vec![seg(1, 0, 0x10), seg(2, 0, 0x20)])]
    );
    assert_eq!(plan.write_chunk_bytes, vec![0]);
}

#[test]
fn empty_write_chunk_means_inline() {
    let data = payload(6);
    let c = call(XID, Proc::Msg, vec![], vec![WriteChunk(vec![])], None);
    let r = read_reply(&data, &[]);
    let plan = plan_reply(&c, 1, &r, 4096).unwrap();
    assert!(plan.writes.is_empty());
    assert_eq!(concat(&plan.inline), r.to_bytes().to_vec());
    assert_eq!(plan.header.write_list, vec![WriteChunk(vec![])]);
}

#[test]
fn large_reply_goes_to_the_reply_chunk() {
    let r = plain_reply(8000);
    let rc = WriteChunk(vec![seg(5, 4096, 0x100), seg(6, 8192, 0x200)]);
    let c = call(XID, Proc::Msg, vec![], vec![], Some(rc));
    let plan = plan_reply(&c, 16, &r, 4096).unwrap();
    assert_eq!(plan.header.proc_, Proc::NoMsg);
    assert!(plan.inline.is_empty());
    assert_eq!(written(&plan), r.to_bytes().to_vec());
    assert_eq!(
        plan.header.reply_chunk,
        Some(WriteChunk(vec![
            seg(5, 4096, 0x100),
            seg(6, 8000 - 4096, 0x200)
        ]))
    );
    assert_eq!(plan.reply_chunk_bytes, Some(8000));
    assert_eq!(
        &plan.header_bytes[..],
        &super::words(&[XID, 1, 16, RDMA_NOMSG, 0, 0, 1, 2, 5, 4096, 0, 0x100, 6, 3904, 0, 0x200])
            [..]
    );
}

#[test]
fn bulk_in_reply_chunk_keeps_its_padding() {
    // READ_PLUS-like: bulk data but the client gave only a Reply chunk
    let data = payload(6001);
    let r = read_reply(&data, &[1, 2, 3, 4]);
    let c = call(
        XID,
        Proc::Msg,
        vec![],
        vec![],
        Some(WriteChunk(vec![seg(5, 1 << 20, 0)])),
    );
    let plan = plan_reply(&c, 1, &r, 4096).unwrap();
    assert_eq!(plan.header.proc_, Proc::NoMsg);
    assert_eq!(written(&plan), r.to_bytes().to_vec());
    assert_eq!(written(&plan).len() % 4, 0);
}

#[test]
fn reply_fitting_inline_leaves_the_reply_chunk_unused() {
    let c = call(
        XID,
        Proc::Msg,
        vec![],
        vec![],
        Some(WriteChunk(vec![seg(5, 1 << 20, 0)])),
    );
    let plan = plan_reply(&c, 1, &plain_reply(100), 4096).unwrap();
    assert_eq!(plan.header.proc_, Proc::Msg);
    assert_eq!(plan.header.reply_chunk, None);
    assert!(plan.writes.is_empty());
}

#[test]
fn too_large_without_or_beyond_the_reply_chunk() {
    let r = plain_reply(5000);
    let e = plan_reply(&no_chunks(), 1, &r, 4096).unwrap_err();
    assert_eq!(
        e,
        PlanError::ReplyTooLarge {
            len: 5028,
            max: 4096
        }
    );
    let c = call(
        XID,
        Proc::Msg,
        vec![],
        vec![],
        Some(WriteChunk(vec![seg(5, 4096, 0)])),
    );
    let e = plan_reply(&c, 1, &r, 4096).unwrap_err();
    assert_eq!(
        e,
        PlanError::ReplyChunkTooSmall {
            len: 5000,
            capacity: 4096
        }
    );
    assert_eq!(e.disposition(), Disposition::ReplyError(ErrorKind::Chunk));
    // exactly at the limit still fits
    let fits = plain_reply(4096 - 28);
    assert!(plan_reply(&no_chunks(), 1, &fits, 4096).is_ok());
}

#[test]
fn write_chunk_plus_reply_chunk_when_the_rest_is_still_too_big() {
    let data = payload(3000);
    let r = read_reply(&data, &[7; 2000]);
    let c = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![seg(1, 4096, 0)])],
        Some(WriteChunk(vec![seg(2, 4096, 0)])),
    );
    let plan = plan_reply(&c, 1, &r, 1024).unwrap();
    assert_eq!(plan.header.proc_, Proc::NoMsg);
    assert_eq!(plan.write_chunk_bytes, vec![3000]);
    assert_eq!(plan.reply_chunk_bytes, Some(44 + 2000));
    assert_eq!(plan.writes[0].remote.handle, 1);
    assert_eq!(plan.writes[1].remote.handle, 2);
}

#[test]
fn error_plan_is_byte_exact() {
    let p = SendPlan::error(XID, 1, 9, ErrorKind::Chunk);
    assert_eq!(
        &p.header_bytes[..],
        &super::words(&[XID, 1, 9, RDMA_ERROR, ERR_CHUNK])[..]
    );
    assert!(p.inline.is_empty() && p.writes.is_empty());
    assert_eq!(p.send_len(), 20);
}

#[test]
fn remote_invalidation_needs_exactly_one_rkey() {
    let one = call(
        XID,
        Proc::Msg,
        vec![ReadChunk {
            position: 8,
            segments: vec![seg(0x42, 10, 0), seg(0x42, 10, 10)],
        }],
        vec![WriteChunk(vec![seg(0x42, 4096, 0)])],
        Some(WriteChunk(vec![seg(0x42, 4096, 8192)])),
    );
    assert_eq!(remote_invalidate_rkey(&one), Some(0x42));
    let mut two = one.clone();
    two.reply_chunk = Some(WriteChunk(vec![seg(0x43, 4096, 0)]));
    assert_eq!(remote_invalidate_rkey(&two), None);
    let mut two = one.clone();
    two.read_list[0].segments[1].handle = 0;
    assert_eq!(remote_invalidate_rkey(&two), None);
    assert_eq!(remote_invalidate_rkey(&no_chunks()), None);
    let zero = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![seg(0, 1, 0)])],
        None,
    );
    assert_eq!(remote_invalidate_rkey(&zero), Some(0));
}

proptest! {
    #[test]
    fn write_chunk_plans_cover_the_payload_exactly(
        len in 0usize..20_000,
        segs in proptest::collection::vec(0u32..9000, 0..6),
    ) {
        let data = payload(len);
        let wc = WriteChunk(segs.iter().enumerate().map(|(i, &l)| seg(i as u32, l, 0)).collect());
        let cap = wc.capacity();
        let c = call(XID, Proc::Msg, vec![], vec![wc.clone()], None);
        match plan_reply(&c, 1, &read_reply(&data, &[]), 4096) {
            Ok(plan) => {
                if !segs.is_empty() {
                    prop_assert!(len as u64 <= cap);
                    prop_assert_eq!(written(&plan), data.to_vec());
                    let returned = &plan.header.write_list[0].0;
                    prop_assert_eq!(returned.len(), segs.len());
                    for (r, s) in returned.iter().zip(&wc.0) {
                        prop_assert!(r.length <= s.length);
                        prop_assert_eq!((r.handle, r.offset), (s.handle, s.offset));
                    }
                    prop_assert_eq!(returned.iter().map(|s| s.length as usize).sum::<usize>(), len);
                } else {
                    prop_assert_eq!(concat(&plan.inline).len(), 44 + len.div_ceil(4) * 4);
                }
                prop_assert!(plan.send_len() <= 4096);
            }
            Err(PlanError::WriteChunkTooSmall { payload, capacity, .. }) => {
                prop_assert!(payload > capacity);
            }
            Err(PlanError::ReplyTooLarge { len: l, max }) => {
                prop_assert!(segs.is_empty() && l > max);
            }
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }

    #[test]
    fn reply_chunk_plans_reproduce_the_reply(n in 1usize..3000, segs in proptest::collection::vec(1u32..2000, 1..5)) {
        let r = plain_reply(4 + n * 4);
        let rc = WriteChunk(segs.iter().map(|&l| seg(9, l, 0)).collect());
        let c = call(XID, Proc::Msg, vec![], vec![], Some(rc.clone()));
        match plan_reply(&c, 1, &r, 1024) {
            Ok(plan) if plan.header.proc_ == Proc::NoMsg => {
                prop_assert_eq!(written(&plan), r.to_bytes().to_vec());
            }
            Ok(plan) => prop_assert_eq!(concat(&plan.inline), r.to_bytes().to_vec()),
            Err(PlanError::ReplyChunkTooSmall { len, capacity }) => {
                prop_assert!(len > capacity && capacity == rc.capacity());
            }
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }
}

/// The largest batches the default limits let through fit the send queue every connection
/// gets (`MIN_SEND_DEPTH`): a reply whose payload fills a Write chunk of the most segments and
/// whose reduced message fills a Reply chunk of the most segments, and a long call whose
/// Position-Zero chunk and data chunks use every Read list entry.
#[test]
fn the_largest_batches_the_limits_allow_fit_the_smallest_send_queue() {
    use crate::limits::{Limits, MAX_SEGMENTS, MIN_SEND_DEPTH};
    let n = MAX_SEGMENTS;
    let data = payload(n * 4096);
    let h = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(
            (0..n).map(|i| seg(1, 4096, (i * 4096) as u64)).collect(),
        )],
        Some(WriteChunk(
            (0..n).map(|i| seg(2, 64, (i * 64) as u64)).collect(),
        )),
    );
    let msg = super::message(&h, &super::rpc_bytes(XID, 64));
    Limits::default()
        .accept_call(&msg)
        .expect("within the default limits");
    // an inline size that holds the transport header with both chunks but not the reduced
    // reply (44 bytes of headers and counts and 2,004 of trailer: the Reply chunk's 2,048),
    // which goes to the Reply chunk
    let inline = h.encoded_len() + 32;
    let plan = plan_reply(&h, 8, &read_reply(&data, &[7u8; 2004]), inline).expect("planned");
    assert!(plan.reply_chunk_bytes.is_some());
    let wrs = plan.writes.len() + 1;
    assert!(
        wrs > 2 * n - 8,
        "the test fills both chunks: {wrs} requests"
    );
    assert!(wrs <= MIN_SEND_DEPTH as usize, "{wrs} > {MIN_SEND_DEPTH}");

    // a long call: half the entries carry the call, the others data items inside it
    let half = n / 2;
    let mut reads = vec![ReadChunk {
        position: 0,
        segments: (0..half).map(|i| seg(3, 64, (i * 64) as u64)).collect(),
    }];
    for i in 0..n - half {
        reads.push(ReadChunk {
            position: (16 + 4 * i) as u32,
            segments: vec![seg(4, 4, (i * 4) as u64)],
        });
    }
    let h = call(XID, Proc::NoMsg, reads, vec![], None);
    let c = Limits::default()
        .accept_call(&super::message(&h, &[]))
        .expect("within the default limits");
    let r = c.reads.reads().len();
    assert!(r > n, "the call chunk is read in pieces: {r} reads");
    assert!(r <= MIN_SEND_DEPTH as usize, "{r} > {MIN_SEND_DEPTH}");
}

/// A COMPOUND whose READ_PLUS result (data that is not DDP-eligible, RFC 8267) comes before a
/// READ result: the call's one Write chunk is the READ's, and READ_PLUS data, bytes or file
/// pages, travels in the body (here the Reply chunk).
#[test]
fn read_plus_data_never_takes_the_write_chunk_of_a_read() {
    #[derive(Debug)]
    struct Mem(Bytes);
    impl xdr::Pages for Mem {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn splice_to(
            &self,
            _: std::os::fd::BorrowedFd<'_>,
            _: usize,
            _: bool,
        ) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::Unsupported.into())
        }
        fn to_bytes(&self) -> std::io::Result<Bytes> {
            Ok(self.0.clone())
        }
    }
    let plus = payload(3001);
    let read = payload(4000);
    for as_pages in [false, true] {
        let mut e = Encoder::new();
        for w in [XID, 1, 0, 0, 0, 0] {
            e.u32(w);
        }
        e.u32(1); // the READ_PLUS result's words before its data
        e.opaque_body_payload(if as_pages {
            xdr::Payload::Pages(std::sync::Arc::new(Mem(plus.clone())))
        } else {
            xdr::Payload::Bytes(plus.clone())
        });
        e.u32(2); // the READ result's words before its data
        e.opaque_bulk(read.clone());
        let r = e.finish();
        let c = call(
            XID,
            Proc::Msg,
            vec![],
            vec![WriteChunk(vec![seg(1, 4000, 0)])],
            Some(WriteChunk(vec![seg(2, 8192, 0x10000)])),
        );
        let plan = plan_reply(&c, 1, &r, 1024).unwrap();
        assert_eq!(plan.header.proc_, Proc::NoMsg);
        assert_eq!(plan.write_chunk_bytes, vec![4000]);
        assert_eq!(
            concat(
                plan.writes
                    .iter()
                    .filter(|w| w.remote.handle == 1)
                    .flat_map(|w| &w.data)
            ),
            read.to_vec()
        );
        // the body, READ_PLUS data and its padding included, went to the Reply chunk
        let body = concat(
            plan.writes
                .iter()
                .filter(|w| w.remote.handle == 2)
                .flat_map(|w| &w.data),
        );
        let mut want = r.to_bytes().to_vec();
        let read_at = want.len() - 4000;
        want.truncate(read_at);
        assert_eq!(body, want, "pages: {as_pages}");
        assert_eq!(plan.reply_chunk_bytes, Some(want.len() as u64));
    }
}
