//! Delegations and their recall over the NFSv4.1 back channel (CB_SEQUENCE + CB_RECALL),
//! DELEGRETURN and BACKCHANNEL_CTL.
//!
//! A read delegation is granted on a read-only OPEN by a 4.1 client with a back channel when no
//! other client has the file open for writing; a write delegation on an OPEN for writing when
//! the client asks for one (OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG or _ANY_DELEG) and no other
//! client has the file open at all. Another client's access that conflicts (for a read
//! delegation: OPEN for writing, WRITE, SETATTR, REMOVE, RENAME, LINK; for a write delegation
//! also OPEN for reading and READ), NFSv3 included through [`vfs::ChangeGuard`], sends
//! CB_RECALL once and answers NFS4ERR_DELAY until the holder returns the delegation; a holder
//! that does not return it within a lease loses it (revocation). Programs on the server's
//! own machine are not seen: they are not told to wait for a delegation either.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use bytes::Bytes;
use sunrpc::{msg, Credential};
use xdr::{Decoder, Encoder};

use crate::compound::{callback_sec, Ctx, Nfs4, OpResult};
use crate::ops_file::{file_key, put_stateid};
use crate::proto::{share, st};
use crate::state::{Deleg, FileKey, State, StateObj, Stateid};

/// CB_COMPOUND operation numbers.
const OP_CB_RECALL: u32 = 4;
const OP_CB_SEQUENCE: u32 = 11;

