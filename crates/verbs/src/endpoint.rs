//! An accepted connection: a reliable-connected queue pair created on the connection's
//! RDMA-CM id, receiving from the device's SRQ, with its own completion queue (sends and
//! receives) whose channel tokio watches.
//!
//! # Memory safety of posted work
//!
//! Work requests are posted as a [`Batch`] that owns everything the device may touch: the
//! `Bytes` it sends or RDMA-writes from (which must be slices of the device's pool, see
//! [`crate::Pool::locate`]) and the [`Buf`]s RDMA Reads land in. The endpoint keeps the batch
//! until the completion of its last request (the only signaled one; on a reliable connection
//! completions arrive in order, so it also covers the others) and then hands the buffers back
//! in [`Completion::Batch`]. If the queue pair is destroyed first, [`Endpoint::destroy`] hands
//! them back after the device has stopped using them. Memory named by a request can therefore
//! neither be freed nor reused, nor be borrowed mutably by Rust code, while the device may
//! access it.

use std::collections::HashMap;
use std::ffi::CStr;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use rdma_mummy_sys as sys;

use crate::cm::{
    conn_private_data, event_name, std_to_sockaddr, CmId, ConnectRequest, EventChannel, IdKey,
};
use crate::cq::Cq;
use crate::device::Device;
use crate::pool::Buf;
use crate::srq::RECV_TAG;

/// One work request of a [`Batch`].
#[derive(Debug, Clone)]
pub enum WorkRequest {
    /// A Send of the gathered `data`; with `invalidate`, Send With Invalidate of that R_key.
    Send {
        /// The message, as slices of pool buffers, gathered in order.
        data: Vec<Bytes>,
        /// The peer's R_key to invalidate remotely (RFC 8797), if any.
        invalidate: Option<u32>,
    },
    /// An RDMA Write of the gathered `data` to the peer's memory at `remote_addr`.
    Write {
        /// The bytes, as slices of pool buffers, gathered in order.
        data: Vec<Bytes>,
        /// The peer's R_key.
        rkey: u32,
        /// The peer's address.
        remote_addr: u64,
    },
    /// An RDMA Read of `len` bytes at `remote_addr` into `bufs[buf]` at `offset`.
    Read {
        /// Index into [`Batch::bufs`].
        buf: usize,
        /// Where the bytes land in that buffer.
        offset: usize,
        /// Bytes to read.
        len: u32,
        /// The peer's R_key.
        rkey: u32,
        /// The peer's address.
        remote_addr: u64,
    },
}

impl WorkRequest {
    /// Bytes the request moves.
    pub fn len(&self) -> usize {
        match self {
            WorkRequest::Send { data, .. } | WorkRequest::Write { data, .. } => {
                data.iter().map(Bytes::len).sum()
            }
            WorkRequest::Read { len, .. } => *len as usize,
        }
    }

    /// True when the request moves no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Work requests posted together, with the buffers RDMA Reads land in.
#[derive(Debug, Default)]
pub struct Batch {
    /// The requests, in posting order; only the last one is signaled.
    pub wrs: Vec<WorkRequest>,
    /// Buffers the Reads write into, returned in the completion.
    pub bufs: Vec<Buf>,
}

/// A work completion status (`enum ibv_wc_status`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct WcStatus(pub u32);

impl WcStatus {
    /// IBV_WC_SUCCESS.
    pub const SUCCESS: WcStatus = WcStatus(sys::ibv_wc_status::IBV_WC_SUCCESS);
    /// IBV_WC_WR_FLUSH_ERR: the queue pair was in error; the request was not executed.
    pub const FLUSHED: WcStatus = WcStatus(sys::ibv_wc_status::IBV_WC_WR_FLUSH_ERR);

    /// True for success.
    pub fn is_ok(self) -> bool {
        self == Self::SUCCESS
    }
}

impl std::fmt::Debug for WcStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for WcStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: ibv_wc_status_str accepts any value and returns a static string (or NULL
        // when libibverbs is missing, which cannot be the case once a device is open).
        let s = unsafe { sys::ibv_wc_status_str(self.0) };
        if s.is_null() {
            return write!(f, "status {}", self.0);
        }
        // SAFETY: a static NUL-terminated string from libibverbs.
        let s = unsafe { CStr::from_ptr(s) };
        write!(f, "{} ({})", s.to_string_lossy(), self.0)
    }
}

