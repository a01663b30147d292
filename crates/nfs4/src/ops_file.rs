//! Opens and I/O: OPEN, OPEN_CONFIRM, OPEN_DOWNGRADE, CLOSE, READ, WRITE, COMMIT, and the
//! NFSv4.2 sparse-file and copy operations (READ_PLUS, SEEK, ALLOCATE, DEALLOCATE, COPY, CLONE).

use std::sync::atomic::Ordering;

use bytes::Bytes;
use vfs::{FileType, Node, SentExtent, Stability};
use xdr::{Encode, Reply};

use crate::compound::{Ctx, Encoded, Fh, Nfs4, OpFail};
use crate::state::{access_bits, FileKey, Other, OwnerKey, OwnerSeq, State, StateObj, Stateid};
use nfs4wire::{
    Allocate4args, Clone4args, Close4args, Commit4args, Commit4resok, Copy4args, Copy4resok,
    CopyRequirements4, Data4, DataContent4, DataInfo4, Nfsstat4, OpenConfirm4args,
    OpenDowngrade4args, Read4args, Read4resok, ReadPlus4args, ReadPlusContent, ReadPlusRes4,
    Seek4args, SeekRes4, StableHow4, Stateid4, Write4args, Write4resok, WriteResponse4,
};

/// The file key of a node.
pub fn file_key(n: &Node) -> FileKey {
    n.file_id()
}

/// Statuses after which an NFSv4.0 owner's seqid does not advance (RFC 7530 section 9.1.7).
fn seqid_unchanged(status: Nfsstat4) -> bool {
    matches!(
        status,
        Nfsstat4::NFS4ERR_STALE_CLIENTID
            | Nfsstat4::NFS4ERR_STALE_STATEID
            | Nfsstat4::NFS4ERR_BAD_STATEID
            | Nfsstat4::NFS4ERR_BAD_SEQID
            | Nfsstat4::NFS4ERR_BADXDR
            | Nfsstat4::NFS4ERR_RESOURCE
            | Nfsstat4::NFS4ERR_NOFILEHANDLE
            | Nfsstat4::NFS4ERR_MOVED
    )
}

/// A cached NFSv4.0 reply as the operation's result again.
fn replayed(status: Nfsstat4, body: &Reply) -> Result<Encoded, OpFail> {
    if status == Nfsstat4::NFS4_OK {
        return Ok(Encoded(body.clone()));
    }
    Err(OpFail {
        status,
        body: Some(body.clone()),
    })
}

impl Nfs4 {
    /// Runs an NFSv4.0 seqid-sequenced operation for an owner: replays the last reply for a
    /// retransmission, rejects a bad seqid, and records the reply. NFSv4.1 ignores seqids.
    pub(crate) fn sequenced<R: Encode>(
        &self,
        ctx: &Ctx<'_>,
        key: Option<OwnerKey>,
        seqid: u32,
        f: impl FnOnce(&mut State) -> Result<R, OpFail>,
    ) -> Result<Encoded, OpFail> {
        self.sequenced_op(ctx, key, seqid, false, f)
    }

    /// [`Nfs4::sequenced`]; `opening` lets an OPEN restart an unconfirmed owner's sequence.
    pub(crate) fn sequenced_op<R: Encode>(
        &self,
        ctx: &Ctx<'_>,
        key: Option<OwnerKey>,
        seqid: u32,
        opening: bool,
        f: impl FnOnce(&mut State) -> Result<R, OpFail>,
    ) -> Result<Encoded, OpFail> {
        let mut s = self.state.lock();
        let Some(key) = key.filter(|_| ctx.minor == 0) else {
            return f(&mut s).map(|r| Encoded::of(&r));
        };
        if let Some(o) = s.owners.get(&key) {
            if o.confirmed || key.lock || !opening {
                if seqid == o.seqid {
                    if let Some((status, body)) = &o.last {
                        return replayed(*status, body);
                    }
                }
                if seqid != o.seqid.wrapping_add(1) {
                    return Err(Nfsstat4::NFS4ERR_BAD_SEQID.into());
                }
            }
        }
        let r = f(&mut s).map(|r| Encoded::of(&r));
        let (status, body) = match &r {
            Ok(b) => (Nfsstat4::NFS4_OK, b.0.clone()),
            Err(f) => (f.status, f.body.clone().unwrap_or_default()),
        };
        if !seqid_unchanged(status) {
            let o = s.owners.entry(key, || OwnerSeq {
                seqid,
                confirmed: false,
                last: None,
                last_open: None,
            });
            o.seqid = seqid;
            o.last = Some((status, body));
        }
        r
    }

