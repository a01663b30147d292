//! Export admission and handle resolution: which export and caller a handle or a MOUNT path names,
//! and the object it opens.

use super::*;

impl Vfs {
    pub(super) fn admit(&self, export: usize, client: &Client) -> VfsResult<Caller> {
        let e = &self.exports[export];
        let opts = e
            .entry
            .options_for(
                client.addr,
                self.host_names
                    .get(&client.addr.to_canonical())
                    .map(String::as_str),
            )
            .ok_or(VfsError::ExportDenied)?;
        if opts.secure && client.port >= 1024 {
            return Err(VfsError::ExportDenied);
        }
        Ok(Caller {
            export,
            creds: squash(opts, client.ident.as_ref()),
            writable: opts.rw,
        })
    }

    /// MOUNT: the handle of `path` (an export or a directory below one) for `client`.
    pub fn mount(&self, path: &[u8], client: &Client) -> VfsResult<Bytes> {
        use std::os::unix::ffi::OsStrExt;
        let want = Path::new(std::ffi::OsStr::from_bytes(path));
        let want = normalize(want).ok_or(VfsError::Errno(libc::ENOENT))?;
        // The longest export that contains the path.
        let (idx, e) = self
            .exports
            .iter()
            .enumerate()
            .filter(|(_, e)| want.starts_with(&e.entry.path))
            .max_by_key(|(_, e)| e.entry.path.as_os_str().len())
            .ok_or(VfsError::Errno(libc::ENOENT))?;
        let caller = self.admit(idx, client)?;
        let mut node = self.resolve(&e.root_fh)?;
        let rest = want
            .strip_prefix(&e.entry.path)
            .map_err(|_| VfsError::Errno(libc::ENOENT))?;
        for comp in rest.components() {
            let name = comp.as_os_str().as_encoded_bytes();
            let (fh, attr) = self.lookup(&caller, &node, name)?;
            if attr.ftype != FileType::Directory {
                return Err(VfsError::Errno(libc::ENOTDIR));
            }
            node = self.resolve(&fh)?;
        }
        Ok(node.fh)
    }

    /// Checks a handle, admits the client to its export and resolves the object.
    pub fn authorize(&self, fh: &[u8], client: &Client) -> VfsResult<(Caller, Node)> {
        let node = self.resolve(fh)?;
        let caller = self.admit(node.export, client)?;
        Ok((caller, node))
    }

    pub(super) fn export_index(&self, id: u32) -> VfsResult<usize> {
        self.exports
            .iter()
            .position(|e| e.id == id)
            .ok_or(VfsError::Stale)
    }

    /// Checks a handle's integrity and export without opening it (a removed file's handle
    /// passes: it is STALE only when used).
    pub fn check_handle(&self, fh: &[u8]) -> VfsResult<()> {
        let id = match self.paths.contains(fh) {
            true => handle::export_of(fh),
            false => self.key.verify(fh)?,
        };
        self.export_index(id).map(drop)
    }

