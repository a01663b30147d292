//! Confirmed client records, so that clients can reclaim their opens and locks after a server
//! crash or on the head that takes over (RFC 8881 section 8.4.2.1: the server must know which
//! clients may reclaim).
//!
//! One row per confirmed client owner (its minor version as the value) in the server's state
//! store (`store::Store`): the embedded database in the state directory, or the etcd cluster
//! the heads share. A record is written before the confirmation is answered and removed when
//! the client's state is destroyed.

use std::path::Path;
use std::sync::Arc;

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
        Self { store }
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

    /// Records a confirmed client (durable when this returns).
    pub fn insert(&self, owner: &[u8], minor: u32) -> Result<(), DbError> {
        self.store.put(CLIENTS, owner, &minor.to_be_bytes())
    }

    /// Forgets a client.
    pub fn remove(&self, owner: &[u8]) -> Result<(), DbError> {
        self.store.delete(CLIENTS, owner)
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
            db.remove(b"a").unwrap();
        }
        let db = ClientDb::open(&p).unwrap();
        assert_eq!(db.load().unwrap(), vec![(b"b".to_vec(), 0)]);
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
