//! The NFSv3 program (RFC 1813 section 3): decode arguments, call the backend, encode results.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use sunrpc::metrics::{NfsMetrics, RpcMetrics};
use sunrpc::{CallContext, Credential, ProcError, Program};
use vfs::exports::SecFlavor;
use vfs::{
    Attr, Caller, Client, CreateMode, Creds, DirChange, Node, SpecialFile, Stability, Vfs, VfsError,
};
use xdr::{Decode, Decoder, Encoder};

use nfs3wire::*;

use crate::convert::*;
use crate::result::{run, DirReplyEntry, Done, DIR_REPLY_FIXED};

/// Largest READ / WRITE transfer we announce in FSINFO.
pub const MAX_IO: u32 = vfs::fs::MAX_IO;
/// Largest READDIR / READDIRPLUS reply we build, whatever the client asks.
const MAX_DIR_REPLY: usize = 1 << 20;

/// Serves NFS version 3.
pub struct Nfs3 {
    vfs: Arc<Vfs>,
    guard: Option<Arc<dyn vfs::ChangeGuard>>,
    /// Errors by status and I/O bytes, once a dispatcher has registered the program.
    metrics: OnceLock<NfsMetrics>,
}

impl Nfs3 {
    /// The NFSv3 program over a backend.
    pub fn new(vfs: Arc<Vfs>) -> Self {
        Self {
            vfs,
            guard: None,
            metrics: OnceLock::new(),
        }
    }

    /// Asks `guard` (NFSv4's delegations) before a READ, WRITE, SETATTR, REMOVE, RENAME or
    /// LINK reads or changes a file or its names: a file another client holds a conflicting
    /// delegation on answers NFS3ERR_JUKEBOX until it is returned.
    pub fn with_change_guard(mut self, guard: Arc<dyn vfs::ChangeGuard>) -> Self {
        self.guard = Some(guard);
        self
    }

    fn before_change(&self, n: &vfs::Node) -> Result<(), vfs::VfsError> {
        self.guard
            .as_ref()
            .map_or(Ok(()), |g| g.before_change(n.file_id()))
    }

    /// As [`Nfs3::before_change`] before a READ or GETATTR: a file another client may hold
    /// changes of (a write delegation) answers NFS3ERR_JUKEBOX until they are written and it is
    /// returned.
    fn before_read(&self, n: &mut vfs::Node) -> Result<(), vfs::VfsError> {
        let returned = self
            .guard
            .as_ref()
            .map_or(Ok(false), |g| g.before_read(n.file_id()))?;
        if returned {
            // the holder wrote what it had before it returned the delegation
            n.attr = self.vfs.getattr(n)?;
        }
        Ok(())
    }

