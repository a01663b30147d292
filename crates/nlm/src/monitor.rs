//! What must outlive a crash for NFSv3 locks to be reclaimed (the status monitor's records):
//! this server's NSM state number, odd while up and moved on by two at every start, and the
//! hosts that held locks, so that each is told of the restart (SM_NOTIFY) and reclaims.
//!
//! Hosts and the state number are rows of the server's state store (`store::Store`, as
//! NFSv4's client records): the embedded database in the state directory, or the etcd cluster
//! the heads share. A host is written, durably, before its first lock is granted, and removed
//! when it has held nothing for a while.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use store::{Embedded, Store, StoreError, Table};

/// Key: the host's address and the server address it called (`-` when unknown), separated by
/// a space (the server address is the name this server goes by in the notification the host
/// gets); value: its `caller_name`.
const HOSTS: Table = Table::new("nlm_hosts");
/// Key `state`: the NSM state number (big-endian u32).
const META: Table = Table::new("nlm_meta");

/// The tables of rnfsd before the state store, moved into [`HOSTS`] and [`META`] when an old
/// state directory is opened.
const LEGACY_HOSTS: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("hosts");
const LEGACY_META: redb::TableDefinition<&str, u32> = redb::TableDefinition::new("meta");

fn key(addr: IpAddr, server: Option<IpAddr>) -> String {
    match server {
        Some(s) => format!("{addr} {s}"),
        None => format!("{addr} -"),
    }
}

/// A store failure (the caller logs it).
pub type DbError = StoreError;

/// A host recorded as holding locks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRecord {
    /// The host's address.
    pub addr: IpAddr,
    /// The name its lock manager calls itself (`caller_name`).
    pub name: String,
    /// The server address it called, when known.
    pub server: Option<IpAddr>,
}

/// The status monitor's records.
pub struct MonitorDb {
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for MonitorDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MonitorDb({})", self.store.describe())
    }
}

impl MonitorDb {
    /// The embedded database at `path` (created if missing; an older layout is migrated).
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let e = Embedded::open(path)?;
        migrate(&e)?;
        Ok(Self::on(Arc::new(e)))
    }

    /// The records in `store`.
    pub fn on(store: Arc<dyn Store>) -> Self {
        MonitorDb { store }
    }

    /// Moves the state number on for a new start and returns it: odd (up), two past the last
    /// start's, 1 on a first start (one atomic update: two heads starting at once get
    /// different numbers).
    pub fn next_state(&self) -> Result<u32, DbError> {
        let v = self.store.update(META, b"state", &|old| {
            let last = old
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_be_bytes);
            let n = match last {
                None => 1,
                Some(s) if s % 2 == 0 => s.wrapping_add(1),
                Some(s) => s.wrapping_add(2),
            };
            n.to_be_bytes().to_vec()
        })?;
        <[u8; 4]>::try_from(v.as_slice())
            .map(u32::from_be_bytes)
            .map_err(|_| StoreError::Engine("malformed state number".into()))
    }

    /// The hosts recorded.
    pub fn hosts(&self) -> Result<Vec<HostRecord>, DbError> {
        let mut out = Vec::new();
        for (k, v) in self.store.load(HOSTS)? {
            let k = String::from_utf8_lossy(&k);
            let (addr, server) = k.split_once(' ').unwrap_or((&k, "-"));
            let Ok(addr) = addr.parse::<IpAddr>() else {
                continue;
            };
            out.push(HostRecord {
                addr,
                name: String::from_utf8_lossy(&v).into_owned(),
                server: server.parse().ok(),
            });
        }
        Ok(out)
    }

    /// Records a host (durable when this returns).
    pub fn insert(&self, h: &HostRecord) -> Result<(), DbError> {
        self.store
            .put(HOSTS, key(h.addr, h.server).as_bytes(), h.name.as_bytes())
    }

    /// Forgets the host at `addr` that called `server`.
    pub fn remove(&self, addr: IpAddr, server: Option<IpAddr>) -> Result<(), DbError> {
        self.store.delete(HOSTS, key(addr, server).as_bytes())
    }
}

