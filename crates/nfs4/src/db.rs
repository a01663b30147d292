//! Confirmed client records, so that clients can reclaim their opens and locks after a server
//! crash or on the head that takes over (RFC 8881 section 8.4.2.1: the server must know which
//! clients may reclaim).
//!
//! One row per confirmed client owner (its minor version as the value) in the server's state
//! store (`store::Store`): the embedded database in the state directory, or the etcd cluster
//! the heads share. A record is written before the confirmation is answered and removed when
//! the client's state is destroyed.
//!
//! Removals are asked for under the state lock (a client expires, grace ends) and made by a
//! thread of their own: a store write there (an etcd round trip, a slow disk) would hold up
//! every call that needs the state. Record writes are serialized, and an insert cancels a
//! removal of its owner still queued, so a client that confirms again is never forgotten by
//! an older removal.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};

use store::{Embedded, Store, StoreError, Table};

/// The table of client records.
const CLIENTS: Table = Table::new("nfs4_clients");

/// The client table of rnfsd before the state store (the minor version as a redb u32), moved
/// into [`CLIENTS`] when an old state directory is opened.
const LEGACY: redb::TableDefinition<&[u8], u32> = redb::TableDefinition::new("clients");

/// The client records (a handle on the store: clones share it).
#[derive(Clone)]
pub struct ClientDb {
    store: Arc<dyn Store>,
    removals: Arc<Removals>,
}

/// Removals waiting for the removal thread, and the lock that serializes record writes.
#[derive(Default)]
struct Removals {
    /// Owners whose records are to go; `busy`: the thread is removing one.
    queue: Mutex<Queue>,
    /// Signalled when an owner is queued and when the queue empties.
    changed: Condvar,
    /// Held across each store write of a record (insert or removal), never with the state lock.
    writes: Mutex<()>,
}

#[derive(Default)]
struct Queue {
    owners: HashSet<Bytes>,
    busy: bool,
    thread: bool,
}

impl std::fmt::Debug for ClientDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ClientDb({})", self.store.describe())
    }
}

/// A store failure (the caller logs it; state stays in memory).
pub type DbError = StoreError;

impl ClientDb {
    /// The embedded database at `path` (created if missing; an older layout is migrated).
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let e = Embedded::open(path)?;
        migrate(&e)?;
        Ok(Self::on(Arc::new(e)))
    }

    /// The records in `store`.
    pub fn on(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            removals: Arc::default(),
        }
    }

    /// Client owners recorded by earlier server instances, with their minor versions. A
    /// malformed record is left out with a warning: that client cannot reclaim (it starts
    /// afresh, as one the server never knew), and every other client still can.
    pub fn load(&self) -> Result<Vec<(Vec<u8>, u32)>, DbError> {
        Ok(self
            .store
            .load(CLIENTS)?
            .into_iter()
            .filter_map(|(owner, v)| match <[u8; 4]>::try_from(v.as_slice()) {
                Ok(m) => Some((owner, u32::from_be_bytes(m))),
                Err(_) => {
                    tracing::warn!(
                        owner = %String::from_utf8_lossy(&owner),
                        len = v.len(),
                        "malformed client record: skipped (that client cannot reclaim)"
                    );
                    None
                }
            })
            .collect())
    }

    /// Records a confirmed client (durable when this returns); a removal of its owner still
    /// queued is dropped.
    pub fn insert(&self, owner: &[u8], minor: u32) -> Result<(), DbError> {
        let _w = self.removals.writes.lock();
        self.removals.queue.lock().owners.remove(owner);
        self.store.put(CLIENTS, owner, &minor.to_be_bytes())
    }

    /// Forgets a client: queues the removal of its record (no store write on this thread,
    /// which may hold the state lock).
    pub fn remove_later(&self, owner: &Bytes) {
        let mut q = self.removals.queue.lock();
        q.owners.insert(owner.clone());
        if !q.thread {
            // the thread holds the store weakly: it ends once the records are dropped
            let (store, r) = (Arc::downgrade(&self.store), self.removals.clone());
            let spawned = std::thread::Builder::new()
                .name("nfs4-records".into())
                .spawn(move || remove_queued(store, r));
            match spawned {
                Ok(_) => q.thread = true,
                // tried again at the next removal; meanwhile the record stays (its client
                // may try to reclaim after a restart, and is refused then)
                Err(e) => tracing::warn!(error = %e, "client record removal thread not started"),
            }
        }
        self.removals.changed.notify_all();
    }

    /// Waits until every queued removal is made.
    pub fn settle(&self) {
        let mut q = self.removals.queue.lock();
        while (!q.owners.is_empty() && q.thread) || q.busy {
            self.removals.changed.wait(&mut q);
        }
    }
}

/// The removal thread: takes queued owners one at a time and removes their records from
/// `store`, until the store is dropped.
fn remove_queued(store: std::sync::Weak<dyn Store>, r: Arc<Removals>) {
    loop {
        // idle without the write lock: inserts go on meanwhile
        {
            let mut q = r.queue.lock();
            q.busy = false;
            r.changed.notify_all();
            while q.owners.is_empty() {
                if store.strong_count() == 0 {
                    q.thread = false;
                    return;
                }
                r.changed
                    .wait_for(&mut q, std::time::Duration::from_secs(1));
            }
        }
        let Some(store) = store.upgrade() else {
            r.queue.lock().thread = false;
            return;
        };
        let _w = r.writes.lock();
        let owner = {
            let mut q = r.queue.lock();
            // an insert may have taken it back meanwhile
            let Some(o) = q.owners.iter().next().cloned() else {
                continue;
            };
            q.owners.remove(&o);
            q.busy = true;
            o
        };
        if let Err(e) = store.delete(CLIENTS, &owner) {
            tracing::warn!(error = %e, "client record removal failed");
        }
    }
}

