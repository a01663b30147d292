//! Files whose data lives elsewhere. On a pNFS metadata server the data of a file of a pNFS
//! export is on data servers, and the local file keeps only its attributes (the size
//! included: a sparse placeholder). Every data operation, from NFSv3 and NFSv4 alike, asks
//! the [`RemoteData`] first, so that a client reading or writing through the metadata server
//! sees what pNFS clients wrote to the data servers.

use super::*;

/// Where the data of some files is kept (see the module comment). Calls block (they go over
/// the network); none is made while a COMPOUND is tried without blocking.
pub trait RemoteData: Send + Sync {
    /// Whether the data of the file with handle `fh` lives elsewhere.
    fn holds(&self, fh: &[u8]) -> bool;
    /// Places the data of file `fh`, which holds none here yet, elsewhere (a first write to it
    /// by a client of a pNFS export); false when it stays here.
    fn place(&self, fh: &Bytes) -> VfsResult<bool>;
    /// Up to `count` bytes at `offset` (fewer where the copy ends; the caller bounds the
    /// count by the file's size and fills what is missing with zeros).
    fn read(&self, fh: &[u8], offset: u64, count: u32) -> VfsResult<Bytes>;
    /// Writes `data` at `offset` with the durability asked; returns what was done.
    fn write(&self, fh: &[u8], offset: u64, data: Bytes, stable: Stability)
        -> VfsResult<Stability>;
    /// Makes the written data durable.
    fn commit(&self, fh: &[u8]) -> VfsResult<()>;
    /// Sets the size of the data.
    fn truncate(&self, fh: &[u8], size: u64) -> VfsResult<()>;
    /// The file's last link is gone: its data may go too.
    fn released(&self, fh: &Bytes);
    /// Whether someone may be writing the data elsewhere now and report it only later (a
    /// pNFS client holding a read-write layout): the size and modify time here lag behind
    /// until then. Answers from memory.
    fn written_elsewhere(&self, fh: &[u8]) -> bool;
    /// Where the data ends and when it was last written, as its copies say now (blocks).
    fn extent(&self, fh: &[u8]) -> (Option<u64>, Option<Time>);
}

impl Vfs {
    /// Sends the data of the files `r` holds there (once, at start).
    pub fn set_remote_data(&self, r: Arc<dyn RemoteData>) {
        if self.remote.set(r).is_err() {
            tracing::warn!("remote data already set; the second is ignored");
        }
    }

    /// Where `node`'s data lives when not here.
    pub(super) fn remote(&self, node: &Node) -> Option<&Arc<dyn RemoteData>> {
        self.remote
            .get()
            .filter(|r| node.attr.ftype == FileType::Regular && r.holds(&node.fh))
    }

    /// The remote holder of `node`'s data when a write by `caller` is to go there: a file
    /// already placed, or an empty one a client of a pNFS export writes first.
    fn remote_for_write(
        &self,
        caller: &Caller,
        node: &Node,
    ) -> VfsResult<Option<&Arc<dyn RemoteData>>> {
        let Some(r) = self.remote.get() else {
            return Ok(None);
        };
        if node.attr.ftype != FileType::Regular {
            return Ok(None);
        }
        let held = r.holds(&node.fh);
        let placeable = caller.pnfs && node.attr.size == 0;
        // data servers are written, and a file placed, over the network
        if (held || placeable) && nowait::active() {
            return Err(nowait::give_up());
        }
        if held || (placeable && r.place(&node.fh)?) {
            return Ok(Some(r));
        }
        Ok(None)
    }

    /// Brings `node`'s attributes up to date when its data may be being written elsewhere
    /// (see [`RemoteData::written_elsewhere`]); leaves them otherwise.
    pub fn follow_remote(&self, node: &mut Node) -> VfsResult<()> {
        if let Some(a) = self.remote_attr(node) {
            node.attr = a?;
        }
        Ok(())
    }

