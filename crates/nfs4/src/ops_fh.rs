//! File-handle and namespace-reading operations: ACCESS, GETATTR, GETFH, LOOKUP, LOOKUPP,
//! VERIFY/NVERIFY, SETATTR, SECINFO, READLINK, READDIR.

use bytes::Bytes;
use vfs::{Attr, FileType, Node};
use xdr::Encoder;

use crate::attr::{self, Bitmap, Object};
use crate::compound::{Ctx, Fh, Nfs4, OpFail};
use crate::pseudo::{PseudoFs, PseudoId, Target};
use nfs4wire::{
    Access4args, Access4resok, Bitmap4, Dirlist4, Entry4, Fattr4, Getattr4args, Getfh4resok,
    Lookup4args, Nfsstat4, Readdir4args, Readdir4resok, Readlink4resok, Secinfo4, Secinfo4args,
    Secinfo4resok, SecinfoStyle4, Setattr4args,
};

/// ACCESS4_XAREAD (RFC 8276).
const XAREAD: u32 = 0x40;
/// ACCESS4_XAWRITE.
const XAWRITE: u32 = 0x80;
/// ACCESS4_XALIST.
const XALIST: u32 = 0x100;

/// Checks a component4: non-empty UTF-8, not `.` or `..`, no `/` or NUL, not too long.
pub fn check_name(name: &Bytes) -> Result<Bytes, OpFail> {
    if name.is_empty() {
        return Err(Nfsstat4::NFS4ERR_INVAL.into());
    }
    if std::str::from_utf8(name).is_err() {
        return Err(Nfsstat4::NFS4ERR_INVAL.into());
    }
    if name.len() > vfs::fs::NAME_MAX {
        return Err(Nfsstat4::NFS4ERR_NAMETOOLONG.into());
    }
    if &name[..] == b"." || &name[..] == b".." || name.contains(&b'/') || name.contains(&0) {
        return Err(Nfsstat4::NFS4ERR_BADNAME.into());
    }
    Ok(name.clone())
}

impl Nfs4 {
    /// The attributes `req` asks for of the object `fh`.
    pub fn attrs(&self, fh: &Fh, req: &Bitmap, ctx: &Ctx<'_>) -> Result<Fattr4, OpFail> {
        Ok(match fh {
            Fh::Pseudo(i) => {
                if self.pseudo().dir(*i).is_none() {
                    return Err(Nfsstat4::NFS4ERR_STALE.into());
                }
                let a = PseudoFs::attr(*i);
                let fhb = PseudoFs::fh(*i);
                let none = || None;
                let o = Object {
                    attr: &a,
                    fh: &fhb,
                    mounted_on_fileid: a.fileid,
                    fsstat: &none,
                    lease: self.lease_secs,
                    idmap: &self.idmap,
                    layouts: false,
                    acls: false,
                    acl: &|| Ok(Vec::new()),
                };
                attr::fattr(req, &o, ctx.minor)
            }
            Fh::Real(fhb) => {
                let (c, mut n) = self.authorized(ctx, fhb)?;
                if attr::depends_on_data(req) {
                    // a pNFS client may be writing it on the data servers
                    self.vfs.follow_remote(&mut n)?;
                }
                self.node_attrs(&n, req, ctx.minor, &c)
            }
        })
    }

    /// Whether `caller` gets pNFS layouts: this server has data servers and the client's rule
    /// says `pnfs`.
    pub fn offers_layouts(&self, caller: &vfs::Caller) -> bool {
        caller.pnfs && self.pnfs.is_some()
    }

    /// The attributes `req` asks for of a real object, as `caller` sees them (layouts and ACLs
    /// per its export rule).
    pub fn node_attrs(&self, n: &Node, req: &Bitmap, minor: u32, caller: &vfs::Caller) -> Fattr4 {
        let mounted_on = if self.vfs.is_export_root(n) {
            self.pseudo()
                .junction_fileid(&n.fh)
                .unwrap_or(n.attr.fileid)
        } else {
            n.attr.fileid
        };
        let fsstat = || self.vfs.fsstat(n).ok();
        let acl = || self.nfs4_acl(caller, n);
        let o = Object {
            attr: &n.attr,
            fh: &n.fh,
            mounted_on_fileid: mounted_on,
            fsstat: &fsstat,
            lease: self.lease_secs,
            idmap: &self.idmap,
            layouts: self.offers_layouts(caller),
            acls: self.serves_acls(caller, n),
            acl: &acl,
        };
        attr::fattr(req, &o, minor)
    }

