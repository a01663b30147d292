//! Replies to the calls the server makes to its clients (the NFSv4.1 back channel). The
//! transports hand every RPC reply they receive to [`deliver`]; a caller that waits for the
//! answer (CB_GETATTR) registered its XID with [`expect`] before sending the call. Replies
//! nobody waits for (CB_RECALL's) are dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::LazyLock;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;

static PENDING: LazyLock<Mutex<HashMap<u32, SyncSender<Bytes>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

static NEXT_XID: AtomicU32 = AtomicU32::new(0x6362_0000);

/// A fresh XID for a call to a client: unique among the server's outstanding callbacks.
pub fn next_xid() -> u32 {
    NEXT_XID.fetch_add(1, Ordering::Relaxed)
}

/// The wait for the reply to one callback; dropping it stops waiting (a late reply is then
/// dropped).
#[derive(Debug)]
pub struct Waiter {
    xid: u32,
    rx: Receiver<Bytes>,
}

impl Waiter {
    /// The whole RPC reply message, or None when none came within `timeout`.
    pub fn wait(self, timeout: Duration) -> Option<Bytes> {
        self.rx.recv_timeout(timeout).ok()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        PENDING.lock().remove(&self.xid);
    }
}

/// Registers interest in the reply to the call with `xid`; register before sending, so that
/// a fast reply is not missed.
pub fn expect(xid: u32) -> Waiter {
    let (tx, rx) = sync_channel(1);
    PENDING.lock().insert(xid, tx);
    Waiter { xid, rx }
}

/// Hands an RPC reply message received from a client to whoever waits for it; false when
/// nobody does (an unknown XID, or a reply nobody waits for).
pub fn deliver(msg: Bytes) -> bool {
    let Some(xid) = msg
        .get(..4)
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    else {
        return false;
    };
    match PENDING.lock().remove(&xid) {
        Some(tx) => tx.try_send(msg).is_ok(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_reaches_the_waiter_of_its_xid_only() {
        let (a, b) = (next_xid(), next_xid());
        assert_ne!(a, b);
        let wa = expect(a);
        let wb = expect(b);
        let reply = |xid: u32| Bytes::from([xid.to_be_bytes(), 1u32.to_be_bytes()].concat());
        assert!(deliver(reply(b)));
        assert!(!deliver(reply(b)), "delivered once");
        assert!(
            !deliver(Bytes::from_static(b"\x00\x01")),
            "too short to carry an XID"
        );
        assert_eq!(wb.wait(Duration::from_secs(1)), Some(reply(b)));
        assert_eq!(wa.wait(Duration::from_millis(10)), None);
        assert!(!deliver(reply(a)), "nobody waits after the timeout");
    }
}
