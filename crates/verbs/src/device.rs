//! Devices, protection domains and memory registration, and finding out whether RDMA is
//! usable at all on this machine.

use std::ffi::CStr;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use rdma_mummy_sys as sys;

use crate::pool::{Class, Pool, PoolConfig};
use crate::srq::Srq;

/// Why RDMA cannot be used here.
#[derive(Debug)]
pub enum Unavailable {
    /// A shared library of rdma-core is not installed (it is loaded at run time).
    NoLibrary(&'static str),
    /// libibverbs found no RDMA device.
    NoDevices,
    /// Devices exist but the RDMA connection manager cannot use them (rdma_ucm not loaded?).
    NoCm(io::Error),
    /// Setting up a device failed.
    Setup(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::NoLibrary(l) => write!(
                f,
                "{l} is not installed (package rdma-core / ibverbs-providers)"
            ),
            Unavailable::NoDevices => f.write_str("no RDMA devices"),
            Unavailable::NoCm(e) => write!(
                f,
                "the RDMA connection manager cannot open the devices ({e}; is rdma_ucm loaded?)"
            ),
            Unavailable::Setup(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Unavailable {}

fn library_loaded(name: &CStr) -> bool {
    // SAFETY: `name` is a valid C string; RTLD_NOLOAD only looks the library up (rdma-mummy-sys
    // tried to load it in its constructor) and the handle, when one is returned, is released
    // at once.
    unsafe {
        let h = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD);
        if h.is_null() {
            false
        } else {
            libc::dlclose(h);
            true
        }
    }
}

/// Capabilities of a device that sizing depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Most work requests per queue.
    pub max_qp_wr: u32,
    /// Most scatter/gather entries per work request.
    pub max_sge: u32,
    /// Most entries per completion queue.
    pub max_cqe: u32,
    /// Most receive work requests in a shared receive queue.
    pub max_srq_wr: u32,
    /// Most RDMA Reads a queue pair can be the target of at once.
    pub max_qp_rd_atom: u32,
    /// Most RDMA Reads a queue pair can have outstanding as initiator.
    pub max_qp_init_rd_atom: u32,
}

/// A protection domain on a device.
pub struct ProtectionDomain {
    pd: NonNull<sys::ibv_pd>,
}

// SAFETY: a PD is a kernel object handle; libibverbs allows using it from any thread.
unsafe impl Send for ProtectionDomain {}
// SAFETY: as above; no method mutates the struct behind the pointer from Rust.
unsafe impl Sync for ProtectionDomain {}

impl ProtectionDomain {
    pub(crate) fn as_ptr(&self) -> *mut sys::ibv_pd {
        self.pd.as_ptr()
    }

    /// Registers `len` bytes at `ptr` for local write access (which includes local read) and,
    /// with `remote`, for RDMA Reads and Writes by the peer (a requester's chunks).
    /// Counted in [`crate::registrations`].
    pub(crate) fn register(
        self: &Arc<Self>,
        ptr: NonNull<u8>,
        len: usize,
        remote: bool,
    ) -> io::Result<MemoryRegion> {
        use sys::ibv_access_flags as a;
        let mut access = a::IBV_ACCESS_LOCAL_WRITE.0;
        if remote {
            access |= a::IBV_ACCESS_REMOTE_READ.0 | a::IBV_ACCESS_REMOTE_WRITE.0;
        }
        let access = access as i32;
        // SAFETY: the PD is alive (`self`); `ptr..ptr+len` is a mapping owned by the caller's
        // pool, which keeps it mapped until the returned region (dropped first) is deregistered.
        let mr = unsafe { sys::ibv_reg_mr(self.as_ptr(), ptr.as_ptr().cast(), len, access) };
        let mr = NonNull::new(mr).ok_or_else(io::Error::last_os_error)?;
        crate::REGISTRATIONS.fetch_add(1, Ordering::Relaxed);
        Ok(MemoryRegion {
            mr,
            _pd: self.clone(),
        })
    }
}

impl Drop for ProtectionDomain {
    fn drop(&mut self) {
        // SAFETY: every object made in the PD (memory region, SRQ, QP) holds an `Arc` of it,
        // so none is left when this runs.
        unsafe {
            sys::ibv_dealloc_pd(self.pd.as_ptr());
        }
    }
}

/// A registered memory region.
pub(crate) struct MemoryRegion {
    mr: NonNull<sys::ibv_mr>,
    _pd: Arc<ProtectionDomain>,
}

// SAFETY: the MR is a kernel registration handle, usable from any thread; only its lkey is read.
unsafe impl Send for MemoryRegion {}
// SAFETY: as above.
unsafe impl Sync for MemoryRegion {}

impl MemoryRegion {
    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: `mr` came from a successful ibv_reg_mr and stays valid until drop.
        unsafe { (*self.mr.as_ptr()).lkey }
    }

    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: as for `lkey`.
        unsafe { (*self.mr.as_ptr()).rkey }
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: the region is only dropped with its pool, after every buffer of the pool
        // (and so every work request naming it) is gone.
        unsafe {
            sys::ibv_dereg_mr(self.mr.as_ptr());
        }
    }
}

