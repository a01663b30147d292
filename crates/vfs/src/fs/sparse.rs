//! Sparse files and server-side copies: SEEK, extents for READ_PLUS, ALLOCATE / DEALLOCATE, COPY
//! and CLONE.

use super::*;

impl Vfs {
    /// SEEK: the next offset at or after `offset` that starts data (`data`) or a hole; `None`
    /// when there is none before the end of the file.
    pub fn seek(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        data: bool,
    ) -> VfsResult<Option<u64>> {
        self.same_export(caller, node)?;
        Self::check_regular(node)?;
        let fd = self.data_fd(node)?;
        if self.remote(node).is_some() {
            // the copies' holes are not known here: all data up to the size
            let size = self.attr(fd.as_fd())?.size;
            return Ok(match (data, offset < size) {
                (_, false) => None,
                (true, true) => Some(offset),
                (false, true) => Some(size),
            });
        }
        match sys::lseek(
            fd.as_fd(),
            offset,
            if data {
                libc::SEEK_DATA
            } else {
                libc::SEEK_HOLE
            },
        ) {
            Ok(o) => Ok(Some(o)),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// READ_PLUS, the one entry point (as [`Vfs::read_to`] for READ): a file without holes as
    /// file pages when `to` takes them ([`Vfs::read_extent_pages`]: one data extent, absent when
    /// nothing was read); else the extents, their data read into the transport's buffer when
    /// `to` offers one ([`Vfs::read_extents_into`]) or into memory of its own
    /// ([`Vfs::read_extents`]). Returns the extents, the EOF flag and the attributes.
    pub fn read_extents_to(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
        to: &dyn payload::PayloadTarget,
    ) -> VfsResult<(Vec<SentExtent>, bool, Attr)> {
        let r = self.read_extents_to_any(caller, node, offset, count, to);
        if let Ok((extents, _, _)) = &r {
            let bytes = extents
                .iter()
                .map(|x| match x {
                    SentExtent::Data { data, .. } => data.len(),
                    SentExtent::Hole { .. } => 0,
                })
                .sum();
            self.count_io(node, bytes, false);
        }
        r
    }

    /// [`Vfs::read_extents_to`], uncounted.
    fn read_extents_to_any(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
        to: &dyn payload::PayloadTarget,
    ) -> VfsResult<(Vec<SentExtent>, bool, Attr)> {
        if let Some(r) = self.remote(node) {
            let (data, eof, attr) = self.remote_read(r, caller, node, offset, count)?;
            let extents = match data.is_empty() {
                true => Vec::new(),
                false => vec![SentExtent::Data {
                    offset,
                    data: payload::Payload::Bytes(data),
                }],
            };
            return Ok((extents, eof, attr));
        }
        if to.takes_pages() {
            if let Some((pages, eof, attr)) = self.read_extent_pages(caller, node, offset, count)? {
                let data = payload::Payload::Pages(pages);
                let extents = match data.is_empty() {
                    true => Vec::new(),
                    false => vec![SentExtent::Data { offset, data }],
                };
                return Ok((extents, eof, attr));
            }
        }
        let mut read = None;
        let len = count.min(MAX_IO) as usize;
        let filled = to.fill(len, &mut |buf| {
            let r = self.read_extents_into(caller, node, offset, buf);
            let used = match &r {
                Ok((spans, _, _)) => spans
                    .iter()
                    .map(|s| match s {
                        Span::Data { at, len, .. } => at + len,
                        Span::Hole { .. } => 0,
                    })
                    .max()
                    .unwrap_or(0),
                Err(_) => 0,
            };
            read = Some(r);
            used
        });
        let (extents, eof, attr) = match (filled, read) {
            (Some(bulk), Some(r)) => {
                let (spans, eof, attr) = r?;
                let mut out = Vec::with_capacity(spans.len());
                for s in spans {
                    out.push(match s {
                        Span::Data { offset, at, len } if at + len <= bulk.len() => Extent::Data {
                            offset,
                            data: bulk.slice(at..at + len),
                        },
                        // the buffer is shorter than what was read into it: cannot happen
                        Span::Data { .. } => return Err(VfsError::Errno(libc::EIO)),
                        Span::Hole { offset, len } => Extent::Hole { offset, len },
                    });
                }
                (out, eof, attr)
            }
            _ => self.read_extents(caller, node, offset, count)?,
        };
        let extents = extents
            .into_iter()
            .map(|x| match x {
                Extent::Data { offset, data } => SentExtent::Data {
                    offset,
                    data: payload::Payload::Bytes(data),
                },
                Extent::Hole { offset, len } => SentExtent::Hole { offset, len },
            })
            .collect();
        Ok((extents, eof, attr))
    }

    /// READ_PLUS: the byte range as data and hole extents (found with SEEK_DATA / SEEK_HOLE),
    /// at most `count` bytes of it; returns the extents and whether the end of file was reached.
    pub fn read_extents(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
    ) -> VfsResult<(Vec<Extent>, bool, Attr)> {
        let mut data = Vec::new();
        let (spans, eof, attr) =
            self.scan_extents(caller, node, offset, count, |fd, pos, want| {
                let mut buf = BytesMut::with_capacity(want);
                let n = self.pread_owned(fd, node, &mut buf, want, pos)?;
                data.push(buf.freeze());
                Ok(n)
            })?;
        let mut data = data.into_iter();
        let out = spans
            .into_iter()
            .map(|s| match s {
                Span::Hole { offset, len } => Extent::Hole { offset, len },
                Span::Data { offset, .. } => Extent::Data {
                    offset,
                    data: data.next().unwrap_or_default(),
                },
            })
            .collect();
        Ok((out, eof, attr))
    }

    /// READ_PLUS into the caller's buffer (registered transport memory): data extents are read
    /// back to back into `dst`, at most `dst.len()` bytes of file; each returned data span
    /// names its bytes in `dst` (`at..at + len`).
    pub fn read_extents_into(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        dst: &mut [u8],
    ) -> VfsResult<(Vec<Span>, bool, Attr)> {
        let count = u32::try_from(dst.len()).unwrap_or(u32::MAX);
        let mut used = 0usize;
        self.scan_extents(caller, node, offset, count, |fd, pos, want| {
            let room = dst.len() - used;
            let n = self.pread_to(fd, node, &mut dst[used..used + want.min(room)], pos)?;
            used += n;
            Ok(n)
        })
    }

    /// The extent walk of READ_PLUS, with READ's checks; `read(fd, pos, want)` reads a data
    /// extent (at most `want` bytes at `pos`) wherever the caller keeps it and returns how many
    /// it read. Data spans are numbered in reading order: `at` is the sum of the data lengths
    /// before.
    pub(super) fn scan_extents(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        count: u32,
        mut read: impl FnMut(BorrowedFd<'_>, u64, usize) -> VfsResult<usize>,
    ) -> VfsResult<(Vec<Span>, bool, Attr)> {
        let fd = self.read_fd(caller, node)?;
        let count = count.min(MAX_IO) as usize;
        let size = node.attr.size;
        // A file with every block allocated has no hole to look for, and SEEK_DATA/SEEK_HOLE
        // are not free: tmpfs, for one, walks the page cache up to the next hole, to the end of
        // a dense file (a 4 KiB READ_PLUS of a 256 MiB file took milliseconds). Such a file is
        // read as READ reads it: one data extent, EOF and attributes as READ finds them.
        if dense(&node.attr) {
            let n = match offset > i64::MAX as u64 {
                true => 0,
                false => read(fd.as_fd(), offset, count)?,
            };
            let (eof, attr) = self.after_read(fd.as_fd(), node, offset, count, n)?;
            let spans = match n {
                0 => Vec::new(),
                len => vec![Span::Data { offset, at: 0, len }],
            };
            return Ok((spans, eof, attr));
        }
        // looking for holes may read extent maps from the disk
        if nowait::active() {
            return Err(nowait::give_up());
        }
        let end = offset.saturating_add(count as u64).min(size);
        let mut out = Vec::new();
        let mut pos = offset;
        let mut at = 0usize;
        while pos < end {
            let data_at = match sys::lseek(fd.as_fd(), pos, libc::SEEK_DATA) {
                Ok(o) => o,
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => end,
                Err(e) => return Err(e.into()),
            };
            if data_at > pos {
                let hole_end = data_at.min(end);
                out.push(Span::Hole {
                    offset: pos,
                    len: hole_end - pos,
                });
                pos = hole_end;
                continue;
            }
            let hole_at = sys::lseek(fd.as_fd(), pos, libc::SEEK_HOLE)?.min(end);
            let n = read(fd.as_fd(), pos, (hole_at - pos) as usize)?;
            if n == 0 {
                break;
            }
            out.push(Span::Data {
                offset: pos,
                at,
                len: n,
            });
            at += n;
            pos += n as u64;
        }
        let attr = self.attr(fd.as_fd())?;
        Ok((out, pos >= attr.size, attr))
    }

    /// ALLOCATE (`punch` false) or DEALLOCATE (`punch` true) a byte range.
    pub fn allocate(
        &self,
        caller: &Caller,
        node: &Node,
        offset: u64,
        len: u64,
        punch: bool,
    ) -> VfsResult<Attr> {
        let fd = self.write_fd(caller, node)?;
        if self.remote(node).is_some() {
            return Err(VfsError::NotSupported);
        }
        let mode = if punch {
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
        } else {
            0
        };
        Self::as_writer(caller, || sys::fallocate(fd.as_fd(), mode, offset, len))?;
        self.attr(fd.as_fd())
    }

    /// COPY (`clone` false, with copy_file_range) or CLONE (reflink) a range between files of
    /// one export; a `len` of 0 means to the end of the source. Returns bytes copied.
    #[allow(clippy::too_many_arguments)]
    pub fn copy_range(
        &self,
        caller: &Caller,
        src: &Node,
        dst: &Node,
        src_off: u64,
        dst_off: u64,
        len: u64,
        clone: bool,
    ) -> VfsResult<u64> {
        self.same_export(caller, src)?;
        self.same_export(caller, dst)?;
        self.writable(caller)?;
        Self::check_regular(src)?;
        Self::check_regular(dst)?;
        if self.remote(src).is_some() || self.remote(dst).is_some() {
            return Err(VfsError::NotSupported);
        }
        if !self.may(caller, src, 4, true) || !self.may(caller, dst, 2, true) {
            return Err(VfsError::Errno(libc::EACCES));
        }
        let sfd = self.data_fd(src)?;
        let dfd = self.data_fd(dst)?;
        let size = self.attr(sfd.as_fd())?.size;
        if src_off > size {
            return Err(VfsError::Errno(libc::EINVAL));
        }
        let len = if len == 0 { size - src_off } else { len };
        if clone {
            Self::as_writer(caller, || {
                sys::clone_range(sfd.as_fd(), dfd.as_fd(), src_off, dst_off, len)
            })
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EOPNOTSUPP) | Some(libc::EXDEV) | Some(libc::ENOTTY) => {
                    VfsError::NotSupported
                }
                _ => VfsError::from(e),
            })?;
            return Ok(len);
        }
        let mut done = 0u64;
        while done < len {
            let n = Self::as_writer(caller, || {
                sys::copy_file_range(
                    sfd.as_fd(),
                    src_off + done,
                    dfd.as_fd(),
                    dst_off + done,
                    (len - done) as usize,
                )
            })?;
            if n == 0 {
                break;
            }
            done += n as u64;
        }
        Ok(done)
    }
}
