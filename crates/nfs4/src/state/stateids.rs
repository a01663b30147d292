//! What stateids designate (opens, lock states, delegations), indexed by file and by client.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use super::{FileKey, IdMap, IdSet};

/// The `other` field of a stateid: what names the state.
pub type Other = [u8; 12];

/// An open: one open-owner's share of a file.
#[derive(Debug, Clone)]
pub struct Open {
    /// Owning client.
    pub client: u64,
    /// Open-owner.
    pub owner: Bytes,
    /// File.
    pub file: FileKey,
    /// Handle of the file.
    pub fh: Bytes,
    /// OPEN4_SHARE_ACCESS bits held.
    pub access: u32,
    /// OPEN4_SHARE_DENY bits held.
    pub deny: u32,
    /// Access bits ever granted by an OPEN (for OPEN_DOWNGRADE checks).
    pub access_seen: u32,
    /// Deny bits ever granted.
    pub deny_seen: u32,
    /// Stateid seqid.
    pub seqid: u32,
}

/// A lock stateid: one lock-owner's locks on one file under one open.
#[derive(Debug, Clone)]
pub struct LockState {
    /// Owning client.
    pub client: u64,
    /// Lock-owner.
    pub owner: Bytes,
    /// File.
    pub file: FileKey,
    /// The open stateid this lock state came from.
    pub open: [u8; 12],
    /// Stateid seqid.
    pub seqid: u32,
}

/// A read delegation.
#[derive(Debug, Clone)]
pub struct Deleg {
    /// Holder.
    pub client: u64,
    /// File.
    pub file: FileKey,
    /// Handle of the file.
    pub fh: Bytes,
    /// Stateid seqid.
    pub seqid: u32,
    /// When a conflicting access first asked for the delegation back (the holder has one
    /// lease from then to return it).
    pub recalled: Option<Instant>,
    /// CB_RECALL went out (it is sent again on the next conflicting access until it does:
    /// the back channel may be busy or congested).
    pub recall_sent: bool,
    /// Revoked for not being returned in time: kept until FREE_STATEID so the holder learns.
    pub revoked: bool,
    /// A write delegation (the holder may cache writes); otherwise a read delegation.
    pub write: bool,
    /// The file's change attribute when a write delegation was granted: the holder answers
    /// CB_GETATTR with it while it has changed nothing (RFC 8881 section 10.4.3).
    pub granted_change: u64,
    /// Once the holder reported changes it has not written (CB_GETATTR): the change it last
    /// reported, and the time other clients are shown as modify and change time for it. That
    /// time moves (by a nanosecond past the file's and the last one shown) only when the
    /// holder reports a new change, so the change attribute other clients see only grows,
    /// and stays below what the holder's writes give the file later.
    pub shown: Option<(u64, vfs::Time)>,
}

/// A client's pNFS layouts of one file (RFC 8881 section 12.5.2: one layout stateid per
/// client and file). Layouts cover the whole file.
#[derive(Debug, Clone)]
pub struct LayoutState {
    /// Holder.
    pub client: u64,
    /// File.
    pub file: FileKey,
    /// Handle of the file.
    pub fh: Bytes,
    /// Stateid seqid: every LAYOUTGET, LAYOUTRETURN that leaves layouts, and recall moves it.
    pub seqid: u32,
    /// Layout iomodes held, as bits (1 << LAYOUTIOMODE4_READ, 1 << LAYOUTIOMODE4_RW).
    pub iomodes: u32,
    /// When a conflicting change first asked for the layouts back (the holder has one lease
    /// from then to return them before it is fenced).
    pub recalled: Option<Instant>,
    /// CB_LAYOUTRECALL went out (sent again on the next conflicting change until it does).
    pub recall_sent: bool,
}

/// What a stateid designates.
#[derive(Debug, Clone)]
pub enum StateObj {
    /// An open.
    Open(Open),
    /// Byte-range locks.
    Lock(LockState),
    /// A delegation.
    Deleg(Deleg),
    /// Layouts.
    Layout(LayoutState),
}