/// Moves the rows of the legacy tables into the store's tables, in one transaction.
fn migrate(e: &Embedded) -> Result<(), DbError> {
    use redb::{ReadableDatabase, ReadableTable, TableError};
    let err = |x: &dyn std::fmt::Display| StoreError::Engine(x.to_string());
    let r = e.database().begin_read().map_err(|x| err(&x))?;
    let hosts: Vec<(String, Vec<u8>)> = match r.open_table(LEGACY_HOSTS) {
        Ok(t) => t
            .iter()
            .map_err(|x| err(&x))?
            .map(|row| row.map(|(k, v)| (k.value().to_owned(), v.value().to_vec())))
            .collect::<Result<_, _>>()
            .map_err(|x| err(&x))?,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(x) => return Err(err(&x)),
    };
    let state = match r.open_table(LEGACY_META) {
        Ok(t) => t.get("state").map_err(|x| err(&x))?.map(|v| v.value()),
        Err(TableError::TableDoesNotExist(_)) => None,
        Err(x) => return Err(err(&x)),
    };
    drop(r);
    let w = e.database().begin_write().map_err(|x| err(&x))?;
    {
        let def = |t: Table| redb::TableDefinition::<&[u8], &[u8]>::new(t.name());
        let mut t = w.open_table(def(HOSTS)).map_err(|x| err(&x))?;
        for (k, v) in &hosts {
            t.insert(k.as_bytes(), v.as_slice()).map_err(|x| err(&x))?;
        }
        if let Some(n) = state {
            let mut m = w.open_table(def(META)).map_err(|x| err(&x))?;
            m.insert(b"state".as_slice(), n.to_be_bytes().as_slice())
                .map_err(|x| err(&x))?;
        }
    }
    w.delete_table(LEGACY_HOSTS).map_err(|x| err(&x))?;
    w.delete_table(LEGACY_META).map_err(|x| err(&x))?;
    w.commit().map_err(|x| err(&x))?;
    tracing::info!(
        hosts = hosts.len(),
        "NLM host records moved to the state store's tables"
    );
    Ok(())
}

/// The address a call came to, as an IP (for the record of which name this server has).
pub fn server_ip(local: Option<SocketAddr>) -> Option<IpAddr> {
    local.map(|a| a.ip()).filter(|ip| !ip.is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_numbers_stay_odd_and_hosts_persist() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("nlm.redb");
        {
            let db = MonitorDb::open(&p).unwrap();
            assert_eq!(db.next_state().unwrap(), 1);
            assert_eq!(db.next_state().unwrap(), 3);
            db.insert(&HostRecord {
                addr: "10.0.0.2".parse().unwrap(),
                name: "client-a".into(),
                server: Some("10.0.0.1".parse().unwrap()),
            })
            .unwrap();
            db.insert(&HostRecord {
                addr: "10.0.0.3".parse().unwrap(),
                name: "client-b".into(),
                server: None,
            })
            .unwrap();
            db.remove("10.0.0.3".parse().unwrap(), None).unwrap();
        }
        let db = MonitorDb::open(&p).unwrap();
        assert_eq!(db.next_state().unwrap(), 5);
        assert_eq!(
            db.hosts().unwrap(),
            vec![HostRecord {
                addr: "10.0.0.2".parse().unwrap(),
                name: "client-a".into(),
                server: Some("10.0.0.1".parse().unwrap()),
            }]
        );
    }

    #[test]
    fn an_older_state_directorys_hosts_and_state_number_are_kept() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("nlm.redb");
        {
            let db = redb::Database::create(&p).unwrap();
            let w = db.begin_write().unwrap();
            {
                let mut t = w.open_table(LEGACY_HOSTS).unwrap();
                t.insert("10.0.0.9 10.0.0.1", b"old-host".as_slice())
                    .unwrap();
                let mut m = w.open_table(LEGACY_META).unwrap();
                m.insert("state", 7).unwrap();
            }
            w.commit().unwrap();
        }
        let db = MonitorDb::open(&p).unwrap();
        assert_eq!(db.next_state().unwrap(), 9);
        assert_eq!(
            db.hosts().unwrap(),
            vec![HostRecord {
                addr: "10.0.0.9".parse().unwrap(),
                name: "old-host".into(),
                server: Some("10.0.0.1".parse().unwrap()),
            }]
        );
    }
}
