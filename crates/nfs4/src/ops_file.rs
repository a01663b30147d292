//! Opens and I/O: OPEN, OPEN_CONFIRM, OPEN_DOWNGRADE, CLOSE, READ, WRITE, COMMIT, and the
//! NFSv4.2 sparse-file and copy operations (READ_PLUS, SEEK, ALLOCATE, DEALLOCATE, COPY, CLONE).

use std::sync::atomic::Ordering;

use bytes::Bytes;
use vfs::{CreateMode, Extent, FileType, Node, SetAttrs, Span, Stability};
use xdr::{Decoder, Encoder, Pages, Payload, Reply};

use crate::attr::{self, Bitmap};
use crate::compound::{Ctx, Fh, Nfs4, OpFail, OpResult};
use crate::ops_dir::change_info;
use crate::proto::{share, st, NFS4_OPAQUE_LIMIT};
use crate::state::{access_bits, FileKey, Open, OwnerSeq, State, StateObj, Stateid};

/// The file key of a node.
pub fn file_key(n: &Node) -> FileKey {
    n.file_id()
}

/// Encodes a stateid4.
pub fn put_stateid(e: &mut Encoder, s: &Stateid) {
    e.u32(s.seqid);
    e.opaque_fixed(&s.other);
}

/// Decodes a stateid4.
pub fn get_stateid(d: &mut Decoder) -> Result<Stateid, OpFail> {
    let seqid = d.u32()?;
    let o = d.opaque_fixed(12)?;
    let mut other = [0u8; 12];
    other.copy_from_slice(&o);
    Ok(Stateid { seqid, other })
}

/// Statuses after which an NFSv4.0 owner's seqid does not advance (RFC 7530 section 9.1.7).
fn seqid_unchanged(status: u32) -> bool {
    matches!(
        status,
        st::STALE_CLIENTID
            | st::STALE_STATEID
            | st::BAD_STATEID
            | st::BAD_SEQID
            | st::BADXDR
            | st::RESOURCE
            | st::NOFILEHANDLE
            | st::MOVED
    )
}

fn clone_result(r: &Result<Reply, (u32, Option<Reply>)>) -> (u32, Reply) {
    match r {
        Ok(b) => (st::OK, b.clone()),
        Err((s, b)) => (*s, b.clone().unwrap_or_default()),
    }
}

fn to_op_result(r: Result<Reply, (u32, Option<Reply>)>) -> OpResult {
    match r {
        Ok(b) => {
            let mut e = Encoder::new();
            e.append(b);
            Ok(e)
        }
        Err((status, body)) => Err(OpFail {
            status,
            body: body.map(|b| {
                let mut e = Encoder::new();
                e.append(b);
                e
            }),
        }),
    }
}

impl Nfs4 {
    /// Runs an NFSv4.0 seqid-sequenced operation for an owner: replays the last reply for a
    /// retransmission, rejects a bad seqid, and records the reply. NFSv4.1 ignores seqids.
    pub(crate) fn sequenced(
        &self,
        ctx: &Ctx<'_>,
        key: Option<(u64, Bytes, bool)>,
        seqid: u32,
        f: impl FnOnce(&mut State) -> OpResult,
    ) -> OpResult {
        self.sequenced_op(ctx, key, seqid, false, f)
    }

    /// [`Nfs4::sequenced`]; `opening` lets an OPEN restart an unconfirmed owner's sequence.
    pub(crate) fn sequenced_op(
        &self,
        ctx: &Ctx<'_>,
        key: Option<(u64, Bytes, bool)>,
        seqid: u32,
        opening: bool,
        f: impl FnOnce(&mut State) -> OpResult,
    ) -> OpResult {
        let mut s = self.state.lock();
        let Some(key) = key.filter(|_| ctx.minor == 0) else {
            return f(&mut s);
        };
        if let Some(o) = s.owners.get(&key) {
            if o.confirmed || key.2 || !opening {
                if seqid == o.seqid {
                    if let Some((status, body)) = &o.last {
                        let r = if *status == st::OK {
                            Ok(body.clone())
                        } else {
                            Err((*status, Some(body.clone())))
                        };
                        return to_op_result(r);
                    }
                }
                if seqid != o.seqid.wrapping_add(1) {
                    return Err(st::BAD_SEQID.into());
                }
            }
        }
        let r = f(&mut s)
            .map(|e| e.finish())
            .map_err(|f| (f.status, f.body.map(Encoder::finish)));
        let (status, body) = clone_result(&r);
        if !seqid_unchanged(status) {
            let o = s.owners.entry(key).or_insert_with(|| OwnerSeq {
                seqid,
                confirmed: false,
                last: None,
                last_open: None,
            });
            o.seqid = seqid;
            o.last = Some((status, body));
        }
        to_op_result(r)
    }

