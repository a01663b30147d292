//! SETATTR and extended attributes, as the caller.

use super::*;

pub(super) fn timespec(t: SetTime) -> libc::timespec {
    match t {
        SetTime::DontChange => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        SetTime::ServerNow => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        SetTime::Client(t) => libc::timespec {
            tv_sec: t.sec,
            tv_nsec: t.nsec.min(999_999_999) as i64,
        },
    }
}

/// Whether a SETATTR sets times only to the server's current time (or leaves them).
pub(super) fn touches_only(s: &SetAttrs) -> bool {
    [s.atime, s.mtime]
        .iter()
        .all(|t| matches!(t, SetTime::DontChange | SetTime::ServerNow))
}

impl Vfs {
    /// SETATTR, with an optional ctime guard; returns the new attributes.
    pub fn setattr(
        &self,
        caller: &Caller,
        node: &Node,
        s: &SetAttrs,
        guard: Option<Time>,
    ) -> VfsResult<Attr> {
        let attr = self.apply_setattr(caller, node, s, guard)?;
        self.commit_attrs(caller, node)?;
        Ok(attr)
    }

    /// SETATTR without making it durable (a create that commits its directory after).
    pub(super) fn apply_setattr(
        &self,
        caller: &Caller,
        node: &Node,
        s: &SetAttrs,
        guard: Option<Time>,
    ) -> VfsResult<Attr> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        if let Some(g) = guard {
            if g != node.attr.ctime {
                return Err(VfsError::NotSync);
            }
        }
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || -> VfsResult<()> {
            if s.uid.is_some() || s.gid.is_some() {
                sys::fchown_fd(
                    node.fd(),
                    s.uid.unwrap_or(u32::MAX),
                    s.gid.unwrap_or(u32::MAX),
                )?;
            }
            if let Some(m) = s.mode {
                if node.attr.ftype != FileType::Symlink {
                    sys::chmod_path(&path, m & 0o7777)?;
                }
            }
            if let Some(size) = s.size {
                Self::check_regular(node)?;
                match sys::truncate_path(&path, size) {
                    Ok(()) => {}
                    // The owner may truncate a file it cannot write (it created it read-only).
                    Err(e)
                        if e.raw_os_error() == Some(libc::EACCES)
                            && caller.creds.uid == node.attr.uid =>
                    {
                        let fd = self.data_fd(node)?;
                        let f = std::fs::File::from(fd.as_fd().try_clone_to_owned()?);
                        // data_fd may have opened the file as root: truncate as the caller.
                        Self::as_writer(caller, || f.set_len(size))?;
                    }
                    Err(e) => return Err(e.into()),
                }
                // the copies after the local file, whose truncation checked the caller's right
                if let Some(r) = self.remote(node) {
                    r.truncate(&node.fh, size)?;
                }
            }
            if s.atime != SetTime::DontChange || s.mtime != SetTime::DontChange {
                let times = [timespec(s.atime), timespec(s.mtime)];
                match sys::utimensat(libc::AT_FDCWD, &path, &times, 0) {
                    Ok(()) => {}
                    // Setting one time to now and leaving the other needs ownership in
                    // utimensat, but it is what the client sends for a writer's ftruncate
                    // or O_TRUNC (mtime to the server's time): anyone who may write the file
                    // may do it, as a write would (knfsd allows it alike).
                    Err(e)
                        if e.raw_os_error() == Some(libc::EPERM)
                            && touches_only(s)
                            && self.may(caller, node, 2, false) =>
                    {
                        cred::as_root(|| sys::utimensat(libc::AT_FDCWD, &path, &times, 0))?
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        })?;
        self.attr(node.fd())
    }

    pub(super) fn xattr_name(name: &[u8]) -> VfsResult<CString> {
        if name.is_empty() || name.len() > NAME_MAX {
            return Err(VfsError::Errno(libc::ENAMETOOLONG));
        }
        let mut full = b"user.".to_vec();
        full.extend_from_slice(name);
        CString::new(full).map_err(|_| VfsError::BadName)
    }

    /// GETXATTR: the value of user extended attribute `name`.
    pub fn getxattr(&self, caller: &Caller, node: &Node, name: &[u8]) -> VfsResult<Bytes> {
        self.same_export(caller, node)?;
        let n = Self::xattr_name(name)?;
        let path = node.proc_path();
        let v = cred::with_creds(&caller.creds, || sys::getxattr(&path, &n, XATTR_SIZE_MAX))?;
        Ok(Bytes::from(v))
    }

    /// SETXATTR: sets user extended attribute `name` (`flags`: XATTR_CREATE / XATTR_REPLACE).
    pub fn setxattr(
        &self,
        caller: &Caller,
        node: &Node,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> VfsResult<()> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        let n = Self::xattr_name(name)?;
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || sys::setxattr(&path, &n, value, flags))?;
        self.commit_attrs(caller, node)
    }

    /// LISTXATTRS: names of the user extended attributes, without the `user.` prefix.
    pub fn listxattrs(&self, caller: &Caller, node: &Node) -> VfsResult<Vec<Bytes>> {
        self.same_export(caller, node)?;
        let path = node.proc_path();
        let raw = cred::with_creds(&caller.creds, || sys::listxattr(&path, XATTR_LIST_MAX))?;
        Ok(raw
            .split(|b| *b == 0)
            .filter_map(|n| n.strip_prefix(b"user."))
            .filter(|n| !n.is_empty())
            .map(Bytes::copy_from_slice)
            .collect())
    }

    /// REMOVEXATTR: removes user extended attribute `name`.
    pub fn removexattr(&self, caller: &Caller, node: &Node, name: &[u8]) -> VfsResult<()> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        let n = Self::xattr_name(name)?;
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || sys::removexattr(&path, &n))?;
        self.commit_attrs(caller, node)
    }
}
