//! Client and session operations: SETCLIENTID(_CONFIRM) for NFSv4.0; EXCHANGE_ID,
//! CREATE_SESSION, SEQUENCE, DESTROY_SESSION, BIND_CONN_TO_SESSION, DESTROY_CLIENTID,
//! RECLAIM_COMPLETE, FREE_STATEID, TEST_STATEID for NFSv4.1.

use std::time::Instant;

use bytes::Bytes;
use sunrpc::Credential;
use xdr::{Decoder, Encoder};

use crate::compound::{callback_sec, Ctx, Nfs4, OpFail, OpResult, SeqOutcome};
use crate::ops_file::get_stateid;
use crate::proto::NFS4_OPAQUE_LIMIT;
use crate::state::{ClientRec, Session, Slot, StateObj};
use nfs4wire::Nfsstat4;

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

fn principal(ctx: &Ctx<'_>) -> u32 {
    match &ctx.rpc.cred {
        Credential::Sys(s) => s.uid,
        Credential::None => u32::MAX,
    }
}

fn verifier(d: &mut Decoder) -> Result<[u8; 8], OpFail> {
    let v = d.opaque_fixed(8)?;
    let mut out = [0u8; 8];
    out.copy_from_slice(&v);
    Ok(out)
}

fn session_id(d: &mut Decoder) -> Result<[u8; 16], OpFail> {
    let v = d.opaque_fixed(16)?;
    let mut out = [0u8; 16];
    out.copy_from_slice(&v);
    Ok(out)
}

/// channel_attrs4 as sent by the client.
struct ChannelAttrs {
    maxreq: u32,
    maxresp: u32,
    maxresp_cached: u32,
    maxops: u32,
    maxreqs: u32,
}

fn channel_attrs(d: &mut Decoder) -> Result<ChannelAttrs, OpFail> {
    let _headerpad = d.u32()?;
    let a = ChannelAttrs {
        maxreq: d.u32()?,
        maxresp: d.u32()?,
        maxresp_cached: d.u32()?,
        maxops: d.u32()?,
        maxreqs: d.u32()?,
    };
    let n = d.array_len(1, 4)?;
    for _ in 0..n {
        d.u32()?;
    }
    Ok(a)
}

fn put_channel_attrs(e: &mut Encoder, a: &ChannelAttrs) {
    e.u32(0);
    e.u32(a.maxreq);
    e.u32(a.maxresp);
    e.u32(a.maxresp_cached);
    e.u32(a.maxops);
    e.u32(a.maxreqs);
    e.u32(0);
}

impl Nfs4 {
    fn new_client(
        &self,
        s: &mut crate::state::State,
        owner: Bytes,
        verifier: [u8; 8],
        principal: u32,
        minor: u32,
    ) -> u64 {
        let id = s.new_client_id();
        let mut confirm = [0u8; 8];
        confirm.copy_from_slice(&(id ^ 0x5a5a_5a5a_5a5a_5a5a).to_be_bytes());
        s.clients.insert(
            id,
            ClientRec {
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
            },
        );
        id
    }

    pub(crate) fn setclientid(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let verf = verifier(d)?;
        let owner = d.opaque_owned(NFS4_OPAQUE_LIMIT)?;
        let _cb_program = d.u32()?;
        let _netid = d.opaque(64)?;
        let _addr = d.opaque(256)?;
        let _cb_ident = d.u32()?;
        let who = principal(ctx);
        let mut s = self.state.lock();
        let confirmed = s
            .clients
            .values()
            .find(|c| c.owner == owner && c.confirmed)
            .cloned();
        if let Some(c) = &confirmed {
            let expired = s.expired_clients().contains(&c.id);
            let has_state = s.states.client_has_state(c.id);
            if c.principal != who && !expired && has_state {
                let mut e = Encoder::new();
                e.opaque(b"tcp");
                e.opaque(b"0.0.0.0.0.0");
                return Err(OpFail {
                    status: Nfsstat4::NFS4ERR_CLID_INUSE,
                    body: Some(e),
                });
            }
        }
        // Drop earlier unconfirmed records of this owner.
        s.clients.retain(|_, c| c.owner != owner || c.confirmed);
        let (id, confirm) = match confirmed {
            Some(c) if c.verifier == verf => {
                // Callback update: same client id, fresh confirmation verifier.
                let r = s
                    .clients
                    .get_mut(&c.id)
                    .ok_or(OpFail::from(Nfsstat4::NFS4ERR_SERVERFAULT))?;
                r.confirm[0] = r.confirm[0].wrapping_add(1);
                (c.id, r.confirm)
            }
            _ => {
                let id = self.new_client(&mut s, owner, verf, who, 0);
                (id, s.clients[&id].confirm)
            }
        };
        let mut e = Encoder::new();
        e.u64(id);
        e.opaque_fixed(&confirm);
        Ok(e)
    }