static CB_XID: AtomicU32 = AtomicU32::new(0x6362_0000);

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
        minor: u32,
        client: u64,
        file: FileKey,
        fh: &Bytes,
        attr: &vfs::Attr,
        access: u32,
        want: u32,
    ) -> Option<(Stateid, bool)> {
        if minor == 0 {
            return None;
        }
        let read_only = access == share::ACCESS_READ;
        let write = match want {
            0 | share::WANT_READ_DELEG | share::WANT_ANY_DELEG if read_only => false,
            share::WANT_WRITE_DELEG | share::WANT_ANY_DELEG if !read_only => true,
            _ => return None,
        };
        s.back_session(client)?;
        // A read delegation lets other clients read; a write delegation, nothing.
        let conflict = s.states.on_file(file).any(|(_, o)| match o {
            StateObj::Open(o) => {
                o.client != client && (write || o.access & share::ACCESS_WRITE != 0)
            }
            StateObj::Deleg(d) => !d.revoked,
            StateObj::Lock(_) => false,
        });
        if conflict {
            return None;
        }
        let other = s.new_other();
        s.states.insert(
            other,
            StateObj::Deleg(Deleg {
                client,
                file,
                fh: fh.clone(),
                seqid: 1,
                recalled: None,
                revoked: false,
                write,
                granted: (crate::attr::change(attr), attr.size),
                modified: false,
            }),
        );
        Some((Stateid { seqid: 1, other }, write))
    }

    /// Recalls other clients' delegations on `file` that conflict with access by `client`
    /// (`reading`: an access that only reads, which conflicts with write delegations only);
    /// Err(DELAY) while a recall is outstanding.
    pub(crate) fn break_delegations(
        &self,
        s: &mut State,
        file: FileKey,
        client: u64,
        reading: bool,
    ) -> Result<(), u32> {
        let lease = s.lease;
        let mut wait = false;
        let held: Vec<([u8; 12], Deleg)> = s
            .states
            .on_file(file)
            .filter_map(|(k, v)| match v {
                StateObj::Deleg(d) if d.client != client && !d.revoked && (d.write || !reading) => {
                    Some((k, d.clone()))
                }
                _ => None,
            })
            .collect();
        for (other, d) in held {
            match d.recalled {
                Some(t) if t.elapsed() > lease => {
                    tracing::info!(
                        client = d.client,
                        "delegation not returned within a lease: revoked"
                    );
                    if let Some(StateObj::Deleg(x)) = s.states.get_mut(&other) {
                        x.revoked = true;
                    }
                }
                Some(_) => wait = true,
                None => {
                    self.send_recall(s, &other, &d);
                    if let Some(StateObj::Deleg(x)) = s.states.get_mut(&other) {
                        x.recalled = Some(Instant::now());
                    }
                    wait = true;
                }
            }
        }
        if wait {
            Err(st::DELAY)
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

    /// Recalls the delegations other clients hold on the file with attributes `attr` before
    /// this client removes, renames or links it (NFS4ERR_DELAY until they are returned).
    pub(crate) fn recall_before_change(
        &self,
        ctx: &Ctx<'_>,
        attr: &vfs::Attr,
    ) -> Result<(), crate::compound::OpFail> {
        let mut s = self.state.lock();
        if !s.states.any_delegation() {
            return Ok(());
        }
        let client = ctx.clientid.unwrap_or(u64::MAX);
        Ok(self.break_delegations(&mut s, (attr.fsid, attr.fileid), client, false)?)
    }

    fn send_recall(&self, s: &mut State, other: &[u8; 12], d: &Deleg) {
        let Some(sid) = s.back_session(d.client) else {
            return;
        };
        let Some(sess) = s.sessions.get_mut(&sid) else {
            return;
        };
        sess.cb_seq = sess.cb_seq.wrapping_add(1);
        let xid = CB_XID.fetch_add(1, Ordering::Relaxed);
        let mut e = Encoder::with_capacity(256);
        msg::encode_call(&mut e, xid, sess.cb_program, 1, 1, &sess.cb_cred);
        e.opaque(b"");
        e.u32(sess.minor);
        e.u32(0); // callback_ident: unused in 4.1
        e.u32(2);
        e.u32(OP_CB_SEQUENCE);
        e.opaque_fixed(&sid);
        e.u32(sess.cb_seq);
        e.u32(0); // slot
        e.u32(0); // highest slot
        e.bool(false);
        e.u32(0); // referring call lists
        e.u32(OP_CB_RECALL);
        put_stateid(
            &mut e,
            &Stateid {
                seqid: d.seqid,
                other: *other,
            },
        );
        e.bool(false);
        e.opaque(&d.fh);
        let msg = e.finish();
        let body_len = msg.wire_len();
        let sent = sess.back.as_ref().is_some_and(|b| b.send_call(msg));
        tracing::debug!(client = d.client, sent, bytes = body_len, "CB_RECALL");
    }

    pub(crate) fn delegreturn(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let (_, n) = self.real(ctx)?;
        let mut s = self.state.lock();
        match s.check(&sid, ctx.minor)? {
            StateObj::Deleg(x) if x.file == file_key(&n) => {}
            StateObj::Deleg(_) => return Err(st::BAD_STATEID.into()),
            _ => return Err(st::BAD_STATEID.into()),
        }
        s.states.remove(&sid.other);
        Ok(Encoder::new())
    }

    pub(crate) fn backchannel_ctl(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let cb_program = d.u32()?;
        let n = d.array_len(16, 4)?;
        let mut cred: Option<Credential> = None;
        for _ in 0..n {
            let c = callback_sec(d)?;
            if cred.is_none() {
                cred = c;
            }
        }
        let Some((sid, _, _)) = ctx.session else {
            return Err(st::OP_NOT_IN_SESSION.into());
        };
        let mut s = self.state.lock();
        if let Some(sess) = s.sessions.get_mut(&sid) {
            sess.cb_program = cb_program;
            if let Some(c) = cred {
                sess.cb_cred = c;
            }
        }
        Ok(Encoder::new())
    }
}

/// Encodes open_delegation4 for a granted delegation.
pub fn encode_deleg(e: &mut Encoder, sid: &Stateid, write: bool) {
    e.u32(if write { 2 } else { 1 }); // OPEN_DELEGATE_WRITE / _READ
    put_stateid(e, sid);
    e.bool(false); // recall
    if write {
        // nfs_space_limit4: no limit on how far the holder may extend the file.
        e.u32(1); // NFS_LIMIT_SIZE
        e.u64(u64::MAX);
    }
    // nfsace4 permissions: allow nothing beyond what the mode says.
    e.u32(0);
    e.u32(0);
    e.u32(0);
    e.opaque(b"");
}

/// How long a change from NFSv3 waits for a recalled delegation to come back before it answers
/// "try later": a client that returns it at once saves the NFSv3 client's retry back-off
/// (5 s in Linux). knfsd waits 30 ms; a callback over soft-RoCE takes longer.
const RECALL_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// NFSv3 (or any program without NFSv4 state) changing a file recalls the read delegations
/// other clients hold on it, like a write with the anonymous stateid.
impl vfs::ChangeGuard for Nfs4 {
    fn before_change(&self, attr: &vfs::Attr) -> vfs::VfsResult<()> {
        self.recall_for_nfsv3(attr, false)
    }

    fn before_read(&self, attr: &vfs::Attr) -> vfs::VfsResult<()> {
        let file = (attr.fsid, attr.fileid);
        if !self.others_write_delegated(file, u64::MAX) {
            return Ok(());
        }
        // recalling waits: not on a thread that must not
        if vfs::nowait::active() {
            return Err(vfs::nowait::give_up());
        }
        self.recall_for_nfsv3(attr, true)
    }

    fn guards_anything(&self) -> bool {
        self.state.lock().states.any_delegation()
    }
}

impl Nfs4 {
    /// Recalls the delegations that an NFSv3 access to the file conflicts with (`reading`:
    /// write delegations only), waiting [`RECALL_WAIT`] for their return.
    fn recall_for_nfsv3(&self, attr: &vfs::Attr, reading: bool) -> vfs::VfsResult<()> {
        let file = (attr.fsid, attr.fileid);
        let start = Instant::now();
        loop {
            if self
                .break_delegations(&mut self.state.lock(), file, u64::MAX, reading)
                .is_ok()
            {
                return Ok(());
            }
            if start.elapsed() >= RECALL_WAIT {
                return Err(vfs::VfsError::Delay);
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}
