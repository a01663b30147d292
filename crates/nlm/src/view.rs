//! What an administrator sees of the NLM hosts and can do to them (rnfsd's admin socket).

use std::net::IpAddr;

use bytes::Bytes;
use locks::{FileKey, Lock, Owner};

use crate::LockService;

/// One NLM host and what it holds.
#[derive(Debug, Clone)]
pub struct HostView {
    /// Its `caller_name`.
    pub name: Bytes,
    /// Its address.
    pub addr: IpAddr,
    /// Its locks, with their files.
    pub locks: Vec<(FileKey, Lock)>,
    /// Its share reservations.
    pub shares: usize,
}

impl LockService {
    /// Every host this lock manager knows, in the order it met them.
    pub fn hosts(&self) -> Vec<HostView> {
        let list = self.hosts.lock().list();
        list.into_iter()
            .map(|(id, name, addr)| HostView {
                name,
                addr,
                locks: self
                    .locks
                    .held(|o| matches!(o, Owner::Nlm { host, .. } if *host == id)),
                shares: self.locks.shares_held(|h| h == id),
            })
            .collect()
    }

    /// Releases every lock, blocked request and share of the hosts at `addr` or named `name`,
    /// and forgets them (as when a host says it restarted): the hosts forgotten, and the locks
    /// and shares released.
    pub fn evict(&self, addr: Option<IpAddr>, name: Option<&[u8]>) -> (usize, usize) {
        let ids = self.hosts.lock().matching(addr, name);
        let held = |o: &Owner| matches!(o, Owner::Nlm { host, .. } if ids.contains(host));
        let released = self.locks.held(held).len() + self.locks.shares_held(|h| ids.contains(&h));
        let hosts = self.drop_hosts(addr, name);
        tracing::info!(hosts, released, "NLM hosts evicted by the administrator");
        (hosts, released)
    }
}