    /// Resolves a handle to an object (no client check: use [`Vfs::authorize`] for calls).
    pub fn resolve(&self, fh: &[u8]) -> VfsResult<Node> {
        // A cached handle was verified when it was cached: equal bytes need no MAC again, and
        // the node shares the cache's copy of the handle. Otherwise the handle is copied, so
        // that the cache never holds a piece of a message buffer.
        let (export, found, fh) = match self.paths.get_keyed(fh) {
            Some((fh, fd)) => (handle::export_of(&fh), Ok(fd), fh),
            None => {
                let (id, kh) = self.key.open(fh)?;
                (id, Err(kh), Bytes::copy_from_slice(fh))
            }
        };
        let export = self.export_index(export)?;
        if nowait::active() && !self.exports[export].local() {
            return Err(nowait::give_up());
        }
        let fd = match found {
            Ok(fd) => fd,
            // opening a handle may read the inode from the disk
            Err(_) if nowait::active() => return Err(nowait::give_up()),
            Err(kh) => {
                let e = &self.exports[export];
                let fd = cred::as_root(|| {
                    sys::open_by_handle_at(e.root.as_fd(), &kh, libc::O_PATH | libc::O_NOFOLLOW)
                })
                .map_err(|err| match err.raw_os_error() {
                    Some(libc::ESTALE) | Some(libc::ENOENT) | Some(libc::EINVAL) => VfsError::Stale,
                    _ => VfsError::from(err),
                })?;
                let fd = Arc::new(fd);
                let st = sys::fstat(fd.as_fd())?;
                if st.st_nlink == 0 {
                    return Err(VfsError::Stale);
                }
                self.paths
                    .put(fh.clone(), fd.clone(), self.inode_key(export, &st));
                return Ok(Node {
                    fh: fh.clone(),
                    fd,
                    attr: Attr::from_stat(&st),
                    export,
                });
            }
        };
        let st = sys::fstat(fd.as_fd())?;
        if st.st_nlink == 0 {
            self.forget(&fh);
            return Err(VfsError::Stale);
        }
        Ok(Node {
            fh,
            fd,
            attr: Attr::from_stat(&st),
            export,
        })
    }

    /// The key under which a descriptor of the object `st` describes is indexed by inode: none
    /// for directories (a listing's number for a mount point or a Btrfs subvolume is not the
    /// number stat gives) or where numbers do not name inodes.
    pub(super) fn inode_key(&self, export: usize, st: &libc::stat64) -> Option<InodeKey> {
        (self.exports[export].by_inode && st.st_mode & libc::S_IFMT != libc::S_IFDIR)
            .then_some((export, st.st_dev, st.st_ino))
    }

    /// Whether `node` is the root directory of its export.
    pub fn is_export_root(&self, node: &Node) -> bool {
        self.is_export_root_attr(node, &node.attr)
    }

    /// Whether an object with attributes `attr`, found in `dir`'s export, is that export's
    /// root directory (as [`Vfs::is_export_root`], without resolving it).
    pub fn is_export_root_attr(&self, dir: &Node, attr: &Attr) -> bool {
        let e = &self.exports[dir.export];
        attr.fsid == e.root_dev && attr.fileid == e.root_ino
    }

    pub(super) fn handle_at(
        &self,
        export: usize,
        dir: BorrowedFd<'_>,
        name: &CStr,
        flags: i32,
    ) -> VfsResult<Bytes> {
        let (kh, mount_id) = sys::name_to_handle_at(dir, name, flags).map_err(|e| {
            if e.raw_os_error() == Some(libc::EOVERFLOW) {
                VfsError::NotSupported
            } else {
                VfsError::from(e)
            }
        })?;
        if mount_id != self.exports[export].mount_id {
            // A mount point inside the export: not crossed. knfsd shows the directory it
            // covers, which cannot be reached from here; "permission denied" is an answer every
            // operation may give (XDEV is not one LOOKUP may).
            return Err(VfsError::Errno(libc::EACCES));
        }
        Ok(Bytes::from(self.key.seal(self.exports[export].id, &kh)))
    }

    pub(super) fn attr(&self, fd: BorrowedFd<'_>) -> VfsResult<Attr> {
        Ok(Attr::from_stat(&sys::fstat(fd)?))
    }

    /// Current attributes of a node (fresh stat).
    pub fn getattr(&self, node: &Node) -> VfsResult<Attr> {
        self.attr(node.fd())
    }

    pub(super) fn writable(&self, caller: &Caller) -> VfsResult<()> {
        if caller.writable {
            Ok(())
        } else {
            Err(VfsError::ReadOnly)
        }
    }

    pub(super) fn same_export(&self, caller: &Caller, node: &Node) -> VfsResult<()> {
        if caller.export == node.export {
            Ok(())
        } else {
            Err(VfsError::Errno(libc::EXDEV))
        }
    }
}
