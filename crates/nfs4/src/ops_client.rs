//! Client and session operations: SETCLIENTID(_CONFIRM) for NFSv4.0; EXCHANGE_ID,
//! CREATE_SESSION, SEQUENCE, DESTROY_SESSION, BIND_CONN_TO_SESSION, DESTROY_CLIENTID,
//! RECLAIM_COMPLETE, FREE_STATEID, TEST_STATEID for NFSv4.1.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use sunrpc::Credential;

use crate::compound::{callback_cred, Ctx, Encoded, Nfs4, OpFail, SeqOutcome};
use crate::state::{ClientRec, Session, Slot, StateObj, Stateid};
use nfs4wire::{
    BindConnToSession4args, BindConnToSession4resok, ChannelAttrs4, ChannelDirFromClient4,
    ChannelDirFromServer4, CreateSession4args, CreateSession4resok, DestroyClientid4args,
    DestroySession4args, ExchangeId4args, ExchangeId4resok, FreeStateid4args, NfsImplId4, Nfsstat4,
    Nfstime4, ReclaimComplete4args, Sequence4args, Sequence4resok, ServerOwner4, Setclientid4args,
    Setclientid4resok, SetclientidConfirm4args, StateProtect4A, StateProtect4R, TestStateid4args,
    TestStateid4resok,
};

/// Slots per session.
const MAX_SLOTS: u32 = 64;
/// Largest request and reply we accept in a session (1 MiB of data plus headers).
const MAX_MSG: u32 = (1 << 20) + 64 * 1024;
/// Largest reply we keep in a slot's cache.
const MAX_CACHED: u32 = 64 * 1024;

const EXCHGID4_FLAG_SUPP_MOVED_REFER: u32 = 0x1;
const EXCHGID4_FLAG_SUPP_MOVED_MIGR: u32 = 0x2;
const EXCHGID4_FLAG_BIND_PRINC_STATEID: u32 = 0x100;
const EXCHGID4_FLAG_USE_NON_PNFS: u32 = 0x10000;
const EXCHGID4_FLAG_USE_PNFS_MDS: u32 = 0x20000;
const EXCHGID4_FLAG_USE_PNFS_DS: u32 = 0x40000;
const EXCHGID4_FLAG_UPD_CONFIRMED_REC_A: u32 = 0x4000_0000;
const EXCHGID4_FLAG_CONFIRMED_R: u32 = 0x8000_0000;

/// Who the caller is, for the client record's principal checks: the Kerberos principal under
/// RPCSEC_GSS (whatever local user it maps to: two principals that both map to nobody are
/// still two), else the AUTH_SYS uid.
fn principal(ctx: &Ctx<'_>) -> u64 {
    if let Some(g) = &ctx.rpc.gss {
        return g.principal_key() | 1 << 63;
    }
    match &ctx.rpc.cred {
        Credential::Sys(s) => u64::from(s.uid),
        Credential::None => u64::from(u32::MAX),
    }
}

/// How long the connection to an NFSv4.0 client's callback service may take to come up.
const CB40_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The callback path a SETCLIENTID names. Its address is kept only where this server can
/// call it as knfsd would: over TCP; for a client that introduced itself under RPCSEC_GSS,
/// only when this server can initiate contexts ([`Nfs4::with_callback_initiators`]) and the
/// client's principal is a service's (`nfs/host@REALM`, whose key its host keeps): calls then
/// go under a context with that principal. Another client gets no callback path and so no
/// delegations, as from knfsd when its context cannot be made.
fn callback40(
    ctx: &Ctx<'_>,
    cb: &nfs4wire::CbClient4,
    ident: u32,
    can_initiate: bool,
) -> crate::state::Callback40 {
    let sec = ctx.rpc.gss.as_ref().map(|g| crate::state::CallbackSec {
        target: g.peer.principal.clone(),
        own: g.peer.acceptor.clone(),
        service: g.service,
    });
    let callable = match &sec {
        None => true,
        Some(s) => can_initiate && s.target.split('@').next().is_some_and(|n| n.contains('/')),
    };
    let netid = std::str::from_utf8(&cb.cb_location.na_r_netid).unwrap_or("");
    let addr = match netid {
        "tcp" | "tcp6" if callable => std::str::from_utf8(&cb.cb_location.na_r_addr)
            .ok()
            .and_then(sunrpc::uaddr::parse)
            .filter(|a| a.port() != 0 && (netid == "tcp6") == a.is_ipv6()),
        _ => None,
    };
    crate::state::Callback40 {
        program: cb.cb_program,
        ident,
        addr,
        sec,
        conn: None,
        probed: None,
        sent: Vec::new(),
        failed: false,
    }
}

