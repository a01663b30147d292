//! The shared receive queue: one per device, used by every connection on it (seed 001: receive
//! memory constant in the number of clients). Receive buffers come back through
//! [`Srq::give_back`] once their message has been copied out and are reposted in batches.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rdma_mummy_sys as sys;

use crate::device::ProtectionDomain;
use crate::pool::{Buf, Class, Pool};

/// Tag bit in `wr_id` marking a receive (SRQ) completion; the rest is the buffer index.
pub(crate) const RECV_TAG: u64 = 1 << 63;

/// Buffers given back are reposted once this many have accumulated (or on [`Srq::flush`]).
pub const REPOST_BATCH: usize = 16;

struct State {
    /// Posted buffers by index (the receive class's indices are dense).
    posted: Vec<Option<Buf>>,
    /// Buffers given back and not reposted yet.
    pending: Vec<Buf>,
    /// Buffers currently posted.
    count: usize,
}

/// A shared receive queue with its posted buffers.
pub struct Srq {
    srq: NonNull<sys::ibv_srq>,
    pool: Pool,
    state: Mutex<State>,
    reposted: AtomicU64,
    batches: AtomicU64,
    _pd: Arc<ProtectionDomain>,
}

// SAFETY: posting to an SRQ is thread-safe in libibverbs; the Rust-side state is behind a mutex.
unsafe impl Send for Srq {}
// SAFETY: as above.
unsafe impl Sync for Srq {}

impl std::fmt::Debug for Srq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Srq")
            .field("posted", &self.posted())
            .finish_non_exhaustive()
    }
}

impl Srq {
    pub(crate) fn new(pd: &Arc<ProtectionDomain>, pool: Pool, depth: u32) -> io::Result<Srq> {
        // SAFETY: plain old data; all-zero is valid (no context pointer).
        let mut init: sys::ibv_srq_init_attr = unsafe { std::mem::zeroed() };
        init.attr.max_wr = depth.max(1);
        init.attr.max_sge = 1;
        // SAFETY: the PD is alive and `init` is a valid in/out pointer.
        let srq = unsafe { sys::ibv_create_srq(pd.as_ptr(), &mut init) };
        let srq = NonNull::new(srq).ok_or_else(io::Error::last_os_error)?;
        let n = pool.config().recv_count;
        Ok(Srq {
            srq,
            pool,
            state: Mutex::new(State {
                posted: (0..n).map(|_| None).collect(),
                pending: Vec::new(),
                count: 0,
            }),
            reposted: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            _pd: pd.clone(),
        })
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::ibv_srq {
        self.srq.as_ptr()
    }

    /// Buffers currently posted.
    pub fn posted(&self) -> usize {
        self.state.lock().count
    }

    /// Receive buffers reposted since start (after the initial post).
    pub fn reposted(&self) -> u64 {
        self.reposted.load(Ordering::Relaxed)
    }

    /// Repost batches since start.
    pub fn repost_batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    /// Posts receive buffers (of this SRQ's pool, receive class). Buffers that could not be
    /// posted are kept for the next attempt.
    pub fn post(&self, bufs: Vec<Buf>) -> io::Result<()> {
        let mut st = self.state.lock();
        self.post_locked(&mut st, bufs)
    }

    fn post_locked(&self, st: &mut State, bufs: Vec<Buf>) -> io::Result<()> {
        if bufs.is_empty() {
            return Ok(());
        }
        let lkey = self.pool.lkey();
        let mut sges: Vec<sys::ibv_sge> = Vec::with_capacity(bufs.len());
        for b in &bufs {
            assert!(
                b.class() == Class::Recv && Arc::ptr_eq(&b.pool().0, &self.pool.0),
                "SRQ buffers must be receive buffers of the device's pool"
            );
            sges.push(sys::ibv_sge {
                addr: b.addr(),
                length: b.capacity() as u32,
                lkey,
            });
        }
        let mut wrs: Vec<sys::ibv_recv_wr> = Vec::with_capacity(bufs.len());
        for (b, sge) in bufs.iter().zip(sges.iter_mut()) {
            wrs.push(sys::ibv_recv_wr {
                wr_id: RECV_TAG | u64::from(b.index()),
                next: std::ptr::null_mut(),
                sg_list: sge,
                num_sge: 1,
            });
        }
        let base = wrs.as_mut_ptr();
        for i in 1..wrs.len() {
            // SAFETY: `i - 1` and `i` are in bounds of `wrs`, which is not resized below.
            unsafe { (*base.add(i - 1)).next = base.add(i) };
        }
        let mut bad: *mut sys::ibv_recv_wr = std::ptr::null_mut();
        // Record the buffers as posted before the device can complete them.
        let n = bufs.len();
        let mut indices = Vec::with_capacity(n);
        for b in bufs {
            let i = b.index() as usize;
            indices.push(i);
            st.posted[i] = Some(b);
        }
        // SAFETY: the SRQ is alive; `wrs` and `sges` are valid, linked, and outlive the call
        // (the provider copies them into the queue). Every buffer they name is held in
        // `st.posted` until its completion hands it back through `take`.
        let rc = unsafe { sys::ibv_post_srq_recv(self.srq.as_ptr(), base, &mut bad) };
        if rc == 0 {
            st.count += n;
            return Ok(());
        }
        // Requests from `bad` on were not posted: take their buffers back to pending.
        let first_bad = if bad.is_null() {
            0
        } else {
            // SAFETY: a non-null `bad` points into the list that was posted.
            (unsafe { bad.offset_from(base) }) as usize
        };
        st.count += first_bad;
        for &i in &indices[first_bad.min(n)..] {
            if let Some(b) = st.posted[i].take() {
                st.pending.push(b);
            }
        }
        Err(io::Error::from_raw_os_error(rc))
    }

    /// The buffer a receive completion with `wr_id` refers to.
    pub(crate) fn take(&self, wr_id: u64) -> Option<Buf> {
        let i = (wr_id & !RECV_TAG) as usize;
        let mut st = self.state.lock();
        let b = st.posted.get_mut(i)?.take()?;
        st.count -= 1;
        Some(b)
    }

    /// Returns a receive buffer whose message has been consumed; it is reposted with the next
    /// batch.
    pub fn give_back(&self, buf: Buf) {
        let mut st = self.state.lock();
        st.pending.push(buf);
        if st.pending.len() >= REPOST_BATCH {
            self.repost(&mut st);
        }
    }

    /// Reposts the buffers given back so far, however few.
    pub fn flush(&self) {
        let mut st = self.state.lock();
        if !st.pending.is_empty() {
            self.repost(&mut st);
        }
    }

    fn repost(&self, st: &mut State) {
        let bufs = std::mem::take(&mut st.pending);
        let n = bufs.len() as u64;
        match self.post_locked(st, bufs) {
            Ok(()) => {
                self.reposted.fetch_add(n, Ordering::Relaxed);
                self.batches.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "reposting receive buffers failed"),
        }
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        // SAFETY: every QP using the SRQ holds an `Arc<Device>` (and so of this SRQ); none is
        // left, so the device no longer writes into the posted buffers, which are released
        // after the SRQ is gone.
        unsafe {
            sys::ibv_destroy_srq(self.srq.as_ptr());
        }
    }
}