    /// Whether `caller` is served ACLs on `n`'s export: its rule does not say `no_acl`, and
    /// the file system keeps POSIX ACLs.
    fn serves_acls(&self, caller: &vfs::Caller, n: &Node) -> bool {
        caller.acls && self.vfs.acls_supported(n)
    }

    /// The NFSv4 ACL of `n` (its POSIX ACLs, or its mode, mapped).
    fn nfs4_acl(&self, caller: &vfs::Caller, n: &Node) -> Result<Vec<crate::acl::Ace4>, Nfsstat4> {
        let dir = n.attr.ftype == FileType::Directory;
        let read = |kind| {
            self.vfs
                .get_acl(caller, n, kind)
                .map_err(crate::compound::nfsstat4)
        };
        let access = read(vfs::acl::AclKind::Access)?
            .unwrap_or_else(|| vfs::acl::PosixAcl::from_mode(n.attr.mode));
        let default = match dir {
            true => read(vfs::acl::AclKind::Default)?,
            false => None,
        };
        Ok(crate::acl::to_nfs4(&access, default.as_ref(), dir))
    }

    /// Sets an NFSv4 ACL on `n` as its POSIX access ACL and, for a directory, default ACL.
    /// What POSIX ACLs cannot hold is NFS4ERR_ATTRNOTSUPP, as from knfsd.
    pub(crate) fn set_nfs4_acl(
        &self,
        caller: &vfs::Caller,
        n: &Node,
        aces: &[crate::acl::Ace4],
    ) -> Result<(), Nfsstat4> {
        use crate::acl::MapError;
        use vfs::acl::AclKind;
        if !caller.acls {
            return Err(Nfsstat4::NFS4ERR_ATTRNOTSUPP);
        }
        let dir = n.attr.ftype == FileType::Directory;
        let (access, default) = crate::acl::from_nfs4(aces, dir).map_err(|e| match e {
            MapError::Unsupported => Nfsstat4::NFS4ERR_ATTRNOTSUPP,
            // what ext4 answers for an ACL larger than its block
            MapError::TooBig => Nfsstat4::NFS4ERR_NOSPC,
        })?;
        let status = |e| match e {
            vfs::VfsError::NotSupported => Nfsstat4::NFS4ERR_ATTRNOTSUPP,
            e => crate::compound::nfsstat4(e),
        };
        self.vfs
            .set_acl(caller, n, AclKind::Access, Some(&access))
            .map_err(status)?;
        if dir {
            self.vfs
                .set_acl(caller, n, AclKind::Default, default.as_ref())
                .map_err(status)?;
        }
        Ok(())
    }

