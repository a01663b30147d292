//! The RPC-over-RDMA version 1 transport engine: listens with RDMA-CM, accepts connections
//! with RFC 8797 private data, and serves each call through the same [`Dispatcher`] as TCP.
//!
//! Per call (the connection's completion task runs steps 2 to 6 itself when the call has no
//! Read chunks and its program can complete it without waiting for I/O,
//! [`Dispatcher::dispatch_nonblocking`], and otherwise hands it to a blocking thread that runs
//! them, program included; either leaves the reply's batch in the connection's outbox for the
//! completion task to post):
//!
//! 1. A receive completion on the connection's CQ: the message is copied out of the SRQ
//!    buffer (at most the inline size) and the buffer goes back to the SRQ (reposted in
//!    batches). The call is counted against the connection's credits; overrunning them closes
//!    the connection.
//! 2. [`Limits::accept_call`] decodes and validates the header. Failures follow their
//!    [`Disposition`]: RDMA_ERROR, silent discard, or close.
//! 3. Read chunks: the call is rebuilt in one bulk pool buffer, RDMA Reads of exactly the
//!    advertised segments landing at their final offsets and [`ReadPlan::fill`] copying the
//!    inline bytes around them; the program gets the WRITE payload from it with no copy.
//! 4. [`Dispatcher::dispatch_from`] with the connection as the call's origin (its transport
//!    kind, and the back channel NFSv4.1 callbacks go out on, RFC 8167).
//! 5. [`plan_reply`] with the call's Write list and Reply chunk and the negotiated inline size;
//!    a reply that cannot be conveyed becomes RDMA_ERROR / ERR_CHUNK.
//! 6. RDMA Writes (sources staged into registered buffers, [`crate::staging`]) and the Send
//!    (header + inline message, copied into a send buffer), posted as one batch so the Writes
//!    land first; Send With Invalidate when the peer allowed it and the call named exactly one
//!    R_key ([`remote_invalidate_rkey`]). The call ends there: the batch's completion, on the
//!    completion task, frees its send-queue slots and buffers.
//!
//! The credit of a call is returned just before its reply is posted. Credits granted are the
//! connection's share of its device's receive queue ([`Limits::fair_share`]).

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use sunrpc::{BackChannel, BulkAlloc, BulkBuf, Dispatcher, Origin, TransportKind};
use tokio::sync::{oneshot, Notify, Semaphore};
use verbs::{
    AcceptOptions, Batch, Buf, Class, CmEvent, Completion, ConnectRequest, Device, Endpoint, IdKey,
    Listener, Pool, PostError, WcStatus, WorkRequest,
};

/// The pool sizes of each device (re-exported so that configuring the transport needs no
/// direct dependency on the verbs crate).
pub use verbs::PoolConfig;

mod conn;
use conn::{Conn, PoolBulk, RdmaBack};

use crate::backchannel::{backward_call, backward_reply_credits, BackCredits};
use crate::ddp::{plan_reply, remote_invalidate_rkey, PlanError, SendPlan};
use crate::header::{ErrorKind, Proc};
use crate::limits::{Call, Disposition, Limits, ValidationError, MIN_SEND_DEPTH};
use crate::metrics::RdmaMetrics;
use crate::private_data::{negotiate, InlineConfig, Negotiated, PrivateData};
use crate::staging::{gather_send, read_requests, stage_writes, CreditGuard, Credits, Src};

/// The port NFS uses over RPC-over-RDMA (RFC 5666 / RFC 8267).
pub const NFS_RDMA_PORT: u16 = 20049;

/// Configuration of the RDMA transport.
#[derive(Debug, Clone)]
pub struct RdmaConfig {
    /// Where to listen; an unspecified address listens on every RDMA device.
    pub addr: SocketAddr,
    /// Most credits granted to a connection (calls in flight); each gets a fair share of its
    /// device's receive buffers up to this ([`Limits::fair_share`]).
    pub credits: u32,
    /// Our inline sizes (sent in the CM private data).
    pub inline: InlineConfig,
    /// Receive buffers (the SRQ depth, shared by all connections of a device), send buffers and
    /// bulk buffers. Receive and send sizes are set from `inline`.
    pub pool: PoolConfig,
    /// Send queue depth of each connection: its ring (and the CQ sized after it) is most of a
    /// connection's memory. At least [`MIN_SEND_DEPTH`]: a reply's batch (Write chunk and
    /// Reply chunk segments, then the Send) or a call's RDMA Reads must fit in it at once.
    pub send_depth: u32,
    /// Most connections per device; more are refused.
    pub max_conns: usize,
    /// Keep polling a connection's CQ for this long after its last work before sleeping on
    /// the completion channel (zero: event-driven only).
    pub busy_poll: Duration,
    /// Scatter/gather entries per send request.
    pub max_send_sge: u32,
    /// Listen backlog.
    pub backlog: i32,
}

