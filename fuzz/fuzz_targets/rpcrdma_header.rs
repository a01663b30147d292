//! RPC-over-RDMA version 1 transport headers and chunk lists: `rpcrdma::Header::decode` and
//! `Limits::accept_call` with `Limits::default()`, on one received message.
//!
//! Checks: no panic; a decoded header re-encodes to `encoded_len()` bytes that decode to the
//! same header; the error reply of a rejected message has the RDMA_ERROR shape; for an
//! accepted call, the Read plan is consistent (Reads tile the pull buffer) and, with a
//! synthetic pull buffer, `assemble` yields exactly `message_len()` bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use rpcrdma::{assemble_contiguous, Disposition, Header, Limits, Proc};

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
    for r in plan.reads() {
        assert_eq!(r.local_offset, next, "Reads do not tile the pull buffer");
        next += r.remote.length as usize;
    }
    assert_eq!(next, plan.pull_len());
    if plan.pull_len() > 1 << 20 {
        return;
    }
    let mut pulled = vec![0xa5u8; plan.pull_len()];
    if plan.call_chunk_len().is_some() && pulled.len() >= 4 {
        pulled[..4].copy_from_slice(&call.header.xid.to_be_bytes());
    }
    if let Ok(pieces) = plan.assemble(&call.inline, &Bytes::from(pulled)) {
        let total: usize = pieces.iter().map(Bytes::len).sum();
        assert_eq!(total, plan.message_len(), "assembled call length");
        assert_eq!(assemble_contiguous(&pieces).len(), total);
    }
});
