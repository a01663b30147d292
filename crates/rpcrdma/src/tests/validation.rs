use bytes::Bytes;
use proptest::prelude::*;

use super::{call, message, rpc_bytes, seg, words};
use crate::header::*;
use crate::limits::{Disposition, Limits, ValidationError, MIN_SHARE};

const XID: u32 = 0xdead_0001;

fn chunk_err() -> Disposition {
    Disposition::ReplyError(ErrorKind::Chunk)
}

/// Decodes and validates `msg` as a call with default limits.
fn accept(msg: &Bytes) -> Result<crate::limits::Call, ValidationError> {
    Limits::default().accept_call(msg)
}

fn rejected(msg: &[u8], limits: &Limits, want: ValidationError, disp: Disposition) {
    let got = limits
        .accept_call(&Bytes::copy_from_slice(msg))
        .unwrap_err();
    assert_eq!(got, want);
    assert_eq!(got.disposition(), disp);
}

#[test]
fn valid_calls_are_accepted() {
    let rpc = rpc_bytes(XID, 100);
    let c = accept(&message(&Header::msg(XID, 8), &rpc)).unwrap();
    assert_eq!(&c.inline[..], &rpc[..]);
    assert!(c.reads.is_empty());

    let h = call(
        XID,
        Proc::Msg,
        vec![ReadChunk {
            position: 100,
            segments: vec![seg(1, 4096, 0)],
        }],
        vec![WriteChunk(vec![seg(2, 4096, 0)])],
        Some(WriteChunk(vec![seg(3, 4096, 0)])),
    );
    let c = accept(&message(&h, &rpc)).unwrap();
    assert_eq!(c.header, h);
    assert_eq!(c.reads.pull_len(), 4096);
}

#[test]
fn short_messages_are_discarded() {
    let l = Limits::default();
    rejected(
        &[1, 2, 3],
        &l,
        ValidationError::Short { len: 3 },
        Disposition::Discard,
    );
    // 27 bytes: one word short of the smallest RDMA_MSG header
    let m = &words(&[XID, 1, 1, RDMA_MSG, 0, 0, 0])[..27];
    rejected(
        m,
        &l,
        ValidationError::Short { len: 27 },
        Disposition::Discard,
    );
    let m = &words(&[XID, 1, 1, RDMA_MSG, 0, 0])[..];
    assert_eq!(
        Header::decode(&Bytes::copy_from_slice(m), &l),
        Err(ValidationError::Short { len: 24 })
    );
}

#[test]
fn overlong_message_closes_the_connection() {
    let l = Limits {
        max_inline: 64,
        ..Limits::default()
    };
    let m = message(&Header::msg(XID, 1), &rpc_bytes(XID, 40));
    rejected(
        &m,
        &l,
        ValidationError::MessageTooLong { len: 68, max: 64 },
        Disposition::Close,
    );
}

#[test]
fn wrong_version_gets_err_vers_echoing_xid_and_version() {
    let m = words(&[XID, 2, 5, RDMA_MSG, 0, 0, 0, XID]);
    let l = Limits::default();
    let e = l.accept_call(&Bytes::from(m.clone())).unwrap_err();
    assert_eq!(e, ValidationError::BadVersion { vers: 2 });
    assert_eq!(
        e.disposition(),
        Disposition::ReplyError(ErrorKind::Vers { low: 1, high: 1 })
    );
    let reply = e.error_reply(&m, 32).unwrap();
    assert_eq!(
        &reply[..],
        &words(&[XID, 2, 32, RDMA_ERROR, ERR_VERS, 1, 1])[..]
    );
}

#[test]
fn message_types() {
    let l = Limits::default();
    let m = words(&[XID, 1, 1, RDMA_MSGP, 0, 0, 0, 0, 0]);
    rejected(&m, &l, ValidationError::MsgpNotSupported, chunk_err());
    let e = l.accept_call(&Bytes::from(m.clone())).unwrap_err();
    assert_eq!(
        &e.error_reply(&m, 7).unwrap()[..],
        &words(&[XID, 1, 7, RDMA_ERROR, ERR_CHUNK])[..]
    );
    let m = words(&[XID, 1, 1, RDMA_DONE, 0, 0, 0]);
    rejected(
        &m,
        &l,
        ValidationError::DoneNotSupported,
        Disposition::Discard,
    );
    let e = l.accept_call(&Bytes::from(m.clone())).unwrap_err();
    assert_eq!(e.error_reply(&m, 7), None);
    let m = words(&[XID, 1, 1, 5, 0, 0, 0]);
    rejected(&m, &l, ValidationError::BadProc(5), chunk_err());
    let m = words(&[XID, 1, 1, 0xffff_ffff, 0, 0, 0]);
    rejected(&m, &l, ValidationError::BadProc(0xffff_ffff), chunk_err());
    // an RDMA_ERROR sent to the responder decodes, but is never answered
    let m = words(&[XID, 1, 1, RDMA_ERROR, ERR_CHUNK]);
    rejected(
        &m,
        &l,
        ValidationError::UnexpectedError,
        Disposition::Discard,
    );
    let m = words(&[XID, 1, 1, RDMA_ERROR, 9, 0, 0]);
    rejected(
        &m,
        &l,
        ValidationError::BadErrorMessage,
        Disposition::Discard,
    );
    let m = words(&[XID, 3, 1, RDMA_ERROR, ERR_VERS, 3, 3]);
    rejected(
        &m,
        &l,
        ValidationError::BadErrorMessage,
        Disposition::Discard,
    );
}