    /// Decodes a stateid argument, resolving the NFSv4.1 "current stateid".
    pub(crate) fn stateid_arg(&self, ctx: &Ctx<'_>, d: &mut Decoder) -> Result<Stateid, OpFail> {
        let sid = get_stateid(d)?;
        if ctx.minor >= 1 && sid == Stateid::CURRENT {
            return ctx.cur_sid.ok_or(OpFail::from(st::BAD_STATEID));
        }
        Ok(sid)
    }

    /// Checks that `sid` permits I/O on `n` (special stateids are anonymous I/O, checked
    /// against share reservations).
    pub(crate) fn check_io_stateid(
        &self,
        ctx: &Ctx<'_>,
        sid: &Stateid,
        n: &Node,
        write: bool,
        _off: u64,
        _len: u64,
    ) -> Result<(), OpFail> {
        let file = file_key(n);
        // releasing an expired client's state for it removes the client's record from the state
        // directory: not on a thread that must not wait
        if sid.is_special() && vfs::nowait::active() {
            return Err(vfs::nowait::give_up().into());
        }
        let mut s = self.state.lock();
        if sid.is_special() {
            if *sid != Stateid::ANON && *sid != Stateid::BYPASS {
                return Err(st::BAD_STATEID.into());
            }
            s.release_courtesy(file);
            self.break_delegations(&mut s, file, ctx.clientid.unwrap_or(u64::MAX), !write)?;
            let want = if write {
                share::DENY_WRITE
            } else {
                share::DENY_READ
            };
            let denied = s
                .states
                .on_file(file)
                .any(|(_, o)| matches!(o, StateObj::Open(o) if o.deny & want != 0));
            if denied && (write || *sid != Stateid::BYPASS) {
                return Err(st::LOCKED.into());
            }
            return Ok(());
        }
        let obj = s.check(sid, ctx.minor)?;
        let (client, access) = match obj {
            StateObj::Open(o) => (o.client, o.access),
            StateObj::Lock(l) => (
                l.client,
                match s.states.get(&l.open) {
                    Some(StateObj::Open(o)) => o.access,
                    _ => return Err(st::BAD_STATEID.into()),
                },
            ),
            // A read delegation allows reading only, a write delegation both.
            StateObj::Deleg(d) if d.write => (d.client, share::ACCESS_BOTH),
            StateObj::Deleg(d) => (d.client, share::ACCESS_READ),
        };
        if obj.file() != file {
            return Err(st::BAD_STATEID.into());
        }
        self.break_delegations(&mut s, file, client, !write)?;
        // (NFSv4.1+: the COMPOUND's SEQUENCE renewed the lease already)
        if ctx.minor == 0 {
            let _ = s.renew(client);
        }
        let need = if write {
            share::ACCESS_WRITE
        } else {
            share::ACCESS_READ
        };
        if access & need == 0 {
            return Err(st::OPENMODE.into());
        }
        Ok(())
    }

    fn check_client(&self, ctx: &Ctx<'_>, s: &mut State, clientid: u64) -> Result<u64, OpFail> {
        if ctx.minor >= 1 {
            return ctx.clientid.ok_or(OpFail::from(st::BADSESSION));
        }
        if s.is_stale_client(clientid) {
            return Err(st::STALE_CLIENTID.into());
        }
        match s.clients.get(&clientid) {
            Some(c) if c.confirmed => {}
            Some(_) | None => return Err(st::STALE_CLIENTID.into()),
        }
        s.renew(clientid)?;
        Ok(clientid)
    }

    fn regular(&self, ctx: &Ctx<'_>, n: &Node) -> Result<(), OpFail> {
        match n.attr.ftype {
            FileType::Regular => Ok(()),
            FileType::Directory => Err(st::ISDIR.into()),
            // NFSv4.0 has no WRONG_TYPE; knfsd answers SYMLINK for every other type.
            _ if ctx.minor == 0 => Err(st::SYMLINK.into()),
            _ => Err(st::WRONG_TYPE.into()),
        }
    }

