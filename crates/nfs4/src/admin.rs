//! What an administrator sees of the NFSv4 state and can do to it (rnfsd's admin socket).

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;

use crate::state::StateObj;
use crate::Nfs4;

/// One NFSv4 client and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientView {
    /// The client id (what [`Nfs4::evict`] takes).
    pub id: u64,
    /// The client's owner string (co_ownerid).
    pub owner: Bytes,
    /// The address it introduced itself from.
    pub addr: IpAddr,
    /// Minor version.
    pub minor: u32,
    /// SETCLIENTID_CONFIRM / CREATE_SESSION done.
    pub confirmed: bool,
    /// Time since it last renewed its lease.
    pub idle: Duration,
    /// Sessions.
    pub sessions: usize,
    /// Open stateids.
    pub opens: usize,
    /// Lock stateids.
    pub locks: usize,
    /// Delegations.
    pub delegations: usize,
    /// The flavor and principal (or uid) it introduced itself with.
    pub auth: std::sync::Arc<str>,
}

impl Nfs4 {
    /// Every client with a record, ordered by id.
    pub fn clients(&self) -> Vec<ClientView> {
        let s = self.state.lock();
        let mut out: Vec<ClientView> = s
            .clients
            .iter()
            .map(|c| {
                let (mut opens, mut locks, mut delegations) = (0, 0, 0);
                for (_, st) in s.states.of_client(c.id) {
                    match st {
                        StateObj::Open(_) => opens += 1,
                        StateObj::Lock(_) => locks += 1,
                        StateObj::Deleg(_) => delegations += 1,
                        StateObj::Layout(_) => {}
                    }
                }
                ClientView {
                    id: c.id,
                    owner: c.owner.clone(),
                    addr: c.addr,
                    minor: c.minor,
                    confirmed: c.confirmed,
                    idle: c.renewed.elapsed(),
                    sessions: s.sessions.count_of(c.id),
                    opens,
                    locks,
                    delegations,
                    auth: c.auth.clone(),
                }
            })
            .collect();
        out.sort_by_key(|c| c.id);
        out
    }

    /// Client records, sessions and stateids.
    pub fn state_counts(&self) -> (usize, usize, usize) {
        let s = self.state.lock();
        (s.clients.len(), s.sessions.len(), s.states.len())
    }

    /// Revokes client `id`'s state as if its lease had expired (knfsd's `clients/*/ctl`
    /// expire): its sessions end, its opens, locks and delegations are released (blocked
    /// requests of others are granted) and its record is forgotten, so it cannot reclaim.
    /// The number of stateids released, or None when there is no such client.
    pub fn evict(&self, id: u64) -> Option<usize> {
        let mut s = self.state.lock();
        if !s.clients.contains(id) {
            return None;
        }
        let released = s.states.of_client(id).count();
        s.expire(id);
        tracing::info!(client = id, released, "client evicted by the administrator");
        Some(released)
    }
}
