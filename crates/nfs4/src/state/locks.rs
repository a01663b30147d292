//! Byte-range locks by file, with POSIX merging and splitting of an owner's ranges.

use bytes::Bytes;

use super::{ClientId, FileKey, IdMap};

/// One byte-range lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// Holder: client and lock-owner.
    pub client: u64,
    /// Lock-owner.
    pub owner: Bytes,
    /// First byte.
    pub start: u64,
    /// One past the last byte (u64::MAX for "to end of file").
    pub end: u64,
    /// Exclusive (write) lock.
    pub write: bool,
}

/// Whether two byte ranges [a0,a1) and [b0,b1) overlap.
fn overlaps(a0: u64, a1: u64, b0: u64, b1: u64) -> bool {
    a0 < b1 && b0 < a1
}

/// The locks of every file.
#[derive(Debug, Default)]
pub struct Locks {
    map: IdMap<FileKey, Vec<Lock>>,
}

impl Locks {
    /// The first lock of another owner conflicting with the range, if any.
    pub fn conflict(
        &self,
        file: FileKey,
        client: u64,
        owner: &Bytes,
        start: u64,
        end: u64,
        write: bool,
    ) -> Option<Lock> {
        self.map
            .get(&file)?
            .iter()
            .find(|l| {
                !(l.client == client && l.owner == *owner)
                    && overlaps(l.start, l.end, start, end)
                    && (write || l.write)
            })
            .cloned()
    }

    /// Adds a lock, merging with the owner's own locks (POSIX semantics: the new type wins
    /// over the range).
    pub fn add(&mut self, file: FileKey, lock: Lock) {
        self.remove_range(file, lock.client, &lock.owner, lock.start, lock.end);
        let v = self.map.entry(file).or_default();
        // Merge with the owner's adjacent locks of the same type.
        let mut merged = lock;
        v.retain(|l| {
            let same =
                l.client == merged.client && l.owner == merged.owner && l.write == merged.write;
            if same && (l.end == merged.start || merged.end == l.start) {
                merged.start = merged.start.min(l.start);
                merged.end = merged.end.max(l.end);
                false
            } else {
                true
            }
        });
        v.push(merged);
    }

    /// Unlocks a range of an owner's locks, splitting locks that straddle it.
    pub fn remove_range(
        &mut self,
        file: FileKey,
        client: u64,
        owner: &Bytes,
        start: u64,
        end: u64,
    ) {
        let Some(v) = self.map.get_mut(&file) else {
            return;
        };
        let mut out = Vec::with_capacity(v.len());
        for l in v.drain(..) {
            if l.client != client || l.owner != *owner || !overlaps(l.start, l.end, start, end) {
                out.push(l);
                continue;
            }
            if l.start < start {
                out.push(Lock {
                    end: start,
                    ..l.clone()
                });
            }
            if l.end > end {
                out.push(Lock {
                    start: end,
                    ..l.clone()
                });
            }
        }
        *v = out;
        if v.is_empty() {
            self.map.remove(&file);
        }
    }

    /// Whether an owner holds any lock on the file.
    pub fn owner_has(&self, file: FileKey, client: u64, owner: &Bytes) -> bool {
        self.map
            .get(&file)
            .is_some_and(|v| v.iter().any(|l| l.client == client && l.owner == *owner))
    }

    /// The locks on `file` (tests, metrics).
    pub fn on_file(&self, file: FileKey) -> &[Lock] {
        self.map.get(&file).map_or(&[], Vec::as_slice)
    }

    /// Whether `client`'s lock-owner `owner` holds a lock on any file.
    pub fn held_by(&self, client: ClientId, owner: &[u8]) -> bool {
        self.map
            .values()
            .any(|v| v.iter().any(|l| l.client == client && l.owner == owner))
    }

    /// Drops every lock of `client`.
    pub fn remove_client(&mut self, client: ClientId) {
        for v in self.map.values_mut() {
            v.retain(|l| l.client != client);
        }
        self.map.retain(|_, v| !v.is_empty());
    }

    /// Every lock (metrics).
    pub fn iter(&self) -> impl Iterator<Item = &Lock> {
        self.map.values().flatten()
    }
}
