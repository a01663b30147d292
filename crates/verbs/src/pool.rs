//! One region of memory, mapped and registered once at start-up, cut into fixed-size buffers of
//! three classes: receive buffers (the inline size, posted on the SRQ), send buffers (the inline
//! size, for the transport header and inline reply) and bulk buffers (RDMA Read and Write
//! staging, 1 MiB by default).
//!
//! A [`Buf`] is exclusive ownership of one slot: it can be written through [`Buf::as_mut_slice`] and,
//! once filled, frozen into a [`Bytes`] ([`Buf::freeze`]) whose clones keep the slot out of the
//! free list until the last one is dropped. While a work request that names a slot is posted,
//! the [`crate::Endpoint`] or [`crate::Srq`] holds the `Buf` (or a `Bytes` of it), so no Rust
//! reference and no other request can touch that memory before its completion is polled.
//!
//! The pool never grows: a class that is exhausted makes [`Pool::get`] wait (asynchronously)
//! for a buffer to come back. Registration happens once, in [`Pool::new`]; the I/O path never
//! registers memory (the process-wide count is [`crate::registrations`]).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Semaphore;

use crate::device::{MemoryRegion, ProtectionDomain};

/// The three buffer classes of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Receive buffers of the inline receive size, posted on the SRQ.
    Recv = 0,
    /// Send buffers of the inline send size.
    Send = 1,
    /// Bulk buffers for RDMA Read targets and RDMA Write sources.
    Bulk = 2,
}

impl Class {
    /// Every class, in region order.
    pub const ALL: [Class; 3] = [Class::Recv, Class::Send, Class::Bulk];

    /// A short name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Class::Recv => "recv",
            Class::Send => "send",
            Class::Bulk => "bulk",
        }
    }
}

/// Counts and sizes of the buffer classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Receive buffers (the SRQ depth).
    pub recv_count: usize,
    /// Bytes per receive buffer (our inline receive size).
    pub recv_size: usize,
    /// Send buffers.
    pub send_count: usize,
    /// Bytes per send buffer (our inline send size).
    pub send_size: usize,
    /// Bulk buffers.
    pub bulk_count: usize,
    /// Bytes per bulk buffer.
    pub bulk_size: usize,
    /// Let the peer RDMA Read and Write the whole region (a requester, whose chunks name pool
    /// buffers); a responder never needs it and leaves it off.
    pub remote_access: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            recv_count: 2048,
            recv_size: 4096,
            send_count: 1024,
            send_size: 4096,
            bulk_count: 32,
            bulk_size: 1 << 20,
            remote_access: false,
        }
    }
}

impl PoolConfig {
    /// Bytes the region needs: every class rounded up to whole pages.
    pub fn region_len(&self) -> usize {
        Class::ALL
            .iter()
            .map(|c| page_round(self.count(*c) * self.size(*c)))
            .sum()
    }

    /// Buffers of class `c`.
    pub fn count(&self, c: Class) -> usize {
        match c {
            Class::Recv => self.recv_count,
            Class::Send => self.send_count,
            Class::Bulk => self.bulk_count,
        }
    }

    /// Bytes per buffer of class `c`.
    pub fn size(&self, c: Class) -> usize {
        match c {
            Class::Recv => self.recv_size,
            Class::Send => self.send_size,
            Class::Bulk => self.bulk_size,
        }
    }
}

const PAGE: usize = 4096;

fn page_round(n: usize) -> usize {
    n.div_ceil(PAGE) * PAGE
}

/// Anonymous memory owned by the pool, unmapped when the pool goes away.
struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory; which thread may touch which slot is decided by `Buf`
// ownership (exclusive) and frozen `Bytes` (shared, read-only), never by the thread.
unsafe impl Send for Region {}
// SAFETY: as above; `Region` itself only hands out its base address.
unsafe impl Sync for Region {}

