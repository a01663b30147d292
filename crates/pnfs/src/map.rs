//! Where each file's data lives, kept durably: one row per file of a pNFS export, keyed by the
//! file's handle on the metadata server, naming its backing file on each mirror's data
//! server and the synthetic owner those files have. A row is written before the data
//! servers are asked to create anything and marked ready after, so that a crash in between
//! leaves a row the reconciler finishes or rolls back, never a DS file nobody knows of.
//! All rows are also kept in memory: the data path asks for them on every I/O.
//!
//! The rows are in the state store (`crates/store`): the embedded database in the state
//! directory, or etcd under the head's identity with `--cluster`, where the head that takes
//! the identity over finds them and goes on serving the files' data from the same copies.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use store::{u64_of, Embedded, Store, StoreError, Table};
use xdr::{Decoder, Encoder};

/// file handle on the MDS -> encoded [`Mapping`]
const FILES: Table = Table::new("pnfs_files");
/// names -> big-endian u64: "instance" (this MDS's id in DS file names), "next_id" (synthetic
/// ids)
const META: Table = Table::new("pnfs_meta");
/// data servers being taken out of service -> when that was asked (big-endian seconds since
/// the epoch)
const DRAINED: Table = Table::new("pnfs_drained");

/// How far a file's placement has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapState {
    /// Recorded; the DS files may or may not exist yet.
    Creating,
    /// Every mirror's file exists.
    Ready,
}

/// One copy of a file's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The data server's name in the configuration.
    pub ds: String,
    /// The file's handle on that DS (empty until created).
    pub fh: Bytes,
    /// A copy that missed writes and must not be read or handed out until resynchronised.
    pub stale: bool,
}

/// Where one file's data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// How far placement has got.
    pub state: MapState,
    /// Name of the backing file on every mirror's data server.
    pub name: Bytes,
    /// Synthetic owner of the backing files: read-write layouts carry it as their user.
    pub uid: u32,
    /// Synthetic group of the backing files, in every layout (read-only layouts carry it with
    /// a user that is not the owner).
    pub gid: u32,
    /// The copies, on distinct data servers.
    pub mirrors: Vec<Mirror>,
}

/// Largest number of mirrors a row may hold (a bound for decoding).
const MAX_MIRRORS: usize = 16;

impl Mapping {
    fn encode(&self) -> Bytes {
        let mut e = Encoder::new();
        e.u32(match self.state {
            MapState::Creating => 0,
            MapState::Ready => 1,
        });
        e.opaque(&self.name);
        e.u32(self.uid);
        e.u32(self.gid);
        e.u32(self.mirrors.len() as u32);
        for m in &self.mirrors {
            e.opaque(m.ds.as_bytes());
            e.opaque(&m.fh);
            e.bool(m.stale);
        }
        e.finish().to_bytes()
    }

    fn decode(b: &[u8]) -> Option<Mapping> {
        let mut d = Decoder::new(Bytes::copy_from_slice(b));
        let state = match d.u32().ok()? {
            0 => MapState::Creating,
            1 => MapState::Ready,
            _ => return None,
        };
        let name = d.opaque(255).ok()?;
        let uid = d.u32().ok()?;
        let gid = d.u32().ok()?;
        let mirrors = d
            .array(MAX_MIRRORS, 12, |d| {
                Ok(Mirror {
                    ds: d.string(64)?,
                    fh: d.opaque(128)?,
                    stale: d.bool()?,
                })
            })
            .ok()?;
        Some(Mapping {
            state,
            name,
            uid,
            gid,
            mirrors,
        })
    }
}

/// A database failure, as text (the caller answers an I/O error and logs it).
#[derive(Debug, thiserror::Error)]
#[error("pNFS map: {0}")]
pub struct MapError(String);

impl From<StoreError> for MapError {
    fn from(e: StoreError) -> Self {
        MapError(e.to_string())
    }
}

/// The durable map (see the module comment).
pub struct FileMap {
    store: Arc<dyn Store>,
    rows: RwLock<HashMap<Bytes, Arc<Mapping>>>,
    instance: u64,
    /// Data servers being taken out of service (see [`FileMap::set_drained`]).
    drained: RwLock<Vec<String>>,
    /// Copies per data server, kept with the rows.
    copies: RwLock<HashMap<String, usize>>,
}