    /// As [`Nfs3::before_change`] for the file named `name` in `dir`; a name that does not
    /// exist changes nothing here (the operation itself reports it).
    fn before_name_change(
        &self,
        c: &vfs::Caller,
        dir: &vfs::Node,
        name: &[u8],
    ) -> Result<(), vfs::VfsError> {
        match &self.guard {
            Some(g) if g.guards_anything() => match self.vfs.entry_id(c, dir, name) {
                Ok((id, _)) => g.before_change(id),
                Err(_) => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// The backend's view of an RPC caller.
pub fn client_of(ctx: &CallContext) -> Client {
    Client {
        addr: ctx.peer.ip(),
        privileged: ctx.from_privileged_port(),
        ident: match &ctx.cred {
            Credential::None => None,
            Credential::Sys(s) => Some(Creds {
                uid: s.uid,
                gid: s.gid,
                groups: s.gids.as_slice().into(),
            }),
        },
        flavor: SecFlavor::from_name(ctx.flavor().name()).unwrap_or(SecFlavor::None),
    }
}

/// What CREATE, MKDIR, SYMLINK and MKNOD answer: the new object's handle and attributes and
/// the directory's wcc data, or a status and the directory's wcc data.
type Created = Result<(NfsFh3, PostOpAttr, WccData), (Nfsstat3, WccData)>;

/// Builds the result union `$res` of a creating procedure from a [`Created`] (its resok and
/// resfail structs have the same fields for all four).
macro_rules! created {
    ($r:expr, $res:ident, $ok:ident, $fail:ident) => {
        match $r {
            Ok((fh, obj_attributes, dir_wcc)) => $res::Ok($ok {
                obj: PostOpFh3(Some(fh)),
                obj_attributes,
                dir_wcc,
            }),
            Err((s, dir_wcc)) => $res::Fail(s, $fail { dir_wcc }),
        }
    };
}

impl Nfs3 {
    fn auth(&self, ctx: &CallContext, fh: &NfsFh3) -> Result<(Caller, Node), VfsError> {
        self.vfs.authorize(&fh.data, &client_of(ctx))
    }

    fn fresh(&self, n: &Node) -> Option<Attr> {
        self.vfs.getattr(n).ok()
    }

    /// wcc data of `n` around a call that failed or changed it outside a turn: the attributes
    /// the call started from and the current ones.
    fn wcc_now(&self, n: &Node) -> WccData {
        wcc(&n.attr, self.fresh(n).as_ref())
    }

    fn getattr(&self, ctx: &CallContext, a: Getattr3args) -> Getattr3res {
        // the size and times of a file another client may hold unwritten changes of are not
        // known here: recalled first, as for a READ (close-to-open checks start here)
        match self.auth(ctx, &a.object).and_then(|(_, mut n)| {
            self.before_read(&mut n)?;
            // a pNFS client of this server may be writing it on the data servers
            self.vfs.follow_remote(&mut n)?;
            Ok(n)
        }) {
            Ok(n) => Getattr3res::Ok(Getattr3resok {
                obj_attributes: fattr3(&n.attr),
            }),
            Err(e) => Getattr3res::Fail(nfsstat(e)),
        }
    }

    fn setattr(&self, ctx: &CallContext, a: Setattr3args) -> Setattr3res {
        let (c, n) = match self.auth(ctx, &a.object) {
            Ok(x) => x,
            Err(e) => return Setattr3res::Fail(nfsstat(e), Setattr3resfail { obj_wcc: no_wcc() }),
        };
        let truncates = a.new_attributes.size.0.is_some();
        let before_truncate = || match (&self.guard, truncates) {
            (Some(g), true) => g.before_truncate(&n),
            _ => Ok(()),
        };
        match self
            .before_change(&n)
            .and_then(|()| before_truncate())
            .and_then(|()| {
                self.vfs
                    .setattr(&c, &n, &set_attrs(&a.new_attributes), guard(&a.guard))
            }) {
            Ok(after) => Setattr3res::Ok(Setattr3resok {
                obj_wcc: wcc(&n.attr, Some(&after)),
            }),
            Err(e) => Setattr3res::Fail(
                nfsstat(e),
                Setattr3resfail {
                    obj_wcc: self.wcc_now(&n),
                },
            ),
        }
    }

    fn lookup(&self, ctx: &CallContext, a: Lookup3args) -> Lookup3res {
        let fail =
            |e, dir_attributes| Lookup3res::Fail(nfsstat(e), Lookup3resfail { dir_attributes });
        let (c, dir) = match self.auth(ctx, &a.what.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        match self.vfs.lookup(&c, &dir, &a.what.name) {
            Ok(n) => Lookup3res::Ok(Lookup3resok {
                obj_attributes: post(Some(&n.attr)),
                object: NfsFh3 { data: n.fh },
                dir_attributes: post(Some(&dir.attr)),
            }),
            Err(e) => fail(e, post(Some(&dir.attr))),
        }
    }

    fn access(&self, ctx: &CallContext, a: Access3args) -> Access3res {
        match self.auth(ctx, &a.object) {
            Ok((c, n)) => Access3res::Ok(Access3resok {
                obj_attributes: post(Some(&n.attr)),
                access: self.vfs.access(&c, &n, a.access),
            }),
            Err(e) => Access3res::Fail(
                nfsstat(e),
                Access3resfail {
                    obj_attributes: PostOpAttr(None),
                },
            ),
        }
    }

    fn readlink(&self, ctx: &CallContext, a: Readlink3args) -> Readlink3res {
        let fail = |e, symlink_attributes| {
            Readlink3res::Fail(nfsstat(e), Readlink3resfail { symlink_attributes })
        };
        let (c, n) = match self.auth(ctx, &a.symlink) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        match self.vfs.readlink(&c, &n) {
            Ok(data) => Readlink3res::Ok(Readlink3resok {
                symlink_attributes: post(Some(&n.attr)),
                data,
            }),
            Err(e) => fail(e, post(Some(&n.attr))),
        }
    }

    fn read(&self, ctx: &CallContext, a: Read3args) -> Read3res {
        let fail =
            |e, file_attributes| Read3res::Fail(nfsstat(e), Read3resfail { file_attributes });
        let (c, mut n) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        if let Err(e) = self.before_read(&mut n) {
            return fail(e, post(Some(&n.attr)));
        }
        let count = a.count.min(MAX_IO);
        match self.vfs.read_to(&c, &n, a.offset, count, ctx) {
            Ok((data, eof, attr)) => Read3res::Ok(Read3resok {
                file_attributes: post(Some(&attr)),
                count: data.len() as u32,
                eof,
                data,
            }),
            Err(e) => fail(e, post(Some(&n.attr))),
        }
    }

    fn write(&self, ctx: &CallContext, a: Write3args) -> Write3res {
        let fail = |s, file_wcc| Write3res::Fail(s, Write3resfail { file_wcc });
        let (c, n) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(nfsstat(e), no_wcc()),
        };
        if (a.count as usize) > a.data.len() {
            return fail(Nfsstat3::NFS3ERR_INVAL, wcc(&n.attr, Some(&n.attr)));
        }
        let data = a.data.slice(..a.count as usize);
        let stable = match a.stable {
            StableHow::Unstable => Stability::Unstable,
            StableHow::DataSync => Stability::DataSync,
            StableHow::FileSync => Stability::FileSync,
        };
        match self
            .before_change(&n)
            .and_then(|()| self.vfs.write(&c, &n, a.offset, &data, stable))
        {
            Ok((done, after)) => Write3res::Ok(Write3resok {
                file_wcc: wcc(&n.attr, Some(&after)),
                count: data.len() as u32,
                committed: match done {
                    Stability::Unstable => StableHow::Unstable,
                    Stability::DataSync => StableHow::DataSync,
                    Stability::FileSync => StableHow::FileSync,
                },
                verf: self.vfs.write_verifier(),
            }),
            Err(e) => fail(nfsstat(e), self.wcc_now(&n)),
        }
    }

    /// Shared tail of CREATE, MKDIR, SYMLINK and MKNOD.
    // The failure carries the reply's wcc data, moved once into the result: boxing it would
    // only add an allocation.
    #[allow(clippy::result_large_err)]
    fn created(
        &self,
        ctx: &CallContext,
        dir: &NfsFh3,
        op: impl FnOnce(&Caller, &Node) -> Result<DirChange<(Bytes, Attr)>, VfsError>,
    ) -> Created {
        let (c, d) = self.auth(ctx, dir).map_err(|e| (nfsstat(e), no_wcc()))?;
        match op(&c, &d) {
            Ok(made) => {
                let dir_wcc = dir_wcc(&made);
                let (fh, attr) = made.value;
                Ok((NfsFh3 { data: fh }, post(Some(&attr)), dir_wcc))
            }
            Err(e) => Err((nfsstat(e), self.wcc_now(&d))),
        }
    }

    fn create(&self, ctx: &CallContext, a: Create3args) -> Create3res {
        let (how, s) = match &a.how {
            Createhow3::Unchecked(s) => (CreateMode::Unchecked, set_attrs(s)),
            Createhow3::Guarded(s) => (CreateMode::Guarded, set_attrs(s)),
            Createhow3::Exclusive(v) => (CreateMode::Exclusive(*v), Default::default()),
        };
        let r = self.created(ctx, &a.r#where.dir, |c, d| {
            self.vfs.create(c, d, &a.r#where.name, how, &s)
        });
        created!(r, Create3res, Create3resok, Create3resfail)
    }

    fn mkdir(&self, ctx: &CallContext, a: Mkdir3args) -> Mkdir3res {
        let r = self.created(ctx, &a.r#where.dir, |c, d| {
            self.vfs
                .mkdir(c, d, &a.r#where.name, &set_attrs(&a.attributes))
        });
        created!(r, Mkdir3res, Mkdir3resok, Mkdir3resfail)
    }

    fn symlink(&self, ctx: &CallContext, a: Symlink3args) -> Symlink3res {
        let r = self.created(ctx, &a.r#where.dir, |c, d| {
            self.vfs.symlink(
                c,
                d,
                &a.r#where.name,
                &a.symlink.symlink_data,
                &set_attrs(&a.symlink.symlink_attributes),
            )
        });
        created!(r, Symlink3res, Symlink3resok, Symlink3resfail)
    }

    fn mknod(&self, ctx: &CallContext, a: Mknod3args) -> Mknod3res {
        let (kind, s) = match &a.what {
            Mknoddata3::Nf3chr(d) => (
                SpecialFile::Char(d.spec.specdata1, d.spec.specdata2),
                &d.dev_attributes,
            ),
            Mknoddata3::Nf3blk(d) => (
                SpecialFile::Block(d.spec.specdata1, d.spec.specdata2),
                &d.dev_attributes,
            ),
            Mknoddata3::Nf3sock(s) => (SpecialFile::Socket, s),
            Mknoddata3::Nf3fifo(s) => (SpecialFile::Fifo, s),
            // NF3REG, NF3DIR, NF3LNK: not made by MKNOD
            Mknoddata3::Default(_) => {
                return Mknod3res::Fail(
                    Nfsstat3::NFS3ERR_BADTYPE,
                    Mknod3resfail { dir_wcc: no_wcc() },
                )
            }
        };
        let s = set_attrs(s);
        let r = self.created(ctx, &a.r#where.dir, |c, d| {
            self.vfs.mknod(c, d, &a.r#where.name, kind, &s)
        });
        created!(r, Mknod3res, Mknod3resok, Mknod3resfail)
    }

    /// REMOVE and RMDIR: the directory's wcc data, with the status on failure.
    #[allow(clippy::result_large_err)]
    fn remove(
        &self,
        ctx: &CallContext,
        a: &Diropargs3,
        dir_only: bool,
    ) -> Result<WccData, (Nfsstat3, WccData)> {
        let (c, d) = self.auth(ctx, &a.dir).map_err(|e| (nfsstat(e), no_wcc()))?;
        let r = self
            .before_name_change(&c, &d, &a.name)
            .and_then(|()| self.vfs.remove(&c, &d, &a.name, dir_only));
        match r {
            Ok(removed) => Ok(dir_wcc(&removed)),
            Err(e) => Err((nfsstat(e), self.wcc_now(&d))),
        }
    }

    fn rename(&self, ctx: &CallContext, a: Rename3args) -> Rename3res {
        let empty = |e| {
            Rename3res::Fail(
                nfsstat(e),
                Rename3resfail {
                    fromdir_wcc: no_wcc(),
                    todir_wcc: no_wcc(),
                },
            )
        };
        let (c, from) = match self.auth(ctx, &a.from.dir) {
            Ok(x) => x,
            Err(e) => return empty(e),
        };
        let (_, to) = match self.auth(ctx, &a.to.dir) {
            Ok(x) => x,
            Err(e) => return empty(e),
        };
        // the file renamed, and the one the new name replaces
        let r = self
            .before_name_change(&c, &from, &a.from.name)
            .and_then(|()| self.before_name_change(&c, &to, &a.to.name))
            .and_then(|()| self.vfs.rename(&c, &from, &a.from.name, &to, &a.to.name));
        match r {
            Ok((source, target)) => Rename3res::Ok(Rename3resok {
                fromdir_wcc: dir_wcc(&source),
                todir_wcc: dir_wcc(&target),
            }),
            Err(e) => Rename3res::Fail(
                nfsstat(e),
                Rename3resfail {
                    fromdir_wcc: self.wcc_now(&from),
                    todir_wcc: self.wcc_now(&to),
                },
            ),
        }
    }

    fn link(&self, ctx: &CallContext, a: Link3args) -> Link3res {
        let fail = |e, file_attributes, linkdir_wcc| {
            Link3res::Fail(
                nfsstat(e),
                Link3resfail {
                    file_attributes,
                    linkdir_wcc,
                },
            )
        };
        let (c, file) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None), no_wcc()),
        };
        let (_, dir) = match self.auth(ctx, &a.link.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None), no_wcc()),
        };
        let r = self
            .before_change(&file)
            .and_then(|()| self.vfs.link(&c, &file, &dir, &a.link.name));
        match r {
            Ok(linked) => Link3res::Ok(Link3resok {
                file_attributes: post(Some(&linked.value)),
                linkdir_wcc: dir_wcc(&linked),
            }),
            Err(e) => fail(e, post(Some(&file.attr)), self.wcc_now(&dir)),
        }
    }

    /// Walks a directory from `cookie`, turning entries into reply entries until the reply
    /// would exceed `limit` bytes (status, post_op_attr, verifier, end of list and eof
    /// included); shared by READDIR and READDIRPLUS.
    #[allow(clippy::too_many_arguments)]
    fn collect<T: DirReplyEntry>(
        &self,
        c: &Caller,
        d: &Node,
        cookie: u64,
        verf: [u8; 8],
        plus: bool,
        limit: usize,
        make: impl Fn(vfs::DirEntry) -> T,
    ) -> (Result<bool, VfsError>, Vec<T>) {
        let mut used = DIR_REPLY_FIXED;
        // entries with short names: fileid, name, cookie and list word (with attributes and
        // a handle for READDIRPLUS), a little under what they take
        let per_entry = if plus { 150 } else { 30 };
        let expect = limit / per_entry + 1;
        let mut entries = Vec::with_capacity(expect);
        let r = self.vfs.readdir(c, d, cookie, verf, plus, expect, |e| {
            let ent = make(e);
            used += ent.wire_len();
            if used > limit {
                return false;
            }
            entries.push(ent);
            true
        });
        (r, entries)
    }

    fn readdir(&self, ctx: &CallContext, a: Readdir3args) -> Readdir3res {
        let (c, d) = match self.auth(ctx, &a.dir) {
            Ok(x) => x,
            Err(e) => {
                return Readdir3res::Fail(
                    nfsstat(e),
                    Readdir3resfail {
                        dir_attributes: PostOpAttr(None),
                    },
                )
            }
        };
        let limit = (a.count as usize).min(MAX_DIR_REPLY);
        let (r, entries) = self.collect(&c, &d, a.cookie, a.cookieverf, false, limit, |e| Entry3 {
            fileid: e.fileid,
            name: e.name,
            cookie: e.cookie,
        });
        match finish_dir(r, entries.is_empty(), &d) {
            Ok(eof) => Readdir3res::Ok(Readdir3resok {
                dir_attributes: post(Some(&d.attr)),
                cookieverf: self.vfs.cookie_verifier(&d),
                reply: Dirlist3 { entries, eof },
            }),
            Err((s, dir_attributes)) => Readdir3res::Fail(s, Readdir3resfail { dir_attributes }),
        }
    }

    fn readdirplus(&self, ctx: &CallContext, a: Readdirplus3args) -> Readdirplus3res {
        let (c, d) = match self.auth(ctx, &a.dir) {
            Ok(x) => x,
            Err(e) => {
                return Readdirplus3res::Fail(
                    nfsstat(e),
                    Readdirplus3resfail {
                        dir_attributes: PostOpAttr(None),
                    },
                )
            }
        };
        let limit = (a.maxcount as usize).min(MAX_DIR_REPLY);
        let (r, entries) = self.collect(&c, &d, a.cookie, a.cookieverf, true, limit, |e| {
            let (fh, attr) = match e.plus {
                Some((fh, attr)) => (Some(NfsFh3 { data: fh }), Some(fattr3(&attr))),
                None => (None, None),
            };
            Entryplus3 {
                fileid: e.fileid,
                name: e.name,
                cookie: e.cookie,
                name_attributes: PostOpAttr(attr),
                name_handle: PostOpFh3(fh),
            }
        });
        match finish_dir(r, entries.is_empty(), &d) {
            Ok(eof) => Readdirplus3res::Ok(Readdirplus3resok {
                dir_attributes: post(Some(&d.attr)),
                cookieverf: self.vfs.cookie_verifier(&d),
                reply: Dirlistplus3 { entries, eof },
            }),
            Err((s, dir_attributes)) => {
                Readdirplus3res::Fail(s, Readdirplus3resfail { dir_attributes })
            }
        }
    }

    fn fsstat(&self, ctx: &CallContext, a: Fsstat3args) -> Fsstat3res {
        let fail =
            |e, obj_attributes| Fsstat3res::Fail(nfsstat(e), Fsstat3resfail { obj_attributes });
        let (_, n) = match self.auth(ctx, &a.fsroot) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        match self.vfs.fsstat(&n) {
            Ok(s) => Fsstat3res::Ok(Fsstat3resok {
                obj_attributes: post(Some(&n.attr)),
                tbytes: s.total_bytes,
                fbytes: s.free_bytes,
                abytes: s.avail_bytes,
                tfiles: s.total_files,
                ffiles: s.free_files,
                afiles: s.avail_files,
                invarsec: 0,
            }),
            Err(e) => fail(e, post(Some(&n.attr))),
        }
    }

    fn fsinfo(&self, ctx: &CallContext, a: Fsinfo3args) -> Fsinfo3res {
        match self.auth(ctx, &a.fsroot) {
            Ok((_, n)) => Fsinfo3res::Ok(Fsinfo3resok {
                obj_attributes: post(Some(&n.attr)),
                rtmax: MAX_IO,
                rtpref: MAX_IO,
                rtmult: 4096,
                wtmax: MAX_IO,
                wtpref: MAX_IO,
                wtmult: 4096,
                dtpref: 64 * 1024,
                maxfilesize: i64::MAX as u64,
                time_delta: Nfstime3 {
                    seconds: 0,
                    nseconds: 1,
                },
                properties: FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME,
            }),
            Err(e) => Fsinfo3res::Fail(
                nfsstat(e),
                Fsinfo3resfail {
                    obj_attributes: PostOpAttr(None),
                },
            ),
        }
    }

    fn pathconf(&self, ctx: &CallContext, a: Pathconf3args) -> Pathconf3res {
        match self.auth(ctx, &a.object) {
            Ok((_, n)) => Pathconf3res::Ok(Pathconf3resok {
                obj_attributes: post(Some(&n.attr)),
                linkmax: 65000,
                name_max: vfs::fs::NAME_MAX as u32,
                no_trunc: true,
                chown_restricted: true,
                case_insensitive: false,
                case_preserving: true,
            }),
            Err(e) => Pathconf3res::Fail(
                nfsstat(e),
                Pathconf3resfail {
                    obj_attributes: PostOpAttr(None),
                },
            ),
        }
    }

    fn commit(&self, ctx: &CallContext, a: Commit3args) -> Commit3res {
        let fail = |e, file_wcc| Commit3res::Fail(nfsstat(e), Commit3resfail { file_wcc });
        let (c, n) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(e, no_wcc()),
        };
        match self.vfs.commit(&c, &n) {
            Ok(after) => Commit3res::Ok(Commit3resok {
                file_wcc: wcc(&n.attr, Some(&after)),
                verf: self.vfs.write_verifier(),
            }),
            Err(e) => fail(e, self.wcc_now(&n)),
        }
    }
}

