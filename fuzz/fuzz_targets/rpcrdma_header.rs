//! RPC-over-RDMA version 1 transport headers and chunk lists: `rpcrdma::Header::decode` and
//! `Limits::accept_call` with `Limits::default()`, on one received message.
//!
//! Checks: no panic; a decoded header re-encodes to `encoded_len()` bytes that decode to the
//! same header; the error reply of a rejected message has the RDMA_ERROR shape; for an
//! accepted call, the Read plan is consistent: its Reads, inline copies and padding tile the
//! reassembled call exactly, and filling a buffer of `message_len()` bytes succeeds.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use rpcrdma::{Disposition, Header, Limits, Proc};

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    let msg = Bytes::copy_from_slice(data);
    match Header::decode(&msg, &limits) {
        Ok((h, end)) => {
            assert!(end <= msg.len());
            let enc = h.encode();
            assert_eq!(enc.len(), h.encoded_len(), "encoded_len() is wrong");
            let relaxed = Limits {
                max_inline: usize::MAX,
                ..limits
            };
            let (h2, end2) = Header::decode(&enc, &relaxed).expect("re-encoded header decodes");
            assert_eq!(h, h2, "header does not round-trip");
            assert_eq!(end2, enc.len());
            if !matches!(h.proc_, Proc::Error(_)) {
                assert_eq!(end, enc.len(), "decoded length differs from the encoding");
            }
        }
        Err(e) => {
            let reply = e.error_reply(data, 1);
            match e.disposition() {
                Disposition::ReplyError(_) => {
                    if data.len() >= 8 {
                        let r = reply.expect("an error reply");
                        assert!(r.len() == 20 || r.len() == 28, "odd RDMA_ERROR length");
                        assert_eq!(&r[..8], &data[..8], "xid and version not echoed");
                    }
                }
                Disposition::Discard | Disposition::Close => assert!(reply.is_none()),
            }
        }
    }

    let Ok(call) = limits.accept_call(&msg) else {
        return;
    };
    let plan = &call.reads;
    let mut next = 0usize;
    for r in plan.extents() {
        assert_eq!(r.start, next, "the plan's extents do not tile the call");
        next = r.end;
    }
    assert_eq!(next, plan.message_len());
    let pulled: usize = plan.reads().iter().map(|r| r.remote.length as usize).sum();
    assert_eq!(pulled, plan.pull_len());
    if plan.message_len() > 1 << 20 {
        return;
    }
    let mut buf = vec![0xa5u8; plan.message_len()];
    plan.fill(&call.inline, &mut buf)
        .expect("an accepted call's plan fills a buffer of its length");
    for r in plan.reads() {
        buf[r.local_offset..r.local_offset + r.remote.length as usize].fill(0x5a);
    }
    let _ = plan.check(&buf);
});
