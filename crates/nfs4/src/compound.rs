//! The NFSv4 program: COMPOUND decoding, the per-request context (current and saved file
//! handles, session slot), and dispatch of each operation to its handler.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parking_lot::Mutex;
use sunrpc::metrics::{NfsMetrics, RpcMetrics};
use sunrpc::{CallContext, Credential, ProcError, Program};
use vfs::exports::SecFlavor;
use vfs::{Caller, Client, Creds, Node, Vfs, VfsError};
use xdr::{Decode, Decoder, Encoder, Reply};

use crate::optable::{self, OpDef, Pos};
use crate::proto::{MAX_MINOR, MAX_OPS, NFS_V4};
use crate::pseudo::{ExportRoot, PseudoFs, PseudoId};
use crate::state::{SessionId, State, Stateid};
use nfs4wire::{CallbackSecParms4, NfsOpnum4, Nfsstat4, Sequence4args, Sequence4resok};

/// NFS program number.
pub const NFS_PROGRAM: u32 = 100003;

/// A current or saved file handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fh {
    /// A directory of the pseudo file system.
    Pseudo(PseudoId),
    /// An object in an export (wire handle).
    Real(Bytes),
}

/// Why an operation failed: its status and, for a few operations, a result body.
#[derive(Debug)]
pub struct OpFail {
    /// Its status (not NFS4_OK).
    pub status: Nfsstat4,
    /// Body encoded after the status (e.g. LOCK4denied).
    pub body: Option<Reply>,
}

impl OpFail {
    /// A failure whose result has a body after the status (LOCK4denied, SETATTR's attrsset).
    pub fn with_body(status: Nfsstat4, body: &impl xdr::Encode) -> Self {
        OpFail {
            status,
            body: Some(Encoded::of(body).0),
        }
    }
}

impl From<Nfsstat4> for OpFail {
    fn from(status: Nfsstat4) -> Self {
        OpFail { status, body: None }
    }
}

impl From<VfsError> for OpFail {
    fn from(e: VfsError) -> Self {
        OpFail::from(nfsstat4(e))
    }
}

impl From<xdr::XdrError> for OpFail {
    fn from(_: xdr::XdrError) -> Self {
        OpFail::from(Nfsstat4::NFS4ERR_BADXDR)
    }
}

/// A result already encoded: what NFSv4.0's replay cache keeps and sends again.
#[derive(Debug, Clone, Default)]
pub struct Encoded(pub Reply);

impl Encoded {
    /// The encoding of `r`.
    pub fn of(r: &impl xdr::Encode) -> Self {
        let mut e = Encoder::new();
        r.encode(&mut e);
        Encoded(e.finish())
    }
}

impl xdr::Encode for Encoded {
    fn encode(&self, e: &mut Encoder) {
        e.append(self.0.clone());
    }
}

/// Result of an operation: its body after an NFS4_OK status is in the reply; or the failure.
pub type OpResult = Result<(), OpFail>;

/// Maps a backend error to nfsstat4.
pub fn nfsstat4(e: VfsError) -> Nfsstat4 {
    match e {
        VfsError::Stale => Nfsstat4::NFS4ERR_STALE,
        VfsError::BadHandle => Nfsstat4::NFS4ERR_BADHANDLE,
        VfsError::ExportDenied => Nfsstat4::NFS4ERR_ACCESS,
        // the client asks SECINFO which flavors the export takes
        VfsError::WrongSec => Nfsstat4::NFS4ERR_WRONGSEC,
        VfsError::ReadOnly => Nfsstat4::NFS4ERR_ROFS,
        VfsError::NotSync => Nfsstat4::NFS4ERR_NOT_SAME,
        VfsError::BadCookie => Nfsstat4::NFS4ERR_BAD_COOKIE,
        VfsError::TooSmall => Nfsstat4::NFS4ERR_TOOSMALL,
        VfsError::BadName => Nfsstat4::NFS4ERR_BADNAME,
        VfsError::NotSupported => Nfsstat4::NFS4ERR_NOTSUPP,
        VfsError::Delay => Nfsstat4::NFS4ERR_DELAY,
        VfsError::Errno(n) => match n {
            libc::EPERM => Nfsstat4::NFS4ERR_PERM,
            libc::ENOENT => Nfsstat4::NFS4ERR_NOENT,
            libc::ENXIO => Nfsstat4::NFS4ERR_NXIO,
            libc::EACCES => Nfsstat4::NFS4ERR_ACCESS,
            libc::EEXIST => Nfsstat4::NFS4ERR_EXIST,
            libc::EXDEV => Nfsstat4::NFS4ERR_XDEV,
            libc::ENOTDIR => Nfsstat4::NFS4ERR_NOTDIR,
            libc::EISDIR => Nfsstat4::NFS4ERR_ISDIR,
            libc::EINVAL => Nfsstat4::NFS4ERR_INVAL,
            libc::ELOOP => Nfsstat4::NFS4ERR_SYMLINK,
            libc::EFBIG | libc::EOVERFLOW => Nfsstat4::NFS4ERR_FBIG,
            libc::ENOSPC => Nfsstat4::NFS4ERR_NOSPC,
            libc::EROFS => Nfsstat4::NFS4ERR_ROFS,
            libc::EMLINK => Nfsstat4::NFS4ERR_MLINK,
            libc::ENAMETOOLONG => Nfsstat4::NFS4ERR_NAMETOOLONG,
            libc::ENOTEMPTY => Nfsstat4::NFS4ERR_NOTEMPTY,
            libc::EDQUOT => Nfsstat4::NFS4ERR_DQUOT,
            libc::ESTALE => Nfsstat4::NFS4ERR_STALE,
            libc::EOPNOTSUPP => Nfsstat4::NFS4ERR_NOTSUPP,
            libc::EAGAIN | libc::ETXTBSY => Nfsstat4::NFS4ERR_DELAY,
            _ => Nfsstat4::NFS4ERR_IO,
        },
    }
}

