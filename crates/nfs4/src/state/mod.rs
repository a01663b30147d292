//! NFSv4 state: clients, sessions and their slot tables, open and lock stateids and share
//! reservations, behind one mutex; operations are short. Byte-range locks and the grace period
//! are in the lock table every protocol shares (`crates/locks`), which [`State`] reaches
//! under its own mutex (taken after this one).
//! Each table is a module with its own interface; [`State`] holds them and does what involves
//! several (a client's expiry, a stateid's check, the grace period).

mod clients;
mod grace;
mod owners;
mod sessions;
mod stateids;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use vfs::IdHasher;

use crate::db::ClientDb;
use crate::proto::LEASE_SECONDS;
use nfs4wire::Nfsstat4;

pub use clients::{
    Callback40, CallbackSec, ClientRec, Clients, MACH_CRED_ALLOWED, MACH_CRED_ENFORCED,
};
use grace::Grace;
use locks::Participant;
pub use locks::{Lock, LockManager, LockOutcome, Owner};
pub use owners::{OwnerKey, OwnerSeq, Owners};
pub use sessions::{Session, SessionId, Sessions, Slot};
pub use stateids::{Deleg, LayoutState, LockState, Open, Other, StateObj, States};

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

/// A client id (SETCLIENTID, EXCHANGE_ID).
pub type ClientId = u64;

/// Identifies a file across handles: file system, inode and generation (see [`vfs::FileId`]).
pub type FileKey = vfs::FileId;

/// All NFSv4 state of the server.
#[derive(Debug)]
pub struct State {
    /// Distinguishes this server instance in client ids and stateids.
    boot: u32,
    next_id: u64,
    /// Client records.
    pub clients: Clients,
    /// Sessions.
    pub sessions: Sessions,
    /// What stateids designate.
    pub states: States,
    /// Byte-range locks, in the table NLM shares.
    locks: Arc<LockManager>,
    /// NFSv4.0 owner sequencing.
    pub owners: Owners,
    /// Stateids of clients whose state was purged (lease expiry, reboot): NFS4ERR_EXPIRED
    /// rather than BAD_STATEID (bounded).
    expired_states: IdSet<Other>,
    /// Client ids purged the same way.
    expired_clients_ids: IdSet<ClientId>,
    /// Reclaim after a restart.
    grace: Grace,
    /// The lease clients must renew within; also the length of the grace period.
    lease: Duration,
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

impl State {
    /// How long an NFSv4.0 callback may go unanswered before its path is judged down: as
    /// knfsd's callback client, a tenth of the lease.
    fn callback_timeout(&self) -> Duration {
        (self.lease / 10).max(Duration::from_secs(1))
    }

    /// A session of `client` with a back channel, for callbacks.
    pub fn back_session(&self, client: ClientId) -> Option<SessionId> {
        self.sessions.with_back_channel(client)
    }

    /// Whether calls can go to `client` now: an NFSv4.0 client's callback path answered its
    /// probe, or an NFSv4.1 client has a session with a back channel.
    pub fn can_call_back(&mut self, client: ClientId) -> bool {
        let timeout = self.callback_timeout();
        match self.clients.get_mut(client) {
            Some(c) if c.minor == 0 => c.callback.as_mut().is_some_and(|cb| {
                cb.judge_unanswered(timeout);
                cb.is_up()
            }),
            Some(_) => self.back_session(client).is_some(),
            None => false,
        }
    }

    /// NFSv4.0: whether `client` holds delegations while its callback path is down, which
    /// RENEW tells it with NFS4ERR_CB_PATH_DOWN (RFC 7530 section 16.24.4) so that it sets up
    /// a new one with SETCLIENTID.
    pub fn callback_path_down(&mut self, client: ClientId) -> bool {
        let timeout = self.callback_timeout();
        let down = match self.clients.get_mut(client) {
            Some(c) if c.minor == 0 => c.callback.as_mut().is_some_and(|cb| cb.is_down(timeout)),
            _ => false,
        };
        down && self
            .states
            .of_client(client)
            .any(|(_, o)| matches!(o, StateObj::Deleg(_)))
    }

    /// Empty state for a new server instance.
    pub fn new() -> Self {
        // One number per instance, so that ids of any other instance are seen as stale: a
        // random one, since two heads of one identity (or a quick restart) may start within
        // the same second (the clock in seconds is what knfsd takes); nonzero.
        let mut b = [0u8; 4];
        let boot = match getrandom::fill(&mut b) {
            Ok(()) => u32::from_be_bytes(b),
            Err(_) => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .subsec_nanos(),
        }
        .max(1);
        Self {
            boot,
            next_id: 1,
            clients: Clients::default(),
            sessions: Sessions::default(),
            states: States::default(),
            locks: Arc::default(),
            owners: Owners::default(),
            expired_states: IdSet::default(),
            expired_clients_ids: IdSet::default(),
            grace: Grace::default(),
            lease: Duration::from_secs(LEASE_SECONDS as u64),
        }
    }

