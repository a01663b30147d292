//! Byte-range locks: LOCK, LOCKT, LOCKU, RELEASE_LOCKOWNER.

use bytes::Bytes;

use crate::compound::{Ctx, Encoded, Nfs4, OpFail};
use crate::ops_file::file_key;
use crate::state::{Lock, LockState, Other, Owner, OwnerKey, OwnerSeq, StateObj, Stateid};
use nfs4wire::{
    Lock4args, Lock4denied, LockOwner4, Locker4, Lockt4args, Locku4args, NfsLockType4, Nfsstat4,
    ReleaseLockowner4args, Stateid4,
};

/// READ_LT / READW_LT are shared locks; WRITE_LT / WRITEW_LT exclusive.
fn is_write(locktype: NfsLockType4) -> bool {
    matches!(locktype, NfsLockType4::WriteLt | NfsLockType4::WritewLt)
}

/// The end (exclusive) of a lock range, or INVAL for an empty or overflowing one.
fn range_end(offset: u64, length: u64) -> Result<u64, OpFail> {
    if length == 0 {
        return Err(Nfsstat4::NFS4ERR_INVAL.into());
    }
    if length == u64::MAX {
        return Ok(u64::MAX);
    }
    offset
        .checked_add(length)
        .ok_or(OpFail::from(Nfsstat4::NFS4ERR_INVAL))
}

/// LOCK4denied for a conflicting lock.
fn denied(l: &Lock) -> OpFail {
    let d = Lock4denied {
        offset: l.start,
        length: if l.end == u64::MAX {
            u64::MAX
        } else {
            l.end - l.start
        },
        locktype: if l.write {
            NfsLockType4::WriteLt
        } else {
            NfsLockType4::ReadLt
        },
        owner: holder(&l.owner),
    };
    OpFail::with_body(Nfsstat4::NFS4ERR_DENIED, &d)
}

/// How an NFSv4 client is told who holds a conflicting lock: an NFSv4 holder as itself, an
/// NLM holder (an NFSv3 client's process) as client id 0 and the owner handle its client sent.
fn holder(o: &Owner) -> LockOwner4 {
    match o {
        Owner::Nfs4 { client, owner } => LockOwner4 {
            clientid: *client,
            owner: owner.clone(),
        },
        Owner::Nlm { oh, .. } => LockOwner4 {
            clientid: 0,
            owner: oh.clone(),
        },
    }
}