/// A polled completion.
#[derive(Debug)]
pub enum Completion {
    /// A message arrived in `buf` (give the buffer back to the SRQ once consumed).
    Recv {
        /// The receive buffer, now owned by the caller.
        buf: Buf,
        /// Bytes received.
        len: usize,
        /// The status (a flushed receive carries no message).
        status: WcStatus,
    },
    /// A batch finished (or was flushed); its buffers are the caller's again.
    Batch {
        /// The token given to [`Endpoint::post`].
        token: u64,
        /// Success, or the first error of the batch.
        status: WcStatus,
        /// The Read target buffers.
        bufs: Vec<Buf>,
        /// The Send/Write sources.
        keep: Vec<Bytes>,
    },
}

/// Why a batch was not posted.
#[derive(Debug)]
pub enum PostError {
    /// The queue pair is gone (the connection closed).
    Closed,
    /// The send queue has no room for the batch now.
    Full,
    /// A Send or Write source is not inside the device's registered pool.
    NotRegistered,
    /// A request gathers more pieces than the queue pair allows.
    TooManySge,
    /// A Read names a buffer or range the batch does not have.
    BadRead,
    /// The provider refused the post.
    Verbs(io::Error),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostError::Closed => f.write_str("connection closed"),
            PostError::Full => f.write_str("send queue full"),
            PostError::NotRegistered => f.write_str("buffer outside the registered pool"),
            PostError::TooManySge => f.write_str("too many scatter/gather entries"),
            PostError::BadRead => f.write_str("read target out of range"),
            PostError::Verbs(e) => write!(f, "ibv_post_send: {e}"),
        }
    }
}

impl std::error::Error for PostError {}

/// Limits of an endpoint's send queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendCaps {
    /// Work requests the send queue holds.
    pub depth: u32,
    /// Scatter/gather entries per request.
    pub max_sge: u32,
    /// RDMA Reads we may have outstanding (our initiator depth).
    pub read_depth: u8,
}

/// How to accept a connection.
#[derive(Debug, Clone)]
pub struct AcceptOptions {
    /// Send queue depth wanted (clamped to the device).
    pub send_depth: u32,
    /// Receive completions the CQ must hold besides the send queue's (the credits granted).
    pub recv_depth: u32,
    /// Scatter/gather entries wanted per send request (clamped to the device).
    pub max_send_sge: u32,
    /// The private data to answer with (RFC 8797).
    pub private_data: Vec<u8>,
}

/// How to connect to a server (the requester's side).
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Send queue depth wanted (clamped to the device).
    pub send_depth: u32,
    /// Receive completions the CQ must hold besides the send queue's (the calls in flight).
    pub recv_depth: u32,
    /// Scatter/gather entries wanted per send request (clamped to the device).
    pub max_send_sge: u32,
    /// The private data to offer (RFC 8797).
    pub private_data: Vec<u8>,
    /// How long address and route resolution may each take.
    pub resolve_timeout: std::time::Duration,
}

struct InFlight {
    wrs: u32,
    bufs: Vec<Buf>,
    keep: Vec<Bytes>,
    status: Option<WcStatus>,
}

struct Inner {
    alive: bool,
    inflight: HashMap<u64, InFlight>,
    outstanding: u32,
}