    /// Sets the lease (and, when one runs, the grace period) to `lease`.
    pub fn set_lease(&mut self, lease: Duration) {
        self.grace.set_lease(self.lease, lease);
        self.lease = lease;
        self.share_grace();
    }

    /// Tells the shared grace period how long NFSv4's part runs.
    fn share_grace(&self) {
        match self.grace.until() {
            Some(until) => self.locks.grace().begin(Participant::Nfs4, until),
            None => self.locks.grace().end(Participant::Nfs4),
        }
    }

    /// The lock table, which NLM shares.
    pub fn lock_manager(&self) -> &Arc<LockManager> {
        &self.locks
    }

    /// The lease clients must renew within.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Fixes the instance number that client ids, session ids and stateids carry, so that a
    /// recorded exchange replays with the same ids (the fuzz targets' seeds).
    pub fn set_boot(&mut self, boot: u32) {
        self.boot = boot;
    }

    /// State backed by a client database: clients recorded there may reclaim during a grace
    /// period of one lease, which ends early once all of them sent RECLAIM_COMPLETE.
    pub fn with_db(db: ClientDb) -> Self {
        let mut s = Self::new();
        s.grace = Grace::from_db(db, s.lease);
        s.share_grace();
        s
    }

    /// Whether the grace period is running: NFSv4's part (ending it when its time is up or
    /// all reclaimed) or another protocol's (NLM hosts reclaiming).
    pub fn in_grace(&mut self) -> bool {
        if !self.grace.running(self.clients.owners()) {
            self.locks.grace().end(Participant::Nfs4);
        }
        self.locks.grace().running()
    }

    /// Whether new opens must wait: NFSv4's own grace period runs. NLM hosts reclaiming hold
    /// back new locks ([`State::in_grace`]) but not opens, whose share reservations no byte-range
    /// lock conflicts with (knfsd: lockd's grace does not block opens).
    pub fn opens_in_grace(&mut self) -> bool {
        self.in_grace() && self.locks.grace().running_for(Participant::Nfs4)
    }

    /// Whether `client` may reclaim now: grace runs and it held state before the restart.
    pub fn may_reclaim(&mut self, client: ClientId) -> Result<(), Nfsstat4> {
        if !self.in_grace() {
            return Err(Nfsstat4::NFS4ERR_NO_GRACE);
        }
        match self.clients.get(client) {
            Some(c) if self.grace.may_reclaim(&c.owner) => Ok(()),
            _ => Err(Nfsstat4::NFS4ERR_RECLAIM_BAD),
        }
    }

    /// Notes that a client finished reclaiming.
    pub fn reclaim_complete(&mut self, client: ClientId) {
        if let Some(c) = self.clients.get(client) {
            self.grace.reclaim_complete(&c.owner);
        }
        self.in_grace();
    }

    /// A new client id (the instance number in the high half, so old ids are recognisably
    /// stale).
    pub fn new_client_id(&mut self) -> u64 {
        self.next_id += 1;
        (self.boot as u64) << 32 | (self.next_id & 0xffff_ffff)
    }

    /// Whether a client id was issued by an earlier server instance.
    pub fn is_stale_client(&self, id: u64) -> bool {
        (id >> 32) as u32 != self.boot
    }

    /// A fresh `other` for a stateid.
    pub fn new_other(&mut self) -> Other {
        self.next_id += 1;
        let mut o = [0u8; 12];
        o[..4].copy_from_slice(&self.boot.to_be_bytes());
        o[4..].copy_from_slice(&self.next_id.to_be_bytes());
        o
    }

    /// A fresh session id for `client`.
    pub fn new_session_id(&mut self, client: ClientId) -> SessionId {
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
        match self.clients.get_mut(client) {
            Some(c) => {
                c.renewed = Instant::now();
                Ok(())
            }
            None => Err(Nfsstat4::NFS4ERR_STALE_CLIENTID),
        }
    }

    /// Removes clients whose lease expired long ago and that hold nothing others want.
    /// Expired clients stay (courtesy) until a conflicting request calls [`State::expire`].
    pub fn expired_clients(&self) -> Vec<ClientId> {
        self.clients.expired(self.lease)
    }

    /// Drops a client and everything it holds.
    pub fn expire(&mut self, client: u64) {
        if let Some(c) = self.clients.remove(client) {
            if !self.clients.any_of_owner(&c.owner) {
                self.grace.forget(&c.owner);
            }
        }
        self.sessions.remove_of(client);
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
        self.locks
            .remove_owners(|o| matches!(o, Owner::Nfs4 { client: c, .. } if *c == client));
        self.owners.remove_client(client);
    }

