//! The lock table: per file, the locks held and the blocked requests waiting for a range.

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::{FileKey, GracePeriod};

/// The protocol a lock was taken through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// NFSv4 LOCK.
    Nfs4,
    /// NLM version 4 (NFSv3's lock protocol).
    Nlm,
}

/// Who holds (or waits for) a lock.
#[derive(Debug, Clone)]
pub enum Owner {
    /// An NFSv4 lock-owner: the client id and the owner's opaque name.
    Nfs4 {
        /// Client id.
        client: u64,
        /// The lock-owner's name within the client.
        owner: Bytes,
    },
    /// An NLM lock holder: a process (`svid`) on a host. The owner handle `oh` is what the
    /// client sent, reported back on a conflict; as in knfsd, it does not tell owners apart.
    Nlm {
        /// The host, as the NLM service numbers the hosts it knows.
        host: u64,
        /// The process id on the host.
        svid: u32,
        /// The client's owner handle.
        oh: Bytes,
    },
}

impl Owner {
    /// Whether two owners are one (locks of one owner never conflict and merge).
    pub fn same(&self, other: &Owner) -> bool {
        match (self, other) {
            (
                Owner::Nfs4 {
                    client: a,
                    owner: x,
                },
                Owner::Nfs4 {
                    client: b,
                    owner: y,
                },
            ) => a == b && x == y,
            (
                Owner::Nlm {
                    host: a, svid: x, ..
                },
                Owner::Nlm {
                    host: b, svid: y, ..
                },
            ) => a == b && x == y,
            _ => false,
        }
    }

    /// The protocol the owner locks through.
    pub fn protocol(&self) -> Protocol {
        match self {
            Owner::Nfs4 { .. } => Protocol::Nfs4,
            Owner::Nlm { .. } => Protocol::Nlm,
        }
    }

    /// The NLM host of the owner, if it is one.
    fn nlm_host(&self) -> Option<u64> {
        match self {
            Owner::Nlm { host, .. } => Some(*host),
            Owner::Nfs4 { .. } => None,
        }
    }
}

/// One byte-range lock.
#[derive(Debug, Clone)]
pub struct Lock {
    /// Holder.
    pub owner: Owner,
    /// First byte.
    pub start: u64,
    /// One past the last byte (`u64::MAX` for "to the end of the file").
    pub end: u64,
    /// Exclusive (write) lock.
    pub write: bool,
}

impl Lock {
    /// Whether `self`, held by another owner, keeps `want` from being granted.
    fn blocks(&self, want: &Lock) -> bool {
        !self.owner.same(&want.owner)
            && overlaps(self.start, self.end, want.start, want.end)
            && (self.write || want.write)
    }

    /// Whether `self` asks exactly what `other` asks.
    fn same_request(&self, other: &Lock) -> bool {
        self.owner.same(&other.owner)
            && self.start == other.start
            && self.end == other.end
            && self.write == other.write
    }
}

/// Whether two byte ranges [a0,a1) and [b0,b1) overlap.
fn overlaps(a0: u64, a1: u64, b0: u64, b1: u64) -> bool {
    a0 < b1 && b0 < a1
}

/// A blocked request's identity, under which its grant is announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaiterId(pub u64);

/// A blocked request that has just been granted: the lock is in place, held by its owner.
#[derive(Debug, Clone)]
pub struct Granted {
    /// The request that blocked.
    pub id: WaiterId,
    /// The file.
    pub file: FileKey,
    /// The lock now held.
    pub lock: Lock,
}

/// What a lock request came to.
#[derive(Debug, Clone)]
pub enum LockOutcome {
    /// The lock is held.
    Granted,
    /// Another owner holds this conflicting lock (the request did not ask to wait).
    Denied(Lock),
    /// The request waits; its grant will be announced under this id.
    Blocked(WaiterId),
    /// The request would wait, but the queue is full (for its host or in all).
    TooManyWaiters,
}

/// Bounds on blocked requests.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Blocked requests in all.
    pub waiters_total: usize,
    /// Blocked requests of one NLM host.
    pub waiters_per_host: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            waiters_total: 65_536,
            waiters_per_host: 1_024,
        }
    }
}