/// Starts the connection to a confirmed NFSv4.0 client's callback service (under RPCSEC_GSS
/// with a context from `initiators` when the client asked for Kerberos) and sends it CB_NULL;
/// the path is up once the answer comes ([`crate::state::Callback40::is_up`]).
fn probe_callback(
    cb: &mut crate::state::Callback40,
    initiators: Option<&Arc<dyn sunrpc::gss::client::Initiators>>,
) {
    let gss = match (&cb.sec, initiators) {
        (None, _) => None,
        (Some(sec), Some(i)) => Some(sunrpc::outbound::GssSetup {
            initiators: i.clone(),
            target: sec.target.clone(),
            own: sec.own.clone(),
            service: sec.service,
            program: cb.program,
            version: 1,
        }),
        (Some(_), None) => return,
    };
    let Some(conn) = cb
        .addr
        .and_then(|addr| sunrpc::outbound::Outbound::connect_with(addr, CB40_CONNECT_TIMEOUT, gss))
    else {
        return;
    };
    let xid = sunrpc::callback::next_xid();
    let mut e = xdr::Encoder::with_capacity(64);
    sunrpc::msg::encode_call(&mut e, xid, cb.program, 1, 0, &Credential::None);
    let probe = std::sync::Arc::new(sunrpc::callback::expect(
        sunrpc::BackChannel::id(&*conn),
        xid,
    ));
    if sunrpc::BackChannel::send_call(&*conn, e.finish()) {
        tracing::debug!(addr = ?cb.addr, program = cb.program, sec = ?cb.sec, "CB_NULL to an NFSv4.0 client");
        cb.conn = Some((conn, probe));
    }
}

/// SP4_MACH_CRED's operations as the reply states them: what the server enforces, and of what
/// the client asks to be allowed, what it allows.
fn mach_cred_ops(asked: &nfs4wire::StateProtectOps4) -> nfs4wire::StateProtectOps4 {
    use crate::state::{MACH_CRED_ALLOWED, MACH_CRED_ENFORCED};
    let allow = (0..2)
        .map(|i| asked.spo_must_allow.get(i).copied().unwrap_or(0) & MACH_CRED_ALLOWED[i])
        .collect();
    nfs4wire::StateProtectOps4 {
        spo_must_enforce: MACH_CRED_ENFORCED.to_vec(),
        spo_must_allow: allow,
    }
}

/// Whether a call may do what SP4_MACH_CRED protects for client record `c`: any call when the
/// client did not ask for it, else only one from the principal that created the record.
fn mach_cred_ok(c: &ClientRec, ctx: &Ctx<'_>) -> bool {
    !c.mach_cred || c.principal == principal(ctx)
}

/// The flavor and identity a client record was created with, as the admin listing shows it:
/// `krb5i daemon@EXAMPLE.COM`, `sys uid 1000`, `none`.
fn auth_text(ctx: &Ctx<'_>) -> std::sync::Arc<str> {
    let flavor = ctx.rpc.flavor().name();
    match (&ctx.rpc.gss, &ctx.rpc.cred) {
        (Some(g), _) => format!("{flavor} {}", g.peer.principal).into(),
        (None, Credential::Sys(s)) => format!("{flavor} uid {}", s.uid).into(),
        (None, _) => flavor.into(),
    }
}

/// The limits a channel_attrs4 asks for.
struct ChannelAttrs {
    maxreq: u32,
    maxresp: u32,
    maxresp_cached: u32,
    maxops: u32,
    maxreqs: u32,
}

