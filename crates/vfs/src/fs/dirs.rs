//! Directory listings (READDIR, READDIRPLUS) from getdents64, resumable by cookie.

use super::*;

/// Size of the first getdents64 read for a caller expecting `expect` entries (0: unknown).
pub(super) fn dents_first_read(expect: usize) -> usize {
    match expect {
        0 => DENTS_MAX,
        n => n.saturating_mul(DENT_SIZE).clamp(DENTS_MIN, DENTS_MAX),
    }
}

impl Vfs {
    /// The cookie verifier of a directory: stable across restarts and directory changes,
    /// since cookies are file-system directory offsets that stay valid.
    pub fn cookie_verifier(&self, dir: &Node) -> [u8; 8] {
        (dir.attr.fileid ^ 0x524e_4653_0000_0001).to_be_bytes()
    }

    /// READDIR / READDIRPLUS: calls `accept` for each entry after `cookie` until it returns
    /// false; returns whether the end of the directory was reached. `expect` is about how many
    /// entries the caller can take (0: unknown); it sizes the first read of the directory,
    /// since the kernel's work for entries read past the reply's end is thrown away.
    #[allow(clippy::too_many_arguments)]
    pub fn readdir(
        &self,
        caller: &Caller,
        dir: &Node,
        cookie: u64,
        verifier: [u8; 8],
        plus: bool,
        expect: usize,
        mut accept: impl FnMut(DirEntry) -> bool,
    ) -> VfsResult<bool> {
        self.same_export(caller, dir)?;
        if dir.attr.ftype != FileType::Directory {
            return Err(VfsError::Errno(libc::ENOTDIR));
        }
        if cookie != 0 && verifier != [0; 8] && verifier != self.cookie_verifier(dir) {
            return Err(VfsError::BadCookie);
        }
        // "." relative to the node's O_PATH descriptor: one path component, not the walk of
        // a /proc/self/fd path.
        let dfd = cred::with_creds(&caller.creds, || {
            sys::openat(dir.fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)
        })?;
        if cookie != 0 {
            sys::seek_dir(dfd.as_fd(), cookie)?;
        }
        let at_root = self.is_export_root(dir);
        thread_local! {
            static DENTS: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; DENTS_MAX]);
        }
        // The worker thread's buffer, reused (a fresh one should `accept` ever list again).
        let dfd = dfd.as_fd();
        let first = dents_first_read(expect);
        let mut read = |buf: &mut [u8]| {
            self.read_entries(caller, dir, dfd, at_root, plus, buf, first, &mut accept)
        };
        DENTS.with(|b| match b.try_borrow_mut() {
            Ok(mut buf) => read(&mut buf),
            Err(_) => read(&mut vec![0u8; DENTS_MAX]),
        })
    }

    /// The getdents64 loop of [`Vfs::readdir`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_entries(
        &self,
        caller: &Caller,
        dir: &Node,
        dfd: BorrowedFd<'_>,
        at_root: bool,
        plus: bool,
        buf: &mut [u8],
        first: usize,
        accept: &mut impl FnMut(DirEntry) -> bool,
    ) -> VfsResult<bool> {
        // Entries found through the inode index: only where listings carry stat's numbers.
        let by_inode = plus && self.table().get(dir.export).is_ok_and(|e| e.by_inode);
        let mut size = first.min(buf.len());
        let mut dents = Vec::new();
        loop {
            let read_at = self.paths.epoch();
            let n = sys::getdents64(dfd, &mut buf[..size])?;
            // the caller takes more than expected: read more at once from now on
            size = (size * 2).min(buf.len());
            if n == 0 {
                return Ok(true);
            }
            parse_dents(&buf[..n], &mut dents)?;
            // One copy of the records for all their names, and one pass over the inode index
            // for all the entries read (one lock, not one per entry).
            let names = Bytes::copy_from_slice(&buf[..n]);
            let mut cached = if by_inode {
                let key = |d: &Dent| {
                    let indexed = !matches!(d.d_type, libc::DT_DIR | libc::DT_UNKNOWN);
                    indexed.then_some((dir.export, dir.attr.fsid, d.ino))
                };
                self.paths.by_inodes(dents.iter().map(key), read_at)
            } else {
                Vec::new()
            }
            .into_iter();
            for d in &dents {
                let name = names.slice(d.name.clone());
                // the name with its NUL, which parse_dents found in the record
                let cname = CStr::from_bytes_with_nul(&names[d.name.start..=d.name.end])
                    .map_err(|_| VfsError::Errno(libc::EIO))?;
                let mut entry = DirEntry {
                    fileid: d.ino,
                    name: name.clone(),
                    cookie: d.next,
                    plus: None,
                };
                if *name == *b".." && at_root {
                    entry.fileid = dir.attr.fileid;
                }
                if plus {
                    let found = cached.next().flatten();
                    entry.plus = self.entry_plus(caller, dir, cname, d.ino, found, at_root);
                }
                if !accept(entry) {
                    return Ok(false);
                }
            }
        }
    }

    /// The handle and attributes of the entry `name` (inode number `ino`) of `dir`; `cached`
    /// is what the inode index held for it before the listing was read.
    pub(super) fn entry_plus(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &CStr,
        ino: u64,
        cached: Option<(Bytes, Arc<OwnedFd>)>,
        at_root: bool,
    ) -> Option<(Bytes, Attr)> {
        let raw = name.to_bytes();
        if raw == b"." || (raw == b".." && at_root) {
            return Some((dir.fh.clone(), dir.attr.clone()));
        }
        if raw == b".." {
            return self.lookup(caller, dir, raw).ok().map(|n| (n.fh, n.attr));
        }
        if let Some((fh, fd)) = cached {
            // The descriptor, cached before the listing was read, keeps inode `ino` alive, so
            // the name listed with that number is this inode (see cache.rs): fstat only re-reads
            // its attributes. No name is walked, but the caller needed search permission on
            // `dir` to open it above, as a walk would.
            match sys::fstat(fd.as_fd()) {
                Ok(st) if st.st_ino == ino && st.st_dev == dir.attr.fsid && st.st_nlink > 0 => {
                    return Some((fh, Attr::from_stat(&st)));
                }
                // unlinked (or not what was listed): its descriptors keep its space
                _ => self.forget(&fh),
            }
        }
        // Not cached: two path walks, and no descriptor kept (listing a directory larger than
        // the cache would otherwise evict every descriptor the clients are using).
        self.lookup_c(caller, dir, name).ok()
    }
}

