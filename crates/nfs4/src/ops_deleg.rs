//! Delegations and their recall over the NFSv4.1 back channel (CB_SEQUENCE + CB_RECALL) or an
//! NFSv4.0 client's callback connection (CB_RECALL with its callback_ident), DELEGRETURN and
//! BACKCHANNEL_CTL.
//!
//! A read delegation is granted on a read-only OPEN by a client that can be called back (4.1:
//! a session with a back channel; 4.0: a callback path whose CB_NULL probe was answered) when no
//! other client has the file open for writing; a write delegation on an OPEN for writing when
//! the client asks for one (OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG or _ANY_DELEG), or on one for
//! reading and writing that asks for nothing under `rnfsd --write-delegations`, and no other
//! client has the file open at all. Another client's GETATTR of the size or change attribute
//! asks the write delegation's holder (CB_GETATTR). Another client's access that conflicts (for a read
//! delegation: OPEN for writing, WRITE, SETATTR, REMOVE, RENAME, LINK; for a write delegation
//! also OPEN for reading and READ), NFSv3 included through [`vfs::ChangeGuard`], sends
//! CB_RECALL once and answers NFS4ERR_DELAY until the holder returns the delegation; a holder
//! that does not return it within a lease loses it (revocation). Programs on the server's
//! own machine are not seen: they are not told to wait for a delegation either.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use sunrpc::msg;
use xdr::{Decode, Decoder, Encoder};

use crate::attr::Bitmap;
use crate::compound::{callback_cred, Ctx, Nfs4, OpFail};
use crate::ops_file::file_key;
use crate::state::{Deleg, FileKey, Other, State, StateObj, Stateid};
use nfs4wire::{
    BackchannelCtl4args, CbCompound4args, CbCompound4res, CbGetattr4args, CbGetattr4res,
    CbRecall4args, CbSequence4args, CbSequence4res, Delegreturn4args, NfsCbArgop4, NfsCbResop4,
    NfsSpaceLimit4, Nfsace4, Nfsstat4, OpenDelegation4, OpenReadDelegation4, OpenWriteDelegation4,
};

