//! Conversions between backend types and NFSv3 wire types, and the one errno/backend-error to
//! nfsstat3 mapping.

use vfs::{Attr, FileType, SetAttrs, VfsError};

use crate::types::*;

/// Maps a backend error to the NFSv3 status the client sees.
pub fn nfsstat(e: VfsError) -> Nfsstat3 {
    match e {
        VfsError::Stale => Nfsstat3::Stale,
        VfsError::BadHandle => Nfsstat3::Badhandle,
        VfsError::ExportDenied => Nfsstat3::Acces,
        VfsError::ReadOnly => Nfsstat3::Rofs,
        VfsError::NotSync => Nfsstat3::NotSync,
        VfsError::BadCookie => Nfsstat3::BadCookie,
        VfsError::TooSmall => Nfsstat3::Toosmall,
        VfsError::BadName => Nfsstat3::Acces,
        VfsError::NotSupported => Nfsstat3::Notsupp,
        VfsError::Delay => Nfsstat3::Jukebox,
        VfsError::Errno(n) => match n {
            libc::EPERM => Nfsstat3::Perm,
            libc::ENOENT => Nfsstat3::Noent,
            libc::ENXIO => Nfsstat3::Nxio,
            libc::EACCES => Nfsstat3::Acces,
            libc::EEXIST => Nfsstat3::Exist,
            libc::EXDEV => Nfsstat3::Xdev,
            libc::ENODEV => Nfsstat3::Nodev,
            libc::ENOTDIR => Nfsstat3::Notdir,
            libc::EISDIR => Nfsstat3::Isdir,
            libc::EINVAL | libc::ELOOP => Nfsstat3::Inval,
            libc::EFBIG | libc::EOVERFLOW => Nfsstat3::Fbig,
            libc::ENOSPC => Nfsstat3::Nospc,
            libc::EROFS => Nfsstat3::Rofs,
            libc::EMLINK => Nfsstat3::Mlink,
            libc::ENAMETOOLONG => Nfsstat3::Nametoolong,
            libc::ENOTEMPTY => Nfsstat3::Notempty,
            libc::EDQUOT => Nfsstat3::Dquot,
            libc::ESTALE => Nfsstat3::Stale,
            libc::EOPNOTSUPP => Nfsstat3::Notsupp,
            libc::EAGAIN | libc::ETXTBSY => Nfsstat3::Jukebox,
            _ => Nfsstat3::Io,
        },
    }
}

/// Maps a backend error to a MOUNT status.
pub fn mountstat(e: VfsError) -> Mountstat3 {
    match nfsstat(e) {
        Nfsstat3::Perm => Mountstat3::Perm,
        Nfsstat3::Noent | Nfsstat3::Stale => Mountstat3::Noent,
        Nfsstat3::Acces | Nfsstat3::Badhandle => Mountstat3::Acces,
        Nfsstat3::Notdir => Mountstat3::Notdir,
        Nfsstat3::Inval => Mountstat3::Inval,
        Nfsstat3::Nametoolong => Mountstat3::Nametoolong,
        Nfsstat3::Notsupp => Mountstat3::Notsupp,
        Nfsstat3::Io => Mountstat3::Io,
        _ => Mountstat3::Serverfault,
    }
}

fn time3(t: vfs::Time) -> Nfstime3 {
    Nfstime3 {
        seconds: t.sec.clamp(0, u32::MAX as i64) as u32,
        nseconds: t.nsec,
    }
}

/// NFSv3 attributes of an object.
pub fn fattr3(a: &Attr) -> Fattr3 {
    Fattr3 {
        ftype: match a.ftype {
            FileType::Regular => Ftype3::Reg,
            FileType::Directory => Ftype3::Dir,
            FileType::Block => Ftype3::Blk,
            FileType::Char => Ftype3::Chr,
            FileType::Symlink => Ftype3::Lnk,
            FileType::Socket => Ftype3::Sock,
            FileType::Fifo => Ftype3::Fifo,
        },
        mode: a.mode,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        size: a.size,
        used: a.used,
        rdev: Specdata3 {
            specdata1: a.rdev.0,
            specdata2: a.rdev.1,
        },
        fsid: a.fsid,
        fileid: a.fileid,
        atime: time3(a.atime),
        mtime: time3(a.mtime),
        ctime: time3(a.ctime),
    }
}

/// post_op_attr from an optional attribute set.
pub fn post(a: Option<&Attr>) -> PostOpAttr {
    PostOpAttr(a.map(fattr3))
}

/// pre_op_attr (size and times) of an object.
pub fn pre(a: &Attr) -> PreOpAttr {
    PreOpAttr(Some(WccAttr {
        size: a.size,
        mtime: time3(a.mtime),
        ctime: time3(a.ctime),
    }))
}

/// wcc_data from attributes before and after.
pub fn wcc(before: &Attr, after: Option<&Attr>) -> WccData {
    WccData {
        before: pre(before),
        after: post(after),
    }
}

fn set_time(t: &SetTime) -> vfs::SetTime {
    match t {
        SetTime::DontChange => vfs::SetTime::DontChange,
        SetTime::ServerTime => vfs::SetTime::ServerNow,
        SetTime::ClientTime(t) => vfs::SetTime::Client(vfs::Time {
            sec: t.seconds as i64,
            nsec: t.nseconds,
        }),
    }
}

/// Backend attribute changes from a sattr3.
pub fn set_attrs(s: &Sattr3) -> SetAttrs {
    SetAttrs {
        mode: s.mode,
        uid: s.uid,
        gid: s.gid,
        size: s.size,
        atime: set_time(&s.atime),
        mtime: set_time(&s.mtime),
    }
}

/// The ctime guard of a SETATTR.
pub fn guard(g: &SattrGuard3) -> Option<vfs::Time> {
    g.0.map(|t| vfs::Time {
        sec: t.seconds as i64,
        nsec: t.nseconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_mapping() {
        assert_eq!(nfsstat(VfsError::Errno(libc::ENOENT)), Nfsstat3::Noent);
        assert_eq!(
            nfsstat(VfsError::Errno(libc::ENOTEMPTY)),
            Nfsstat3::Notempty
        );
        assert_eq!(nfsstat(VfsError::Errno(libc::EBADMSG)), Nfsstat3::Io);
        assert_eq!(nfsstat(VfsError::BadHandle), Nfsstat3::Badhandle);
        assert_eq!(nfsstat(VfsError::errno(libc::ESTALE)), Nfsstat3::Stale);
        assert_eq!(mountstat(VfsError::ExportDenied), Mountstat3::Acces);
    }
}