#[test]
fn header_running_past_the_message() {
    let l = Limits::default();
    // a read entry cut in the middle of its segment
    let m = words(&[XID, 1, 1, RDMA_MSG, 1, 100, 7, 4096]);
    rejected(&m, &l, ValidationError::Truncated, chunk_err());
    // the reply chunk discriminator is missing
    let m = words(&[XID, 1, 1, RDMA_MSG, 0, 1, 0, 0]);
    rejected(&m, &l, ValidationError::Truncated, chunk_err());
    // a plausible segment count (within the limit) with too few bytes behind it
    let m = words(&[XID, 1, 1, RDMA_MSG, 0, 1, 20, 0, 0, 0, 0]);
    rejected(&m, &l, ValidationError::Truncated, chunk_err());
}

#[test]
fn bad_discriminator() {
    let m = words(&[XID, 1, 1, RDMA_MSG, 2, 0, 0]);
    rejected(
        &m,
        &Limits::default(),
        ValidationError::Xdr(xdr::XdrError::BadBool(2)),
        chunk_err(),
    );
}

#[test]
fn list_lengths_are_bounded_before_allocation() {
    let l = Limits {
        max_read_segments: 2,
        max_segments_per_chunk: 4,
        ..Limits::default()
    };
    let mut w = vec![XID, 1, 1, RDMA_MSG];
    for p in [8, 12, 16] {
        w.extend([1, p, 1, 4, 0, 0]);
    }
    w.extend([0, 0, 0]);
    rejected(
        &words(&w),
        &l,
        ValidationError::TooManyReadSegments { max: 2 },
        chunk_err(),
    );
    // 2^32-1 segments claimed: refused on the count alone
    let m = words(&[XID, 1, 1, RDMA_MSG, 0, 1, 0xffff_ffff, 0, 0, 0]);
    rejected(
        &m,
        &l,
        ValidationError::TooManySegments {
            count: 0xffff_ffff,
            max: 4,
        },
        chunk_err(),
    );
    let mut w = vec![XID, 1, 1, RDMA_MSG, 0, 0, 1, 5];
    w.extend([0; 5 * 4]);
    rejected(
        &words(&w),
        &l,
        ValidationError::TooManySegments { count: 5, max: 4 },
        chunk_err(),
    );
}

#[test]
fn several_write_chunks_where_one_is_allowed() {
    let h = call(
        XID,
        Proc::Msg,
        vec![],
        vec![
            WriteChunk(vec![seg(1, 10, 0)]),
            WriteChunk(vec![seg(2, 10, 0)]),
        ],
        None,
    );
    let m = message(&h, &rpc_bytes(XID, 8));
    rejected(
        &m,
        &Limits::default(),
        ValidationError::TooManyWriteChunks { max: 1 },
        chunk_err(),
    );
    // also caught on a header built in memory
    assert_eq!(
        Limits::default().validate_call(&h, &rpc_bytes(XID, 8)),
        Err(ValidationError::TooManyWriteChunks { max: 1 })
    );
}

#[test]
fn segment_lengths() {
    let l = Limits::default();
    let too_long = l.max_segment_len + 1;
    let h = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![seg(1, too_long, 0)])],
        None,
    );
    rejected(
        &message(&h, &rpc_bytes(XID, 8)),
        &l,
        ValidationError::SegmentTooLong {
            len: too_long,
            max: l.max_segment_len,
        },
        chunk_err(),
    );
    let h = call(
        XID,
        Proc::Msg,
        vec![ReadChunk {
            position: 8,
            segments: vec![seg(1, 0, 0)],
        }],
        vec![],
        None,
    );
    rejected(
        &message(&h, &rpc_bytes(XID, 8)),
        &l,
        ValidationError::ZeroLengthReadSegment { position: 8 },
        chunk_err(),
    );
    // zero-length Write chunk segments are harmless: they just hold nothing
    let h = call(
        XID,
        Proc::Msg,
        vec![],
        vec![WriteChunk(vec![seg(1, 0, 0)])],
        Some(WriteChunk(vec![])),
    );
    assert!(l.accept_call(&message(&h, &rpc_bytes(XID, 8))).is_ok());
}

