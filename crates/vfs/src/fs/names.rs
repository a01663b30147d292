//! The namespace: LOOKUP, READLINK, CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RENAME and LINK, each as
//! the caller.

use super::*;

pub(super) fn exclusive_times(verf: [u8; 8]) -> (Time, Time) {
    let a = u32::from_be_bytes([verf[0], verf[1], verf[2], verf[3]]) & 0x7fff_ffff;
    let m = u32::from_be_bytes([verf[4], verf[5], verf[6], verf[7]]) & 0x7fff_ffff;
    (
        Time {
            sec: a as i64,
            nsec: 0,
        },
        Time {
            sec: m as i64,
            nsec: 0,
        },
    )
}

impl Vfs {
    /// The attributes of the entry `name` of `dir`, without making a handle: what a REMOVE or
    /// RENAME of the name would affect.
    pub fn entry_attr(&self, caller: &Caller, dir: &Node, name: &[u8]) -> VfsResult<Attr> {
        self.same_export(caller, dir)?;
        let c = cname(name)?;
        cred::with_creds(&caller.creds, || {
            Ok(Attr::from_stat(&sys::fstatat(
                dir.fd(),
                &c,
                libc::AT_SYMLINK_NOFOLLOW,
            )?))
        })
    }

    /// Which file the entry `name` of `dir` is, and its attributes: for state kept per file
    /// that a REMOVE or RENAME of the name affects (costs a handle, unlike [`Vfs::entry_attr`]).
    pub fn entry_id(&self, caller: &Caller, dir: &Node, name: &[u8]) -> VfsResult<(FileId, Attr)> {
        self.same_export(caller, dir)?;
        let c = cname(name)?;
        let (fh, attr) = self.lookup_c(caller, dir, &c)?;
        Ok((FileId::of(&fh, &attr), attr))
    }

    /// LOOKUP: the object `name` in `dir` (its handle, descriptor and attributes, which a
    /// COMPOUND's next operations on it use without resolving the handle again). `..` of an
    /// export root is the root.
    pub fn lookup(&self, caller: &Caller, dir: &Node, name: &[u8]) -> VfsResult<Node> {
        self.same_export(caller, dir)?;
        if dir.attr.ftype != FileType::Directory {
            return Err(VfsError::Errno(libc::ENOTDIR));
        }
        if !self.may(caller, dir, 1, false) {
            return Err(VfsError::Errno(libc::EACCES));
        }
        if name == b"." {
            return Ok(dir.clone());
        }
        if name == b".." && self.is_export_root(dir) {
            let root_fh = self.table().get(dir.export)?.root_fh.clone();
            return self.resolve(&root_fh);
        }
        if name == b".." {
            let parent = cred::with_creds(&caller.creds, || {
                sys::openat(dir.fd(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)
            })?;
            let fh = self.handle_at(dir.export, parent.as_fd(), c"", libc::AT_EMPTY_PATH)?;
            let attr = self.attr(parent.as_fd())?;
            return Ok(Node {
                fh,
                fd: Arc::new(parent),
                attr,
                export: dir.export,
            });
        }
        let c = cname(name)?;
        if nowait::active() {
            return self.lookup_cached(caller, dir, &c);
        }
        cred::with_creds(&caller.creds, || {
            let read_at = self.paths.epoch();
            let st = sys::fstatat(dir.fd(), &c, libc::AT_SYMLINK_NOFOLLOW)?;
            // a descriptor cached before the stat pins the inode, so its number names this
            // file (cache.rs)
            if let Some(key) = self.inode_key(dir.export, &st) {
                if let Some((fh, fd)) = self.paths.by_inode(&key, read_at) {
                    return Ok(Node {
                        fh,
                        fd,
                        attr: Attr::from_stat(&st),
                        export: dir.export,
                    });
                }
            }
            // The client is about to use the handle: open the object once and keep the
            // descriptor, so that call needs no open_by_handle_at (as root, which costs two
            // credential switches).
            let fd = sys::openat(dir.fd(), &c, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
            let st = sys::fstat(fd.as_fd())?;
            self.looked_up(dir, fd, &st, read_at)
        })
    }

    /// The object a LOOKUP in `dir` opened as `fd` (`st`: its stat), with the cached handle
    /// and descriptor when the inode index held them before `read_at`, otherwise a new handle,
    /// with the descriptor kept for the client's next call on it.
    fn looked_up(
        &self,
        dir: &Node,
        fd: OwnedFd,
        st: &libc::stat64,
        read_at: Epoch,
    ) -> VfsResult<Node> {
        let key = self.inode_key(dir.export, st);
        let attr = Attr::from_stat(st);
        if let Some(k) = &key {
            if let Some((fh, fd)) = self.paths.by_inode(k, read_at) {
                return Ok(Node {
                    fh,
                    fd,
                    attr,
                    export: dir.export,
                });
            }
        }
        let fh = self.handle_at(dir.export, fd.as_fd(), c"", libc::AT_EMPTY_PATH)?;
        let fd = Arc::new(fd);
        self.paths.put(fh.clone(), fd.clone(), key);
        Ok(Node {
            fh,
            fd,
            attr,
            export: dir.export,
        })
    }

    /// LOOKUP of `c` in `dir` by a call that must not block: the name resolved through the
    /// kernel's lookup cache only (a name not cached, positive or negative, gives up), then
    /// as [`Vfs::lookup`].
    fn lookup_cached(&self, caller: &Caller, dir: &Node, c: &CStr) -> VfsResult<Node> {
        cred::with_creds(&caller.creds, || {
            let read_at = self.paths.epoch();
            let fd = match sys::openat_cached(dir.fd(), c, libc::O_PATH | libc::O_NOFOLLOW) {
                Ok(fd) => fd,
                // EAGAIN: not cached; ENOSYS / EINVAL: a kernel without RESOLVE_CACHED
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EAGAIN | libc::ENOSYS | libc::EINVAL)
                    ) =>
                {
                    return Err(nowait::give_up())
                }
                Err(e) => return Err(e.into()),
            };
            let st = sys::fstat(fd.as_fd())?;
            self.looked_up(dir, fd, &st, read_at)
        })
    }

