//! Namespace-changing operations: CREATE, REMOVE, RENAME, LINK.

use vfs::{DirChange, FileType, Node, SetAttrs, SpecialFile};

use crate::attr;
use crate::compound::{Ctx, Fh, Nfs4, OpFail};
use crate::ops_fh::check_name;
use nfs4wire::{
    ChangeInfo4, Create4args, Create4resok, Createtype4, Link4args, Link4resok, Nfsstat4,
    Remove4args, Remove4resok, Rename4args, Rename4resok,
};

/// change_info4 of an object from its attributes before and after a change, taken apart
/// from it (not atomic: another change may lie between them).
pub fn change_info(before: &vfs::Attr, after: Option<&vfs::Attr>) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: false,
        before: attr::change(before),
        after: after.map_or(attr::change(before), attr::change),
    }
}

/// change_info4 of a directory's [`vfs::DirChange`]: atomic, as no other
/// change through this server came between its attributes.
pub fn dir_change_info<T>(c: &DirChange<T>) -> ChangeInfo4 {
    ChangeInfo4 {
        atomic: true,
        before: attr::change(&c.before),
        after: attr::change(&c.after),
    }
}

impl Nfs4 {
    /// The current handle as a real directory (pseudo directories are read-only).
    pub(crate) fn cur_dir(&self, ctx: &Ctx<'_>) -> Result<(vfs::Caller, Node), OpFail> {
        let (c, n) = match ctx.cur()? {
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_ROFS.into()),
            Fh::Real(_) => self.real(ctx)?,
        };
        match n.attr.ftype {
            FileType::Directory => Ok((c, n)),
            _ => Err(Nfsstat4::NFS4ERR_NOTDIR.into()),
        }
    }

    pub(crate) fn create(&self, ctx: &mut Ctx<'_>, a: Create4args) -> Result<Create4resok, OpFail> {
        let kind = match a.objtype {
            Createtype4::Nf4lnk(target) => Kind::Link(target),
            Createtype4::Nf4blk(d) => Kind::Special(SpecialFile::Block(d.specdata1, d.specdata2)),
            Createtype4::Nf4chr(d) => Kind::Special(SpecialFile::Char(d.specdata1, d.specdata2)),
            Createtype4::Nf4sock => Kind::Special(SpecialFile::Socket),
            Createtype4::Nf4fifo => Kind::Special(SpecialFile::Fifo),
            Createtype4::Nf4dir => Kind::Dir,
            // regular files are made by OPEN, named attributes are not supported
            Createtype4::Default(_) => return Err(Nfsstat4::NFS4ERR_BADTYPE.into()),
        };
        let name = check_name(&a.objname)?;
        let sattr = attr::decode_sattr(&a.createattrs, ctx.minor, &self.idmap)?;
        let (c, dir) = self.cur_dir(ctx)?;
        if let Kind::Link(target) = &kind {
            if target.is_empty() {
                return Err(Nfsstat4::NFS4ERR_INVAL.into());
            }
        }
        let s = SetAttrs {
            size: None,
            ..sattr.set
        };
        let made = match kind {
            Kind::Link(target) => self.vfs.symlink(&c, &dir, &name, &target, &s),
            Kind::Dir => self.vfs.mkdir(&c, &dir, &name, &s),
            Kind::Special(k) => self.vfs.mknod(&c, &dir, &name, k, &s),
        }?;
        if let Some(aces) = &sattr.acl {
            let node = self.vfs.resolve(&made.value.0)?;
            self.set_nfs4_acl(&c, &node, aces)?;
        }
        ctx.set_cur(Some(Fh::Real(made.value.0.clone())));
        Ok(Create4resok {
            cinfo: dir_change_info(&made),
            attrset: sattr.bits.into_wire(),
        })
    }

    pub(crate) fn remove(&self, ctx: &mut Ctx<'_>, a: Remove4args) -> Result<Remove4resok, OpFail> {
        let name = check_name(&a.target)?;
        let (c, dir) = self.cur_dir(ctx)?;
        // what is removed: a directory or not, and whose delegations to recall
        let a = self.vfs.entry_attr(&c, &dir, &name)?;
        self.recall_before_name_change(ctx, &c, &dir, &name)?;
        let removed = self
            .vfs
            .remove(&c, &dir, &name, a.ftype == FileType::Directory)?;
        Ok(Remove4resok {
            cinfo: dir_change_info(&removed),
        })
    }

    pub(crate) fn rename(&self, ctx: &mut Ctx<'_>, a: Rename4args) -> Result<Rename4resok, OpFail> {
        let saved = ctx
            .saved
            .clone()
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_NOFILEHANDLE))?;
        ctx.cur()?;
        let (c, to) = self.cur_dir(ctx)?;
        let from = match saved {
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_XDEV.into()),
            Fh::Real(fh) => self.vfs.authorize(&fh, &ctx.client)?.1,
        };
        if from.attr.ftype != FileType::Directory {
            return Err(Nfsstat4::NFS4ERR_NOTDIR.into());
        }
        let old = check_name(&a.oldname)?;
        let new = check_name(&a.newname)?;
        // the file renamed, and the one the new name replaces
        for (dir, name) in [(&from, &old), (&to, &new)] {
            self.recall_before_name_change(ctx, &c, dir, name)?;
        }
        let (source, target) = self.vfs.rename(&c, &from, &old, &to, &new)?;
        Ok(Rename4resok {
            source_cinfo: dir_change_info(&source),
            target_cinfo: dir_change_info(&target),
        })
    }

    pub(crate) fn link(&self, ctx: &mut Ctx<'_>, a: Link4args) -> Result<Link4resok, OpFail> {
        let saved = ctx
            .saved
            .clone()
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_NOFILEHANDLE))?;
        ctx.cur()?;
        let (c, dir) = self.cur_dir(ctx)?;
        let name = check_name(&a.newname)?;
        let src = match saved {
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_XDEV.into()),
            Fh::Real(fh) => self.vfs.authorize(&fh, &ctx.client)?.1,
        };
        if src.attr.ftype == FileType::Directory {
            return Err(Nfsstat4::NFS4ERR_ISDIR.into());
        }
        self.recall_before_change(ctx, src.file_id())?;
        let linked = self.vfs.link(&c, &src, &dir, &name)?;
        Ok(Link4resok {
            cinfo: dir_change_info(&linked),
        })
    }
}

enum Kind {
    Link(bytes::Bytes),
    Dir,
    Special(SpecialFile),
}