/// Counts for metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Locks held through NFSv4.
    pub nfs4_locks: usize,
    /// Locks held through NLM.
    pub nlm_locks: usize,
    /// Blocked requests waiting.
    pub waiters: usize,
}

/// A DOS-style share reservation (NLM SHARE): what its holder does to the file and what it
/// denies others, each a mask of 1 (read) and 2 (write), as NFSv4's share bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Share {
    /// The NLM host holding it.
    pub host: u64,
    /// The owner handle it was taken with (a host's shares are told apart by it).
    pub oh: Bytes,
    /// Access the holder has.
    pub access: u32,
    /// Access the holder denies others.
    pub deny: u32,
}

impl Share {
    fn conflicts(&self, access: u32, deny: u32) -> bool {
        self.deny & access != 0 || self.access & deny != 0
    }
}

/// A protocol's view of a file that the table asks about: whether its own share reservations
/// (NFSv4 opens) conflict with a new one, and releasing what expired clients hold on the file
/// before another protocol is refused because of it.
pub trait OtherState: Send + Sync {
    /// Whether the protocol's share reservations on `file` conflict with (`access`, `deny`).
    fn share_conflict(&self, file: FileKey, access: u32, deny: u32) -> bool;
    /// Releases the state of the protocol's expired clients that touches `file`.
    fn release_expired(&self, file: FileKey);
}

#[derive(Debug)]
struct Waiter {
    id: WaiterId,
    lock: Lock,
}

/// One file's locks and its queue of blocked requests, oldest first.
#[derive(Debug, Default)]
struct FileLocks {
    locks: Vec<Lock>,
    waiters: VecDeque<Waiter>,
    shares: Vec<Share>,
}

impl FileLocks {
    fn conflict(&self, want: &Lock) -> Option<&Lock> {
        self.locks.iter().find(|l| l.blocks(want))
    }

    /// Adds a lock of an owner that may hold it, merging with the owner's own locks (POSIX:
    /// the new type wins over its range; adjacent ranges of one type join).
    fn add(&mut self, lock: Lock) {
        self.remove_range(&lock.owner, lock.start, lock.end);
        let mut merged = lock;
        self.locks.retain(|l| {
            let same = l.owner.same(&merged.owner) && l.write == merged.write;
            if same && (l.end == merged.start || merged.end == l.start) {
                merged.start = merged.start.min(l.start);
                merged.end = merged.end.max(l.end);
                false
            } else {
                true
            }
        });
        self.locks.push(merged);
    }

    /// Unlocks `[start, end)` of `owner`'s locks, splitting those that straddle it; whether
    /// anything was unlocked.
    fn remove_range(&mut self, owner: &Owner, start: u64, end: u64) -> bool {
        let before = self.locks.len();
        let mut out = Vec::with_capacity(before + 1);
        let mut changed = false;
        for l in self.locks.drain(..) {
            if !l.owner.same(owner) || !overlaps(l.start, l.end, start, end) {
                out.push(l);
                continue;
            }
            changed = true;
            if l.start < start {
                out.push(Lock {
                    end: start,
                    ..l.clone()
                });
            }
            if l.end > end {
                out.push(Lock { start: end, ..l });
            }
        }
        self.locks = out;
        changed
    }

    fn is_empty(&self) -> bool {
        self.locks.is_empty() && self.waiters.is_empty() && self.shares.is_empty()
    }
}

#[derive(Debug, Default)]
struct Inner {
    files: HashMap<FileKey, FileLocks>,
    next: u64,
    waiters: usize,
    per_host: HashMap<u64, usize>,
}

impl Inner {
    fn forget_waiter(&mut self, w: &Waiter) {
        self.waiters -= 1;
        if let Some(h) = w.lock.owner.nlm_host() {
            if let Some(n) = self.per_host.get_mut(&h) {
                *n -= 1;
                if *n == 0 {
                    self.per_host.remove(&h);
                }
            }
        }
    }