impl From<&ChannelAttrs4> for ChannelAttrs {
    fn from(a: &ChannelAttrs4) -> Self {
        ChannelAttrs {
            maxreq: a.ca_maxrequestsize,
            maxresp: a.ca_maxresponsesize,
            maxresp_cached: a.ca_maxresponsesize_cached,
            maxops: a.ca_maxoperations,
            maxreqs: a.ca_maxrequests,
        }
    }
}

impl ChannelAttrs {
    /// The channel_attrs4 that grants these limits (no header padding, no RDMA).
    fn to_wire(&self) -> ChannelAttrs4 {
        ChannelAttrs4 {
            ca_headerpadsize: 0,
            ca_maxrequestsize: self.maxreq,
            ca_maxresponsesize: self.maxresp,
            ca_maxresponsesize_cached: self.maxresp_cached,
            ca_maxoperations: self.maxops,
            ca_maxrequests: self.maxreqs,
            ca_rdma_ird: Vec::new(),
        }
    }
}

impl Nfs4 {
    fn new_client(
        &self,
        s: &mut crate::state::State,
        owner: Bytes,
        verifier: [u8; 8],
        ctx: &Ctx<'_>,
        mach_cred: bool,
    ) -> u64 {
        let (principal, minor) = (principal(ctx), ctx.minor);
        let id = s.new_client_id();
        let mut confirm = [0u8; 8];
        confirm.copy_from_slice(&(id ^ 0x5a5a_5a5a_5a5a_5a5a).to_be_bytes());
        s.clients.insert(ClientRec {
            id,
            owner,
            verifier,
            principal,
            confirmed: false,
            confirm,
            minor,
            renewed: Instant::now(),
            cs_seq: 1,
            cs_reply: None,
            reclaim_complete: false,
            addr: ctx.rpc.peer.ip(),
            auth: auth_text(ctx),
            mach_cred,
            callback: None,
            callback_next: None,
        });
        id
    }

    pub(crate) fn setclientid(
        &self,
        ctx: &mut Ctx<'_>,
        a: Setclientid4args,
    ) -> Result<Setclientid4resok, OpFail> {
        let verf = a.client.verifier;
        // kept in the state: not a slice of the request buffer
        let owner = Bytes::copy_from_slice(&a.client.id);
        let who = principal(ctx);
        let mut s = self.state.lock();
        let confirmed = s.clients.confirmed_of(&owner).cloned();
        if let Some(c) = &confirmed {
            let expired = s.expired_clients().contains(&c.id);
            let has_state = s.states.client_has_state(c.id);
            if c.principal != who && !expired && has_state {
                // clientaddr4 of the client in use: none to tell
                let addr = nfs4wire::Clientaddr4 {
                    na_r_netid: Bytes::from_static(b"tcp"),
                    na_r_addr: Bytes::from_static(b"0.0.0.0.0.0"),
                };
                return Err(OpFail::with_body(Nfsstat4::NFS4ERR_CLID_INUSE, &addr));
            }
        }
        // Drop earlier unconfirmed records of this owner.
        s.clients.drop_unconfirmed_of(&owner);
        let callback = callback40(
            ctx,
            &a.callback,
            a.callback_ident,
            self.cb_initiators.is_some(),
        );
        let (id, confirm) = match confirmed {
            Some(c) if c.verifier == verf => {
                // Callback update: same client id, fresh confirmation verifier.
                let r = s
                    .clients
                    .get_mut(c.id)
                    .ok_or(OpFail::from(Nfsstat4::NFS4ERR_SERVERFAULT))?;
                r.confirm[0] = r.confirm[0].wrapping_add(1);
                r.callback_next = Some(callback);
                (c.id, r.confirm)
            }
            _ => {
                let id = self.new_client(&mut s, owner, verf, ctx, false);
                let r = s
                    .clients
                    .get_mut(id)
                    .ok_or(OpFail::from(Nfsstat4::NFS4ERR_SERVERFAULT))?;
                r.callback_next = Some(callback);
                (id, r.confirm)
            }
        };
        Ok(Setclientid4resok {
            clientid: id,
            setclientid_confirm: confirm,
        })
    }