impl Default for RdmaConfig {
    fn default() -> Self {
        RdmaConfig {
            addr: SocketAddr::from(([0, 0, 0, 0], NFS_RDMA_PORT)),
            credits: 128,
            inline: InlineConfig::default(),
            pool: PoolConfig {
                bulk_size: crate::limits::BULK_SIZE,
                ..PoolConfig::default()
            },
            // 128 ring slots on providers that round depth + 1 up to a power of two (rxe); the
            // CQ (this + 2 x credits + 16 entries) then rounds to 512
            send_depth: 127,
            max_conns: 1024,
            busy_poll: Duration::ZERO,
            max_send_sge: 16,
            backlog: 128,
        }
    }
}

/// Why the transport did not start.
#[derive(Debug)]
pub enum StartError {
    /// RDMA is not usable on this machine (no libraries, no devices).
    Unavailable(verbs::Unavailable),
    /// Listening failed.
    Io(io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Unavailable(u) => write!(f, "{u}"),
            StartError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for StartError {}

/// A bound RPC-over-RDMA listener with its devices, ready to [`RdmaServer::serve`].
pub struct RdmaServer {
    listener: Listener,
    devices: Vec<Arc<Device>>,
    cfg: RdmaConfig,
    metrics: Arc<RdmaMetrics>,
}

impl std::fmt::Debug for RdmaServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaServer")
            .field("listener", &self.listener)
            .field("devices", &self.device_names())
            .finish_non_exhaustive()
    }
}

impl RdmaServer {
    /// Opens the devices (registering each device's pool once) and listens. Must run inside a
    /// tokio runtime.
    pub fn bind(mut cfg: RdmaConfig) -> Result<RdmaServer, StartError> {
        cfg.pool.recv_size = cfg.inline.max_recv() as usize;
        cfg.pool.send_size = cfg.inline.max_send() as usize;
        cfg.credits = cfg.credits.max(1);
        cfg.send_depth = cfg.send_depth.max(MIN_SEND_DEPTH);
        let devices = verbs::open_devices(cfg.pool).map_err(StartError::Unavailable)?;
        let listener = Listener::bind(cfg.addr, cfg.backlog).map_err(StartError::Io)?;
        let metrics = Arc::new(RdmaMetrics::default());
        metrics.set_devices(devices.clone());
        Ok(RdmaServer {
            listener,
            devices,
            cfg,
            metrics,
        })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// Names of the devices served.
    pub fn device_names(&self) -> Vec<String> {
        self.devices.iter().map(|d| d.name().to_string()).collect()
    }

    /// The transport's metrics (add them to the RPC metrics as a source).
    pub fn metrics(&self) -> Arc<RdmaMetrics> {
        self.metrics.clone()
    }

    /// Serves connections until the listener fails; a failure is logged and then this waits
    /// forever, so that the other transports keep serving.
    pub async fn serve(self, disp: Arc<Dispatcher>) -> io::Result<()> {
        let shares = self
            .devices
            .iter()
            .map(|d| {
                let recv = d.pool().config().recv_count;
                Arc::new(DevShare {
                    device: d.clone(),
                    // buffers awaiting their batched repost are not posted
                    recv: recv.saturating_sub(verbs::REPOST_BATCH - 1),
                    conns: AtomicUsize::new(0),
                })
            })
            .collect();
        let srv = Arc::new(Shared {
            conns: Mutex::new(HashMap::new()),
            shares,
            cfg: self.cfg,
            metrics: self.metrics,
            disp,
        });
        loop {
            let ev = match self.listener.next().await {
                Ok(ev) => ev,
                Err(e) => {
                    tracing::error!(error = %e, "RDMA connection manager failed; RDMA stops");
                    break;
                }
            };
            match ev {
                CmEvent::ConnectRequest(req) => srv.connect(req),
                CmEvent::Established(k) => {
                    if let Some(c) = srv.conn(k) {
                        tracing::info!(peer = %c.peer, device = c.ep.device().name(), send = c.nego.send, recv = c.nego.recv, remote_invalidate = c.nego.remote_invalidate, "RDMA connection established");
                    }
                }
                CmEvent::Disconnected(k) => {
                    if let Some(c) = srv.conn(k) {
                        c.close("peer disconnected");
                    }
                }
                CmEvent::DeviceRemoval(k) => {
                    if k == self.listener.key() {
                        tracing::error!("the RDMA device went away; RDMA stops");
                        break;
                    }
                    if let Some(c) = srv.conn(k) {
                        c.close("device removed");
                    }
                }
                CmEvent::Failed { id, what, status } => {
                    if let Some(c) = srv.conn(id) {
                        tracing::warn!(peer = %c.peer, what, status, "RDMA connection failed");
                        c.close(what);
                    }
                }
                CmEvent::Other { id, what } => tracing::debug!(id, what, "RDMA CM event"),
            }
        }
        std::future::pending::<()>().await;
        Ok(())
    }
}

/// What the connections of one device share: its receive queue's buffers.
struct DevShare {
    device: Arc<Device>,
    /// Receive buffers posted at any time (at least).
    recv: usize,
    /// Connections on the device.
    conns: AtomicUsize,
}

struct Shared {
    conns: Mutex<HashMap<IdKey, Arc<Conn>>>,
    shares: Vec<Arc<DevShare>>,
    cfg: RdmaConfig,
    metrics: Arc<RdmaMetrics>,
    disp: Arc<Dispatcher>,
}

impl Shared {
    fn conn(&self, k: IdKey) -> Option<Arc<Conn>> {
        self.conns.lock().get(&k).cloned()
    }