/// A record of a getdents64 read: inode number, the cookie after it, type, and where its name
/// lies in the read.
struct Dent {
    ino: u64,
    next: u64,
    d_type: u8,
    name: std::ops::Range<usize>,
}

/// The records of one getdents64 read into `out` (cleared first).
fn parse_dents(buf: &[u8], out: &mut Vec<Dent>) -> VfsResult<()> {
    out.clear();
    let mut off = 0;
    while off + 19 <= buf.len() {
        let rec = &buf[off..];
        let ino = u64::from_ne_bytes(rec[0..8].try_into().unwrap_or_default());
        let next = u64::from_ne_bytes(rec[8..16].try_into().unwrap_or_default());
        let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
        if reclen < 19 || reclen > rec.len() {
            return Err(VfsError::Errno(libc::EIO));
        }
        // the kernel terminates every name with NUL inside its record
        let Some(nlen) = rec[19..reclen].iter().position(|b| *b == 0) else {
            return Err(VfsError::Errno(libc::EIO));
        };
        out.push(Dent {
            ino,
            next,
            d_type: rec[18],
            name: off + 19..off + 19 + nlen,
        });
        off += reclen;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A getdents64 record: ino, next offset, record length (8-aligned), type, NUL-ended name.
    fn record(ino: u64, next: u64, d_type: u8, name: &[u8]) -> Vec<u8> {
        let len = (19 + name.len() + 1).next_multiple_of(8);
        let mut r = Vec::with_capacity(len);
        r.extend_from_slice(&ino.to_ne_bytes());
        r.extend_from_slice(&next.to_ne_bytes());
        r.extend_from_slice(&(len as u16).to_ne_bytes());
        r.push(d_type);
        r.extend_from_slice(name);
        r.resize(len, 0);
        r
    }

    #[test]
    fn records_are_parsed_with_their_names_and_bad_ones_refused() {
        let mut buf = record(7, 1, libc::DT_REG, b"a");
        buf.extend(record(9, 2, libc::DT_DIR, b"a-longer-name"));
        let mut out = Vec::new();
        assert!(parse_dents(&buf, &mut out).is_ok());
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].ino, out[0].next, out[0].d_type),
            (7, 1, libc::DT_REG)
        );
        assert_eq!(&buf[out[0].name.clone()], b"a");
        assert_eq!(buf[out[0].name.end], 0, "the NUL follows the name");
        assert_eq!(&buf[out[1].name.clone()], b"a-longer-name");
        assert_eq!(out[1].d_type, libc::DT_DIR);
        // a record longer than what was read
        let mut cut = buf.clone();
        cut.truncate(buf.len() - 8);
        assert!(parse_dents(&cut, &mut out).is_err());
        // a record length below the header's
        let mut short = buf.clone();
        short[16..18].copy_from_slice(&10u16.to_ne_bytes());
        assert!(parse_dents(&short, &mut out).is_err());
        // a name without its NUL
        let mut unterminated = record(7, 1, libc::DT_REG, b"abcd");
        let len = unterminated.len();
        unterminated[19..len].fill(b'x');
        assert!(parse_dents(&unterminated, &mut out).is_err());
    }
}