    pub(crate) fn setclientid_confirm(
        &self,
        _ctx: &mut Ctx<'_>,
        a: SetclientidConfirm4args,
    ) -> Result<(), OpFail> {
        let (id, confirm) = (a.clientid, a.setclientid_confirm);
        self.record_before_confirm(id, |c| c.confirm == confirm)?;
        let mut s = self.state.lock();
        if s.is_stale_client(id) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        let Some(c) = s.clients.get(id).cloned() else {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        };
        if c.confirm != confirm {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        // A rebooted client's old record goes, with its state.
        for o in s.clients.others_of_owner(&c.owner, id) {
            s.expire(o);
        }
        if let Some(c) = s.clients.get_mut(id) {
            c.confirmed = true;
            c.renewed = Instant::now();
            if let Some(mut cb) = c.callback_next.take() {
                probe_callback(&mut cb, self.cb_initiators.as_ref());
                c.callback = Some(cb);
            }
        }
        Ok(())
    }

    /// Records client `id` as confirmed in the store before the confirmation (by
    /// SETCLIENTID_CONFIRM or a first CREATE_SESSION, when `valid` says the call would confirm
    /// it) is answered, so that it can reclaim after a crash or on the head that takes over:
    /// outside the state lock, and NFS4ERR_DELAY when the store cannot take it (the client
    /// tries again). A call that fails afterwards leaves a record with nothing to reclaim.
    fn record_before_confirm(
        &self,
        id: u64,
        valid: impl FnOnce(&crate::state::ClientRec) -> bool,
    ) -> Result<(), OpFail> {
        let Some(db) = &self.records else {
            return Ok(());
        };
        let (owner, minor) = {
            let s = self.state.lock();
            match s.clients.get(id) {
                Some(c) if !c.confirmed && valid(c) => (c.owner.clone(), c.minor),
                _ => return Ok(()),
            }
        };
        db.insert(&owner, minor).map_err(|e| {
            tracing::warn!(error = %e, "client record not stored: the client is told to retry");
            OpFail::from(Nfsstat4::NFS4ERR_DELAY)
        })
    }

    pub(crate) fn exchange_id(
        &self,
        ctx: &mut Ctx<'_>,
        a: ExchangeId4args,
    ) -> Result<ExchangeId4resok, OpFail> {
        let verf = a.eia_clientowner.co_verifier;
        // kept in the state: not a slice of the request buffer
        let owner = Bytes::copy_from_slice(&a.eia_clientowner.co_ownerid);
        let flags = a.eia_flags;
        // state protection: SP4_MACH_CRED (the Linux client asks for it on krb5i and krb5p
        // mounts), from a principal whose calls are signed, as knfsd; SP4_SSV is not offered
        let mach = match &a.eia_state_protect {
            StateProtect4A::Sp4None => None,
            StateProtect4A::Sp4MachCred(ops) => {
                let signed = ctx
                    .rpc
                    .gss
                    .as_ref()
                    .is_some_and(|g| g.service != sunrpc::gss::wire::GssService::None);
                if !signed {
                    return Err(Nfsstat4::NFS4ERR_INVAL.into());
                }
                Some(mach_cred_ops(ops))
            }
            StateProtect4A::Sp4Ssv(_) => return Err(Nfsstat4::NFS4ERR_ENCR_ALG_UNSUPP.into()),
        };
        let valid = EXCHGID4_FLAG_SUPP_MOVED_REFER
            | EXCHGID4_FLAG_SUPP_MOVED_MIGR
            | EXCHGID4_FLAG_BIND_PRINC_STATEID
            | EXCHGID4_FLAG_USE_NON_PNFS
            | EXCHGID4_FLAG_USE_PNFS_MDS
            | EXCHGID4_FLAG_USE_PNFS_DS
            | EXCHGID4_FLAG_UPD_CONFIRMED_REC_A;
        if flags & !valid != 0 {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        let who = principal(ctx);
        let mut s = self.state.lock();
        let confirmed = s.clients.confirmed_of(&owner).cloned();
        let id = if flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A != 0 {
            match confirmed {
                None => return Err(Nfsstat4::NFS4ERR_NOENT.into()),
                Some(c) if c.verifier != verf => return Err(Nfsstat4::NFS4ERR_NOT_SAME.into()),
                Some(c) if c.principal != who && c.mach_cred => {
                    return Err(Nfsstat4::NFS4ERR_WRONG_CRED.into())
                }
                Some(c) if c.principal != who => return Err(Nfsstat4::NFS4ERR_PERM.into()),
                Some(c) => c.id,
            }
        } else {
            match confirmed {
                Some(c) if c.verifier == verf && c.principal == who => c.id,
                Some(c) if c.verifier != verf && c.principal != who => {
                    // A different client took this owner name: the old record goes unless it
                    // still holds state under a live lease.
                    let has_state = s.states.client_has_state(c.id);
                    if has_state && !s.expired_clients().contains(&c.id) {
                        return Err(Nfsstat4::NFS4ERR_CLID_INUSE.into());
                    }
                    s.expire(c.id);
                    self.new_client(&mut s, owner, verf, ctx, mach.is_some())
                }
                Some(c) if c.verifier == verf && !s.expired_clients().contains(&c.id) => {
                    let has_state = s.states.client_has_state(c.id);
                    if has_state {
                        return Err(Nfsstat4::NFS4ERR_CLID_INUSE.into());
                    }
                    s.expire(c.id);
                    self.new_client(&mut s, owner, verf, ctx, mach.is_some())
                }
                _ => {
                    s.clients.drop_unconfirmed_of(&owner);
                    self.new_client(&mut s, owner, verf, ctx, mach.is_some())
                }
            }
        };
        let c = s
            .clients
            .get(id)
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_SERVERFAULT))?;
        // a metadata server says so instead of NON_PNFS: the Linux client refuses both
        let mut rflags = match self.pnfs {
            Some(_) => EXCHGID4_FLAG_USE_PNFS_MDS,
            None => EXCHGID4_FLAG_USE_NON_PNFS,
        };
        if c.confirmed {
            rflags |= EXCHGID4_FLAG_CONFIRMED_R;
        }
        Ok(ExchangeId4resok {
            eir_clientid: id,
            eir_sequenceid: c.cs_seq,
            eir_flags: rflags,
            eir_state_protect: match mach {
                Some(ops) if c.mach_cred => StateProtect4R::Sp4MachCred(ops),
                _ => StateProtect4R::Sp4None,
            },
            eir_server_owner: ServerOwner4 {
                so_minor_id: 0,
                so_major_id: Bytes::from_static(b"rnfs"),
            },
            eir_server_scope: Bytes::from_static(b"rnfs"),
            eir_server_impl_id: vec![NfsImplId4 {
                nii_domain: Bytes::from_static(b"rnfs.dev"),
                nii_name: Bytes::from_static(
                    concat!("rnfsd ", env!("CARGO_PKG_VERSION")).as_bytes(),
                ),
                nii_date: Nfstime4 {
                    seconds: 0,
                    nseconds: 0,
                },
            }],
        })
    }

