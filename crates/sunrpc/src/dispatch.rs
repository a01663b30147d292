//! Routing a decoded call to its program, and the transport-independent reply rules.
//!
//! Transports (TCP, UDP, RPC-over-RDMA) hand [`Dispatcher::dispatch`] one complete call message
//! and get back a [`Reply`] whose bulk payload is kept as separate segments.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use xdr::{Decoder, Encoder, Reply};

use crate::drc::{DrcKey, DrcLookup, DuplicateCache};
use crate::gss::{GssCaller, GssServer, Seal, Verdict};
use crate::metrics::{ClientStats, ProcStats, RpcMetrics};
use crate::msg::{self, AcceptStat, AuthStat, CallHeader, Credential, HeaderError};

/// Which transport carried a call; programs may behave differently (e.g. size limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// RPC over TCP with record marking.
    Tcp,
    /// RPC over UDP datagrams.
    Udp,
    /// RPC-over-RDMA version 1.
    Rdma,
}

/// Sends RPC calls back to a client over the connection its calls arrive on (the NFSv4.1
/// back channel, RFC 8881 section 2.10.3.1).
pub trait BackChannel: Send + Sync {
    /// Queues a complete RPC call message; false when the connection is gone or congested.
    fn send_call(&self, msg: Reply) -> bool;

    /// The connection's identity in [`crate::callback`], under which its replies arrive.
    fn id(&self) -> u64;
}

impl std::fmt::Debug for dyn BackChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BackChannel")
    }
}

/// Memory for bulk reply payloads (READ data) offered by a transport that can send from its own
/// buffers without copying them: over RPC-over-RDMA, registered memory that an RDMA Write
/// places straight into the client's buffer.
pub trait BulkAlloc: Send + Sync {
    /// A buffer of at least `len` bytes, or None when the transport has none to offer now (the
    /// program then uses ordinary memory and the transport copies).
    fn alloc(&self, len: usize) -> Option<Box<dyn BulkBuf>>;
}

impl std::fmt::Debug for dyn BulkAlloc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BulkAlloc")
    }
}

/// A transport buffer being filled with a bulk payload.
pub trait BulkBuf: Send {
    /// The whole buffer, filled from its start.
    fn as_mut_slice(&mut self) -> &mut [u8];
    /// The first `len` bytes as the payload; the buffer returns to the transport when the last
    /// reference to them is dropped.
    fn freeze(self: Box<Self>, len: usize) -> Bytes;
}

/// Where a call came from and what its transport offers the procedure.
#[derive(Debug, Clone)]
pub struct Origin {
    /// Caller's address and source port.
    pub peer: SocketAddr,
    /// The address the call came to, when the transport knows it (the address a client
    /// mounted, which calls back to it come from).
    pub local: Option<SocketAddr>,
    /// Transport the call came over.
    pub transport: TransportKind,
    /// The connection, for calls back to the client, when the transport offers one.
    pub back: Option<Arc<dyn BackChannel>>,
    /// Transport memory for bulk payloads, when the transport can send from it without a copy.
    pub bulk: Option<Arc<dyn BulkAlloc>>,
    /// The transport sends file pages ([`xdr::Segment::Pages`]) to this caller without copying.
    pub pages: bool,
    /// The caller's traffic counters, which a connection finds once
    /// ([`RpcMetrics::client`]); None: the dispatcher finds them for each call (UDP).
    pub client: Option<Arc<ClientStats>>,
}

/// Everything a procedure knows about its caller.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Transaction id.
    pub xid: u32,
    /// Program version.
    pub vers: u32,
    /// Procedure number.
    pub proc_: u32,
    /// Caller's credential; for RPCSEC_GSS, the identity its principal maps to (AUTH_SYS
    /// with the mapped ids, or [`Credential::None`] when it maps to none).
    pub cred: Credential,
    /// The RPCSEC_GSS principal and service, when the call came under a GSS context.
    pub gss: Option<Arc<GssCaller>>,
    /// Caller's address and source port.
    pub peer: SocketAddr,
    /// The address the call came to, when the transport knows it (see [`Origin::local`]).
    pub local: Option<SocketAddr>,
    /// Transport the call came over.
    pub transport: TransportKind,
    /// The connection, for calls back to the client, when the transport offers one.
    pub back: Option<std::sync::Arc<dyn BackChannel>>,
    /// Transport memory for bulk payloads (see [`BulkAlloc`]).
    pub bulk: Option<std::sync::Arc<dyn BulkAlloc>>,
    /// The transport sends file pages to this caller without copying (see [`Origin::pages`]).
    pub pages: bool,
    /// Tried on the thread that reads the connection with no other call of it received
    /// behind this one ([`Dispatcher::dispatch_nonblocking`]): work that takes a while without
    /// blocking (a large READ from the page cache) holds up nobody there, and a hand-off to a
    /// worker would cost more than it saves.
    pub alone: bool,
}