    /// Grants, oldest first, the waiters of `file` that nothing holds back any more: neither a
    /// lock nor an older waiter of another owner that wants an overlapping range.
    fn wake(&mut self, file: FileKey, out: &mut Vec<Granted>) {
        let Some(fl) = self.files.get_mut(&file) else {
            return;
        };
        let mut waiting: VecDeque<Waiter> = VecDeque::with_capacity(fl.waiters.len());
        let mut gone = Vec::new();
        for w in std::mem::take(&mut fl.waiters) {
            let held = fl.conflict(&w.lock).is_some();
            let queued = waiting.iter().any(|e| e.lock.blocks(&w.lock));
            if held || queued {
                waiting.push_back(w);
            } else {
                fl.add(w.lock.clone());
                out.push(Granted {
                    id: w.id,
                    file,
                    lock: w.lock.clone(),
                });
                gone.push(w);
            }
        }
        fl.waiters = waiting;
        if fl.is_empty() {
            self.files.remove(&file);
        }
        for w in &gone {
            self.forget_waiter(w);
        }
    }
}

/// The lock table of the server (see the crate documentation).
pub struct LockManager {
    inner: Mutex<Inner>,
    limits: Limits,
    grace: GracePeriod,
    on_grant: OnceLock<Box<dyn Fn(Vec<Granted>) + Send + Sync>>,
    nfs4: OnceLock<std::sync::Weak<dyn OtherState>>,
}

impl std::fmt::Debug for LockManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockManager")
            .field("totals", &self.totals())
            .finish()
    }
}

impl Default for LockManager {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl LockManager {
    /// An empty table whose queue of blocked requests is bounded by `limits`.
    pub fn new(limits: Limits) -> Self {
        LockManager {
            inner: Mutex::new(Inner::default()),
            limits,
            grace: GracePeriod::default(),
            on_grant: OnceLock::new(),
            nfs4: OnceLock::new(),
        }
    }

    /// Sets NFSv4's view of files (its opens, its expired clients), which NLM requests
    /// consult; weak, as NFSv4's state holds this table. False when already set.
    pub fn set_nfs4(&self, nfs4: std::sync::Weak<dyn OtherState>) -> bool {
        self.nfs4.set(nfs4).is_ok()
    }

    /// Releases what NFSv4 clients whose lease expired hold on `file` (they keep it, as a
    /// courtesy, until another client wants it): called before a request of another protocol
    /// is refused because of an NFSv4 lock. Not under the table's lock.
    pub fn release_expired(&self, file: FileKey) {
        if let Some(n) = self.nfs4.get().and_then(std::sync::Weak::upgrade) {
            n.release_expired(file);
        }
    }

    /// Takes the share reservation `share` on `file` unless another host's share or an NFSv4
    /// open conflicts; replaces the holder's own reservation of the same owner handle.
    pub fn share(&self, file: FileKey, share: Share) -> bool {
        if let Some(n) = self.nfs4.get().and_then(std::sync::Weak::upgrade) {
            if n.share_conflict(file, share.access, share.deny) {
                return false;
            }
        }
        let mut g = self.inner.lock();
        let fl = g.files.entry(file).or_default();
        fl.shares
            .retain(|s| !(s.host == share.host && s.oh == share.oh));
        if fl
            .shares
            .iter()
            .any(|s| s.conflicts(share.access, share.deny))
        {
            if fl.is_empty() {
                g.files.remove(&file);
            }
            return false;
        }
        fl.shares.push(share);
        true
    }

    /// Drops `host`'s share reservation on `file` taken with owner handle `oh`.
    pub fn unshare(&self, file: FileKey, host: u64, oh: &[u8]) {
        let mut g = self.inner.lock();
        if let Some(fl) = g.files.get_mut(&file) {
            fl.shares.retain(|s| !(s.host == host && s.oh == oh));
            if fl.is_empty() {
                g.files.remove(&file);
            }
        }
    }

    /// Whether share reservations held in the table (NLM's) conflict with an NFSv4 open of
    /// `access` denying `deny`.
    pub fn share_conflict(&self, file: FileKey, access: u32, deny: u32) -> bool {
        self.inner
            .lock()
            .files
            .get(&file)
            .is_some_and(|fl| fl.shares.iter().any(|s| s.conflicts(access, deny)))
    }

