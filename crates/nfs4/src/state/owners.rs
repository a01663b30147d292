//! NFSv4.0 open- and lock-owner sequencing: each owner's last seqid and reply (RFC 7530
//! section 9.1.7), and the owners of recently closed stateids.

use bytes::Bytes;

use super::{ClientId, IdMap, Other, Stateid};
use nfs4wire::Nfsstat4;
use xdr::Reply;

/// An NFSv4.0 owner: its client, its opaque name, and whether it is a lock-owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerKey {
    /// The client.
    pub client: ClientId,
    /// The owner's name.
    pub owner: Bytes,
    /// A lock-owner (otherwise an open-owner).
    pub lock: bool,
}

impl OwnerKey {
    /// Open-owner `owner` of `client`.
    pub fn open(client: ClientId, owner: Bytes) -> Self {
        OwnerKey {
            client,
            owner,
            lock: false,
        }
    }

    /// Lock-owner `owner` of `client`.
    pub fn lock(client: ClientId, owner: Bytes) -> Self {
        OwnerKey {
            client,
            owner,
            lock: true,
        }
    }
}

/// An open- or lock-owner's NFSv4.0 sequencing state.
#[derive(Debug, Clone, Default)]
pub struct OwnerSeq {
    /// Last seqid used.
    pub seqid: u32,
    /// Whether the open-owner is confirmed (OPEN_CONFIRM).
    pub confirmed: bool,
    /// The last reply (status and body) for replays.
    pub last: Option<(Nfsstat4, Reply)>,
    /// The file and stateid the last OPEN made current, restored when it is replayed.
    pub last_open: Option<(Bytes, Stateid)>,
}

/// How many closed stateids keep their owner (a retransmitted CLOSE finds its reply).
const CLOSED_MAX: usize = 4096;

/// The NFSv4.0 owners.
#[derive(Debug, Default)]
pub struct Owners {
    seq: std::collections::HashMap<OwnerKey, OwnerSeq>,
    closed: IdMap<Other, OwnerKey>,
}

impl Owners {
    /// Owner `key`'s sequencing state.
    pub fn get(&self, key: &OwnerKey) -> Option<&OwnerSeq> {
        self.seq.get(key)
    }

    /// Owner `key`'s sequencing state, to update.
    pub fn get_mut(&mut self, key: &OwnerKey) -> Option<&mut OwnerSeq> {
        self.seq.get_mut(key)
    }

    /// Owner `key`'s sequencing state, made with `new` when it has none.
    pub fn entry(&mut self, key: OwnerKey, new: impl FnOnce() -> OwnerSeq) -> &mut OwnerSeq {
        self.seq.entry(key).or_insert_with(new)
    }

    /// Forgets owner `key`.
    pub fn remove(&mut self, key: &OwnerKey) {
        self.seq.remove(key);
    }

    /// Forgets every owner of `client`.
    pub fn remove_client(&mut self, client: ClientId) {
        self.seq.retain(|k, _| k.client != client);
    }

    /// Remembers the owner of closed stateid `other` (bounded).
    pub fn closed(&mut self, other: Other, key: OwnerKey) {
        if self.closed.len() >= CLOSED_MAX {
            self.closed.clear();
        }
        self.closed.insert(other, key);
    }

    /// The owner of recently closed stateid `other`.
    pub fn of_closed(&self, other: &Other) -> Option<&OwnerKey> {
        self.closed.get(other)
    }
}