impl Nfs4 {
    pub(crate) fn lock(&self, ctx: &mut Ctx<'_>, a: Lock4args) -> Result<Encoded, OpFail> {
        let write = is_write(a.locktype);
        let (reclaim, offset, length) = (a.reclaim, a.offset, a.length);
        enum Locker {
            New {
                open_seqid: u32,
                open_sid: Stateid,
                lock_seqid: u32,
                clientid: u64,
                owner: Bytes,
            },
            Exist {
                sid: Stateid,
                seqid: u32,
            },
        }
        let locker = match a.locker {
            Locker4::True(l) => Locker::New {
                open_seqid: l.open_seqid,
                open_sid: self.stateid(ctx, l.open_stateid)?,
                lock_seqid: l.lock_seqid,
                clientid: l.lock_owner.clientid,
                // kept in the state: not a slice of the request buffer
                owner: Bytes::copy_from_slice(&l.lock_owner.owner),
            },
            Locker4::False(l) => Locker::Exist {
                sid: self.stateid(ctx, l.lock_stateid)?,
                seqid: l.lock_seqid,
            },
        };
        let (_, n) = match ctx.cur()? {
            crate::compound::Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            crate::compound::Fh::Real(_) => self.real(ctx)?,
        };
        if n.attr.ftype == vfs::FileType::Directory {
            return Err(Nfsstat4::NFS4ERR_ISDIR.into());
        }
        if n.attr.ftype != vfs::FileType::Regular {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        let end = range_end(offset, length)?;
        let file = file_key(&n);
        let minor = ctx.minor;
        let (key, seqid) = match &locker {
            Locker::New {
                open_sid,
                open_seqid,
                ..
            } => {
                let s = self.state.lock();
                let key = match s.states.get(&open_sid.other) {
                    Some(StateObj::Open(o)) => Some(OwnerKey::open(o.client, o.owner.clone())),
                    _ => None,
                };
                (key, *open_seqid)
            }
            Locker::Exist { sid, seqid } => {
                let s = self.state.lock();
                let key = match s.states.get(&sid.other) {
                    Some(StateObj::Lock(l)) => Some(OwnerKey::lock(l.client, l.owner.clone())),
                    _ => None,
                };
                (key, *seqid)
            }
        };
        let mut new_sid = None;
        let r = self.sequenced(ctx, key, seqid, |s| {
            let (other, client, owner) = match &locker {
                Locker::New {
                    open_sid,
                    lock_seqid,
                    clientid,
                    owner,
                    ..
                } => {
                    let Ok(StateObj::Open(o)) = s.check(open_sid, minor).cloned() else {
                        return Err(s
                            .check(open_sid, minor)
                            .err()
                            .unwrap_or(Nfsstat4::NFS4ERR_BAD_STATEID)
                            .into());
                    };
                    if o.file != file {
                        return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
                    }
                    if minor == 0 && *clientid != o.client {
                        let unknown =
                            s.is_stale_client(*clientid) || !s.clients.contains(*clientid);
                        return Err(if unknown {
                            Nfsstat4::NFS4ERR_STALE_CLIENTID
                        } else {
                            Nfsstat4::NFS4ERR_INVAL
                        }
                        .into());
                    }
                    let need = if write {
                        nfs4wire::OPEN4_SHARE_ACCESS_WRITE
                    } else {
                        nfs4wire::OPEN4_SHARE_ACCESS_READ
                    };
                    if o.access & need == 0 {
                        return Err(Nfsstat4::NFS4ERR_OPENMODE.into());
                    }
                    let existing = s.states.on_file(file).find_map(|(k, v)| match v {
                        StateObj::Lock(l) if l.client == o.client && l.owner == *owner => Some(k),
                        _ => None,
                    });
                    let other = match existing {
                        Some(k) => k,
                        None => {
                            let k = s.new_other();
                            s.states.insert(
                                k,
                                StateObj::Lock(LockState {
                                    client: o.client,
                                    owner: owner.clone(),
                                    file,
                                    open: open_sid.other,
                                    seqid: 0,
                                }),
                            );
                            k
                        }
                    };
                    if minor == 0 {
                        let e = s
                            .owners
                            .entry(OwnerKey::lock(o.client, owner.clone()), OwnerSeq::default);
                        e.seqid = *lock_seqid;
                        e.confirmed = true;
                    }
                    (other, o.client, owner.clone())
                }
                Locker::Exist { sid, .. } => {
                    let Ok(StateObj::Lock(l)) = s.check(sid, minor).cloned() else {
                        return Err(s
                            .check(sid, minor)
                            .err()
                            .unwrap_or(Nfsstat4::NFS4ERR_BAD_STATEID)
                            .into());
                    };
                    if l.file != file {
                        return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
                    }
                    let access = match s.states.get(&l.open) {
                        Some(StateObj::Open(o)) => o.access,
                        _ => return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into()),
                    };
                    let need = if write {
                        nfs4wire::OPEN4_SHARE_ACCESS_WRITE
                    } else {
                        nfs4wire::OPEN4_SHARE_ACCESS_READ
                    };
                    if access & need == 0 {
                        return Err(Nfsstat4::NFS4ERR_OPENMODE.into());
                    }
                    (sid.other, l.client, l.owner.clone())
                }
            };
            if reclaim {
                s.may_reclaim(client)?;
                self.counters
                    .reclaimed_locks
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            } else if s.in_grace() {
                return Err(Nfsstat4::NFS4ERR_GRACE.into());
            }
            s.release_courtesy(file);
            let _ = s.renew(client);
            if let Err(c) = s.add_lock(file, client, &owner, offset, end, write) {
                return Err(denied(&c));
            }
            let Some(StateObj::Lock(l)) = s.states.get_mut(&other) else {
                return Err(Nfsstat4::NFS4ERR_SERVERFAULT.into());
            };
            l.seqid += 1;
            let sid = Stateid {
                seqid: l.seqid,
                other,
            };
            new_sid = Some(sid);
            Ok(Stateid4::from(sid))
        });
        if let Some(sid) = new_sid {
            ctx.cur_sid = Some(sid);
        }
        r
    }