/// The device contexts librdmacm opened; kept for the life of the process's devices.
struct ContextList {
    list: NonNull<*mut sys::ibv_context>,
}

// SAFETY: the list is only read after creation and freed once, in drop.
unsafe impl Send for ContextList {}
// SAFETY: as above.
unsafe impl Sync for ContextList {}

impl Drop for ContextList {
    fn drop(&mut self) {
        // SAFETY: `list` came from rdma_get_devices; every `Device` holding a context from it
        // holds an `Arc` of this list.
        unsafe { sys::rdma_free_devices(self.list.as_ptr()) }
    }
}

/// One RDMA device with what rnfs keeps per device: a protection domain, the registered
/// buffer pool and one shared receive queue used by every connection on the device.
pub struct Device {
    // Field order is drop order: the SRQ and the pool go before the PD and the context list.
    srq: Arc<Srq>,
    pool: Pool,
    pd: Arc<ProtectionDomain>,
    ctx: NonNull<sys::ibv_context>,
    name: String,
    attr: DeviceAttr,
    _list: Arc<ContextList>,
}

// SAFETY: an ibv_context is thread-safe in libibverbs; the struct is immutable after creation.
unsafe impl Send for Device {}
// SAFETY: as above.
unsafe impl Sync for Device {}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name)
            .field("attr", &self.attr)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// The device name (for example `rxe0`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's limits.
    pub fn attr(&self) -> &DeviceAttr {
        &self.attr
    }

    /// The device's registered buffer pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The device's shared receive queue.
    pub fn srq(&self) -> &Arc<Srq> {
        &self.srq
    }

    pub(crate) fn pd(&self) -> &Arc<ProtectionDomain> {
        &self.pd
    }

    pub(crate) fn ctx(&self) -> *mut sys::ibv_context {
        self.ctx.as_ptr()
    }

    /// Identifies the device a connection request arrived on ([`crate::ConnectRequest::device_key`]).
    pub fn key(&self) -> usize {
        self.ctx.as_ptr() as usize
    }
}

