//! The contexts a server holds, by handle: bounded, each with its own locks, none global on
//! the data path (a call locks one shard for the look-up, then only its own context).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};

use super::mech::{Peer, SecContext};
use super::window::SeqWindow;
use super::wire::{GssService, HANDLE_LEN};

/// A context handle: random bytes (never an address), what the client names its context by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(pub [u8; HANDLE_LEN]);

impl Handle {
    /// A new random handle.
    pub fn random() -> Self {
        let mut b = [0u8; HANDLE_LEN];
        // The system's random source fails only when it is missing altogether; a handle
        // from the clock then still differs between contexts (handles are not secrets: the
        // context's keys are).
        if getrandom::fill(&mut b).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            b.copy_from_slice(&t.to_le_bytes()[..HANDLE_LEN]);
        }
        Handle(b)
    }

    /// The handle a client sent, if it has the length of ours.
    pub fn from_wire(b: &[u8]) -> Option<Self> {
        Some(Handle(b.try_into().ok()?))
    }
}

/// One context: its GSS-API state, its sequence window, and who its peer is (once known).
pub struct Context {
    /// The mechanism's context: written by establishment, read (shared) by every token.
    sec: RwLock<Box<dyn SecContext>>,
    /// Replays are refused against this.
    window: Mutex<SeqWindow>,
    /// The peer, once the context is established.
    peer: Option<Arc<Peer>>,
    /// When the context stops being valid.
    expires: Instant,
    /// The address of the client that established it.
    addr: IpAddr,
    /// The services its calls used, one bit each (for the admin listing).
    services: AtomicU8,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("peer", &self.peer)
            .field("expires", &self.expires)
            .finish()
    }
}

impl Context {
    /// A context in the table, established by a client at `addr`.
    pub fn new(
        sec: Box<dyn SecContext>,
        peer: Option<Arc<Peer>>,
        expires: Instant,
        addr: IpAddr,
    ) -> Self {
        Self {
            sec: RwLock::new(sec),
            window: Mutex::new(SeqWindow::default()),
            peer,
            expires,
            addr,
            services: AtomicU8::new(0),
        }
    }

    /// Notes that a call used `service`.
    pub fn used(&self, service: GssService) {
        let bit = 1u8 << service.to_wire();
        // most calls find the bit set: a load, no write to the shared line
        if self.services.load(Ordering::Relaxed) & bit == 0 {
            self.services.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// The mechanism's context, to make or check tokens (shared with other threads).
    pub fn sec(&self) -> parking_lot::RwLockReadGuard<'_, Box<dyn SecContext>> {
        self.sec.read()
    }

    /// The mechanism's context, to take it out (a context whose establishment goes on).
    pub fn sec_mut(&self) -> parking_lot::RwLockWriteGuard<'_, Box<dyn SecContext>> {
        self.sec.write()
    }

    /// The sequence window.
    pub fn window(&self) -> parking_lot::MutexGuard<'_, SeqWindow> {
        self.window.lock()
    }

    /// The peer of an established context; `None` while it is being established.
    pub fn peer(&self) -> Option<&Arc<Peer>> {
        self.peer.as_ref()
    }

    /// Whether the context has expired at `now`.
    pub fn expired(&self, now: Instant) -> bool {
        now >= self.expires
    }
}

/// Shards of the table: a look-up locks one of them, for reading.
const SHARDS: usize = 16;

/// Why a context could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableFull;

/// The contexts by handle, at most `cap` of them.
pub struct ContextTable {
    shards: Vec<RwLock<HashMap<Handle, Arc<Context>>>>,
    count: AtomicUsize,
    cap: usize,
}

