//! The backward direction (RFC 8167): the server sends RPC calls to the client on the
//! connection the client's calls arrive on, the NFSv4.1 back channel (CB_RECALL).
//!
//! * A backward call is an RDMA_MSG with the RPC call inline and all three chunk lists empty,
//!   its transport XID equal to the RPC XID: the Linux client recognises a backward call by
//!   exactly that shape (`rpcrdma_is_bcall`), before it looks at credits. It must fit the
//!   client's inline receive size.
//! * The client's reply comes back the same way (RDMA_MSG, no chunks, an RPC REPLY) and is
//!   consumed by the transport: it is not a forward call and takes no forward credit.
//! * Flow control is separate from the forward direction's: the server may have as many
//!   backward calls outstanding as the client granted in its last backward reply (its
//!   backchannel slots), one before any reply (RFC 8167 section 4).

use std::sync::atomic::{AtomicU32, Ordering};

use bytes::{BufMut, Bytes, BytesMut};

use crate::header::Header;

/// Most backward credits taken from a client's grant: the Linux client offers at most 16.
pub const MAX_BACKWARD_CREDITS: u32 = 64;

/// RPC message type of a reply (RFC 5531).
const RPC_REPLY: u32 = 1;

fn word(b: &[u8], i: usize) -> Option<u32> {
    b.get(i * 4..i * 4 + 4)
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

/// The message for a backward call: transport header (`credits` as our forward grant) and the
/// encoded RPC call `rpc`. `None` when `rpc` has no XID or the message exceeds `max_len` (the
/// client's inline receive size).
pub fn backward_call(rpc: &[u8], credits: u32, max_len: usize) -> Option<Bytes> {
    let xid = word(rpc, 0)?;
    let header = Header::msg(xid, credits).encode();
    if header.len() + rpc.len() > max_len {
        return None;
    }
    let mut m = BytesMut::with_capacity(header.len() + rpc.len());
    m.put_slice(&header);
    m.put_slice(rpc);
    Some(m.freeze())
}

/// If `msg` (a whole received message) is the client's reply to a backward call, the
/// backward credits it grants. Anything else (a forward call, a reply with chunks, a
/// different version) is `None` and goes the ordinary way.
pub fn backward_reply_credits(msg: &[u8]) -> Option<u32> {
    let w = |i| word(msg, i);
    let shape = w(1)? == 1 // version 1
        && w(3)? == 0 // RDMA_MSG
        && w(4)? == 0 && w(5)? == 0 && w(6)? == 0 // no chunks
        && w(7)? == w(0)? // RPC XID
        && w(8)? == RPC_REPLY;
    shape.then(|| w(2)).flatten()
}

/// Backward credits of one connection: how many calls may be outstanding, and how many are.
#[derive(Debug)]
pub struct BackCredits {
    granted: AtomicU32,
    outstanding: AtomicU32,
}

impl Default for BackCredits {
    fn default() -> Self {
        BackCredits {
            granted: AtomicU32::new(1),
            outstanding: AtomicU32::new(0),
        }
    }
}

impl BackCredits {
    /// Takes a credit for one more call; false when the client's grant is used up.
    pub fn take(&self) -> bool {
        let granted = self.granted.load(Ordering::Acquire);
        self.outstanding
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < granted).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives back a credit taken for a call that was not sent.
    pub fn give_back(&self) {
        let _ = self
            .outstanding
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// A reply arrived granting `credits` (at least 1, at most [`MAX_BACKWARD_CREDITS`]).
    pub fn on_reply(&self, credits: u32) {
        self.granted
            .store(credits.clamp(1, MAX_BACKWARD_CREDITS), Ordering::Release);
        self.give_back();
    }

    /// Calls sent and not answered yet.
    pub fn outstanding(&self) -> u32 {
        self.outstanding.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rpc(xid: u32, msg_type: u32, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        v[..4].copy_from_slice(&xid.to_be_bytes());
        v[4..8].copy_from_slice(&msg_type.to_be_bytes());
        v
    }

    #[test]
    fn a_backward_call_is_a_chunkless_rdma_msg_with_the_rpc_xid() {
        let call = rpc(0xabcd, 0, 100);
        let m = backward_call(&call, 32, 4096).unwrap();
        let w: Vec<u32> = (0..7).map(|i| word(&m, i).unwrap()).collect();
        assert_eq!(w, vec![0xabcd, 1, 32, 0, 0, 0, 0]);
        assert_eq!(&m[28..], &call[..]);
        // too large for the client's receive buffers, or no XID at all
        assert_eq!(backward_call(&call, 32, 127), None);
        assert_eq!(backward_call(&call[..3], 32, 4096), None);
    }

    #[test]
    fn only_a_chunkless_rpc_reply_is_a_backward_reply() {
        let reply = |xid: u32, rpc_xid: u32, credits: u32, chunks: [u32; 3], t: u32| {
            let mut v = Vec::new();
            for x in [
                xid, 1, credits, 0, chunks[0], chunks[1], chunks[2], rpc_xid, t, 0, 0,
            ] {
                v.extend_from_slice(&x.to_be_bytes());
            }
            v
        };
        assert_eq!(
            backward_reply_credits(&reply(7, 7, 16, [0; 3], 1)),
            Some(16)
        );
        // a forward call
        assert_eq!(backward_reply_credits(&reply(7, 7, 16, [0; 3], 0)), None);
        // chunks, a mismatched XID, another version, a short message
        assert_eq!(backward_reply_credits(&reply(7, 7, 16, [1, 0, 0], 1)), None);
        assert_eq!(backward_reply_credits(&reply(7, 8, 16, [0; 3], 1)), None);
        let mut v2 = reply(7, 7, 16, [0; 3], 1);
        v2[7] = 2;
        assert_eq!(backward_reply_credits(&v2), None);
        assert_eq!(
            backward_reply_credits(&reply(7, 7, 16, [0; 3], 1)[..32]),
            None
        );
    }

    #[test]
    fn backward_calls_stay_within_the_clients_grant() {
        let c = BackCredits::default();
        // one call before any reply
        assert!(c.take());
        assert!(!c.take());
        // the reply grants 3
        c.on_reply(3);
        assert_eq!(c.outstanding(), 0);
        assert!(c.take() && c.take() && c.take());
        assert!(!c.take());
        // a call that could not be sent gives its credit back
        c.give_back();
        assert!(c.take());
        // a grant of 0 still allows one; an absurd grant is capped
        c.on_reply(0);
        c.on_reply(0);
        c.on_reply(0);
        assert_eq!(c.outstanding(), 0);
        assert!(c.take());
        assert!(!c.take());
        c.on_reply(u32::MAX);
        assert_eq!(c.granted.load(Ordering::Acquire), MAX_BACKWARD_CREDITS);
        // more replies than calls never underflow
        for _ in 0..5 {
            c.on_reply(2);
        }
        assert_eq!(c.outstanding(), 0);
    }
}