/// Turns a directory walk into READDIR's end-of-directory flag, or the failure status with
/// the directory's attributes: an entry that does not fit alone is TOOSMALL.
fn finish_dir(
    r: Result<bool, VfsError>,
    empty: bool,
    d: &Node,
) -> Result<bool, (Nfsstat3, PostOpAttr)> {
    match r {
        Ok(eof) if eof || !empty => Ok(eof),
        Ok(_) => Err((nfsstat(VfsError::TooSmall), post(Some(&d.attr)))),
        Err(e) => Err((nfsstat(e), post(Some(&d.attr)))),
    }
}

impl Nfs3 {
    /// Runs procedure `ctx.proc_`, appending its result.
    fn serve(&self, ctx: &CallContext, args: Decoder, r: &mut Encoder) -> Result<Done, ProcError> {
        match ctx.proc_ {
            NFSPROC3_NULL => Ok(Done {
                status: Nfsstat3::NFS3_OK,
                read: 0,
                written: 0,
            }),
            NFSPROC3_GETATTR => run(args, r, |a| self.getattr(ctx, a)),
            NFSPROC3_SETATTR => run(args, r, |a| self.setattr(ctx, a)),
            NFSPROC3_LOOKUP => run(args, r, |a| self.lookup(ctx, a)),
            NFSPROC3_ACCESS => run(args, r, |a| self.access(ctx, a)),
            NFSPROC3_READLINK => run(args, r, |a| self.readlink(ctx, a)),
            NFSPROC3_READ => run(args, r, |a| self.read(ctx, a)),
            NFSPROC3_WRITE => run(args, r, |a| self.write(ctx, a)),
            NFSPROC3_CREATE => run(args, r, |a| self.create(ctx, a)),
            NFSPROC3_MKDIR => run(args, r, |a| self.mkdir(ctx, a)),
            NFSPROC3_SYMLINK => run(args, r, |a| self.symlink(ctx, a)),
            NFSPROC3_MKNOD => run(args, r, |a| self.mknod(ctx, a)),
            NFSPROC3_REMOVE => run(args, r, |a: Remove3args| {
                match self.remove(ctx, &a.object, false) {
                    Ok(dir_wcc) => Remove3res::Ok(Remove3resok { dir_wcc }),
                    Err((s, dir_wcc)) => Remove3res::Fail(s, Remove3resfail { dir_wcc }),
                }
            }),
            NFSPROC3_RMDIR => run(args, r, |a: Rmdir3args| {
                match self.remove(ctx, &a.object, true) {
                    Ok(dir_wcc) => Rmdir3res::Ok(Rmdir3resok { dir_wcc }),
                    Err((s, dir_wcc)) => Rmdir3res::Fail(s, Rmdir3resfail { dir_wcc }),
                }
            }),
            NFSPROC3_RENAME => run(args, r, |a| self.rename(ctx, a)),
            NFSPROC3_LINK => run(args, r, |a| self.link(ctx, a)),
            NFSPROC3_READDIR => run(args, r, |a| self.readdir(ctx, a)),
            NFSPROC3_READDIRPLUS => run(args, r, |a| self.readdirplus(ctx, a)),
            NFSPROC3_FSSTAT => run(args, r, |a| self.fsstat(ctx, a)),
            NFSPROC3_FSINFO => run(args, r, |a| self.fsinfo(ctx, a)),
            NFSPROC3_PATHCONF => run(args, r, |a| self.pathconf(ctx, a)),
            NFSPROC3_COMMIT => run(args, r, |a| self.commit(ctx, a)),
            _ => Err(ProcError::ProcUnavail),
        }
    }

