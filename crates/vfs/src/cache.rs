//! Descriptor caches keyed by handle: bounded, an arbitrary eighth dropped when full.
//!
//! The path cache also finds a cached object by its inode number. That is sound only because
//! a cached descriptor keeps its inode alive: while we hold it, the file system cannot give its
//! number to another file, so a directory entry that carries the number names this inode (on
//! file systems whose directory entries carry the same number as stat, see
//! [`unique_inode_numbers`]). Without the descriptor, a number could have been reused by a new
//! file with a new generation, and a handle remembered for it would name a removed file.
//!
//! The descriptor must have been held already when the number was read: a number read from a
//! listing, then freed with its file and given to a new one that is cached before the lookup,
//! would otherwise find the new file. So every entry carries the [`Epoch`] of its insertion, and
//! a lookup trusts only entries inserted before the epoch its caller took ahead of reading the
//! number.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::handle::HandleHasher;

/// An inode as a directory listing names it: export, device and inode number.
pub(crate) type InodeKey = (usize, u64, u64);

/// Whether the file system of type `f_type` (statfs) gives each live inode its own number and
/// reports that number in directory entries: ext2/3/4, XFS, tmpfs and Btrfs (per subvolume,
/// which has its own device number). Overlay and FUSE file systems may not, and are left out.
pub(crate) fn unique_inode_numbers(f_type: i64) -> bool {
    const EXT4: i64 = 0xEF53;
    const XFS: i64 = 0x5846_5342;
    const TMPFS: i64 = 0x0102_1994;
    const BTRFS: i64 = 0x9123_683E;
    matches!(f_type, EXT4 | XFS | TMPFS | BTRFS)
}

/// Whether files of the file system of type `f_type` live in memory (tmpfs): reading them does
/// not wait for a disk (unless pages were swapped out), though tmpfs refuses `RWF_NOWAIT`.
pub(crate) fn memory_file_system(f_type: i64) -> bool {
    f_type == 0x0102_1994
}

/// The part of a full cache dropped to make room: an eighth. Dropping half cost a working set a
/// little larger than the cache half of its hits (READDIRPLUS of 5,000 files with room for
/// 5,000 descriptors ran at 0.78M entries/s, 1.35M with 4,000 files).
const EVICT_DIVISOR: usize = 8;

/// A map keyed by handle (see [`HandleHasher`]).
type ByHandle<V> = HashMap<Bytes, V, std::hash::BuildHasherDefault<HandleHasher>>;

/// Descriptors keyed by handle; bounded, an arbitrary eighth dropped when full.
pub(crate) struct FdCache<T> {
    cap: usize,
    map: Mutex<ByHandle<Arc<T>>>,
}

impl<T> FdCache<T> {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(16),
            map: Mutex::new(ByHandle::default()),
        }
    }
    pub(crate) fn get(&self, k: &Bytes) -> Option<Arc<T>> {
        self.map.lock().get(k).cloned()
    }
    pub(crate) fn put(&self, k: Bytes, v: Arc<T>) {
        let mut evicted = Vec::new();
        let mut m = self.map.lock();
        if m.len() >= self.cap {
            let drop_keys: Vec<Bytes> = m.keys().take(self.cap / EVICT_DIVISOR).cloned().collect();
            evicted = drop_keys.iter().filter_map(|k| m.remove(k)).collect();
        }
        m.insert(k, v);
        drop(m);
        // the descriptors close here, not while every other call waits for the lock
        drop(evicted);
    }
    pub(crate) fn remove(&self, k: &Bytes) {
        let gone = self.map.lock().remove(k);
        drop(gone);
    }

    /// Drops every descriptor of export `id` (no longer exported).
    pub(crate) fn remove_export(&self, id: u32) {
        let mut gone = Vec::new();
        self.map.lock().retain(|k, v| {
            let keep = crate::handle::export_of(k) != id;
            if !keep {
                gone.push(v.clone());
            }
            keep
        });
        // the descriptors close here, not while every other call waits for the lock
        drop(gone);
    }
}

struct PathEntry {
    fd: Arc<OwnedFd>,
    inode: Option<InodeKey>,
}

