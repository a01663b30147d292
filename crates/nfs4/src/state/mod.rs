//! NFSv4 state: clients, sessions and their slot tables, open and lock stateids, share
//! reservations and byte-range locks. All of it lives behind one mutex; operations are short.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use vfs::IdHasher;
use xdr::Reply;

use crate::db::ClientDb;
use crate::proto::LEASE_SECONDS;
use nfs4wire::Nfsstat4;

/// A map keyed by ids the server hands out (see [`IdHasher`]).
pub type IdMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;
/// A set of ids the server hands out (see [`IdHasher`]).
pub type IdSet<K> = HashSet<K, std::hash::BuildHasherDefault<IdHasher>>;

/// A stateid: seqid and 12 opaque bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Stateid {
    /// Version of the state, bumped on every change.
    pub seqid: u32,
    /// Identifies the state.
    pub other: [u8; 12],
}

impl Stateid {
    /// The anonymous stateid (all zeros).
    pub const ANON: Stateid = Stateid {
        seqid: 0,
        other: [0; 12],
    };
    /// The READ bypass stateid (all ones).
    pub const BYPASS: Stateid = Stateid {
        seqid: u32::MAX,
        other: [0xff; 12],
    };
    /// The "current stateid" of NFSv4.1 (seqid 1, other zero).
    pub const CURRENT: Stateid = Stateid {
        seqid: 1,
        other: [0; 12],
    };
    /// Whether this is one of the special stateids that carry no state.
    pub fn is_special(&self) -> bool {
        self.other == [0; 12] || self.other == [0xff; 12]
    }
}

impl From<nfs4wire::Stateid4> for Stateid {
    fn from(s: nfs4wire::Stateid4) -> Self {
        Stateid {
            seqid: s.seqid,
            other: s.other,
        }
    }
}

impl From<Stateid> for nfs4wire::Stateid4 {
    fn from(s: Stateid) -> Self {
        nfs4wire::Stateid4 {
            seqid: s.seqid,
            other: s.other,
        }
    }
}

/// Identifies a file across handles: file system, inode and generation (see [`vfs::FileId`]).
pub type FileKey = vfs::FileId;

/// A client owner string and verifier (SETCLIENTID / EXCHANGE_ID).
#[derive(Debug, Clone)]
pub struct ClientRec {
    /// Client id handed out.
    pub id: u64,
    /// The client's co_ownerid.
    pub owner: Bytes,
    /// The client's boot verifier.
    pub verifier: [u8; 8],
    /// uid that created the record (principal checks).
    pub principal: u32,
    /// Confirmed (SETCLIENTID_CONFIRM or CREATE_SESSION done).
    pub confirmed: bool,
    /// NFSv4.0 SETCLIENTID_CONFIRM verifier.
    pub confirm: [u8; 8],
    /// Minor version the client speaks.
    pub minor: u32,
    /// Last lease renewal.
    pub renewed: Instant,
    /// NFSv4.1: sequence id expected by the next CREATE_SESSION.
    pub cs_seq: u32,
    /// NFSv4.1: the last CREATE_SESSION reply, for replays.
    pub cs_reply: Option<Bytes>,
    /// NFSv4.1: RECLAIM_COMPLETE done.
    pub reclaim_complete: bool,
}

/// One slot of a session's fore channel.
#[derive(Debug, Clone, Default)]
pub struct Slot {
    /// Sequence id of the last request executed in the slot.
    pub seqid: u32,
    /// Reply of that request when the client asked for it to be cached.
    pub reply: Option<Reply>,
    /// A request is executing in the slot.
    pub busy: bool,
}