    /// Counts what a procedure that answered did, once a dispatcher registered the program.
    fn count(&self, proc_: u32, d: Done) {
        let Some(m) = self.metrics.get() else {
            return;
        };
        if d.status != Nfsstat3::NFS3_OK {
            let op = self.proc_name(NFS_V3, proc_).unwrap_or("unknown");
            m.error(op, d.status.name().unwrap_or("unknown"));
        }
        if d.read > 0 {
            m.read(d.read as u64);
        }
        if d.written > 0 {
            m.written(d.written as u64);
        }
    }
}

impl Program for Nfs3 {
    fn program(&self) -> u32 {
        NFS3_PROGRAM
    }

    fn versions(&self) -> (u32, u32) {
        (NFS_V3, NFS_V3)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        Some(match p {
            NFSPROC3_NULL => "NULL",
            NFSPROC3_GETATTR => "GETATTR",
            NFSPROC3_SETATTR => "SETATTR",
            NFSPROC3_LOOKUP => "LOOKUP",
            NFSPROC3_ACCESS => "ACCESS",
            NFSPROC3_READLINK => "READLINK",
            NFSPROC3_READ => "READ",
            NFSPROC3_WRITE => "WRITE",
            NFSPROC3_CREATE => "CREATE",
            NFSPROC3_MKDIR => "MKDIR",
            NFSPROC3_SYMLINK => "SYMLINK",
            NFSPROC3_MKNOD => "MKNOD",
            NFSPROC3_REMOVE => "REMOVE",
            NFSPROC3_RMDIR => "RMDIR",
            NFSPROC3_RENAME => "RENAME",
            NFSPROC3_LINK => "LINK",
            NFSPROC3_READDIR => "READDIR",
            NFSPROC3_READDIRPLUS => "READDIRPLUS",
            NFSPROC3_FSSTAT => "FSSTAT",
            NFSPROC3_FSINFO => "FSINFO",
            NFSPROC3_PATHCONF => "PATHCONF",
            NFSPROC3_COMMIT => "COMMIT",
            _ => return None,
        })
    }