/// Counts the copies of `m` in `counts`, or takes them out.
fn count_copies(counts: &mut HashMap<String, usize>, m: &Mapping, add: bool) {
    for x in &m.mirrors {
        let n = counts.entry(x.ds.clone()).or_default();
        *n = if add { *n + 1 } else { n.saturating_sub(1) };
    }
}

impl FileMap {
    /// Opens (or creates) the map in the embedded database at `path` (an older layout of the
    /// same file is migrated) and loads it.
    pub fn open(path: &Path) -> Result<Self, MapError> {
        let e = Embedded::open(path)?;
        migrate(&e)?;
        Self::on(Arc::new(e))
    }

    /// Loads the map kept in `store`.
    pub fn on(store: Arc<dyn Store>) -> Result<Self, MapError> {
        let fresh = new_instance_id().to_be_bytes();
        let got = store.update(META, b"instance", &|old| match old.and_then(u64_of) {
            Some(i) => i.to_be_bytes().to_vec(),
            None => fresh.to_vec(),
        })?;
        let instance = u64_of(&got).ok_or_else(|| MapError("bad instance id".into()))?;
        let drained = store
            .load(DRAINED)?
            .into_iter()
            .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
            .collect();
        let mut rows = HashMap::new();
        for (k, v) in store.load(FILES)? {
            match Mapping::decode(&v) {
                Some(m) => {
                    rows.insert(Bytes::from(k), Arc::new(m));
                }
                None => tracing::warn!("pNFS map: a row that does not decode is ignored"),
            }
        }
        let mut copies = HashMap::new();
        for m in rows.values() {
            count_copies(&mut copies, m, true);
        }
        Ok(FileMap {
            store,
            rows: RwLock::new(rows),
            instance,
            drained: RwLock::new(drained),
            copies: RwLock::new(copies),
        })
    }

    /// This MDS's id, which the names of its DS files start with.
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// The row of `fh`.
    pub fn get(&self, fh: &[u8]) -> Option<Arc<Mapping>> {
        self.rows.read().get(fh).cloned()
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.read().len()
    }

    /// Whether the map has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.read().is_empty()
    }

    /// Every row.
    pub fn all(&self) -> Vec<(Bytes, Arc<Mapping>)> {
        self.rows
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Writes the row of `fh` (durable when this returns).
    pub fn put(&self, fh: &Bytes, m: Mapping) -> Result<Arc<Mapping>, MapError> {
        self.store.put(FILES, fh, &m.encode())?;
        let m = Arc::new(m);
        let old = self.rows.write().insert(fh.clone(), m.clone());
        let mut c = self.copies.write();
        if let Some(old) = old {
            count_copies(&mut c, &old, false);
        }
        count_copies(&mut c, &m, true);
        Ok(m)
    }

    /// Forgets the row of `fh`.
    pub fn remove(&self, fh: &[u8]) -> Result<(), MapError> {
        self.store.delete(FILES, fh)?;
        if let Some(old) = self.rows.write().remove(fh) {
            count_copies(&mut self.copies.write(), &old, false);
        }
        Ok(())
    }

    /// How many files have a copy on data server `ds`.
    pub fn copies_on(&self, ds: &str) -> usize {
        self.copies.read().get(ds).copied().unwrap_or(0)
    }

    /// The data servers being taken out of service.
    pub fn drained(&self) -> Vec<String> {
        self.drained.read().clone()
    }

    /// Whether data server `ds` is being taken out of service.
    pub fn is_drained(&self, ds: &str) -> bool {
        self.drained.read().iter().any(|d| d == ds)
    }

    /// Records (durably) that data server `ds` is being taken out of service, or no longer.
    pub fn set_drained(&self, ds: &str, on: bool) -> Result<(), MapError> {
        if on {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            self.store.put(DRAINED, ds.as_bytes(), &now.to_be_bytes())?;
        } else {
            self.store.delete(DRAINED, ds.as_bytes())?;
        }
        let mut d = self.drained.write();
        d.retain(|x| x != ds);
        if on {
            d.push(ds.to_string());
        }
        Ok(())
    }

    /// `n` consecutive synthetic ids, from `range`, wrapping around (durable when this
    /// returns, so no id is handed out twice across restarts or heads before the range
    /// wraps).
    pub fn take_ids(&self, range: &std::ops::RangeInclusive<u32>, n: u32) -> Result<u32, MapError> {
        let (lo, hi) = (u64::from(*range.start()), u64::from(*range.end()));
        let first = |next: u64| {
            if next < lo || next + u64::from(n) > hi + 1 {
                lo
            } else {
                next
            }
        };
        let got = self.store.update(META, b"next_id", &|old| {
            let next = old.and_then(u64_of).unwrap_or(lo);
            (first(next) + u64::from(n)).to_be_bytes().to_vec()
        })?;
        let after = u64_of(&got).ok_or_else(|| MapError("bad next id".into()))?;
        Ok((after - u64::from(n)) as u32)
    }
}