impl StateObj {
    /// The client holding the state.
    pub fn client(&self) -> u64 {
        match self {
            StateObj::Open(o) => o.client,
            StateObj::Lock(l) => l.client,
            StateObj::Deleg(d) => d.client,
            StateObj::Layout(l) => l.client,
        }
    }
    /// The file the state is about.
    pub fn file(&self) -> FileKey {
        match self {
            StateObj::Open(o) => o.file,
            StateObj::Lock(l) => l.file,
            StateObj::Deleg(d) => d.file,
            StateObj::Layout(l) => l.file,
        }
    }
    /// The stateid's current seqid.
    pub fn seqid(&self) -> u32 {
        match self {
            StateObj::Open(o) => o.seqid,
            StateObj::Lock(l) => l.seqid,
            StateObj::Deleg(d) => d.seqid,
            StateObj::Layout(l) => l.seqid,
        }
    }
}

/// Stateids by their `other` field, indexed by file and by client: conflict checks (OPEN,
/// WRITE, delegation recalls) look at one file's states and SEQUENCE at one client's, instead of
/// every state of the server (which made opening N files cost O(N²)).
#[derive(Debug, Default)]
pub struct States {
    map: IdMap<[u8; 12], StateObj>,
    by_file: IdMap<FileKey, Vec<[u8; 12]>>,
    by_client: IdMap<u64, IdSet<[u8; 12]>>,
    /// Revoked delegations awaiting FREE_STATEID, by client: every SEQUENCE of the client
    /// reports whether it has any, which must not cost a walk over all its states.
    revoked: IdMap<u64, usize>,
    delegations: usize,
    /// Layout stateids (the bound of `--pnfs-max-layouts`).
    layouts: usize,
    /// Write delegations, readable without the state lock: NFSv3 READs and NFSv4 GETATTRs ask
    /// it before they look for a delegation to recall (none, nearly always).
    write_delegations: Arc<AtomicUsize>,
}

impl States {
    /// The state named by `other`.
    pub fn get(&self, other: &[u8; 12]) -> Option<&StateObj> {
        self.map.get(other)
    }

    /// The state named by `other`, to update; its client, file and revocation must not change
    /// (they key the indexes; see [`States::revoke`]).
    pub fn get_mut(&mut self, other: &[u8; 12]) -> Option<&mut StateObj> {
        self.map.get_mut(other)
    }

    /// Adds (or replaces) the state named by `other`.
    pub fn insert(&mut self, other: [u8; 12], obj: StateObj) {
        self.remove(&other);
        self.by_file.entry(obj.file()).or_default().push(other);
        self.by_client
            .entry(obj.client())
            .or_default()
            .insert(other);
        if let StateObj::Layout(_) = &obj {
            self.layouts += 1;
        }
        if let StateObj::Deleg(d) = &obj {
            self.delegations += 1;
            if d.write {
                self.write_delegations.fetch_add(1, Ordering::Relaxed);
            }
            if d.revoked {
                *self.revoked.entry(d.client).or_default() += 1;
            }
        }
        self.map.insert(other, obj);
    }

    /// Marks the delegation named by `other` revoked (it stays until FREE_STATEID).
    pub fn revoke(&mut self, other: &[u8; 12]) {
        if let Some(StateObj::Deleg(d)) = self.map.get_mut(other) {
            if !d.revoked {
                d.revoked = true;
                *self.revoked.entry(d.client).or_default() += 1;
            }
        }
    }

    /// Whether `client` has a revoked delegation (SEQ4_STATUS_RECALLABLE_STATE_REVOKED).
    pub fn has_revoked(&self, client: u64) -> bool {
        self.revoked.contains_key(&client)
    }