impl CallContext {
    /// Whether the call counts as from a privileged source (the `secure` export option): a
    /// TCP or UDP port below 1024, or RPC-over-RDMA, whose connections come from no port a
    /// peer's privilege shows in (knfsd's svcrdma marks every RDMA request secure, and the
    /// Linux client, pNFS data server connections included, connects from any port).
    pub fn from_privileged_port(&self) -> bool {
        self.transport == TransportKind::Rdma || self.peer.port() < 1024
    }

    /// The security flavor the call came with.
    pub fn flavor(&self) -> AuthFlavor {
        match (&self.gss, &self.cred) {
            (Some(g), _) => AuthFlavor::Gss(g.service),
            (None, Credential::Sys(_)) => AuthFlavor::Sys,
            (None, _) => AuthFlavor::None,
        }
    }
}

/// The security flavor of a call, as exports' `sec=` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthFlavor {
    /// AUTH_NONE.
    None,
    /// AUTH_SYS.
    Sys,
    /// RPCSEC_GSS with the Kerberos V5 mechanism and this service.
    Gss(crate::gss::wire::GssService),
}

impl AuthFlavor {
    /// The name exports' `sec=` gives the flavor.
    pub fn name(self) -> &'static str {
        match self {
            AuthFlavor::None => "none",
            AuthFlavor::Sys => "sys",
            AuthFlavor::Gss(s) => s.krb5_name(),
        }
    }
}

/// The transport's offer for a READ-like payload: file pages for a stream that splices (the
/// transport sends them to this caller without copying, see [`crate::tcp::SpliceReads`]), or a
/// buffer of the transport (registered memory for RDMA).
impl xdr::PayloadTarget for CallContext {
    fn takes_pages(&self) -> bool {
        self.pages
    }

    fn fill(&self, len: usize, fill: &mut dyn FnMut(&mut [u8]) -> usize) -> Option<Bytes> {
        let mut buf = self.bulk.as_ref()?.alloc(len)?;
        let s = buf.as_mut_slice();
        let n = len.min(s.len());
        let k = fill(&mut s[..n]);
        Some(buf.freeze(k.min(n)))
    }
}

/// Why a procedure produced no normal result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProcError {
    /// The procedure number is not defined for this version.
    #[error("procedure unavailable")]
    ProcUnavail,
    /// The arguments could not be decoded.
    #[error("garbage arguments")]
    GarbageArgs,
    /// An internal failure not expressible in the program's own status codes.
    #[error("system error")]
    SystemErr,
    /// The credential is not acceptable for this call.
    #[error("authentication error {0:?}")]
    Auth(AuthStat),
}

impl From<xdr::XdrError> for ProcError {
    fn from(_: xdr::XdrError) -> Self {
        ProcError::GarbageArgs
    }
}

