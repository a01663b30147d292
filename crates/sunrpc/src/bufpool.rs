//! Reusable memory for large payloads on TCP: READ data, and large calls (WRITEs) received.
//!
//! A READ of up to 1 MiB needs a buffer that lives until its reply is written. Allocated fresh
//! for each call, such buffers come from and go back to the kernel (glibc maps large blocks,
//! and with many threads its arenas trim what is freed), so calls page-fault their buffers in
//! and zero them: with 16 READs of 1 MiB in flight on one connection (as the Linux client's
//! read-ahead sends them), writing 256 MiB and reading it 8 times cost rnfsd 59,000-95,000 page
//! faults, 22,000-25,000 with the pool. A WRITE's payload is a slice of the buffer its call was
//! received into, so the same holds for receive buffers of large calls. The pool keeps a
//! bounded number of buffers that payloads hand back when they are dropped.

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::dispatch::{BulkAlloc, BulkBuf};

/// Payloads smaller than this are left to the allocator, which serves them well from its
/// caches.
pub const MIN_POOLED: usize = 64 * 1024;

/// Buffers of one size for bulk payloads, at most `keep` of them kept while unused.
#[derive(Clone)]
pub struct BufPool {
    inner: Arc<Inner>,
}

struct Inner {
    size: usize,
    keep: usize,
    free: Mutex<Vec<Vec<u8>>>,
}

impl std::fmt::Debug for BufPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufPool")
            .field("size", &self.inner.size)
            .field("keep", &self.inner.keep)
            .finish_non_exhaustive()
    }
}

impl BufPool {
    /// A pool of `size`-byte buffers that keeps at most `keep` unused ones (so at most
    /// `size * keep` bytes idle).
    pub fn new(size: usize, keep: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                size,
                keep,
                free: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Unused buffers held now.
    pub fn idle(&self) -> usize {
        self.inner.free.lock().len()
    }
}

impl BulkAlloc for BufPool {
    fn alloc(&self, len: usize) -> Option<Box<dyn BulkBuf>> {
        if len < MIN_POOLED || len > self.inner.size {
            return None;
        }
        let buf = self
            .inner
            .free
            .lock()
            .pop()
            .unwrap_or_else(|| vec![0u8; self.inner.size]);
        Some(Box::new(Pooled {
            buf,
            len: 0,
            pool: self.inner.clone(),
        }))
    }
}

/// A buffer of the pool: filled by a procedure, then the payload of a reply; back to the pool
/// when the last reference to the payload is dropped.
struct Pooled {
    buf: Vec<u8>,
    len: usize,
    pool: Arc<Inner>,
}

impl BulkBuf for Pooled {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    fn freeze(mut self: Box<Self>, len: usize) -> Bytes {
        self.len = len.min(self.buf.len());
        Bytes::from_owner(*self)
    }
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let mut free = self.pool.free.lock();
        if free.len() < self.pool.keep {
            free.push(std::mem::take(&mut self.buf));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_idle_ones_are_bounded() {
        let pool = BufPool::new(MIN_POOLED * 2, 2);
        assert!(
            pool.alloc(MIN_POOLED - 1).is_none(),
            "small payloads: the allocator's"
        );
        assert!(
            pool.alloc(MIN_POOLED * 2 + 1).is_none(),
            "larger than a buffer"
        );
        let mut a = pool.alloc(MIN_POOLED).expect("a buffer");
        a.as_mut_slice()[..3].copy_from_slice(b"abc");
        let first = a.as_mut_slice().as_ptr();
        let data = a.freeze(3);
        assert_eq!(&data[..], b"abc");
        let clone = data.slice(1..);
        drop(data);
        assert_eq!(
            pool.idle(),
            0,
            "a slice of the payload still holds the buffer"
        );
        assert_eq!(&clone[..], b"bc");
        drop(clone);
        assert_eq!(pool.idle(), 1);
        // the same memory is handed out again
        let mut b = pool.alloc(MIN_POOLED).expect("a buffer");
        assert_eq!(b.as_mut_slice().as_ptr(), first);
        // at most `keep` idle buffers
        let bufs: Vec<Bytes> = (0..4)
            .map(|_| pool.alloc(MIN_POOLED).expect("a buffer").freeze(1))
            .collect();
        drop(bufs);
        drop(b.freeze(0));
        assert_eq!(pool.idle(), 2);
    }
}