    pub(crate) fn open(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let seqid = d.u32()?;
        let share_access = d.u32()?;
        let share_deny = d.u32()?;
        let clientid = d.u64()?;
        let owner = d.opaque_owned(NFS4_OPAQUE_LIMIT)?;
        let create = match d.u32()? {
            0 => None,
            1 => Some(match d.u32()? {
                0 => (
                    CreateMode::Unchecked,
                    Some(attr::decode_sattr(d, ctx.minor, &self.idmap)?),
                ),
                1 => (
                    CreateMode::Guarded,
                    Some(attr::decode_sattr(d, ctx.minor, &self.idmap)?),
                ),
                2 => (CreateMode::Exclusive(verifier(d)?), None),
                3 if ctx.minor >= 1 => {
                    let v = verifier(d)?;
                    (
                        CreateMode::Exclusive(v),
                        Some(attr::decode_sattr(d, ctx.minor, &self.idmap)?),
                    )
                }
                _ => return Err(st::BADXDR.into()),
            }),
            _ => return Err(st::BADXDR.into()),
        };
        enum Claim {
            Null(Bytes),
            Fh,
            /// CLAIM_PREVIOUS with the delegation type held before the restart.
            Previous(u32),
            /// CLAIM_DELEGATE_CUR (with the name in the current directory) or
            /// CLAIM_DELEG_CUR_FH (the current file): the client turns opens it made locally
            /// under the delegation into open state, typically while returning it.
            DelegCur(Stateid, Option<Bytes>),
        }
        let claim = match d.u32()? {
            0 => Claim::Null(d.opaque(crate::ops_fh::MAX_COMPONENT)?),
            // open_delegation_type4: NONE, READ, WRITE, NONE_EXT (4.1)
            1 => match d.u32()? {
                t @ 0..=3 => Claim::Previous(t),
                _ => return Err(st::BADXDR.into()),
            },
            2 => {
                let sid = get_stateid(d)?;
                Claim::DelegCur(sid, Some(d.opaque(crate::ops_fh::MAX_COMPONENT)?))
            }
            3 => {
                // CLAIM_DELEGATE_PREV (a client that restarted and kept its delegations in
                // stable storage): not supported, as CLAIM_DELEG_PREV_FH below.
                d.opaque(crate::ops_fh::MAX_COMPONENT)?;
                return Err(st::NOTSUPP.into());
            }
            4 if ctx.minor >= 1 => Claim::Fh,
            5 if ctx.minor >= 1 => Claim::DelegCur(get_stateid(d)?, None),
            6 if ctx.minor >= 1 => return Err(st::NOTSUPP.into()),
            _ => return Err(st::BADXDR.into()),
        };
        if matches!(claim, Claim::DelegCur(..)) && create.is_some() {
            // A delegation is for an existing file (RFC 8881 section 18.16.3).
            return Err(st::INVAL.into());
        }
        let key = Some((clientid, owner.clone(), false));
        let access = access_bits(share_access);
        if !(1..=3).contains(&access) || share_deny > 3 {
            return Err(st::INVAL.into());
        }
        ctx.cur()?;
        let mut new_fh = None;
        let r = self.sequenced_op(ctx, key, seqid, true, |s| {
            let client = self.check_client(ctx, s, clientid)?;
            if let Claim::Previous(_) = claim {
                s.may_reclaim(client)?;
                self.counters
                    .reclaimed_opens
                    .fetch_add(1, Ordering::Relaxed);
            } else if s.in_grace()
                || (ctx.minor >= 1 && !s.clients.get(&client).is_some_and(|c| c.reclaim_complete))
            {
                // Non-reclaim opens wait for the grace period, and in 4.1 for the client's
                // RECLAIM_COMPLETE (RFC 8881 section 18.51.3).
                return Err(st::GRACE.into());
            }
            let owner_key = (clientid, owner.clone(), false);
            if ctx.minor == 0 && matches!(claim, Claim::Previous(_)) {
                // A reclaiming owner needs no OPEN_CONFIRM: it was confirmed before the
                // restart, and the client's reclaim compound returns no handle to confirm with.
                let o = s.owners.entry(owner_key.clone()).or_insert(OwnerSeq {
                    seqid,
                    confirmed: true,
                    last: None,
                    last_open: None,
                });
                o.confirmed = true;
            }
            let new_owner =
                ctx.minor == 0 && !s.owners.get(&owner_key).is_some_and(|o| o.confirmed);
            let (mut file_node, dir_before, dir_after, attrset, created) = match &claim {
                Claim::Fh | Claim::Previous(_) | Claim::DelegCur(_, None) => {
                    if create.is_some() {
                        return Err(st::INVAL.into());
                    }
                    let (_, n) = self.real(ctx)?;
                    (n, None, None, Bitmap::default(), false)
                }
                Claim::Null(name) | Claim::DelegCur(_, Some(name)) => {
                    let name = crate::ops_fh::check_name(name)?;
                    let (c, dir) = match ctx.cur()? {
                        Fh::Pseudo(_) => {
                            return Err(if create.is_some() {
                                st::ROFS
                            } else {
                                st::NOENT
                            }
                            .into())
                        }
                        Fh::Real(_) => self.real(ctx)?,
                    };
                    match dir.attr.ftype {
                        FileType::Directory => {}
                        FileType::Symlink => return Err(st::SYMLINK.into()),
                        _ => return Err(st::NOTDIR.into()),
                    }
                    let (fh, created, bm) = match &create {
                        None => (
                            self.vfs.lookup(&c, &dir, &name)?.0,
                            false,
                            Bitmap::default(),
                        ),
                        Some((how, sattr)) => {
                            let (sa, mut bm) = sattr.clone().unwrap_or_default();
                            let existed = self.vfs.lookup(&c, &dir, &name).is_ok();
                            // On an existing file UNCHECKED ignores the attributes but a
                            // truncation to zero (RFC 7530 section 16.16.5), made below once
                            // the caller's access and the file's share reservations allow it.
                            // A name absent a moment ago is created GUARDED, so that a file
                            // made meanwhile by someone else is not taken for a new one (which
                            // skips the permission check).
                            let exclusive = matches!(how, CreateMode::Exclusive(_));
                            let (first, sa_create) = match (how, existed) {
                                (CreateMode::Unchecked, false) => (CreateMode::Guarded, sa.clone()),
                                (CreateMode::Guarded, false) => (*how, sa.clone()),
                                _ => (*how, SetAttrs::default()),
                            };
                            let made = match self
                                .vfs
                                .create_file(&c, &dir, &name, first, &sa_create)
                            {
                                Err(vfs::VfsError::Errno(libc::EEXIST)) if first != *how => self
                                    .vfs
                                    .create_file(&c, &dir, &name, *how, &SetAttrs::default())?,
                                r => r?,
                            };
                            if exclusive && made.created {
                                // EXCLUSIVE4_1 attributes other than the times holding the verifier.
                                let rest = SetAttrs {
                                    atime: vfs::SetTime::DontChange,
                                    mtime: vfs::SetTime::DontChange,
                                    ..sa
                                };
                                if rest != SetAttrs::default() {
                                    let node = self.vfs.resolve(&made.fh)?;
                                    self.vfs.setattr(&c, &node, &rest, None)?;
                                }
                                // The times hold the verifier: saying they were set makes the
                                // client set them (Linux sends a SETATTR with the times of
                                // now), as after knfsd's exclusive creates.
                                bm.set(crate::proto::fattr::TIME_ACCESS);
                                bm.set(crate::proto::fattr::TIME_MODIFY);
                            }
                            let bm = if made.created { bm } else { Bitmap::default() };
                            (made.fh, made.created, bm)
                        }
                    };
                    let n = self.vfs.authorize(&fh, &ctx.client)?.1;
                    let after = self.vfs.getattr(&dir).ok();
                    (n, Some(dir.attr.clone()), after, bm, created)
                }
            };
            self.regular(ctx, &file_node)?;
            if let Claim::DelegCur(sid, _) = &claim {
                // The claimed delegation must be this client's, on this file.
                match s.check(sid, ctx.minor)? {
                    StateObj::Deleg(x) if x.client == client && x.file == file_key(&file_node) => {
                        // nothing to write could have been opened under a read delegation
                        if !x.write && access & share::ACCESS_WRITE != 0 {
                            return Err(st::OPENMODE.into());
                        }
                    }
                    _ => return Err(st::BAD_STATEID.into()),
                }
            }
            if !created {
                let (c, _) = self.vfs.authorize(&file_node.fh, &ctx.client)?;
                let mut want = 0;
                if access & share::ACCESS_READ != 0 {
                    want |= vfs::access::READ;
                }
                if access & share::ACCESS_WRITE != 0 {
                    want |= vfs::access::MODIFY;
                }
                let got = self.vfs.access(&c, &file_node, want);
                // The mode decides, for the owner too, as for a local open. The owner
                // override (what the owner may do whatever the mode) is for I/O on what is
                // already open and for files this OPEN created (see `vfs::Vfs::write`), and
                // for an open the client made under a delegation it held: the delegation's
                // open was checked when it was granted (knfsd does the same).
                let delegated = matches!(claim, Claim::DelegCur(..))
                    && c.creds.uid == file_node.attr.uid
                    && (c.writable || access & share::ACCESS_WRITE == 0);
                if got != want && !delegated {
                    return Err(st::ACCESS.into());
                }
            }
            let file = file_key(&file_node);
            s.release_courtesy(file);
            // Opening to read conflicts with write delegations only.
            let reading = access & share::ACCESS_WRITE == 0 && share_deny & share::DENY_READ == 0;
            self.break_delegations(s, file, client, reading)?;
            if s.share_conflict(file, access, share_deny) {
                return Err(st::SHARE_DENIED.into());
            }
            let sid = match s.find_open(client, &owner, file) {
                Some(other) => {
                    let Some(StateObj::Open(o)) = s.states.get_mut(&other) else {
                        return Err(st::SERVERFAULT.into());
                    };
                    o.access |= access;
                    o.deny |= share_deny;
                    o.access_seen |= 1 << access;
                    o.deny_seen |= 1 << share_deny;
                    o.seqid += 1;
                    Stateid {
                        seqid: o.seqid,
                        other,
                    }
                }
                None => {
                    let other = s.new_other();
                    s.states.insert(
                        other,
                        StateObj::Open(Open {
                            client,
                            owner: owner.clone(),
                            file,
                            fh: file_node.fh.clone(),
                            access,
                            deny: share_deny,
                            access_seen: 1 << access,
                            deny_seen: 1 << share_deny,
                            seqid: 1,
                        }),
                    );
                    Stateid { seqid: 1, other }
                }
            };
            // O_TRUNC arrives as OPEN with size 0 on an existing file.
            if let (false, Some((_, Some((sa, _))))) = (created, &create) {
                if let Some(size) = sa.size.filter(|s| *s == 0) {
                    let (c, _) = self.vfs.authorize(&file_node.fh, &ctx.client)?;
                    // the attributes after the truncation are the ones a delegation starts from
                    file_node.attr = self.vfs.setattr(
                        &c,
                        &file_node,
                        &SetAttrs {
                            size: Some(size),
                            ..Default::default()
                        },
                        None,
                    )?;
                }
            }
            new_fh = Some((file_node.fh.clone(), sid));
            let mut e = Encoder::new();
            put_stateid(&mut e, &sid);
            match (&dir_before, &dir_after) {
                (Some(b), a) => change_info(&mut e, b, a.as_ref()),
                _ => {
                    e.bool(false);
                    e.u64(0);
                    e.u64(0);
                }
            }
            let mut rflags = 4; // OPEN4_RESULT_LOCKTYPE_POSIX
            if new_owner {
                rflags |= 2; // OPEN4_RESULT_CONFIRM
            }
            e.u32(rflags);
            attrset.encode(&mut e);
            let want = share_access & share::WANT_MASK;
            let deleg = match claim {
                // what the client held before the restart, whatever it wants now
                Claim::Previous(held @ 1..=2) if ctx.minor >= 1 => {
                    self.reclaim_delegation(s, client, file, &file_node.fh, &file_node.attr, held)
                }
                _ => self
                    .maybe_delegate(
                        s,
                        ctx.minor,
                        client,
                        file,
                        &file_node.fh,
                        &file_node.attr,
                        access,
                        want,
                    )
                    .map(|(sid, write)| (sid, write, false)),
            };
            match want {
                _ if deleg.is_some() => {
                    if let Some((d, write, recall)) = &deleg {
                        crate::ops_deleg::encode_deleg(&mut e, d, *write, *recall);
                    }
                }
                0 => e.u32(0), // OPEN_DELEGATE_NONE
                share::WANT_NO_DELEG => {
                    e.u32(3); // OPEN_DELEGATE_NONE_EXT
                    e.u32(0); // WND4_NOT_WANTED
                }
                _ => {
                    e.u32(3);
                    e.u32(1); // WND4_CONTENTION: the delegation was not possible
                    e.bool(false);
                }
            }
            Ok(e)
        });
        let key = (clientid, owner, false);
        let mut s = self.state.lock();
        let made_current = match new_fh {
            Some(x) => {
                if let Some(o) = s.owners.get_mut(&key) {
                    o.last_open = Some(x.clone());
                }
                Some(x)
            }
            // A replayed OPEN makes the same file current as the original did.
            None => s.owners.get(&key).and_then(|o| o.last_open.clone()),
        };
        if let (Ok(_), Some((fh, sid))) = (&r, made_current) {
            ctx.cur = Some(Fh::Real(fh));
            ctx.cur_sid = Some(sid);
        }
        if ctx.minor >= 1 {
            // NFSv4.1 open-owners need no confirmation or sequencing.
            s.owners.remove(&key);
        }
        r
    }

