//! OPEN (RFC 7530 section 16.16, RFC 8881 section 18.16): its arguments, the file it names
//! (found or created: file-system work only), the open state it takes (share reservations,
//! delegations: state only), the truncation it may ask for, and its reply.
//!
//! With sessions (NFSv4.1+) the file-system work runs outside the state lock: opens of
//! different files by many clients do not wait for each other's file system calls. The open
//! state is taken before a truncation, so that a conflicting OPEN that comes meanwhile sees it
//! (knfsd orders them the same way), and given back when the truncation fails. NFSv4.0 orders
//! an open-owner's operations by seqid and caches its last reply: its OPEN runs whole under the
//! lock, as its sequencing needs.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use vfs::{CreateMode, FileType, Node, SetAttrs};

use crate::attr::{self, Bitmap};
use crate::compound::{Ctx, Encoded, Fh, Nfs4, OpFail};
use crate::ops_dir::{change_info, dir_change_info};
use crate::ops_file::file_key;
use crate::state::{access_bits, Open, Other, OwnerKey, OwnerSeq, State, StateObj, Stateid};
use nfs4wire::{
    ChangeInfo4, Createhow4, Fattr4, Nfsstat4, Open4args, Open4resok, OpenClaim4, OpenDelegation4,
    OpenNoneDelegation4, Openflag4, WhyNoDelegation4,
};

/// open_claim4, as far as rnfsd serves it.
enum Claim {
    /// CLAIM_NULL: a name in the current directory.
    Null(Bytes),
    /// CLAIM_FH (4.1+): the current file.
    Fh,
    /// CLAIM_PREVIOUS with the delegation type held before the restart.
    Previous(u32),
    /// CLAIM_DELEGATE_CUR (with the name in the current directory) or CLAIM_DELEG_CUR_FH
    /// (the current file): the client turns opens it made locally under the delegation into
    /// open state, typically while returning it.
    DelegCur(Stateid, Option<Bytes>),
}

/// OPEN4args.
struct OpenArgs {
    seqid: u32,
    share_access: u32,
    share_deny: u32,
    clientid: u64,
    owner: Bytes,
    /// openflag4: how to create, with the createattrs and their bitmap (None: no creation).
    create: Option<(CreateMode, Option<attr::Sattr>)>,
    claim: Claim,
    /// OPEN4_SHARE_ACCESS_READ / _WRITE of `share_access`.
    access: u32,
}

