//! The embedded engine: a redb file (an embedded, transactional database that commits with
//! fsync), one redb table per [`Table`].

use std::path::{Path, PathBuf};

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableError};

use crate::{Rows, Store, StoreError, Table};

/// Tables in one redb file.
pub struct Embedded {
    db: Database,
    path: PathBuf,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Embedded({})", self.path.display())
    }
}

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Engine(e.to_string())
}

fn def(t: Table) -> TableDefinition<'static, &'static [u8], &'static [u8]> {
    TableDefinition::new(t.name())
}

impl Embedded {
    /// Opens (or creates) the file at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let db = Database::create(path).map_err(err)?;
        Ok(Self {
            db,
            path: path.to_owned(),
        })
    }

    /// The database itself, for a caller that reads tables an earlier version of rnfsd wrote
    /// with other value types (their migration).
    pub fn database(&self) -> &Database {
        &self.db
    }
}

impl Store for Embedded {
    fn load(&self, table: Table) -> Result<Rows, StoreError> {
        let r = self.db.begin_read().map_err(err)?;
        let t = match r.open_table(def(table)) {
            Ok(t) => t,
            Err(TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(err(e)),
        };
        let mut out = Vec::new();
        for row in t.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            out.push((k.value().to_vec(), v.value().to_vec()));
        }
        Ok(out)
    }

    fn put(&self, table: Table, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(def(table)).map_err(err)?;
            t.insert(key, value).map_err(err)?;
        }
        w.commit().map_err(err)
    }

    fn delete(&self, table: Table, key: &[u8]) -> Result<(), StoreError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(def(table)).map_err(err)?;
            t.remove(key).map_err(err)?;
        }
        w.commit().map_err(err)
    }

    fn update(
        &self,
        table: Table,
        key: &[u8],
        f: &dyn Fn(Option<&[u8]>) -> Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        // one write transaction: redb has one writer at a time
        let w = self.db.begin_write().map_err(err)?;
        let new = {
            let mut t = w.open_table(def(table)).map_err(err)?;
            let old = t.get(key).map_err(err)?.map(|v| v.value().to_vec());
            let new = f(old.as_deref());
            t.insert(key, new.as_slice()).map_err(err)?;
            new
        };
        w.commit().map_err(err)?;
        Ok(new)
    }

    fn describe(&self) -> String {
        format!("embedded database {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance_and_durability() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.redb");
        {
            let s = Embedded::open(&p).unwrap();
            crate::conformance::basic(&s);
            crate::conformance::many(&s);
            crate::conformance::update(&s);
        }
        let s = Embedded::open(&p).unwrap();
        assert_eq!(s.load(Table::new("b")).unwrap().len(), 1);
        assert_eq!(s.load(Table::new("many")).unwrap().len(), 2500);
    }
}