fn read_call(proc_: Proc, chunks: &[(u32, u32)]) -> Header {
    let read_list = chunks
        .iter()
        .map(|&(position, len)| ReadChunk {
            position,
            segments: vec![seg(1, len, 0)],
        })
        .collect();
    call(XID, proc_, read_list, vec![], None)
}

#[test]
fn read_positions() {
    let l = Limits::default();
    let rpc = rpc_bytes(XID, 40);
    let check = |chunks: &[(u32, u32)], want: ValidationError| {
        let m = message(&read_call(Proc::Msg, chunks), &rpc);
        rejected(&m, &l, want, chunk_err());
    };
    check(
        &[(6, 8)],
        ValidationError::MisalignedPosition { position: 6 },
    );
    check(
        &[(44, 8)],
        ValidationError::PositionBeyondEnd {
            position: 44,
            len: 40,
        },
    );
    // the second chunk sits inside the first one's (padded) data
    check(
        &[(16, 9), (24, 4)],
        ValidationError::PositionOutOfOrder { position: 24 },
    );
    check(
        &[(24, 4), (16, 4)],
        ValidationError::PositionOutOfOrder { position: 16 },
    );
    check(
        &[(16, 4), (24, 4), (16, 4)],
        ValidationError::PositionOutOfOrder { position: 16 },
    );
    // positions count the unreduced message: 40 inline bytes + a 12-byte chunk reach 52
    check(
        &[(8, 12), (56, 4)],
        ValidationError::PositionBeyondEnd {
            position: 56,
            len: 40,
        },
    );
    // a chunk right at the end of the inline message is fine, as is one right after another
    let ok = |chunks: &[(u32, u32)]| {
        l.accept_call(&message(&read_call(Proc::Msg, chunks), &rpc))
            .unwrap()
    };
    assert_eq!(ok(&[(40, 5)]).reads.message_len(), 48);
    assert_eq!(ok(&[(8, 12), (20, 4), (52, 1)]).reads.message_len(), 60);
}

#[test]
fn position_zero_chunk_rules() {
    let l = Limits::default();
    let rpc = rpc_bytes(XID, 40);
    let m = message(&read_call(Proc::Msg, &[(0, 200)]), &rpc);
    rejected(&m, &l, ValidationError::MsgWithCallChunk, chunk_err());
    let m = message(&read_call(Proc::NoMsg, &[(40, 8)]), &[]);
    rejected(&m, &l, ValidationError::NoMsgWithoutCallChunk, chunk_err());
    let m = message(&call(XID, Proc::NoMsg, vec![], vec![], None), &[]);
    rejected(&m, &l, ValidationError::NoMsgWithoutCallChunk, chunk_err());
    // a data chunk after the call chunk is placed within the call chunk's 200 bytes
    let c = l
        .accept_call(&message(
            &read_call(Proc::NoMsg, &[(0, 200), (200, 8)]),
            &[],
        ))
        .unwrap();
    assert_eq!(c.reads.message_len(), 208);
    let m = message(&read_call(Proc::NoMsg, &[(0, 200), (204, 8)]), &[]);
    rejected(
        &m,
        &l,
        ValidationError::PositionBeyondEnd {
            position: 204,
            len: 200,
        },
        chunk_err(),
    );
}

#[test]
fn rpc_message_and_xid() {
    let l = Limits::default();
    let h = Header::msg(XID, 1);
    rejected(
        &message(&h, &[]),
        &l,
        ValidationError::NoRpcMessage,
        chunk_err(),
    );
    rejected(
        &message(&h, &[0, 0, 0]),
        &l,
        ValidationError::NoRpcMessage,
        chunk_err(),
    );
    rejected(
        &message(&h, &rpc_bytes(XID + 1, 40)),
        &l,
        ValidationError::XidMismatch {
            header: XID,
            rpc: XID + 1,
        },
        chunk_err(),
    );
}

