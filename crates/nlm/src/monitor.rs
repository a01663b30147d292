//! What must outlive a crash for NFSv3 locks to be reclaimed (the status monitor's records):
//! this server's NSM state number, odd while up and moved on by two at every start, and the
//! hosts that held locks, so that each is told of the restart (SM_NOTIFY) and reclaims.
//!
//! Hosts are rows of an embedded transactional database (redb, as NFSv4's client records):
//! written, durably, before a host's first lock is granted; removed when the host has held
//! nothing for a while.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

/// Key: the host's address and the server address it called (`-` when unknown), separated by
/// a space (the server address is the name this server goes by in the notification the host
/// gets); value: its `caller_name`.
const HOSTS: TableDefinition<&str, &[u8]> = TableDefinition::new("hosts");

fn key(addr: IpAddr, server: Option<IpAddr>) -> String {
    match server {
        Some(s) => format!("{addr} {s}"),
        None => format!("{addr} -"),
    }
}
const META: TableDefinition<&str, u32> = TableDefinition::new("meta");

/// A database failure, reported as text (the caller logs it).
#[derive(Debug, thiserror::Error)]
#[error("NLM host database: {0}")]
pub struct DbError(String);

fn err(e: impl std::fmt::Display) -> DbError {
    DbError(e.to_string())
}

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

/// The on-disk records.
pub struct MonitorDb {
    db: Database,
}

impl std::fmt::Debug for MonitorDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MonitorDb")
    }
}

impl MonitorDb {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        let db = Database::create(path).map_err(err)?;
        let w = db.begin_write().map_err(err)?;
        w.open_table(HOSTS).map_err(err)?;
        w.open_table(META).map_err(err)?;
        w.commit().map_err(err)?;
        Ok(MonitorDb { db })
    }

    /// Moves the state number on for a new start and returns it: odd (up), two past the last
    /// start's, 1 on a first start.
    pub fn next_state(&self) -> Result<u32, DbError> {
        let w = self.db.begin_write().map_err(err)?;
        let n = {
            let mut t = w.open_table(META).map_err(err)?;
            let last = t.get("state").map_err(err)?.map(|v| v.value());
            let n = match last {
                None => 1,
                Some(s) if s % 2 == 0 => s.wrapping_add(1),
                Some(s) => s.wrapping_add(2),
            };
            t.insert("state", n).map_err(err)?;
            n
        };
        w.commit().map_err(err)?;
        Ok(n)
    }

    /// The hosts recorded.
    pub fn hosts(&self) -> Result<Vec<HostRecord>, DbError> {
        let r = self.db.begin_read().map_err(err)?;
        let t = r.open_table(HOSTS).map_err(err)?;
        let mut out = Vec::new();
        for row in t.iter().map_err(err)? {
            let (k, v) = row.map_err(err)?;
            let k = k.value();
            let (addr, server) = k.split_once(' ').unwrap_or((k, "-"));
            let Ok(addr) = addr.parse::<IpAddr>() else {
                continue;
            };
            out.push(HostRecord {
                addr,
                name: String::from_utf8_lossy(v.value()).into_owned(),
                server: server.parse().ok(),
            });
        }
        Ok(out)
    }

    /// Records a host (durable when this returns).
    pub fn insert(&self, h: &HostRecord) -> Result<(), DbError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(HOSTS).map_err(err)?;
            t.insert(key(h.addr, h.server).as_str(), h.name.as_bytes())
                .map_err(err)?;
        }
        w.commit().map_err(err)
    }

    /// Forgets the host at `addr` that called `server`.
    pub fn remove(&self, addr: IpAddr, server: Option<IpAddr>) -> Result<(), DbError> {
        let w = self.db.begin_write().map_err(err)?;
        {
            let mut t = w.open_table(HOSTS).map_err(err)?;
            t.remove(key(addr, server).as_str()).map_err(err)?;
        }
        w.commit().map_err(err)
    }
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
}
