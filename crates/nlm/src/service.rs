//! The NLM version 4 procedures: arguments decoded by the generated types, each procedure a
//! function of the call and its arguments to its typed result.

use std::sync::Arc;

use bytes::Bytes;
use locks::{FileKey, Lock, LockOutcome, Owner, Share};
use nfs3::nfs::client_of;
use nlmwire::*;
use sunrpc::client::{self, CallOpts, Proto};
use sunrpc::{CallContext, ProcError, Program, TransportKind};
use vfs::{FileType, VfsError};
use xdr::{Decoder, Encode, Encoder};

use crate::grant::Blocked;
use crate::monitor::{server_ip, HostRecord};
use crate::{decode, LockService};

/// The NLM version 4 program.
pub struct Nlm4 {
    svc: Arc<LockService>,
}

impl Nlm4 {
    /// The program over the lock service.
    pub fn new(svc: Arc<LockService>) -> Self {
        Nlm4 { svc }
    }
}

fn proto_of(ctx: &CallContext) -> Proto {
    match ctx.transport {
        TransportKind::Udp => Proto::Udp,
        TransportKind::Tcp | TransportKind::Rdma => Proto::Tcp,
    }
}

/// `[start, end)` of an NLM range (`l_len` 0: to the end of the file); NLM4_FBIG past 2^64.
fn range(l: &Nlm4Lock) -> Result<(u64, u64), Nlm4Stats> {
    if l.l_len == 0 {
        return Ok((l.l_offset, u64::MAX));
    }
    match l.l_offset.checked_add(l.l_len) {
        Some(end) => Ok((l.l_offset, end)),
        None => Err(Nlm4Stats::nlm4_fbig),
    }
}

/// A conflicting lock as NLM4_TEST reports it. An NFSv4 holder has no process id: 0, and its
/// owner name as the owner handle.
fn holder(c: &Lock) -> Nlm4Holder {
    let (svid, oh) = match &c.owner {
        Owner::Nlm { svid, oh, .. } => (*svid, oh.clone()),
        Owner::Nfs4 { owner, .. } => (0, owner.clone()),
    };
    Nlm4Holder {
        exclusive: c.write,
        svid,
        oh,
        l_offset: c.start,
        l_len: if c.end == u64::MAX {
            0
        } else {
            c.end - c.start
        },
    }
}

/// A stable copy of what the lock table and the blocked requests keep past the call (not a
/// slice pinning the receive buffer).
fn owned(l: &Nlm4Lock) -> Nlm4Lock {
    Nlm4Lock {
        caller_name: Bytes::copy_from_slice(&l.caller_name),
        fh: Bytes::copy_from_slice(&l.fh),
        oh: Bytes::copy_from_slice(&l.oh),
        ..l.clone()
    }
}

fn res(cookie: Netobj, stat: Nlm4Stats) -> Nlm4Res {
    Nlm4Res {
        cookie,
        stat: Nlm4Stat { stat },
    }
}

impl Nlm4 {
    /// The file an NLM handle names, checked like every NFSv3 handle (export, client rules,
    /// MAC; not the export's `sec=` flavors: [`vfs::Vfs::authorize_lock`]) and, as knfsd
    /// opens it, for reading (a shared lock) or writing (an exclusive one; the file's owner
    /// always may): NLM4_STALE_FH for a handle that names nothing, NLM4_FAILED for any other
    /// refusal.
    fn file(
        &self,
        ctx: &CallContext,
        fh: &Bytes,
        want: Option<bool>,
    ) -> Result<FileKey, Nlm4Stats> {
        let (caller, node) =
            self.svc
                .vfs
                .authorize_lock(fh, &client_of(ctx))
                .map_err(|e| match e {
                    VfsError::Stale | VfsError::BadHandle => Nlm4Stats::nlm4_stale_fh,
                    _ => Nlm4Stats::nlm4_failed,
                })?;
        if node.attr.ftype != FileType::Regular {
            return Err(Nlm4Stats::nlm4_failed);
        }
        let owner = caller.creds.uid == node.attr.uid;
        let allowed = match want {
            None => true,
            Some(true) => {
                caller.writable
                    && (owner || self.svc.vfs.access(&caller, &node, vfs::access::MODIFY) != 0)
            }
            Some(false) => owner || self.svc.vfs.access(&caller, &node, vfs::access::READ) != 0,
        };
        if !allowed {
            return Err(Nlm4Stats::nlm4_failed);
        }
        Ok(node.file_id())
    }