    fn skips_drc(&self, _vers: u32, p: u32, _args: &Decoder) -> bool {
        !matches!(
            p,
            NFSPROC3_SETATTR
                | NFSPROC3_WRITE
                | NFSPROC3_CREATE
                | NFSPROC3_MKDIR
                | NFSPROC3_SYMLINK
                | NFSPROC3_MKNOD
                | NFSPROC3_REMOVE
                | NFSPROC3_RMDIR
                | NFSPROC3_RENAME
                | NFSPROC3_LINK
        )
    }

    /// Every procedure but NULL begins with the handle of the object it works on.
    fn admission(&self, _vers: u32, p: u32, args: &Decoder) -> Option<u64> {
        if p == NFSPROC3_NULL {
            return None;
        }
        crate::convert::export_of_args(&self.vfs, args)
    }

    fn call(&self, ctx: &CallContext, args: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        let done = self.serve(ctx, args, r)?;
        // a try that gave up is run again, and counted then
        if !vfs::nowait::given_up() {
            self.count(ctx.proc_, done);
        }
        Ok(())
    }

    /// NULL, GETATTR, ACCESS, LOOKUP, and READs and WRITEs up to [`vfs::nowait::IO_MAX`] or of
    /// any size when no other call of the connection waits behind this one
    /// ([`sunrpc::CallContext::alone`]): what they need is often in memory (a cached
    /// descriptor or dentry, the page cache, a file system in memory); the backend gives up
    /// where it would wait ([`vfs::nowait`]). A WRITE goes through the duplicate request cache
    /// here too (the dispatcher's).
    fn call_nonblocking(
        &self,
        ctx: &CallContext,
        args: Decoder,
        r: &mut Encoder,
    ) -> Option<Result<(), ProcError>> {
        match ctx.proc_ {
            NFSPROC3_NULL | NFSPROC3_GETATTR | NFSPROC3_ACCESS | NFSPROC3_LOOKUP => {}
            NFSPROC3_READ => {
                let a = Read3args::decode(&mut args.clone()).ok()?;
                if a.count > vfs::nowait::IO_MAX && !ctx.alone {
                    return None;
                }
            }
            NFSPROC3_WRITE => {
                // the data is a slice of the call, not a copy
                let a = Write3args::decode(&mut args.clone()).ok()?;
                if a.count > vfs::nowait::IO_MAX && !ctx.alone {
                    return None;
                }
            }
            _ => return None,
        }
        vfs::nowait::without_blocking(|| self.call(ctx, args, r))
    }

    fn register_metrics(&self, metrics: &RpcMetrics) {
        let _ = self.metrics.set(metrics.nfs("3"));
    }
}