    pub(crate) fn open_confirm(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = get_stateid(d)?;
        let seqid = d.u32()?;
        let (_, n) = self.real(ctx)?;
        let owner = {
            let s = self.state.lock();
            match s.states.get(&sid.other) {
                Some(StateObj::Open(o)) => Some((o.client, o.owner.clone(), false)),
                _ => None,
            }
        };
        let Some(key) = owner else {
            return Err(self
                .state
                .lock()
                .check(&sid, 0)
                .err()
                .unwrap_or(st::BAD_STATEID)
                .into());
        };
        let r = self.sequenced(ctx, Some(key.clone()), seqid, |s| {
            let _ = s.check(&sid, 0)?;
            if s.owners.get(&key).is_some_and(|o| o.confirmed) {
                return Err(st::BAD_STATEID.into());
            }
            let Some(StateObj::Open(o)) = s.states.get_mut(&sid.other) else {
                return Err(st::BAD_STATEID.into());
            };
            if o.file != file_key(&n) {
                return Err(st::BAD_STATEID.into());
            }
            o.seqid += 1;
            let out = Stateid {
                seqid: o.seqid,
                other: sid.other,
            };
            let mut e = Encoder::new();
            put_stateid(&mut e, &out);
            Ok(e)
        });
        if r.is_ok() {
            if let Some(o) = self.state.lock().owners.get_mut(&key) {
                o.confirmed = true;
            }
        }
        r
    }