/// Opens every RDMA device the connection manager can use and sets each up: a PD, a pool of
/// `pool` (mapped and registered once), and an SRQ of `pool.recv_count` receive buffers,
/// all posted. Fails with the reason RDMA is unusable when there is no device.
pub fn open_devices(pool: PoolConfig) -> Result<Vec<Arc<Device>>, Unavailable> {
    if !library_loaded(c"libibverbs.so.1") {
        return Err(Unavailable::NoLibrary("libibverbs.so.1"));
    }
    if !library_loaded(c"librdmacm.so.1") {
        return Err(Unavailable::NoLibrary("librdmacm.so.1"));
    }
    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer; the list is freed right away.
    let ibv = unsafe { sys::ibv_get_device_list(&mut n) };
    if ibv.is_null() || n <= 0 {
        if !ibv.is_null() {
            // SAFETY: `ibv` came from ibv_get_device_list.
            unsafe { sys::ibv_free_device_list(ibv) };
        }
        return Err(Unavailable::NoDevices);
    }
    // SAFETY: `ibv` came from ibv_get_device_list and is not used afterwards.
    unsafe { sys::ibv_free_device_list(ibv) };

    let mut n = 0;
    // SAFETY: `n` is a valid out-pointer.
    let list = unsafe { sys::rdma_get_devices(&mut n) };
    let Some(list) = NonNull::new(list) else {
        return Err(Unavailable::NoCm(io::Error::last_os_error()));
    };
    let list = Arc::new(ContextList { list });
    if n <= 0 {
        return Err(Unavailable::NoCm(io::Error::from_raw_os_error(
            libc::ENODEV,
        )));
    }
    let mut out = Vec::new();
    for i in 0..n as usize {
        // SAFETY: rdma_get_devices returned `n` entries (NULL-terminated).
        let ctx = unsafe { *list.list.as_ptr().add(i) };
        let Some(ctx) = NonNull::new(ctx) else { break };
        match Device::setup(ctx, list.clone(), pool) {
            Ok(d) => out.push(Arc::new(d)),
            Err(e) => {
                return Err(Unavailable::Setup(format!(
                    "setting up RDMA device {}: {e}",
                    device_name(ctx)
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(Unavailable::NoDevices);
    }
    Ok(out)
}

fn device_name(ctx: NonNull<sys::ibv_context>) -> String {
    // SAFETY: `ctx` is an open context whose `device` is valid; the name is a NUL-terminated
    // string inside the device struct.
    unsafe {
        let dev = (*ctx.as_ptr()).device;
        let p = sys::ibv_get_device_name(dev);
        if p.is_null() {
            return "?".into();
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

impl Device {
    fn setup(
        ctx: NonNull<sys::ibv_context>,
        list: Arc<ContextList>,
        cfg: PoolConfig,
    ) -> io::Result<Device> {
        let name = device_name(ctx);
        // SAFETY: ibv_device_attr is plain old data; all-zero is a valid value.
        let mut a: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: `ctx` is open and `a` is a valid out-pointer.
        let rc = unsafe { sys::ibv_query_device(ctx.as_ptr(), &mut a) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
        let pos = |v: i32| v.max(0) as u32;
        let attr = DeviceAttr {
            max_qp_wr: pos(a.max_qp_wr),
            max_sge: pos(a.max_sge),
            max_cqe: pos(a.max_cqe),
            max_srq_wr: pos(a.max_srq_wr),
            max_qp_rd_atom: pos(a.max_qp_rd_atom),
            max_qp_init_rd_atom: pos(a.max_qp_init_rd_atom),
        };
        if attr.max_srq_wr == 0 {
            return Err(io::Error::other("the device has no shared receive queues"));
        }
        let mut cfg = cfg;
        cfg.recv_count = cfg.recv_count.min(attr.max_srq_wr as usize);
        // SAFETY: `ctx` is open.
        let pd = unsafe { sys::ibv_alloc_pd(ctx.as_ptr()) };
        let pd = Arc::new(ProtectionDomain {
            pd: NonNull::new(pd).ok_or_else(io::Error::last_os_error)?,
        });
        let pool = Pool::new(cfg, Some(&pd))?;
        let srq = Arc::new(Srq::new(&pd, pool.clone(), cfg.recv_count as u32)?);
        // Post every receive buffer once; afterwards they are reposted as they come back.
        let mut bufs = Vec::with_capacity(cfg.recv_count);
        while let Some(b) = pool.try_get(Class::Recv) {
            bufs.push(b);
        }
        srq.post(bufs)?;
        Ok(Device {
            srq,
            pool,
            pd,
            ctx,
            name,
            attr,
            _list: list,
        })
    }
}