/// A multiply-xorshift hasher for keys that the server or the file system chooses, never a
/// client (no flooding to resist): inode keys here, probed once per listed entry, and the ids
/// NFSv4 hands out, looked up several times per COMPOUND, where SipHash cost more than the rest.
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^ (x >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(w));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// A point in the path cache's history: entries inserted before it, and only those, held their
/// descriptors when it was taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Epoch(u64);

type InodeMap =
    HashMap<InodeKey, (Bytes, Arc<OwnedFd>, u64), std::hash::BuildHasherDefault<IdHasher>>;

#[derive(Default)]
struct PathMaps {
    by_fh: ByHandle<PathEntry>,
    /// The handle, descriptor and insertion number of each indexed inode (a copy of its
    /// `by_fh` entry).
    by_inode: InodeMap,
}

impl PathMaps {
    /// The handle and descriptor indexed for `inode` by an insertion before `read_at`.
    fn indexed(&self, inode: &InodeKey, read_at: Epoch) -> Option<(Bytes, Arc<OwnedFd>)> {
        let (fh, fd, n) = self.by_inode.get(inode)?;
        (*n < read_at.0).then(|| (fh.clone(), fd.clone()))
    }

    /// Takes `fh`'s entry out (both maps); the caller drops it after the lock.
    fn remove(&mut self, fh: &Bytes) -> Option<PathEntry> {
        let e = self.by_fh.remove(fh)?;
        if let Some(k) = e.inode {
            // only if the index still points at this handle
            if self.by_inode.get(&k).is_some_and(|(f, _, _)| f == fh) {
                self.by_inode.remove(&k);
            }
        }
        Some(e)
    }
}

/// O_PATH descriptors keyed by handle, also found by inode (non-directories only).
pub(crate) struct PathCache {
    cap: usize,
    maps: Mutex<PathMaps>,
    /// Insertions so far: the next entry's number.
    inserted: AtomicU64,
}

