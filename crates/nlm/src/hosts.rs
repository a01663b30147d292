//! The hosts this lock manager knows: a number per (`caller_name`, address, server address
//! called) that their lock owners carry in the lock table (as knfsd, a client that mounts two
//! addresses of this server is two hosts: its lock manager numbers processes per server), whether the host is recorded on disk, and when it last
//! called. Bounded; hosts idle and holding nothing are forgotten.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::LockService;

/// What tells hosts apart: `caller_name`, the host's address, the server address it called.
type HostKey = (Bytes, IpAddr, Option<IpAddr>);

#[derive(Debug)]
struct Host {
    name: Bytes,
    addr: IpAddr,
    server: Option<IpAddr>,
    recorded: bool,
    last_used: Instant,
}

/// The host table.
#[derive(Debug)]
pub(crate) struct Hosts {
    by_key: HashMap<HostKey, u64>,
    by_id: HashMap<u64, Host>,
    next: u64,
    max: usize,
}

impl Hosts {
    pub(crate) fn new(max: usize) -> Self {
        Hosts {
            by_key: HashMap::new(),
            by_id: HashMap::new(),
            next: 0,
            max,
        }
    }

    /// The number of host `name` at `addr` calling `server`, made when new; None when the
    /// table is full. The flag says whether the host still has to be recorded on disk.
    pub(crate) fn get_or_insert(
        &mut self,
        name: &Bytes,
        addr: IpAddr,
        server: Option<IpAddr>,
    ) -> Option<(u64, bool)> {
        if let Some(id) = self.by_key.get(&(name.clone(), addr, server)) {
            let h = self.by_id.get_mut(id)?;
            h.last_used = Instant::now();
            return Some((*id, !h.recorded));
        }
        if self.by_id.len() >= self.max {
            return None;
        }
        self.next += 1;
        let id = self.next;
        self.by_key.insert((name.clone(), addr, server), id);
        self.by_id.insert(
            id,
            Host {
                name: name.clone(),
                addr,
                server,
                recorded: false,
                last_used: Instant::now(),
            },
        );
        Some((id, true))
    }

    /// Host `id` is recorded on disk.
    pub(crate) fn set_recorded(&mut self, id: u64) {
        if let Some(h) = self.by_id.get_mut(&id) {
            h.recorded = true;
        }
    }

    /// Hosts at `addr` or called `name`.
    pub(crate) fn matching(&self, addr: Option<IpAddr>, name: Option<&[u8]>) -> Vec<u64> {
        self.by_id
            .iter()
            .filter(|(_, h)| Some(h.addr) == addr || name.is_some_and(|n| h.name == n))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Hosts that have not called for `idle`.
    pub(crate) fn idle(&self, idle: Duration) -> Vec<u64> {
        self.by_id
            .iter()
            .filter(|(_, h)| h.last_used.elapsed() >= idle)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Forgets `ids`; returns the (address, server address) pairs whose disk record goes with
    /// them (recorded, and no other host known with the pair).
    pub(crate) fn remove(&mut self, ids: &[u64]) -> Vec<(IpAddr, Option<IpAddr>)> {
        let mut gone = Vec::new();
        for id in ids {
            if let Some(h) = self.by_id.remove(id) {
                self.by_key.remove(&(h.name, h.addr, h.server));
                if h.recorded {
                    gone.push((h.addr, h.server));
                }
            }
        }
        gone.retain(|(a, s)| !self.by_id.values().any(|h| h.addr == *a && h.server == *s));
        gone.sort_unstable();
        gone.dedup();
        gone
    }

    /// Every host: number, `caller_name`, address.
    pub(crate) fn list(&self) -> Vec<(u64, Bytes, IpAddr)> {
        let mut v: Vec<_> = self
            .by_id
            .iter()
            .map(|(id, h)| (*id, h.name.clone(), h.addr))
            .collect();
        v.sort_unstable_by_key(|(id, _, _)| *id);
        v
    }

    /// Hosts known.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}

/// Forgets, every half minute, hosts idle for the configured time that hold nothing (their
/// records go: a restart need not tell them).
pub(crate) fn start_gc(svc: &Arc<LockService>) {
    let weak = Arc::downgrade(svc);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(30));
        loop {
            tick.tick().await;
            let Some(svc) = weak.upgrade() else {
                return;
            };
            let idle = svc.hosts.lock().idle(svc.cfg.host_idle);
            let unused: Vec<u64> = idle
                .into_iter()
                .filter(|id| {
                    !svc.locks
                        .holds_any(|o| matches!(o, locks::Owner::Nlm { host, .. } if host == id))
                        && !svc.grants.has_host(*id)
                })
                .collect();
            let gone = svc.hosts.lock().remove(&unused);
            for (a, server) in gone {
                svc.forget_record(a, server);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_numbered_bounded_and_forgotten() {
        let mut h = Hosts::new(2);
        let a: IpAddr = "10.0.0.2".parse().unwrap();
        let (n1, new1) = h
            .get_or_insert(&Bytes::from_static(b"c1"), a, None)
            .unwrap();
        assert!(new1);
        h.set_recorded(n1);
        assert_eq!(
            h.get_or_insert(&Bytes::from_static(b"c1"), a, None),
            Some((n1, false))
        );
        let (n2, _) = h
            .get_or_insert(&Bytes::from_static(b"c2"), a, None)
            .unwrap();
        assert_ne!(n1, n2);
        assert!(
            h.get_or_insert(&Bytes::from_static(b"c3"), a, None)
                .is_none(),
            "full"
        );
        assert_eq!(h.matching(None, Some(b"c2")), vec![n2]);
        let mut both = h.matching(Some(a), None);
        both.sort_unstable();
        assert_eq!(both, vec![n1, n2]);
        // The record stays while another host is known at the address.
        assert!(h.remove(&[n1]).is_empty());
        h.set_recorded(n2);
        assert_eq!(h.remove(&[n2]), vec![(a, None)]);
        assert_eq!(h.len(), 0);
    }
}
