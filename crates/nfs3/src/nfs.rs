//! The NFSv3 program (RFC 1813 section 3): decode arguments, call the backend, encode results.

use std::sync::Arc;

use bytes::Bytes;
use sunrpc::{CallContext, Credential, ProcError, Program};
use vfs::{Attr, Caller, Client, CreateMode, Creds, Node, SpecialFile, Stability, Vfs, VfsError};
use xdr::{Decode, Decoder, Encode, Encoder, Payload};

use crate::convert::*;
use crate::types::*;

/// Largest READ / WRITE transfer we announce in FSINFO.
pub const MAX_IO: u32 = vfs::fs::MAX_IO;
/// Largest READDIR / READDIRPLUS reply we build, whatever the client asks.
const MAX_DIR_REPLY: usize = 1 << 20;

/// Serves NFS version 3.
pub struct Nfs3 {
    vfs: Arc<Vfs>,
    guard: Option<Arc<dyn vfs::ChangeGuard>>,
}

impl Nfs3 {
    /// The NFSv3 program over a backend.
    pub fn new(vfs: Arc<Vfs>) -> Self {
        Self { vfs, guard: None }
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
        port: ctx.peer.port(),
        ident: match &ctx.cred {
            Credential::None => None,
            Credential::Sys(s) => Some(Creds {
                uid: s.uid,
                gid: s.gid,
                groups: s.gids.clone(),
            }),
        },
    }
}

fn decode<A: Decode>(mut d: Decoder) -> Result<A, ProcError> {
    A::decode(&mut d).map_err(|_| ProcError::GarbageArgs)
}

type Res<T, F> = Res3<T, F>;

fn fail<T, F>(e: VfsError, f: F) -> Res<T, F> {
    Res3::Fail(nfsstat(e), f)
}

impl Nfs3 {
    fn auth(&self, ctx: &CallContext, fh: &Fh3) -> Result<(Caller, Node), VfsError> {
        self.vfs.authorize(&fh.0, &client_of(ctx))
    }

    fn fresh(&self, n: &Node) -> Option<Attr> {
        self.vfs.getattr(n).ok()
    }

    fn getattr(&self, ctx: &CallContext, a: GetattrArgs) -> GetattrRes {
        // the size and times of a file another client may hold unwritten changes of are not
        // known here: recalled first, as for a READ (close-to-open checks start here)
        match self
            .auth(ctx, &a.object)
            .and_then(|(_, mut n)| self.before_read(&mut n).map(|()| n))
        {
            Ok(n) => Res3::Ok(fattr3(&n.attr)),
            Err(e) => fail(e, Void),
        }
    }

    fn setattr(&self, ctx: &CallContext, a: SetattrArgs) -> SetattrRes {
        let (c, n) = match self.auth(ctx, &a.object) {
            Ok(x) => x,
            Err(e) => return fail(e, WccData::default()),
        };
        match self.before_change(&n).and_then(|()| {
            self.vfs
                .setattr(&c, &n, &set_attrs(&a.new_attributes), guard(&a.guard))
        }) {
            Ok(after) => Res3::Ok(wcc(&n.attr, Some(&after))),
            Err(e) => fail(e, wcc(&n.attr, self.fresh(&n).as_ref())),
        }
    }