/// Per-COMPOUND context.
pub struct Ctx<'a> {
    /// The RPC call.
    pub rpc: &'a CallContext,
    /// The caller as the backend sees it.
    pub client: Client,
    /// Minor version of the COMPOUND.
    pub minor: u32,
    /// Current file handle.
    cur: Option<Fh>,
    /// The current object as an operation found it (LOOKUP, or the first that resolved the
    /// current handle), for the next operations that change nothing (GETFH, GETATTR,
    /// ACCESS...): they would otherwise each resolve the handle again, a `fstat` apiece.
    /// Dropped by [`Ctx::set_cur`] and before and after any operation that may change
    /// something.
    cur_node: std::cell::RefCell<Option<(Caller, Node)>>,
    /// Saved file handle.
    pub saved: Option<Fh>,
    /// NFSv4.1 current stateid.
    pub cur_sid: Option<Stateid>,
    /// NFSv4.1 saved stateid.
    pub saved_sid: Option<Stateid>,
    /// NFSv4.1 session and slot of this request.
    pub session: Option<(SessionId, usize, bool)>,
    /// Client id of the session.
    pub clientid: Option<u64>,
    /// Size of the COMPOUND arguments (for the session's request limit).
    pub request_len: usize,
    /// Reply limits of the session: (max reply, max cached reply).
    pub reply_limits: Option<(usize, usize)>,
    /// The slot's sequence id and cached reply before SEQUENCE, to put back when a COMPOUND
    /// tried without blocking gives up ([`vfs::nowait`]).
    pub slot_undo: Option<(u32, Option<xdr::Reply>)>,
    /// READ and READ_PLUS payload bytes sent, counted once the COMPOUND is answered (not by a
    /// try that gives up).
    pub read_bytes: u64,
    /// WRITE payload bytes written, counted likewise.
    pub written_bytes: u64,
}

impl Ctx<'_> {
    /// Shortens a READ-like count so the reply fits the session's reply limit (with room for
    /// the other operations' results), as a short read is always legal.
    pub fn cap_reply(&self, count: u32) -> u32 {
        match self.reply_limits {
            Some((max, _)) => count.min(max.saturating_sub(1024) as u32),
            None => count,
        }
    }

    /// The current file handle, or NOFILEHANDLE.
    pub fn cur(&self) -> Result<&Fh, OpFail> {
        self.cur
            .as_ref()
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_NOFILEHANDLE))
    }

    /// Makes `fh` the current file handle (None: no current file handle).
    pub fn set_cur(&mut self, fh: Option<Fh>) {
        self.cur = fh;
        self.forget_node();
    }

    /// Makes the object `node`, just resolved for `caller`, the current file handle; the next
    /// operations use it as it is until one that may change something runs.
    pub fn set_cur_node(&mut self, caller: Caller, node: Node) {
        self.cur = Some(Fh::Real(node.fh.clone()));
        *self.cur_node.get_mut() = Some((caller, node));
    }

    /// Forgets the current object's attributes (the handle stays current): an operation that
    /// may change it is about to run, or has run.
    fn forget_node(&mut self) {
        *self.cur_node.get_mut() = None;
    }
}