    /// The attributes of a file whose data lives elsewhere and may be being written there:
    /// its size and modify time follow the data (see [`Vfs::remote_written`]); `None` for
    /// any other file.
    pub(super) fn remote_attr(&self, node: &Node) -> Option<VfsResult<Attr>> {
        let r = self.remote(node)?;
        if !r.written_elsewhere(&node.fh) {
            return None;
        }
        if nowait::active() {
            return Some(Err(nowait::give_up()));
        }
        let (end, time) = r.extent(&node.fh);
        Some(self.remote_written(node, end, time))
    }

    /// What a client that wrote to the data servers itself reports (pNFS LAYOUTCOMMIT): the
    /// file now ends at `end` at least, and its data was last written at `data_time` (the
    /// copies' modify time). The local file's size follows; its modify time becomes
    /// `data_time` when that is later than the file's last change here, and stays otherwise:
    /// a client that sets the time after writing (tar, cp -p) may commit its writes after
    /// that, and the time it set must stay. Returns the attributes.
    pub fn remote_written(
        &self,
        node: &Node,
        end: Option<u64>,
        data_time: Option<Time>,
    ) -> VfsResult<Attr> {
        Self::check_regular(node)?;
        let fd = self.data_fd(node)?;
        let before = self.attr(fd.as_fd())?;
        let newer = data_time.filter(|t| *t > before.ctime);
        let grow = end.filter(|e| *e > before.size);
        if newer.is_none() && grow.is_none() {
            return Ok(before);
        }
        cred::as_root(|| -> VfsResult<()> {
            if let Some(e) = grow {
                sys::ftruncate(fd.as_fd(), e)?;
            }
            // ftruncate moved the time to now: to the data's time, or back
            let t = newer.unwrap_or(before.mtime).max(before.mtime);
            sys::set_mtime(fd.as_fd(), t.sec, t.nsec)?;
            Ok(())
        })?;
        self.attr(fd.as_fd())
    }

    /// READ of a remote file: the caller's right to read is checked against the local file,
    /// whose size bounds the read.
    pub(super) fn remote_read(
        &self,
        r: &Arc<dyn RemoteData>,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
    ) -> VfsResult<(Bytes, bool, Attr)> {
        if nowait::active() {
            return Err(nowait::give_up());
        }
        let fd = self.read_fd(caller, node)?;
        let attr = self.attr(fd.as_fd())?;
        let want = attr
            .size
            .saturating_sub(offset)
            .min(u64::from(count.min(MAX_IO)));
        if want == 0 {
            return Ok((Bytes::new(), true, attr));
        }
        let got = r.read(&node.fh, offset, want as u32)?;
        let data = if got.len() as u64 >= want {
            got.slice(..want as usize)
        } else {
            // past the end of the copy: a hole the size says is there
            let mut b = BytesMut::with_capacity(want as usize);
            b.extend_from_slice(&got);
            b.resize(want as usize, 0);
            b.freeze()
        };
        Ok((data, offset + want >= attr.size, attr))
    }

    /// WRITE to a remote file (`fd`: the local file, the caller's right to write checked),
    /// then the local file's size and times as a write here would leave them. None: the
    /// file's data is here.
    pub(super) fn remote_write(
        &self,
        caller: &Caller,
        node: &Node,
        fd: &OwnedFd,
        offset: u64,
        data: &[u8],
        stable: Stability,
    ) -> VfsResult<Option<(Stability, Attr)>> {
        let Some(r) = self.remote_for_write(caller, node)? else {
            return Ok(None);
        };
        let done = r.write(&node.fh, offset, Bytes::copy_from_slice(data), stable)?;
        let end = offset.saturating_add(data.len() as u64);
        Self::as_writer(caller, || -> VfsResult<()> {
            if end > self.attr(fd.as_fd())?.size {
                sys::ftruncate(fd.as_fd(), end)?;
            } else {
                sys::touch_mtime(fd.as_fd())?;
            }
            Ok(())
        })?;
        self.count_io(node, data.len(), true);
        Ok(Some((done, self.attr(fd.as_fd())?)))
    }
}
