//! Conversions between backend types and NFSv3 wire types, and the one errno/backend-error to
//! nfsstat3 mapping.

use vfs::{Attr, DirChange, FileType, SetAttrs, VfsError};

use nfs3wire::*;

/// Maps a backend error to the NFSv3 status the client sees.
pub fn nfsstat(e: VfsError) -> Nfsstat3 {
    match e {
        VfsError::Stale => Nfsstat3::NFS3ERR_STALE,
        VfsError::BadHandle => Nfsstat3::NFS3ERR_BADHANDLE,
        VfsError::ExportDenied | VfsError::WrongSec => Nfsstat3::NFS3ERR_ACCES,
        VfsError::ReadOnly => Nfsstat3::NFS3ERR_ROFS,
        VfsError::NotSync => Nfsstat3::NFS3ERR_NOT_SYNC,
        VfsError::BadCookie => Nfsstat3::NFS3ERR_BAD_COOKIE,
        VfsError::TooSmall => Nfsstat3::NFS3ERR_TOOSMALL,
        VfsError::BadName => Nfsstat3::NFS3ERR_ACCES,
        VfsError::NotSupported => Nfsstat3::NFS3ERR_NOTSUPP,
        VfsError::Delay => Nfsstat3::NFS3ERR_JUKEBOX,
        VfsError::Errno(n) => match n {
            libc::EPERM => Nfsstat3::NFS3ERR_PERM,
            libc::ENOENT => Nfsstat3::NFS3ERR_NOENT,
            libc::ENXIO => Nfsstat3::NFS3ERR_NXIO,
            libc::EACCES => Nfsstat3::NFS3ERR_ACCES,
            libc::EEXIST => Nfsstat3::NFS3ERR_EXIST,
            libc::EXDEV => Nfsstat3::NFS3ERR_XDEV,
            libc::ENODEV => Nfsstat3::NFS3ERR_NODEV,
            libc::ENOTDIR => Nfsstat3::NFS3ERR_NOTDIR,
            libc::EISDIR => Nfsstat3::NFS3ERR_ISDIR,
            libc::EINVAL | libc::ELOOP => Nfsstat3::NFS3ERR_INVAL,
            libc::EFBIG | libc::EOVERFLOW => Nfsstat3::NFS3ERR_FBIG,
            libc::ENOSPC => Nfsstat3::NFS3ERR_NOSPC,
            libc::EROFS => Nfsstat3::NFS3ERR_ROFS,
            libc::EMLINK => Nfsstat3::NFS3ERR_MLINK,
            libc::ENAMETOOLONG => Nfsstat3::NFS3ERR_NAMETOOLONG,
            libc::ENOTEMPTY => Nfsstat3::NFS3ERR_NOTEMPTY,
            libc::EDQUOT => Nfsstat3::NFS3ERR_DQUOT,
            libc::ESTALE => Nfsstat3::NFS3ERR_STALE,
            libc::EOPNOTSUPP => Nfsstat3::NFS3ERR_NOTSUPP,
            libc::EAGAIN | libc::ETXTBSY => Nfsstat3::NFS3ERR_JUKEBOX,
            _ => Nfsstat3::NFS3ERR_IO,
        },
    }
}