    /// The host number of the caller; with `monitor`, recorded on disk first if it is not yet.
    fn host(&self, ctx: &CallContext, name: &Bytes, monitor: bool) -> Result<u64, Nlm4Stats> {
        let addr = ctx.peer.ip();
        let (id, unrecorded) = self
            .svc
            .hosts
            .lock()
            .get_or_insert(&Bytes::copy_from_slice(name), addr, server_ip(ctx.local))
            .ok_or(Nlm4Stats::nlm4_denied_nolocks)?;
        if monitor && unrecorded {
            let rec = HostRecord {
                addr,
                name: String::from_utf8_lossy(name).into_owned(),
                server: server_ip(ctx.local),
            };
            if !self.svc.record(&rec) {
                return Err(Nlm4Stats::nlm4_denied_nolocks);
            }
            self.svc.hosts.lock().set_recorded(id);
        }
        Ok(id)
    }

    /// An NFSv4 client whose lease expired keeps its locks until someone wants them: this
    /// request does, if one of them is in its way.
    fn release_expired_holders(&self, file: FileKey, want: &Lock) {
        if self
            .svc
            .locks
            .test(file, want)
            .is_some_and(|c| c.owner.protocol() == locks::Protocol::Nfs4)
        {
            self.svc.locks.release_expired(file);
        }
    }

    fn in_grace(&self) -> bool {
        self.svc.locks.grace().running()
    }

    /// Notes a call for the grace period's early end (see `recovery`).
    fn seen(&self, ctx: &CallContext, seen: crate::recovery::Seen) {
        self.svc
            .note_recovery((ctx.peer.ip(), server_ip(ctx.local)), ctx.xid, seen);
    }

    /// The lock `l` asks for, as the table knows it, with its host's number (the host
    /// recorded on disk first with `monitor`).
    fn wanted(
        &self,
        ctx: &CallContext,
        l: &Nlm4Lock,
        exclusive: bool,
        monitor: bool,
    ) -> Result<(u64, Lock), Nlm4Stats> {
        let (start, end) = range(l)?;
        let host = self.host(ctx, &l.caller_name, monitor)?;
        let want = Lock {
            owner: Self::owner(host, l),
            start,
            end,
            write: exclusive,
        };
        Ok((host, want))
    }

    fn owner(host: u64, l: &Nlm4Lock) -> Owner {
        Owner::Nlm {
            host,
            svid: l.svid,
            oh: Bytes::copy_from_slice(&l.oh),
        }
    }

    fn test(&self, ctx: &CallContext, a: Nlm4Testargs) -> Nlm4Testres {
        self.seen(ctx, crate::recovery::Seen::Fresh);
        let stat = (|| {
            if self.in_grace() {
                return Err(Nlm4Stats::nlm4_denied_grace_period);
            }
            // Either access will do for a test.
            let file = match self.file(ctx, &a.alock.fh, Some(false)) {
                Err(Nlm4Stats::nlm4_failed) => self.file(ctx, &a.alock.fh, Some(true)),
                r => r,
            }?;
            let (_, want) = self.wanted(ctx, &a.alock, a.exclusive, false)?;
            self.release_expired_holders(file, &want);
            Ok(match self.svc.locks.test(file, &want) {
                Some(c) => Nlm4Testrply::Denied(holder(&c)),
                None => Nlm4Testrply::Other(Nlm4Stats::nlm4_granted),
            })
        })();
        Nlm4Testres {
            cookie: a.cookie,
            stat: stat.unwrap_or_else(Nlm4Testrply::Other),
        }
    }

    fn lock(&self, ctx: &CallContext, a: Nlm4Lockargs, monitor: bool) -> Nlm4Res {
        self.seen(
            ctx,
            match a.reclaim {
                true => crate::recovery::Seen::Reclaim,
                false => crate::recovery::Seen::Fresh,
            },
        );
        let stat = (|| {
            let grace = self.in_grace();
            if grace != a.reclaim {
                // New locks wait for the reclaims; a reclaim comes only during grace.
                return Err(Nlm4Stats::nlm4_denied_grace_period);
            }
            let file = self.file(ctx, &a.alock.fh, Some(a.exclusive))?;
            let (host, want) = self.wanted(ctx, &a.alock, a.exclusive, monitor)?;
            let (start, end) = (want.start, want.end);
            self.release_expired_holders(file, &want);
            let blocked = Blocked {
                host,
                peer: ctx.peer.ip(),
                proto: proto_of(ctx),
                local: server_ip(ctx.local),
                lock: owned(&a.alock),
                exclusive: a.exclusive,
            };
            let locks = &self.svc.locks;
            let out = self.svc.grants.request(
                || locks.lock(file, want, a.block),
                |o| match o {
                    LockOutcome::Blocked(id) => Some(*id),
                    _ => None,
                },
                blocked,
            );
            Ok(match out {
                LockOutcome::Granted => {
                    self.svc.grants.taken(host, a.alock.svid, file, start, end);
                    Nlm4Stats::nlm4_granted
                }
                LockOutcome::Denied(_) => Nlm4Stats::nlm4_denied,
                LockOutcome::Blocked(_) => Nlm4Stats::nlm4_blocked,
                LockOutcome::TooManyWaiters => Nlm4Stats::nlm4_denied_nolocks,
            })
        })();
        res(a.cookie, stat.unwrap_or_else(|e| e))
    }