    /// The open-owner key of an open or lock stateid (for NFSv4.0 sequencing).
    fn owner_of(&self, sid: &Stateid) -> Option<(u64, Bytes, bool)> {
        let s = self.state.lock();
        match s.states.get(&sid.other) {
            Some(StateObj::Open(o)) => Some((o.client, o.owner.clone(), false)),
            Some(StateObj::Lock(l)) => Some((l.client, l.owner.clone(), true)),
            Some(StateObj::Deleg(_)) => None,
            None => s.closed.get(&sid.other).cloned(),
        }
    }

    pub(crate) fn open_downgrade(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let seqid = d.u32()?;
        let access = access_bits(d.u32()?);
        let deny = d.u32()?;
        let (_, n) = self.real(ctx)?;
        let key = self.owner_of(&sid);
        self.sequenced(ctx, key, seqid, |s| {
            s.check(&sid, ctx.minor)?;
            let Some(StateObj::Open(o)) = s.states.get_mut(&sid.other) else {
                return Err(st::BAD_STATEID.into());
            };
            if o.file != file_key(&n) {
                return Err(st::BAD_STATEID.into());
            }
            // Only to a combination some OPEN of this state asked for (RFC 7530 16.19.4).
            if access == 0
                || access > 3
                || deny > 3
                || access & !o.access != 0
                || deny & !o.deny != 0
                || o.access_seen & (1 << access) == 0
                || o.deny_seen & (1 << deny) == 0
            {
                return Err(st::INVAL.into());
            }
            o.access = access;
            o.deny = deny;
            o.seqid += 1;
            let out = Stateid {
                seqid: o.seqid,
                other: sid.other,
            };
            let mut e = Encoder::new();
            put_stateid(&mut e, &out);
            Ok(e)
        })
    }