    fn lookup(&self, ctx: &CallContext, a: LookupArgs) -> LookupRes {
        let (c, dir) = match self.auth(ctx, &a.what.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        match self.vfs.lookup(&c, &dir, &a.what.name) {
            Ok((fh, attr)) => Res3::Ok(LookupResOk {
                object: Fh3(fh),
                obj_attributes: post(Some(&attr)),
                dir_attributes: post(Some(&dir.attr)),
            }),
            Err(e) => fail(e, post(Some(&dir.attr))),
        }
    }

    fn access(&self, ctx: &CallContext, a: AccessArgs) -> AccessRes {
        match self.auth(ctx, &a.object) {
            Ok((c, n)) => Res3::Ok(AccessResOk {
                obj_attributes: post(Some(&n.attr)),
                access: self.vfs.access(&c, &n, a.access),
            }),
            Err(e) => fail(e, PostOpAttr(None)),
        }
    }

    fn readlink(&self, ctx: &CallContext, a: ReadlinkArgs) -> ReadlinkRes {
        let (c, n) = match self.auth(ctx, &a.symlink) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        match self.vfs.readlink(&c, &n) {
            Ok(data) => Res3::Ok(ReadlinkResOk {
                symlink_attributes: post(Some(&n.attr)),
                data,
            }),
            Err(e) => fail(e, post(Some(&n.attr))),
        }
    }

    fn read(&self, ctx: &CallContext, a: ReadArgs) -> ReadRes {
        let (c, mut n) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        if let Err(e) = self.before_read(&mut n) {
            return fail(e, post(Some(&n.attr)));
        }
        let count = a.count.min(MAX_IO);
        let pages = match ctx.takes_pages() {
            true => self.vfs.read_pages(&c, &n, a.offset, count),
            false => Ok(None),
        };
        let read = match pages {
            Ok(Some((pages, eof, attr))) => Ok((Payload::Pages(pages), (eof, attr))),
            Ok(None) => ctx
                .bulk_payload(
                    count as usize,
                    |buf| {
                        let (k, eof, attr) = self.vfs.read_into(&c, &n, a.offset, buf)?;
                        Ok((k, (eof, attr)))
                    },
                    || {
                        let (data, eof, attr) = self.vfs.read(&c, &n, a.offset, count)?;
                        Ok((data, (eof, attr)))
                    },
                )
                .map(|(data, t)| (Payload::Bytes(data), t)),
            Err(e) => Err(e),
        };
        match read {
            Ok((data, (eof, attr))) => Res3::Ok(ReadResOk {
                file_attributes: post(Some(&attr)),
                count: data.len() as u32,
                eof,
                data,
            }),
            Err(e) => fail(e, post(Some(&n.attr))),
        }
    }

    fn write(&self, ctx: &CallContext, a: WriteArgs) -> WriteRes {
        let (c, n) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(e, WccData::default()),
        };
        if (a.count as usize) > a.data.len() {
            return Res3::Fail(Nfsstat3::Inval, wcc(&n.attr, Some(&n.attr)));
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
            Ok((done, after)) => Res3::Ok(WriteResOk {
                file_wcc: wcc(&n.attr, Some(&after)),
                count: data.len() as u32,
                committed: match done {
                    Stability::Unstable => StableHow::Unstable,
                    Stability::DataSync => StableHow::DataSync,
                    Stability::FileSync => StableHow::FileSync,
                },
                verf: self.vfs.write_verifier(),
            }),
            Err(e) => fail(e, wcc(&n.attr, self.fresh(&n).as_ref())),
        }
    }

    /// Shared tail of CREATE, MKDIR, SYMLINK and MKNOD.
    fn created(
        &self,
        ctx: &CallContext,
        dir: &Fh3,
        op: impl FnOnce(&Caller, &Node) -> Result<(Bytes, Attr), VfsError>,
    ) -> CreateRes {
        let (c, d) = match self.auth(ctx, dir) {
            Ok(x) => x,
            Err(e) => return fail(e, WccData::default()),
        };
        let r = op(&c, &d);
        let dir_wcc = wcc(&d.attr, self.fresh(&d).as_ref());
        match r {
            Ok((fh, attr)) => Res3::Ok(CreateResOk {
                obj: PostOpFh3(Some(Fh3(fh))),
                obj_attributes: post(Some(&attr)),
                dir_wcc,
            }),
            Err(e) => fail(e, dir_wcc),
        }
    }

    fn create(&self, ctx: &CallContext, a: CreateArgs) -> CreateRes {
        let (how, s) = match &a.how {
            Createhow3::Unchecked(s) => (CreateMode::Unchecked, set_attrs(s)),
            Createhow3::Guarded(s) => (CreateMode::Guarded, set_attrs(s)),
            Createhow3::Exclusive(v) => (CreateMode::Exclusive(*v), Default::default()),
        };
        self.created(ctx, &a.where_.dir, |c, d| {
            self.vfs.create(c, d, &a.where_.name, how, &s)
        })
    }

    fn mkdir(&self, ctx: &CallContext, a: MkdirArgs) -> MkdirRes {
        self.created(ctx, &a.where_.dir, |c, d| {
            self.vfs
                .mkdir(c, d, &a.where_.name, &set_attrs(&a.attributes))
        })
    }

    fn symlink(&self, ctx: &CallContext, a: SymlinkArgs) -> SymlinkRes {
        self.created(ctx, &a.where_.dir, |c, d| {
            self.vfs.symlink(
                c,
                d,
                &a.where_.name,
                &a.symlink.symlink_data,
                &set_attrs(&a.symlink.symlink_attributes),
            )
        })
    }