/// Moves the rows of the map's first layout (tables "files", "meta" and "drained" of its own
/// redb file) into the store's tables, in one transaction.
fn migrate(e: &Embedded) -> Result<(), MapError> {
    use redb::{ReadableDatabase, ReadableTable, TableDefinition, TableError};
    const OLD_FILES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("files");
    const OLD_META: TableDefinition<&str, u64> = TableDefinition::new("meta");
    const OLD_DRAINED: TableDefinition<&str, u64> = TableDefinition::new("drained");
    let err = |x: &dyn std::fmt::Display| MapError(x.to_string());
    type Rows = Vec<(Vec<u8>, Vec<u8>)>;
    let (files, meta, drained): (Rows, Rows, Rows) = {
        let r = e.database().begin_read().map_err(|x| err(&x))?;
        let files = match r.open_table(OLD_FILES) {
            Ok(t) => t
                .iter()
                .map_err(|x| err(&x))?
                .map(|row| row.map(|(k, v)| (k.value().to_vec(), v.value().to_vec())))
                .collect::<Result<_, _>>()
                .map_err(|x| err(&x))?,
            Err(TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(x) => return Err(err(&x)),
        };
        let named = |t: TableDefinition<&str, u64>| -> Result<Rows, MapError> {
            match r.open_table(t) {
                Ok(t) => t
                    .iter()
                    .map_err(|x| err(&x))?
                    .map(|row| {
                        row.map(|(k, v)| {
                            (
                                k.value().as_bytes().to_vec(),
                                v.value().to_be_bytes().to_vec(),
                            )
                        })
                    })
                    .collect::<Result<_, _>>()
                    .map_err(|x| err(&x)),
                Err(TableError::TableDoesNotExist(_)) => Ok(Vec::new()),
                Err(x) => Err(err(&x)),
            }
        };
        (files, named(OLD_META)?, named(OLD_DRAINED)?)
    };
    let w = e.database().begin_write().map_err(|x| err(&x))?;
    for (table, rows) in [(FILES, &files), (META, &meta), (DRAINED, &drained)] {
        let new: TableDefinition<&[u8], &[u8]> = TableDefinition::new(table.name());
        let mut t = w.open_table(new).map_err(|x| err(&x))?;
        for (k, v) in rows.iter() {
            t.insert(k.as_slice(), v.as_slice()).map_err(|x| err(&x))?;
        }
    }
    w.delete_table(OLD_FILES).map_err(|x| err(&x))?;
    w.delete_table(OLD_META).map_err(|x| err(&x))?;
    w.delete_table(OLD_DRAINED).map_err(|x| err(&x))?;
    w.commit().map_err(|x| err(&x))?;
    tracing::info!(
        files = files.len(),
        "pNFS map moved to the state store's tables"
    );
    Ok(())
}

/// A new MDS instance id, different across installations.
fn new_instance_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(state: MapState) -> Mapping {
        Mapping {
            state,
            name: Bytes::from_static(b"0123.abcd"),
            uid: 0x4000_0000,
            gid: 0x4000_0000,
            mirrors: vec![
                Mirror {
                    ds: "a".into(),
                    fh: Bytes::from_static(&[1, 2, 3]),
                    stale: false,
                },
                Mirror {
                    ds: "b".into(),
                    fh: Bytes::new(),
                    stale: true,
                },
            ],
        }
    }

    #[test]
    fn drained_servers_and_copy_counts_survive_a_reopen() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pnfs.redb");
        {
            let m = FileMap::open(&p).unwrap();
            m.put(&Bytes::from_static(b"fh1"), row(MapState::Ready))
                .unwrap();
            m.put(&Bytes::from_static(b"fh2"), row(MapState::Ready))
                .unwrap();
            let mut one = row(MapState::Ready);
            one.mirrors.pop();
            // a row written again counts its copies once
            m.put(&Bytes::from_static(b"fh2"), one).unwrap();
            assert_eq!((m.copies_on("a"), m.copies_on("b")), (2, 1));
            m.set_drained("b", true).unwrap();
            m.set_drained("a", true).unwrap();
            m.set_drained("a", false).unwrap();
            assert!(m.is_drained("b") && !m.is_drained("a"));
        }
        let m = FileMap::open(&p).unwrap();
        assert_eq!(m.drained(), vec!["b".to_string()]);
        assert_eq!((m.copies_on("a"), m.copies_on("b")), (2, 1));
        m.remove(b"fh1").unwrap();
        assert_eq!(
            (m.copies_on("a"), m.copies_on("b"), m.copies_on("c")),
            (1, 0, 0)
        );
    }

    #[test]
    fn rows_and_ids_survive_a_reopen() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pnfs.redb");
        let ids = 10..=15;
        let instance;
        {
            let m = FileMap::open(&p).unwrap();
            instance = m.instance();
            m.put(&Bytes::from_static(b"fh1"), row(MapState::Ready))
                .unwrap();
            m.put(&Bytes::from_static(b"fh2"), row(MapState::Creating))
                .unwrap();
            m.remove(b"fh2").unwrap();
            assert_eq!(m.take_ids(&ids, 2).unwrap(), 10);
            assert_eq!(m.take_ids(&ids, 2).unwrap(), 12);
        }
        let m = FileMap::open(&p).unwrap();
        assert_eq!(m.instance(), instance);
        assert_eq!(m.get(b"fh1").as_deref(), Some(&row(MapState::Ready)));
        assert!(m.get(b"fh2").is_none());
        assert_eq!(m.all().len(), 1);
        // 14, 15 fit; then the range wraps
        assert_eq!(m.take_ids(&ids, 2).unwrap(), 14);
        assert_eq!(m.take_ids(&ids, 2).unwrap(), 10);
    }

    #[test]
    fn a_map_of_the_first_layout_is_moved_into_the_store_tables() {
        use redb::{Database, TableDefinition};
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("pnfs.redb");
        {
            // as rnfsd wrote the map before the state store
            let db = Database::create(&p).unwrap();
            let w = db.begin_write().unwrap();
            {
                let files: TableDefinition<&[u8], &[u8]> = TableDefinition::new("files");
                let meta: TableDefinition<&str, u64> = TableDefinition::new("meta");
                let drained: TableDefinition<&str, u64> = TableDefinition::new("drained");
                let mut t = w.open_table(files).unwrap();
                t.insert(b"fh1".as_slice(), row(MapState::Ready).encode().as_ref())
                    .unwrap();
                let mut t = w.open_table(meta).unwrap();
                t.insert("instance", 0x1234).unwrap();
                t.insert("next_id", 12).unwrap();
                let mut t = w.open_table(drained).unwrap();
                t.insert("b", 99).unwrap();
            }
            w.commit().unwrap();
        }
        for _ in 0..2 {
            // and again: nothing left to move
            let m = FileMap::open(&p).unwrap();
            assert_eq!(m.instance(), 0x1234);
            assert_eq!(m.get(b"fh1").as_deref(), Some(&row(MapState::Ready)));
            assert_eq!(m.drained(), vec!["b".to_string()]);
            assert_eq!(m.copies_on("a"), 1);
        }
        let m = FileMap::open(&p).unwrap();
        assert_eq!(m.take_ids(&(10..=20), 2).unwrap(), 12);
    }

    #[test]
    fn a_row_decodes_to_itself_and_garbage_does_not_decode() {
        let r = row(MapState::Creating);
        assert_eq!(Mapping::decode(&r.encode()), Some(r));
        assert_eq!(Mapping::decode(&[0, 0, 0, 7]), None);
        assert_eq!(Mapping::decode(&[]), None);
    }
}