impl ContextTable {
    /// An empty table holding at most `cap` contexts.
    pub fn new(cap: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            count: AtomicUsize::new(0),
            cap: cap.max(1),
        }
    }

    fn shard(&self, h: &Handle) -> &RwLock<HashMap<Handle, Arc<Context>>> {
        &self.shards[h.0[0] as usize % SHARDS]
    }

    /// Contexts held.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether no context is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The context of `h`, unless unknown or expired (an expired one leaves the table).
    pub fn get(&self, h: &Handle, now: Instant) -> Option<Arc<Context>> {
        let c = self.shard(h).read().get(h).cloned()?;
        if c.expired(now) {
            self.remove(h);
            return None;
        }
        Some(c)
    }

    /// Adds `c` under a new handle; when the table is full, expired contexts leave first, and
    /// if none has, the context is refused (a client that keeps creating contexts gets errors,
    /// and the table does not grow).
    pub fn insert(&self, c: Context, now: Instant) -> Result<Handle, TableFull> {
        if self.len() >= self.cap {
            self.sweep(now);
            if self.len() >= self.cap {
                return Err(TableFull);
            }
        }
        let c = Arc::new(c);
        loop {
            let h = Handle::random();
            let mut s = self.shard(&h).write();
            if let std::collections::hash_map::Entry::Vacant(v) = s.entry(h) {
                v.insert(c);
                self.count.fetch_add(1, Ordering::Relaxed);
                return Ok(h);
            }
        }
    }

    /// Puts `c` in place of the context of `h` (a context whose establishment went a step
    /// further); false when `h` is no longer there.
    pub fn replace(&self, h: &Handle, c: Context) -> bool {
        match self.shard(h).write().get_mut(h) {
            Some(slot) => {
                *slot = Arc::new(c);
                true
            }
            None => false,
        }
    }

    /// Removes the context of `h` (RPCSEC_GSS_DESTROY, expiry); false when unknown.
    pub fn remove(&self, h: &Handle) -> bool {
        let gone = self.shard(h).write().remove(h).is_some();
        if gone {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        gone
    }

    /// Drops every expired context.
    pub fn sweep(&self, now: Instant) {
        for s in &self.shards {
            let mut s = s.write();
            let before = s.len();
            s.retain(|_, c| !c.expired(now));
            self.count.fetch_sub(before - s.len(), Ordering::Relaxed);
        }
    }

    /// The established contexts (for `rnfsctl clients`).
    pub fn views(&self, now: Instant) -> Vec<ContextView> {
        let mut out: Vec<ContextView> = self
            .shards
            .iter()
            .flat_map(|s| {
                s.read()
                    .values()
                    .filter_map(|c| {
                        let used = c.services.load(Ordering::Relaxed);
                        Some(ContextView {
                            addr: c.addr,
                            peer: c.peer()?.clone(),
                            services: [
                                GssService::None,
                                GssService::Integrity,
                                GssService::Privacy,
                            ]
                            .into_iter()
                            .filter(|s| used & (1 << s.to_wire()) != 0)
                            .collect(),
                            expires_in: c.expires.saturating_duration_since(now),
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_by(|a, b| (a.addr, &a.peer.principal).cmp(&(b.addr, &b.peer.principal)));
        out
    }
}

/// An established context, as the admin listing shows it.
#[derive(Debug, Clone)]
pub struct ContextView {
    /// The client's address.
    pub addr: IpAddr,
    /// Its principal and identity.
    pub peer: Arc<Peer>,
    /// The services its calls used.
    pub services: Vec<GssService>,
    /// Time until it expires.
    pub expires_in: std::time::Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gss::mech::{GssError, Step};
    use bytes::Bytes;
    use std::time::Duration;

    /// A context that is never asked to do anything: the table only holds it.
    struct Held;

    impl SecContext for Held {
        fn step(&mut self, _: &[u8]) -> Result<Step, GssError> {
            Err(GssError::FAILURE)
        }
        fn get_mic(&self, _: &[u8]) -> Result<Bytes, GssError> {
            Err(GssError::FAILURE)
        }
        fn verify_mic(&self, _: &[u8], _: &[u8]) -> Result<(), GssError> {
            Err(GssError::FAILURE)
        }
        fn wrap(&self, _: &[u8]) -> Result<Bytes, GssError> {
            Err(GssError::FAILURE)
        }
        fn unwrap(&self, _: &[u8]) -> Result<Bytes, GssError> {
            Err(GssError::FAILURE)
        }
    }

    fn ctx(expires: Instant) -> Context {
        Context::new(Box::new(Held), None, expires, [127, 0, 0, 1].into())
    }

    #[test]
    fn contexts_expire_and_a_full_table_makes_room_only_from_expired_ones() {
        let t0 = Instant::now();
        let table = ContextTable::new(3);
        let short = table.insert(ctx(t0 + Duration::from_secs(1)), t0).unwrap();
        let long: Vec<Handle> = (0..2)
            .map(|_| {
                table
                    .insert(ctx(t0 + Duration::from_secs(100)), t0)
                    .unwrap()
            })
            .collect();
        assert_eq!(table.len(), 3);
        // full, and nothing has expired yet: refused
        assert_eq!(
            table.insert(ctx(t0 + Duration::from_secs(100)), t0),
            Err(TableFull)
        );
        assert!(table.get(&short, t0).is_some());
        // once the short one has expired: it is gone when looked up, and its room is reused
        let later = t0 + Duration::from_secs(2);
        assert!(table.get(&short, later).is_none());
        assert_eq!(table.len(), 2);
        let again = table
            .insert(ctx(t0 + Duration::from_secs(100)), later)
            .unwrap();
        assert_eq!(
            table.insert(ctx(t0 + Duration::from_secs(100)), later),
            Err(TableFull)
        );
        // an insert into a full table sweeps expired contexts it was not asked about
        let much_later = t0 + Duration::from_secs(200);
        assert!(table
            .insert(ctx(much_later + Duration::from_secs(1)), much_later)
            .is_ok());
        assert_eq!(table.len(), 1);
        for h in long.iter().chain([&again]) {
            assert!(table.get(h, much_later).is_none());
        }
        // a destroyed handle stays unknown
        let h = table
            .insert(ctx(much_later + Duration::from_secs(5)), much_later)
            .unwrap();
        assert!(table.remove(&h));
        assert!(!table.remove(&h));
        assert!(table.get(&h, much_later).is_none());
    }
}