    /// The grace period every protocol shares.
    pub fn grace(&self) -> &GracePeriod {
        &self.grace
    }

    /// Sets what is told of blocked requests granted when a range frees (the NLM service,
    /// which calls the waiting client back). Called outside the table's lock, possibly under a
    /// protocol's state lock: it must only hand the grants on. False when already set.
    pub fn on_grant(&self, f: Box<dyn Fn(Vec<Granted>) + Send + Sync>) -> bool {
        self.on_grant.set(f).is_ok()
    }

    fn announce(&self, granted: Vec<Granted>) {
        if granted.is_empty() {
            return;
        }
        match self.on_grant.get() {
            Some(f) => f(granted),
            None => tracing::warn!(
                n = granted.len(),
                "blocked locks granted with no one to tell"
            ),
        }
    }

    /// The first lock of another owner that conflicts with `want`, if any.
    pub fn test(&self, file: FileKey, want: &Lock) -> Option<Lock> {
        self.inner.lock().files.get(&file)?.conflict(want).cloned()
    }

    /// Takes `want` if no other owner's lock conflicts; otherwise, with `block`, queues it
    /// (granted later, announced through [`LockManager::on_grant`]). A request the same owner
    /// already waits with gets the same id; a grant makes the owner's identical waiter go.
    pub fn lock(&self, file: FileKey, want: Lock, block: bool) -> LockOutcome {
        let mut g = self.inner.lock();
        let inner = &mut *g;
        let fl = inner.files.entry(file).or_default();
        if let Some(c) = fl.conflict(&want) {
            let c = c.clone();
            if !block {
                if fl.is_empty() {
                    inner.files.remove(&file);
                }
                return LockOutcome::Denied(c);
            }
            if let Some(w) = fl.waiters.iter().find(|w| w.lock.same_request(&want)) {
                return LockOutcome::Blocked(w.id);
            }
            let host = want.owner.nlm_host();
            let per_host = host.map_or(0, |h| inner.per_host.get(&h).copied().unwrap_or(0));
            if inner.waiters >= self.limits.waiters_total
                || per_host >= self.limits.waiters_per_host
            {
                if fl.is_empty() {
                    inner.files.remove(&file);
                }
                return LockOutcome::TooManyWaiters;
            }
            inner.next += 1;
            let id = WaiterId(inner.next);
            fl.waiters.push_back(Waiter { id, lock: want });
            inner.waiters += 1;
            if let Some(h) = host {
                *inner.per_host.entry(h).or_default() += 1;
            }
            return LockOutcome::Blocked(id);
        }
        let mut satisfied = Vec::new();
        fl.waiters.retain(|w| {
            let same = w.lock.same_request(&want);
            if same {
                satisfied.push(w.id);
            }
            !same
        });
        fl.add(want.clone());
        for id in satisfied {
            inner.forget_waiter(&Waiter {
                id,
                lock: want.clone(),
            });
        }
        LockOutcome::Granted
    }

    /// Unlocks `[start, end)` of `owner`'s locks on `file`; waiters the range held back are
    /// granted.
    pub fn unlock(&self, file: FileKey, owner: &Owner, start: u64, end: u64) {
        let mut granted = Vec::new();
        {
            let mut g = self.inner.lock();
            let changed = g
                .files
                .get_mut(&file)
                .is_some_and(|fl| fl.remove_range(owner, start, end));
            if changed {
                g.wake(file, &mut granted);
            }
        }
        self.announce(granted);
    }

    /// Withdraws `owner`'s blocked request for exactly `[start, end)` of that type, returning
    /// its id if there was one. Later waiters it held back may be granted.
    pub fn cancel(&self, file: FileKey, want: &Lock) -> Option<WaiterId> {
        let mut granted = Vec::new();
        let found = {
            let mut g = self.inner.lock();
            let fl = g.files.get_mut(&file)?;
            let i = fl.waiters.iter().position(|w| w.lock.same_request(want))?;
            let w = fl.waiters.remove(i)?;
            g.forget_waiter(&w);
            g.wake(file, &mut granted);
            w.id
        };
        self.announce(granted);
        Some(found)
    }