/// An accepted RC connection.
pub struct Endpoint {
    // Drop order: the id (and its QP) first, then the CQ, then in-flight buffers, then the
    // device (SRQ, pool, PD).
    id: CmId,
    cq: Cq,
    inner: Mutex<Inner>,
    device: Arc<Device>,
    caps: SendCaps,
    peer: Option<SocketAddr>,
    disconnected: AtomicBool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("peer", &self.peer)
            .field("caps", &self.caps)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// Accepts a connection request that arrived on this device: creates its CQ and queue
    /// pair (receiving from the device's SRQ) and answers with `opts.private_data`. Must run
    /// inside a tokio runtime. On failure the request is rejected.
    pub fn accept(
        self: &Arc<Self>,
        mut req: ConnectRequest,
        opts: &AcceptOptions,
    ) -> io::Result<Arc<Endpoint>> {
        if req.device_key() != self.key() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "connection request for another device",
            ));
        }
        let attr = *self.attr();
        let id = req
            .id
            .take()
            .ok_or_else(|| io::Error::other("request already used"))?;
        let reject = |id: &CmId| {
            // SAFETY: the id is a connection request id not accepted.
            unsafe { sys::rdma_reject(id.as_ptr(), std::ptr::null(), 0) };
        };
        let (cq, caps) =
            match self.create_qp(&id, opts.send_depth, opts.recv_depth, opts.max_send_sge) {
                Ok(x) => x,
                Err(e) => {
                    reject(&id);
                    return Err(e);
                }
            };
        let read_depth = req
            .responder_resources
            .min(attr.max_qp_init_rd_atom.min(255) as u8)
            .max(1);
        // SAFETY: plain old data; all-zero is valid.
        let mut param: sys::rdma_conn_param = unsafe { std::mem::zeroed() };
        let pd_len = opts.private_data.len().min(u8::MAX as usize);
        param.private_data = opts.private_data.as_ptr().cast();
        param.private_data_len = pd_len as u8;
        param.responder_resources = req.initiator_depth.min(attr.max_qp_rd_atom.min(255) as u8);
        param.initiator_depth = read_depth;
        param.retry_count = 7;
        param.rnr_retry_count = 7;
        // SAFETY: the id has its QP; `param` and the private data it points to outlive the call.
        if unsafe { sys::rdma_accept(id.as_ptr(), &mut param) } != 0 {
            let e = io::Error::last_os_error();
            reject(&id);
            return Err(e);
        }
        Ok(Endpoint::new(
            id,
            cq,
            self.clone(),
            SendCaps { read_depth, ..caps },
            req.peer,
        ))
    }

    /// A CQ and an RC queue pair on `id` (which must be on this device) receiving from the
    /// device's SRQ; returns the CQ and the send queue's limits (no RDMA Reads yet).
    fn create_qp(
        &self,
        id: &CmId,
        send_depth: u32,
        recv_depth: u32,
        max_send_sge: u32,
    ) -> io::Result<(Cq, SendCaps)> {
        let attr = *self.attr();
        let depth = send_depth.clamp(1, attr.max_qp_wr.max(1));
        let max_sge = max_send_sge.clamp(1, attr.max_sge.max(1));
        let cqe = (depth + recv_depth + 16).min(attr.max_cqe.max(1));
        let cq = Cq::new(self.ctx(), cqe)?;
        // SAFETY: plain old data; all-zero is a valid starting point (null pointers).
        let mut qpa: sys::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
        qpa.send_cq = cq.as_ptr();
        qpa.recv_cq = cq.as_ptr();
        qpa.srq = self.srq().as_ptr();
        qpa.cap.max_send_wr = depth;
        qpa.cap.max_send_sge = max_sge;
        qpa.qp_type = sys::ibv_qp_type::IBV_QPT_RC;
        qpa.sq_sig_all = 0;
        // SAFETY: the caller's id is bound to this device's context; the PD, CQ and SRQ belong
        // to the same context and outlive the QP (the endpoint's fields).
        if unsafe { sys::rdma_create_qp(id.as_ptr(), self.pd().as_ptr(), &mut qpa) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let caps = SendCaps {
            depth: qpa.cap.max_send_wr.max(1).min(depth),
            max_sge: qpa.cap.max_send_sge.max(1).min(max_sge),
            read_depth: 0,
        };
        Ok((cq, caps))
    }
}

/// Waits for the next event on a connecting id's channel: Ok(private data) when it is `want`,
/// else an error naming the event.
async fn expect_event(channel: &EventChannel, want: u32) -> io::Result<Vec<u8>> {
    let (got, status, private_data) = channel
        .next(|e| (e.event, e.status, conn_private_data(e)))
        .await?;
    if got == want {
        return Ok(private_data);
    }
    Err(io::Error::new(
        io::ErrorKind::ConnectionRefused,
        format!(
            "{} instead of {} (status {status})",
            event_name(got),
            event_name(want)
        ),
    ))
}