    pub(super) fn lookup_c(
        &self,
        caller: &Caller,
        dir: &Node,
        c: &CStr,
    ) -> VfsResult<(Bytes, Attr)> {
        cred::with_creds(&caller.creds, || {
            let st = sys::fstatat(dir.fd(), c, libc::AT_SYMLINK_NOFOLLOW)?;
            let fh = self.handle_at(dir.export, dir.fd(), c, 0)?;
            Ok((fh, Attr::from_stat(&st)))
        })
    }

    /// READLINK: the target of a symbolic link.
    pub fn readlink(&self, _caller: &Caller, node: &Node) -> VfsResult<Bytes> {
        if node.attr.ftype != FileType::Symlink {
            return Err(VfsError::Errno(libc::EINVAL));
        }
        Ok(Bytes::from(sys::readlink_fd(node.fd())?))
    }

    /// Makes a name in `dir` with `make` (as the caller) in the directory's turn, with the
    /// new file's handle and node: looked up in the same turn, so that a REMOVE of the new
    /// name (which takes the turn too) finds it cached and closes it.
    fn make_name(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &CStr,
        make: impl FnOnce() -> std::io::Result<()>,
    ) -> VfsResult<DirChange<Node>> {
        self.change_dir(dir, || {
            cred::with_creds(&caller.creds, make)?;
            let (fh, _) = self.lookup_c(caller, dir, name)?;
            self.resolve(&fh)
        })
    }

    /// The rest of a MKDIR, SYMLINK or MKNOD after [`Vfs::make_name`], outside the
    /// directory's turn: the attributes asked for beyond the mode, and the directory's flush.
    /// A size means nothing for these (knfsd ignores it too): applied to a new directory it
    /// would fail the call after the directory was made.
    fn finish_create(
        &self,
        caller: &Caller,
        dir: &Node,
        made: DirChange<Node>,
        s: &SetAttrs,
    ) -> VfsResult<DirChange<(Bytes, Attr)>> {
        let rest = SetAttrs {
            size: None,
            ..s.clone()
        };
        let made = made.try_map(|node| {
            let attr = self.set_after_create(caller, &node, &rest)?;
            Ok((node.fh, attr))
        })?;
        self.commit_dir(caller, dir)?;
        Ok(made)
    }

    /// Applies what a create asked for beyond the mode and umask (given at creation) to the
    /// new `node`;
    /// its attributes.
    pub(super) fn set_after_create(
        &self,
        caller: &Caller,
        node: &Node,
        s: &SetAttrs,
    ) -> VfsResult<Attr> {
        let rest = SetAttrs {
            mode: None,
            umask: None,
            ..s.clone()
        };
        if rest != SetAttrs::default() {
            self.apply_setattr(caller, node, &rest, None)
        } else {
            Ok(node.attr.clone())
        }
    }