    /// Whether `owner` holds any lock on `file`.
    pub fn owner_has(&self, file: FileKey, owner: &Owner) -> bool {
        self.inner
            .lock()
            .files
            .get(&file)
            .is_some_and(|fl| fl.locks.iter().any(|l| l.owner.same(owner)))
    }

    /// Whether `owner` holds a lock on any file.
    pub fn held_by(&self, owner: &Owner) -> bool {
        self.inner
            .lock()
            .files
            .values()
            .any(|fl| fl.locks.iter().any(|l| l.owner.same(owner)))
    }

    /// Whether an owner `which` selects holds or waits for a lock anywhere.
    pub fn holds_any(&self, which: impl Fn(&Owner) -> bool) -> bool {
        self.inner.lock().files.values().any(|fl| {
            fl.locks.iter().any(|l| which(&l.owner))
                || fl.waiters.iter().any(|w| which(&w.lock.owner))
        })
    }

    /// Drops every lock and blocked request of the owners `gone` selects (a client that
    /// expired, a host that rebooted); waiters they held back are granted.
    pub fn remove_owners(&self, gone: impl Fn(&Owner) -> bool) {
        let mut granted = Vec::new();
        {
            let mut g = self.inner.lock();
            let mut touched = Vec::new();
            let mut dropped = Vec::new();
            for (file, fl) in g.files.iter_mut() {
                let before = (fl.locks.len(), dropped.len());
                fl.locks.retain(|l| !gone(&l.owner));
                fl.shares.retain(|s| {
                    !gone(&Owner::Nlm {
                        host: s.host,
                        svid: 0,
                        oh: s.oh.clone(),
                    })
                });
                let mut kept = VecDeque::with_capacity(fl.waiters.len());
                for w in std::mem::take(&mut fl.waiters) {
                    if gone(&w.lock.owner) {
                        dropped.push(w);
                    } else {
                        kept.push_back(w);
                    }
                }
                fl.waiters = kept;
                if (fl.locks.len(), dropped.len()) != before {
                    touched.push(*file);
                }
            }
            for w in &dropped {
                g.forget_waiter(w);
            }
            for f in touched {
                g.wake(f, &mut granted);
                if g.files.get(&f).is_some_and(FileLocks::is_empty) {
                    g.files.remove(&f);
                }
            }
        }
        self.announce(granted);
    }

    /// The locks on `file`.
    pub fn on_file(&self, file: FileKey) -> Vec<Lock> {
        self.inner
            .lock()
            .files
            .get(&file)
            .map_or_else(Vec::new, |fl| fl.locks.clone())
    }

    /// The locks held by the owners `which` selects, with their files (an administrator's
    /// listing).
    pub fn held(&self, which: impl Fn(&Owner) -> bool) -> Vec<(FileKey, Lock)> {
        let g = self.inner.lock();
        g.files
            .iter()
            .flat_map(|(f, fl)| fl.locks.iter().map(move |l| (*f, l)))
            .filter(|(_, l)| which(&l.owner))
            .map(|(f, l)| (f, l.clone()))
            .collect()
    }

    /// Share reservations held by the NLM hosts `which` selects.
    pub fn shares_held(&self, which: impl Fn(u64) -> bool) -> usize {
        let g = self.inner.lock();
        g.files
            .values()
            .flat_map(|fl| fl.shares.iter())
            .filter(|s| which(s.host))
            .count()
    }

    /// Locks held per protocol and requests waiting.
    pub fn totals(&self) -> Totals {
        let g = self.inner.lock();
        let mut t = Totals {
            waiters: g.waiters,
            ..Totals::default()
        };
        for l in g.files.values().flat_map(|fl| fl.locks.iter()) {
            match l.owner.protocol() {
                Protocol::Nfs4 => t.nfs4_locks += 1,
                Protocol::Nlm => t.nlm_locks += 1,
            }
        }
        t
    }
}
