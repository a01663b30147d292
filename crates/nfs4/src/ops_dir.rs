//! Namespace-changing operations: CREATE, REMOVE, RENAME, LINK.

use vfs::{FileType, Node, SetAttrs, SpecialFile};
use xdr::{Decoder, Encoder};

use crate::attr;
use crate::compound::{Ctx, Fh, Nfs4, OpFail, OpResult};
use crate::ops_fh::component;
use nfs4wire::{NfsFtype4, Nfsstat4};

/// Encodes change_info4 from directory attributes before and after.
pub fn change_info(e: &mut Encoder, before: &vfs::Attr, after: Option<&vfs::Attr>) {
    e.bool(false);
    e.u64(attr::change(before));
    e.u64(after.map_or(attr::change(before), attr::change));
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

    pub(crate) fn create(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        // an unknown type is BADTYPE (RFC 8881 section 18.4.3), not a decoding failure
        let t = NfsFtype4::from_i32(d.i32()?);
        let kind = match t {
            Some(NfsFtype4::Nf4lnk) => Kind::Link(d.opaque(4096)?),
            Some(t @ (NfsFtype4::Nf4blk | NfsFtype4::Nf4chr)) => {
                let ma = d.u32()?;
                let mi = d.u32()?;
                Kind::Special(if t == NfsFtype4::Nf4blk {
                    SpecialFile::Block(ma, mi)
                } else {
                    SpecialFile::Char(ma, mi)
                })
            }
            Some(NfsFtype4::Nf4sock) => Kind::Special(SpecialFile::Socket),
            Some(NfsFtype4::Nf4fifo) => Kind::Special(SpecialFile::Fifo),
            Some(NfsFtype4::Nf4dir) => Kind::Dir,
            _ => return Err(Nfsstat4::NFS4ERR_BADTYPE.into()),
        };
        let name = component(d)?;
        let (s, bm) = attr::decode_sattr(d, ctx.minor, &self.idmap)?;
        let (c, dir) = self.cur_dir(ctx)?;
        if let Kind::Link(target) = &kind {
            if target.is_empty() {
                return Err(Nfsstat4::NFS4ERR_INVAL.into());
            }
        }
        let s = SetAttrs { size: None, ..s };
        let (fh, _) = match kind {
            Kind::Link(target) => self.vfs.symlink(&c, &dir, &name, &target, &s)?,
            Kind::Dir => self.vfs.mkdir(&c, &dir, &name, &s)?,
            Kind::Special(k) => self.vfs.mknod(&c, &dir, &name, k, &s)?,
        };
        let after = self.vfs.getattr(&dir).ok();
        ctx.cur = Some(Fh::Real(fh));
        let mut e = Encoder::new();
        change_info(&mut e, &dir.attr, after.as_ref());
        bm.encode(&mut e);
        Ok(e)
    }

    pub(crate) fn remove(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let name = component(d)?;
        let (c, dir) = self.cur_dir(ctx)?;
        // what is removed: a directory or not, and whose delegations to recall
        let a = self.vfs.entry_attr(&c, &dir, &name)?;
        self.recall_before_name_change(ctx, &c, &dir, &name)?;
        self.vfs
            .remove(&c, &dir, &name, a.ftype == FileType::Directory)?;
        let after = self.vfs.getattr(&dir).ok();
        let mut e = Encoder::new();
        change_info(&mut e, &dir.attr, after.as_ref());
        Ok(e)
    }

    pub(crate) fn rename(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let old = d.opaque(crate::ops_fh::MAX_COMPONENT)?;
        let new = d.opaque(crate::ops_fh::MAX_COMPONENT)?;
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
        let old = crate::ops_fh::check_name(&old)?;
        let new = crate::ops_fh::check_name(&new)?;
        // the file renamed, and the one the new name replaces
        for (dir, name) in [(&from, &old), (&to, &new)] {
            self.recall_before_name_change(ctx, &c, dir, name)?;
        }
        self.vfs.rename(&c, &from, &old, &to, &new)?;
        let fa = self.vfs.getattr(&from).ok();
        let ta = self.vfs.getattr(&to).ok();
        let mut e = Encoder::new();
        change_info(&mut e, &from.attr, fa.as_ref());
        change_info(&mut e, &to.attr, ta.as_ref());
        Ok(e)
    }

    pub(crate) fn link(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let name = d.opaque(crate::ops_fh::MAX_COMPONENT)?;
        let saved = ctx
            .saved
            .clone()
            .ok_or(OpFail::from(Nfsstat4::NFS4ERR_NOFILEHANDLE))?;
        ctx.cur()?;
        let (c, dir) = self.cur_dir(ctx)?;
        let name = crate::ops_fh::check_name(&name)?;
        let src = match saved {
            Fh::Pseudo(_) => return Err(Nfsstat4::NFS4ERR_XDEV.into()),
            Fh::Real(fh) => self.vfs.authorize(&fh, &ctx.client)?.1,
        };
        if src.attr.ftype == FileType::Directory {
            return Err(Nfsstat4::NFS4ERR_ISDIR.into());
        }
        self.recall_before_change(ctx, src.file_id())?;
        self.vfs.link(&c, &src, &dir, &name)?;
        let after = self.vfs.getattr(&dir).ok();
        let mut e = Encoder::new();
        change_info(&mut e, &dir.attr, after.as_ref());
        Ok(e)
    }
}

enum Kind {
    Link(bytes::Bytes),
    Dir,
    Special(SpecialFile),
}