    pub(crate) fn setclientid_confirm(&self, _ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let id = d.u64()?;
        let confirm = verifier(d)?;
        let mut s = self.state.lock();
        if s.is_stale_client(id) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        let Some(c) = s.clients.get(&id).cloned() else {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        };
        if c.confirm != confirm {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        // A rebooted client's old record goes, with its state.
        let old: Vec<u64> = s
            .clients
            .values()
            .filter(|o| o.owner == c.owner && o.id != id)
            .map(|o| o.id)
            .collect();
        for o in old {
            s.expire(o);
        }
        if let Some(c) = s.clients.get_mut(&id) {
            c.confirmed = true;
            c.renewed = Instant::now();
        }
        s.record_confirmed(&c.owner, 0);
        Ok(Encoder::new())
    }

    pub(crate) fn exchange_id(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let verf = verifier(d)?;
        let owner = d.opaque_owned(NFS4_OPAQUE_LIMIT)?;
        let flags = d.u32()?;
        match d.u32()? {
            0 => {}
            1 => {
                let _ = crate::attr::Bitmap::decode(d)?;
                let _ = crate::attr::Bitmap::decode(d)?;
                return Err(Nfsstat4::NFS4ERR_NOTSUPP.into());
            }
            2 => return Err(Nfsstat4::NFS4ERR_NOTSUPP.into()),
            _ => return Err(Nfsstat4::NFS4ERR_BADXDR.into()),
        }
        let nimpl = d.array_len(1, 12)?;
        for _ in 0..nimpl {
            d.opaque(1024)?;
            d.opaque(1024)?;
            d.i64()?;
            d.u32()?;
        }
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
        let confirmed = s
            .clients
            .values()
            .find(|c| c.owner == owner && c.confirmed)
            .cloned();
        let id = if flags & EXCHGID4_FLAG_UPD_CONFIRMED_REC_A != 0 {
            match confirmed {
                None => return Err(Nfsstat4::NFS4ERR_NOENT.into()),
                Some(c) if c.verifier != verf => return Err(Nfsstat4::NFS4ERR_NOT_SAME.into()),
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
                    self.new_client(&mut s, owner, verf, who, ctx.minor)
                }
                Some(c) if c.verifier == verf && !s.expired_clients().contains(&c.id) => {
                    let has_state = s.states.client_has_state(c.id);
                    if has_state {
                        return Err(Nfsstat4::NFS4ERR_CLID_INUSE.into());
                    }
                    s.expire(c.id);
                    self.new_client(&mut s, owner, verf, who, ctx.minor)
                }
                _ => {
                    s.clients.retain(|_, c| c.owner != owner || c.confirmed);
                    self.new_client(&mut s, owner, verf, who, ctx.minor)
                }
            }
        };
        let c = s
            .clients
            .get(&id)
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_SERVERFAULT))?;
        let mut e = Encoder::new();
        e.u64(id);
        e.u32(c.cs_seq);
        let mut rflags = EXCHGID4_FLAG_USE_NON_PNFS;
        if c.confirmed {
            rflags |= EXCHGID4_FLAG_CONFIRMED_R;
        }
        e.u32(rflags);
        e.u32(0); // SP4_NONE
        e.u64(0); // server_owner.so_minor_id
        e.opaque(b"rnfs");
        e.opaque(b"rnfs");
        e.u32(1);
        e.opaque(b"rnfs.dev");
        e.opaque(concat!("rnfsd ", env!("CARGO_PKG_VERSION")).as_bytes());
        e.i64(0);
        e.u32(0);
        Ok(e)
    }

    pub(crate) fn create_session(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let id = d.u64()?;
        let seq = d.u32()?;
        let flags = d.u32()?;
        let fore = channel_attrs(d)?;
        let back = channel_attrs(d)?;
        let cb_program = d.u32()?;
        let nsec = d.array_len(16, 4)?;
        let mut cb_cred = None;
        for _ in 0..nsec {
            let c = callback_sec(d)?;
            if cb_cred.is_none() {
                cb_cred = c;
            }
        }
        let mut s = self.state.lock();
        if s.is_stale_client(id) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        let Some(c) = s.clients.get(&id).cloned() else {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        };
        if seq == c.cs_seq.wrapping_sub(1) {
            if let Some(r) = c.cs_reply {
                let mut out = Encoder::new();
                out.append(xdr::Reply {
                    segments: vec![xdr::Segment::Inline(r)],
                });
                return Ok(out);
            }
        }
        if !c.confirmed && c.renewed.elapsed() > s.lease {
            // An unconfirmed record not confirmed within a lease is gone.
            s.expire(id);
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
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
            let old: Vec<u64> = s
                .clients
                .values()
                .filter(|o| o.owner == c.owner && o.id != id)
                .map(|o| o.id)
                .collect();
            for o in old {
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
        let mut e = Encoder::new();
        e.opaque_fixed(&sid);
        e.u32(seq);
        e.u32(flags & 2); // no persistence, no RDMA mode change
        put_channel_attrs(&mut e, &nego);
        put_channel_attrs(&mut e, &back_nego);
        let reply = e.finish().to_bytes();
        if !c.confirmed {
            s.record_confirmed(&c.owner, c.minor);
        }
        if let Some(c) = s.clients.get_mut(&id) {
            c.confirmed = true;
            c.renewed = Instant::now();
            c.cs_seq = c.cs_seq.wrapping_add(1);
            c.cs_reply = Some(reply.clone());
        }
        let mut out = Encoder::new();
        out.append(xdr::Reply {
            segments: vec![xdr::Segment::Inline(reply)],
        });
        Ok(out)
    }

    pub(crate) fn sequence(
        &self,
        ctx: &mut Ctx<'_>,
        d: &mut Decoder,
        nops: usize,
    ) -> Result<SeqOutcome, OpFail> {
        let sid = session_id(d)?;
        let seqid = d.u32()?;
        let slotid = d.u32()? as usize;
        let _highest = d.u32()?;
        let cachethis = d.bool()?;
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
        if seqid == slot.seqid {
            if slot.busy {
                return Err(Nfsstat4::NFS4ERR_DELAY.into());
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
        let mut e = Encoder::new();
        e.opaque_fixed(&sid);
        e.u32(seqid);
        e.u32(slotid as u32);
        e.u32(nslots as u32 - 1);
        e.u32(nslots as u32 - 1);
        // SEQ4_STATUS_RECALLABLE_STATE_REVOKED while a revoked delegation awaits FREE_STATEID.
        e.u32(if s.states.has_revoked(client) {
            0x40
        } else {
            0
        });
        Ok(SeqOutcome::Proceed(e))
    }

    pub(crate) fn destroy_session(
        &self,
        ctx: &mut Ctx<'_>,
        d: &mut Decoder,
        idx: usize,
        nops: usize,
    ) -> OpResult {
        let sid = session_id(d)?;
        let mut s = self.state.lock();
        if !s.sessions.contains_key(&sid) {
            return Err(Nfsstat4::NFS4ERR_BADSESSION.into());
        }
        if ctx.session.is_some_and(|(cur, _, _)| cur == sid) && idx + 1 != nops {
            return Err(Nfsstat4::NFS4ERR_CONN_NOT_BOUND_TO_SESSION.into());
        }
        s.sessions.remove(&sid);
        if ctx.session.is_some_and(|(cur, _, _)| cur == sid) {
            ctx.session = None;
        }
        Ok(Encoder::new())
    }

    pub(crate) fn bind_conn(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = session_id(d)?;
        let dir = d.u32()?;
        let _rdma = d.bool()?;
        let mut s = self.state.lock();
        let Some(sess) = s.sessions.get_mut(&sid) else {
            return Err(Nfsstat4::NFS4ERR_BADSESSION.into());
        };
        if dir & 2 != 0 && sess.back_channel {
            sess.back = ctx.rpc.back.clone();
        }
        let out_dir = match dir {
            1 => 1,
            2 => 2,
            3 | 7 => {
                if sess.back_channel {
                    3
                } else {
                    1
                }
            }
            _ => return Err(Nfsstat4::NFS4ERR_INVAL.into()),
        };
        let mut e = Encoder::new();
        e.opaque_fixed(&sid);
        e.u32(out_dir);
        e.bool(false);
        Ok(e)
    }

    pub(crate) fn destroy_clientid(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let id = d.u64()?;
        let mut s = self.state.lock();
        if s.is_stale_client(id) || !s.clients.contains_key(&id) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        if s.sessions.values().any(|x| x.client == id) {
            return Err(Nfsstat4::NFS4ERR_CLIENTID_BUSY.into());
        }
        let _ = ctx;
        s.expire(id);
        Ok(Encoder::new())
    }

    pub(crate) fn reclaim_complete(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let one_fs = d.bool()?;
        let id = ctx
            .clientid
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_OP_NOT_IN_SESSION))?;
        if one_fs {
            ctx.cur()?;
            return Ok(Encoder::new());
        }
        let mut s = self.state.lock();
        let c = s
            .clients
            .get_mut(&id)
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_STALE_CLIENTID))?;
        if c.reclaim_complete {
            return Err(Nfsstat4::NFS4ERR_COMPLETE_ALREADY.into());
        }
        c.reclaim_complete = true;
        s.reclaim_complete(id);
        Ok(Encoder::new())
    }

    pub(crate) fn free_stateid(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let mut s = self.state.lock();
        if let Some(StateObj::Deleg(d)) = s.states.get(&sid.other) {
            if d.revoked && Some(d.client) == ctx.clientid {
                s.states.remove(&sid.other);
                return Ok(Encoder::new());
            }
        }
        let obj = s.check(&sid, 1)?.clone();
        match obj {
            StateObj::Open(_) | StateObj::Deleg(_) => Err(Nfsstat4::NFS4ERR_LOCKS_HELD.into()),
            StateObj::Lock(l) => {
                if s.owner_has_locks(l.file, l.client, &l.owner) {
                    return Err(Nfsstat4::NFS4ERR_LOCKS_HELD.into());
                }
                s.states.remove(&sid.other);
                Ok(Encoder::new())
            }
        }
    }

    pub(crate) fn test_stateid(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let n = d.array_len(1024, 16)?;
        let mut sids = Vec::with_capacity(n);
        for _ in 0..n {
            sids.push(get_stateid(d)?);
        }
        let s = self.state.lock();
        let mut e = Encoder::new();
        e.u32(n as u32);
        for sid in sids {
            let status = if sid.is_special() {
                Nfsstat4::NFS4ERR_BAD_STATEID
            } else {
                match s.check(&sid, 1) {
                    Ok(o) if Some(o.client()) == ctx.clientid => Nfsstat4::NFS4_OK,
                    Ok(_) => Nfsstat4::NFS4ERR_BAD_STATEID,
                    Err(e) => e,
                }
            };
            e.encode(&status);
        }
        Ok(e)
    }
}