impl Region {
    fn map(len: usize) -> std::io::Result<Region> {
        let len = len.max(PAGE);
        // SAFETY: an anonymous private mapping with no address hint has no preconditions; the
        // result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| std::io::Error::other("mmap"))?;
        Ok(Region { ptr, len })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `Region::map`; the memory region
        // registered over it (a field dropped earlier in `PoolInner`) is already deregistered,
        // and no `Buf` or frozen `Bytes` outlives the pool (each holds an `Arc` of it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

struct ClassState {
    offset: usize,
    size: usize,
    count: usize,
    free: Mutex<Vec<u32>>,
    available: Semaphore,
    in_use: AtomicUsize,
    high_water: AtomicUsize,
}

pub(crate) struct PoolInner {
    // Dropped first: deregistration before the memory is unmapped.
    mr: Option<MemoryRegion>,
    region: Region,
    classes: [ClassState; 3],
    cfg: PoolConfig,
}

/// A registered buffer pool (cheap to clone: a shared handle).
#[derive(Clone)]
pub struct Pool(pub(crate) Arc<PoolInner>);

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("cfg", &self.0.cfg)
            .field("lkey", &self.lkey())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// Maps the region and, when `pd` is given, registers it once for local access (the
    /// server only initiates RDMA operations, so no remote access is granted unless
    /// [`PoolConfig::remote_access`] asks for it, as a requester does). Without a PD
    /// the pool works the same but its buffers cannot be posted (tests, accounting).
    pub fn new(cfg: PoolConfig, pd: Option<&Arc<ProtectionDomain>>) -> std::io::Result<Pool> {
        for c in Class::ALL {
            if cfg.size(c) == 0 || cfg.count(c) > u32::MAX as usize {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("bad {} buffer configuration", c.name()),
                ));
            }
        }
        let region = Region::map(cfg.region_len())?;
        let mut offset = 0;
        let classes = Class::ALL.map(|c| {
            let (count, size) = (cfg.count(c), cfg.size(c));
            let st = ClassState {
                offset,
                size,
                count,
                // Popped from the end: hand out low indices first.
                free: Mutex::new((0..count as u32).rev().collect()),
                available: Semaphore::new(count),
                in_use: AtomicUsize::new(0),
                high_water: AtomicUsize::new(0),
            };
            offset += page_round(count * size);
            st
        });
        let mr = match pd {
            Some(pd) => Some(pd.register(region.ptr, region.len, cfg.remote_access)?),
            None => None,
        };
        Ok(Pool(Arc::new(PoolInner {
            mr,
            region,
            classes,
            cfg,
        })))
    }

    /// The configuration the pool was made with.
    pub fn config(&self) -> &PoolConfig {
        &self.0.cfg
    }

    /// The local key of the registration (0 for an unregistered pool).
    pub fn lkey(&self) -> u32 {
        self.0.mr.as_ref().map_or(0, MemoryRegion::lkey)
    }

    /// The remote key of the registration: valid for the peer only with
    /// [`PoolConfig::remote_access`] (0 for an unregistered pool).
    pub fn rkey(&self) -> u32 {
        self.0.mr.as_ref().map_or(0, MemoryRegion::rkey)
    }

    /// True when the region is registered with a device.
    pub fn is_registered(&self) -> bool {
        self.0.mr.is_some()
    }

    /// Takes a buffer of class `c`, waiting until one is free.
    pub async fn get(&self, c: Class) -> Buf {
        let st = &self.0.classes[c as usize];
        // The semaphore is never closed, so acquiring cannot fail.
        if let Ok(p) = st.available.acquire().await {
            p.forget();
        }
        self.take_slot(c)
    }

    /// Takes `n` buffers of class `c` at once (all or none, so two waiters cannot each hold
    /// part of what the other needs). Returns `None` when the class has fewer than `n`
    /// buffers in total.
    pub async fn get_many(&self, c: Class, n: usize) -> Option<Vec<Buf>> {
        let st = &self.0.classes[c as usize];
        if n > st.count {
            return None;
        }
        if n == 0 {
            return Some(Vec::new());
        }
        let p = st.available.acquire_many(n as u32).await.ok()?;
        p.forget();
        Some((0..n).map(|_| self.take_slot(c)).collect())
    }

    /// Takes `n` buffers of class `c` if that many are free now (all or none).
    pub fn try_get_many(&self, c: Class, n: usize) -> Option<Vec<Buf>> {
        if n == 0 {
            return Some(Vec::new());
        }
        let st = &self.0.classes[c as usize];
        st.available
            .try_acquire_many(u32::try_from(n).ok()?)
            .ok()?
            .forget();
        Some((0..n).map(|_| self.take_slot(c)).collect())
    }

    /// Takes a buffer of class `c` if one is free now.
    pub fn try_get(&self, c: Class) -> Option<Buf> {
        let st = &self.0.classes[c as usize];
        st.available.try_acquire().ok()?.forget();
        Some(self.take_slot(c))
    }

    fn take_slot(&self, c: Class) -> Buf {
        let st = &self.0.classes[c as usize];
        // A permit was taken, and permits never exceed the free list's length.
        let index = st
            .free
            .lock()
            .pop()
            .expect("pool invariant: a permit implies a free slot");
        let used = st.in_use.fetch_add(1, Ordering::Relaxed) + 1;
        st.high_water.fetch_max(used, Ordering::Relaxed);
        Buf {
            pool: self.clone(),
            class: c,
            index,
        }
    }

    /// Buffers of class `c` currently taken.
    pub fn in_use(&self, c: Class) -> usize {
        self.0.classes[c as usize].in_use.load(Ordering::Relaxed)
    }

    /// The most buffers of class `c` ever taken at once.
    pub fn high_water(&self, c: Class) -> usize {
        self.0.classes[c as usize]
            .high_water
            .load(Ordering::Relaxed)
    }

    /// Buffers of class `c` free now.
    pub fn free(&self, c: Class) -> usize {
        self.0.classes[c as usize].available.available_permits()
    }

    /// Where `data` lies in the registered region, as (address, lkey), or `None` when it is
    /// not inside the region (then it must be copied into a pool buffer before it is posted).
    /// Only slices of frozen pool buffers can lie inside the region.
    pub fn locate(&self, data: &[u8]) -> Option<(u64, u32)> {
        let base = self.0.region.ptr.as_ptr() as usize;
        let p = data.as_ptr() as usize;
        (p >= base && p.checked_add(data.len())? <= base + self.0.region.len)
            .then(|| (p as u64, self.lkey()))
    }

    fn slot_ptr(&self, c: Class, index: u32) -> *mut u8 {
        let st = &self.0.classes[c as usize];
        let off = st.offset + index as usize * st.size;
        debug_assert!(off + st.size <= self.0.region.len);
        // SAFETY: `index < count` (indices only come from the free list built in `new`), so
        // the offset stays inside the mapping, as the region layout in `new` guarantees.
        unsafe { self.0.region.ptr.as_ptr().add(off) }
    }
}