    /// Drops the state named by `other`.
    pub fn remove(&mut self, other: &[u8; 12]) -> Option<StateObj> {
        let obj = self.map.remove(other)?;
        if let StateObj::Layout(_) = &obj {
            self.layouts -= 1;
        }
        if let StateObj::Deleg(d) = &obj {
            self.delegations -= 1;
            if d.write {
                self.write_delegations.fetch_sub(1, Ordering::Relaxed);
            }
            if d.revoked {
                if let Some(n) = self.revoked.get_mut(&d.client) {
                    *n -= 1;
                    if *n == 0 {
                        self.revoked.remove(&d.client);
                    }
                }
            }
        }
        if let Some(v) = self.by_file.get_mut(&obj.file()) {
            v.retain(|k| k != other);
            if v.is_empty() {
                self.by_file.remove(&obj.file());
            }
        }
        if let Some(set) = self.by_client.get_mut(&obj.client()) {
            set.remove(other);
            if set.is_empty() {
                self.by_client.remove(&obj.client());
            }
        }
        Some(obj)
    }

    /// How many layout stateids there are.
    pub fn layouts(&self) -> usize {
        self.layouts
    }

    /// Every state (metrics).
    pub fn values(&self) -> impl Iterator<Item = &StateObj> {
        self.map.values()
    }

    /// The states on `file`.
    pub fn on_file(&self, file: FileKey) -> impl Iterator<Item = ([u8; 12], &StateObj)> {
        self.named(self.by_file.get(&file).into_iter().flatten())
    }

    /// The states `client` holds.
    pub fn of_client(&self, client: u64) -> impl Iterator<Item = ([u8; 12], &StateObj)> {
        self.named(self.by_client.get(&client).into_iter().flatten())
    }

    /// The states an index lists.
    fn named<'a>(
        &'a self,
        keys: impl Iterator<Item = &'a [u8; 12]>,
    ) -> impl Iterator<Item = ([u8; 12], &'a StateObj)> {
        keys.filter_map(|k| Some((*k, self.map.get(k)?)))
    }

    /// Whether any delegation exists (revoked ones included), so that changes from programs
    /// without NFSv4 state skip looking up what they change.
    pub fn any_delegation(&self) -> bool {
        self.delegations > 0
    }

    /// The number of write delegations, shared: read it without the state lock.
    pub fn write_delegations(&self) -> Arc<AtomicUsize> {
        self.write_delegations.clone()
    }

    /// Whether `client` holds any state.
    pub fn client_has_state(&self, client: u64) -> bool {
        self.by_client.contains_key(&client)
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there is no state.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every state with its name (tests).
    #[cfg(test)]
    pub(super) fn all(&self) -> impl Iterator<Item = (&Other, &StateObj)> {
        self.map.iter()
    }

    /// Whether both indexes list exactly the states of the map (tests).
    #[cfg(test)]
    pub(super) fn indexes_agree(&self) -> bool {
        let files: usize = self.by_file.values().map(Vec::len).sum();
        let clients: usize = self.by_client.values().map(IdSet::len).sum();
        let delegations = self
            .map
            .values()
            .filter(|v| matches!(v, StateObj::Deleg(_)))
            .count();
        let writes = self
            .map
            .values()
            .filter(|v| matches!(v, StateObj::Deleg(d) if d.write))
            .count();
        let mut revoked: IdMap<u64, usize> = IdMap::default();
        for v in self.map.values() {
            if let StateObj::Deleg(d) = v {
                if d.revoked {
                    *revoked.entry(d.client).or_default() += 1;
                }
            }
        }
        files == self.map.len()
            && clients == self.map.len()
            && delegations == self.delegations
            && writes == self.write_delegations.load(Ordering::Relaxed)
            && revoked == self.revoked
            && self.map.iter().all(|(k, v)| {
                self.by_file.get(&v.file()).is_some_and(|f| f.contains(k))
                    && self
                        .by_client
                        .get(&v.client())
                        .is_some_and(|c| c.contains(k))
            })
    }
}