    pub(crate) fn create_session(
        &self,
        ctx: &mut Ctx<'_>,
        a: CreateSession4args,
    ) -> Result<Encoded, OpFail> {
        let (id, seq, flags) = (a.csa_clientid, a.csa_sequence, a.csa_flags);
        let fore = ChannelAttrs::from(&a.csa_fore_chan_attrs);
        let back = ChannelAttrs::from(&a.csa_back_chan_attrs);
        let cb_program = a.csa_cb_program;
        // the first flavor the server can use
        let cb_cred = a.csa_sec_parms.iter().find_map(callback_cred);
        self.record_before_confirm(id, |c| c.cs_seq == seq)?;
        let mut s = self.state.lock();
        if s.is_stale_client(id) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        let Some(c) = s.clients.get(id).cloned() else {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        };
        if seq == c.cs_seq.wrapping_sub(1) {
            if let Some(r) = c.cs_reply {
                return Ok(Encoded(xdr::Reply {
                    segments: vec![xdr::Segment::Inline(r)],
                }));
            }
        }
        if !c.confirmed && c.renewed.elapsed() > s.lease() {
            // An unconfirmed record not confirmed within a lease is gone.
            s.expire(id);
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        if !mach_cred_ok(&c, ctx) {
            return Err(Nfsstat4::NFS4ERR_WRONG_CRED.into());
        }
        if seq != c.cs_seq {
            return Err(Nfsstat4::NFS4ERR_SEQ_MISORDERED.into());
        }
        if flags & !7 != 0 {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        // Too small to carry even a SEQUENCE and one operation.
        if fore.maxreq < 256 || fore.maxresp < 256 || back.maxreq < 256 || back.maxresp < 128 {
            return Err(Nfsstat4::NFS4ERR_TOOSMALL.into());
        }
        if !c.confirmed && c.principal != principal(ctx) {
            return Err(Nfsstat4::NFS4ERR_CLID_INUSE.into());
        }
        let nego = ChannelAttrs {
            maxreq: fore.maxreq.min(MAX_MSG),
            maxresp: fore.maxresp.min(MAX_MSG),
            maxresp_cached: fore.maxresp_cached.min(MAX_CACHED),
            maxops: fore.maxops.clamp(1, crate::proto::MAX_OPS as u32),
            maxreqs: fore.maxreqs.clamp(1, MAX_SLOTS),
        };
        let back_nego = ChannelAttrs {
            maxreq: back.maxreq.min(16 * 1024),
            maxresp: back.maxresp.min(16 * 1024),
            maxresp_cached: 0,
            maxops: back.maxops.min(8),
            maxreqs: back.maxreqs.clamp(1, 4),
        };
        if !c.confirmed {
            for o in s.clients.others_of_owner(&c.owner, id) {
                s.expire(o);
            }
        }
        let sid = s.new_session_id(id);
        s.sessions.insert(
            sid,
            Session {
                client: id,
                slots: vec![Slot::default(); nego.maxreqs as usize],
                max_request: nego.maxreq,
                max_response: nego.maxresp,
                max_response_cached: nego.maxresp_cached,
                max_ops: nego.maxops,
                back_channel: flags & 2 != 0,
                back: if flags & 2 != 0 {
                    ctx.rpc.back.clone()
                } else {
                    None
                },
                cb_program,
                cb_cred: cb_cred.unwrap_or(Credential::None),
                cb_seq: 0,
                cb_inflight: None,
                minor: ctx.minor,
            },
        );
        let reply = Encoded::of(&CreateSession4resok {
            csr_sessionid: sid,
            csr_sequence: seq,
            // no persistence, no RDMA mode change
            csr_flags: flags & nfs4wire::CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            csr_fore_chan_attrs: nego.to_wire(),
            csr_back_chan_attrs: back_nego.to_wire(),
        });
        if let Some(c) = s.clients.get_mut(id) {
            c.confirmed = true;
            c.renewed = Instant::now();
            c.cs_seq = c.cs_seq.wrapping_add(1);
            c.cs_reply = Some(reply.0.to_bytes());
        }
        Ok(reply)
    }

    pub(crate) fn sequence(
        &self,
        ctx: &mut Ctx<'_>,
        a: Sequence4args,
        nops: usize,
    ) -> Result<SeqOutcome, OpFail> {
        let sid = a.sa_sessionid;
        let seqid = a.sa_sequenceid;
        let slotid = a.sa_slotid as usize;
        let cachethis = a.sa_cachethis;
        let mut s = self.state.lock();
        let Some(sess) = s.sessions.get_mut(&sid) else {
            return Err(Nfsstat4::NFS4ERR_BADSESSION.into());
        };
        if nops > sess.max_ops as usize {
            return Err(Nfsstat4::NFS4ERR_TOO_MANY_OPS.into());
        }
        let nslots = sess.slots.len();
        let Some(slot) = sess.slots.get_mut(slotid) else {
            return Err(Nfsstat4::NFS4ERR_BADSLOT.into());
        };
        let who = principal(ctx);
        if seqid == slot.seqid {
            if slot.busy {
                return Err(Nfsstat4::NFS4ERR_DELAY.into());
            }
            // a retry from another principal is not a retry of this request
            if slot.principal.is_some_and(|p| p != who) {
                return Err(Nfsstat4::NFS4ERR_SEQ_FALSE_RETRY.into());
            }
            return match &slot.reply {
                Some(r) => Ok(SeqOutcome::Replay(r.clone())),
                None => Err(Nfsstat4::NFS4ERR_RETRY_UNCACHED_REP.into()),
            };
        }
        if seqid != slot.seqid.wrapping_add(1) {
            return Err(Nfsstat4::NFS4ERR_SEQ_MISORDERED.into());
        }
        if vfs::nowait::active() {
            ctx.slot_undo = Some((slot.seqid, slot.reply.clone()));
        }
        slot.seqid = seqid;
        slot.busy = true;
        slot.reply = None;
        slot.principal = Some(who);
        let client = sess.client;
        let limits = (
            sess.max_response as usize,
            sess.max_response_cached as usize,
        );
        let too_big = ctx.request_len > sess.max_request as usize;
        let _ = s.renew(client);
        ctx.session = Some((sid, slotid, cachethis));
        ctx.reply_limits = Some(limits);
        if too_big {
            return Err(Nfsstat4::NFS4ERR_REQ_TOO_BIG.into());
        }
        ctx.clientid = Some(client);
        let ok = Sequence4resok {
            sr_sessionid: sid,
            sr_sequenceid: seqid,
            sr_slotid: slotid as u32,
            sr_highest_slotid: nslots as u32 - 1,
            sr_target_highest_slotid: nslots as u32 - 1,
            // while a revoked delegation awaits FREE_STATEID
            sr_status_flags: if s.states.has_revoked(client) {
                nfs4wire::SEQ4_STATUS_RECALLABLE_STATE_REVOKED
            } else {
                0
            },
        };
        Ok(SeqOutcome::Proceed(ok))
    }

    /// DESTROY_SESSION, the `idx`th of `nops` operations.
    pub(crate) fn destroy_session(
        &self,
        ctx: &mut Ctx<'_>,
        a: DestroySession4args,
        idx: usize,
        nops: usize,
    ) -> Result<(), OpFail> {
        let sid = a.dsa_sessionid;
        let mut s = self.state.lock();
        if !s.sessions.contains(&sid) {
            return Err(Nfsstat4::NFS4ERR_BADSESSION.into());
        }
        if ctx.session.is_some_and(|(cur, _, _)| cur == sid) && idx + 1 != nops {
            return Err(Nfsstat4::NFS4ERR_CONN_NOT_BOUND_TO_SESSION.into());
        }
        if !self.session_mach_cred_ok(&s, &sid, ctx) {
            return Err(Nfsstat4::NFS4ERR_WRONG_CRED.into());
        }
        s.sessions.remove(&sid);
        if ctx.session.is_some_and(|(cur, _, _)| cur == sid) {
            ctx.session = None;
        }
        Ok(())
    }

    /// [`mach_cred_ok`] for the client of session `sid`.
    fn session_mach_cred_ok(
        &self,
        s: &crate::state::State,
        sid: &nfs4wire::Sessionid4,
        ctx: &Ctx<'_>,
    ) -> bool {
        s.sessions
            .client_of(sid)
            .and_then(|id| s.clients.get(id))
            .is_none_or(|c| mach_cred_ok(c, ctx))
    }

    pub(crate) fn bind_conn(
        &self,
        ctx: &mut Ctx<'_>,
        a: BindConnToSession4args,
    ) -> Result<BindConnToSession4resok, OpFail> {
        let sid = a.bctsa_sessid;
        let dir = a.bctsa_dir as u32;
        let mut s = self.state.lock();
        if s.sessions.contains(&sid) && !self.session_mach_cred_ok(&s, &sid, ctx) {
            return Err(Nfsstat4::NFS4ERR_WRONG_CRED.into());
        }
        let Some(sess) = s.sessions.get_mut(&sid) else {
            return Err(Nfsstat4::NFS4ERR_BADSESSION.into());
        };
        if dir & 2 != 0 && sess.back_channel {
            sess.back = ctx.rpc.back.clone();
        }
        let out_dir = match a.bctsa_dir {
            ChannelDirFromClient4::Cdfc4Fore => ChannelDirFromServer4::Cdfs4Fore,
            ChannelDirFromClient4::Cdfc4Back => ChannelDirFromServer4::Cdfs4Back,
            _ if sess.back_channel => ChannelDirFromServer4::Cdfs4Both,
            _ => ChannelDirFromServer4::Cdfs4Fore,
        };
        Ok(BindConnToSession4resok {
            bctsr_sessid: sid,
            bctsr_dir: out_dir,
            bctsr_use_conn_in_rdma_mode: false,
        })
    }

    pub(crate) fn destroy_clientid(
        &self,
        ctx: &mut Ctx<'_>,
        a: DestroyClientid4args,
    ) -> Result<(), OpFail> {
        let id = a.dca_clientid;
        let mut s = self.state.lock();
        if s.is_stale_client(id) || !s.clients.contains(id) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        if s.clients.get(id).is_some_and(|c| !mach_cred_ok(c, ctx)) {
            return Err(Nfsstat4::NFS4ERR_WRONG_CRED.into());
        }
        if s.sessions.any_of(id) {
            return Err(Nfsstat4::NFS4ERR_CLIENTID_BUSY.into());
        }
        s.expire(id);
        Ok(())
    }

    pub(crate) fn reclaim_complete(
        &self,
        ctx: &mut Ctx<'_>,
        a: ReclaimComplete4args,
    ) -> Result<(), OpFail> {
        let one_fs = a.rca_one_fs;
        let id = ctx
            .clientid
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_OP_NOT_IN_SESSION))?;
        if one_fs {
            ctx.cur()?;
            return Ok(());
        }
        let mut s = self.state.lock();
        let c = s
            .clients
            .get_mut(id)
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_STALE_CLIENTID))?;
        if c.reclaim_complete {
            return Err(Nfsstat4::NFS4ERR_COMPLETE_ALREADY.into());
        }
        c.reclaim_complete = true;
        s.reclaim_complete(id);
        Ok(())
    }

    pub(crate) fn free_stateid(
        &self,
        ctx: &mut Ctx<'_>,
        a: FreeStateid4args,
    ) -> Result<(), OpFail> {
        let sid = self.stateid(ctx, a.fsa_stateid)?;
        let mut s = self.state.lock();
        if let Some(StateObj::Deleg(d)) = s.states.get(&sid.other) {
            if d.revoked && Some(d.client) == ctx.clientid {
                s.states.remove(&sid.other);
                return Ok(());
            }
        }
        let obj = s.check(&sid, 1)?.clone();
        match obj {
            StateObj::Open(_) | StateObj::Deleg(_) => Err(Nfsstat4::NFS4ERR_LOCKS_HELD.into()),
            // layouts held: returned by LAYOUTRETURN, not freed
            StateObj::Layout(_) => Err(Nfsstat4::NFS4ERR_LOCKS_HELD.into()),
            StateObj::Lock(l) => {
                if s.owner_has_locks(l.file, l.client, &l.owner) {
                    return Err(Nfsstat4::NFS4ERR_LOCKS_HELD.into());
                }
                s.states.remove(&sid.other);
                Ok(())
            }
        }
    }

    pub(crate) fn test_stateid(
        &self,
        ctx: &mut Ctx<'_>,
        a: TestStateid4args,
    ) -> Result<TestStateid4resok, OpFail> {
        let s = self.state.lock();
        let codes = a.ts_stateids.into_iter().map(Stateid::from).map(|sid| {
            if sid.is_special() {
                Nfsstat4::NFS4ERR_BAD_STATEID
            } else {
                match s.check(&sid, 1) {
                    Ok(o) if Some(o.client()) == ctx.clientid => Nfsstat4::NFS4_OK,
                    Ok(_) => Nfsstat4::NFS4ERR_BAD_STATEID,
                    Err(e) => e,
                }
            }
        });
        Ok(TestStateid4resok {
            tsr_status_codes: codes.collect(),
        })
    }
}