    fn cancel(&self, ctx: &CallContext, a: Nlm4Cancargs) -> Nlm4Res {
        let stat = (|| {
            if self.in_grace() {
                return Err(Nlm4Stats::nlm4_denied_grace_period);
            }
            let file = self.file(ctx, &a.alock.fh, None)?;
            let (_, want) = self.wanted(ctx, &a.alock, a.exclusive, false)?;
            match self.svc.locks.cancel(file, &want) {
                Some(id) => {
                    self.svc.grants.cancel(id);
                    Ok(Nlm4Stats::nlm4_granted)
                }
                // Granted before the cancel came: the client unlocks.
                None if self.svc.locks.owner_has(file, &want.owner) => Ok(Nlm4Stats::nlm4_denied),
                None => Ok(Nlm4Stats::nlm4_granted),
            }
        })();
        res(a.cookie, stat.unwrap_or_else(|e| e))
    }

    fn unlock(&self, ctx: &CallContext, a: Nlm4Unlockargs) -> Nlm4Res {
        self.seen(ctx, crate::recovery::Seen::Fresh);
        let stat = (|| {
            if self.in_grace() {
                return Err(Nlm4Stats::nlm4_denied_grace_period);
            }
            let file = self.file(ctx, &a.alock.fh, None)?;
            let (_, l) = self.wanted(ctx, &a.alock, false, false)?;
            self.svc.locks.unlock(file, &l.owner, l.start, l.end);
            Ok(Nlm4Stats::nlm4_granted)
        })();
        res(a.cookie, stat.unwrap_or_else(|e| e))
    }

    /// SHARE / UNSHARE: DOS-style share reservations, in the table NFSv4 shares, checked
    /// against other hosts' and against NFSv4 opens (whose bits are the same).
    fn share(&self, ctx: &CallContext, a: Nlm4Shareargs, add: bool) -> Nlm4Shareres {
        if add && a.reclaim {
            self.seen(ctx, crate::recovery::Seen::Reclaim);
        }
        let stat = (|| {
            if self.in_grace() && !(add && a.reclaim) {
                return Err(Nlm4Stats::nlm4_denied_grace_period);
            }
            let access = a.share.access as u32;
            let file = self.file(ctx, &a.share.fh, Some(access & 2 != 0))?;
            let host = self.host(ctx, &a.share.caller_name, add)?;
            let oh = Bytes::copy_from_slice(&a.share.oh);
            if !add {
                self.svc.locks.unshare(file, host, &oh);
                return Ok(Nlm4Stats::nlm4_granted);
            }
            let share = Share {
                host,
                oh,
                access,
                deny: a.share.mode as u32,
            };
            if self.svc.locks.share(file, share.clone()) {
                return Ok(Nlm4Stats::nlm4_granted);
            }
            // An expired NFSv4 client's open may be what is in the way.
            self.svc.locks.release_expired(file);
            Ok(if self.svc.locks.share(file, share) {
                Nlm4Stats::nlm4_granted
            } else {
                Nlm4Stats::nlm4_denied
            })
        })();
        Nlm4Shareres {
            cookie: a.cookie,
            stat: stat.unwrap_or_else(|e| e),
            sequence: 0,
        }
    }

    /// FREE_ALL: the host (by name, or the caller's address) restarted: everything it held
    /// goes.
    fn free_all(&self, ctx: &CallContext, a: Nlm4Notify) {
        let n = self.svc.drop_hosts(Some(ctx.peer.ip()), Some(&a.name));
        tracing::info!(host = %ctx.peer.ip(), dropped = n, "NLM FREE_ALL");
    }

    /// Answers an asynchronous (`_MSG`) call: its result goes to the caller's lock manager as
    /// the matching `_RES` call.
    fn reply_async(
        &self,
        ctx: &CallContext,
        proc_: u32,
        result: impl Encode + Send + Sync + 'static,
    ) {
        let peer = ctx.peer.ip();
        let proto = proto_of(ctx);
        let from = server_ip(ctx.local);
        let p = self.svc.cfg.grants.clone();
        tokio_spawn(async move {
            let opts = CallOpts::new(proto, p.call_timeout, 1).from_server(from);
            let pmap = std::net::SocketAddr::new(peer, p.pmap_port);
            let r = async {
                let port = client::getport_at(pmap, NLM_PROG, NLM_VERS4, proto, &opts).await?;
                let addr = std::net::SocketAddr::new(peer, port);
                client::call(addr, NLM_PROG, NLM_VERS4, proc_, &result, &opts).await
            }
            .await;
            if let Err(e) = r {
                tracing::debug!(host = %peer, proc_, error = %e, "NLM _RES call not answered");
            }
        });
    }
}