    /// Expires clients whose lease ran out, if they hold state conflicting with `file`
    /// (courtesy release: expired clients keep their state until someone needs it).
    pub fn release_courtesy(&mut self, file: FileKey) {
        let lease = self.lease;
        let mut expired: Vec<u64> = self
            .states
            .on_file(file)
            .map(|(_, s)| s.client())
            .filter(|c| self.clients.lease_ran_out(*c, lease))
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

    /// Checks a new share (access, deny) against the other opens of `file` and the share
    /// reservations NLM holds on it.
    pub fn share_conflict(&self, file: FileKey, access: u32, deny: u32) -> bool {
        self.open_share_conflict(file, access, deny)
            || self.locks.share_conflict(file, access, deny)
    }

    /// Checks a share (access, deny) against the NFSv4 opens of `file` only.
    pub fn open_share_conflict(&self, file: FileKey, access: u32, deny: u32) -> bool {
        self.states.on_file(file).any(|(_, s)| match s {
            // An owner's own deny bits bind it too (RFC 7530 sections 9.9 and 16.16.5).
            StateObj::Open(o) => (o.deny & access) != 0 || (o.access & deny) != 0,
            _ => false,
        })
    }

    /// The open of (client, owner) on `file`, if any.
    pub fn find_open(&self, client: ClientId, owner: &Bytes, file: FileKey) -> Option<Other> {
        self.states.on_file(file).find_map(|(k, s)| match s {
            StateObj::Open(o) if o.client == client && o.owner == *owner => Some(k),
            _ => None,
        })
    }

    /// Whether `sid` was handed out by an earlier instance of this server (before a restart
    /// or a takeover): its boot number is not this instance's.
    pub fn of_earlier_instance(&self, sid: &Stateid) -> bool {
        !sid.is_special()
            && u32::from_be_bytes([sid.other[0], sid.other[1], sid.other[2], sid.other[3]])
                != self.boot
    }

    /// Whether `client` holds `file` open for writing.
    pub fn holds_open_for_write(&self, client: ClientId, file: FileKey) -> bool {
        self.states.of_client(client).any(|(_, o)| {
            matches!(o, StateObj::Open(o) if o.file == file
                && o.access & nfs4wire::OPEN4_SHARE_ACCESS_WRITE != 0)
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
        if self.of_earlier_instance(sid) {
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
        client: ClientId,
        owner: &Bytes,
        start: u64,
        end: u64,
        write: bool,
    ) -> Option<Lock> {
        self.locks
            .test(file, &nfs4_lock(client, owner, start, end, write))
    }

    /// Takes a lock unless another owner's conflicts (which is returned), merging with the
    /// owner's own locks.
    pub fn add_lock(
        &mut self,
        file: FileKey,
        client: ClientId,
        owner: &Bytes,
        start: u64,
        end: u64,
        write: bool,
    ) -> Result<(), Lock> {
        match self
            .locks
            .lock(file, nfs4_lock(client, owner, start, end, write), false)
        {
            LockOutcome::Denied(c) => Err(c),
            _ => Ok(()),
        }
    }

    /// Unlocks a range of an owner's locks, splitting locks that straddle it.
    pub fn remove_lock_range(
        &mut self,
        file: FileKey,
        client: ClientId,
        owner: &Bytes,
        start: u64,
        end: u64,
    ) {
        self.locks
            .unlock(file, &nfs4_owner(client, owner), start, end)
    }

    /// Whether an owner holds any lock on the file.
    pub fn owner_has_locks(&self, file: FileKey, client: ClientId, owner: &Bytes) -> bool {
        self.locks.owner_has(file, &nfs4_owner(client, owner))
    }

    /// Whether `client`'s lock-owner `owner` holds a lock on any file.
    pub fn lock_owner_holds(&self, client: ClientId, owner: &Bytes) -> bool {
        self.locks.held_by(&nfs4_owner(client, owner))
    }
}

/// The lock table's name for an NFSv4 lock-owner.
fn nfs4_owner(client: ClientId, owner: &Bytes) -> Owner {
    Owner::Nfs4 {
        client,
        owner: owner.clone(),
    }
}

fn nfs4_lock(client: ClientId, owner: &Bytes, start: u64, end: u64, write: bool) -> Lock {
    Lock {
        owner: nfs4_owner(client, owner),
        start,
        end,
        write,
    }
}

/// The share bits of an OPEN without the NFSv4.1 "want" flags.
pub fn access_bits(a: u32) -> u32 {
    a & 0xff
}

#[cfg(test)]
mod tests;
