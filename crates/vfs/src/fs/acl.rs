//! POSIX ACLs of exported files: read and set as the caller (the kernel checks that only the
//! owner may set one), and known to the permission checks rnfsd makes itself, through a cache
//! of each file's access ACL keyed by its ctime (any change of an ACL changes the ctime).

use super::*;

use crate::acl::{AclKind, PosixAcl};

/// Files whose access ACL is remembered, per stripe.
const ACL_CACHE_PER_STRIPE: usize = 256;
/// Stripes of the cache (by inode number): checks of different files rarely share a lock.
const ACL_CACHE_STRIPES: usize = 16;

/// What a file's access ACL was at a ctime: None when it has none (its mode says it all).
type Known = (Time, Option<Arc<PosixAcl>>);

/// One stripe: files by (file system, inode).
type Stripe = parking_lot::Mutex<HashMap<(u64, u64), Known>>;

/// Access ACLs of files recently checked, by (file system, inode).
pub(super) struct AclCache {
    stripes: Box<[Stripe]>,
}

impl AclCache {
    pub(super) fn new() -> Self {
        Self {
            stripes: (0..ACL_CACHE_STRIPES)
                .map(|_| parking_lot::Mutex::new(HashMap::new()))
                .collect(),
        }
    }

    fn stripe(&self, a: &Attr) -> &Stripe {
        &self.stripes[(a.fileid as usize) % ACL_CACHE_STRIPES]
    }

    fn get(&self, a: &Attr) -> Option<Option<Arc<PosixAcl>>> {
        let m = self.stripe(a).lock();
        m.get(&(a.fsid, a.fileid))
            .filter(|(ctime, _)| *ctime == a.ctime)
            .map(|(_, acl)| acl.clone())
    }

    fn put(&self, a: &Attr, acl: Option<Arc<PosixAcl>>) {
        let mut m = self.stripe(a).lock();
        if m.len() >= ACL_CACHE_PER_STRIPE && !m.contains_key(&(a.fsid, a.fileid)) {
            m.clear();
        }
        m.insert((a.fsid, a.fileid), (a.ctime, acl));
    }

    fn forget(&self, a: &Attr) {
        self.stripe(a).lock().remove(&(a.fsid, a.fileid));
    }
}

/// The ACL in an extended attribute's value; a value the kernel would not have stored is EIO.
fn parse(v: &[u8]) -> VfsResult<PosixAcl> {
    PosixAcl::from_xattr(v).map_err(|_| VfsError::Errno(libc::EIO))
}

/// Reads a `system.posix_acl_*` attribute: None when the file has none, or when its file system
/// keeps no ACLs.
fn read_acl(path: &CStr, kind: AclKind) -> VfsResult<Option<PosixAcl>> {
    match sys::getxattr(path, kind.xattr_name(), XATTR_SIZE_MAX) {
        Ok(v) => parse(&v).map(Some),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENODATA | libc::EOPNOTSUPP)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Vfs {
    /// Whether the file system of `node` keeps POSIX ACLs (decided per export when it is
    /// opened; a symbolic link of such a file system has the ACL of its mode, as with knfsd).
    pub fn acls_supported(&self, node: &Node) -> bool {
        self.table().get(node.export).is_ok_and(|e| e.posix_acls)
    }

    /// A file's access or default ACL, read as the caller; None when it has none (the access
    /// ACL is then its mode: [`PosixAcl::from_mode`]).
    pub fn get_acl(
        &self,
        caller: &Caller,
        node: &Node,
        kind: AclKind,
    ) -> VfsResult<Option<PosixAcl>> {
        self.same_export(caller, node)?;
        if kind == AclKind::Default && node.attr.ftype != FileType::Directory {
            return Ok(None);
        }
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || read_acl(&path, kind))
    }

    /// Sets (or, with None, removes) a file's access or default ACL as the caller. Setting an
    /// access ACL sets the mode's permission bits to match it (the file system does that, as
    /// for setfacl); a minimal one is kept as the mode alone.
    pub fn set_acl(
        &self,
        caller: &Caller,
        node: &Node,
        kind: AclKind,
        acl: Option<&PosixAcl>,
    ) -> VfsResult<()> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        if node.attr.ftype == FileType::Symlink {
            return Err(VfsError::NotSupported);
        }
        if kind == AclKind::Default && node.attr.ftype != FileType::Directory {
            // only directories have default ACLs; removing none from a file is no change
            return match acl {
                None => Ok(()),
                Some(_) => Err(VfsError::Errno(libc::EACCES)),
            };
        }
        let path = node.proc_path();
        let r = cred::with_creds(&caller.creds, || match acl {
            Some(a) => sys::setxattr(&path, kind.xattr_name(), &a.to_xattr(), 0),
            None => match sys::removexattr(&path, kind.xattr_name()) {
                Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(()),
                r => r,
            },
        });
        // the ctime moved, but perhaps within the same tick as the cached one
        self.acls.forget(&node.attr);
        r.map_err(|e| match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) => VfsError::NotSupported,
            _ => e.into(),
        })?;
        self.commit_attrs(caller, node)
    }

    /// The mode a create in `dir` passes to the kernel: the one asked for (or `default`), less
    /// the client's umask when it sent one (NFSv4.2 `mode_umask`) and the directory has no
    /// default ACL; with a default ACL the kernel combines the mode with it and the umask is
    /// not applied, as for a local create (rnfsd's own umask is 0).
    pub(super) fn create_mode(&self, dir: &Node, s: &SetAttrs, default: u32) -> u32 {
        let mode = s.mode.unwrap_or(default) & 0o7777;
        match s.umask {
            Some(umask) if !self.has_default_acl(dir) => mode & !(umask & 0o777),
            _ => mode,
        }
    }

    /// Whether directory `dir` has a default ACL.
    fn has_default_acl(&self, dir: &Node) -> bool {
        if !self.acls_supported(dir) {
            return false;
        }
        let path = dir.proc_path();
        // a size query: it fails with ENODATA when there is none
        cred::as_root(|| sys::getxattr(&path, AclKind::Default.xattr_name(), 0)).is_ok()
    }

    /// The access ACL the permission checks use for `node`: cached while its ctime stands.
    fn access_acl(&self, node: &Node) -> Option<Arc<PosixAcl>> {
        if let Some(known) = self.acls.get(&node.attr) {
            return known;
        }
        let path = node.proc_path();
        // Unreadable (an I/O error): checked by the mode, as if it had none; the kernel checks
        // calls it runs itself anyway.
        let acl = cred::as_root(|| read_acl(&path, AclKind::Access))
            .ok()
            .flatten()
            .map(Arc::new);
        self.acls.put(&node.attr, acl.clone());
        acl
    }

    /// Whether the caller may do `want` (r=4, w=2, x=1) on `node`, as the kernel would decide
    /// it: by the mode for the owner and the superuser, by the access ACL for others when the
    /// file has one. `owner_override`: the owner may read and write whatever the mode says (the
    /// I/O of a file it opened, then made read-only).
    pub(super) fn may(
        &self,
        caller: &Caller,
        node: &Node,
        want: u32,
        owner_override: bool,
    ) -> bool {
        let c = &caller.creds;
        let a = &node.attr;
        if c.uid == 0
            || c.uid == a.uid
            || a.ftype == FileType::Symlink
            || !self.acls_supported(node)
        {
            return mode_allows(c, a, want, owner_override);
        }
        match self.access_acl(node) {
            Some(acl) => acl.permits(a.uid, a.gid, c, want as u8),
            None => mode_allows(c, a, want, owner_override),
        }
    }
}