/// Maps a backend error to a MOUNT status.
pub fn mountstat(e: VfsError) -> Mountstat3 {
    match nfsstat(e) {
        Nfsstat3::NFS3ERR_PERM => Mountstat3::MNT3ERR_PERM,
        Nfsstat3::NFS3ERR_NOENT | Nfsstat3::NFS3ERR_STALE => Mountstat3::MNT3ERR_NOENT,
        Nfsstat3::NFS3ERR_ACCES | Nfsstat3::NFS3ERR_BADHANDLE => Mountstat3::MNT3ERR_ACCES,
        Nfsstat3::NFS3ERR_NOTDIR => Mountstat3::MNT3ERR_NOTDIR,
        Nfsstat3::NFS3ERR_INVAL => Mountstat3::MNT3ERR_INVAL,
        Nfsstat3::NFS3ERR_NAMETOOLONG => Mountstat3::MNT3ERR_NAMETOOLONG,
        Nfsstat3::NFS3ERR_NOTSUPP => Mountstat3::MNT3ERR_NOTSUPP,
        Nfsstat3::NFS3ERR_IO => Mountstat3::MNT3ERR_IO,
        _ => Mountstat3::MNT3ERR_SERVERFAULT,
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
        r#type: match a.ftype {
            FileType::Regular => Ftype3::Nf3reg,
            FileType::Directory => Ftype3::Nf3dir,
            FileType::Block => Ftype3::Nf3blk,
            FileType::Char => Ftype3::Nf3chr,
            FileType::Symlink => Ftype3::Nf3lnk,
            FileType::Socket => Ftype3::Nf3sock,
            FileType::Fifo => Ftype3::Nf3fifo,
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

/// wcc_data with neither attribute set (the object could not be found).
pub fn no_wcc() -> WccData {
    WccData {
        before: PreOpAttr(None),
        after: PostOpAttr(None),
    }
}

/// wcc_data from attributes before and after.
pub fn wcc(before: &Attr, after: Option<&Attr>) -> WccData {
    WccData {
        before: pre(before),
        after: post(after),
    }
}

/// wcc_data of a change made in a directory's turn (a [`vfs::DirChange`]).
pub fn dir_wcc<T>(c: &DirChange<T>) -> WccData {
    wcc(&c.before, Some(&c.after))
}

/// A SETATTR time: `t` is the client's time (`SET_TO_CLIENT_TIME`), `how` the
/// discriminant of a time-less arm.
fn set_time(t: Option<&Nfstime3>, how: TimeHow) -> vfs::SetTime {
    match (t, how) {
        (Some(t), _) => vfs::SetTime::Client(vfs::Time {
            sec: t.seconds as i64,
            nsec: t.nseconds,
        }),
        (None, TimeHow::SetToServerTime) => vfs::SetTime::ServerNow,
        // DONT_CHANGE (SET_TO_CLIENT_TIME always carries a time)
        (None, _) => vfs::SetTime::DontChange,
    }
}

/// Backend attribute changes from a sattr3.
pub fn set_attrs(s: &Sattr3) -> SetAttrs {
    SetAttrs {
        umask: None,
        mode: s.mode.0,
        uid: s.uid.0,
        gid: s.gid.0,
        size: s.size.0,
        atime: match &s.atime {
            SetAtime::SetToClientTime(t) => set_time(Some(t), TimeHow::SetToClientTime),
            SetAtime::Default(how) => set_time(None, *how),
        },
        mtime: match &s.mtime {
            SetMtime::SetToClientTime(t) => set_time(Some(t), TimeHow::SetToClientTime),
            SetMtime::Default(how) => set_time(None, *how),
        },
    }
}

/// The ctime guard of a SETATTR.
pub fn guard(g: &Sattrguard3) -> Option<vfs::Time> {
    g.0.as_ref().map(|t| vfs::Time {
        sec: t.seconds as i64,
        nsec: t.nseconds,
    })
}

/// The export (its slot, as an admission key: `sunrpc::Program::admission`) of the handle that
/// NFSv3 and NFSACL arguments begin with; None when they do not begin with one of an export.
pub(crate) fn export_of_args(vfs: &vfs::Vfs, args: &xdr::Decoder) -> Option<u64> {
    let fh = args.clone().opaque(nfs3wire::NFS3_FHSIZE as usize).ok()?;
    vfs.export_slot_of(&fh).map(|s| s as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_mapping() {
        assert_eq!(
            nfsstat(VfsError::Errno(libc::ENOENT)),
            Nfsstat3::NFS3ERR_NOENT
        );
        assert_eq!(
            nfsstat(VfsError::Errno(libc::ENOTEMPTY)),
            Nfsstat3::NFS3ERR_NOTEMPTY
        );
        assert_eq!(
            nfsstat(VfsError::Errno(libc::EBADMSG)),
            Nfsstat3::NFS3ERR_IO
        );
        assert_eq!(nfsstat(VfsError::BadHandle), Nfsstat3::NFS3ERR_BADHANDLE);
        assert_eq!(
            nfsstat(VfsError::errno(libc::ESTALE)),
            Nfsstat3::NFS3ERR_STALE
        );
        assert_eq!(mountstat(VfsError::ExportDenied), Mountstat3::MNT3ERR_ACCES);
    }
}