/// An RPC program (NFS, MOUNT, portmapper...) served by the dispatcher.
pub trait Program: Send + Sync + 'static {
    /// Program number.
    fn program(&self) -> u32;
    /// Lowest and highest supported versions.
    fn versions(&self) -> (u32, u32);
    /// Procedure name for logs and metrics; `None` when the procedure does not exist.
    fn proc_name(&self, vers: u32, proc_: u32) -> Option<&'static str>;
    /// Whether the call does without the duplicate request cache: repeating it is harmless,
    /// or its protocol recognises a retransmission itself (NFSv4.1 sessions). Others go
    /// through the DRC. `args`: the call's arguments, not yet decoded.
    fn skips_drc(&self, _vers: u32, _proc_: u32, _args: &Decoder) -> bool {
        true
    }
    /// The kind of call this is for admission (the export its file handle is on): calls of
    /// one kind run on at most the dispatcher's share of the threads, the rest wait for one of
    /// them to finish without holding a thread (see [`crate::admission`]). `args`: the call's
    /// arguments, not yet decoded. None: not held back (the default).
    fn admission(&self, _vers: u32, _proc_: u32, _args: &Decoder) -> Option<u64> {
        None
    }
    /// Executes a call whose accepted SUCCESS header is already in `reply`; appends the result.
    fn call(&self, ctx: &CallContext, args: Decoder, reply: &mut Encoder) -> Result<(), ProcError>;
    /// Like [`Program::call`], on a thread that must not block (the one reading the
    /// connection): `None` when the call would have to wait for I/O (or is never tried this
    /// way), and then nothing it did may matter: it runs again with [`Program::call`] on a
    /// thread that may block. The duplicate request cache applies as for [`Program::call`]
    /// (the dispatcher's, around both).
    fn call_nonblocking(
        &self,
        _ctx: &CallContext,
        _args: Decoder,
        _reply: &mut Encoder,
    ) -> Option<Result<(), ProcError>> {
        None
    }
    /// Takes the handles of the counters the program feeds itself (NFS errors by status, I/O
    /// bytes: [`RpcMetrics::nfs`]); called by each dispatcher that registers the program, all
    /// of which share one registry in rnfsd.
    fn register_metrics(&self, _metrics: &RpcMetrics) {}
}

/// RPCSEC_GSS calls with arguments up to this size are tried on the thread that reads the
/// connection (see [`Dispatcher::dispatch_nonblocking`]).
const GSS_TRY_MAX_ARGS: usize = 4096;

/// Procedures whose counters are found by index (every program's procedures are below it).
const PROC_TABLE: u32 = 64;

/// A program served, with the counters of its procedures resolved once: a call finds them by
/// index, not through the registry's lock and map.
struct Registered {
    prog: Arc<dyn Program>,
    number: u32,
    versions: (u32, u32),
    /// By version (from the lowest), then procedure, below [`PROC_TABLE`].
    stats: Vec<Vec<Option<ProcStats>>>,
}

impl Registered {
    fn serves(&self, vers: u32) -> bool {
        (self.versions.0..=self.versions.1).contains(&vers)
    }

    /// Records a call of `proc_` (named `name`) of version `vers` that took `secs`.
    fn observe(&self, metrics: &RpcMetrics, vers: u32, proc_: u32, name: &'static str, secs: f64) {
        let found = self
            .stats
            .get(vers.wrapping_sub(self.versions.0) as usize)
            .and_then(|v| v.get(proc_ as usize))
            .and_then(Option::as_ref);
        match found {
            Some(s) => s.observe(secs),
            None => metrics.observe(self.number, name, secs),
        }
    }
}

/// Calls running (what [`Dispatcher::drained`] waits for, and the metrics' calls-in-flight
/// gauge sums at a scrape: one count per call for both), and whether the server is stopping
/// (see [`Dispatcher::stop`]).
#[derive(Default)]
struct Running {
    count: Arc<std::sync::atomic::AtomicUsize>,
    stopping: std::sync::atomic::AtomicBool,
    /// Whether this server may still answer (a head holding its identity: [`Dispatcher::set_fence`]).
    fence: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
}

/// A call counted as running until dropped.
struct RunGuard<'a>(&'a Running);