/// Exclusive ownership of one pool buffer; dropping it returns the buffer to its class.
pub struct Buf {
    pool: Pool,
    class: Class,
    index: u32,
}

impl std::fmt::Debug for Buf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buf")
            .field("class", &self.class)
            .field("index", &self.index)
            .finish()
    }
}

impl Buf {
    /// The buffer's class.
    pub fn class(&self) -> Class {
        self.class
    }

    /// The buffer's index in its class.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Bytes the buffer holds.
    pub fn capacity(&self) -> usize {
        self.pool.0.classes[self.class as usize].size
    }

    /// The pool the buffer belongs to.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Address of the first byte, for scatter/gather entries and for the segments of a
    /// requester's chunks (with [`Pool::rkey`]).
    pub fn addr(&self) -> u64 {
        self.pool.slot_ptr(self.class, self.index) as u64
    }

    /// The whole buffer, read-only.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the slot is `capacity()` bytes inside the live mapping (the `Pool` clone in
        // `self` keeps it mapped). This `Buf` is the slot's only owner; while a work request
        // names the slot the `Buf` is held by the endpoint or SRQ, so no DMA writes it while
        // this shared borrow lives.
        unsafe {
            std::slice::from_raw_parts(self.pool.slot_ptr(self.class, self.index), self.capacity())
        }
    }

    /// The whole buffer, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only reference to the slot.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.pool.slot_ptr(self.class, self.index),
                self.capacity(),
            )
        }
    }

    /// Turns the first `len` bytes into shared, immutable `Bytes`; the buffer returns to the
    /// pool when the last clone (or slice) of them is dropped.
    pub fn freeze(self, len: usize) -> Bytes {
        let len = len.min(self.capacity());
        Bytes::from_owner(Frozen { buf: self, len })
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let st = &self.pool.0.classes[self.class as usize];
        st.free.lock().push(self.index);
        st.in_use.fetch_sub(1, Ordering::Relaxed);
        st.available.add_permits(1);
    }
}