/// How long a GETATTR of a write-delegated file waits for the holder's CB_GETATTR answer
/// before it recalls the delegation instead (knfsd waits about as long).
const CB_GETATTR_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a callback may go unanswered before its slot is used again (its reply taken as
/// lost, as over a connection that broke).
const CB_SLOT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Nfs4 {
    /// Grants a delegation on an open when the client can be called back and nothing
    /// conflicts: a read delegation on a read-only open (unless the client wants none), a write
    /// delegation on an open for writing when the client asks for one
    /// (OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG or _ANY_DELEG). Returns its stateid and whether it
    /// is a write delegation.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn maybe_delegate(
        &self,
        s: &mut State,
        client: u64,
        file: FileKey,
        fh: &Bytes,
        attr: &vfs::Attr,
        access: u32,
        want: u32,
    ) -> Option<(Stateid, bool)> {
        let read_only = access == nfs4wire::OPEN4_SHARE_ACCESS_READ;
        let write = match want {
            0
            | nfs4wire::OPEN4_SHARE_ACCESS_WANT_READ_DELEG
            | nfs4wire::OPEN4_SHARE_ACCESS_WANT_ANY_DELEG
                if read_only =>
            {
                false
            }
            nfs4wire::OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG
            | nfs4wire::OPEN4_SHARE_ACCESS_WANT_ANY_DELEG
                if !read_only =>
            {
                true
            }
            // unasked, only where the holder may also read (to fill partial pages it caches)
            0 if access == nfs4wire::OPEN4_SHARE_ACCESS_BOTH && self.unasked_write_delegations => {
                true
            }
            _ => return None,
        };
        if !s.can_call_back(client) {
            return None;
        }
        // A read delegation lets other clients read; a write delegation, nothing.
        let conflict = s.states.on_file(file).any(|(_, o)| match o {
            StateObj::Open(o) => {
                o.client != client && (write || o.access & nfs4wire::OPEN4_SHARE_ACCESS_WRITE != 0)
            }
            StateObj::Deleg(d) => !d.revoked,
            StateObj::Lock(_) | StateObj::Layout(_) => false,
        });
        if conflict {
            return None;
        }
        Some((insert_delegation(s, client, file, fh, attr, write), write))
    }

    /// The delegation of type `held` (1 read, 2 write) a client held before the restart and
    /// reclaims with its open (CLAIM_PREVIOUS): granted again, since the client may have opened
    /// and locked under it without telling the server, state it can hand over only while
    /// returning the delegation. When it conflicts with what another client reclaimed, or the
    /// client cannot be called back, it comes with "recall" set: return it now (RFC 8881
    /// section 18.16.3).
    pub(crate) fn reclaim_delegation(
        &self,
        s: &mut State,
        client: u64,
        file: FileKey,
        fh: &Bytes,
        attr: &vfs::Attr,
        held: u32,
    ) -> Option<(Stateid, bool, bool)> {
        let write = held == 2;
        let conflict = s.states.on_file(file).any(|(_, o)| match o {
            StateObj::Open(o) => {
                o.client != client && (write || o.access & nfs4wire::OPEN4_SHARE_ACCESS_WRITE != 0)
            }
            StateObj::Deleg(d) => d.client != client && !d.revoked,
            StateObj::Lock(_) | StateObj::Layout(_) => false,
        });
        let recall = conflict || !s.can_call_back(client);
        self.counters
            .reclaimed_delegations
            .fetch_add(1, Ordering::Relaxed);
        // reclaimed twice (another open of the same file): the one delegation
        let mine = s.states.on_file(file).find_map(|(k, o)| match o {
            StateObj::Deleg(d) if d.client == client && !d.revoked && d.write == write => {
                Some(Stateid {
                    seqid: d.seqid,
                    other: k,
                })
            }
            _ => None,
        });
        if let Some(sid) = mine {
            return Some((sid, write, recall));
        }
        Some((
            insert_delegation(s, client, file, fh, attr, write),
            write,
            recall,
        ))
    }

    /// Recalls other clients' delegations on `file` that conflict with access by `client`
    /// (`reading`: an access that only reads, which conflicts with write delegations only);
    /// Err(DELAY) while one is being recalled. Where delegations conflict it gives up a try
    /// without blocking (vfs::nowait): releasing an expired holder's state writes the client
    /// records, and callbacks are best sent from a worker.
    pub(crate) fn break_delegations(
        &self,
        s: &mut State,
        file: FileKey,
        client: u64,
        reading: bool,
    ) -> Result<(), Nfsstat4> {
        let conflicting = |s: &State| -> Vec<(Other, Deleg)> {
            s.states
                .on_file(file)
                .filter_map(|(k, v)| match v {
                    StateObj::Deleg(d)
                        if d.client != client && !d.revoked && (d.write || !reading) =>
                    {
                        Some((k, d.clone()))
                    }
                    _ => None,
                })
                .collect()
        };
        if conflicting(s).is_empty() {
            return Ok(());
        }
        if vfs::nowait::active() {
            vfs::nowait::give_up();
            return Err(Nfsstat4::NFS4ERR_DELAY);
        }
        // a holder whose lease ran out loses its state to the conflicting access
        s.release_courtesy(file);
        let lease = s.lease();
        let mut wait = false;
        for (other, d) in conflicting(s) {
            match d.recalled {
                Some(t) if t.elapsed() > lease => {
                    tracing::info!(
                        client = d.client,
                        sent = d.recall_sent,
                        "delegation not returned within a lease: revoked"
                    );
                    if s.clients.get(d.client).is_some_and(|c| c.minor == 0) {
                        // NFSv4.0 has no FREE_STATEID: the delegation goes at once
                        s.states.remove(&other);
                    } else {
                        s.states.revoke(&other);
                    }
                }
                _ => {
                    let sent = d.recall_sent || self.send_recall(s, &other, &d);
                    if let Some(StateObj::Deleg(x)) = s.states.get_mut(&other) {
                        x.recalled.get_or_insert_with(Instant::now);
                        x.recall_sent = sent;
                    }
                    wait = true;
                }
            }
        }
        if wait {
            Err(Nfsstat4::NFS4ERR_DELAY)
        } else {
            Ok(())
        }
    }

    /// Whether another client than `client` may hold a write delegation on `file`, looked up
    /// only when one exists anywhere (the count needs no lock).
    pub(crate) fn others_write_delegated(&self, file: FileKey, client: u64) -> bool {
        self.write_delegations.load(Ordering::Relaxed) > 0
            && self.state.lock().states.on_file(file).any(|(_, o)| {
                matches!(o, StateObj::Deleg(d) if d.write && d.client != client && !d.revoked)
            })
    }

    /// Recalls the delegations other clients hold on `file` before this client removes,
    /// renames or links it (NFS4ERR_DELAY until they are returned).
    pub(crate) fn recall_before_change(
        &self,
        ctx: &Ctx<'_>,
        file: FileKey,
    ) -> Result<(), crate::compound::OpFail> {
        let mut s = self.state.lock();
        if !s.states.any_delegation() {
            return Ok(());
        }
        let client = ctx.clientid.unwrap_or(u64::MAX);
        Ok(self.break_delegations(&mut s, file, client, false)?)
    }

    /// [`Nfs4::recall_before_change`] for the file named `name` in `dir` (nothing when no
    /// such name exists: the operation reports it). The name is looked up only while some
    /// delegation exists.
    pub(crate) fn recall_before_name_change(
        &self,
        ctx: &Ctx<'_>,
        c: &vfs::Caller,
        dir: &vfs::Node,
        name: &[u8],
    ) -> Result<(), crate::compound::OpFail> {
        if !self.state.lock().states.any_delegation() {
            return Ok(());
        }
        match self.vfs.entry_id(c, dir, name) {
            Ok((file, _)) => self.recall_before_change(ctx, file),
            Err(_) => Ok(()),
        }
    }

    /// Sends a CB_COMPOUND to `client` over its back channel: CB_SEQUENCE on slot 0, then
    /// `ops`. Returns the registration of its reply; None when it
    /// cannot go now: no back channel, the slot still holds an unanswered call (one at a time;
    /// a call unanswered for [`CB_SLOT_TIMEOUT`] is taken as lost), or the connection refused
    /// it. The slot's sequence id moves only for a call that went out.
    pub(crate) fn callback(
        &self,
        s: &mut State,
        client: u64,
        ops: Vec<NfsCbArgop4>,
    ) -> Option<Arc<sunrpc::callback::Waiter>> {
        if s.clients.get(client).is_some_and(|c| c.minor == 0) {
            return callback40(s, client, ops);
        }
        let sid = s.back_session(client)?;
        let sess = s.sessions.get_mut(&sid)?;
        let back = sess.back.clone()?;
        if let Some((w, since)) = &sess.cb_inflight {
            if !w.answered() && since.elapsed() < CB_SLOT_TIMEOUT {
                return None;
            }
        }
        let seq = sess.cb_seq.wrapping_add(1);
        let xid = sunrpc::callback::next_xid();
        let sequence = NfsCbArgop4::OpCbSequence(CbSequence4args {
            csa_sessionid: sid,
            csa_sequenceid: seq,
            csa_slotid: 0,
            csa_highest_slotid: 0,
            csa_cachethis: false,
            csa_referring_call_lists: Vec::new(),
        });
        let call = CbCompound4args {
            tag: Bytes::new(),
            minorversion: sess.minor,
            // unused in 4.1
            callback_ident: 0,
            argarray: std::iter::once(sequence).chain(ops).collect(),
        };
        let mut e = Encoder::with_capacity(256);
        msg::encode_call(&mut e, xid, sess.cb_program, 1, 1, &sess.cb_cred);
        e.encode(&call);
        let waiter = Arc::new(sunrpc::callback::expect(back.id(), xid));
        if !back.send_call(e.finish()) {
            return None;
        }
        sess.cb_seq = seq;
        sess.cb_inflight = Some((waiter.clone(), Instant::now()));
        Some(waiter)
    }

    /// Sends CB_RECALL of delegation `other`; whether it went out.
    fn send_recall(&self, s: &mut State, other: &Other, d: &Deleg) -> bool {
        let sid = Stateid {
            seqid: d.seqid,
            other: *other,
        };
        let recall = NfsCbArgop4::OpCbRecall(CbRecall4args {
            stateid: sid.into(),
            truncate: false,
            fh: d.fh.clone(),
        });
        let sent = self.callback(s, d.client, vec![recall]).is_some();
        tracing::debug!(client = d.client, sent, "CB_RECALL");
        sent
    }

    /// Asks the holder of write delegation `d` for the file's change attribute and size
    /// (CB_GETATTR) and waits up to [`CB_GETATTR_WAIT`] for the answer; None when it cannot be
    /// asked or does not answer in time.
    fn cb_getattr(&self, d: &Deleg) -> Option<(u64, u64)> {
        let getattr = NfsCbArgop4::OpCbGetattr(CbGetattr4args {
            fh: d.fh.clone(),
            attr_request: Bitmap::of(&[nfs4wire::FATTR4_CHANGE, nfs4wire::FATTR4_SIZE]).into_wire(),
        });
        let waiter = self.callback(&mut self.state.lock(), d.client, vec![getattr])?;
        let reply = waiter.wait(CB_GETATTR_WAIT)?;
        let got = decode_cb_getattr(reply);
        tracing::debug!(client = d.client, ?got, "CB_GETATTR");
        got
    }

    /// What another client is shown of the file with attributes `file`, on which `client`
    /// does not hold a write delegation but someone else does (RFC 8881 section 10.4.3):
    /// Ok(None) when the file itself is right (the holder changed nothing), Ok(Some((size,
    /// time))) when the holder reports changes it has not written (the size it reports, and
    /// the time to show as modify and change time, see [`Deleg::shown`]), Err(DELAY) when the
    /// holder could not be asked and the delegation is being recalled instead.
    pub(crate) fn attrs_under_write_delegation(
        &self,
        key: FileKey,
        file: &vfs::Attr,
        client: u64,
    ) -> Result<Option<(u64, vfs::Time)>, Nfsstat4> {
        let mut s = self.state.lock();
        // a holder whose lease ran out is not asked: its state goes
        s.release_courtesy(key);
        let held = s.states.on_file(key).find_map(|(k, o)| match o {
            StateObj::Deleg(d) if d.write && d.client != client && !d.revoked => {
                Some((k, d.clone()))
            }
            _ => None,
        });
        drop(s);
        let Some((other, d)) = held else {
            return Ok(None);
        };
        let answer = match d.recalled {
            // being returned: wait for it
            Some(_) => None,
            None => self.cb_getattr(&d),
        };
        let mut s = self.state.lock();
        match (answer, s.states.get_mut(&other)) {
            (Some((change, size)), Some(StateObj::Deleg(x))) => {
                // a holder that wrote everything through reports the size the file has
                if change == x.granted_change && size == file.size && x.shown.is_none() {
                    return Ok(None);
                }
                let t = match x.shown {
                    Some((reported, t)) if reported == change => t,
                    prev => next_nanosecond(prev.map_or(file.ctime, |p| p.1.max(file.ctime))),
                };
                x.shown = Some((change, t));
                Ok(Some((size, t)))
            }
            _ => self
                .break_delegations(&mut s, key, client, true)
                .map(|()| None),
        }
    }

    pub(crate) fn delegreturn(&self, ctx: &mut Ctx<'_>, a: Delegreturn4args) -> Result<(), OpFail> {
        let sid = self.stateid(ctx, a.deleg_stateid)?;
        let (_, n) = self.real(ctx)?;
        let mut s = self.state.lock();
        match s.check(&sid, ctx.minor)? {
            StateObj::Deleg(x) if x.file == file_key(&n) => {}
            StateObj::Deleg(_) => return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
            _ => return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
        }
        s.states.remove(&sid.other);
        Ok(())
    }

    pub(crate) fn backchannel_ctl(
        &self,
        ctx: &mut Ctx<'_>,
        a: BackchannelCtl4args,
    ) -> Result<(), OpFail> {
        let cb_program = a.bca_cb_program;
        // the first flavor the server can use
        let cred = a.bca_sec_parms.iter().find_map(callback_cred);
        let Some((sid, _, _)) = ctx.session else {
            return Err(Nfsstat4::NFS4ERR_OP_NOT_IN_SESSION.into());
        };
        let mut s = self.state.lock();
        if let Some(sess) = s.sessions.get_mut(&sid) {
            sess.cb_program = cb_program;
            if let Some(c) = cred {
                sess.cb_cred = c;
            }
        }
        Ok(())
    }
}

