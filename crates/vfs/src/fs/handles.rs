//! Export admission and handle resolution: which export and caller a handle or a MOUNT path names,
//! and the object it opens.

use super::*;

impl Vfs {
    /// Admits `client` to the export in slot `export` for a call, counted on the export.
    fn admit(&self, export: usize, client: &Client) -> VfsResult<Caller> {
        self.admit_counted(export, client, true)
    }

    /// As [`Vfs::admit`]; `check_flavor` false for NLM (see [`Vfs::authorize_lock`]).
    fn admit_counted(
        &self,
        export: usize,
        client: &Client,
        check_flavor: bool,
    ) -> VfsResult<Caller> {
        let t = self.table();
        let c = Self::admit_in(&t, export, client, check_flavor)?;
        if let Ok(e) = t.get(export) {
            e.stats
                .calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(c)
    }

    /// As [`Vfs::admit`]; `check_flavor` false for MOUNT, which answers with the flavors the
    /// export takes whatever flavor it was called with.
    fn admit_as(&self, export: usize, client: &Client, check_flavor: bool) -> VfsResult<Caller> {
        Self::admit_in(&self.table(), export, client, check_flavor)
    }

    /// As [`Vfs::admit_as`], in the table `t`.
    fn admit_in(
        t: &table::ExportTable,
        export: usize,
        client: &Client,
        check_flavor: bool,
    ) -> VfsResult<Caller> {
        let opts = t.options_for(export, client)?;
        if opts.secure && !client.privileged {
            return Err(VfsError::ExportDenied);
        }
        if check_flavor && !opts.admits(client.flavor) {
            return Err(VfsError::WrongSec);
        }
        Ok(Caller {
            export,
            creds: squash(opts, client.ident.as_ref()),
            writable: opts.rw,
            sync: opts.sync,
            pnfs: opts.pnfs,
            acls: opts.acl,
        })
    }

    /// The security flavors `client` may use on `node`'s export (SECINFO, MOUNT's reply).
    pub fn flavors(&self, node: &Node, client: &Client) -> VfsResult<Vec<SecFlavor>> {
        Ok(self.table().options_for(node.export, client)?.flavors())
    }

    /// The security flavors of every export `client` may use, each once, in export order:
    /// what the NFSv4 pseudo file system, which leads to all of them, lists (as nfs-utils
    /// gives its pseudo root the flavors of the exports).
    pub fn all_flavors(&self, client: &Client) -> Vec<SecFlavor> {
        let t = self.table();
        let mut out = Vec::new();
        for (slot, _) in t.live() {
            if let Ok(o) = t.options_for(slot, client) {
                for f in o.flavors() {
                    if !out.contains(&f) {
                        out.push(f);
                    }
                }
            }
        }
        if out.is_empty() {
            out.push(SecFlavor::Sys);
        }
        out
    }

    /// MOUNT: the handle of `path` (an export or a directory below one) for `client`, and the
    /// security flavors the export takes from it.
    pub fn mount(&self, path: &[u8], client: &Client) -> VfsResult<(Bytes, Vec<SecFlavor>)> {
        use std::os::unix::ffi::OsStrExt;
        let want = Path::new(std::ffi::OsStr::from_bytes(path));
        let want = normalize(want).ok_or(VfsError::Errno(libc::ENOENT))?;
        // The longest export that contains the path.
        let (idx, root_fh, rest) = {
            let t = self.table();
            let (idx, e) = t
                .live()
                .filter(|(_, e)| want.starts_with(&e.entry.path))
                .max_by_key(|(_, e)| e.entry.path.as_os_str().len())
                .ok_or(VfsError::Errno(libc::ENOENT))?;
            let rest = want
                .strip_prefix(&e.entry.path)
                .map_err(|_| VfsError::Errno(libc::ENOENT))?
                .to_path_buf();
            (idx, e.root_fh.clone(), rest)
        };
        let caller = self.admit_as(idx, client, false)?;
        let mut node = self.resolve(&root_fh)?;
        for comp in rest.components() {
            let name = comp.as_os_str().as_encoded_bytes();
            let child = self.lookup(&caller, &node, name)?;
            if child.attr.ftype != FileType::Directory {
                return Err(VfsError::Errno(libc::ENOTDIR));
            }
            node = child;
        }
        let flavors = self.flavors(&node, client)?;
        Ok((node.fh, flavors))
    }

    /// Checks a handle, admits the client to its export and resolves the object.
    pub fn authorize(&self, fh: &[u8], client: &Client) -> VfsResult<(Caller, Node)> {
        let node = self.resolve(fh)?;
        let caller = self.admit(node.export, client)?;
        Ok((caller, node))
    }

    /// As [`Vfs::authorize`] for a lock manager's call (NLM): the export's `sec=` flavors are
    /// not required of it, as knfsd does not require them of lockd (clients send NLM with
    /// AUTH_SYS even on Kerberos mounts); its client rules, squashing and the mode still apply.
    pub fn authorize_lock(&self, fh: &[u8], client: &Client) -> VfsResult<(Caller, Node)> {
        let node = self.resolve(fh)?;
        let caller = self.admit_counted(node.export, client, false)?;
        Ok((caller, node))
    }

    pub(super) fn export_index(&self, id: u32) -> VfsResult<usize> {
        self.table().slot_of(id)
    }

    /// Whether `client`'s flavor is one the export of handle `fh` takes (what NFSv4's
    /// put-filehandle operations answer WRONGSEC for), without opening it: `WrongSec` if not;
    /// other refusals are left to the operation that uses the handle.
    pub fn check_flavor(&self, fh: &[u8], client: &Client) -> VfsResult<()> {
        let id = match self.paths.contains(fh) {
            true => handle::export_of(fh),
            false => self.key.verify(fh)?,
        };
        let t = self.table();
        let slot = t.slot_of(id)?;
        match t.options_for(slot, client) {
            Ok(o) if !o.admits(client.flavor) => Err(VfsError::WrongSec),
            _ => Ok(()),
        }
    }

    /// The slot of the export handle `fh` names, read from the handle without checking it
    /// (which calls a call waits behind, before it runs: `sunrpc::admission`); None for a
    /// handle of no export. A forged handle only names another export, or none.
    pub fn export_slot_of(&self, fh: &[u8]) -> Option<usize> {
        let id = u32::from_be_bytes(fh.get(2..6)?.try_into().ok()?);
        self.table().slot_of(id).ok()
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
        let t = self.table();
        let export = t.slot_of(export)?;
        let e = t.get(export)?;
        if nowait::active() && !e.local() {
            return Err(nowait::give_up());
        }
        let fd = match found {
            Ok(fd) => fd,
            // opening a handle may read the inode from the disk
            Err(_) if nowait::active() => return Err(nowait::give_up()),
            Err(kh) => {
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
                    .put(fh.clone(), fd.clone(), inode_key(export, e, &st));
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
        inode_key(export, self.table().get(export).ok()?, st)
    }

    /// Whether `node` is the root directory of its export.
    pub fn is_export_root(&self, node: &Node) -> bool {
        self.is_export_root_attr(node, &node.attr)
    }

    /// Whether an object with attributes `attr`, found in `dir`'s export, is that export's
    /// root directory (as [`Vfs::is_export_root`], without resolving it).
    pub fn is_export_root_attr(&self, dir: &Node, attr: &Attr) -> bool {
        let t = self.table();
        let Ok(e) = t.get(dir.export) else {
            return false;
        };
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
        let t = self.table();
        let e = t.get(export)?;
        if mount_id != e.mount_id {
            // A mount point inside the export: not crossed. knfsd shows the directory it
            // covers, which cannot be reached from here; "permission denied" is an answer every
            // operation may give (XDEV is not one LOOKUP may).
            return Err(VfsError::Errno(libc::EACCES));
        }
        Ok(Bytes::from(self.key.seal(e.id, &kh)))
    }

    pub(super) fn attr(&self, fd: BorrowedFd<'_>) -> VfsResult<Attr> {
        Ok(Attr::from_stat(&sys::fstat(fd)?))
    }

    /// Current attributes of a node (fresh stat; for a file a pNFS client may be writing on
    /// the data servers, with the size and modify time its copies have now).
    pub fn getattr(&self, node: &Node) -> VfsResult<Attr> {
        if let Some(a) = self.remote_attr(node) {
            return a;
        }
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

/// As [`Vfs::inode_key`], with the export at hand.
fn inode_key(slot: usize, e: &table::Export, st: &libc::stat64) -> Option<InodeKey> {
    (e.by_inode && st.st_mode & libc::S_IFMT != libc::S_IFDIR)
        .then_some((slot, st.st_dev, st.st_ino))
}