    fn mknod(&self, ctx: &CallContext, a: MknodArgs) -> MknodRes {
        let (kind, s) = match &a.what {
            Mknoddata3::Chr(d) => (
                SpecialFile::Char(d.spec.specdata1, d.spec.specdata2),
                &d.dev_attributes,
            ),
            Mknoddata3::Blk(d) => (
                SpecialFile::Block(d.spec.specdata1, d.spec.specdata2),
                &d.dev_attributes,
            ),
            Mknoddata3::Sock(s) => (SpecialFile::Socket, s),
            Mknoddata3::Fifo(s) => (SpecialFile::Fifo, s),
            Mknoddata3::Reg | Mknoddata3::Dir | Mknoddata3::Lnk => {
                return Res3::Fail(Nfsstat3::Badtype, WccData::default())
            }
        };
        let s = set_attrs(s);
        self.created(ctx, &a.where_.dir, |c, d| {
            self.vfs.mknod(c, d, &a.where_.name, kind, &s)
        })
    }

    fn remove(&self, ctx: &CallContext, a: &DiropArgs3, dir_only: bool) -> RemoveRes {
        let (c, d) = match self.auth(ctx, &a.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, WccData::default()),
        };
        let r = self
            .before_name_change(&c, &d, &a.name)
            .and_then(|()| self.vfs.remove(&c, &d, &a.name, dir_only));
        let w = wcc(&d.attr, self.fresh(&d).as_ref());
        match r {
            Ok(()) => Res3::Ok(w),
            Err(e) => fail(e, w),
        }
    }

    fn rename(&self, ctx: &CallContext, a: RenameArgs) -> RenameRes {
        let empty = RenameResOk {
            fromdir_wcc: WccData::default(),
            todir_wcc: WccData::default(),
        };
        let (c, from) = match self.auth(ctx, &a.from.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, empty),
        };
        let (_, to) = match self.auth(ctx, &a.to.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, empty),
        };
        // the file renamed, and the one the new name replaces
        let r = self
            .before_name_change(&c, &from, &a.from.name)
            .and_then(|()| self.before_name_change(&c, &to, &a.to.name))
            .and_then(|()| self.vfs.rename(&c, &from, &a.from.name, &to, &a.to.name));
        let res = RenameResOk {
            fromdir_wcc: wcc(&from.attr, self.fresh(&from).as_ref()),
            todir_wcc: wcc(&to.attr, self.fresh(&to).as_ref()),
        };
        match r {
            Ok(()) => Res3::Ok(res),
            Err(e) => fail(e, res),
        }
    }

    fn link(&self, ctx: &CallContext, a: LinkArgs) -> LinkRes {
        let empty = LinkResOk {
            file_attributes: PostOpAttr(None),
            linkdir_wcc: WccData::default(),
        };
        let (c, file) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(e, empty),
        };
        let (_, dir) = match self.auth(ctx, &a.link.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, empty),
        };
        let r = self
            .before_change(&file)
            .and_then(|()| self.vfs.link(&c, &file, &dir, &a.link.name));
        let linkdir_wcc = wcc(&dir.attr, self.fresh(&dir).as_ref());
        match r {
            Ok(attr) => Res3::Ok(LinkResOk {
                file_attributes: post(Some(&attr)),
                linkdir_wcc,
            }),
            Err(e) => fail(
                e,
                LinkResOk {
                    file_attributes: post(Some(&file.attr)),
                    linkdir_wcc,
                },
            ),
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
        let mut used = 4 + 4 + FATTR3_SIZE + 8 + 4 + 4;
        let mut entries = Vec::new();
        // entries with short names: fileid, name, cookie and list word (with attributes and
        // a handle for READDIRPLUS), a little under what they take
        let per_entry = if plus { 150 } else { 30 };
        let expect = limit / per_entry + 1;
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

    fn readdir(&self, ctx: &CallContext, a: ReaddirArgs) -> ReaddirRes {
        let (c, d) = match self.auth(ctx, &a.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        // status, post_op_attr, cookieverf, end-of-list word and eof.
        let limit = (a.count as usize).min(MAX_DIR_REPLY);
        let (r, mut entries) =
            self.collect(&c, &d, a.cookie, a.cookieverf, false, limit, |e| Entry3 {
                fileid: e.fileid,
                name: e.name,
                cookie: e.cookie,
            });
        let empty = entries.is_empty();
        finish_dir(r, empty, &d, |eof| {
            Res3::Ok(ReaddirResOk {
                dir_attributes: post(Some(&d.attr)),
                cookieverf: self.vfs.cookie_verifier(&d),
                reply: Dirlist3 {
                    entries: std::mem::take(&mut entries),
                    eof,
                },
            })
        })
    }

    fn readdirplus(&self, ctx: &CallContext, a: ReaddirplusArgs) -> ReaddirplusRes {
        let (c, d) = match self.auth(ctx, &a.dir) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        let limit = (a.maxcount as usize).min(MAX_DIR_REPLY);
        let (r, mut entries) = self.collect(&c, &d, a.cookie, a.cookieverf, true, limit, |e| {
            let (fh, attr) = match e.plus {
                Some((fh, attr)) => (Some(Fh3(fh)), Some(fattr3(&attr))),
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
        let empty = entries.is_empty();
        finish_dir(r, empty, &d, |eof| {
            Res3::Ok(ReaddirplusResOk {
                dir_attributes: post(Some(&d.attr)),
                cookieverf: self.vfs.cookie_verifier(&d),
                reply: Dirlistplus3 {
                    entries: std::mem::take(&mut entries),
                    eof,
                },
            })
        })
    }

    fn fsstat(&self, ctx: &CallContext, a: FsstatArgs) -> FsstatRes {
        let (_, n) = match self.auth(ctx, &a.fsroot) {
            Ok(x) => x,
            Err(e) => return fail(e, PostOpAttr(None)),
        };
        match self.vfs.fsstat(&n) {
            Ok(s) => Res3::Ok(FsstatResOk {
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

    fn fsinfo(&self, ctx: &CallContext, a: FsinfoArgs) -> FsinfoRes {
        match self.auth(ctx, &a.fsroot) {
            Ok((_, n)) => Res3::Ok(FsinfoResOk {
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
            Err(e) => fail(e, PostOpAttr(None)),
        }
    }

    fn pathconf(&self, ctx: &CallContext, a: PathconfArgs) -> PathconfRes {
        match self.auth(ctx, &a.object) {
            Ok((_, n)) => Res3::Ok(PathconfResOk {
                obj_attributes: post(Some(&n.attr)),
                linkmax: 65000,
                name_max: vfs::fs::NAME_MAX as u32,
                no_trunc: true,
                chown_restricted: true,
                case_insensitive: false,
                case_preserving: true,
            }),
            Err(e) => fail(e, PostOpAttr(None)),
        }
    }

    fn commit(&self, ctx: &CallContext, a: CommitArgs) -> CommitRes {
        let (c, n) = match self.auth(ctx, &a.file) {
            Ok(x) => x,
            Err(e) => return fail(e, WccData::default()),
        };
        match self.vfs.commit(&c, &n) {
            Ok(after) => Res3::Ok(CommitResOk {
                file_wcc: wcc(&n.attr, Some(&after)),
                verf: self.vfs.write_verifier(),
            }),
            Err(e) => fail(e, wcc(&n.attr, self.fresh(&n).as_ref())),
        }
    }
}

/// A READDIR or READDIRPLUS entry with its encoded size.
trait DirReplyEntry {
    /// Bytes the entry takes in the reply.
    fn wire_len(&self) -> usize;
}

impl DirReplyEntry for Entry3 {
    fn wire_len(&self) -> usize {
        Entry3::wire_len(self)
    }
}

impl DirReplyEntry for Entryplus3 {
    fn wire_len(&self) -> usize {
        Entryplus3::wire_len(self)
    }
}

/// Turns a directory walk into a READDIR result: an entry that does not fit alone is TOOSMALL.
fn finish_dir<R>(
    r: Result<bool, VfsError>,
    empty: bool,
    d: &Node,
    ok: impl FnOnce(bool) -> Res3<R, PostOpAttr>,
) -> Res3<R, PostOpAttr> {
    match r {
        Ok(eof) if eof || !empty => ok(eof),
        Ok(_) => fail(VfsError::TooSmall, post(Some(&d.attr))),
        Err(e) => fail(e, post(Some(&d.attr))),
    }
}

fn run<A: Decode, R: Encode>(
    args: Decoder,
    reply: &mut Encoder,
    f: impl FnOnce(A) -> R,
) -> Result<(), ProcError> {
    let a = decode::<A>(args)?;
    f(a).encode(reply);
    Ok(())
}

impl Program for Nfs3 {
    fn program(&self) -> u32 {
        NFS_PROGRAM
    }

    fn versions(&self) -> (u32, u32) {
        (NFS_V3, NFS_V3)
    }

    fn proc_name(&self, _vers: u32, p: u32) -> Option<&'static str> {
        use NfsProc3::*;
        Some(match NfsProc3::try_from(p).ok()? {
            Null => "NULL",
            Getattr => "GETATTR",
            Setattr => "SETATTR",
            Lookup => "LOOKUP",
            Access => "ACCESS",
            Readlink => "READLINK",
            Read => "READ",
            Write => "WRITE",
            Create => "CREATE",
            Mkdir => "MKDIR",
            Symlink => "SYMLINK",
            Mknod => "MKNOD",
            Remove => "REMOVE",
            Rmdir => "RMDIR",
            Rename => "RENAME",
            Link => "LINK",
            Readdir => "READDIR",
            Readdirplus => "READDIRPLUS",
            Fsstat => "FSSTAT",
            Fsinfo => "FSINFO",
            Pathconf => "PATHCONF",
            Commit => "COMMIT",
        })
    }

    fn is_idempotent(&self, _vers: u32, p: u32) -> bool {
        use NfsProc3::*;
        !matches!(
            NfsProc3::try_from(p),
            Ok(Setattr | Write | Create | Mkdir | Symlink | Mknod | Remove | Rmdir | Rename | Link)
        )
    }

    fn call(&self, ctx: &CallContext, args: Decoder, r: &mut Encoder) -> Result<(), ProcError> {
        use NfsProc3::*;
        let p = NfsProc3::try_from(ctx.proc_).map_err(|_| ProcError::ProcUnavail)?;
        match p {
            Null => Ok(()),
            Getattr => run(args, r, |a| self.getattr(ctx, a)),
            Setattr => run(args, r, |a| self.setattr(ctx, a)),
            Lookup => run(args, r, |a| self.lookup(ctx, a)),
            Access => run(args, r, |a| self.access(ctx, a)),
            Readlink => run(args, r, |a| self.readlink(ctx, a)),
            Read => run(args, r, |a| self.read(ctx, a)),
            Write => run(args, r, |a| self.write(ctx, a)),
            Create => run(args, r, |a| self.create(ctx, a)),
            Mkdir => run(args, r, |a| self.mkdir(ctx, a)),
            Symlink => run(args, r, |a| self.symlink(ctx, a)),
            Mknod => run(args, r, |a| self.mknod(ctx, a)),
            Remove => run(args, r, |a: RemoveArgs| self.remove(ctx, &a.object, false)),
            Rmdir => run(args, r, |a: RmdirArgs| self.remove(ctx, &a.object, true)),
            Rename => run(args, r, |a| self.rename(ctx, a)),
            Link => run(args, r, |a| self.link(ctx, a)),
            Readdir => run(args, r, |a| self.readdir(ctx, a)),
            Readdirplus => run(args, r, |a| self.readdirplus(ctx, a)),
            Fsstat => run(args, r, |a| self.fsstat(ctx, a)),
            Fsinfo => run(args, r, |a| self.fsinfo(ctx, a)),
            Pathconf => run(args, r, |a| self.pathconf(ctx, a)),
            Commit => run(args, r, |a| self.commit(ctx, a)),
        }
    }

    /// NULL, GETATTR, ACCESS and READs up to [`vfs::nowait::READ_MAX`]: what they need is
    /// often in memory (a cached descriptor, the page cache); the backend gives up where it
    /// would wait ([`vfs::nowait`]).
    fn call_nonblocking(
        &self,
        ctx: &CallContext,
        args: Decoder,
        r: &mut Encoder,
    ) -> Option<Result<(), ProcError>> {
        use NfsProc3::*;
        match NfsProc3::try_from(ctx.proc_).ok()? {
            Null | Getattr | Access => {}
            Read => {
                let a = ReadArgs::decode(&mut args.clone()).ok()?;
                if a.count > vfs::nowait::READ_MAX {
                    return None;
                }
            }
            _ => return None,
        }
        vfs::nowait::without_blocking(|| self.call(ctx, args, r))
    }
}