/// Moves the rows of the legacy table into the store's table, in one transaction.
fn migrate(e: &Embedded) -> Result<(), DbError> {
    use redb::{ReadableDatabase, ReadableTable};
    let err = |e: &dyn std::fmt::Display| StoreError::Engine(e.to_string());
    let rows: Vec<(Vec<u8>, u32)> = {
        let r = e.database().begin_read().map_err(|x| err(&x))?;
        match r.open_table(LEGACY) {
            Ok(t) => t
                .iter()
                .map_err(|x| err(&x))?
                .map(|row| row.map(|(k, v)| (k.value().to_vec(), v.value())))
                .collect::<Result<_, _>>()
                .map_err(|x| err(&x))?,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(x) => return Err(err(&x)),
        }
    };
    let w = e.database().begin_write().map_err(|x| err(&x))?;
    {
        let new: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new(CLIENTS.name());
        let mut t = w.open_table(new).map_err(|x| err(&x))?;
        for (owner, minor) in &rows {
            t.insert(owner.as_slice(), minor.to_be_bytes().as_slice())
                .map_err(|x| err(&x))?;
        }
    }
    w.delete_table(LEGACY).map_err(|x| err(&x))?;
    w.commit().map_err(|x| err(&x))?;
    tracing::info!(
        clients = rows.len(),
        "client records moved to the state store's table"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persists_across_opens() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.redb");
        {
            let db = ClientDb::open(&p).unwrap();
            db.insert(b"a", 1).unwrap();
            db.insert(b"b", 0).unwrap();
            db.remove_later(&Bytes::from_static(b"a"));
            db.settle();
        }
        let db = ClientDb::open(&p).unwrap();
        assert_eq!(db.load().unwrap(), vec![(b"b".to_vec(), 0)]);
    }

    /// A store whose deletes take `delay`, counting them.
    #[derive(Debug)]
    struct SlowDeletes {
        inner: Embedded,
        delay: std::time::Duration,
        deletes: std::sync::atomic::AtomicUsize,
    }

    impl Store for SlowDeletes {
        fn load(&self, t: Table) -> Result<store::Rows, StoreError> {
            self.inner.load(t)
        }
        fn put(&self, t: Table, k: &[u8], v: &[u8]) -> Result<(), StoreError> {
            self.inner.put(t, k, v)
        }
        fn delete(&self, t: Table, k: &[u8]) -> Result<(), StoreError> {
            std::thread::sleep(self.delay);
            self.deletes
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.delete(t, k)
        }
        fn update(
            &self,
            t: Table,
            k: &[u8],
            f: &dyn Fn(Option<&[u8]>) -> Vec<u8>,
        ) -> Result<Vec<u8>, StoreError> {
            self.inner.update(t, k, f)
        }
        fn describe(&self) -> String {
            "slow deletes".into()
        }
    }

    #[test]
    fn removals_wait_for_no_store_write_and_never_undo_a_later_insert() {
        let d = tempfile::tempdir().unwrap();
        let slow = Arc::new(SlowDeletes {
            inner: Embedded::open(&d.path().join("s.redb")).unwrap(),
            delay: std::time::Duration::from_millis(300),
            deletes: Default::default(),
        });
        let db = ClientDb::on(slow.clone());
        for o in [&b"gone"[..], b"back", b"kept"] {
            db.insert(o, 1).unwrap();
        }
        // asking costs no store write (the state lock is held meanwhile)
        let t = std::time::Instant::now();
        db.remove_later(&Bytes::from_static(b"gone"));
        db.remove_later(&Bytes::from_static(b"back"));
        assert!(t.elapsed() < std::time::Duration::from_millis(100));
        // "back" confirms again before its removal is made, or while "gone"'s is made
        db.insert(b"back", 2).unwrap();
        db.settle();
        assert_eq!(
            db.load().unwrap(),
            vec![(b"back".to_vec(), 2), (b"kept".to_vec(), 1)]
        );
        assert!(slow.deletes.load(std::sync::atomic::Ordering::SeqCst) <= 2);
        // a removal asked for after the insert is made
        db.remove_later(&Bytes::from_static(b"back"));
        db.settle();
        assert_eq!(db.load().unwrap(), vec![(b"kept".to_vec(), 1)]);
    }

    #[test]
    fn a_malformed_record_is_skipped_and_the_others_load() {
        let d = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(Embedded::open(&d.path().join("s.redb")).unwrap());
        let db = ClientDb::on(store.clone());
        db.insert(b"good", 1).unwrap();
        // damaged: three bytes where a minor version's four belong
        store.put(CLIENTS, b"bad", b"\x00\x00\x01").unwrap();
        assert_eq!(db.load().unwrap(), vec![(b"good".to_vec(), 1)]);
    }

    #[test]
    fn an_older_state_directorys_records_are_kept() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("c.redb");
        {
            // as rnfsd wrote them before the state store
            let db = redb::Database::create(&p).unwrap();
            let w = db.begin_write().unwrap();
            {
                let mut t = w.open_table(LEGACY).unwrap();
                t.insert(b"old-client".as_slice(), 1).unwrap();
                t.insert(b"v40-client".as_slice(), 0).unwrap();
            }
            w.commit().unwrap();
        }
        let db = ClientDb::open(&p).unwrap();
        assert_eq!(
            db.load().unwrap(),
            vec![(b"old-client".to_vec(), 1), (b"v40-client".to_vec(), 0)]
        );
        drop(db);
        // migrated once: opening again finds them in the new table only
        let db = ClientDb::open(&p).unwrap();
        assert_eq!(db.load().unwrap().len(), 2);
    }
}