/// The NFSv4 server.
pub struct Nfs4 {
    /// Backend.
    pub vfs: Arc<Vfs>,
    /// Pseudo file system, rebuilt when the exports change.
    pseudo: arc_swap::ArcSwap<PseudoFs>,
    /// All client state.
    pub state: Mutex<State>,
    /// Data-path counters exported as metrics.
    pub counters: Counters,
    /// When clients were last asked to return layouts (CB_RECALL_ANY).
    pub(crate) recall_any_at: parking_lot::Mutex<Option<std::time::Instant>>,
    /// Lease time in seconds (the lease_time attribute; State holds it as a Duration).
    pub lease_secs: u32,
    /// owner / owner_group strings.
    pub idmap: crate::idmap::IdMap,
    /// How many write delegations exist (shared with [`State`]'s index), read without the
    /// state lock on paths where another client's access would have to recall one.
    pub write_delegations: Arc<std::sync::atomic::AtomicUsize>,
    /// Write delegations also go to opens for reading and writing that do not ask for one.
    pub unasked_write_delegations: bool,
    /// Errors by status and I/O bytes, once a dispatcher has registered the program.
    metrics: OnceLock<NfsMetrics>,
    /// The data servers when this is a pNFS metadata server.
    pub pnfs: Option<Arc<pnfs::Mds>>,
    /// Where confirmed clients are recorded (written before a confirmation is answered,
    /// outside the state lock: the store may be a network round trip away).
    pub(crate) records: Option<crate::db::ClientDb>,
    /// Where this server's own RPCSEC_GSS contexts come from (NFSv4.0 callbacks to clients
    /// that introduced themselves under Kerberos); None: such clients get no callback path.
    pub(crate) cb_initiators: Option<Arc<dyn sunrpc::gss::client::Initiators>>,
}

/// Counters that show what the data path did (holes sent as holes, reclaims admitted).
#[derive(Default)]
pub struct Counters {
    /// READ_PLUS payload bytes sent as DATA segments.
    pub read_plus_data_bytes: std::sync::atomic::AtomicU64,
    /// Bytes of file that READ_PLUS described as HOLE segments (no payload sent).
    pub read_plus_hole_bytes: std::sync::atomic::AtomicU64,
    /// READ payload bytes.
    pub read_bytes: std::sync::atomic::AtomicU64,
    /// Reclaiming OPENs admitted during grace.
    pub reclaimed_opens: std::sync::atomic::AtomicU64,
    /// Reclaiming LOCKs admitted during grace.
    pub reclaimed_locks: std::sync::atomic::AtomicU64,
    /// Delegations granted again to reclaiming OPENs (the holder's locks under them stayed
    /// with the client).
    pub reclaimed_delegations: std::sync::atomic::AtomicU64,
    /// CB_LAYOUTRECALLs sent.
    pub layout_recalls: std::sync::atomic::AtomicU64,
    /// CB_RECALL_ANYs sent for layouts.
    pub layout_recall_any: std::sync::atomic::AtomicU64,
}

/// The pseudo file system over `vfs`'s exports.
fn pseudo_of(vfs: &Vfs) -> PseudoFs {
    let roots: Vec<ExportRoot> = vfs
        .exports()
        .into_iter()
        .map(|e| ExportRoot {
            path: e.path,
            fh: e.root_fh,
            v4_root: e.v4_root,
        })
        .collect();
    PseudoFs::new(&roots)
}

/// What SEQUENCE decided.
pub enum SeqOutcome {
    /// Execute the request; the SEQUENCE result.
    Proceed(Sequence4resok),
    /// A retransmission: answer with the cached reply.
    Replay(Reply),
}

/// NFSv4's opens and expired clients, as the lock table NLM shares sees them.
impl locks::OtherState for Nfs4 {
    fn share_conflict(&self, file: locks::FileKey, access: u32, deny: u32) -> bool {
        self.state.lock().open_share_conflict(file, access, deny)
    }

    fn release_expired(&self, file: locks::FileKey) {
        self.state.lock().release_courtesy(file);
    }
}

impl Nfs4 {
    /// The NFSv4 program over a backend, with state in memory only (no reclaim after restart).
    pub fn new(vfs: Arc<Vfs>) -> Self {
        Self::with_state(vfs, State::new())
    }

    /// The NFSv4 program with client records kept in `state_dir`, so that clients reclaim
    /// their opens and locks during a grace period after a restart.
    pub fn with_state_dir(
        vfs: Arc<Vfs>,
        state_dir: &std::path::Path,
    ) -> Result<Self, crate::db::DbError> {
        let db = crate::db::ClientDb::open(&state_dir.join("nfs4-clients.redb"))?;
        let mut v4 = Self::with_state(vfs, State::with_db(db.clone()));
        v4.records = Some(db);
        Ok(v4)
    }