/// An NFSv4.1 session.
#[derive(Debug)]
pub struct Session {
    /// Owning client.
    pub client: u64,
    /// Fore-channel slots.
    pub slots: Vec<Slot>,
    /// Largest request accepted.
    pub max_request: u32,
    /// Largest reply allowed.
    pub max_response: u32,
    /// Largest reply that may be cached.
    pub max_response_cached: u32,
    /// Largest number of operations per COMPOUND.
    pub max_ops: u32,
    /// The client asked for a back channel over the session's connection.
    pub back_channel: bool,
    /// The connection carrying the back channel.
    pub back: Option<std::sync::Arc<dyn sunrpc::BackChannel>>,
    /// Program number for callbacks.
    pub cb_program: u32,
    /// Credential for callbacks.
    pub cb_cred: sunrpc::Credential,
    /// Sequence id of the back channel's slot 0 (the last call sent on it).
    pub cb_seq: u32,
    /// The callback on slot 0 not yet answered, and when it was sent: the slot takes one
    /// call at a time (RFC 8881 section 2.10.6.1).
    pub cb_inflight: Option<(std::sync::Arc<sunrpc::callback::Waiter>, Instant)>,
    /// Minor version of the session (for CB_COMPOUND).
    pub minor: u32,
}

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

/// What a stateid designates.
#[derive(Debug, Clone)]
pub enum StateObj {
    /// An open.
    Open(Open),
    /// Byte-range locks.
    Lock(LockState),
    /// A delegation.
    Deleg(Deleg),
}

impl StateObj {
    /// The client holding the state.
    pub fn client(&self) -> u64 {
        match self {
            StateObj::Open(o) => o.client,
            StateObj::Lock(l) => l.client,
            StateObj::Deleg(d) => d.client,
        }
    }
    /// The file the state is about.
    pub fn file(&self) -> FileKey {
        match self {
            StateObj::Open(o) => o.file,
            StateObj::Lock(l) => l.file,
            StateObj::Deleg(d) => d.file,
        }
    }
    /// The stateid's current seqid.
    pub fn seqid(&self) -> u32 {
        match self {
            StateObj::Open(o) => o.seqid,
            StateObj::Lock(l) => l.seqid,
            StateObj::Deleg(d) => d.seqid,
        }
    }
}