/// Spawns on the runtime the service started in (calls run on its blocking pool).
fn tokio_spawn(f: impl std::future::Future<Output = ()> + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => {
            h.spawn(f);
        }
        Err(_) => tracing::warn!("no runtime for an NLM callback"),
    }
}

impl Program for Nlm4 {
    fn program(&self) -> u32 {
        NLM_PROG
    }

    fn versions(&self) -> (u32, u32) {
        (NLM_VERS4, NLM_VERS4)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        Some(match p {
            0 => "NLM4_NULL",
            NLM4_TEST => "NLM4_TEST",
            NLM4_LOCK => "NLM4_LOCK",
            NLM4_CANCEL => "NLM4_CANCEL",
            NLM4_UNLOCK => "NLM4_UNLOCK",
            NLM4_GRANTED => "NLM4_GRANTED",
            NLM4_TEST_MSG => "NLM4_TEST_MSG",
            NLM4_LOCK_MSG => "NLM4_LOCK_MSG",
            NLM4_CANCEL_MSG => "NLM4_CANCEL_MSG",
            NLM4_UNLOCK_MSG => "NLM4_UNLOCK_MSG",
            NLM4_GRANTED_MSG => "NLM4_GRANTED_MSG",
            NLM4_TEST_RES => "NLM4_TEST_RES",
            NLM4_LOCK_RES => "NLM4_LOCK_RES",
            NLM4_CANCEL_RES => "NLM4_CANCEL_RES",
            NLM4_UNLOCK_RES => "NLM4_UNLOCK_RES",
            NLM4_GRANTED_RES => "NLM4_GRANTED_RES",
            NLM4_SHARE => "NLM4_SHARE",
            NLM4_UNSHARE => "NLM4_UNSHARE",
            NLM4_NM_LOCK => "NLM4_NM_LOCK",
            NLM4_FREE_ALL => "NLM4_FREE_ALL",
            _ => return None,
        })
    }

    fn skips_drc(&self, _vers: u32, p: u32, _args: &Decoder) -> bool {
        matches!(
            p,
            0 | NLM4_TEST | NLM4_TEST_MSG | NLM4_GRANTED | NLM4_GRANTED_MSG
        ) || (NLM4_TEST_RES..=NLM4_GRANTED_RES).contains(&p)
    }

    fn call(&self, ctx: &CallContext, args: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        match ctx.proc_ {
            0 => {}
            NLM4_TEST => self.test(ctx, decode(args)?).encode(r),
            NLM4_LOCK => self.lock(ctx, decode(args)?, true).encode(r),
            NLM4_CANCEL => self.cancel(ctx, decode(args)?).encode(r),
            NLM4_UNLOCK => self.unlock(ctx, decode(args)?).encode(r),
            // This server calls hosts back; it holds no blocked request of its own to grant.
            NLM4_GRANTED => {
                let a: Nlm4Testargs = decode(args)?;
                res(a.cookie, Nlm4Stats::nlm4_denied).encode(r)
            }
            NLM4_TEST_MSG => {
                let out = self.test(ctx, decode(args)?);
                self.reply_async(ctx, NLM4_TEST_RES, out);
            }
            NLM4_LOCK_MSG => {
                let out = self.lock(ctx, decode(args)?, true);
                self.reply_async(ctx, NLM4_LOCK_RES, out);
            }
            NLM4_CANCEL_MSG => {
                let out = self.cancel(ctx, decode(args)?);
                self.reply_async(ctx, NLM4_CANCEL_RES, out);
            }
            NLM4_UNLOCK_MSG => {
                let out = self.unlock(ctx, decode(args)?);
                self.reply_async(ctx, NLM4_UNLOCK_RES, out);
            }
            NLM4_GRANTED_MSG => {
                let a: Nlm4Testargs = decode(args)?;
                self.reply_async(ctx, NLM4_GRANTED_RES, res(a.cookie, Nlm4Stats::nlm4_denied));
            }
            // Results of calls this server does not make asynchronously: nothing to do.
            NLM4_TEST_RES => {
                let _: Nlm4Testres = decode(args)?;
            }
            NLM4_LOCK_RES | NLM4_CANCEL_RES | NLM4_UNLOCK_RES | NLM4_GRANTED_RES => {
                let _: Nlm4Res = decode(args)?;
            }
            NLM4_SHARE => self.share(ctx, decode(args)?, true).encode(r),
            NLM4_UNSHARE => self.share(ctx, decode(args)?, false).encode(r),
            NLM4_NM_LOCK => self.lock(ctx, decode(args)?, false).encode(r),
            NLM4_FREE_ALL => self.free_all(ctx, decode(args)?),
            _ => return Err(ProcError::ProcUnavail),
        }
        Ok(())
    }
}
