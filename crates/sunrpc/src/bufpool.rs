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
//!
//! Every buffer starts on a page boundary. On the AMD Zen 4 CPUs of the build machines the
//! kernel's `rep movsb` copies run about 15 times slower when the destination lies 1 to 15
//! bytes past the source modulo 4096 (3.5 against 52-57 GB/s). Page-cache pages and the socket
//! buffers of a record written in one go start on page boundaries, so a buffer that started 16
//! bytes into a page (where glibc puts a large block) made a READ reply's data land 12 bytes
//! past its source: rnfs-bench's sequential read went from 1,779-2,047 to 2,776-3,082 MB/s with
//! page-aligned buffers (85ca279; docs/benchmarks.md, "Copies 1-15 bytes past a page").

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::dispatch::{BulkAlloc, BulkBuf};

/// Payloads smaller than this are left to the allocator, which serves them well from its
/// caches.
pub const MIN_POOLED: usize = 64 * 1024;

/// The alignment of every pooled buffer: a page.
pub const ALIGN: usize = 4096;

/// A zeroed buffer that starts on a page boundary (see the module's documentation for why).
#[derive(Default)]
pub struct PageAligned {
    /// `len + ALIGN` bytes, of which `len` from `start` on are used: no `unsafe` allocation
    /// with a layout of its own.
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl PageAligned {
    /// A zeroed page-aligned buffer of `len` bytes.
    pub fn new(len: usize) -> Self {
        let buf = vec![0u8; len + ALIGN];
        let off = buf.as_ptr().align_offset(ALIGN);
        // align_offset may give up (usize::MAX); a byte pointer never makes it, but stay in
        // bounds if it did
        let start = if off < ALIGN { off } else { 0 };
        Self { buf, start, len }
    }

    /// The buffer.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// The buffer, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

impl AsRef<[u8]> for PageAligned {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

/// Buffers of one size for bulk payloads, at most `keep` of them kept while unused.
#[derive(Clone)]
pub struct BufPool {
    inner: Arc<Inner>,
}

struct Inner {
    size: usize,
    keep: usize,
    free: Mutex<Vec<PageAligned>>,
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
            .unwrap_or_else(|| PageAligned::new(self.inner.size));
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
    buf: PageAligned,
    len: usize,
    pool: Arc<Inner>,
}

impl BulkBuf for Pooled {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        self.buf.as_mut_slice()
    }

    fn freeze(mut self: Box<Self>, len: usize) -> Bytes {
        self.len = len.min(self.pool.size);
        Bytes::from_owner(*self)
    }
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buf.as_slice()[..self.len]
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
        assert_eq!(
            a.as_mut_slice().len(),
            MIN_POOLED * 2,
            "the pool's size, not more"
        );
        assert_eq!(
            a.as_mut_slice().as_ptr() as usize % ALIGN,
            0,
            "page-aligned"
        );
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
