//! Duplicate request cache for non-idempotent procedures.
//!
//! A client that retransmits a CREATE or REMOVE after a lost reply must get the original answer,
//! not the result of doing it twice. The cache is bounded: the oldest entries are evicted first.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use bytes::Bytes;
use parking_lot::Mutex;

/// Largest reply kept; larger ones are answered again by executing the call.
pub const MAX_CACHED_REPLY: usize = 4096;

/// What identifies a retransmission: same peer, xid, procedure, message length and principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DrcKey {
    /// Client address and port.
    pub peer: SocketAddr,
    /// Transaction id.
    pub xid: u32,
    /// Program.
    pub prog: u32,
    /// Version.
    pub vers: u32,
    /// Procedure.
    pub proc_: u32,
    /// Length of the whole call message; of the unwrapped arguments for RPCSEC_GSS.
    pub len: usize,
    /// The RPCSEC_GSS principal's key ([`crate::gss::GssCaller::principal_key`]); 0 otherwise.
    pub principal: u64,
}

/// Result of looking a call up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrcLookup {
    /// First time seen: execute it, then call [`DuplicateCache::finish`].
    New,
    /// The original is still executing: drop the retransmission.
    InProgress,
    /// Already answered: resend this reply.
    Done(Bytes),
}

#[derive(Debug)]
enum Entry {
    InProgress,
    Done(Bytes),
}

#[derive(Debug, Default)]
struct Inner {
    map: HashMap<DrcKey, Entry>,
    order: VecDeque<DrcKey>,
}

/// A bounded cache of replies to non-idempotent calls.
#[derive(Debug)]
pub struct DuplicateCache {
    cap: usize,
    inner: Mutex<Inner>,
}

impl DuplicateCache {
    /// A cache holding at most `cap` entries.
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Looks a call up and marks it in progress when new.
    pub fn begin(&self, key: DrcKey) -> DrcLookup {
        let mut g = self.inner.lock();
        match g.map.get(&key) {
            Some(Entry::InProgress) => return DrcLookup::InProgress,
            Some(Entry::Done(b)) => return DrcLookup::Done(b.clone()),
            None => {}
        }
        // The queue, not the map, is what is bounded: keys of forgotten entries stay queued
        // (removing them from the middle would cost a scan per forget) and leave here in turn.
        // Bounding the map instead let the queue grow by a key per forgotten call, without
        // end, under a stream of large NFSv4 replies.
        while g.order.len() >= self.cap {
            let Some(old) = g.order.pop_front() else {
                break;
            };
            g.map.remove(&old);
        }
        g.map.insert(key, Entry::InProgress);
        g.order.push_back(key);
        DrcLookup::New
    }

    /// Stores the reply of a call that was executed.
    pub fn finish(&self, key: DrcKey, reply: Bytes) {
        let mut g = self.inner.lock();
        if let Some(e) = g.map.get_mut(&key) {
            *e = Entry::Done(reply);
        }
    }

    /// Drops an entry (its reply is too large to keep).
    pub fn forget(&self, key: DrcKey) {
        self.inner.lock().map.remove(&key);
    }

    /// Number of entries held.
    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    /// True when the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(xid: u32) -> DrcKey {
        DrcKey {
            peer: "10.0.0.1:800".parse().unwrap(),
            xid,
            prog: 100003,
            vers: 3,
            proc_: 8,
            len: 100,
            principal: 0,
        }
    }

    #[test]
    fn forgotten_entries_do_not_pile_up() {
        let c = DuplicateCache::new(8);
        for xid in 0..10_000 {
            assert_eq!(c.begin(key(xid)), DrcLookup::New);
            c.forget(key(xid));
        }
        let g = c.inner.lock();
        assert!(g.order.len() <= 8, "queue holds {} keys", g.order.len());
        assert!(g.map.is_empty());
        drop(g);
        // and the cache still works
        assert_eq!(c.begin(key(1)), DrcLookup::New);
        c.finish(key(1), Bytes::from_static(b"r"));
        assert_eq!(c.begin(key(1)), DrcLookup::Done(Bytes::from_static(b"r")));
    }

    #[test]
    fn lifecycle_and_eviction() {
        let c = DuplicateCache::new(2);
        assert_eq!(c.begin(key(1)), DrcLookup::New);
        assert_eq!(c.begin(key(1)), DrcLookup::InProgress);
        c.finish(key(1), Bytes::from_static(b"r1"));
        assert_eq!(c.begin(key(1)), DrcLookup::Done(Bytes::from_static(b"r1")));
        assert_eq!(c.begin(key(2)), DrcLookup::New);
        assert_eq!(c.begin(key(3)), DrcLookup::New);
        assert_eq!(c.len(), 2);
        assert_eq!(c.begin(key(1)), DrcLookup::New, "oldest evicted");
    }
}