struct Frozen {
    buf: Buf,
    len: usize,
}

impl AsRef<[u8]> for Frozen {
    fn as_ref(&self) -> &[u8] {
        &self.buf.as_slice()[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> PoolConfig {
        PoolConfig {
            recv_count: 4,
            recv_size: 1024,
            send_count: 2,
            send_size: 512,
            bulk_count: 2,
            bulk_size: 8192,
            remote_access: false,
        }
    }

    #[test]
    fn layout_and_accounting() {
        let p = Pool::new(small(), None).unwrap();
        assert_eq!(small().region_len(), 4096 + 4096 + 16384);
        assert!(!p.is_registered());
        let a = p.try_get(Class::Recv).unwrap();
        let b = p.try_get(Class::Recv).unwrap();
        assert_ne!(a.index(), b.index());
        assert_eq!(p.in_use(Class::Recv), 2);
        assert_eq!(p.free(Class::Recv), 2);
        drop(a);
        assert_eq!(p.in_use(Class::Recv), 1);
        assert_eq!(p.free(Class::Recv), 3);
        assert_eq!(p.high_water(Class::Recv), 2);
        let s1 = p.try_get(Class::Send).unwrap();
        let _s2 = p.try_get(Class::Send).unwrap();
        assert!(p.try_get(Class::Send).is_none());
        drop(s1);
        assert!(p.try_get(Class::Send).is_some());
        // Classes do not overlap.
        let x = p.try_get(Class::Bulk).unwrap();
        let r = b.addr();
        assert!(x.addr() >= r + 1024 || x.addr() + 8192 <= r);
    }

    #[test]
    fn frozen_bytes_hold_the_buffer_and_are_located() {
        let p = Pool::new(small(), None).unwrap();
        let mut b = p.try_get(Class::Bulk).unwrap();
        b.as_mut_slice()[..5].copy_from_slice(b"hello");
        let bytes = b.freeze(5);
        assert_eq!(&bytes[..], b"hello");
        assert_eq!(p.in_use(Class::Bulk), 1);
        let tail = bytes.slice(1..);
        drop(bytes);
        assert_eq!(p.in_use(Class::Bulk), 1, "a slice keeps the buffer");
        assert_eq!(p.locate(&tail).map(|(a, _)| a), Some(tail.as_ptr() as u64));
        drop(tail);
        assert_eq!(p.in_use(Class::Bulk), 0);
        let heap = Bytes::from_static(b"elsewhere");
        assert_eq!(p.locate(&heap), None);
    }

    #[test]
    fn try_get_many_takes_all_or_none() {
        let p = Pool::new(small(), None).unwrap();
        assert_eq!(p.try_get_many(Class::Bulk, 0).map(|v| v.len()), Some(0));
        let one = p.try_get(Class::Bulk).unwrap();
        assert!(p.try_get_many(Class::Bulk, 2).is_none(), "only one is free");
        assert_eq!(p.in_use(Class::Bulk), 1, "a refused take holds nothing");
        assert!(
            p.try_get_many(Class::Bulk, 3).is_none(),
            "more than the class has"
        );
        drop(one);
        let both = p.try_get_many(Class::Bulk, 2).unwrap();
        assert_ne!(both[0].index(), both[1].index());
        assert_eq!(p.free(Class::Bulk), 0);
        drop(both);
        assert_eq!(p.free(Class::Bulk), 2);
    }

    #[tokio::test]
    async fn get_waits_for_a_returned_buffer() {
        let p = Pool::new(small(), None).unwrap();
        let all = p.get_many(Class::Bulk, 2).await.unwrap();
        assert!(p.get_many(Class::Bulk, 3).await.is_none());
        let p2 = p.clone();
        let waiter = tokio::spawn(async move { p2.get(Class::Bulk).await.index() });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(all);
        let idx = waiter.await.unwrap();
        assert!(idx < 2);
        assert_eq!(p.in_use(Class::Bulk), 0);
    }
}