    pub(crate) fn close(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let seqid = d.u32()?;
        let sid = self.stateid_arg(ctx, d)?;
        // The file may be gone (removed while open): match the open by handle.
        let fh = match ctx.cur()? {
            Fh::Real(fh) => fh.clone(),
            Fh::Pseudo(_) => return Err(st::ISDIR.into()),
        };
        let key = self.owner_of(&sid);
        let minor = ctx.minor;
        self.sequenced(ctx, key, seqid, |s| {
            s.check(&sid, minor)?;
            let Some(StateObj::Open(o)) = s.states.get(&sid.other).cloned() else {
                return Err(st::BAD_STATEID.into());
            };
            if o.fh != fh {
                return Err(st::BAD_STATEID.into());
            }
            let lock_states: Vec<([u8; 12], Bytes)> = s
                .states
                .on_file(o.file)
                .filter_map(|(k, v)| match v {
                    StateObj::Lock(l) if l.open == sid.other => Some((k, l.owner.clone())),
                    _ => None,
                })
                .collect();
            if lock_states
                .iter()
                .any(|(_, owner)| s.owner_has_locks(o.file, o.client, owner))
            {
                return Err(st::LOCKS_HELD.into());
            }
            for (k, _) in lock_states {
                s.states.remove(&k);
            }
            s.states.remove(&sid.other);
            if minor == 0 {
                if s.closed.len() >= 4096 {
                    s.closed.clear();
                }
                s.closed
                    .insert(sid.other, (o.client, o.owner.clone(), false));
            }
            let out = if minor >= 1 {
                Stateid {
                    seqid: u32::MAX,
                    other: [0; 12],
                }
            } else {
                Stateid {
                    seqid: o.seqid + 1,
                    other: sid.other,
                }
            };
            let mut e = Encoder::new();
            put_stateid(&mut e, &out);
            Ok(e)
        })
    }

    fn io_node(&self, ctx: &Ctx<'_>) -> Result<(vfs::Caller, Node), OpFail> {
        let (c, n) = match ctx.cur()? {
            Fh::Pseudo(_) => return Err(st::ISDIR.into()),
            Fh::Real(_) => self.real(ctx)?,
        };
        match n.attr.ftype {
            FileType::Regular => Ok((c, n)),
            FileType::Directory => Err(st::ISDIR.into()),
            FileType::Symlink if ctx.minor == 0 => Err(st::INVAL.into()),
            _ => Err(st::INVAL.into()),
        }
    }