/// One byte-range lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// Holder: client and lock-owner.
    pub client: u64,
    /// Lock-owner.
    pub owner: Bytes,
    /// First byte.
    pub start: u64,
    /// One past the last byte (u64::MAX for "to end of file").
    pub end: u64,
    /// Exclusive (write) lock.
    pub write: bool,
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

    /// Whether both indexes list exactly the states of the map (tests).
    #[cfg(test)]
    fn indexes_agree(&self) -> bool {
        let files: usize = self.by_file.values().map(Vec::len).sum();
        let clients: usize = self.by_client.values().map(HashSet::len).sum();
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

/// All NFSv4 state of the server.
#[derive(Debug)]
pub struct State {
    /// Distinguishes this server instance in client ids and stateids.
    pub boot: u32,
    next_id: u64,
    /// Clients by id.
    pub clients: IdMap<u64, ClientRec>,
    /// Sessions by id.
    pub sessions: IdMap<[u8; 16], Session>,
    /// Stateids by their `other` field.
    pub states: States,
    /// Locks by file.
    pub locks: IdMap<FileKey, Vec<Lock>>,
    /// NFSv4.0 owner sequencing, by (client, owner, is_lock_owner).
    pub owners: HashMap<(u64, Bytes, bool), OwnerSeq>,
    /// Owners of recently closed stateids, so a retransmitted NFSv4.0 CLOSE finds its
    /// owner's cached reply (bounded).
    pub closed: IdMap<[u8; 12], (u64, Bytes, bool)>,
    /// Stateids of clients whose state was purged (lease expiry, reboot): NFS4ERR_EXPIRED
    /// rather than BAD_STATEID (bounded).
    pub expired_states: IdSet<[u8; 12]>,
    /// Client ids purged the same way.
    pub expired_clients_ids: IdSet<u64>,
    /// Confirmed client records on disk.
    pub db: Option<ClientDb>,
    /// Owners of clients confirmed before the restart, who may reclaim during grace.
    pub reclaimable: HashSet<Bytes>,
    /// Reclaimable owners that finished reclaiming (RECLAIM_COMPLETE).
    pub reclaim_done: HashSet<Bytes>,
    /// End of the grace period, while it lasts.
    pub grace_until: Option<Instant>,
    /// The lease clients must renew within; also the length of the grace period.
    pub lease: Duration,
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether two byte ranges [a0,a1) and [b0,b1) overlap.
fn overlaps(a0: u64, a1: u64, b0: u64, b1: u64) -> bool {
    a0 < b1 && b0 < a1
}

impl State {
    /// A session of `client` with a back channel, for callbacks.
    pub fn back_session(&self, client: u64) -> Option<[u8; 16]> {
        self.sessions
            .iter()
            .find(|(_, s)| s.client == client && s.back.is_some())
            .map(|(k, _)| *k)
    }

    /// Empty state for a new server instance.
    pub fn new() -> Self {
        let boot = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs() as u32;
        Self {
            boot,
            next_id: 1,
            clients: IdMap::default(),
            sessions: IdMap::default(),
            states: States::default(),
            locks: IdMap::default(),
            owners: HashMap::new(),
            closed: IdMap::default(),
            expired_states: IdSet::default(),
            expired_clients_ids: IdSet::default(),
            db: None,
            reclaimable: HashSet::new(),
            reclaim_done: HashSet::new(),
            grace_until: None,
            lease: Duration::from_secs(LEASE_SECONDS as u64),
        }
    }

    /// Sets the lease (and, when one runs, the grace period) to `lease`.
    pub fn set_lease(&mut self, lease: Duration) {
        if let Some(until) = self.grace_until.as_mut() {
            *until = *until - self.lease + lease;
        }
        self.lease = lease;
    }

    /// State backed by a client database: clients recorded there may reclaim during a grace
    /// period of one lease, which ends early once all of them sent RECLAIM_COMPLETE.
    pub fn with_db(db: ClientDb) -> Self {
        let mut s = Self::new();
        match db.load() {
            Ok(rows) => {
                s.reclaimable = rows.into_iter().map(|(o, _)| Bytes::from(o)).collect();
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot read client records; no reclaim possible")
            }
        }
        if !s.reclaimable.is_empty() {
            tracing::info!(
                clients = s.reclaimable.len(),
                "grace period of one lease: clients may reclaim their state"
            );
            s.grace_until = Some(Instant::now() + s.lease);
        }
        s.db = Some(db);
        s
    }

    /// Whether the grace period is running (ending it when its time is up or all reclaimed).
    pub fn in_grace(&mut self) -> bool {
        let Some(until) = self.grace_until else {
            return false;
        };
        let all_done = self
            .reclaimable
            .iter()
            .all(|o| self.reclaim_done.contains(o));
        if Instant::now() < until && !all_done {
            return true;
        }
        self.grace_until = None;
        // Records of clients that did not come back are dropped.
        let live: HashSet<Bytes> = self.clients.values().map(|c| c.owner.clone()).collect();
        for o in self.reclaimable.drain() {
            if !live.contains(&o) {
                if let Some(db) = &self.db {
                    if let Err(e) = db.remove(&o) {
                        tracing::warn!(error = %e, "client record removal failed");
                    }
                }
            }
        }
        tracing::info!("grace period over");
        false
    }

    /// Whether `client` may reclaim now: grace runs and it held state before the restart.
    pub fn may_reclaim(&mut self, client: u64) -> Result<(), Nfsstat4> {
        if !self.in_grace() {
            return Err(Nfsstat4::NFS4ERR_NO_GRACE);
        }
        let owner = self.clients.get(&client).map(|c| c.owner.clone());
        match owner {
            Some(o) if self.reclaimable.contains(&o) && !self.reclaim_done.contains(&o) => Ok(()),
            _ => Err(Nfsstat4::NFS4ERR_RECLAIM_BAD),
        }
    }

    /// Records a newly confirmed client on disk before the confirmation is answered.
    pub fn record_confirmed(&mut self, owner: &Bytes, minor: u32) {
        if let Some(db) = &self.db {
            if let Err(e) = db.insert(owner, minor) {
                tracing::error!(error = %e, "client record not saved: it cannot reclaim after a crash");
            }
        }
    }

    /// Notes that a client finished reclaiming.
    pub fn reclaim_complete(&mut self, client: u64) {
        if let Some(c) = self.clients.get(&client) {
            self.reclaim_done.insert(c.owner.clone());
        }
    }

    /// A new client id (boot time in the high half, so old ids are recognisably stale).
    pub fn new_client_id(&mut self) -> u64 {
        self.next_id += 1;
        (self.boot as u64) << 32 | (self.next_id & 0xffff_ffff)
    }

    /// Whether a client id was issued by an earlier server instance.
    pub fn is_stale_client(&self, id: u64) -> bool {
        (id >> 32) as u32 != self.boot
    }

    /// A fresh `other` for a stateid.
    pub fn new_other(&mut self) -> [u8; 12] {
        self.next_id += 1;
        let mut o = [0u8; 12];
        o[..4].copy_from_slice(&self.boot.to_be_bytes());
        o[4..].copy_from_slice(&self.next_id.to_be_bytes());
        o
    }

    /// A fresh session id for `client`.
    pub fn new_session_id(&mut self, client: u64) -> [u8; 16] {
        self.next_id += 1;
        let mut s = [0u8; 16];
        s[..8].copy_from_slice(&client.to_be_bytes());
        s[8..].copy_from_slice(&self.next_id.to_be_bytes());
        s
    }

    /// Renews a client's lease.
    pub fn renew(&mut self, client: u64) -> Result<(), Nfsstat4> {
        if self.is_stale_client(client) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID);
        }
        if self.expired_clients_ids.contains(&client) {
            return Err(Nfsstat4::NFS4ERR_EXPIRED);
        }
        match self.clients.get_mut(&client) {
            Some(c) => {
                c.renewed = Instant::now();
                Ok(())
            }
            None => Err(Nfsstat4::NFS4ERR_STALE_CLIENTID),
        }
    }

    /// Removes clients whose lease expired long ago and that hold nothing others want.
    /// Expired clients stay (courtesy) until a conflicting request calls [`State::expire`].
    pub fn expired_clients(&self) -> Vec<u64> {
        let lease = self.lease;
        self.clients
            .values()
            .filter(|c| c.renewed.elapsed() > lease)
            .map(|c| c.id)
            .collect()
    }

    /// Drops a client and everything it holds.
    pub fn expire(&mut self, client: u64) {
        if let Some(c) = self.clients.remove(&client) {
            let others = self.clients.values().any(|o| o.owner == c.owner);
            if let (Some(db), false) = (&self.db, others) {
                if let Err(e) = db.remove(&c.owner) {
                    tracing::warn!(error = %e, "client record removal failed");
                }
            }
        }
        self.sessions.retain(|_, s| s.client != client);
        if self.expired_states.len() > 65536 {
            self.expired_states.clear();
        }
        if self.expired_clients_ids.len() > 65536 {
            self.expired_clients_ids.clear();
        }
        self.expired_clients_ids.insert(client);
        let gone: Vec<[u8; 12]> = self.states.of_client(client).map(|(k, _)| k).collect();
        for k in gone {
            self.states.remove(&k);
            self.expired_states.insert(k);
        }
        for v in self.locks.values_mut() {
            v.retain(|l| l.client != client);
        }
        self.locks.retain(|_, v| !v.is_empty());
        self.owners.retain(|k, _| k.0 != client);
    }

    /// Expires clients whose lease ran out, if they hold state conflicting with `file`
    /// (courtesy release: expired clients keep their state until someone needs it).
    pub fn release_courtesy(&mut self, file: FileKey) {
        let lease = self.lease;
        let mut expired: Vec<u64> = self
            .states
            .on_file(file)
            .map(|(_, s)| s.client())
            .filter(|c| {
                self.clients
                    .get(c)
                    .is_some_and(|r| r.renewed.elapsed() > lease)
            })
            .collect();
        expired.sort_unstable();
        expired.dedup();
        for c in expired {
            tracing::info!(
                client = c,
                "lease expired; releasing its state for a conflicting request"
            );
            self.expire(c);
        }
    }

    /// Checks a new share (access, deny) against the other opens of `file`.
    pub fn share_conflict(&self, file: FileKey, access: u32, deny: u32) -> bool {
        self.states.on_file(file).any(|(_, s)| match s {
            // An owner's own deny bits bind it too (RFC 7530 sections 9.9 and 16.16.5).
            StateObj::Open(o) => (o.deny & access) != 0 || (o.access & deny) != 0,
            _ => false,
        })
    }

    /// The open of (client, owner) on `file`, if any.
    pub fn find_open(&self, client: u64, owner: &Bytes, file: FileKey) -> Option<[u8; 12]> {
        self.states.on_file(file).find_map(|(k, s)| match s {
            StateObj::Open(o) if o.client == client && o.owner == *owner => Some(k),
            _ => None,
        })
    }

    /// Looks a stateid up, checking its seqid (0 means "the current one" in NFSv4.1).
    pub fn check(&self, sid: &Stateid, minor: u32) -> Result<&StateObj, Nfsstat4> {
        if sid.is_special() {
            return Err(Nfsstat4::NFS4ERR_BAD_STATEID);
        }
        if self.expired_states.contains(&sid.other) {
            return Err(Nfsstat4::NFS4ERR_EXPIRED);
        }
        if u32::from_be_bytes([sid.other[0], sid.other[1], sid.other[2], sid.other[3]]) != self.boot
        {
            return Err(if minor == 0 {
                Nfsstat4::NFS4ERR_STALE_STATEID
            } else {
                Nfsstat4::NFS4ERR_BAD_STATEID
            });
        }
        let s = self
            .states
            .get(&sid.other)
            .ok_or(Nfsstat4::NFS4ERR_BAD_STATEID)?;
        if matches!(s, StateObj::Deleg(d) if d.revoked) {
            return Err(Nfsstat4::NFS4ERR_DELEG_REVOKED);
        }
        let cur = s.seqid();
        if sid.seqid == 0 && minor > 0 {
            return Ok(s);
        }
        if sid.seqid > cur {
            return Err(Nfsstat4::NFS4ERR_BAD_STATEID);
        }
        if sid.seqid < cur {
            return Err(Nfsstat4::NFS4ERR_OLD_STATEID);
        }
        Ok(s)
    }

    /// The first lock of another owner conflicting with the range, if any.
    pub fn lock_conflict(
        &self,
        file: FileKey,
        client: u64,
        owner: &Bytes,
        start: u64,
        end: u64,
        write: bool,
    ) -> Option<Lock> {
        self.locks
            .get(&file)?
            .iter()
            .find(|l| {
                !(l.client == client && l.owner == *owner)
                    && overlaps(l.start, l.end, start, end)
                    && (write || l.write)
            })
            .cloned()
    }

    /// Adds a lock, merging with the owner's own locks (POSIX semantics: the new type wins
    /// over the range).
    pub fn add_lock(&mut self, file: FileKey, lock: Lock) {
        self.remove_lock_range(file, lock.client, &lock.owner, lock.start, lock.end);
        let v = self.locks.entry(file).or_default();
        // Merge with the owner's adjacent locks of the same type.
        let mut merged = lock;
        v.retain(|l| {
            let same =
                l.client == merged.client && l.owner == merged.owner && l.write == merged.write;
            if same && (l.end == merged.start || merged.end == l.start) {
                merged.start = merged.start.min(l.start);
                merged.end = merged.end.max(l.end);
                false
            } else {
                true
            }
        });
        v.push(merged);
    }

    /// Unlocks a range of an owner's locks, splitting locks that straddle it.
    pub fn remove_lock_range(
        &mut self,
        file: FileKey,
        client: u64,
        owner: &Bytes,
        start: u64,
        end: u64,
    ) {
        let Some(v) = self.locks.get_mut(&file) else {
            return;
        };
        let mut out = Vec::with_capacity(v.len());
        for l in v.drain(..) {
            if l.client != client || l.owner != *owner || !overlaps(l.start, l.end, start, end) {
                out.push(l);
                continue;
            }
            if l.start < start {
                out.push(Lock {
                    end: start,
                    ..l.clone()
                });
            }
            if l.end > end {
                out.push(Lock {
                    start: end,
                    ..l.clone()
                });
            }
        }
        *v = out;
        if v.is_empty() {
            self.locks.remove(&file);
        }
    }

    /// Whether an owner holds any lock on the file.
    pub fn owner_has_locks(&self, file: FileKey, client: u64, owner: &Bytes) -> bool {
        self.locks
            .get(&file)
            .is_some_and(|v| v.iter().any(|l| l.client == client && l.owner == *owner))
    }
}

/// The share bits of an OPEN without the NFSv4.1 "want" flags.
pub fn access_bits(a: u32) -> u32 {
    a & 0xff
}

#[cfg(test)]
mod tests;