    /// A stateid argument, the NFSv4.1 "current stateid" resolved.
    pub(crate) fn stateid(
        &self,
        ctx: &Ctx<'_>,
        sid: nfs4wire::Stateid4,
    ) -> Result<Stateid, OpFail> {
        let sid = Stateid::from(sid);
        if ctx.minor >= 1 && sid == Stateid::CURRENT {
            return ctx
                .cur_sid
                .ok_or(OpFail::from(Nfsstat4::NFS4ERR_BAD_STATEID));
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
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            }
            s.release_courtesy(file);
            self.break_delegations(&mut s, file, ctx.clientid.unwrap_or(u64::MAX), !write)?;
            let want = if write {
                nfs4wire::OPEN4_SHARE_DENY_WRITE
            } else {
                nfs4wire::OPEN4_SHARE_DENY_READ
            };
            let denied = s
                .states
                .on_file(file)
                .any(|(_, o)| matches!(o, StateObj::Open(o) if o.deny & want != 0));
            if denied && (write || *sid != Stateid::BYPASS) {
                return Err(Nfsstat4::NFS4ERR_LOCKED.into());
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
                    _ => return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
                },
            ),
            // A read delegation allows reading only, a write delegation both.
            StateObj::Deleg(d) if d.write => (d.client, nfs4wire::OPEN4_SHARE_ACCESS_BOTH),
            StateObj::Deleg(d) => (d.client, nfs4wire::OPEN4_SHARE_ACCESS_READ),
            // a layout stateid is for the data servers' I/O, not the MDS's
            StateObj::Layout(_) => return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
        };
        if obj.file() != file {
            return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
        }
        self.break_delegations(&mut s, file, client, !write)?;
        // (NFSv4.1+: the COMPOUND's SEQUENCE renewed the lease already)
        if ctx.minor == 0 {
            let _ = s.renew(client);
        }
        let need = if write {
            nfs4wire::OPEN4_SHARE_ACCESS_WRITE
        } else {
            nfs4wire::OPEN4_SHARE_ACCESS_READ
        };
        if access & need == 0 {
            return Err(Nfsstat4::NFS4ERR_OPENMODE.into());
        }
        Ok(())
    }

    pub(crate) fn check_client(
        &self,
        ctx: &Ctx<'_>,
        s: &mut State,
        clientid: u64,
    ) -> Result<u64, OpFail> {
        if ctx.minor >= 1 {
            return ctx
                .clientid
                .ok_or(OpFail::from(Nfsstat4::NFS4ERR_BADSESSION));
        }
        if s.is_stale_client(clientid) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        match s.clients.get(clientid) {
            Some(c) if c.confirmed => {}
            Some(_) | None => return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into()),
        }
        s.renew(clientid)?;
        Ok(clientid)
    }

    pub(crate) fn regular(&self, ctx: &Ctx<'_>, n: &Node) -> Result<(), OpFail> {
        match n.attr.ftype {
            FileType::Regular => Ok(()),
            FileType::Directory => Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            // NFSv4.0 has no WRONG_TYPE; knfsd answers SYMLINK for every other type.
            _ if ctx.minor == 0 => Err(Nfsstat4::NFS4ERR_SYMLINK.into()),
            _ => Err(Nfsstat4::NFS4ERR_WRONG_TYPE.into()),
        }
    }

    pub(crate) fn open_confirm(
        &self,
        ctx: &mut Ctx<'_>,
        a: OpenConfirm4args,
    ) -> Result<Encoded, OpFail> {
        let sid = Stateid::from(a.open_stateid);
        let seqid = a.seqid;
        let (_, n) = self.real(ctx)?;
        let owner = {
            let s = self.state.lock();
            match s.states.get(&sid.other) {
                Some(StateObj::Open(o)) => Some(OwnerKey::open(o.client, o.owner.clone())),
                _ => None,
            }
        };
        let Some(key) = owner else {
            return Err(self
                .state
                .lock()
                .check(&sid, 0)
                .err()
                .unwrap_or(Nfsstat4::NFS4ERR_BAD_STATEID)
                .into());
        };
        let r = self.sequenced(ctx, Some(key.clone()), seqid, |s| {
            let _ = s.check(&sid, 0)?;
            if s.owners.get(&key).is_some_and(|o| o.confirmed) {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            }
            let Some(StateObj::Open(o)) = s.states.get_mut(&sid.other) else {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            };
            if o.file != file_key(&n) {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            }
            o.seqid += 1;
            Ok(Stateid4 {
                seqid: o.seqid,
                other: sid.other,
            })
        });
        if r.is_ok() {
            if let Some(o) = self.state.lock().owners.get_mut(&key) {
                o.confirmed = true;
            }
        }
        r
    }

    /// The open-owner key of an open or lock stateid (for NFSv4.0 sequencing).
    fn owner_of(&self, sid: &Stateid) -> Option<OwnerKey> {
        let s = self.state.lock();
        match s.states.get(&sid.other) {
            Some(StateObj::Open(o)) => Some(OwnerKey::open(o.client, o.owner.clone())),
            Some(StateObj::Lock(l)) => Some(OwnerKey::lock(l.client, l.owner.clone())),
            Some(StateObj::Deleg(_) | StateObj::Layout(_)) => None,
            None => s.owners.of_closed(&sid.other).cloned(),
        }
    }

    pub(crate) fn open_downgrade(
        &self,
        ctx: &mut Ctx<'_>,
        a: OpenDowngrade4args,
    ) -> Result<Encoded, OpFail> {
        let sid = self.stateid(ctx, a.open_stateid)?;
        let seqid = a.seqid;
        let access = access_bits(a.share_access);
        let deny = a.share_deny;
        let (_, n) = self.real(ctx)?;
        let key = self.owner_of(&sid);
        self.sequenced(ctx, key, seqid, |s| {
            s.check(&sid, ctx.minor)?;
            let Some(StateObj::Open(o)) = s.states.get_mut(&sid.other) else {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            };
            if o.file != file_key(&n) {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
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
                return Err(Nfsstat4::NFS4ERR_INVAL.into());
            }
            o.access = access;
            o.deny = deny;
            o.seqid += 1;
            Ok(Stateid4 {
                seqid: o.seqid,
                other: sid.other,
            })
        })
    }

    pub(crate) fn close(&self, ctx: &mut Ctx<'_>, a: Close4args) -> Result<Encoded, OpFail> {
        let seqid = a.seqid;
        let sid = self.stateid(ctx, a.open_stateid)?;
        // The file may be gone (removed while open): match the open by handle.
        let fh = match ctx.cur()? {
            Fh::Real(fh) => fh.clone(),
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_ISDIR.into()),
        };
        let key = self.owner_of(&sid);
        let minor = ctx.minor;
        self.sequenced(ctx, key, seqid, |s| {
            s.check(&sid, minor)?;
            let Some(StateObj::Open(o)) = s.states.get(&sid.other).cloned() else {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            };
            if o.fh != fh {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            }
            let lock_states: Vec<(Other, Bytes)> = s
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
                return Err(Nfsstat4::NFS4ERR_LOCKS_HELD.into());
            }
            for (k, _) in lock_states {
                s.states.remove(&k);
            }
            s.states.remove(&sid.other);
            if minor == 0 {
                s.owners
                    .closed(sid.other, OwnerKey::open(o.client, o.owner.clone()));
            }
            Ok(if minor >= 1 {
                Stateid4 {
                    seqid: u32::MAX,
                    other: [0; 12],
                }
            } else {
                Stateid4 {
                    seqid: o.seqid + 1,
                    other: sid.other,
                }
            })
        })
    }

    fn io_node(&self, ctx: &Ctx<'_>) -> Result<(vfs::Caller, Node), OpFail> {
        let (c, n) = match ctx.cur()? {
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            Fh::Real(_) => self.real(ctx)?,
        };
        // RFC 8881 sections 18.22.3 and 18.32.3; NFSv4.0 (RFC 7530) has INVAL for both
        match n.attr.ftype {
            FileType::Regular => Ok((c, n)),
            FileType::Directory => Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            _ if ctx.minor == 0 => Err(Nfsstat4::NFS4ERR_INVAL.into()),
            FileType::Symlink => Err(Nfsstat4::NFS4ERR_SYMLINK.into()),
            _ => Err(Nfsstat4::NFS4ERR_WRONG_TYPE.into()),
        }
    }

    pub(crate) fn read(&self, ctx: &mut Ctx<'_>, a: Read4args) -> Result<Read4resok, OpFail> {
        let sid = self.stateid(ctx, a.stateid)?;
        let offset = a.offset;
        let count = ctx.cap_reply(a.count);
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, false, offset, count as u64)?;
        let (data, eof, _) = self.vfs.read_to(&c, &n, offset, count, ctx.rpc)?;
        self.counters
            .read_bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        ctx.read_bytes += data.len() as u64;
        Ok(Read4resok { eof, data })
    }

    pub(crate) fn write(&self, ctx: &mut Ctx<'_>, a: Write4args) -> Result<Write4resok, OpFail> {
        let sid = self.stateid(ctx, a.stateid)?;
        let offset = a.offset;
        let data = a.data;
        // what rnfsd announces as maxwrite; the XDR's bound is larger
        if data.len() > vfs::fs::MAX_IO as usize {
            return Err(Nfsstat4::NFS4ERR_BADXDR.into());
        }
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, true, offset, data.len() as u64)?;
        if offset
            .checked_add(data.len() as u64)
            .is_none_or(|end| end > i64::MAX as u64)
        {
            return Err(Nfsstat4::NFS4ERR_FBIG.into());
        }
        let how = match a.stable {
            StableHow4::Unstable4 => Stability::Unstable,
            StableHow4::DataSync4 => Stability::DataSync,
            StableHow4::FileSync4 => Stability::FileSync,
        };
        let (done, _) = self.vfs.write(&c, &n, offset, &data, how)?;
        ctx.written_bytes += data.len() as u64;
        Ok(Write4resok {
            count: data.len() as u32,
            committed: stable_how(done),
            writeverf: self.vfs.write_verifier(),
        })
    }

    pub(crate) fn commit(&self, ctx: &mut Ctx<'_>, _: Commit4args) -> Result<Commit4resok, OpFail> {
        let (c, n) = self.io_node(ctx)?;
        self.vfs.commit(&c, &n)?;
        Ok(Commit4resok {
            writeverf: self.vfs.write_verifier(),
        })
    }

    pub(crate) fn read_plus(
        &self,
        ctx: &mut Ctx<'_>,
        a: ReadPlus4args,
    ) -> Result<ReadPlusRes4, OpFail> {
        let sid = self.stateid(ctx, a.rpa_stateid)?;
        let offset = a.rpa_offset;
        let count = ctx.cap_reply(a.rpa_count);
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, false, offset, count as u64)?;
        let (extents, eof, _) = self.vfs.read_extents_to(&c, &n, offset, count, ctx.rpc)?;
        let mut sent = 0;
        let contents = extents
            .into_iter()
            .map(|x| match x {
                SentExtent::Data { offset, data } => {
                    sent += data.len() as u64;
                    self.counters
                        .read_plus_data_bytes
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    ReadPlusContent::Nfs4ContentData(Data4 {
                        d_offset: offset,
                        d_data: data,
                    })
                }
                SentExtent::Hole { offset, len } => {
                    self.counters
                        .read_plus_hole_bytes
                        .fetch_add(len, Ordering::Relaxed);
                    ReadPlusContent::Nfs4ContentHole(DataInfo4 {
                        di_offset: offset,
                        di_length: len,
                    })
                }
            })
            .collect();
        ctx.read_bytes += sent;
        Ok(ReadPlusRes4 {
            rpr_eof: eof,
            rpr_contents: contents,
        })
    }

    pub(crate) fn seek(&self, ctx: &mut Ctx<'_>, a: Seek4args) -> Result<SeekRes4, OpFail> {
        let sid = self.stateid(ctx, a.sa_stateid)?;
        let offset = a.sa_offset;
        let data = a.sa_what == DataContent4::Nfs4ContentData;
        let (c, n) = self.io_node(ctx)?;
        self.check_io_stateid(ctx, &sid, &n, false, offset, 0)?;
        if offset >= n.attr.size {
            return Err(Nfsstat4::NFS4ERR_NXIO.into());
        }
        let found = self.vfs.seek(&c, &n, offset, data)?;
        let size = self.vfs.getattr(&n)?.size;
        Ok(match found {
            Some(o) => SeekRes4 {
                sr_eof: o >= size,
                sr_offset: o,
            },
            None => SeekRes4 {
                sr_eof: true,
                sr_offset: size,
            },
        })
    }

    /// ALLOCATE, and DEALLOCATE (`punch`: its arguments are ALLOCATE's).
    pub(crate) fn allocate(
        &self,
        ctx: &mut Ctx<'_>,
        a: Allocate4args,
        punch: bool,
    ) -> Result<(), OpFail> {
        let sid = self.stateid(ctx, a.aa_stateid)?;
        let offset = a.aa_offset;
        let len = a.aa_length;
        let (c, n) = self.io_node(ctx)?;
        if len == 0 || offset.checked_add(len).is_none_or(|e| e > i64::MAX as u64) {
            return Err(if len == 0 {
                Nfsstat4::NFS4ERR_INVAL
            } else {
                Nfsstat4::NFS4ERR_FBIG
            }
            .into());
        }
        self.check_io_stateid(ctx, &sid, &n, true, offset, len)?;
        self.vfs.allocate(&c, &n, offset, len, punch)?;
        Ok(())
    }

    fn src_dst(&self, ctx: &Ctx<'_>) -> Result<(vfs::Caller, Node, Node), OpFail> {
        let saved = ctx
            .saved
            .clone()
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_NOFILEHANDLE))?;
        let (c, dst) = self.io_node(ctx)?;
        let src = match saved {
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            Fh::Real(fh) => self.vfs.authorize(&fh, &ctx.client)?.1,
        };
        match src.attr.ftype {
            FileType::Regular => Ok((c, src, dst)),
            FileType::Directory => Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            _ => Err(Nfsstat4::NFS4ERR_INVAL.into()),
        }
    }

    pub(crate) fn copy(&self, ctx: &mut Ctx<'_>, a: Copy4args) -> Result<Copy4resok, OpFail> {
        let src_sid = self.stateid(ctx, a.ca_src_stateid)?;
        let dst_sid = self.stateid(ctx, a.ca_dst_stateid)?;
        let (src_off, dst_off, count) = (a.ca_src_offset, a.ca_dst_offset, a.ca_count);
        // inter-server copy: not supported
        if !a.ca_source_server.is_empty() {
            return Err(Nfsstat4::NFS4ERR_NOTSUPP.into());
        }
        let (c, src, dst) = self.src_dst(ctx)?;
        self.check_io_stateid(ctx, &src_sid, &src, false, src_off, count)?;
        self.check_io_stateid(ctx, &dst_sid, &dst, true, dst_off, count)?;
        if src_off > src.attr.size || (count != 0 && src_off.saturating_add(count) > src.attr.size)
        {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        if file_key(&src) == file_key(&dst) {
            let len = if count == 0 {
                src.attr.size - src_off
            } else {
                count
            };
            if src_off < dst_off.saturating_add(len) && dst_off < src_off.saturating_add(len) {
                return Err(Nfsstat4::NFS4ERR_INVAL.into());
            }
        }
        let n = self
            .vfs
            .copy_range(&c, &src, &dst, src_off, dst_off, count, false)?;
        Ok(Copy4resok {
            cr_response: WriteResponse4 {
                // no callback id: the copy was synchronous
                wr_callback_id: Vec::new(),
                wr_count: n,
                // COMMIT makes it durable
                wr_committed: StableHow4::Unstable4,
                wr_writeverf: self.vfs.write_verifier(),
            },
            cr_requirements: CopyRequirements4 {
                cr_consecutive: true,
                cr_synchronous: true,
            },
        })
    }

    pub(crate) fn clone_op(&self, ctx: &mut Ctx<'_>, a: Clone4args) -> Result<(), OpFail> {
        let src_sid = self.stateid(ctx, a.cl_src_stateid)?;
        let dst_sid = self.stateid(ctx, a.cl_dst_stateid)?;
        let (src_off, dst_off, count) = (a.cl_src_offset, a.cl_dst_offset, a.cl_count);
        let (c, src, dst) = self.src_dst(ctx)?;
        self.check_io_stateid(ctx, &src_sid, &src, false, src_off, count)?;
        self.check_io_stateid(ctx, &dst_sid, &dst, true, dst_off, count)?;
        self.vfs
            .copy_range(&c, &src, &dst, src_off, dst_off, count, true)?;
        Ok(())
    }
}

/// stable_how4 of how a write was made durable.
fn stable_how(s: Stability) -> StableHow4 {
    match s {
        Stability::Unstable => StableHow4::Unstable4,
        Stability::DataSync => StableHow4::DataSync4,
        Stability::FileSync => StableHow4::FileSync4,
    }
}