#[test]
fn fair_share_of_the_receive_queue() {
    let l = Limits::default();
    // one connection gets everything up to its maximum
    assert_eq!(l.fair_share(2032, 1), 128);
    assert_eq!(l.fair_share(2032, 0), 128, "no connection counted yet");
    // 2032 buffers among 32 connections: 63 each
    assert_eq!(l.fair_share(2032, 32), 63);
    // many connections: never below MIN_SHARE, so the queue may run dry (RNR, retried)
    assert_eq!(l.fair_share(2032, 1000), MIN_SHARE);
    assert_eq!(l.fair_share(0, 5), MIN_SHARE);
    // a maximum below MIN_SHARE wins
    let small = Limits {
        max_credits: 4,
        ..l
    };
    assert_eq!(small.fair_share(2032, 1000), 4);
    assert_eq!(small.fair_share(2032, 1), 4);
    let zero = Limits {
        max_credits: 0,
        ..l
    };
    assert_eq!(zero.fair_share(2032, 1), 1);
    assert_eq!(l.fair_share(usize::MAX, 1), 128);
}

#[test]
fn credits() {
    let l = Limits::default();
    assert_eq!(
        l.grant(0),
        1,
        "a request of zero must not stall the connection"
    );
    assert_eq!(l.grant(1), 1);
    assert_eq!(l.grant(32), 32);
    assert_eq!(l.grant(128), 128);
    assert_eq!(l.grant(129), 128);
    assert_eq!(l.grant(u32::MAX), 128);
    let zero = Limits {
        max_credits: 0,
        ..l
    };
    assert_eq!(zero.grant(5), 1);
    assert_eq!(zero.grant_within(5, 0), 1);
    assert_eq!(l.grant_within(128, 40), 40);
    assert_eq!(l.grant_within(10, 40), 10);
    assert_eq!(l.grant_within(0, 40), 1);
    assert_eq!(l.grant_within(u32::MAX, 1000), 128);
    assert_eq!(l.check_credits(128, 128), Ok(()));
    let e = l.check_credits(129, 128).unwrap_err();
    assert_eq!(
        e,
        ValidationError::CreditOverrun {
            in_flight: 129,
            granted: 128
        }
    );
    assert_eq!(e.disposition(), Disposition::Close);
    // any credit value in a call header is acceptable
    for credits in [0, u32::MAX] {
        let h = Header::msg(XID, credits);
        assert!(l.accept_call(&message(&h, &rpc_bytes(XID, 8))).is_ok());
    }
}

#[test]
fn error_reply_needs_the_xid_words() {
    let e = ValidationError::Truncated;
    assert_eq!(e.error_reply(&[1, 2, 3], 1), None);
    assert_eq!(
        &e.error_reply(&words(&[5, 1]), 3).unwrap()[..],
        &words(&[5, 1, 3, RDMA_ERROR, ERR_CHUNK])[..]
    );
}

/// Words that steer the decoder into its lists: small list markers, counts and positions.
fn arb_word() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..3,
        2 => Just(RDMA_NOMSG),
        2 => prop_oneof![Just(4u32), Just(8), Just(16), Just(40), Just(132), Just(4096)],
        1 => any::<u32>(),
    ]
}

proptest! {
    #[test]
    fn random_bytes_never_panic(v in proptest::collection::vec(any::<u8>(), 0..200)) {
        let msg = Bytes::from(v);
        for l in [Limits::default(), Limits { max_inline: 64, max_read_segments: 2, ..Limits::default() }] {
            if let Err(e) = l.accept_call(&msg) {
                let _ = e.disposition();
                let _ = e.error_reply(&msg, 1);
            }
            let _ = Header::decode(&msg, &l);
        }
    }

    #[test]
    fn structured_garbage_never_panics(
        xid in any::<u32>(),
        proc_ in 0u32..6,
        body in proptest::collection::vec(arb_word(), 0..60),
        inline in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut w = vec![xid, 1, 1, proc_];
        w.extend(body);
        let mut v = words(&w);
        v.extend(inline);
        let msg = Bytes::from(v);
        let l = Limits { max_segment_len: 8192, ..Limits::default() };
        match l.accept_call(&msg) {
            Ok(c) => {
                // a valid call's plan tiles the call and fills a buffer of its size
                let mut next = 0;
                for r in c.reads.extents() {
                    prop_assert_eq!(r.start, next);
                    next = r.end;
                }
                prop_assert_eq!(next, c.reads.message_len());
                let mut buf = vec![0u8; c.reads.message_len()];
                prop_assert!(c.reads.fill(&c.inline, &mut buf).is_ok());
            }
            Err(e) => {
                let d = e.disposition();
                let too_long = matches!(e, ValidationError::MessageTooLong { .. });
                prop_assert!(d != Disposition::Close || too_long, "closed on {:?}", e);
            }
        }
    }
}
