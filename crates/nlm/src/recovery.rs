//! When the hosts that held locks before a restart or takeover have reclaimed them, so that
//! NLM's grace period can end before its time (NLM has no RECLAIM_COMPLETE, unlike NFSv4).
//!
//! The rule follows the Linux client's lock manager (fs/lockd/clntlock.c `reclaimer`,
//! clntproc.c `nlmclnt_call`): once told of the restart (SM_NOTIFY) it reclaims every lock it
//! holds, one call after another, while it holds back every new LOCK, UNLOCK and TEST to that
//! server; only then does it send them. Its calls to one server share one RPC transport, whose
//! transaction ids grow by one per new call. So a new LOCK, UNLOCK or TEST whose xid comes after
//! the host's reclaims was made after they were done. One whose xid comes before them is a
//! call from before the takeover sent again, which says nothing: it does not count, nor does
//! any call from a host that reclaimed nothing (its grace then runs its whole length).

use std::collections::HashMap;
use std::net::IpAddr;

/// A host as its record names it: its address and the server address it called.
pub type HostKey = (IpAddr, Option<IpAddr>);

/// What a call tells about a host's recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// A reclaim (LOCK or SHARE with `reclaim` set).
    Reclaim,
    /// A new LOCK, UNLOCK or TEST.
    Fresh,
}

/// The hosts still reclaiming.
#[derive(Debug, Default)]
pub struct Recovery {
    /// Each host not yet done, with the xid of the latest reclaim it sent (none yet: `None`).
    waiting: HashMap<HostKey, Option<u32>>,
}

impl Recovery {
    /// Waits for `hosts`.
    pub fn new(hosts: impl IntoIterator<Item = HostKey>) -> Self {
        Self {
            waiting: hosts.into_iter().map(|h| (h, None)).collect(),
        }
    }

    /// Notes call `xid` from `host`; true when it was the last host to finish (NLM's grace
    /// may end now).
    pub fn note(&mut self, host: HostKey, xid: u32, seen: Seen) -> bool {
        if self.waiting.is_empty() {
            return false;
        }
        // a record made without the server address matches any
        let key = if self.waiting.contains_key(&host) {
            host
        } else if self.waiting.contains_key(&(host.0, None)) {
            (host.0, None)
        } else {
            return false;
        };
        let last = self.waiting.get_mut(&key).expect("looked up above");
        match (seen, *last) {
            (Seen::Reclaim, None) => *last = Some(xid),
            (Seen::Reclaim, Some(r)) if after(xid, r) => *last = Some(xid),
            (Seen::Reclaim, Some(_)) => {}
            (Seen::Fresh, Some(r)) if after(xid, r) => {
                self.waiting.remove(&key);
                return self.waiting.is_empty();
            }
            (Seen::Fresh, _) => {}
        }
        false
    }

    /// Hosts still reclaiming.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

/// Whether xid `a` was drawn shortly after `b` on one transport. The Linux client counts its
/// xids in the CPU's byte order and sends the counter's bytes as they lie in memory, so from a
/// little-endian machine consecutive xids read (big-endian, as XDR has them) 2^24 apart: the
/// count is taken both ways. "Shortly" (at most 4,096 calls on) keeps a call from long before
/// from passing for a later one under the wrong byte order; a later call further on than that
/// is not counted (the grace period then runs its whole length).
fn after(a: u32, b: u32) -> bool {
    const WINDOW: u32 = 4096;
    let on = |a: u32, b: u32| (1..=WINDOW).contains(&a.wrapping_sub(b));
    on(a, b) || on(a.swap_bytes(), b.swap_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(n: u8) -> HostKey {
        (
            IpAddr::from([10, 0, 0, n]),
            Some(IpAddr::from([10, 0, 0, 100])),
        )
    }

    #[test]
    fn a_host_is_done_with_a_new_call_after_its_reclaims() {
        let mut r = Recovery::new([host(1), host(2)]);
        // a call from before the takeover, sent again: says nothing
        assert!(!r.note(host(1), 90, Seen::Fresh));
        assert!(!r.note(host(1), 100, Seen::Reclaim));
        assert!(!r.note(host(1), 101, Seen::Reclaim));
        // the retransmission again, now among the reclaims: still nothing
        assert!(!r.note(host(1), 95, Seen::Fresh));
        assert_eq!(r.waiting(), 2);
        assert!(!r.note(host(1), 102, Seen::Fresh));
        assert_eq!(r.waiting(), 1);
        // host 2 reclaimed nothing yet: its new calls do not count
        assert!(!r.note(host(2), 7, Seen::Fresh));
        assert!(!r.note(host(2), 8, Seen::Reclaim));
        assert!(r.note(host(2), 9, Seen::Fresh), "the last host is done");
        assert!(!r.note(host(2), 10, Seen::Fresh));
    }

    #[test]
    fn little_endian_counters_are_read_in_their_order() {
        // a Linux client on x86 counts 0x0000_00ff, 0x0000_0100, ... and sends the bytes
        // little-endian: read big-endian they are 0xff00_0000, 0x0001_0000, ...
        let wire = |c: u32| c.swap_bytes();
        let mut r = Recovery::new([host(1)]);
        assert!(
            !r.note(host(1), wire(0xfe), Seen::Fresh),
            "from before the takeover"
        );
        assert!(!r.note(host(1), wire(0xff), Seen::Reclaim));
        assert!(!r.note(host(1), wire(0x100), Seen::Reclaim));
        assert!(
            !r.note(host(1), wire(0xfd), Seen::Fresh),
            "sent again, from before"
        );
        assert!(r.note(host(1), wire(0x101), Seen::Fresh), "the next call");
        // a call far on is not taken for one after the reclaims
        let mut r = Recovery::new([host(1)]);
        assert!(!r.note(host(1), 10, Seen::Reclaim));
        assert!(!r.note(host(1), 10 + 5000, Seen::Fresh));
        assert!(!r.note(host(1), 9, Seen::Fresh));
    }

    #[test]
    fn xids_wrap_and_unknown_hosts_do_not_count() {
        let mut r = Recovery::new([(IpAddr::from([10, 0, 0, 1]), None)]);
        assert!(!r.note(host(9), 5, Seen::Reclaim));
        assert!(!r.note(host(9), 6, Seen::Fresh));
        // a record without the server address matches the host calling any of them
        assert!(!r.note(host(1), u32::MAX, Seen::Reclaim));
        assert!(!r.note(host(1), u32::MAX - 3, Seen::Fresh));
        assert!(r.note(host(1), 2, Seen::Fresh), "2 follows u32::MAX");
    }
}