    pub(crate) fn getattr(&self, ctx: &mut Ctx<'_>, a: Getattr4args) -> Result<Fattr4, OpFail> {
        let req = Bitmap::from(a.attr_request);
        let fh = ctx.cur()?.clone();
        if attr::has_write_only(&req) {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        if let Fh::Real(_) = fh {
            if self
                .write_delegations
                .load(std::sync::atomic::Ordering::Relaxed)
                > 0
                && attr::depends_on_data(&req)
            {
                if let Some((c, n)) = self.getattr_of_write_delegated(ctx)? {
                    return Ok(self.node_attrs(&n, &req, ctx.minor, &c));
                }
            }
        }
        self.attrs(&fh, &req, ctx)
    }

    /// Before another client is told a file's size or change attribute: a write delegation's
    /// holder may have changed the file without writing it yet. It is asked (CB_GETATTR);
    /// when it reports changes, the file is shown with its size and a modify and change time
    /// just past the file's (a change attribute that moves with each change it reports), as
    /// RFC 8881 section 10.4.3 describes. None: the file as it is.
    fn getattr_of_write_delegated(
        &self,
        ctx: &mut Ctx<'_>,
    ) -> Result<Option<(vfs::Caller, Node)>, OpFail> {
        let (c, mut n) = self.real(ctx)?;
        let file = crate::ops_file::file_key(&n);
        let client = ctx.clientid.unwrap_or(u64::MAX);
        if !self.others_write_delegated(file, client) {
            return Ok(None);
        }
        // asking the holder waits: not on a thread that must not
        if vfs::nowait::active() {
            return Err(vfs::nowait::give_up().into());
        }
        let Some((size, shown)) =
            self.attrs_under_write_delegation(n.file_id(), &n.attr, client)?
        else {
            return Ok(None);
        };
        n.attr.size = size;
        n.attr.mtime = n.attr.mtime.max(shown);
        n.attr.ctime = n.attr.ctime.max(shown);
        Ok(Some((c, n)))
    }

    pub(crate) fn getfh(&self, ctx: &mut Ctx<'_>) -> Result<Getfh4resok, OpFail> {
        let object = match ctx.cur()? {
            Fh::Pseudo(i) => PseudoFs::fh(*i),
            Fh::Real(_) => self.real(ctx)?.1.fh,
        };
        Ok(Getfh4resok { object })
    }

    pub(crate) fn access(&self, ctx: &mut Ctx<'_>, a: Access4args) -> Result<Access4resok, OpFail> {
        let mask = a.access;
        // 0x40..0x100 are the RFC 8276 extended-attribute bits the 4.2 client asks for.
        if mask & !0x1ff != 0 {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        // `all`: the read/modify rights too, from which the extended-attribute bits follow.
        let (all, is_dir) = match ctx.cur()? {
            Fh::Pseudo(_) => (mask & (vfs::access::READ | vfs::access::LOOKUP), true),
            Fh::Real(_) => {
                let (c, n) = self.real(ctx)?;
                let want = (mask & 0x3f) | vfs::access::READ | vfs::access::MODIFY;
                (
                    self.vfs.access(&c, &n, want),
                    n.attr.ftype == FileType::Directory,
                )
            }
        };
        let mut granted = all & mask & 0x3f;
        // Only the bits meaningful for the object type count as supported.
        let mut meaningful = if is_dir {
            0x1f
        } else {
            vfs::access::READ | vfs::access::MODIFY | vfs::access::EXTEND | vfs::access::EXECUTE
        };
        // XAREAD / XALIST follow read permission, XAWRITE write permission (RFC 8276 8.4.1).
        if ctx.minor >= 2 {
            meaningful |= XAREAD | XAWRITE | XALIST;
            if all & vfs::access::READ != 0 {
                granted |= (XAREAD | XALIST) & mask;
            }
            if all & vfs::access::MODIFY != 0 {
                granted |= XAWRITE & mask;
            }
        }
        Ok(Access4resok {
            supported: mask & meaningful,
            access: granted & meaningful,
        })
    }

    pub(crate) fn lookup(&self, ctx: &mut Ctx<'_>, a: Lookup4args) -> Result<(), OpFail> {
        let cur = ctx.cur()?.clone();
        let name = a.objname;
        match cur {
            Fh::Pseudo(i) => {
                let name = check_name(&name)?;
                match self.pseudo().lookup(i, &name) {
                    Some(Target::Pseudo(j)) => ctx.set_cur(Some(Fh::Pseudo(j))),
                    Some(Target::Export(fh)) => {
                        // Crossing into an export needs the export's permission.
                        let (c, n) = self.vfs.authorize(&fh, &ctx.client)?;
                        ctx.set_cur_node(c, n);
                    }
                    None => return Err(Nfsstat4::NFS4ERR_NOENT.into()),
                }
            }
            Fh::Real(_) => {
                let (c, n) = self.real(ctx)?;
                match n.attr.ftype {
                    FileType::Directory => {}
                    FileType::Symlink => return Err(Nfsstat4::NFS4ERR_SYMLINK.into()),
                    _ => return Err(Nfsstat4::NFS4ERR_NOTDIR.into()),
                }
                let name = check_name(&name)?;
                let found = self.vfs.lookup(&c, &n, &name)?;
                ctx.set_cur_node(c, found);
            }
        }
        Ok(())
    }

    pub(crate) fn lookupp(&self, ctx: &mut Ctx<'_>) -> Result<(), OpFail> {
        match ctx.cur()?.clone() {
            Fh::Pseudo(i) => {
                if i == PseudoId::ROOT {
                    return Err(Nfsstat4::NFS4ERR_NOENT.into());
                }
                let parent = self.pseudo().dir(i).map(|d| d.parent);
                ctx.set_cur(Some(Fh::Pseudo(parent.ok_or(Nfsstat4::NFS4ERR_STALE)?)));
            }
            Fh::Real(_) => {
                let (c, n) = self.real(ctx)?;
                match n.attr.ftype {
                    FileType::Directory => {}
                    FileType::Symlink => return Err(Nfsstat4::NFS4ERR_SYMLINK.into()),
                    _ => return Err(Nfsstat4::NFS4ERR_NOTDIR.into()),
                }
                if self.vfs.is_export_root(&n) {
                    let parent = self.pseudo().parent_of_export(&n.fh);
                    match parent {
                        Some(p) => ctx.set_cur(Some(Fh::Pseudo(p))),
                        None => return Err(Nfsstat4::NFS4ERR_NOENT.into()),
                    }
                } else {
                    let found = self.vfs.lookup(&c, &n, b"..")?;
                    ctx.set_cur_node(c, found);
                }
            }
        }
        Ok(())
    }

    /// VERIFY (`want_same`) and NVERIFY.
    pub(crate) fn verify(
        &self,
        ctx: &mut Ctx<'_>,
        f: Fattr4,
        want_same: bool,
    ) -> Result<(), OpFail> {
        let bm = Bitmap::from(f.attrmask);
        let fh = ctx.cur()?.clone();
        let sup = attr::supported(ctx.minor);
        for b in bm.bits() {
            if !sup.has(b) {
                return Err(Nfsstat4::NFS4ERR_ATTRNOTSUPP.into());
            }
            if b == nfs4wire::FATTR4_RDATTR_ERROR || attr::write_only(b) {
                return Err(Nfsstat4::NFS4ERR_INVAL.into());
            }
        }
        let have = self.attrs(&fh, &bm, ctx)?;
        // an attribute this object does not have (ACLs where none are served)
        if Bitmap::from(have.attrmask) != Bitmap(bm.clone().into_wire()) {
            return Err(Nfsstat4::NFS4ERR_ATTRNOTSUPP.into());
        }
        // only the values are compared
        let same = have.attr_vals == f.attr_vals;
        match (same, want_same) {
            (true, true) | (false, false) => Ok(()),
            (false, true) => Err(Nfsstat4::NFS4ERR_NOT_SAME.into()),
            (true, false) => Err(Nfsstat4::NFS4ERR_SAME.into()),
        }
    }

    /// SETATTR; its result is the attrsset bitmap, empty when it fails.
    pub(crate) fn setattr(&self, ctx: &mut Ctx<'_>, a: Setattr4args) -> Result<Bitmap4, OpFail> {
        let attrsset_fail = |status: Nfsstat4| OpFail::with_body(status, &Bitmap4::new());
        let sid = self
            .stateid(ctx, a.stateid)
            .map_err(|f| attrsset_fail(f.status))?;
        let sattr =
            attr::decode_sattr(&a.obj_attributes, ctx.minor, &self.idmap).map_err(attrsset_fail)?;
        if sattr.set.umask.is_some() {
            // mode_umask belongs to creates; knfsd's decoder refuses it elsewhere
            return Err(attrsset_fail(Nfsstat4::NFS4ERR_BADXDR));
        }
        let s = &sattr.set;
        let (c, n) = match ctx.cur() {
            Ok(Fh::Pseudo(_)) => return Err(attrsset_fail(Nfsstat4::NFS4ERR_ROFS)),
            Ok(Fh::Real(_)) => self.real(ctx).map_err(|f| attrsset_fail(f.status))?,
            Err(f) => return Err(attrsset_fail(f.status)),
        };
        if let Some(size) = s.size {
            if n.attr.ftype == FileType::Directory {
                return Err(attrsset_fail(Nfsstat4::NFS4ERR_ISDIR));
            }
            if n.attr.ftype != FileType::Regular {
                return Err(attrsset_fail(Nfsstat4::NFS4ERR_INVAL));
            }
            self.check_io_stateid(ctx, &sid, &n, true, size.min(n.attr.size), u64::MAX)
                .map_err(|f| attrsset_fail(f.status))?;
            // pNFS clients writing to the data servers stop first
            self.recall_layouts(ctx.clientid.unwrap_or(u64::MAX), &n)
                .map_err(|f| attrsset_fail(f.status))?;
        }
        // Any attribute another client changes is one a delegation holder may have cached.
        self.recall_before_change(ctx, n.file_id())
            .map_err(|f| attrsset_fail(f.status))?;
        self.vfs
            .setattr(&c, &n, s, None)
            .map_err(|e| attrsset_fail(crate::compound::nfsstat4(e)))?;
        if let Some(aces) = &sattr.acl {
            self.set_nfs4_acl(&c, &n, aces).map_err(attrsset_fail)?;
        }
        Ok(sattr.bits.into_wire())
    }

    pub(crate) fn secinfo(
        &self,
        ctx: &mut Ctx<'_>,
        a: Secinfo4args,
    ) -> Result<Secinfo4resok, OpFail> {
        let name = check_name(&a.name)?;
        let flavors = match ctx.cur()?.clone() {
            Fh::Pseudo(i) => match self.pseudo().lookup(i, &name) {
                None => return Err(Nfsstat4::NFS4ERR_NOENT.into()),
                Some(Target::Export(fh)) => self.flavors(ctx, &fh)?,
                Some(Target::Pseudo(_)) => self.pseudo_flavors(ctx),
            },
            Fh::Real(fh) => {
                match self.real(ctx) {
                    Ok((c, n)) => {
                        if n.attr.ftype != FileType::Directory {
                            return Err(Nfsstat4::NFS4ERR_NOTDIR.into());
                        }
                        self.vfs.lookup(&c, &n, &name)?;
                    }
                    // SECINFO is how a client learns the flavors: it answers whatever flavor
                    // it came with (RFC 8881 section 2.6.3.1.1)
                    Err(e) if e.status == Nfsstat4::NFS4ERR_WRONGSEC => {}
                    Err(e) => return Err(e),
                }
                self.flavors(ctx, &fh)?
            }
        };
        if ctx.minor >= 1 {
            ctx.set_cur(None);
        }
        Ok(flavors)
    }

    /// The flavors the export of `fh` takes from the caller, as SECINFO lists them.
    fn flavors(&self, ctx: &Ctx<'_>, fh: &Bytes) -> Result<Secinfo4resok, OpFail> {
        let n = self.vfs.resolve(fh)?;
        Ok(self
            .vfs
            .flavors(&n, &ctx.client)?
            .into_iter()
            .map(secinfo)
            .collect())
    }

    /// What SECINFO lists in the pseudo file system: the flavors of the exports it leads to.
    fn pseudo_flavors(&self, ctx: &Ctx<'_>) -> Secinfo4resok {
        self.vfs
            .all_flavors(&ctx.client)
            .into_iter()
            .map(secinfo)
            .collect()
    }

    pub(crate) fn secinfo_no_name(
        &self,
        ctx: &mut Ctx<'_>,
        style: SecinfoStyle4,
    ) -> Result<Secinfo4resok, OpFail> {
        let cur = ctx.cur()?.clone();
        if style == SecinfoStyle4::SecinfoStyle4Parent {
            match &cur {
                Fh::Pseudo(PseudoId::ROOT) => return Err(Nfsstat4::NFS4ERR_NOENT.into()),
                Fh::Real(fh) => {
                    let n = self.vfs.resolve(fh)?;
                    if n.attr.ftype != FileType::Directory {
                        return Err(Nfsstat4::NFS4ERR_NOTDIR.into());
                    }
                }
                Fh::Pseudo(_) => {}
            }
        }
        let flavors = match &cur {
            Fh::Real(fh) => self.flavors(ctx, fh)?,
            Fh::Pseudo(_) => self.pseudo_flavors(ctx),
        };
        ctx.set_cur(None);
        Ok(flavors)
    }

    pub(crate) fn readlink(&self, ctx: &mut Ctx<'_>) -> Result<Readlink4resok, OpFail> {
        let (c, n) = match ctx.cur()? {
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_INVAL.into()),
            Fh::Real(_) => self.real(ctx)?,
        };
        if n.attr.ftype != FileType::Symlink {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        Ok(Readlink4resok {
            link: self.vfs.readlink(&c, &n)?,
        })
    }

    pub(crate) fn readdir(
        &self,
        ctx: &mut Ctx<'_>,
        a: Readdir4args,
    ) -> Result<Readdir4resok, OpFail> {
        let cookie = a.cookie;
        let verf = a.cookieverf;
        let maxcount = (ctx.cap_reply(a.maxcount) as usize).min(1 << 20);
        let req = Bitmap::from(a.attr_request);
        if cookie == 1 || cookie == 2 {
            return Err(Nfsstat4::NFS4ERR_BAD_COOKIE.into());
        }
        if attr::has_write_only(&req) {
            return Err(Nfsstat4::NFS4ERR_INVAL.into());
        }
        // Not even room for the verifier and an empty list.
        if maxcount < 8 + 4 + 4 {
            return Err(Nfsstat4::NFS4ERR_TOOSMALL.into());
        }
        // status already counted; verifier, end-of-list word and eof.
        let mut used = 8 + 4 + 4 + 16;
        let mut entries: Vec<Entry4> = Vec::new();
        let mut push = |e: &mut Vec<Entry4>, cookie: u64, name: &Bytes, attrs: Fattr4| -> bool {
            let len = 4
                + 8
                + 4
                + xdr::pad4(name.len())
                + 4
                + 4 * attrs.attrmask.len()
                + 4
                + xdr::pad4(attrs.attr_vals.len());
            if used + len > maxcount {
                return false;
            }
            used += len;
            e.push(Entry4 {
                cookie,
                name: name.clone(),
                attrs,
            });
            true
        };
        let (eof, out_verf) = match ctx.cur()?.clone() {
            Fh::Pseudo(i) => {
                let pseudo = self.pseudo();
                let dir = pseudo.dir(i).ok_or(Nfsstat4::NFS4ERR_STALE)?;
                let start = if cookie == 0 {
                    0
                } else {
                    (cookie - 2) as usize
                };
                if cookie != 0 && verf != [0; 8] && verf != pseudo_verifier() {
                    return Err(Nfsstat4::NFS4ERR_NOT_SAME.into());
                }
                let mut eof = true;
                for (k, (name, t)) in dir.children.iter().enumerate().skip(start) {
                    let fh = match t {
                        Target::Pseudo(j) => Fh::Pseudo(*j),
                        Target::Export(fh) => Fh::Real(fh.clone()),
                    };
                    let a = match self.attrs(&fh, &req, ctx) {
                        Ok(a) => a,
                        Err(_) => rdattr_error(&req, Nfsstat4::NFS4ERR_ACCESS)?,
                    };
                    if !push(&mut entries, k as u64 + 3, name, a) {
                        eof = false;
                        break;
                    }
                }
                (eof, pseudo_verifier())
            }
            Fh::Real(_) => {
                let (c, n) = self.real(ctx)?;
                match n.attr.ftype {
                    FileType::Directory => {}
                    FileType::Symlink => return Err(Nfsstat4::NFS4ERR_SYMLINK.into()),
                    _ => return Err(Nfsstat4::NFS4ERR_NOTDIR.into()),
                }
                if cookie != 0 && verf != [0; 8] && verf != self.vfs.cookie_verifier(&n) {
                    return Err(Nfsstat4::NFS4ERR_NOT_SAME.into());
                }
                let minor = ctx.minor;
                let mut err = None;
                // every entry's attribute values in one buffer
                let mut vals = Encoder::with_capacity(maxcount);
                let eof = self
                    .vfs
                    .readdir(&c, &n, cookie, [0; 8], true, maxcount / 120 + 1, |ent| {
                        if &ent.name[..] == b"." || &ent.name[..] == b".." {
                            return true;
                        }
                        let a = match &ent.plus {
                            Some((fh, attr)) => {
                                self.entry_attrs(&n, fh, attr, &req, (minor, &c), &mut vals)
                            }
                            None => match rdattr_error(&req, Nfsstat4::NFS4ERR_ACCESS) {
                                Ok(a) => a,
                                Err(f) => {
                                    err = Some(f);
                                    return false;
                                }
                            },
                        };
                        push(&mut entries, ent.cookie, &ent.name, a)
                    })
                    .map_err(OpFail::from)?;
                if let Some(f) = err {
                    return Err(f);
                }
                (eof, self.vfs.cookie_verifier(&n))
            }
        };
        if entries.is_empty() && !eof {
            return Err(Nfsstat4::NFS4ERR_TOOSMALL.into());
        }
        Ok(Readdir4resok {
            cookieverf: out_verf,
            reply: Dirlist4 { entries, eof },
        })
    }
}

impl Nfs4 {
    /// fattr4 of an entry of `dir` from the attributes READDIR read with its handle: the
    /// entry is resolved (an open by handle and a stat more) only when a file-system
    /// attribute such as space_avail is asked for, which the Linux client's READDIR does not.
    /// `vals` takes the encoded values (see [`attr::fattr_in`]); `(minor, layouts)`: the minor
    /// version and whether layouts are offered.
    fn entry_attrs(
        &self,
        dir: &Node,
        fh: &Bytes,
        attr: &Attr,
        req: &Bitmap,
        (minor, caller): (u32, &vfs::Caller),
        vals: &mut Encoder,
    ) -> Fattr4 {
        let mounted_on = if self.vfs.is_export_root_attr(dir, attr) {
            self.pseudo().junction_fileid(fh).unwrap_or(attr.fileid)
        } else {
            attr.fileid
        };
        let fsstat = || {
            let n = self.vfs.resolve(fh).ok()?;
            self.vfs.fsstat(&n).ok()
        };
        let acl = || {
            let n = self.vfs.resolve(fh).map_err(crate::compound::nfsstat4)?;
            self.nfs4_acl(caller, &n)
        };
        let o = Object {
            attr,
            fh,
            mounted_on_fileid: mounted_on,
            fsstat: &fsstat,
            lease: self.lease_secs,
            idmap: &self.idmap,
            layouts: self.offers_layouts(caller),
            // the entry is on its directory's export
            acls: self.serves_acls(caller, dir),
            acl: &acl,
        };
        attr::fattr_in(req, &o, minor, vals)
    }
}

/// The attributes of an entry that cannot be read: only rdattr_error, when asked for.
fn rdattr_error(req: &Bitmap, status: Nfsstat4) -> Result<Fattr4, OpFail> {
    if !req.has(nfs4wire::FATTR4_RDATTR_ERROR) {
        return Err(status.into());
    }
    let mut v = Encoder::new();
    v.encode(&status);
    Ok(Fattr4 {
        attrmask: Bitmap::of(&[nfs4wire::FATTR4_RDATTR_ERROR]).into_wire(),
        attr_vals: v.finish().to_bytes(),
    })
}

fn pseudo_verifier() -> [u8; 8] {
    *b"rnfspsfs"
}

/// The Kerberos V5 mechanism's OID (1.2.840.113554.1.2.2), DER contents without tag and
/// length, as knfsd and the Linux client give it in SECINFO.
const KRB5_OID: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02];

/// One flavor as SECINFO lists it.
fn secinfo(f: vfs::exports::SecFlavor) -> Secinfo4 {
    use vfs::exports::SecFlavor as F;
    let gss = |service| {
        Secinfo4::RpcsecGss(nfs4wire::RpcsecGssInfo {
            oid: Bytes::from_static(KRB5_OID),
            qop: 0,
            service,
        })
    };
    match f {
        F::Sys => Secinfo4::Default(nfs4wire::AUTH_SYS),
        F::None => Secinfo4::Default(nfs4wire::AUTH_NONE),
        F::Krb5 => gss(nfs4wire::RpcGssSvcT::RpcGssSvcNone),
        F::Krb5i => gss(nfs4wire::RpcGssSvcT::RpcGssSvcIntegrity),
        F::Krb5p => gss(nfs4wire::RpcGssSvcT::RpcGssSvcPrivacy),
    }
}