    pub(crate) fn lockt(&self, ctx: &mut Ctx<'_>, a: Lockt4args) -> Result<(), OpFail> {
        let write = is_write(a.locktype);
        let (offset, length) = (a.offset, a.length);
        let (clientid, owner) = (a.owner.clientid, a.owner.owner);
        let (_, n) = match ctx.cur()? {
            crate::compound::Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            crate::compound::Fh::Real(_) => self.real(ctx)?,
        };
        if n.attr.ftype == vfs::FileType::Directory {
            return Err(Nfsstat4::NFS4ERR_ISDIR.into());
        }
        if n.attr.ftype != vfs::FileType::Regular {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        let end = range_end(offset, length)?;
        let mut s = self.state.lock();
        let client = if ctx.minor >= 1 {
            ctx.clientid.unwrap_or(clientid)
        } else {
            if s.is_stale_client(clientid) || !s.clients.contains(clientid) {
                return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
            }
            let _ = s.renew(clientid);
            clientid
        };
        let file = file_key(&n);
        s.release_courtesy(file);
        if let Some(c) = s.lock_conflict(file, client, &owner, offset, end, write) {
            return Err(denied(&c));
        }
        Ok(())
    }

    pub(crate) fn locku(&self, ctx: &mut Ctx<'_>, a: Locku4args) -> Result<Encoded, OpFail> {
        let seqid = a.seqid;
        let sid = self.stateid(ctx, a.lock_stateid)?;
        let (offset, length) = (a.offset, a.length);
        let (_, n) = match ctx.cur()? {
            crate::compound::Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_ISDIR.into()),
            crate::compound::Fh::Real(_) => self.real(ctx)?,
        };
        if n.attr.ftype == vfs::FileType::Directory {
            return Err(Nfsstat4::NFS4ERR_ISDIR.into());
        }
        let end = range_end(offset, length)?;
        let file = file_key(&n);
        let minor = ctx.minor;
        let key = {
            let s = self.state.lock();
            match s.states.get(&sid.other) {
                Some(StateObj::Lock(l)) => Some(OwnerKey::lock(l.client, l.owner.clone())),
                _ => None,
            }
        };
        self.sequenced(ctx, key, seqid, |s| {
            let Ok(StateObj::Lock(l)) = s.check(&sid, minor).cloned() else {
                return Err(s
                    .check(&sid, minor)
                    .err()
                    .unwrap_or(Nfsstat4::NFS4ERR_BAD_STATEID)
                    .into());
            };
            if l.file != file {
                return Err(Nfsstat4::NFS4ERR_BAD_STATEID.into());
            }
            s.remove_lock_range(file, l.client, &l.owner, offset, end);
            let Some(StateObj::Lock(l)) = s.states.get_mut(&sid.other) else {
                return Err(Nfsstat4::NFS4ERR_SERVERFAULT.into());
            };
            l.seqid += 1;
            Ok(Stateid4 {
                seqid: l.seqid,
                other: sid.other,
            })
        })
    }

    pub(crate) fn release_lockowner(
        &self,
        _ctx: &mut Ctx<'_>,
        a: ReleaseLockowner4args,
    ) -> Result<(), OpFail> {
        let (clientid, owner) = (a.lock_owner.clientid, a.lock_owner.owner);
        let mut s = self.state.lock();
        if s.is_stale_client(clientid) {
            return Err(Nfsstat4::NFS4ERR_STALE_CLIENTID.into());
        }
        if s.lock_owner_holds(clientid, &owner) {
            return Err(Nfsstat4::NFS4ERR_LOCKS_HELD.into());
        }
        let gone: Vec<Other> = s
            .states
            .of_client(clientid)
            .filter(|(_, v)| matches!(v, StateObj::Lock(l) if l.owner == owner))
            .map(|(k, _)| k)
            .collect();
        for k in gone {
            s.states.remove(&k);
        }
        s.owners.remove(&OwnerKey::lock(clientid, owner));
        Ok(())
    }
}
