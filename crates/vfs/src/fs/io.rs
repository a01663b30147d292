//! File data: READ (into owned memory, a transport buffer, or page-cache pages for splicing), WRITE
//! and COMMIT through cached descriptors.

use super::*;

/// The stripe of the WRITE turns of the file with attributes `a`, among `n`.
pub(super) fn write_turn(a: &Attr, n: usize) -> usize {
    let h = (a.fileid ^ a.fsid.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 32) as usize % n
}

/// The error of a read that must not wait: data not in the page cache gives up, and so does a
/// file system that refuses such reads (`usable` is then cleared: no read is tried again);
/// other errors are the read's.
pub(super) fn nowait_error(e: std::io::Error, usable: &AtomicBool) -> VfsError {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => nowait::give_up(),
        Some(libc::EOPNOTSUPP) => {
            usable.store(false, Ordering::Relaxed);
            nowait::give_up()
        }
        _ => VfsError::from(e),
    }
}

/// Reads above this many bytes ask whether the page cache holds them before they are tried
/// without waiting.
const PROBE_ABOVE: usize = nowait::IO_MAX as usize;

/// Gives up a large read that must not wait when the page cache lacks part of it: the try
/// would copy the part held and then give up, and the read that may wait copy it again (1 MiB
/// READs of an ext4 file just evicted, 4 in flight: the tries were 16 % of rnfsd's CPU samples,
/// the reads after them 29 %). Asked with `cachestat`, which starts no read-ahead: a probe
/// with a one-byte `RWF_NOWAIT` read of the last page did, at the end of the range, and made
/// sequential reads of sparse files slower.
fn tail_cached(fd: BorrowedFd<'_>, node: &Node, count: usize, offset: u64) -> VfsResult<()> {
    let end = offset.saturating_add(count as u64).min(node.attr.size);
    if count <= PROBE_ABOVE || end <= offset {
        return Ok(());
    }
    match sys::range_cached(fd, offset, end - offset) {
        Some(false) => Err(nowait::give_up()),
        _ => Ok(()),
    }
}

/// A file with every block allocated: it has no hole to look for.
pub(super) fn dense(attr: &Attr) -> bool {
    attr.used >= attr.size.div_ceil(4096) * 4096
}

/// A read that must not wait and got only part of what the file holds (the rest is not in the
/// page cache) gives up, so that the client gets all of it from a read that may wait.
pub(super) fn short_nowait_read(n: usize, count: usize, offset: u64, attr: &Attr) -> VfsResult<()> {
    if nowait::active() && n < count && offset.saturating_add(n as u64) < attr.size {
        return Err(nowait::give_up());
    }
    Ok(())
}