    /// NFSv4 over `vfs` with its client records in `store` (an etcd cluster the heads share:
    /// the head that serves this identity next finds them and starts a grace period). Fails
    /// when the records cannot be read: serving without them would deny their clients the
    /// reclaim they are owed.
    pub fn with_store(
        vfs: Arc<Vfs>,
        store: Arc<dyn store::Store>,
    ) -> Result<Self, crate::db::DbError> {
        let db = crate::db::ClientDb::on(store);
        db.load()?;
        let mut v4 = Self::with_state(vfs, State::with_db(db.clone()));
        v4.records = Some(db);
        Ok(v4)
    }

    fn with_state(vfs: Arc<Vfs>, state: State) -> Self {
        let pseudo = arc_swap::ArcSwap::from_pointee(pseudo_of(&vfs));
        let write_delegations = state.states.write_delegations();
        Self {
            vfs,
            pseudo,
            write_delegations,
            unasked_write_delegations: false,
            state: Mutex::new(state),
            counters: Counters::default(),
            recall_any_at: parking_lot::Mutex::new(None),
            metrics: OnceLock::new(),
            lease_secs: crate::proto::LEASE_SECONDS,
            idmap: crate::idmap::IdMap::default(),
            pnfs: None,
            records: None,
            cb_initiators: None,
        }
    }

    /// Calls NFSv4.0 clients that introduced themselves under RPCSEC_GSS back under contexts
    /// from `initiators` (as this server's own service principal, as knfsd does).
    pub fn with_callback_initiators(
        mut self,
        initiators: Arc<dyn sunrpc::gss::client::Initiators>,
    ) -> Self {
        self.cb_initiators = Some(initiators);
        self
    }

    /// Waits until the client record removals asked for so far are made (they are made by a
    /// thread of their own, outside the state lock): a clean stop leaves no record of a
    /// client that is gone, which would hold the next instance's grace period open.
    pub fn settle_records(&self) {
        if let Some(db) = &self.records {
            db.settle();
        }
    }

    /// Makes this a pNFS metadata server with the data servers of `mds` (the backend must
    /// send the data of placed files there too: [`Vfs::set_remote_data`]).
    pub fn with_pnfs(mut self, mds: Arc<pnfs::Mds>) -> Self {
        self.pnfs = Some(mds);
        self
    }

    /// Grants write delegations on opens for reading and writing that ask for no particular
    /// delegation, not only to clients that ask for one.
    pub fn with_unasked_write_delegations(mut self, on: bool) -> Self {
        self.unasked_write_delegations = on;
        self
    }

    /// Writes owner and owner_group as `name@domain` (numeric strings without a domain).
    pub fn with_idmap_domain(mut self, domain: Option<String>) -> Self {
        self.idmap = crate::idmap::IdMap::new(domain);
        self
    }

    /// Sets the lease time (default [`crate::proto::LEASE_SECONDS`]); the grace period after a
    /// restart lasts one lease too.
    pub fn with_lease(mut self, secs: u32) -> Self {
        let secs = secs.max(1);
        self.lease_secs = secs;
        self.state
            .get_mut()
            .set_lease(std::time::Duration::from_secs(secs as u64));
        self
    }

    /// Whether the grace period runs (NFSv4's part, ended here once its time is up or every
    /// client reclaimed, or NLM hosts reclaiming).
    pub fn grace_running(&self) -> bool {
        self.state.lock().in_grace()
    }

    /// The byte-range lock table, which the NLM service (NFSv3 locks) shares.
    pub fn lock_manager(&self) -> Arc<locks::LockManager> {
        self.state.lock().lock_manager().clone()
    }

    /// Lets the lock table ask this program about its opens and expired clients (NLM
    /// requests do).
    pub fn share_with_lock_manager(self: &Arc<Self>) {
        let me: Arc<dyn locks::OtherState> = self.clone();
        self.lock_manager().set_nfs4(Arc::downgrade(&me));
    }

    /// The pseudo file system as the next operation sees it.
    pub fn pseudo(&self) -> arc_swap::Guard<Arc<PseudoFs>> {
        self.pseudo.load()
    }

    /// Rebuilds the pseudo file system from the backend's exports (after a reload): handles of
    /// pseudo directories that remain keep naming them; the others become STALE.
    pub fn exports_changed(&self) {
        self.pseudo.store(Arc::new(pseudo_of(&self.vfs)));
    }