    pub(crate) fn read(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let offset = d.u64()?;
        let count = ctx.cap_reply(d.u32()?);
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, false, offset, count as u64)?;
        let pages = match ctx.rpc.takes_pages() {
            true => self.vfs.read_pages(&c, &n, offset, count)?,
            false => None,
        };
        let (data, eof) = match pages {
            Some((pages, eof, _)) => (Payload::Pages(pages), eof),
            None => {
                let (data, eof) = ctx.rpc.bulk_payload(
                    count as usize,
                    |buf| {
                        let (k, eof, _) = self.vfs.read_into(&c, &n, offset, buf)?;
                        Ok::<_, OpFail>((k, eof))
                    },
                    || {
                        let (data, eof, _) = self.vfs.read(&c, &n, offset, count)?;
                        Ok((data, eof))
                    },
                )?;
                (Payload::Bytes(data), eof)
            }
        };
        self.counters
            .read_bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        let mut e = Encoder::new();
        e.bool(eof);
        e.opaque_payload(data);
        Ok(e)
    }

    pub(crate) fn write(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let offset = d.u64()?;
        let stable = d.u32()?;
        let data = d.opaque(vfs::fs::MAX_IO as usize)?;
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, true, offset, data.len() as u64)?;
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(st::FBIG.into());
        }
        let how = match stable {
            0 => Stability::Unstable,
            1 => Stability::DataSync,
            2 => Stability::FileSync,
            _ => return Err(st::BADXDR.into()),
        };
        let (done, _) = self.vfs.write(&c, &n, offset, &data, how)?;
        let mut e = Encoder::new();
        e.u32(data.len() as u32);
        e.u32(done as u32);
        e.opaque_fixed(&self.vfs.write_verifier());
        Ok(e)
    }

    pub(crate) fn commit(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let _offset = d.u64()?;
        let _count = d.u32()?;
        let (c, n) = self.io_node(ctx)?;
        self.vfs.commit(&c, &n)?;
        let mut e = Encoder::new();
        e.opaque_fixed(&self.vfs.write_verifier());
        Ok(e)
    }

    pub(crate) fn read_plus(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let offset = d.u64()?;
        let count = ctx.cap_reply(d.u32()?);
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, false, offset, count as u64)?;
        // A file without holes is one data extent, which a TCP client may get as file pages.
        if ctx.rpc.takes_pages() {
            if let Some((pages, eof, _)) = self.vfs.read_extent_pages(&c, &n, offset, count)? {
                self.counters
                    .read_plus_data_bytes
                    .fetch_add(pages.len() as u64, Ordering::Relaxed);
                let mut e = Encoder::new();
                e.bool(eof);
                e.u32(u32::from(!pages.is_empty()));
                if !pages.is_empty() {
                    e.u32(0); // NFS4_CONTENT_DATA
                    e.u64(offset);
                    e.opaque_payload(Payload::Pages(pages));
                }
                return Ok(e);
            }
        }
        // Over RDMA (a Write list) data extents are read straight into registered memory that
        // the RDMA Write sends from; otherwise (or with no buffer free) into memory of our own.
        let (bulk, spans) = ctx.rpc.bulk_payload(
            count as usize,
            |buf| {
                let (spans, eof, _) = self.vfs.read_extents_into(&c, &n, offset, buf)?;
                let used = spans
                    .iter()
                    .map(|s| match s {
                        Span::Data { at, len, .. } => at + len,
                        Span::Hole { .. } => 0,
                    })
                    .max()
                    .unwrap_or(0);
                Ok::<_, OpFail>((used, Some((spans, eof))))
            },
            || Ok((Bytes::new(), None)),
        )?;
        let (extents, eof) = match spans {
            Some((spans, eof)) => {
                let mut extents = Vec::with_capacity(spans.len());
                for s in spans {
                    extents.push(match s {
                        Span::Data { offset, at, len } if at + len <= bulk.len() => Extent::Data {
                            offset,
                            data: bulk.slice(at..at + len),
                        },
                        Span::Data { .. } => return Err(st::SERVERFAULT.into()),
                        Span::Hole { offset, len } => Extent::Hole { offset, len },
                    });
                }
                (extents, eof)
            }
            None => {
                let (extents, eof, _) = self.vfs.read_extents(&c, &n, offset, count)?;
                (extents, eof)
            }
        };
        let mut e = Encoder::new();
        e.bool(eof);
        e.u32(extents.len() as u32);
        for x in extents {
            match x {
                Extent::Data { offset, data } => {
                    self.counters
                        .read_plus_data_bytes
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    e.u32(0); // NFS4_CONTENT_DATA
                    e.u64(offset);
                    e.opaque_bulk(data);
                }
                Extent::Hole { offset, len } => {
                    self.counters
                        .read_plus_hole_bytes
                        .fetch_add(len, Ordering::Relaxed);
                    e.u32(1); // NFS4_CONTENT_HOLE
                    e.u64(offset);
                    e.u64(len);
                }
            }
        }
        Ok(e)
    }

    pub(crate) fn seek(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let offset = d.u64()?;
        let what = d.u32()?;
        if what > 1 {
            return Err(st::UNION_NOTSUPP.into());
        }
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, false, offset, 0)?;
        if offset >= n.attr.size {
            return Err(st::NXIO.into());
        }
        let found = self.vfs.seek(&c, &n, offset, what == 0)?;
        let size = self.vfs.getattr(&n)?.size;
        let mut e = Encoder::new();
        match found {
            Some(o) => {
                e.bool(o >= size);
                e.u64(o);
            }
            None => {
                e.bool(true);
                e.u64(size);
            }
        }
        Ok(e)
    }

    pub(crate) fn allocate(&self, ctx: &mut Ctx<'_>, d: &mut Decoder, punch: bool) -> OpResult {
        let sid = self.stateid_arg(ctx, d)?;
        let offset = d.u64()?;
        let len = d.u64()?;
        let (c, n) = self.io_node(ctx)?;
        if len == 0 || offset.checked_add(len).is_none_or(|e| e > i64::MAX as u64) {
            return Err(if len == 0 { st::INVAL } else { st::FBIG }.into());
        }
        self.check_io_stateid(ctx, &sid, &n, true, offset, len)?;
        self.vfs.allocate(&c, &n, offset, len, punch)?;
        Ok(Encoder::new())
    }

    fn src_dst(&self, ctx: &Ctx<'_>) -> Result<(vfs::Caller, Node, Node), OpFail> {
        let saved = ctx.saved.clone().ok_or(OpFail::from(st::NOFILEHANDLE))?;
        let (c, dst) = self.io_node(ctx)?;
        let src = match saved {
            Fh::Pseudo(_) => return Err(st::ISDIR.into()),
            Fh::Real(fh) => self.vfs.authorize(&fh, &ctx.client)?.1,
        };
        match src.attr.ftype {
            FileType::Regular => Ok((c, src, dst)),
            FileType::Directory => Err(st::ISDIR.into()),
            _ => Err(st::INVAL.into()),
        }
    }

    pub(crate) fn copy(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let src_sid = self.stateid_arg(ctx, d)?;
        let dst_sid = self.stateid_arg(ctx, d)?;
        let src_off = d.u64()?;
        let dst_off = d.u64()?;
        let count = d.u64()?;
        let _consecutive = d.bool()?;
        let _synchronous = d.bool()?;
        let nservers = d.array_len(16, 4)?;
        for _ in 0..nservers {
            match d.u32()? {
                1 | 2 => {
                    d.opaque(1024)?;
                }
                3 => {
                    d.opaque(1024)?;
                    d.opaque(1024)?;
                }
                _ => return Err(st::BADXDR.into()),
            }
        }
        if nservers > 0 {
            return Err(st::NOTSUPP.into());
        }
        let (c, src, dst) = self.src_dst(ctx)?;
        self.check_io_stateid(ctx, &src_sid, &src, false, src_off, count)?;
        self.check_io_stateid(ctx, &dst_sid, &dst, true, dst_off, count)?;
        if src_off > src.attr.size || (count != 0 && src_off.saturating_add(count) > src.attr.size)
        {
            return Err(st::INVAL.into());
        }
        if file_key(&src) == file_key(&dst) {
            let len = if count == 0 {
                src.attr.size - src_off
            } else {
                count
            };
            if src_off < dst_off.saturating_add(len) && dst_off < src_off.saturating_add(len) {
                return Err(st::INVAL.into());
            }
        }
        let n = self
            .vfs
            .copy_range(&c, &src, &dst, src_off, dst_off, count, false)?;
        let mut e = Encoder::new();
        e.u32(0); // no callback id: the copy was synchronous
        e.u64(n);
        e.u32(0); // UNSTABLE4: COMMIT makes it durable
        e.opaque_fixed(&self.vfs.write_verifier());
        e.bool(true);
        e.bool(true);
        Ok(e)
    }

    pub(crate) fn clone_op(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let src_sid = self.stateid_arg(ctx, d)?;
        let dst_sid = self.stateid_arg(ctx, d)?;
        let src_off = d.u64()?;
        let dst_off = d.u64()?;
        let count = d.u64()?;
        let (c, src, dst) = self.src_dst(ctx)?;
        self.check_io_stateid(ctx, &src_sid, &src, false, src_off, count)?;
        self.check_io_stateid(ctx, &dst_sid, &dst, true, dst_off, count)?;
        self.vfs
            .copy_range(&c, &src, &dst, src_off, dst_off, count, true)?;
        Ok(Encoder::new())
    }
}

fn verifier(d: &mut Decoder) -> Result<[u8; 8], OpFail> {
    let v = d.opaque_fixed(8)?;
    let mut out = [0u8; 8];
    out.copy_from_slice(&v);
    Ok(out)
}
