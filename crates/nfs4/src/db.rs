//! Confirmed client records on disk, so that clients can reclaim their opens and locks after a
//! server crash (RFC 8881 section 8.4.2.1: the server must know which clients may reclaim).
//!
//! An embedded, transactional database (redb) holds one row per confirmed client owner; a
//! record is written before the confirmation is answered and removed when the client's state
//! is destroyed.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

const CLIENTS: TableDefinition<&[u8], u32> = TableDefinition::new("clients");

/// The on-disk client table.
pub struct ClientDb {
    db: Database,
}

impl std::fmt::Debug for ClientDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientDb")
    }
}

/// A database failure, reported as text (the caller logs it; state stays in memory).
#[derive(Debug, thiserror::Error)]
#[error("client database: {0}")]
pub struct DbError(String);

fn err(e: impl std::fmt::Display) -> DbError {
    DbError(e.to_string())
}

impl ClientDb {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let db = Database::create(path).map_err(err)?;
        let w = db.begin_write().map_err(err)?;
        w.open_table(CLIENTS).map_err(err)?;
        w.commit().map_err(err)?;
        Ok(Self { db })
    }

    /// Client owners recorded by earlier server instances, with their minor versions.
    pub fn load(&self) -> Result<Vec<(Vec<u8>, u32)>, DbError> {
        let r = self.db.begin_read().map_err(err)?;
        let t = r.open_table(CLIENTS).map_err(err)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            out.push((k.value().to_vec(), v.value()));
        }
        Ok(out)
    }

    /// Records a confirmed client (durable when this returns).
    pub fn insert(&self, owner: &[u8], minor: u32) -> Result<(), DbError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(CLIENTS).map_err(err)?;
            t.insert(owner, minor).map_err(err)?;
        }
        w.commit().map_err(err)
    }

    /// Forgets a client.
    pub fn remove(&self, owner: &[u8]) -> Result<(), DbError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(CLIENTS).map_err(err)?;
            t.remove(owner).map_err(err)?;
        }
        w.commit().map_err(err)
    }
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
}
