//! A completion queue with its own completion channel, whose descriptor is registered with
//! tokio so that waiting for completions is an `await`, not a polling thread.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;

use rdma_mummy_sys as sys;
use tokio::io::unix::AsyncFd;

/// A raw descriptor owned by a C object (closed by its destroy call, never by us).
pub(crate) struct BorrowedFd(pub(crate) RawFd);

impl AsRawFd for BorrowedFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Registers a descriptor owned by a libibverbs/librdmacm object with the tokio reactor.
pub(crate) fn watch(fd: RawFd) -> io::Result<AsyncFd<BorrowedFd>> {
    // SAFETY: `fd` belongs to a completion or event channel that outlives the returned
    // `AsyncFd`: both owners (`Cq`, `EventChannel`) drop it before destroying the channel, and
    // nothing else closes or replaces the descriptor meanwhile.
    unsafe { AsyncFd::register_with_interest(BorrowedFd(fd), tokio::io::Interest::READABLE) }
        .map_err(io::Error::from)
}

pub(crate) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we were handed by libibverbs/librdmacm; F_GETFL/F_SETFL
    // have no memory-safety preconditions.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A CQ and its completion channel.
pub(crate) struct Cq {
    // `afd` is deregistered from the reactor before the channel (and its descriptor) goes.
    afd: Option<AsyncFd<BorrowedFd>>,
    cq: NonNull<sys::ibv_cq>,
    channel: NonNull<sys::ibv_comp_channel>,
}

// SAFETY: CQ polling and arming are thread-safe in libibverbs; the endpoint polls from one task.
unsafe impl Send for Cq {}
// SAFETY: as above.
unsafe impl Sync for Cq {}

impl Cq {
    /// Creates a channel and a CQ of `cqe` entries on `ctx`; must run inside a tokio runtime.
    pub(crate) fn new(ctx: *mut sys::ibv_context, cqe: u32) -> io::Result<Cq> {
        // SAFETY: `ctx` is an open device context (the caller's `Device` keeps it open).
        let ch = unsafe { sys::ibv_create_comp_channel(ctx) };
        let channel = NonNull::new(ch).ok_or_else(io::Error::last_os_error)?;
        // SAFETY: `channel` was just created.
        let fd = unsafe { (*channel.as_ptr()).fd };
        let destroy_channel = || {
            // SAFETY: the channel has no CQ attached when this runs.
            unsafe { sys::ibv_destroy_comp_channel(channel.as_ptr()) };
        };
        if let Err(e) = set_nonblocking(fd) {
            destroy_channel();
            return Err(e);
        }
        // SAFETY: `ctx` is open, `channel` belongs to it; no CQ context pointer is used.
        let cq = unsafe {
            sys::ibv_create_cq(
                ctx,
                cqe.max(1) as i32,
                std::ptr::null_mut(),
                channel.as_ptr(),
                0,
            )
        };
        let Some(cq) = NonNull::new(cq) else {
            let e = io::Error::last_os_error();
            destroy_channel();
            return Err(e);
        };
        let mut me = Cq {
            afd: None,
            cq,
            channel,
        };
        me.afd = Some(watch(fd)?);
        Ok(me)
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::ibv_cq {
        self.cq.as_ptr()
    }

    /// Asks for an event on the next completion.
    pub(crate) fn arm(&self) -> io::Result<()> {
        // SAFETY: the CQ is alive.
        let rc = unsafe { sys::ibv_req_notify_cq(self.cq.as_ptr(), 0) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        Ok(())
    }

    /// Polls up to `wcs.len()` completions.
    pub(crate) fn poll(&self, wcs: &mut [sys::ibv_wc]) -> io::Result<usize> {
        // SAFETY: the CQ is alive and `wcs` has room for the requested entries.
        let n = unsafe { sys::ibv_poll_cq(self.cq.as_ptr(), wcs.len() as i32, wcs.as_mut_ptr()) };
        if n < 0 {
            return Err(io::Error::other("ibv_poll_cq failed"));
        }
        Ok(n as usize)
    }

    /// Waits for a completion event (after [`Cq::arm`]) and acknowledges it.
    pub(crate) async fn wait(&self) -> io::Result<()> {
        let afd = self.afd.as_ref().expect("cq reactor registration");
        loop {
            let mut guard = afd.readable().await?;
            let mut cq: *mut sys::ibv_cq = std::ptr::null_mut();
            let mut ctx: *mut std::ffi::c_void = std::ptr::null_mut();
            // SAFETY: the channel is alive and non-blocking; the out-pointers are valid.
            let rc = unsafe { sys::ibv_get_cq_event(self.channel.as_ptr(), &mut cq, &mut ctx) };
            if rc == 0 {
                // SAFETY: `cq` is the CQ the event was for: ours, the only one on the channel.
                unsafe { sys::ibv_ack_cq_events(cq, 1) };
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                guard.clear_ready();
                continue;
            }
            return Err(e);
        }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        drop(self.afd.take());
        // SAFETY: the QP using the CQ was destroyed first (the endpoint's drop order) and every
        // event was acknowledged in `wait`; the channel goes after its only CQ.
        unsafe {
            sys::ibv_destroy_cq(self.cq.as_ptr());
            sys::ibv_destroy_comp_channel(self.channel.as_ptr());
        }
    }
}