impl Running {
    /// Counts a call in, unless the server is stopping. Count first, look after (and
    /// [`Dispatcher::stop`] the other way round): a call that does not see the flag is one
    /// the stop sees running and waits for.
    fn enter(&self) -> Option<RunGuard<'_>> {
        use std::sync::atomic::Ordering::SeqCst;
        let guard = RunGuard(self);
        self.count.fetch_add(1, SeqCst);
        let fenced = match &self.fence {
            Some(holds) => !holds(),
            None => false,
        };
        (!self.stopping.load(SeqCst) && !fenced).then_some(guard)
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.0
            .count
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Routes calls to programs, applies the duplicate request cache and records metrics.
pub struct Dispatcher {
    /// Programs, one entry per implementation (e.g. NFSv3 and NFSv4 apart): a handful, scanned.
    programs: Vec<Registered>,
    drc: DuplicateCache,
    metrics: Arc<RpcMetrics>,
    running: Running,
    /// The RPCSEC_GSS acceptor; `None`: RPCSEC_GSS calls are refused as an unknown flavor.
    gss: Option<Arc<GssServer>>,
    /// Permits by kind of call ([`Program::admission`]); `None`: no call is held back.
    admission: Option<crate::admission::Admission>,
}

impl Dispatcher {
    /// A dispatcher whose duplicate request cache keeps `drc_entries` replies.
    pub fn new(drc_entries: usize, metrics: Arc<RpcMetrics>) -> Self {
        let running = Running::default();
        metrics.count_in_flight(&running.count);
        Self {
            programs: Vec::new(),
            drc: DuplicateCache::new(drc_entries),
            metrics,
            running,
            gss: None,
            admission: None,
        }
    }

    /// Runs at most `permits` calls of one kind at once ([`Program::admission`]): with fewer
    /// than the transport's threads, a kind whose calls all block (a stalled file system)
    /// leaves threads to the others.
    pub fn set_admission(&mut self, permits: usize) {
        self.admission = Some(crate::admission::Admission::new(permits));
    }

    /// The permits call `msg` must take one of before it runs on a thread that may block;
    /// None when it is not held back (no admission, a call its program gives no kind, an
    /// RPCSEC_GSS call under privacy, whose arguments are encrypted). The arguments are only
    /// peeked at, before the call is authenticated: a forged call can at worst wait for the
    /// permits of an export it names, as it could with AUTH_SYS.
    pub fn admission_for(&self, msg: &Bytes) -> Option<Arc<tokio::sync::Semaphore>> {
        let adm = self.admission.as_ref()?;
        let (hdr, mut args) = msg::decode_call(msg.clone()).ok()?;
        if let Some(g) = &hdr.gss {
            use crate::gss::wire::{GssProc, GssService};
            if g.cred.proc_ != GssProc::Data {
                return None;
            }
            match g.cred.service {
                // the arguments in the clear
                GssService::None => {}
                // rpc_gss_integ_data: the sequence number and the arguments in the clear,
                // then their checksum
                GssService::Integrity => {
                    let mut body = Decoder::new(args.opaque(args.remaining()).ok()?);
                    body.u32().ok()?;
                    args = body;
                }
                GssService::Privacy => return None,
            }
        }
        let key = self
            .find(hdr.prog, hdr.vers)?
            .prog
            .admission(hdr.vers, hdr.proc_, &args)?;
        adm.permits_of(key)
    }

    /// Answers calls only while `holds` says so (a head of a cluster while it holds its
    /// identity's lease): the others are dropped unanswered, as after [`Dispatcher::stop`], so
    /// that no reply leaves a head another may already have replaced.
    pub fn set_fence(&mut self, holds: Arc<dyn Fn() -> bool + Send + Sync>) {
        self.running.fence = Some(holds);
    }

    /// Accepts RPCSEC_GSS calls with `gss`.
    pub fn set_gss(&mut self, gss: Arc<GssServer>) {
        self.gss = Some(gss);
    }

    /// The RPCSEC_GSS acceptor, if any.
    pub fn gss(&self) -> Option<&Arc<GssServer>> {
        self.gss.as_ref()
    }

    /// Stops taking calls (a server that is stopping): calls that arrive from now on are
    /// dropped unanswered, and their clients send them again to the next instance, as after
    /// a lost reply. Calls already running finish ([`Dispatcher::drained`]).
    pub fn stop(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.running.stopping.store(true, SeqCst);
    }