    /// WRONGSEC when the caller's flavor is not one the export of the current file handle
    /// takes (the pseudo file system takes any); other refusals are the next operation's.
    fn flavor_of_current(&self, ctx: &Ctx<'_>) -> Result<(), OpFail> {
        match ctx.cur() {
            Ok(Fh::Real(fh)) => match self.vfs.check_flavor(fh, &ctx.client) {
                Err(VfsError::WrongSec) => Err(Nfsstat4::NFS4ERR_WRONGSEC.into()),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Resolves the current file handle to a real object, admitting the caller.
    pub fn real(&self, ctx: &Ctx<'_>) -> Result<(Caller, Node), OpFail> {
        match ctx.cur()? {
            Fh::Real(fh) => self.authorized(ctx, fh),
            Fh::Pseudo(_) => Err(OpFail::from(Nfsstat4::NFS4ERR_ISDIR)),
        }
    }

    /// The object `fh` for the caller of `ctx`: the current object as an earlier operation
    /// of the COMPOUND found it when `fh` is current (see [`Ctx::set_cur_node`]).
    pub fn authorized(&self, ctx: &Ctx<'_>, fh: &[u8]) -> Result<(Caller, Node), OpFail> {
        if let Some((c, n)) = &*ctx.cur_node.borrow() {
            if n.fh == fh {
                return Ok((c.clone(), n.clone()));
            }
        }
        let found = self.vfs.authorize(fh, &ctx.client)?;
        if matches!(&ctx.cur, Some(Fh::Real(cur)) if cur[..] == fh[..]) {
            *ctx.cur_node.borrow_mut() = Some(found.clone());
        }
        Ok(found)
    }

    /// Resolves a handle given by PUTFH.
    pub fn parse_fh(&self, fh: Bytes) -> Result<Fh, Nfsstat4> {
        match self.pseudo().parse(&fh) {
            Some(Ok(i)) => Ok(Fh::Pseudo(i)),
            Some(Err(e)) => Err(e),
            // kept past this call (saved handles, state): not a slice of the request buffer
            None => Ok(Fh::Real(Bytes::copy_from_slice(&fh))),
        }
    }

    fn compound(
        &self,
        rpc: &CallContext,
        mut d: Decoder,
        out: &mut Encoder,
    ) -> Result<(), ProcError> {
        let tag = d.opaque(1024).map_err(|_| ProcError::GarbageArgs)?;
        let minor = d.u32().map_err(|_| ProcError::GarbageArgs)?;
        let nops = d.u32().map_err(|_| ProcError::GarbageArgs)? as usize;
        if minor > MAX_MINOR {
            if let Some(m) = self.metrics.get() {
                m.error("COMPOUND", "NFS4ERR_MINOR_VERS_MISMATCH");
            }
            out.encode(&Nfsstat4::NFS4ERR_MINOR_VERS_MISMATCH);
            out.opaque(&tag);
            out.u32(0);
            return Ok(());
        }
        let client = Client {
            addr: rpc.peer.ip(),
            privileged: rpc.from_privileged_port(),
            ident: match &rpc.cred {
                Credential::None => None,
                Credential::Sys(s) => Some(Creds {
                    uid: s.uid,
                    gid: s.gid,
                    groups: s.gids.as_slice().into(),
                }),
            },
            flavor: SecFlavor::from_name(rpc.flavor().name()).unwrap_or(SecFlavor::None),
        };
        let mut ctx = Ctx {
            rpc,
            client,
            minor,
            cur: None,
            cur_node: Default::default(),
            saved: None,
            cur_sid: None,
            saved_sid: None,
            session: None,
            clientid: None,
            request_len: d.remaining() + 40,
            reply_limits: None,
            slot_undo: None,
            read_bytes: 0,
            written_bytes: 0,
        };
        // The results, encoded in place: an operation's result follows its status, which is
        // NFS4_OK until it fails (then what it wrote is dropped). The COMPOUND's own status
        // and count, which come first, are known only at the end.
        let mut body = Encoder::with_capacity(512);
        let mut status = Nfsstat4::NFS4_OK;
        // the operation that failed (the COMPOUND stops there), for the metrics
        let mut failed = None;
        let mut count = 0u32;
        if nops > MAX_OPS {
            // Answer the first operation's slot with the error, as the RFCs describe.
            status = if minor == 0 {
                Nfsstat4::NFS4ERR_RESOURCE
            } else {
                Nfsstat4::NFS4ERR_TOO_MANY_OPS
            };
            if let Ok(opnum) = d.u32() {
                body.u32(opnum);
                body.encode(&status);
                count = 1;
                failed = Some((
                    optable::def(NfsOpnum4(opnum)).map_or("ILLEGAL", |d| d.name),
                    status,
                ));
            }
        }
        for i in 0..nops.min(MAX_OPS) {
            if status != Nfsstat4::NFS4_OK {
                break;
            }
            let opnum = match NfsOpnum4::decode(&mut d) {
                Ok(n) => n,
                Err(_) => {
                    body.encode(&NfsOpnum4::OP_ILLEGAL);
                    body.encode(&Nfsstat4::NFS4ERR_BADXDR);
                    count += 1;
                    status = Nfsstat4::NFS4ERR_BADXDR;
                    failed = Some(("ILLEGAL", status));
                    break;
                }
            };
            let def = optable::def(opnum);
            body.encode(if def.is_some() {
                &opnum
            } else {
                &NfsOpnum4::OP_ILLEGAL
            });
            count += 1;
            let at = body.len();
            body.encode(&Nfsstat4::NFS4_OK);
            let res = if minor >= 1 && i == 0 && opnum == NfsOpnum4::OP_SEQUENCE {
                match Sequence4args::decode(&mut d)
                    .map_err(OpFail::from)
                    .and_then(|a| self.sequence(&mut ctx, a, nops))
                {
                    Ok(SeqOutcome::Replay(cached)) => {
                        out.append(cached);
                        return Ok(());
                    }
                    Ok(SeqOutcome::Proceed(ok)) => optable::body(Ok(ok), &mut body),
                    Err(f) => Err(f),
                }
            } else if minor >= 1 && i == 0 && !def.is_some_and(OpDef::sessionless) {
                Err(OpFail::from(if def.is_some() {
                    Nfsstat4::NFS4ERR_OP_NOT_IN_SESSION
                } else {
                    Nfsstat4::NFS4ERR_OP_ILLEGAL
                }))
            } else if minor >= 1 && i == 0 && opnum == NfsOpnum4::OP_DESTROY_CLIENTID && nops > 1 {
                Err(OpFail::from(Nfsstat4::NFS4ERR_NOT_ONLY_OP))
            } else if minor >= 1 && i > 0 && ctx.session.is_none() {
                // EXCHANGE_ID, CREATE_SESSION, ... outside a session must be alone.
                Err(OpFail::from(Nfsstat4::NFS4ERR_NOT_ONLY_OP))
            } else if minor >= 1 && opnum == NfsOpnum4::OP_SEQUENCE {
                Err(OpFail::from(Nfsstat4::NFS4ERR_SEQUENCE_POS))
            } else {
                self.op(
                    &mut ctx,
                    def,
                    &mut d,
                    Pos {
                        index: i,
                        count: nops,
                    },
                    &mut body,
                )
            };
            let res = match (res, ctx.reply_limits, ctx.session) {
                (Ok(()), Some((max, max_cached)), Some((_, _, cachethis))) => {
                    // the reply so far with room for the COMPOUND's status, tag and count
                    let total = body.len() + 64;
                    if total > max {
                        Err(OpFail::from(Nfsstat4::NFS4ERR_REP_TOO_BIG))
                    } else if cachethis && total > max_cached {
                        Err(OpFail::from(Nfsstat4::NFS4ERR_REP_TOO_BIG_TO_CACHE))
                    } else {
                        Ok(())
                    }
                }
                (r, _, _) => r,
            };
            // A put-filehandle operation answers for the export's security when the next
            // operation uses the handle as it is (RFC 8881 section 2.6.3.1.1)
            let res = match res {
                Ok(()) if def.is_some_and(OpDef::puts_fh) && i + 1 < nops => {
                    let next = d.peek_rest().get(..4).and_then(|b| {
                        optable::def(NfsOpnum4(u32::from_be_bytes(b.try_into().ok()?)))
                    });
                    match next {
                        Some(n) if !n.handles_wrongsec() => self.flavor_of_current(&ctx),
                        _ => Ok(()),
                    }
                }
                r => r,
            };
            // An operation that changes the current file handle without returning a stateid
            // makes the current stateid invalid (RFC 8881 section 16.2.3.1.2).
            if def.is_some_and(OpDef::clears_stateid) {
                ctx.cur_sid = None;
            }
            if let Err(f) = res {
                status = f.status;
                failed = Some((def.map_or("ILLEGAL", |d| d.name), status));
                body.truncate(at);
                body.encode(&f.status);
                if let Some(b) = f.body {
                    body.append(b);
                }
            }
        }
        // a try that gave up runs again, and is counted then
        if !vfs::nowait::given_up() {
            self.count(&ctx, failed);
        }
        let Some((sid, slot, cachethis)) = ctx.session else {
            put_reply(out, status, &tag, count, body);
            return Ok(());
        };
        // The slot keeps the whole reply when the client asked it to (its bulk payloads
        // copied: file pages that cannot be read leave nothing to replay).
        let kept = if cachethis {
            let mut whole = Encoder::with_capacity(64);
            put_reply(&mut whole, status, &tag, count, body);
            let whole = whole.finish();
            let kept = whole.detached().ok();
            out.append(whole);
            kept
        } else {
            put_reply(out, status, &tag, count, body);
            None
        };
        let mut s = self.state.lock();
        if let Some(sl) = s
            .sessions
            .get_mut(&sid)
            .and_then(|sess| sess.slots.get_mut(slot))
        {
            sl.busy = false;
            match ctx.slot_undo.take() {
                // given up: the COMPOUND runs again as the same request
                Some((seqid, reply)) if vfs::nowait::given_up() => {
                    sl.seqid = seqid;
                    sl.reply = reply;
                }
                _ => sl.reply = kept,
            }
        }
        Ok(())
    }

    /// Counts what an answered COMPOUND did: the operation that failed, and I/O bytes.
    fn count(&self, ctx: &Ctx<'_>, failed: Option<(&'static str, Nfsstat4)>) {
        let Some(m) = self.metrics.get() else {
            return;
        };
        if let Some((op, status)) = failed {
            m.error(op, status.name().unwrap_or("unknown"));
        }
        if ctx.read_bytes > 0 {
            m.read(ctx.read_bytes);
        }
        if ctx.written_bytes > 0 {
            m.written(ctx.written_bytes);
        }
    }

    /// Runs one operation (after SEQUENCE and the session checks) as the table says.
    fn op(
        &self,
        ctx: &mut Ctx<'_>,
        def: Option<&OpDef>,
        d: &mut Decoder,
        pos: Pos,
        out: &mut Encoder,
    ) -> OpResult {
        let Some(def) = def else {
            return Err(Nfsstat4::NFS4ERR_OP_ILLEGAL.into());
        };
        if vfs::nowait::active() && !def.may_try(d, ctx.rpc.alone) {
            return Err(vfs::nowait::give_up().into());
        }
        let keeps_node = def.changes_nothing();
        if !keeps_node {
            ctx.forget_node();
        }
        let r = def.run(self, ctx, d, pos, out);
        if !keeps_node {
            ctx.forget_node();
        }
        r
    }
}

/// The minor version of COMPOUND arguments (after the tag), None when they are malformed.
/// The handle of a COMPOUND's first PUTFH when it comes first or after SEQUENCE (as nearly
/// every COMPOUND has it), for admission: None for any other.
fn compound_first_fh(args: &Decoder) -> Option<Bytes> {
    let mut d = args.clone();
    d.opaque(1024).ok()?;
    d.u32().ok()?;
    let n = d.u32().ok()?;
    for _ in 0..n.min(2) {
        match nfs4wire::NfsOpnum4(d.u32().ok()?) {
            // sessionid, sequenceid, slotid, highest_slotid, cachethis
            nfs4wire::NfsOpnum4::OP_SEQUENCE => drop(d.opaque_fixed(32).ok()?),
            nfs4wire::NfsOpnum4::OP_PUTFH => {
                return d.opaque(nfs4wire::NFS4_FHSIZE as usize).ok();
            }
            _ => return None,
        }
    }
    None
}

fn compound_minor(args: &Decoder) -> Option<u32> {
    let mut d = args.clone();
    d.opaque(1024).ok()?;
    d.u32().ok()
}

/// A COMPOUND reply: its status, tag and count, then the operations' results.
fn put_reply(out: &mut Encoder, status: Nfsstat4, tag: &[u8], count: u32, results: Encoder) {
    out.encode(&status);
    out.opaque(tag);
    out.u32(count);
    out.append_encoder(results);
}

/// The credential a callback_sec_parms4 gives for callbacks (None for RPCSEC_GSS, which
/// rnfsd cannot use).
pub fn callback_cred(p: &CallbackSecParms4) -> Option<Credential> {
    match p {
        CallbackSecParms4::AuthNone => Some(Credential::None),
        CallbackSecParms4::AuthSys(a) => Some(Credential::Sys(sunrpc::AuthSys {
            stamp: a.stamp,
            // kept by the session: not a slice of the call
            machine: Bytes::copy_from_slice(&a.machinename),
            uid: a.uid,
            gid: a.gid,
            gids: a.gids.clone(),
        })),
        CallbackSecParms4::RpcsecGss(_) => None,
    }
}

impl Program for Nfs4 {
    fn program(&self) -> u32 {
        NFS_PROGRAM
    }

    fn versions(&self) -> (u32, u32) {
        (NFS_V4, NFS_V4)
    }

    /// NFSv4.0 COMPOUNDs may change state and rely on the duplicate request cache; from 4.1
    /// a session's slot recognises a retransmission (RFC 8881 section 2.10.6.1), and what
    /// runs outside one (EXCHANGE_ID, CREATE_SESSION with its own sequence) is safe to
    /// repeat, so they skip the DRC: no lock rounds and reply copy per call, as knfsd keeps
    /// no DRC for NFSv4.
    fn skips_drc(&self, _vers: u32, p: u32, args: &Decoder) -> bool {
        p != 1 || compound_minor(args).is_some_and(|m| m >= 1)
    }

    /// A COMPOUND waits behind the calls of the export of its first PUTFH.
    fn admission(&self, _vers: u32, p: u32, args: &Decoder) -> Option<u64> {
        let fh = (p == 1).then(|| compound_first_fh(args))??;
        self.vfs.export_slot_of(&fh).map(|s| s as u64)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        match p {
            0 => Some("NULL"),
            1 => Some("COMPOUND"),
            _ => None,
        }
    }

    fn call(&self, ctx: &CallContext, args: Decoder, reply: &mut Encoder) -> Result<(), ProcError> {
        match ctx.proc_ {
            0 => Ok(()),
            1 => self.compound(ctx, args, reply),
            _ => Err(ProcError::ProcUnavail),
        }
    }

    /// NULL, and COMPOUNDs of operations that change nothing (SEQUENCE aside, which is undone
    /// when the COMPOUND gives up) or only a file in memory's data (WRITE): see
    /// [`OpDef::may_try`].
    fn call_nonblocking(
        &self,
        ctx: &CallContext,
        args: Decoder,
        reply: &mut Encoder,
    ) -> Option<Result<(), ProcError>> {
        match ctx.proc_ {
            0 | 1 => vfs::nowait::without_blocking(|| self.call(ctx, args, reply)),
            _ => None,
        }
    }

    fn register_metrics(&self, metrics: &RpcMetrics) {
        let _ = self.metrics.set(metrics.nfs("4"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(tag: &[u8], minor: u32) -> Decoder {
        let mut e = Encoder::new();
        e.opaque(tag);
        e.u32(minor);
        e.u32(0);
        Decoder::new(e.finish().to_bytes())
    }

    #[test]
    fn the_drc_is_for_nfsv40_compounds_only() {
        assert_eq!(compound_minor(&args(b"", 0)), Some(0));
        assert_eq!(compound_minor(&args(b"tag", 1)), Some(1));
        assert_eq!(compound_minor(&args(b"tag", 2)), Some(2));
        // a tag past its limit, or arguments that end early: malformed, so through the DRC
        assert_eq!(compound_minor(&args(&[b'x'; 1025], 1)), None);
        assert_eq!(
            compound_minor(&Decoder::new(Bytes::from_static(&[0, 0]))),
            None
        );
    }

    /// A COMPOUND of `ops` (opnum and its encoded arguments), for admission's peek.
    fn compound(ops: &[(u32, &[u8])]) -> Decoder {
        let mut e = Encoder::new();
        e.opaque(b"tag");
        e.u32(1);
        e.u32(ops.len() as u32);
        for (op, a) in ops {
            e.u32(*op);
            e.opaque_fixed(a);
        }
        Decoder::new(e.finish().to_bytes())
    }

    #[test]
    fn admission_finds_the_first_putfh_alone_or_after_sequence() {
        let mut fh = Encoder::new();
        fh.opaque(b"handle-bytes");
        let fh = fh.finish().to_bytes();
        let sequence = [0u8; 32];
        let (seq, put, root) = (53, 22, 24);
        let want = Some(Bytes::from_static(b"handle-bytes"));
        assert_eq!(compound_first_fh(&compound(&[(put, &fh)])), want);
        assert_eq!(
            compound_first_fh(&compound(&[(seq, &sequence), (put, &fh)])),
            want
        );
        // PUTROOTFH first, or PUTFH only third: no kind (not held back)
        assert_eq!(compound_first_fh(&compound(&[(root, b"")])), None);
        assert_eq!(
            compound_first_fh(&compound(&[(seq, &sequence), (root, b""), (put, &fh)])),
            None
        );
        // cut short, or a handle past NFS4_FHSIZE
        assert_eq!(compound_first_fh(&compound(&[(seq, &sequence[..8])])), None);
        let mut big = Encoder::new();
        big.opaque(&[1u8; 129]);
        assert_eq!(
            compound_first_fh(&compound(&[(put, &big.finish().to_bytes())])),
            None
        );
    }
}
