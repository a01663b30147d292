//! Extended attributes (RFC 8276): GETXATTR, SETXATTR, LISTXATTRS, REMOVEXATTR on `user.*`.

use vfs::VfsError;
use xdr::{Decoder, Encoder};

use crate::compound::{nfsstat4, Ctx, Fh, Nfs4, OpFail, OpResult};
use crate::ops_dir::change_info;
use nfs4wire::Nfsstat4;

/// Maps backend errors, with ENODATA meaning "no such attribute".
fn xerr(e: VfsError) -> OpFail {
    match e {
        VfsError::Errno(libc::ENODATA) => Nfsstat4::NFS4ERR_NOXATTR.into(),
        VfsError::Errno(libc::E2BIG) | VfsError::Errno(libc::ERANGE) => {
            Nfsstat4::NFS4ERR_XATTR2BIG.into()
        }
        VfsError::Errno(libc::ENOTSUP) => Nfsstat4::NFS4ERR_NOTSUPP.into(),
        e => nfsstat4(e).into(),
    }
}

fn key(d: &mut Decoder) -> Result<bytes::Bytes, OpFail> {
    let k = d.opaque(crate::ops_fh::MAX_COMPONENT)?;
    if k.is_empty() || std::str::from_utf8(&k).is_err() {
        return Err(Nfsstat4::NFS4ERR_INVAL.into());
    }
    if k.len() > vfs::fs::NAME_MAX {
        return Err(Nfsstat4::NFS4ERR_NAMETOOLONG.into());
    }
    Ok(k)
}

impl Nfs4 {
    fn xattr_node(&self, ctx: &Ctx<'_>) -> Result<(vfs::Caller, vfs::Node), OpFail> {
        match ctx.cur()? {
            Fh::Pseudo(_) => Err(Nfsstat4::NFS4ERR_NOTSUPP.into()),
            Fh::Real(_) => self.real(ctx),
        }
    }

    pub(crate) fn getxattr(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let k = key(d)?;
        let (c, n) = self.xattr_node(ctx)?;
        let v = self.vfs.getxattr(&c, &n, &k).map_err(xerr)?;
        let mut e = Encoder::new();
        e.opaque(&v);
        Ok(e)
    }

    pub(crate) fn setxattr(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let option = d.u32()?;
        let k = key(d)?;
        let v = d.opaque(vfs::fs::XATTR_SIZE_MAX + 1)?;
        if v.len() > vfs::fs::XATTR_SIZE_MAX {
            return Err(Nfsstat4::NFS4ERR_XATTR2BIG.into());
        }
        let flags = match option {
            0 => 0,
            1 => libc::XATTR_CREATE,
            2 => libc::XATTR_REPLACE,
            _ => return Err(Nfsstat4::NFS4ERR_INVAL.into()),
        };
        let (c, n) = self.xattr_node(ctx)?;
        self.vfs.setxattr(&c, &n, &k, &v, flags).map_err(xerr)?;
        let after = self.vfs.getattr(&n).ok();
        let mut e = Encoder::new();
        change_info(&mut e, &n.attr, after.as_ref());
        Ok(e)
    }

    pub(crate) fn listxattrs(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let cookie = d.u64()?;
        let maxcount = d.u32()? as usize;
        let (c, n) = self.xattr_node(ctx)?;
        let names = self.vfs.listxattrs(&c, &n).map_err(xerr)?;
        if cookie as usize > names.len() {
            return Err(Nfsstat4::NFS4ERR_BAD_COOKIE.into());
        }
        let mut used = 8 + 4 + 4;
        let mut out = Vec::new();
        let mut next = cookie as usize;
        for name in names.iter().skip(cookie as usize) {
            let len = 4 + xdr::pad4(name.len());
            if used + len > maxcount {
                break;
            }
            used += len;
            out.push(name.clone());
            next += 1;
        }
        if out.is_empty() && next < names.len() {
            return Err(Nfsstat4::NFS4ERR_TOOSMALL.into());
        }
        let mut e = Encoder::new();
        e.u64(next as u64);
        e.u32(out.len() as u32);
        for n in &out {
            e.opaque(n);
        }
        e.bool(next >= names.len());
        Ok(e)
    }

    pub(crate) fn removexattr(&self, ctx: &mut Ctx<'_>, d: &mut Decoder) -> OpResult {
        let k = key(d)?;
        let (c, n) = self.xattr_node(ctx)?;
        self.vfs.removexattr(&c, &n, &k).map_err(xerr)?;
        let after = self.vfs.getattr(&n).ok();
        let mut e = Encoder::new();
        change_info(&mut e, &n.attr, after.as_ref());
        Ok(e)
    }
}