    fn connect(self: &Arc<Self>, req: ConnectRequest) {
        let peer = req
            .peer
            .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        let refuse = |why: &str, req: ConnectRequest| {
            tracing::warn!(%peer, why, "refusing RDMA connection");
            RdmaMetrics::inc(&self.metrics.connections_refused);
            req.reject();
        };
        let Some(share) = self
            .shares
            .iter()
            .find(|s| s.device.key() == req.device_key())
            .cloned()
        else {
            return refuse("request on a device that was not set up", req);
        };
        let dev = &share.device;
        // The receive queue does not limit connections: grants shrink as connections arrive
        // (Limits::fair_share) and a dry queue is retried by the client (RNR, rnr_retry 7).
        if share.conns.load(Ordering::Acquire) >= self.cfg.max_conns {
            return refuse(
                "connection limit of the device reached (--rdma-max-conns)",
                req,
            );
        }
        let theirs = PrivateData::parse(&req.private_data);
        let nego = negotiate(self.cfg.inline, theirs);
        let opts = AcceptOptions {
            send_depth: self.cfg.send_depth,
            recv_depth: 2 * self.cfg.credits,
            max_send_sge: self.cfg.max_send_sge,
            private_data: self.cfg.inline.private_data().encode().to_vec(),
        };
        let ep = match dev.accept(req, &opts) {
            Ok(ep) => ep,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "accepting an RDMA connection failed");
                RdmaMetrics::inc(&self.metrics.connections_refused);
                return;
            }
        };
        let depth = ep.caps().depth as usize;
        let conn = Arc::new_cyclic(|me| Conn {
            back: Arc::new(RdmaBack {
                conn: me.clone(),
                id: sunrpc::callback::next_conn_id(),
                rt: tokio::runtime::Handle::current(),
            }),
            bc: BackCredits::default(),
            limits: Limits {
                max_inline: nego.recv as usize,
                max_credits: self.cfg.credits,
                ..Limits::default()
            },
            pool: dev.pool().clone(),
            bulk_size: dev.pool().config().bulk_size,
            bulk: Arc::new(PoolBulk {
                pool: dev.pool().clone(),
                size: dev.pool().config().bulk_size,
            }),
            credits: Arc::new(Credits::default()),
            share: share.clone(),
            waiters: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
            sq: Semaphore::new(depth),
            closing: AtomicBool::new(false),
            outbox: Mutex::new(Vec::new()),
            wake: Notify::new(),
            client: self.disp.metrics().client(peer),
            srv: self.clone(),
            peer,
            nego,
            ep,
        });
        tracing::debug!(%peer, private_data = ?theirs, ?nego, caps = ?conn.ep.caps(), "accepted RDMA connection");
        self.conns.lock().insert(conn.ep.key(), conn.clone());
        share.conns.fetch_add(1, Ordering::AcqRel);
        RdmaMetrics::inc(&self.metrics.connections_accepted);
        self.metrics.connections.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(conn.run());
    }
}