    /// The node of a file CREATE just made, from the (read-write) descriptor that made it: no
    /// name is looked up again (which also cannot race with a rename), and the descriptor is
    /// cached for both uses, so neither the client's next call on the handle needs an
    /// open_by_handle_at nor its first WRITE a data descriptor (each opened as root, which
    /// costs two credential switches).
    pub(super) fn created_node(&self, dir: &Node, fd: OwnedFd) -> VfsResult<Node> {
        let st = sys::fstat(fd.as_fd())?;
        let fh = self.handle_at(dir.export, fd.as_fd(), c"", libc::AT_EMPTY_PATH)?;
        let fd = Arc::new(fd);
        self.paths
            .put(fh.clone(), fd.clone(), self.inode_key(dir.export, &st));
        self.data.put(fh.clone(), fd.clone());
        Ok(Node {
            fh,
            fd,
            attr: Attr::from_stat(&st),
            export: dir.export,
        })
    }

    pub(super) fn check_dir_for_change(&self, caller: &Caller, dir: &Node) -> VfsResult<()> {
        self.same_export(caller, dir)?;
        self.writable(caller)?;
        if dir.attr.ftype != FileType::Directory {
            return Err(VfsError::Errno(libc::ENOTDIR));
        }
        Ok(())
    }

    /// CREATE as NFSv3 has it: [`Vfs::create_file`], and UNCHECKED on an existing regular
    /// file sets its size when asked (RFC 1813 section 3.3.8; knfsd applies only the size
    /// too). With the directory's attributes just before and after (a [`DirChange`]).
    pub fn create(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        how: CreateMode,
        s: &SetAttrs,
    ) -> VfsResult<DirChange<(Bytes, Attr)>> {
        let made = self.create_file(caller, dir, name, how, s)?;
        made.try_map(|c| match s.size {
            Some(size) if !c.created => {
                let node = self.resolve(&c.fh)?;
                let only_size = SetAttrs {
                    size: Some(size),
                    ..Default::default()
                };
                let attr = self.setattr(caller, &node, &only_size, None)?;
                Ok((c.fh, attr))
            }
            _ => Ok((c.fh, c.attr)),
        })
    }

