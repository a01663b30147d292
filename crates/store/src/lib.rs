//! Where a server head keeps what must outlive it (NFSv4 client records for reclaim, and in
//! time NLM hosts, grace and the pNFS map): one interface, [`Store`], over two engines.
//!
//! * [`Embedded`]: a redb file in the state directory, the default (one rnfsd, no cluster).
//! * [`Etcd`]: an etcd cluster the heads share (`--cluster etcd://HOST:PORT[,...]`), so that
//!   another head finds the records of a head that died (docs/ha.md).
//!
//! A store holds tables of byte keys and values; a write is durable when it returns (redb
//! commits with fsync; etcd acknowledges a write once a quorum has it). The callers are
//! synchronous: the etcd engine runs its client on a thread of its own and answers through
//! channels, each call bounded by a timeout, so a lost quorum is an error, not a hang.

mod embedded;
mod etcd;
pub mod exports;
pub mod identity;
pub mod testkit;

pub use embedded::Embedded;
pub use etcd::{Etcd, EtcdConfig, EtcdStats};

/// A table of a store: a named set of rows that one kind of record lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Table(&'static str);

impl Table {
    /// A table named `name` (lower-case letters, digits and `_`: a redb table and an etcd key
    /// segment).
    pub const fn new(name: &'static str) -> Self {
        Table(name)
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.0
    }
}

/// Why a store call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The engine failed (a database error, a malformed record).
    #[error("state store: {0}")]
    Engine(String),
    /// The etcd cluster did not answer in time (no quorum, partitioned, stopped).
    #[error("state store unavailable: {0}")]
    Unavailable(String),
    /// Another head holds this head's identity now: its writes are refused (the fencing
    /// token, [`identity::Fence::revision`], no longer names the owner).
    #[error("state store: the identity is held by another head")]
    Fenced,
}

/// Rows of a table.
pub type Rows = Vec<(Vec<u8>, Vec<u8>)>;

/// A counter or id kept as a row's value: eight big-endian bytes (None: any other length).
pub fn u64_of(v: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(v).ok().map(u64::from_be_bytes)
}

/// Durable tables of records; shared by every thread of a server.
pub trait Store: Send + Sync + std::fmt::Debug {
    /// Every row of `table`, in key order.
    fn load(&self, table: Table) -> Result<Rows, StoreError>;
    /// Sets `key` to `value` in `table`; durable when it returns.
    fn put(&self, table: Table, key: &[u8], value: &[u8]) -> Result<(), StoreError>;
    /// Removes `key` from `table` (no error when it is not there); durable when it returns.
    fn delete(&self, table: Table, key: &[u8]) -> Result<(), StoreError>;
    /// Sets `key` to `f` of its current value (None: absent) atomically: no other write to the
    /// row falls between the read and the write (`f` may run more than once). Returns the new
    /// value; durable when it returns.
    fn update(
        &self,
        table: Table,
        key: &[u8],
        f: &dyn Fn(Option<&[u8]>) -> Vec<u8>,
    ) -> Result<Vec<u8>, StoreError>;
    /// What it is, for logs: the file, or the cluster and prefix.
    fn describe(&self) -> String;
}

#[cfg(test)]
pub(crate) mod conformance {
    //! The behaviour every engine must have, run against each.

    use super::*;

    const A: Table = Table::new("a");
    const B: Table = Table::new("b");

    /// Puts, overwrites, deletes and loads, with tables apart and binary keys.
    pub fn basic(s: &dyn Store) {
        assert_eq!(s.load(A).unwrap(), vec![]);
        s.put(A, b"k1", b"v1").unwrap();
        s.put(A, b"k2", b"").unwrap();
        s.put(A, b"k1", b"v1b").unwrap();
        s.put(B, b"k1", b"other table").unwrap();
        let bin: Vec<u8> = (0..=255).collect();
        s.put(A, &bin, &bin).unwrap();
        let rows = s.load(A).unwrap();
        assert_eq!(
            rows,
            vec![
                (bin.clone(), bin.clone()),
                (b"k1".to_vec(), b"v1b".to_vec()),
                (b"k2".to_vec(), b"".to_vec())
            ]
        );
        s.delete(A, b"k1").unwrap();
        s.delete(A, b"never there").unwrap();
        assert_eq!(s.load(A).unwrap().len(), 2);
        assert_eq!(
            s.load(B).unwrap(),
            vec![(b"k1".to_vec(), b"other table".to_vec())]
        );
    }

    /// Read-modify-write from several threads at once loses no update.
    pub fn update(s: &(dyn Store + 'static)) {
        let t = Table::new("counter");
        let bump = |v: Option<&[u8]>| {
            let n = v.map_or(0, |b| u32::from_be_bytes(b.try_into().unwrap()));
            (n + 1).to_be_bytes().to_vec()
        };
        assert_eq!(s.update(t, b"n", &bump).unwrap(), 1u32.to_be_bytes());
        std::thread::scope(|sc| {
            for _ in 0..4 {
                sc.spawn(|| {
                    for _ in 0..10 {
                        s.update(t, b"n", &bump).unwrap();
                    }
                });
            }
        });
        assert_eq!(
            s.load(t).unwrap(),
            vec![(b"n".to_vec(), 41u32.to_be_bytes().to_vec())]
        );
    }

    /// Many rows come back whole (an engine that pages must page right).
    pub fn many(s: &dyn Store) {
        let t = Table::new("many");
        for i in 0..2500u32 {
            s.put(t, &i.to_be_bytes(), &[7u8; 100]).unwrap();
        }
        let rows = s.load(t).unwrap();
        assert_eq!(rows.len(), 2500);
        assert!(rows.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