/// The open_delegation4 of a granted delegation (`recall`: to be returned at once).
pub fn delegation(sid: Stateid, write: bool, recall: bool) -> OpenDelegation4 {
    // nfsace4 permissions: allow nothing beyond what the mode says
    let permissions = Nfsace4 {
        r#type: 0,
        flag: 0,
        access_mask: 0,
        who: Bytes::new(),
    };
    if write {
        OpenDelegation4::OpenDelegateWrite(OpenWriteDelegation4 {
            stateid: sid.into(),
            recall,
            // no limit on how far the holder may extend the file
            space_limit: NfsSpaceLimit4::NfsLimitSize(u64::MAX),
            permissions,
        })
    } else {
        OpenDelegation4::OpenDelegateRead(OpenReadDelegation4 {
            stateid: sid.into(),
            recall,
            permissions,
        })
    }
}

/// How long a change from NFSv3 waits for a recalled delegation to come back before it answers
/// "try later": a client that returns it at once saves the NFSv3 client's retry back-off
/// (5 s in Linux). knfsd waits 30 ms; a callback over soft-RoCE takes longer.
const RECALL_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// NFSv3 (or any program without NFSv4 state) changing a file recalls the read delegations
/// other clients hold on it, like a write with the anonymous stateid.
impl vfs::ChangeGuard for Nfs4 {
    fn before_change(&self, file: FileKey) -> vfs::VfsResult<()> {
        self.recall_for_nfsv3(file, false)
    }