impl PathCache {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(16),
            maps: Mutex::new(PathMaps::default()),
            inserted: AtomicU64::new(0),
        }
    }

    /// The cached copy of handle `fh` and its descriptor.
    pub(crate) fn get_keyed(&self, fh: &[u8]) -> Option<(Bytes, Arc<OwnedFd>)> {
        let m = self.maps.lock();
        let (k, e) = m.by_fh.get_key_value(fh)?;
        Some((k.clone(), e.fd.clone()))
    }

    /// Whether `fh` is cached (then it is byte for byte a handle that was verified).
    pub(crate) fn contains(&self, fh: &[u8]) -> bool {
        self.maps.lock().by_fh.contains_key(fh)
    }

    /// Now, to be taken before reading an inode number that [`PathCache::by_inode`] will look
    /// up.
    pub(crate) fn epoch(&self) -> Epoch {
        Epoch(self.inserted.load(Ordering::SeqCst))
    }

    /// The handle and descriptor cached for `inode` by an insertion before `read_at` (the epoch
    /// taken before the number was read); the caller checks, with fstat of the descriptor, that
    /// it still is that inode and is still linked.
    pub(crate) fn by_inode(
        &self,
        inode: &InodeKey,
        read_at: Epoch,
    ) -> Option<(Bytes, Arc<OwnedFd>)> {
        self.maps.lock().indexed(inode, read_at)
    }

    /// [`PathCache::by_inode`] for each of `inodes` (None: not looked up), under one lock.
    pub(crate) fn by_inodes(
        &self,
        inodes: impl Iterator<Item = Option<InodeKey>>,
        read_at: Epoch,
    ) -> Vec<Option<(Bytes, Arc<OwnedFd>)>> {
        let m = self.maps.lock();
        inodes.map(|k| m.indexed(&k?, read_at)).collect()
    }

    /// Caches `fd` for `fh`, indexed under `inode` when given: pass an inode only for a
    /// descriptor of that very inode, on a file system with [`unique_inode_numbers`].
    pub(crate) fn put(&self, fh: Bytes, fd: Arc<OwnedFd>, inode: Option<InodeKey>) {
        let mut evicted = Vec::new();
        let mut m = self.maps.lock();
        let n = self.inserted.fetch_add(1, Ordering::SeqCst);
        if m.by_fh.len() >= self.cap {
            let drop_keys: Vec<Bytes> = m
                .by_fh
                .keys()
                .take(self.cap / EVICT_DIVISOR)
                .cloned()
                .collect();
            evicted = drop_keys.iter().filter_map(|k| m.remove(k)).collect();
        }
        evicted.extend(m.remove(&fh));
        if let Some(k) = inode {
            // a replaced index entry's descriptor is also held by its by_fh entry
            let _ = m.by_inode.insert(k, (fh.clone(), fd.clone(), n));
        }
        m.by_fh.insert(fh, PathEntry { fd, inode });
        drop(m);
        // the descriptors close here, not while every other call waits for the lock
        drop(evicted);
    }

    pub(crate) fn remove(&self, fh: &Bytes) {
        let gone = self.maps.lock().remove(fh);
        drop(gone);
    }

    /// Drops every descriptor of export `id` (no longer exported).
    pub(crate) fn remove_export(&self, id: u32) {
        let mut m = self.maps.lock();
        let keys: Vec<Bytes> = m
            .by_fh
            .keys()
            .filter(|k| crate::handle::export_of(k) == id)
            .cloned()
            .collect();
        let gone: Vec<PathEntry> = keys.iter().filter_map(|k| m.remove(k)).collect();
        drop(m);
        drop(gone);
    }

    /// Entries cached, and entries indexed by inode (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> (usize, usize) {
        let m = self.maps.lock();
        (m.by_fh.len(), m.by_inode.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd() -> Arc<OwnedFd> {
        Arc::new(OwnedFd::from(
            std::fs::File::open("/").expect("open / for a test descriptor"),
        ))
    }

    #[test]
    fn the_inode_index_follows_the_handles() {
        let c = PathCache::new(16);
        let a = Bytes::from_static(b"a");
        let b = Bytes::from_static(b"b");
        c.put(a.clone(), fd(), Some((0, 1, 10)));
        c.put(b.clone(), fd(), None);
        assert_eq!(
            c.by_inode(&(0, 1, 10), c.epoch()).map(|x| x.0),
            Some(a.clone())
        );
        assert!(c.by_inode(&(0, 1, 11), c.epoch()).is_none());
        assert!(
            c.by_inode(&(1, 1, 10), c.epoch()).is_none(),
            "another export's handle differs"
        );
        // the same inode number under a new handle (a hard link cannot do this; a re-put can)
        c.put(b.clone(), fd(), Some((0, 1, 10)));
        c.remove(&a);
        assert_eq!(
            c.by_inode(&(0, 1, 10), c.epoch()).map(|x| x.0),
            Some(b.clone()),
            "removing the old handle must not drop the index entry of the new one"
        );
        c.remove(&b);
        assert!(c.by_inode(&(0, 1, 10), c.epoch()).is_none());
        assert_eq!(c.len(), (0, 0));
    }

    #[test]
    fn eviction_drops_index_entries_with_their_descriptors() {
        let c = PathCache::new(16);
        for i in 0..100u64 {
            c.put(Bytes::from(i.to_be_bytes().to_vec()), fd(), Some((0, 1, i)));
            let (fhs, inodes) = c.len();
            assert!(fhs <= 16);
            // a full cache drops an eighth to make room, not more
            assert!(
                fhs >= (i as usize + 1).min(16 - 16 / EVICT_DIVISOR + 1),
                "{fhs} after {i}"
            );
            assert_eq!(fhs, inodes, "index and handles out of step after {i}");
        }
        let hits = (0..100u64)
            .filter(|i| c.by_inode(&(0, 1, *i), c.epoch()).is_some())
            .count();
        assert_eq!(hits, c.len().0);
    }

    #[test]
    fn entries_cached_after_the_number_was_read_are_not_trusted() {
        let c = PathCache::new(16);
        c.put(Bytes::from_static(b"old"), fd(), Some((0, 1, 7)));
        let read_at = c.epoch();
        assert!(c.by_inode(&(0, 1, 7), read_at).is_some());
        // the listed file goes, its number is reused by a file cached after the listing read it
        c.remove(&Bytes::from_static(b"old"));
        c.put(Bytes::from_static(b"new"), fd(), Some((0, 1, 7)));
        assert!(
            c.by_inode(&(0, 1, 7), read_at).is_none(),
            "a descriptor taken after the number was read does not vouch for it"
        );
        assert_eq!(
            c.by_inode(&(0, 1, 7), c.epoch()).map(|x| x.0),
            Some(Bytes::from_static(b"new"))
        );
    }
}