impl OpenArgs {
    /// OPEN4args as rnfsd serves them in minor version `minor`: the claims and create modes
    /// a later minor version added are BADXDR in an earlier one, as an unknown arm is.
    fn new(a: Open4args, minor: u32, idmap: &crate::idmap::IdMap) -> Result<Self, OpFail> {
        let sattr = |f: &Fattr4| attr::decode_sattr(f, minor, idmap);
        let create = match &a.openhow {
            Openflag4::Default(_) => None,
            Openflag4::Open4Create(how) => Some(match how {
                Createhow4::Unchecked4(f) => (CreateMode::Unchecked, Some(sattr(f)?)),
                Createhow4::Guarded4(f) => (CreateMode::Guarded, Some(sattr(f)?)),
                Createhow4::Exclusive4(v) => (CreateMode::Exclusive(*v), None),
                Createhow4::Exclusive41(x) if minor >= 1 => (
                    CreateMode::Exclusive(x.cva_verf),
                    Some(sattr(&x.cva_attrs)?),
                ),
                Createhow4::Exclusive41(_) => return Err(Nfsstat4::NFS4ERR_BADXDR.into()),
            }),
        };
        let claim = match a.claim {
            OpenClaim4::ClaimNull(name) => Claim::Null(name),
            OpenClaim4::ClaimPrevious(t) => Claim::Previous(t as u32),
            OpenClaim4::ClaimDelegateCur(c) => {
                Claim::DelegCur(c.delegate_stateid.into(), Some(c.file))
            }
            // CLAIM_DELEGATE_PREV and CLAIM_DELEG_PREV_FH (a client that restarted and kept
            // its delegations in stable storage): not supported
            OpenClaim4::ClaimDelegatePrev(_) => return Err(Nfsstat4::NFS4ERR_NOTSUPP.into()),
            _ if minor == 0 => return Err(Nfsstat4::NFS4ERR_BADXDR.into()),
            OpenClaim4::ClaimFh => Claim::Fh,
            OpenClaim4::ClaimDelegCurFh(sid) => Claim::DelegCur(sid.into(), None),
            OpenClaim4::ClaimDelegPrevFh => return Err(Nfsstat4::NFS4ERR_NOTSUPP.into()),
        };
        if matches!(claim, Claim::DelegCur(..)) && create.is_some() {
            // A delegation is for an existing file (RFC 8881 section 18.16.3).
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        let access = access_bits(a.share_access);
        if !(1..=3).contains(&access) || a.share_deny > 3 {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        Ok(OpenArgs {
            seqid: a.seqid,
            share_access: a.share_access,
            share_deny: a.share_deny,
            clientid: a.owner.clientid,
            // kept in the state: not a slice of the request buffer
            owner: Bytes::copy_from_slice(&a.owner.owner),
            create,
            claim,
            access,
        })
    }

    /// The NFSv4.0 open-owner key.
    fn owner_key(&self) -> OwnerKey {
        OwnerKey::open(self.clientid, self.owner.clone())
    }

    /// The size 0 of an UNCHECKED create of an existing file: O_TRUNC.
    fn truncates(&self) -> bool {
        matches!(&self.create, Some((_, Some(sa))) if sa.set.size == Some(0))
    }
}

/// The file an OPEN names, after the file-system work.
struct Opened {
    node: Node,
    /// The caller admitted to the file's export.
    caller: vfs::Caller,
    /// The directory's change around an open by name (change_info4); None for an open by
    /// handle, which changed no directory.
    cinfo: Option<ChangeInfo4>,
    /// Attributes the create set (attrset).
    attrset: Bitmap,
    /// This OPEN made the file.
    created: bool,
}

/// What [`Nfs4::open_state`] changed, to give back if the OPEN fails after it.
enum Undo {
    /// A new open state.
    Remove(Other),
    /// An open state upgraded: its access and deny bits and seqid before.
    Restore(Other, Open),
}

impl Nfs4 {
    pub(crate) fn open(&self, ctx: &mut Ctx<'_>, a: Open4args) -> Result<Encoded, OpFail> {
        let a = OpenArgs::new(a, ctx.minor, &self.idmap)?;
        ctx.cur()?;
        if ctx.minor == 0 {
            return self.open_v40(ctx, &a);
        }
        // NFSv4.1+: the file-system work without the state lock.
        let client = self.open_client(ctx, &mut self.state.lock(), &a)?.0;
        let mut f = self.open_file(ctx, &a)?;
        let (sid, undo) = {
            let mut s = self.state.lock();
            if !s.clients.contains(client) {
                // expired or destroyed meanwhile
                return Err(Nfsstat4::NFS4ERR_BADSESSION.into());
            }
            self.open_state(ctx, &mut s, client, &a, &f)?
        };
        if let Err(e) = self.open_truncate(ctx, &a, &mut f) {
            self.state.lock().undo_open(undo);
            return Err(e);
        }
        let r = self.open_reply(&mut self.state.lock(), client, &a, &f, sid, false);
        ctx.set_cur(Some(Fh::Real(f.node.fh.clone())));
        ctx.cur_sid = Some(sid);
        Ok(Encoded::of(&r))
    }

    /// NFSv4.0 OPEN: sequenced by the open-owner's seqid, whole under the state lock.
    fn open_v40(&self, ctx: &mut Ctx<'_>, a: &OpenArgs) -> Result<Encoded, OpFail> {
        let key = a.owner_key();
        let mut made = None;
        let r = self.sequenced_op(ctx, Some(key.clone()), a.seqid, true, |s| {
            let (client, new_owner) = self.open_client(ctx, s, a)?;
            let mut f = self.open_file(ctx, a)?;
            let (sid, undo) = self.open_state(ctx, s, client, a, &f)?;
            if let Err(e) = self.open_truncate(ctx, a, &mut f) {
                s.undo_open(undo);
                return Err(e);
            }
            made = Some((f.node.fh.clone(), sid));
            Ok(self.open_reply(s, client, a, &f, sid, new_owner))
        });
        let mut s = self.state.lock();
        let made_current = match made {
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
            ctx.set_cur(Some(Fh::Real(fh)));
            ctx.cur_sid = Some(sid);
        }
        r
    }

    /// The client an OPEN is for, once it may open now (grace period, reclaims); for NFSv4.0
    /// also whether its open-owner still needs OPEN_CONFIRM.
    fn open_client(
        &self,
        ctx: &Ctx<'_>,
        s: &mut State,
        a: &OpenArgs,
    ) -> Result<(u64, bool), OpFail> {
        let client = self.check_client(ctx, s, a.clientid)?;
        if let Claim::Previous(_) = a.claim {
            s.may_reclaim(client)?;
            self.counters
                .reclaimed_opens
                .fetch_add(1, Ordering::Relaxed);
        } else if s.opens_in_grace()
            || (ctx.minor >= 1 && !s.clients.get(client).is_some_and(|c| c.reclaim_complete))
        {
            // Non-reclaim opens wait for NFSv4's grace period, and in 4.1 for the client's
            // RECLAIM_COMPLETE (RFC 8881 section 18.51.3).
            return Err(Nfsstat4::NFS4ERR_GRACE.into());
        }
        if ctx.minor >= 1 {
            return Ok((client, false));
        }
        let key = a.owner_key();
        if matches!(a.claim, Claim::Previous(_)) {
            // A reclaiming owner needs no OPEN_CONFIRM: it was confirmed before the restart,
            // and the client's reclaim compound returns no handle to confirm with.
            let o = s.owners.entry(key.clone(), || OwnerSeq {
                seqid: a.seqid,
                confirmed: true,
                last: None,
                last_open: None,
            });
            o.confirmed = true;
        }
        let new_owner = !s.owners.get(&key).is_some_and(|o| o.confirmed);
        Ok((client, new_owner))
    }

    /// The file an OPEN names: looked up or created as the caller, checked to be a regular
    /// file the caller may open as asked. File-system work only.
    fn open_file(&self, ctx: &Ctx<'_>, a: &OpenArgs) -> Result<Opened, OpFail> {
        let f = match &a.claim {
            Claim::Fh | Claim::Previous(_) | Claim::DelegCur(_, None) => {
                if a.create.is_some() {
                    return Err(Nfsstat4::NFS4ERR_INVAL.into());
                }
                let (caller, node) = self.real(ctx)?;
                Opened {
                    node,
                    caller,
                    cinfo: None,
                    attrset: Bitmap::default(),
                    created: false,
                }
            }
            Claim::Null(name) | Claim::DelegCur(_, Some(name)) => {
                self.open_by_name(ctx, a, name)?
            }
        };
        self.regular(ctx, &f.node)?;
        if !f.created {
            let c = &f.caller;
            let mut want = 0;
            if a.access & nfs4wire::OPEN4_SHARE_ACCESS_READ != 0 {
                want |= vfs::access::READ;
            }
            if a.access & nfs4wire::OPEN4_SHARE_ACCESS_WRITE != 0 {
                want |= vfs::access::MODIFY;
            }
            let got = self.vfs.access(c, &f.node, want);
            // The mode decides, for the owner too, as for a local open. The owner override
            // (what the owner may do whatever the mode) is for I/O on what is already open and
            // for files this OPEN created (see `vfs::Vfs::write`), and for an open the client
            // made under a delegation it held: the delegation's open was checked when it was
            // granted (knfsd does the same).
            let delegated = matches!(a.claim, Claim::DelegCur(..))
                && c.creds.uid == f.node.attr.uid
                && (c.writable || a.access & nfs4wire::OPEN4_SHARE_ACCESS_WRITE == 0);
            if got != want && !delegated {
                return Err(Nfsstat4::NFS4ERR_ACCESS.into());
            }
        }
        Ok(f)
    }

    /// [`Nfs4::open_file`] by name in the current directory, creating the file if asked.
    fn open_by_name(&self, ctx: &Ctx<'_>, a: &OpenArgs, name: &Bytes) -> Result<Opened, OpFail> {
        let name = crate::ops_fh::check_name(name)?;
        let (c, dir) = match ctx.cur()? {
            Fh::Pseudo(_) => {
                return Err(if a.create.is_some() {
                    Nfsstat4::NFS4ERR_ROFS
                } else {
                    Nfsstat4::NFS4ERR_NOENT
                }
                .into())
            }
            Fh::Real(_) => self.real(ctx)?,
        };
        match dir.attr.ftype {
            FileType::Directory => {}
            FileType::Symlink => return Err(Nfsstat4::NFS4ERR_SYMLINK.into()),
            _ => return Err(Nfsstat4::NFS4ERR_NOTDIR.into()),
        }
        let (fh, created, attrset, cinfo) = match &a.create {
            None => (
                self.vfs.lookup(&c, &dir, &name)?.fh,
                false,
                Bitmap::default(),
                // nothing changed: the directory as resolved, before and after
                change_info(&dir.attr, None),
            ),
            Some((how, sattr)) => {
                let attr::Sattr {
                    set: sa,
                    acl,
                    bits: mut bm,
                } = sattr.clone().unwrap_or_default();
                let exclusive = matches!(how, CreateMode::Exclusive(_));
                let made = self.create_by_name(&c, &dir, &name, how, &sa)?;
                let cinfo = dir_change_info(&made);
                let made = made.value;
                if exclusive && made.created {
                    // EXCLUSIVE4_1 attributes other than the times holding the verifier.
                    // the mode went into the create itself (with the umask, under a default ACL)
                    let rest = SetAttrs {
                        atime: vfs::SetTime::DontChange,
                        mtime: vfs::SetTime::DontChange,
                        mode: None,
                        umask: None,
                        ..sa
                    };
                    if rest != SetAttrs::default() {
                        let node = self.vfs.resolve(&made.fh)?;
                        self.vfs.setattr(&c, &node, &rest, None)?;
                    }
                    // The times hold the verifier: saying they were set makes the client set
                    // them (Linux sends a SETATTR with the times of now), as after knfsd's
                    // exclusive creates.
                    bm.set(nfs4wire::FATTR4_TIME_ACCESS);
                    bm.set(nfs4wire::FATTR4_TIME_MODIFY);
                }
                if let (Some(aces), true) = (&acl, made.created) {
                    let node = self.vfs.resolve(&made.fh)?;
                    self.set_nfs4_acl(&c, &node, aces)?;
                }
                let bm = if made.created { bm } else { Bitmap::default() };
                (made.fh, made.created, bm, cinfo)
            }
        };
        let (caller, node) = self.vfs.authorize(&fh, &ctx.client)?;
        Ok(Opened {
            node,
            caller,
            cinfo: Some(cinfo),
            attrset,
            created,
        })
    }

    /// The create of an OPEN by name, as `how` says, with the attributes `sa`. Whether the
    /// file is new is the create's own answer (its exclusive open(2)), so that only a file
    /// this OPEN made counts as new (a new file skips the permission check). UNCHECKED
    /// leaves an existing file as it is: its truncation to zero (RFC 7530 section 16.16.5)
    /// comes once the caller's access and the file's share reservations allow it
    /// (`open_truncate`). An exclusive create's other attributes are set after it (`open_by_name`).
    fn create_by_name(
        &self,
        c: &vfs::Caller,
        dir: &Node,
        name: &[u8],
        how: &CreateMode,
        sa: &SetAttrs,
    ) -> vfs::VfsResult<vfs::DirChange<vfs::Created>> {
        let attrs = match how {
            CreateMode::Unchecked | CreateMode::Guarded => sa.clone(),
            // the mode (EXCLUSIVE4_1) is the create's own, so that a directory's default ACL
            // is combined with it as the kernel does, not overwritten by a chmod after
            CreateMode::Exclusive(_) => SetAttrs {
                mode: sa.mode,
                umask: sa.umask,
                ..SetAttrs::default()
            },
        };
        self.vfs.create_file(c, dir, name, *how, &attrs)
    }

    /// The open state an OPEN takes on the file: checks a claimed delegation, recalls
    /// conflicting delegations, checks share reservations, and adds or upgrades the
    /// open-owner's open. State only.
    fn open_state(
        &self,
        ctx: &Ctx<'_>,
        s: &mut State,
        client: u64,
        a: &OpenArgs,
        f: &Opened,
    ) -> Result<(Stateid, Undo), OpFail> {
        let file = file_key(&f.node);
        if let Claim::DelegCur(sid, _) = &a.claim {
            // The claimed delegation must be this client's, on this file.
            match s.check(sid, ctx.minor)? {
                StateObj::Deleg(x) if x.client == client && x.file == file => {
                    // nothing to write could have been opened under a read delegation
                    if !x.write && a.access & nfs4wire::OPEN4_SHARE_ACCESS_WRITE != 0 {
                        return Err(Nfsstat4::NFS4ERR_OPENMODE.into());
                    }
                }
                _ => return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
            }
        }
        s.release_courtesy(file);
        // Opening to read conflicts with write delegations only.
        let reading = a.access & nfs4wire::OPEN4_SHARE_ACCESS_WRITE == 0
            && a.share_deny & nfs4wire::OPEN4_SHARE_DENY_READ == 0;
        self.break_delegations(s, file, client, reading)?;
        if s.share_conflict(file, a.access, a.share_deny) {
            return Err(Nfsstat4::NFS4ERR_SHARE_DENIED.into());
        }
        Ok(match s.find_open(client, &a.owner, file) {
            Some(other) => {
                let Some(StateObj::Open(o)) = s.states.get_mut(&other) else {
                    return Err(Nfsstat4::NFS4ERR_SERVERFAULT.into());
                };
                let before = o.clone();
                o.access |= a.access;
                o.deny |= a.share_deny;
                o.access_seen |= 1 << a.access;
                o.deny_seen |= 1 << a.share_deny;
                o.seqid += 1;
                (
                    Stateid {
                        seqid: o.seqid,
                        other,
                    },
                    Undo::Restore(other, before),
                )
            }
            None => {
                let other = s.new_other();
                s.states.insert(
                    other,
                    StateObj::Open(Open {
                        client,
                        owner: a.owner.clone(),
                        file,
                        fh: f.node.fh.clone(),
                        access: a.access,
                        deny: a.share_deny,
                        access_seen: 1 << a.access,
                        deny_seen: 1 << a.share_deny,
                        seqid: 1,
                    }),
                );
                (Stateid { seqid: 1, other }, Undo::Remove(other))
            }
        })
    }

    /// O_TRUNC, which arrives as OPEN with size 0 on an existing file: truncates as the
    /// caller; the attributes after it are the ones a delegation starts from.
    fn open_truncate(&self, ctx: &Ctx<'_>, a: &OpenArgs, f: &mut Opened) -> Result<(), OpFail> {
        if f.created || !a.truncates() {
            return Ok(());
        }
        let (c, _) = self.vfs.authorize(&f.node.fh, &ctx.client)?;
        f.node.attr = self.vfs.setattr(
            &c,
            &f.node,
            &SetAttrs {
                size: Some(0),
                ..Default::default()
            },
            None,
        )?;
        Ok(())
    }

    /// OPEN4resok, with the delegation the open gets, if any.
    #[allow(clippy::too_many_arguments)]
    fn open_reply(
        &self,
        s: &mut State,
        client: u64,
        a: &OpenArgs,
        f: &Opened,
        sid: Stateid,
        new_owner: bool,
    ) -> Open4resok {
        let file = file_key(&f.node);
        let cinfo = f.cinfo.clone().unwrap_or(ChangeInfo4 {
            atomic: false,
            before: 0,
            after: 0,
        });
        let mut rflags = nfs4wire::OPEN4_RESULT_LOCKTYPE_POSIX;
        if new_owner {
            rflags |= nfs4wire::OPEN4_RESULT_CONFIRM;
        }
        let want = a.share_access & nfs4wire::OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
        let (fh, attr) = (&f.node.fh, &f.node.attr);
        let deleg = match a.claim {
            // what the client held before the restart, whatever it wants now
            Claim::Previous(held @ 1..=2) => {
                self.reclaim_delegation(s, client, file, fh, attr, held)
            }
            // NFSv4.0: none to an open-owner that has yet to confirm, as knfsd
            _ if new_owner => None,
            _ => self
                .maybe_delegate(s, client, file, fh, attr, a.access, want)
                .map(|(sid, write)| (sid, write, false)),
        };
        let delegation = match (deleg, want) {
            (Some((d, write, recall)), _) => crate::ops_deleg::delegation(d, write, recall),
            (None, 0) => OpenDelegation4::OpenDelegateNone,
            (None, nfs4wire::OPEN4_SHARE_ACCESS_WANT_NO_DELEG) => {
                OpenDelegation4::OpenDelegateNoneExt(OpenNoneDelegation4::Default(
                    WhyNoDelegation4::Wnd4NotWanted,
                ))
            }
            // the delegation was not possible
            (None, _) => {
                OpenDelegation4::OpenDelegateNoneExt(OpenNoneDelegation4::Wnd4Contention(false))
            }
        };
        Open4resok {
            stateid: sid.into(),
            cinfo,
            rflags,
            attrset: f.attrset.to_wire(),
            delegation,
        }
    }
}

impl State {
    /// Gives back what [`Nfs4::open_state`] took, for an OPEN that failed after it.
    fn undo_open(&mut self, undo: Undo) {
        match undo {
            Undo::Remove(other) => {
                self.states.remove(&other);
            }
            Undo::Restore(other, before) => {
                if let Some(StateObj::Open(o)) = self.states.get_mut(&other) {
                    *o = before;
                }
            }
        }
    }
}