impl Vfs {
    pub(super) fn data_fd(&self, node: &Node) -> VfsResult<Arc<OwnedFd>> {
        if let Some(fd) = self.data.get(&node.fh) {
            return Ok(fd);
        }
        if nowait::active() {
            return Err(nowait::give_up());
        }
        let path = node.proc_path();
        let cwd = sys::cwd();
        let fd = cred::as_root(|| {
            sys::openat(cwd, &path, libc::O_RDWR, 0).or_else(|e| match e.raw_os_error() {
                Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM)
                | Some(libc::ETXTBSY) => sys::openat(cwd, &path, libc::O_RDONLY, 0),
                _ => Err(e),
            })
        })?;
        let fd = Arc::new(fd);
        // a file whose last name went after the caller resolved it: cached, its descriptor
        // would keep its space until evicted (`Vfs::forget` has already run)
        if sys::fstat(fd.as_fd())?.st_nlink > 0 {
            self.data.put(node.fh.clone(), fd.clone());
        }
        Ok(fd)
    }

    pub(super) fn check_regular(node: &Node) -> VfsResult<()> {
        match node.attr.ftype {
            FileType::Regular => Ok(()),
            FileType::Directory => Err(VfsError::Errno(libc::EISDIR)),
            _ => Err(VfsError::Errno(libc::EINVAL)),
        }
    }

    /// READ, the one entry point for NFSv3 and NFSv4: up to `count` bytes at `offset`, as file
    /// pages when `to` takes them and the READ splices ([`Vfs::read_pages`]), else read into
    /// the transport's buffer when `to` offers one ([`Vfs::read_into`]), else into memory of
    /// its own ([`Vfs::read`]); returns the data, EOF flag and post-operation attributes.
    pub fn read_to(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
        to: &dyn payload::PayloadTarget,
    ) -> VfsResult<(payload::Payload, bool, Attr)> {
        let r = self.read_to_any(caller, node, offset, count, to);
        if let Ok((data, _, _)) = &r {
            self.count_io(node, data.len(), false);
        }
        r
    }

    /// [`Vfs::read_to`], uncounted.
    fn read_to_any(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
        to: &dyn payload::PayloadTarget,
    ) -> VfsResult<(payload::Payload, bool, Attr)> {
        if let Some(r) = self.remote(node) {
            let (data, eof, attr) = self.remote_read(r, caller, node, offset, count)?;
            return Ok((payload::Payload::Bytes(data), eof, attr));
        }
        if to.takes_pages() {
            if let Some((pages, eof, attr)) = self.read_pages(caller, node, offset, count)? {
                return Ok((payload::Payload::Pages(pages), eof, attr));
            }
        }
        let mut read = None;
        let len = count.min(MAX_IO) as usize;
        let filled = to.fill(len, &mut |buf| {
            let r = self.read_into(caller, node, offset, buf);
            let n = r.as_ref().map_or(0, |(n, _, _)| *n);
            read = Some(r);
            n
        });
        if let (Some(data), Some(r)) = (filled, read) {
            let (_, eof, attr) = r?;
            return Ok((payload::Payload::Bytes(data), eof, attr));
        }
        let (data, eof, attr) = self.read(caller, node, offset, count)?;
        Ok((payload::Payload::Bytes(data), eof, attr))
    }

    /// READ: up to `count` bytes at `offset` into a buffer of its own; returns data, EOF flag and
    /// post-operation attributes.
    pub fn read(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
    ) -> VfsResult<(Bytes, bool, Attr)> {
        if let Some(r) = self.remote(node) {
            return self.remote_read(r, caller, node, offset, count);
        }
        let fd = self.read_fd(caller, node)?;
        let count = count.min(MAX_IO) as usize;
        if offset >= node.attr.size {
            // Nothing to read (and offsets past i64::MAX would make pread fail).
            let attr = self.attr(fd.as_fd())?;
            if offset >= attr.size {
                return Ok((Bytes::new(), true, attr));
            }
        }
        let mut buf = BytesMut::with_capacity(count);
        let n = self.pread_owned(fd.as_fd(), node, &mut buf, count, offset)?;
        let (eof, attr) = self.after_read(fd.as_fd(), node, offset, count, n)?;
        Ok((buf.freeze(), eof, attr))
    }

    /// READ as file pages for a stream transport to splice into its socket (see
    /// [`crate::pages`]): None, and nothing read, when this READ should copy instead (a small
    /// one, one that must not wait, no pipe free, a file system that cannot splice, a READ at or
    /// past the end of the file), or when the caller may not read the file.
    pub fn read_pages(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
    ) -> VfsResult<Option<(Arc<FilePages>, bool, Attr)>> {
        let t = self.table();
        let export = t.get(node.export)?;
        let count = count.min(MAX_IO) as usize;
        if count < SPLICE_MIN
            || nowait::active()
            || offset >= node.attr.size
            || !export.splice_reads.load(Ordering::Relaxed)
        {
            return Ok(None);
        }
        let fd = self.read_fd(caller, node)?;
        let Some(pipe) = self.pipes.get() else {
            return Ok(None);
        };
        if !pipe.holds(offset, count) {
            self.pipes.put(pipe, true);
            return Ok(None);
        }
        let mut off = offset as i64; // below the size, which fits an i64
        let mut n = 0;
        let mut full = false;
        while n < count {
            match sys::splice(
                fd.as_fd(),
                Some(&mut off),
                pipe.write_end(),
                count - n,
                libc::SPLICE_F_NONBLOCK | libc::SPLICE_F_MOVE,
            ) {
                Ok(0) => break,
                Ok(k) => n += k,
                // the pipe is full (pages larger than assumed): a short READ
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if n == 0 {
                        self.pipes.put(pipe, true);
                        return Ok(None);
                    }
                    full = true;
                    break;
                }
                Err(e) if n == 0 && matches!(e.raw_os_error(), Some(libc::EINVAL)) => {
                    tracing::info!(export = %export.entry.path.display(),
                        "the file system cannot splice: READ data is copied");
                    export.splice_reads.store(false, Ordering::Relaxed);
                    self.pipes.put(pipe, true);
                    return Ok(None);
                }
                Err(e) => {
                    self.pipes.put(pipe, n == 0);
                    return Err(e.into());
                }
            }
        }
        let pages = Arc::new(FilePages::new(pipe, n, self.pipes.clone()));
        let (eof, attr) = match full {
            false => self.after_read(fd.as_fd(), node, offset, count, n)?,
            true => {
                let attr = self.attr(fd.as_fd())?;
                (offset + n as u64 >= attr.size, attr)
            }
        };
        Ok(Some((pages, eof, attr)))
    }

    /// [`Vfs::read_pages`] for READ_PLUS: for a file without holes (whose extents are one data
    /// extent); None for others.
    pub fn read_extent_pages(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
    ) -> VfsResult<Option<(Arc<FilePages>, bool, Attr)>> {
        match dense(&node.attr) {
            true => self.read_pages(caller, node, offset, count),
            false => Ok(None),
        }
    }

    /// READ into `buf` (transport memory the reply is sent from, e.g. registered for RDMA),
    /// at most `MAX_IO` bytes of it; returns the bytes read, EOF flag and attributes.
    pub fn read_into(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        buf: &mut [u8],
    ) -> VfsResult<(usize, bool, Attr)> {
        let fd = self.read_fd(caller, node)?;
        let count = buf.len().min(MAX_IO as usize);
        let n = if offset >= node.attr.size && offset > i64::MAX as u64 {
            0
        } else {
            self.pread_to(fd.as_fd(), node, &mut buf[..count], offset)?
        };
        let (eof, attr) = self.after_read(fd.as_fd(), node, offset, count, n)?;
        Ok((n, eof, attr))
    }

    /// EOF and attributes after reading `n` of `count` bytes at `offset`. The attributes are
    /// those `node` was resolved with an instant before, unless the read contradicts them (the
    /// file grew past or shrank below that size meanwhile): then the file is asked again. This
    /// saves a `fstat` per READ, a sixth of its system calls.
    pub(super) fn after_read(
        &self,
        fd: BorrowedFd<'_>,
        node: &Node,
        offset: u64,
        count: usize,
        n: usize,
    ) -> VfsResult<(bool, Attr)> {
        let end = offset.saturating_add(n as u64);
        let agrees = match n == count {
            true => end <= node.attr.size,
            false => end == node.attr.size,
        };
        let attr = match agrees {
            true => node.attr.clone(),
            false => self.attr(fd)?,
        };
        short_nowait_read(n, count, offset, &attr)?;
        Ok((n < count || end >= attr.size, attr))
    }

    /// `count` bytes at `offset` appended to `buf`, with `preadv2(RWF_NOWAIT)` where the call
    /// must not wait.
    pub(super) fn pread_owned(
        &self,
        fd: BorrowedFd<'_>,
        node: &Node,
        buf: &mut BytesMut,
        count: usize,
        offset: u64,
    ) -> VfsResult<usize> {
        let t = self.table();
        Ok(match Self::nowait_flag(&t, node) {
            Some(flag) => {
                tail_cached(fd, node, count, offset)?;
                sys::pread_into_nowait(fd, buf, count, offset).map_err(|e| nowait_error(e, flag))?
            }
            None => sys::pread_into(fd, buf, count, offset)?,
        })
    }

    /// `buf.len()` bytes at `offset` into `buf`, with `preadv2(RWF_NOWAIT)` where the call must
    /// not wait.
    pub(super) fn pread_to(
        &self,
        fd: BorrowedFd<'_>,
        node: &Node,
        buf: &mut [u8],
        offset: u64,
    ) -> VfsResult<usize> {
        let t = self.table();
        Ok(match Self::nowait_flag(&t, node) {
            Some(flag) => {
                tail_cached(fd, node, buf.len(), offset)?;
                sys::pread_slice_nowait(fd, buf, offset).map_err(|e| nowait_error(e, flag))?
            }
            None => sys::pread_slice(fd, buf, offset)?,
        })
    }

    /// For a read that must not wait and may be tried, the flag of `preadv2(RWF_NOWAIT)`
    /// (None: a plain read, as when waiting is allowed).
    pub(super) fn nowait_flag<'a>(t: &'a ExportTable, node: &Node) -> Option<&'a AtomicBool> {
        match &t.get(node.export).ok()?.nowait_reads {
            NowaitReads::Flag(usable) if nowait::active() => Some(usable),
            _ => None,
        }
    }

    /// The checks READ makes, then the file's data descriptor.
    pub(super) fn read_fd(&self, caller: &Caller, node: &Node) -> VfsResult<Arc<OwnedFd>> {
        if nowait::active() {
            let tried = match &self.table().get(node.export)?.nowait_reads {
                NowaitReads::Memory => true,
                NowaitReads::Flag(usable) => usable.load(Ordering::Relaxed),
                NowaitReads::Never => false,
            };
            if !tried {
                return Err(nowait::give_up());
            }
        }
        self.same_export(caller, node)?;
        Self::check_regular(node)?;
        // Reading needs read permission; execute-only files may be read by a client paging
        // them in (knfsd does the same).
        if !self.may(caller, node, 4, true) && !self.may(caller, node, 1, false) {
            return Err(VfsError::Errno(libc::EACCES));
        }
        self.data_fd(node)
    }

    /// The checks a change to a file's data makes (WRITE, ALLOCATE), then the file's data
    /// descriptor.
    pub(super) fn write_fd(&self, caller: &Caller, node: &Node) -> VfsResult<Arc<OwnedFd>> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        Self::check_regular(node)?;
        if !self.may(caller, node, 2, true) {
            return Err(VfsError::Errno(libc::EACCES));
        }
        self.data_fd(node)
    }

    /// WRITE: `data` at `offset` with the durability asked; returns what was done and the
    /// attributes before and after.
    pub fn write(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        data: &[u8],
        stable: Stability,
    ) -> VfsResult<(Stability, Attr)> {
        let fd = self.write_fd(caller, node)?;
        if let Some(done) = self.remote_write(caller, node, &fd, offset, data, stable)? {
            return Ok(done);
        }
        let flags = match stable {
            // `async` exports acknowledge stable writes unflushed, as knfsd's do
            _ if !caller.sync => 0,
            Stability::Unstable => 0,
            Stability::DataSync => libc::RWF_DSYNC,
            Stability::FileSync => libc::RWF_SYNC,
        };
        // Writes to one file hold its inode lock in turn anyway; a thread that finds it taken
        // spins in the kernel for as long as the holder copies (a 1 MiB WRITE: ~100 µs, 3 % of
        // all CPU with 16 in flight on loopback). Here it sleeps instead. Not for synchronous
        // writes: their flushes overlap once the inode lock is let go.
        // Tried without waiting only where files live in memory: XFS takes `RWF_NOWAIT`
        // buffered writes but refuses (EAGAIN) every one that must update the file's times,
        // which after each WRITE's fstat is each next one (kernel 6.18); ext4 refuses them all.
        if nowait::active() && !self.table().get(node.export)?.in_memory() {
            return Err(nowait::give_up());
        }
        let turn = match flags == 0 && data.len() >= WRITE_TURN_MIN {
            false => None,
            true => {
                let turn = &self.write_turns[write_turn(&node.attr, self.write_turns.len())];
                match nowait::active() {
                    true => Some(turn.try_lock().ok_or_else(nowait::give_up)?),
                    false => Some(turn.lock()),
                }
            }
        };
        // As the caller: the kernel clears the set-id bits of a file written by anyone without
        // CAP_FSETID, which a thread has only while its fsuid is 0 (see [`Vfs::as_writer`]).
        Self::as_writer(caller, || {
            // a try whose identity could not be switched writes nothing
            if nowait::given_up() {
                return Err(nowait::give_up());
            }
            sys::pwrite_all(fd.as_fd(), data, offset, flags)
                .inspect_err(|e| self.write_failed(e))
                .map_err(VfsError::from)
        })?;
        drop(turn);
        self.count_io(node, data.len(), true);
        Ok((stable, self.attr(fd.as_fd())?))
    }

    /// Runs `f`, a change to a file's data through a descriptor opened as root, with the
    /// caller's identity. The kernel's permission check was made against the file's mode
    /// before; what matters here is what the kernel does as a side effect of the change as a
    /// local process would see it: a write, truncation, allocation, copy or clone by a caller
    /// without CAP_FSETID (every non-root caller: a non-zero fsuid drops it) clears the
    /// set-user-ID bit and the set-group-ID bit of a group-executable file, so nobody but root
    /// can change a set-id program and keep it set-id. The thread keeps the caller's identity
    /// afterwards (as every call does, [`cred::assume`]).
    pub(super) fn as_writer<T>(caller: &Caller, f: impl FnOnce() -> T) -> T {
        cred::with_creds(&caller.creds, f)
    }

    /// COMMIT: makes all written data of the file durable.
    pub fn commit(&self, caller: &Caller, node: &Node) -> VfsResult<Attr> {
        self.same_export(caller, node)?;
        Self::check_regular(node)?;
        let fd = self.data_fd(node)?;
        if let Some(r) = self.remote(node) {
            r.commit(&node.fh)?;
        } else if caller.sync {
            sys::fdatasync(fd.as_fd()).inspect_err(|e| self.write_failed(e))?;
        }
        self.attr(fd.as_fd())
    }

    /// Whether a change to `node` must be flushed before the reply: on a `sync` export whose
    /// file system has stable storage (a memory file system such as tmpfs has none: its fsync
    /// does nothing, and the open and the identity switch around it would be all it cost).
    fn must_commit(&self, caller: &Caller, node: &Node) -> bool {
        caller.sync && !self.table().get(node.export).is_ok_and(|e| e.in_memory())
    }

    /// Makes a change to directory `dir` (a name made, removed or renamed) durable before the
    /// reply, on `sync` exports: NFS promises that every change but an unstable WRITE survives
    /// a server crash once acknowledged (RFC 1813 section 3.3; knfsd's commit_metadata).
    pub(super) fn commit_dir(&self, caller: &Caller, dir: &Node) -> VfsResult<()> {
        if !self.must_commit(caller, dir) {
            return Ok(());
        }
        // the cached descriptor is O_PATH, which fsync refuses
        let fd =
            cred::as_root(|| sys::openat(dir.fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0))?;
        Ok(sys::fsync(fd.as_fd())?)
    }

    /// Makes an attribute change of `node` durable before the reply (as [`Vfs::commit_dir`]).
    /// A regular file's fsync also flushes data written unstable, which its next COMMIT would
    /// have; symbolic links and special files have no descriptor to sync through, and their
    /// inodes go with the file system's next commit.
    pub(super) fn commit_attrs(&self, caller: &Caller, node: &Node) -> VfsResult<()> {
        if !self.must_commit(caller, node) {
            return Ok(());
        }
        match node.attr.ftype {
            FileType::Directory => self.commit_dir(caller, node),
            FileType::Regular => Ok(
                sys::fsync(self.data_fd(node)?.as_fd()).inspect_err(|e| self.write_failed(e))?
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(dev: u64, ino: u64) -> Attr {
        let mut st = sys::empty_stat();
        st.st_dev = dev;
        st.st_ino = ino;
        Attr::from_stat(&st)
    }

    #[test]
    fn write_turns_are_per_file_and_spread() {
        // the same file always takes the same turn
        assert_eq!(
            write_turn(&attr(5, 77), WRITE_TURNS),
            write_turn(&attr(5, 77), WRITE_TURNS)
        );
        // consecutive inode numbers (as a file system gives them out) rarely share a stripe
        let mut seen = std::collections::HashSet::new();
        for ino in 1000..1512u64 {
            let t = write_turn(&attr(0x803, ino), WRITE_TURNS);
            assert!(t < WRITE_TURNS);
            seen.insert(t);
        }
        assert!(seen.len() > 480, "512 files on only {} stripes", seen.len());
    }
}
