//! Extended attributes (RFC 8276): GETXATTR, SETXATTR, LISTXATTRS, REMOVEXATTR on `user.*`.

use bytes::Bytes;
use vfs::VfsError;

use crate::compound::{nfsstat4, Ctx, Encoded, Fh, Nfs4, OpFail};
use crate::ops_dir::change_info;
use nfs4wire::{
    ChangeInfo4, Getxattr4args, Listxattrs4args, Listxattrs4resok, Nfsstat4, Removexattr4args,
    Setxattr4args, SetxattrOption4,
};

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

/// Checks an xattr name: UTF-8, not empty, not too long.
fn key(k: Bytes) -> Result<Bytes, OpFail> {
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

    /// GETXATTR; its result is the value (`xattrvalue4`, variable-length opaque data).
    pub(crate) fn getxattr(&self, ctx: &mut Ctx<'_>, a: Getxattr4args) -> Result<Encoded, OpFail> {
        let k = key(a.gxa_name)?;
        let (c, n) = self.xattr_node(ctx)?;
        let v = self.vfs.getxattr(&c, &n, &k).map_err(xerr)?;
        let mut e = xdr::Encoder::new();
        e.opaque(&v);
        Ok(Encoded(e.finish()))
    }

    pub(crate) fn setxattr(
        &self,
        ctx: &mut Ctx<'_>,
        a: Setxattr4args,
    ) -> Result<ChangeInfo4, OpFail> {
        let k = key(a.sxa_key)?;
        let v = a.sxa_value;
        if v.len() > vfs::fs::XATTR_SIZE_MAX {
            return Err(Nfsstat4::NFS4ERR_XATTR2BIG.into());
        }
        let flags = match a.sxa_option {
            SetxattrOption4::Setxattr4Either => 0,
            SetxattrOption4::Setxattr4Create => libc::XATTR_CREATE,
            SetxattrOption4::Setxattr4Replace => libc::XATTR_REPLACE,
        };
        let (c, n) = self.xattr_node(ctx)?;
        self.vfs.setxattr(&c, &n, &k, &v, flags).map_err(xerr)?;
        let after = self.vfs.getattr(&n).ok();
        Ok(change_info(&n.attr, after.as_ref()))
    }

    pub(crate) fn listxattrs(
        &self,
        ctx: &mut Ctx<'_>,
        a: Listxattrs4args,
    ) -> Result<Listxattrs4resok, OpFail> {
        let cookie = a.lxa_cookie;
        let maxcount = a.lxa_maxcount as usize;
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
            out.push(Bytes::copy_from_slice(name));
            next += 1;
        }
        if out.is_empty() && next < names.len() {
            return Err(Nfsstat4::NFS4ERR_TOOSMALL.into());
        }
        Ok(Listxattrs4resok {
            lxr_cookie: next as u64,
            lxr_names: out,
            lxr_eof: next >= names.len(),
        })
    }

    pub(crate) fn removexattr(
        &self,
        ctx: &mut Ctx<'_>,
        a: Removexattr4args,
    ) -> Result<ChangeInfo4, OpFail> {
        let k = key(a.rxa_name)?;
        let (c, n) = self.xattr_node(ctx)?;
        self.vfs.removexattr(&c, &n, &k).map_err(xerr)?;
        let after = self.vfs.getattr(&n).ok();
        Ok(change_info(&n.attr, after.as_ref()))
    }
}