    /// Waits until no call is running (after [`Dispatcher::stop`]), at most `limit`; false
    /// when some still were.
    pub async fn drained(&self, limit: std::time::Duration) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let until = Instant::now() + limit;
        while self.running.count.load(SeqCst) > 0 {
            if Instant::now() >= until {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        true
    }

    /// Serves `p` under its program number, beside other versions already registered.
    pub fn register(&mut self, p: Arc<dyn Program>) {
        p.register_metrics(&self.metrics);
        let (number, (lo, hi)) = (p.program(), p.versions());
        let stats = (lo..=hi)
            .map(|v| {
                (0..PROC_TABLE)
                    .map(|n| Some(self.metrics.stats(number, p.proc_name(v, n)?)))
                    .collect()
            })
            .collect();
        self.programs.push(Registered {
            prog: p,
            number,
            versions: (lo, hi),
            stats,
        });
    }

    /// The implementation of program `prog` that serves version `vers`.
    fn find(&self, prog: u32, vers: u32) -> Option<&Registered> {
        self.programs
            .iter()
            .find(|r| r.number == prog && r.serves(vers))
    }

    /// Program numbers and version ranges served, for the port mapper.
    pub fn programs(&self) -> Vec<(u32, u32, u32)> {
        let mut v: Vec<_> = self
            .programs
            .iter()
            .map(|r| (r.number, r.versions.0, r.versions.1))
            .collect();
        v.sort_unstable();
        v
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<RpcMetrics> {
        &self.metrics
    }

    /// Executes one call message; `None` means no reply must be sent (garbage or a retransmit
    /// of a call still in progress).
    pub fn dispatch(
        &self,
        msg: Bytes,
        peer: SocketAddr,
        transport: TransportKind,
    ) -> Option<Reply> {
        self.dispatch_with(msg, peer, transport, None)
    }

    /// [`Dispatcher::dispatch`] for a connection that can carry calls back to the client.
    pub fn dispatch_with(
        &self,
        msg: Bytes,
        peer: SocketAddr,
        transport: TransportKind,
        back: Option<Arc<dyn BackChannel>>,
    ) -> Option<Reply> {
        let origin = Origin {
            peer,
            local: None,
            transport,
            back,
            bulk: None,
            pages: false,
            client: None,
        };
        self.dispatch_from(msg, origin)
    }

    /// [`Dispatcher::dispatch`] with everything the transport offers.
    pub fn dispatch_from(&self, msg: Bytes, mut origin: Origin) -> Option<Reply> {
        let _running = self.running.enter()?;
        let client = origin
            .client
            .take()
            .unwrap_or_else(|| self.metrics.client(origin.peer));
        let received = msg.len();
        let reply = self.execute(msg, origin);
        client.record(received, reply.as_ref().map_or(0, Reply::wire_len));
        reply
    }

    /// Decodes, routes and runs one call: [`Dispatcher::dispatch_from`] less the counting of
    /// the caller's traffic.
    fn execute(&self, msg: Bytes, mut origin: Origin) -> Option<Reply> {
        let peer = origin.peer;
        let msg_len = msg.len();
        let (mut hdr, args) = match msg::decode_call(msg) {
            Ok(x) => x,
            Err(e) => return self.header_error(e),
        };
        let xid = hdr.xid;
        // RPCSEC_GSS: authenticate and unwrap first, so that every accepted reply, errors
        // included, carries the context's verifier.
        let (args, gss) = match hdr.gss.take() {
            None => (args, None),
            Some(g) => {
                let Some(server) = &self.gss else {
                    let stat = AuthStat::BadCred;
                    return self.header_error(HeaderError::Auth { xid, stat });
                };
                let max = args.remaining();
                match server.accept(peer.ip(), xid, hdr.proc_, &g, args, max) {
                    Verdict::Call { args, caller, seal } => {
                        hdr.cred = caller.credential();
                        if caller.service != crate::gss::wire::GssService::None {
                            // the reply is signed or encrypted whole: no payload placed or
                            // spliced apart from it
                            origin.pages = false;
                            origin.bulk = None;
                        }
                        (args, Some((server, caller, seal)))
                    }
                    Verdict::Answer(r) => return Some(r),
                    Verdict::Drop => return None,
                }
            }
        };
        let seal = gss.as_ref().map(|(s, _, seal)| (s.as_ref(), seal));
        let Some(reg) = self.find(hdr.prog, hdr.vers) else {
            let impls = self.programs.iter().filter(|r| r.number == hdr.prog);
            let Some(lo) = impls.clone().map(|r| r.versions.0).min() else {
                self.metrics.count_error("prog_unavail");
                return answer(xid, seal, AcceptStat::ProgUnavail, &[]);
            };
            self.metrics.count_error("prog_mismatch");
            let hi = impls.map(|r| r.versions.1).max().unwrap_or(0);
            return answer(xid, seal, AcceptStat::ProgMismatch, &[lo, hi]);
        };
        let prog = &reg.prog;
        let Some(name) = prog.proc_name(hdr.vers, hdr.proc_) else {
            self.metrics.count_error("proc_unavail");
            return answer(xid, seal, AcceptStat::ProcUnavail, &[]);
        };
        let cached = !prog.skips_drc(hdr.vers, hdr.proc_, &args);
        // A GSS retransmission has a new sequence number, so a new verifier and wrapping:
        // it is matched by what it carries unwrapped, and by whom.
        let key = DrcKey {
            peer,
            xid,
            prog: hdr.prog,
            vers: hdr.vers,
            proc_: hdr.proc_,
            len: match &gss {
                None => msg_len,
                Some(_) => args.remaining(),
            },
            principal: gss.as_ref().map_or(0, |(_, c, _)| c.principal_key()),
        };
        if cached {
            if let Err(again) = self.drc_begin(key, seal) {
                return again;
            }
        }
        let start = Instant::now();
        let (vers, proc_) = (hdr.vers, hdr.proc_);
        let caller = gss.as_ref().map(|(_, c, _)| c.clone());
        let ctx = call_context(hdr, origin, caller);
        let reply = match seal {
            None => {
                let mut e = reply_encoder(xid);
                let r = prog.call(&ctx, args, &mut e);
                let reply = self.finish(xid, peer, r, e);
                if cached {
                    self.drc_keep(key, &reply);
                }
                Some(reply)
            }
            Some((server, seal)) => {
                let mut body = Encoder::with_capacity(512);
                let r = prog.call(&ctx, args, &mut body);
                if cached {
                    match &r {
                        Ok(()) if body.len() <= crate::drc::MAX_CACHED_REPLY => {
                            let kept = body.finish();
                            let bytes = kept.to_bytes();
                            self.drc.finish(key, bytes);
                            body = Encoder::new();
                            body.append(kept);
                        }
                        _ => self.drc.forget(key),
                    }
                }
                match r {
                    Ok(()) => server.seal(seal, xid, Ok(body)),
                    Err(ProcError::Auth(stat)) => {
                        Some(self.finish(xid, peer, Err(ProcError::Auth(stat)), body))
                    }
                    Err(err) => {
                        tracing::debug!(xid = xid, peer = %peer, error = %err, "call failed");
                        self.count_proc_error(err);
                        server.seal(seal, xid, Err((proc_error_stat(err), &[])))
                    }
                }
            }
        };
        let secs = start.elapsed().as_secs_f64();
        reg.observe(&self.metrics, vers, proc_, name, secs);
        reply
    }

    /// Marks call `key` as running in the duplicate request cache: Err with what to answer
    /// when it ran or runs already (None: nothing, the original's reply is still to come;
    /// else its reply again, sealed under this call's `seal` for RPCSEC_GSS).
    fn drc_begin(
        &self,
        key: DrcKey,
        seal: Option<(&GssServer, &crate::gss::Seal)>,
    ) -> Result<(), Option<Reply>> {
        match self.drc.begin(key) {
            DrcLookup::New => Ok(()),
            DrcLookup::InProgress => {
                self.metrics.count_error("drc_in_progress");
                Err(None)
            }
            DrcLookup::Done(r) => {
                self.metrics.count_error("drc_hit");
                Err(match seal {
                    None => Some(Reply {
                        segments: vec![xdr::Segment::Inline(r)],
                    }),
                    // the results again, sealed under this call's sequence number
                    Some((server, seal)) => {
                        let mut body = Encoder::with_capacity(r.len());
                        body.opaque_fixed(&r);
                        server.seal(seal, key.xid, Ok(body))
                    }
                })
            }
        }
    }

    /// Keeps the reply of call `key` for its retransmissions; a large one (a READ's, safe to
    /// run again) is not held.
    fn drc_keep(&self, key: DrcKey, reply: &Reply) {
        if reply.wire_len() <= crate::drc::MAX_CACHED_REPLY {
            self.drc.finish(key, reply.to_bytes());
        } else {
            self.drc.forget(key);
        }
    }

    /// Runs the call on this thread when its program can complete it without blocking (see
    /// [`Program::call_nonblocking`]): `Some` with what [`Dispatcher::dispatch_from`] would
    /// have returned, `None` when it must be dispatched there, on a thread that may block.
    /// `alone`: no other call of the connection is waiting behind this one ([`CallContext::alone`]).
    pub fn dispatch_nonblocking(
        &self,
        msg: &Bytes,
        origin: &Origin,
        alone: bool,
    ) -> Option<Option<Reply>> {
        let Some(_running) = self.running.enter() else {
            return Some(None);
        };
        let (mut hdr, args) = msg::decode_call(msg.clone()).ok()?;
        let (args, gss) = match hdr.gss.take() {
            None => (args, None),
            // a small RPCSEC_GSS data call: authenticated here without taking its sequence
            // number, which only a call that runs to its end here takes (one that gives up
            // is authenticated again on a worker); a large one goes to a worker at once, or
            // its unwrapping would be done twice
            Some(g) if args.remaining() <= GSS_TRY_MAX_ARGS => {
                let server = self.gss.as_ref()?;
                match server.accept_tentative(hdr.xid, hdr.proc_, &g, args)? {
                    Verdict::Call { args, caller, seal } => {
                        hdr.cred = caller.credential();
                        (args, Some((server, caller, seal)))
                    }
                    // errors and replays: the worker answers them
                    _ => return None,
                }
            }
            Some(_) => return None,
        };
        let sealed_whole = gss
            .as_ref()
            .is_some_and(|(_, c, _)| c.service != crate::gss::wire::GssService::None);
        let reg = self.find(hdr.prog, hdr.vers)?;
        let prog = &reg.prog;
        let name = prog.proc_name(hdr.vers, hdr.proc_)?;
        // a call the cache answers retransmissions of: as execute() keys it (RPCSEC_GSS ones
        // go to a worker, which keys them by their unwrapped arguments)
        let cached = !prog.skips_drc(hdr.vers, hdr.proc_, &args);
        if cached && gss.is_some() {
            return None;
        }
        let key = cached.then(|| DrcKey {
            peer: origin.peer,
            xid: hdr.xid,
            prog: hdr.prog,
            vers: hdr.vers,
            proc_: hdr.proc_,
            len: msg.len(),
            principal: 0,
        });
        let start = Instant::now();
        let (xid, peer) = (hdr.xid, origin.peer);
        let (vers, proc_) = (hdr.vers, hdr.proc_);
        let ctx = CallContext {
            xid,
            vers,
            proc_,
            cred: hdr.cred,
            gss: gss.as_ref().map(|(_, c, _)| c.clone()),
            peer,
            local: origin.local,
            transport: origin.transport,
            back: origin.back.clone(),
            // a reply signed or encrypted whole has no payload apart
            bulk: origin.bulk.clone().filter(|_| !sealed_whole),
            pages: origin.pages && !sealed_whole,
            alone,
        };
        if let Some((server, _, seal)) = gss {
            let mut body = Encoder::with_capacity(512);
            let r = prog.call_nonblocking(&ctx, args, &mut body)?;
            if !server.commit(&seal) {
                return Some(None);
            }
            let reply = match r {
                Ok(()) => server.seal(&seal, xid, Ok(body)),
                Err(ProcError::Auth(stat)) => {
                    Some(self.finish(xid, peer, Err(ProcError::Auth(stat)), body))
                }
                Err(err) => {
                    self.count_proc_error(err);
                    server.seal(&seal, xid, Err((proc_error_stat(err), &[])))
                }
            };
            reg.observe(
                &self.metrics,
                vers,
                proc_,
                name,
                start.elapsed().as_secs_f64(),
            );
            if let Some(r) = &reply {
                let sent = r.wire_len();
                match &origin.client {
                    Some(c) => c.record(msg.len(), sent),
                    None => self.metrics.client(peer).record(msg.len(), sent),
                }
            }
            return Some(reply);
        }
        if let Some(key) = key {
            if let Err(again) = self.drc_begin(key, None) {
                return Some(again);
            }
        }
        let mut e = reply_encoder(xid);
        let Some(r) = prog.call_nonblocking(&ctx, args, &mut e) else {
            // the worker that runs it again looks it up again
            if let Some(key) = key {
                self.drc.forget(key);
            }
            return None;
        };
        let reply = self.finish(xid, peer, r, e);
        if let Some(key) = key {
            self.drc_keep(key, &reply);
        }
        reg.observe(
            &self.metrics,
            vers,
            proc_,
            name,
            start.elapsed().as_secs_f64(),
        );
        let sent = reply.wire_len();
        match &origin.client {
            Some(c) => c.record(msg.len(), sent),
            None => self.metrics.client(peer).record(msg.len(), sent),
        }
        Some(Some(reply))
    }

    /// The reply to call `xid` from what its program returned.
    fn finish(&self, xid: u32, peer: SocketAddr, r: Result<(), ProcError>, e: Encoder) -> Reply {
        match r {
            Ok(()) => e.finish(),
            Err(err) => {
                tracing::debug!(xid = xid, peer = %peer, error = %err, "call failed");
                self.count_proc_error(err);
                match err {
                    ProcError::Auth(stat) => {
                        let mut e = Encoder::with_capacity(24);
                        msg::encode_auth_error(&mut e, xid, stat);
                        e.finish()
                    }
                    err => accepted_only(xid, proc_error_stat(err)),
                }
            }
        }
    }

    /// Counts a procedure's failure in the metrics.
    fn count_proc_error(&self, err: ProcError) {
        match err {
            ProcError::ProcUnavail => {}
            ProcError::GarbageArgs => self.metrics.count_error("garbage_args"),
            ProcError::SystemErr => self.metrics.count_error("system_err"),
            ProcError::Auth(_) => self.metrics.count_error("auth_error"),
        }
    }

    fn header_error(&self, e: HeaderError) -> Option<Reply> {
        let mut enc = Encoder::with_capacity(32);
        match e {
            HeaderError::Garbage(_) | HeaderError::NotACall => {
                self.metrics.count_error("garbage_message");
                return None;
            }
            HeaderError::RpcMismatch { xid, .. } => {
                self.metrics.count_error("rpc_mismatch");
                msg::encode_rpc_mismatch(&mut enc, xid)
            }
            HeaderError::Auth { xid, stat } => {
                self.metrics.count_error("auth_error");
                msg::encode_auth_error(&mut enc, xid, stat)
            }
        }
        Some(enc.finish())
    }
}

/// The accept_stat of a procedure's failure other than an authentication error.
fn proc_error_stat(err: ProcError) -> AcceptStat {
    match err {
        ProcError::ProcUnavail => AcceptStat::ProcUnavail,
        ProcError::GarbageArgs => AcceptStat::GarbageArgs,
        ProcError::SystemErr | ProcError::Auth(_) => AcceptStat::SystemErr,
    }
}

/// An accepted reply carrying only `stat` and the words `info` (PROG_MISMATCH's range), with
/// the call's GSS verifier when it has one.
fn answer(
    xid: u32,
    seal: Option<(&GssServer, &Seal)>,
    stat: AcceptStat,
    info: &[u32],
) -> Option<Reply> {
    match seal {
        Some((server, seal)) => server.seal(seal, xid, Err((stat, info))),
        None => {
            let mut e = Encoder::with_capacity(40);
            msg::encode_accepted(&mut e, xid, stat);
            for w in info {
                e.u32(*w);
            }
            Some(e.finish())
        }
    }
}

fn call_context(hdr: CallHeader, origin: Origin, gss: Option<Arc<GssCaller>>) -> CallContext {
    CallContext {
        xid: hdr.xid,
        vers: hdr.vers,
        proc_: hdr.proc_,
        cred: hdr.cred,
        gss,
        peer: origin.peer,
        local: origin.local,
        transport: origin.transport,
        back: origin.back,
        bulk: origin.bulk,
        pages: origin.pages,
        alone: false,
    }
}

/// An encoder holding the accepted SUCCESS header of the reply to `xid`.
fn reply_encoder(xid: u32) -> Encoder {
    let mut e = Encoder::with_capacity(512);
    msg::encode_accepted(&mut e, xid, AcceptStat::Success);
    e
}

fn accepted_only(xid: u32, stat: AcceptStat) -> Reply {
    let mut e = Encoder::with_capacity(24);
    msg::encode_accepted(&mut e, xid, stat);
    e.finish()
}

#[cfg(test)]
mod tests;