    fn before_read(&self, file: FileKey) -> vfs::VfsResult<bool> {
        if !self.others_write_delegated(file, u64::MAX) {
            return Ok(false);
        }
        // recalling waits: not on a thread that must not
        if vfs::nowait::active() {
            return Err(vfs::nowait::give_up());
        }
        self.recall_for_nfsv3(file, true).map(|()| true)
    }

    fn guards_anything(&self) -> bool {
        self.state.lock().states.any_delegation()
    }

    fn before_truncate(&self, node: &vfs::Node) -> vfs::VfsResult<()> {
        // an NFSv3 client is nobody's layout holder; it retries after JUKEBOX
        self.recall_layouts(u64::MAX, node)
            .map_err(|f| match f.status {
                Nfsstat4::NFS4ERR_DELAY => vfs::VfsError::Delay,
                _ => vfs::VfsError::Errno(libc::EIO),
            })
    }
}

impl Nfs4 {
    /// Recalls the delegations that an NFSv3 access to the file conflicts with (`reading`:
    /// write delegations only), waiting [`RECALL_WAIT`] for their return.
    fn recall_for_nfsv3(&self, file: FileKey, reading: bool) -> vfs::VfsResult<()> {
        let start = Instant::now();
        loop {
            if self
                .break_delegations(&mut self.state.lock(), file, u64::MAX, reading)
                .is_ok()
            {
                return Ok(());
            }
            // a try gave up there (a conflict): the worker recalls and waits
            if vfs::nowait::active() {
                return Err(vfs::nowait::give_up());
            }
            if start.elapsed() >= RECALL_WAIT {
                return Err(vfs::VfsError::Delay);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Records a new delegation of `client` on `file` (handle `fh`, attributes `attr` now).
fn insert_delegation(
    s: &mut State,
    client: u64,
    file: FileKey,
    fh: &Bytes,
    attr: &vfs::Attr,
    write: bool,
) -> Stateid {
    let other = s.new_other();
    s.states.insert(
        other,
        StateObj::Deleg(Deleg {
            client,
            file,
            fh: fh.clone(),
            seqid: 1,
            recalled: None,
            recall_sent: false,
            revoked: false,
            write,
            granted_change: crate::attr::change(attr),
            shown: None,
        }),
    );
    Stateid { seqid: 1, other }
}

/// The time one nanosecond after `t`.
fn next_nanosecond(t: vfs::Time) -> vfs::Time {
    match t.nsec + 1 {
        1_000_000_000 => vfs::Time {
            sec: t.sec + 1,
            nsec: 0,
        },
        nsec => vfs::Time { sec: t.sec, nsec },
    }
}

/// The change attribute and size in the reply to a CB_COMPOUND of CB_SEQUENCE and
/// CB_GETATTR; None unless every part succeeded and both attributes are there.
/// Sends a CB_COMPOUND (minor version 0, no CB_SEQUENCE, the client's callback_ident) on an
/// NFSv4.0 client's callback connection; the registration of its reply, or None when the path
/// is not up or the connection took no more. Any number may be in flight: NFSv4.0 has no slots.
fn callback40(
    s: &mut State,
    client: u64,
    ops: Vec<NfsCbArgop4>,
) -> Option<Arc<sunrpc::callback::Waiter>> {
    let cb = s.clients.get_mut(client)?.callback.as_mut()?;
    if !cb.is_up() {
        return None;
    }
    let (conn, _) = cb.conn.as_ref()?;
    let xid = sunrpc::callback::next_xid();
    let call = CbCompound4args {
        tag: Bytes::new(),
        minorversion: 0,
        callback_ident: cb.ident,
        argarray: ops,
    };
    let mut e = Encoder::with_capacity(256);
    // as knfsd: the server's own credential, for AUTH_SYS root
    let cred = msg::Credential::Sys(sunrpc::AuthSys {
        stamp: 0,
        machine: Bytes::from_static(b"rnfsd"),
        uid: 0,
        gid: 0,
        gids: Vec::new(),
    });
    msg::encode_call(&mut e, xid, cb.program, 1, 1, &cred);
    e.encode(&call);
    let waiter = Arc::new(sunrpc::callback::expect(
        sunrpc::BackChannel::id(&**conn),
        xid,
    ));
    if !sunrpc::BackChannel::send_call(&**conn, e.finish()) {
        return None;
    }
    cb.sent(waiter.clone());
    Some(waiter)
}

fn decode_cb_getattr(reply: Bytes) -> Option<(u64, u64)> {
    let res = CbCompound4res::decode(&mut msg::decode_success(reply)?).ok()?;
    // NFSv4.1's answer begins with CB_SEQUENCE's, NFSv4.0's does not
    let ops = match &res.resarray[..] {
        [NfsCbResop4::OpCbSequence(CbSequence4res::Nfs4Ok(_)), rest @ ..] => rest,
        all => all,
    };
    let attrs = match (res.status, ops) {
        (Nfsstat4::NFS4_OK, [NfsCbResop4::OpCbGetattr(CbGetattr4res::Nfs4Ok(ok))]) => {
            &ok.obj_attributes
        }
        _ => return None,
    };
    let got = Bitmap::from(attrs.attrmask.clone());
    let mut v = Decoder::new(attrs.attr_vals.clone());
    // values in attribute order: change (3) before size (4)
    let change = got
        .has(nfs4wire::FATTR4_CHANGE)
        .then(|| v.u64())
        .transpose()
        .ok()??;
    let size = got
        .has(nfs4wire::FATTR4_SIZE)
        .then(|| v.u64())
        .transpose()
        .ok()??;
    Some((change, size))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nfs4wire::{CbGetattr4resok, CbSequence4resok};

    fn reply(status: Nfsstat4, getattr_status: Nfsstat4, attrs: &[u32], vals: &[u64]) -> Bytes {
        let mut e = Encoder::new();
        msg::encode_accepted(&mut e, 7, msg::AcceptStat::Success);
        let mut v = Encoder::new();
        for x in vals {
            v.u64(*x);
        }
        let getattr = match getattr_status {
            Nfsstat4::NFS4_OK => CbGetattr4res::Nfs4Ok(CbGetattr4resok {
                obj_attributes: nfs4wire::Fattr4 {
                    attrmask: Bitmap::of(attrs).into_wire(),
                    attr_vals: v.finish().to_bytes(),
                },
            }),
            s => CbGetattr4res::Default(s),
        };
        e.encode(&CbCompound4res {
            status,
            tag: Bytes::new(),
            resarray: vec![
                NfsCbResop4::OpCbSequence(CbSequence4res::Nfs4Ok(CbSequence4resok {
                    csr_sessionid: [0; 16],
                    csr_sequenceid: 1,
                    csr_slotid: 0,
                    csr_highest_slotid: 0,
                    csr_target_highest_slotid: 0,
                })),
                NfsCbResop4::OpCbGetattr(getattr),
            ],
        });
        e.finish().to_bytes()
    }

    #[test]
    fn a_cb_getattr_reply_gives_change_and_size_or_nothing() {
        let both = [nfs4wire::FATTR4_CHANGE, nfs4wire::FATTR4_SIZE];
        assert_eq!(
            decode_cb_getattr(reply(Nfsstat4::NFS4_OK, Nfsstat4::NFS4_OK, &both, &[9, 5])),
            Some((9, 5))
        );
        assert_eq!(
            decode_cb_getattr(reply(
                Nfsstat4::NFS4_OK,
                Nfsstat4::NFS4ERR_BADHANDLE,
                &both,
                &[9, 5]
            )),
            None
        );
        assert_eq!(
            decode_cb_getattr(reply(
                Nfsstat4::NFS4ERR_DELAY,
                Nfsstat4::NFS4_OK,
                &both,
                &[9, 5]
            )),
            None
        );
        assert_eq!(
            decode_cb_getattr(reply(
                Nfsstat4::NFS4_OK,
                Nfsstat4::NFS4_OK,
                &[nfs4wire::FATTR4_SIZE],
                &[5]
            )),
            None
        );
        assert_eq!(
            decode_cb_getattr(reply(Nfsstat4::NFS4_OK, Nfsstat4::NFS4_OK, &both, &[9])),
            None
        );
        let whole = reply(Nfsstat4::NFS4_OK, Nfsstat4::NFS4_OK, &both, &[9, 5]);
        for cut in 0..whole.len() {
            assert_eq!(decode_cb_getattr(whole.slice(..cut)), None, "cut at {cut}");
        }
    }

    proptest::proptest! {
        /// Whatever a client sends back, decoding a CB_GETATTR reply never panics; a valid
        /// reply with one word changed decodes to an answer or to nothing, never past its end.
        #[test]
        fn decoding_any_cb_reply_is_safe(
            junk in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            at in 0usize..20,
            to: u32,
        ) {
            let _ = decode_cb_getattr(Bytes::from(junk));
            let mut v = reply(Nfsstat4::NFS4_OK, Nfsstat4::NFS4_OK, &[nfs4wire::FATTR4_CHANGE, nfs4wire::FATTR4_SIZE], &[9, 5]).to_vec();
            let i = (at * 4).min(v.len() - 4);
            v[i..i + 4].copy_from_slice(&to.to_be_bytes());
            let _ = decode_cb_getattr(Bytes::from(v));
        }
    }
}