impl Endpoint {
    /// Connects to the RPC-over-RDMA server at `addr` through whichever of `devices` routes
    /// there: resolves the address and route, creates the queue pair (receiving from that
    /// device's SRQ) and connects with `opts.private_data`. Returns the endpoint and the
    /// private data the server accepted with. Must run inside a tokio runtime.
    pub async fn connect(
        devices: &[Arc<Device>],
        addr: SocketAddr,
        opts: &ConnectOptions,
    ) -> io::Result<(Arc<Endpoint>, Vec<u8>)> {
        use sys::rdma_cm_event_type as t;
        let channel = EventChannel::new()?;
        let id = channel.create_id()?;
        let ms = opts.resolve_timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        let (mut dst, _) = std_to_sockaddr(addr);
        // SAFETY: the id is alive; `dst` holds a valid sockaddr of the right family and
        // outlives the call (librdmacm copies it).
        let rc = unsafe {
            sys::rdma_resolve_addr(
                id.as_ptr(),
                std::ptr::null_mut(),
                &mut dst as *mut _ as *mut _,
                ms,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        expect_event(&channel, t::RDMA_CM_EVENT_ADDR_RESOLVED).await?;
        // SAFETY: the id's address is resolved.
        if unsafe { sys::rdma_resolve_route(id.as_ptr(), ms) } != 0 {
            return Err(io::Error::last_os_error());
        }
        expect_event(&channel, t::RDMA_CM_EVENT_ROUTE_RESOLVED).await?;
        // SAFETY: after route resolution the id's `verbs` is the device context it is bound to.
        let ctx = unsafe { (*id.as_ptr()).verbs } as usize;
        let device = devices
            .iter()
            .find(|d| d.key() == ctx)
            .ok_or_else(|| io::Error::other(format!("no opened RDMA device routes to {addr}")))?
            .clone();
        let attr = *device.attr();
        let (cq, caps) =
            device.create_qp(&id, opts.send_depth, opts.recv_depth, opts.max_send_sge)?;
        // A block: the parameters (raw pointers) are not held across the wait below, so the
        // future stays Send.
        {
            // SAFETY: plain old data; all-zero is valid.
            let mut param: sys::rdma_conn_param = unsafe { std::mem::zeroed() };
            let pd_len = opts.private_data.len().min(u8::MAX as usize);
            param.private_data = opts.private_data.as_ptr().cast();
            param.private_data_len = pd_len as u8;
            // The server RDMA-Reads our Read chunks and never needs us to read its memory.
            param.responder_resources = attr.max_qp_rd_atom.min(255) as u8;
            param.initiator_depth = 0;
            param.retry_count = 7;
            param.rnr_retry_count = 7;
            // SAFETY: the id has its QP; `param` and the private data it points to outlive the call.
            if unsafe { sys::rdma_connect(id.as_ptr(), &mut param) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        let private_data = expect_event(&channel, t::RDMA_CM_EVENT_ESTABLISHED).await?;
        Ok((
            Endpoint::new(id, cq, device, caps, Some(addr)),
            private_data,
        ))
    }

    /// A connected endpoint with nothing posted yet.
    fn new(
        id: CmId,
        cq: Cq,
        device: Arc<Device>,
        caps: SendCaps,
        peer: Option<SocketAddr>,
    ) -> Arc<Endpoint> {
        Arc::new(Endpoint {
            id,
            cq,
            inner: Mutex::new(Inner {
                alive: true,
                inflight: HashMap::new(),
                outstanding: 0,
            }),
            device,
            caps,
            peer,
            disconnected: AtomicBool::new(false),
        })
    }
}

impl Endpoint {
    /// The key connection-manager events about this connection carry.
    pub fn key(&self) -> IdKey {
        self.id.key()
    }

    /// The peer's address.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// The device the connection is on.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Send queue limits.
    pub fn caps(&self) -> SendCaps {
        self.caps
    }

    /// Batches posted and not completed yet.
    pub fn pending_batches(&self) -> usize {
        self.inner.lock().inflight.len()
    }

    /// Posts `batch` under `token` (unique among this endpoint's pending batches); its
    /// completion is reported by [`Endpoint::poll`] as [`Completion::Batch`] with that token.
    /// On error nothing was posted and the batch's buffers are released.
    pub fn post(&self, token: u64, batch: Batch) -> Result<(), PostError> {
        let Batch { wrs, bufs } = batch;
        if wrs.is_empty() {
            return Ok(());
        }
        let n = wrs.len() as u32;
        if n > self.caps.depth {
            return Err(PostError::Full);
        }
        let pool = self.device.pool();
        // Scatter/gather lists first (every pointer they hold stays valid until the post).
        let mut sges: Vec<Vec<sys::ibv_sge>> = Vec::with_capacity(wrs.len());
        for wr in &wrs {
            let mut list = Vec::new();
            match wr {
                WorkRequest::Send { data, .. } | WorkRequest::Write { data, .. } => {
                    for d in data.iter().filter(|d| !d.is_empty()) {
                        let (addr, lkey) = pool.locate(d).ok_or(PostError::NotRegistered)?;
                        let length = u32::try_from(d.len()).map_err(|_| PostError::TooManySge)?;
                        list.push(sys::ibv_sge { addr, length, lkey });
                    }
                }
                WorkRequest::Read {
                    buf, offset, len, ..
                } => {
                    let b = bufs.get(*buf).ok_or(PostError::BadRead)?;
                    match offset.checked_add(*len as usize) {
                        Some(end) if end <= b.capacity() => {}
                        _ => return Err(PostError::BadRead),
                    }
                    list.push(sys::ibv_sge {
                        addr: b.addr() + *offset as u64,
                        length: *len,
                        lkey: pool.lkey(),
                    });
                }
            }
            if list.len() > self.caps.max_sge as usize {
                return Err(PostError::TooManySge);
            }
            sges.push(list);
        }
        let mut native: Vec<sys::ibv_send_wr> = Vec::with_capacity(wrs.len());
        for (i, (wr, list)) in wrs.iter().zip(sges.iter_mut()).enumerate() {
            let last = i + 1 == wrs.len();
            // SAFETY: ibv_send_wr is plain old data (pointers, integers, unions of those);
            // all-zero is a valid value.
            let mut w: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
            w.wr_id = token << 1 | u64::from(last);
            w.sg_list = if list.is_empty() {
                std::ptr::null_mut()
            } else {
                list.as_mut_ptr()
            };
            w.num_sge = list.len() as i32;
            w.send_flags = if last {
                sys::ibv_send_flags::IBV_SEND_SIGNALED.0
            } else {
                0
            };
            match wr {
                WorkRequest::Send { invalidate, .. } => match invalidate {
                    Some(rkey) => {
                        w.opcode = sys::ibv_wr_opcode::IBV_WR_SEND_WITH_INV;
                        w.imm_data_invalidated_rkey_union.invalidated_rkey = *rkey;
                    }
                    None => w.opcode = sys::ibv_wr_opcode::IBV_WR_SEND,
                },
                WorkRequest::Write {
                    rkey, remote_addr, ..
                } => {
                    w.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_WRITE;
                    w.wr.rdma = sys::rdma_t {
                        remote_addr: *remote_addr,
                        rkey: *rkey,
                    };
                }
                WorkRequest::Read {
                    rkey, remote_addr, ..
                } => {
                    w.opcode = sys::ibv_wr_opcode::IBV_WR_RDMA_READ;
                    w.wr.rdma = sys::rdma_t {
                        remote_addr: *remote_addr,
                        rkey: *rkey,
                    };
                }
            }
            native.push(w);
        }
        let base = native.as_mut_ptr();
        for i in 1..native.len() {
            // SAFETY: `i - 1` and `i` are in bounds; `native` is not resized afterwards.
            unsafe { (*base.add(i - 1)).next = base.add(i) };
        }
        let keep: Vec<Bytes> = wrs
            .into_iter()
            .flat_map(|w| match w {
                WorkRequest::Send { data, .. } | WorkRequest::Write { data, .. } => data,
                WorkRequest::Read { .. } => Vec::new(),
            })
            .collect();

        let mut inner = self.inner.lock();
        if !inner.alive {
            return Err(PostError::Closed);
        }
        if inner.outstanding + n > self.caps.depth {
            return Err(PostError::Full);
        }
        // The batch is recorded before the device can complete it (the poller takes the same
        // lock to look it up).
        inner.inflight.insert(
            token,
            InFlight {
                wrs: n,
                bufs,
                keep,
                status: None,
            },
        );
        inner.outstanding += n;
        let mut bad: *mut sys::ibv_send_wr = std::ptr::null_mut();
        // SAFETY: the QP is alive (`inner.alive`, under the lock that `destroy` takes); the
        // linked requests and their scatter/gather lists are valid for the call (the provider
        // copies them), and every byte they name is owned by the in-flight entry just inserted
        // until its completion is polled or the QP is destroyed.
        let rc = unsafe { sys::ibv_post_send((*self.id.as_ptr()).qp, base, &mut bad) };
        if rc == 0 {
            return Ok(());
        }
        let first_bad = if bad.is_null() {
            0
        } else {
            // SAFETY: a non-null `bad` points into the list that was posted.
            (unsafe { bad.offset_from(base) }) as usize
        };
        if first_bad == 0 {
            // Nothing was posted: the buffers can be released.
            inner.outstanding -= n;
            inner.inflight.remove(&token);
        } else {
            // Part of the batch is on the queue but its signaled request is not: keep the
            // buffers forever (never reused) and let the caller close the connection.
            tracing::error!(token, first_bad, "partial post; the connection must close");
        }
        Err(PostError::Verbs(io::Error::from_raw_os_error(rc)))
    }

    /// Polls completions into `out` (at most 32 per call); returns how many were polled.
    pub fn poll(&self, out: &mut Vec<Completion>) -> io::Result<usize> {
        // SAFETY: ibv_wc is plain old data; all-zero is valid.
        let mut wcs: [sys::ibv_wc; 32] = unsafe { std::mem::zeroed() };
        let n = self.cq.poll(&mut wcs)?;
        if n == 0 {
            return Ok(0);
        }
        let mut inner = self.inner.lock();
        for wc in &wcs[..n] {
            let status = WcStatus(wc.status);
            if wc.wr_id & RECV_TAG != 0 {
                match self.device.srq().take(wc.wr_id) {
                    Some(buf) => out.push(Completion::Recv {
                        len: (wc.byte_len as usize).min(buf.capacity()),
                        buf,
                        status,
                    }),
                    None => {
                        tracing::warn!(wr_id = wc.wr_id, "receive completion for no posted buffer")
                    }
                }
                continue;
            }
            let token = wc.wr_id >> 1;
            let last = wc.wr_id & 1 == 1;
            let Some(f) = inner.inflight.get_mut(&token) else {
                tracing::warn!(token, "completion for no pending batch");
                continue;
            };
            if !status.is_ok() && f.status.is_none() {
                f.status = Some(status);
            }
            if last {
                if let Some(f) = inner.inflight.remove(&token) {
                    inner.outstanding -= f.wrs;
                    out.push(Completion::Batch {
                        token,
                        status: f.status.unwrap_or(status),
                        bufs: f.bufs,
                        keep: f.keep,
                    });
                }
            }
        }
        Ok(n)
    }

    /// Asks for a completion event on the next completion (call before [`Endpoint::wait`],
    /// then poll once more to close the race).
    pub fn arm(&self) -> io::Result<()> {
        self.cq.arm()
    }

    /// Waits for a completion event.
    pub async fn wait(&self) -> io::Result<()> {
        self.cq.wait().await
    }

    /// Starts disconnecting (once): the queue pair goes to the error state and pending work is
    /// flushed back through [`Endpoint::poll`].
    pub fn disconnect(&self) {
        if !self.disconnected.swap(true, Ordering::AcqRel) {
            // SAFETY: the id is alive; disconnecting an id twice or one that is not connected
            // only returns an error, which does not matter here.
            unsafe { sys::rdma_disconnect(self.id.as_ptr()) };
        }
    }

    /// Destroys the queue pair (no more posts, no more device access to our memory) and
    /// returns the batches still pending as flushed completions.
    pub fn destroy(&self) -> Vec<Completion> {
        let mut inner = self.inner.lock();
        if inner.alive {
            inner.alive = false;
            // SAFETY: the QP exists (created in `accept`, destroyed only here or in the id's
            // drop); posts check `alive` under this lock, so none races with the destruction.
            unsafe { sys::rdma_destroy_qp(self.id.as_ptr()) };
        }
        inner.outstanding = 0;
        inner
            .inflight
            .drain()
            .map(|(token, f)| Completion::Batch {
                token,
                status: f.status.unwrap_or(WcStatus::FLUSHED),
                bufs: f.bufs,
                keep: f.keep,
            })
            .collect()
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // The QP goes before the CQ and the in-flight buffers (field order does the rest).
        let _ = self.destroy();
    }
}