    /// CREATE a regular file, telling whether it was made or found; an existing file that
    /// UNCHECKED finds is left as it is. The directory's turn covers the create and what
    /// decides its outcome: the new file's node and an exclusive create's verifier (so that
    /// a retransmission waiting for the turn finds them), or the look-up of the name that
    /// was there; the attributes set on a new file and the directory's flush (an fsync on
    /// `sync` exports) come after it, so that creates in one directory wait for each other's
    /// open(2) only.
    pub fn create_file(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        how: CreateMode,
        s: &SetAttrs,
    ) -> VfsResult<DirChange<Created>> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        let mode = match how {
            CreateMode::Exclusive(_) => self.create_mode(dir, s, 0o600),
            _ => self.create_mode(dir, s, 0o644),
        };
        let opened = self.change_dir(dir, || {
            let fd = cred::with_creds(&caller.creds, || {
                sys::openat(
                    dir.fd(),
                    &c,
                    // a new file opens read-write whatever its mode
                    libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_NOFOLLOW,
                    mode,
                )
            });
            match (fd, how) {
                (Ok(fd), CreateMode::Exclusive(verf)) => {
                    let node = self.created_node(dir, fd)?;
                    let t = exclusive_times(verf);
                    let verifier = SetAttrs {
                        atime: SetTime::Client(t.0),
                        mtime: SetTime::Client(t.1),
                        ..Default::default()
                    };
                    let attr = self.apply_setattr(caller, &node, &verifier, None)?;
                    Ok(Opened::Made(node, Some(attr)))
                }
                (Ok(fd), _) => Ok(Opened::Made(self.created_node(dir, fd)?, None)),
                (Err(e), CreateMode::Unchecked | CreateMode::Exclusive(_))
                    if e.raw_os_error() == Some(libc::EEXIST) =>
                {
                    Ok(Opened::Found(self.lookup_c(caller, dir, &c)?))
                }
                (Err(e), _) => Err(e.into()),
            }
        })?;
        let made_here = matches!(opened.value, Opened::Made(..));
        let made = opened.try_map(|opened| match (opened, how) {
            (Opened::Made(node, Some(attr)), _) => Ok(Created {
                fh: node.fh,
                attr,
                created: true,
            }),
            (Opened::Made(node, None), _) => {
                let attr = self.set_after_create(caller, &node, s)?;
                Ok(Created {
                    fh: node.fh,
                    attr,
                    created: true,
                })
            }
            (Opened::Found((fh, attr)), CreateMode::Exclusive(verf)) => {
                let t = exclusive_times(verf);
                if attr.ftype == FileType::Regular
                    && attr.atime.sec == t.0.sec
                    && attr.mtime.sec == t.1.sec
                {
                    // a retransmission of the create that made it
                    Ok(Created {
                        fh,
                        attr,
                        created: true,
                    })
                } else {
                    Err(VfsError::Errno(libc::EEXIST))
                }
            }
            (Opened::Found((fh, attr)), _) => {
                if attr.ftype != FileType::Regular {
                    return Err(VfsError::Errno(libc::EEXIST));
                }
                Ok(Created {
                    fh,
                    attr,
                    created: false,
                })
            }
        })?;
        if made_here {
            self.commit_dir(caller, dir)?;
        }
        Ok(made)
    }

    /// MKDIR, with the directory's attributes around it (as [`Vfs::create`]).
    pub fn mkdir(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        s: &SetAttrs,
    ) -> VfsResult<DirChange<(Bytes, Attr)>> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        let mode = self.create_mode(dir, s, 0o755);
        let made = self.make_name(caller, dir, &c, || sys::mkdirat(dir.fd(), &c, mode))?;
        self.finish_create(caller, dir, made, s)
    }

    /// SYMLINK, with the directory's attributes around it (as [`Vfs::create`]).
    pub fn symlink(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        target: &[u8],
        s: &SetAttrs,
    ) -> VfsResult<DirChange<(Bytes, Attr)>> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        if target.is_empty() {
            return Err(VfsError::Errno(libc::ENOENT));
        }
        let t = CString::new(target).map_err(|_| VfsError::Errno(libc::EINVAL))?;
        let made = self.make_name(caller, dir, &c, || sys::symlinkat(&t, dir.fd(), &c))?;
        self.finish_create(caller, dir, made, s)
    }

    /// MKNOD: a device, socket or pipe, with the directory's attributes around it (as
    /// [`Vfs::create`]).
    pub fn mknod(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        kind: SpecialFile,
        s: &SetAttrs,
    ) -> VfsResult<DirChange<(Bytes, Attr)>> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        let perm = self.create_mode(dir, s, 0o644);
        let (fmt, dev) = match kind {
            SpecialFile::Char(ma, mi) => (libc::S_IFCHR, libc::makedev(ma, mi)),
            SpecialFile::Block(ma, mi) => (libc::S_IFBLK, libc::makedev(ma, mi)),
            SpecialFile::Socket => (libc::S_IFSOCK, 0),
            SpecialFile::Fifo => (libc::S_IFIFO, 0),
        };
        let made = self.make_name(caller, dir, &c, || {
            sys::mknodat(dir.fd(), &c, fmt | perm, dev)
        })?;
        self.finish_create(caller, dir, made, s)
    }

    /// REMOVE (non-directories) or RMDIR (`dir_only`), with the directory's attributes just
    /// before and after the name went (a [`DirChange`]).
    pub fn remove(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        dir_only: bool,
    ) -> VfsResult<DirChange<()>> {
        self.check_dir_for_change(caller, dir)?;
        if name == b"." {
            return Err(VfsError::Errno(libc::EINVAL));
        }
        if name == b".." {
            return Err(VfsError::Errno(libc::ENOTEMPTY));
        }
        let c = cname(name)?;
        // in the directory's turn only what changes it: closing the freed file's descriptors
        // (which frees its pages) and the flush wait outside it
        let removed = self.change_dir(dir, || {
            cred::with_creds(&caller.creds, || {
                let mut gone = None;
                if !dir_only {
                    // unlink(2) gives EISDIR for directories; NFSv3 expects it too.
                    let read_at = self.paths.epoch();
                    let st = sys::fstatat(dir.fd(), &c, libc::AT_SYMLINK_NOFOLLOW)?;
                    if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                        return Err(VfsError::Errno(libc::EISDIR));
                    }
                    gone = self.last_link_handle(dir, &c, &st, read_at);
                }
                sys::unlinkat(dir.fd(), &c, if dir_only { libc::AT_REMOVEDIR } else { 0 })?;
                Ok(gone)
            })
        })?;
        if let Some(fh) = &removed.value {
            self.forget(fh);
        }
        self.commit_dir(caller, dir)?;
        Ok(DirChange {
            value: (),
            before: removed.before,
            after: removed.after,
        })
    }

    /// The handle of `c` in `dir` (whose stat `st` was read at epoch `read_at`) when removing
    /// that name frees the file: its last link, not a directory.
    pub(super) fn last_link_handle(
        &self,
        dir: &Node,
        c: &CStr,
        st: &libc::stat64,
        read_at: Epoch,
    ) -> Option<Bytes> {
        let regular = st.st_mode & libc::S_IFMT != libc::S_IFDIR;
        if !regular || st.st_nlink != 1 {
            return None;
        }
        // a descriptor cached before the stat pins the inode, so its number names this file
        // (cache.rs)
        if let Some(key) = self.inode_key(dir.export, st) {
            if let Some((fh, _)) = self.paths.by_inode(&key, read_at) {
                return Some(fh);
            }
        }
        self.handle_at(dir.export, dir.fd(), c, 0).ok()
    }

    /// Closes the descriptors cached for a file whose last name is gone: an open descriptor
    /// keeps a removed file's space allocated.
    pub(super) fn forget(&self, fh: &Bytes) {
        self.paths.remove(fh);
        self.data.remove(fh);
        if let Some(r) = self.remote.get() {
            if r.holds(fh) {
                r.released(fh);
            }
        }
    }

    /// RENAME `from_name` in `from` to `to_name` in `to` (same export only), with both
    /// directories' attributes just before and after (two [`DirChange`]s).
    pub fn rename(
        &self,
        caller: &Caller,
        from: &Node,
        from_name: &[u8],
        to: &Node,
        to_name: &[u8],
    ) -> VfsResult<(DirChange<()>, DirChange<()>)> {
        self.check_dir_for_change(caller, from)?;
        self.check_dir_for_change(caller, to)?;
        let is_dot = |n: &[u8]| n == b"." || n == b"..";
        if is_dot(from_name) || is_dot(to_name) {
            return Err(VfsError::Errno(libc::EINVAL));
        }
        let f = cname(from_name)?;
        let t = cname(to_name)?;
        let (source, target) = self.change_dirs(from, to, || {
            cred::with_creds(&caller.creds, || {
                // a file the new name replaces may lose its last link
                let read_at = self.paths.epoch();
                let gone = sys::fstatat(to.fd(), &t, libc::AT_SYMLINK_NOFOLLOW)
                    .ok()
                    .and_then(|st| self.last_link_handle(to, &t, &st, read_at));
                sys::renameat(from.fd(), &f, to.fd(), &t)?;
                Ok::<_, VfsError>(gone)
            })
        })?;
        if let Some(fh) = &source.value {
            self.forget(fh);
        }
        self.commit_dir(caller, from)?;
        if to.attr.fileid != from.attr.fileid || to.attr.fsid != from.attr.fsid {
            self.commit_dir(caller, to)?;
        }
        Ok((source.map(|_| ()), target))
    }

    /// LINK: a new name `name` in `dir` for `node` (same export only); the file's attributes
    /// after, with the directory's around the link (a [`DirChange`]).
    pub fn link(
        &self,
        caller: &Caller,
        node: &Node,
        dir: &Node,
        name: &[u8],
    ) -> VfsResult<DirChange<Attr>> {
        self.same_export(caller, node)?;
        self.check_dir_for_change(caller, dir)?;
        if node.attr.ftype == FileType::Directory {
            return Err(VfsError::Errno(libc::EISDIR));
        }
        let c = new_name(name)?;
        let path = node.proc_path();
        let linked = self.change_dir(dir, || {
            Ok(cred::with_creds(&caller.creds, || {
                sys::linkat_follow(sys::cwd(), &path, dir.fd(), &c)
            })?)
        })?;
        self.commit_dir(caller, dir)?;
        linked.try_map(|()| self.attr(node.fd()))
    }
}

/// What the exclusive open(2) of a create found, in the directory's turn.
enum Opened {
    /// It made the file: its node, and for an exclusive create the attributes with the
    /// verifier set.
    Made(Node, Option<Attr>),
    /// A file of that name was there: its handle and attributes.
    Found((Bytes, Attr)),
}
