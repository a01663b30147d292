//! Replies to the calls the server makes to its clients (the NFSv4.1 back channel). The
//! transports hand every RPC reply they receive to [`deliver`], with the [`BackChannel::id`] of
//! the connection it came on; the caller registered the call's XID on that connection with
//! [`expect`] before sending it, and may wait for the reply ([`Waiter::wait`]) or only ask
//! later whether it came ([`Waiter::answered`]: the call's slot is free again). A reply on
//! another connection, or to an XID nobody registered, is dropped.
//!
//! [`BackChannel::id`]: crate::BackChannel::id

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct Slot {
    reply: Mutex<Option<Bytes>>,
    came: Condvar,
}

type Key = (u64, u32);

static PENDING: LazyLock<Mutex<HashMap<Key, Arc<Slot>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

static NEXT_XID: LazyLock<AtomicU32> = LazyLock::new(|| {
    // Not guessable from outside the process's start time, so a client cannot easily aim a
    // reply at a callback it did not get (replies are matched per connection as well).
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    AtomicU32::new(t.subsec_nanos() ^ (t.as_secs() as u32).rotate_left(16) ^ std::process::id())
});

static NEXT_CONN: AtomicU64 = AtomicU64::new(1);

/// A fresh XID for a call to a client.
pub fn next_xid() -> u32 {
    NEXT_XID.fetch_add(1, Ordering::Relaxed)
}

/// A fresh identity for a connection that carries calls to the client.
pub fn next_conn_id() -> u64 {
    NEXT_CONN.fetch_add(1, Ordering::Relaxed)
}

/// The registration of one callback's reply; dropping it forgets the call (a later reply is
/// then dropped).
pub struct Waiter {
    key: Key,
    slot: Arc<Slot>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Waiter(conn {}, xid {:#x})", self.key.0, self.key.1)
    }
}

impl Waiter {
    /// The whole RPC reply message, or None when none came within `timeout`.
    pub fn wait(&self, timeout: Duration) -> Option<Bytes> {
        let end = Instant::now() + timeout;
        let mut r = self.slot.reply.lock();
        while r.is_none() {
            if self.slot.came.wait_until(&mut r, end).timed_out() {
                break;
            }
        }
        r.clone()
    }

    /// Whether the reply has come.
    pub fn answered(&self) -> bool {
        self.slot.reply.lock().is_some()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        PENDING.lock().remove(&self.key);
    }
}

/// Registers the call with `xid` sent on connection `conn`; register before sending, so that
/// a fast reply is not missed.
pub fn expect(conn: u64, xid: u32) -> Waiter {
    let slot = Arc::new(Slot::default());
    PENDING.lock().insert((conn, xid), slot.clone());
    Waiter {
        key: (conn, xid),
        slot,
    }
}

/// Hands an RPC reply message received on connection `conn` to the registration of its XID;
/// false when there is none.
pub fn deliver(conn: u64, msg: Bytes) -> bool {
    let Some(xid) = msg
        .get(..4)
        .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
    else {
        return false;
    };
    let Some(slot) = PENDING.lock().get(&(conn, xid)).cloned() else {
        return false;
    };
    let mut r = slot.reply.lock();
    if r.is_some() {
        return false;
    }
    *r = Some(msg);
    slot.came.notify_all();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(xid: u32) -> Bytes {
        Bytes::from([xid.to_be_bytes(), 1u32.to_be_bytes()].concat())
    }

    #[test]
    fn a_reply_reaches_the_registration_of_its_connection_and_xid_only() {
        let (a, b) = (next_xid(), next_xid());
        assert_ne!(a, b);
        let (c1, c2) = (next_conn_id(), next_conn_id());
        let wa = expect(c1, a);
        let wb = expect(c1, b);
        assert!(!deliver(c2, reply(b)), "the same XID on another connection");
        assert!(!wb.answered());
        assert!(deliver(c1, reply(b)));
        assert!(!deliver(c1, reply(b)), "delivered once");
        assert!(
            !deliver(c1, Bytes::from_static(b"\x00\x01")),
            "too short for an XID"
        );
        assert!(wb.answered());
        assert_eq!(wb.wait(Duration::from_secs(1)), Some(reply(b)));
        assert_eq!(wa.wait(Duration::from_millis(10)), None);
        drop(wa);
        assert!(
            !deliver(c1, reply(a)),
            "nobody waits once the registration is gone"
        );
    }

    #[test]
    fn a_waiter_wakes_when_the_reply_comes_from_another_thread() {
        let (conn, xid) = (next_conn_id(), next_xid());
        let w = expect(conn, xid);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            assert!(deliver(conn, reply(xid)));
        });
        assert_eq!(w.wait(Duration::from_secs(5)), Some(reply(xid)));
        t.join().unwrap();
    }
}
