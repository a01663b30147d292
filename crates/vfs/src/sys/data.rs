//! File data: reads into a buffer (also without waiting for the disk, and asking the page
//! cache what it holds) and writes.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use bytes::BytesMut;

/// Reads up to `count` bytes at `offset` into the spare capacity of `buf`, without zeroing it
/// first; returns the number of bytes read (0 at end of file).
pub fn pread_into(
    fd: BorrowedFd<'_>,
    buf: &mut BytesMut,
    count: usize,
    offset: u64,
) -> io::Result<usize> {
    buf.reserve(count);
    let spare = buf.spare_capacity_mut();
    // SAFETY: after the reserve, spare points to at least `count` writable bytes owned by buf.
    let n = unsafe { pread_full(fd, spare.as_mut_ptr().cast(), count, offset) }?;
    // SAFETY: the kernel initialised exactly n bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// One `preadv2(RWF_NOWAIT)` of at most `count` bytes at `offset`, appended to `buf`: only
/// what the page cache holds (EAGAIN when the first byte is not there); may be short.
pub fn pread_into_nowait(
    fd: BorrowedFd<'_>,
    buf: &mut BytesMut,
    count: usize,
    offset: u64,
) -> io::Result<usize> {
    buf.reserve(count);
    let spare = buf.spare_capacity_mut();
    let len = count.min(spare.len());
    // SAFETY: spare points to at least `len` writable bytes owned by buf.
    let n = unsafe { preadv2_nowait(fd, spare.as_mut_ptr().cast(), len, offset) }?;
    // SAFETY: the kernel initialised exactly n bytes of the spare capacity.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// The kernel's `cachestat` (Linux 6.5), which libc does not name for every target: new
/// system calls share one number on every architecture.
const SYS_CACHESTAT: libc::c_long = 451;

/// `struct cachestat_range` of linux/mman.h.
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat` of linux/mman.h.
#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// Whether the page cache holds every page of the `len` bytes at `offset` (`len` > 0), asked
/// with `cachestat`, which reads nothing and starts no read-ahead; None where the kernel or
/// the file system does not answer.
pub fn range_cached(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Option<bool> {
    if len == 0 {
        return Some(true);
    }
    let range = CachestatRange { off: offset, len };
    let mut cs = Cachestat::default();
    // SAFETY: range and cs are live structs of the layouts the kernel reads and writes; the
    // flags argument must be 0.
    let rc = unsafe {
        libc::syscall(
            SYS_CACHESTAT,
            fd.as_raw_fd(),
            &range as *const CachestatRange,
            &mut cs as *mut Cachestat,
            0u32,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: sysconf has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as u64,
        _ => 4096,
    };
    let pages = (offset + len - 1) / page - offset / page + 1;
    Some(cs.nr_cache >= pages)
}

/// One `preadv2(RWF_NOWAIT)` into `buf` at `offset`: only what the page cache holds (EAGAIN
/// when the first byte is not there); may be short.
pub fn pread_slice_nowait(fd: BorrowedFd<'_>, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    // SAFETY: buf is a live, writable slice of buf.len() bytes.
    unsafe { preadv2_nowait(fd, buf.as_mut_ptr(), buf.len(), offset) }
}

/// One `preadv2(RWF_NOWAIT)` of `len` bytes at `offset` into `dst`.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
unsafe fn preadv2_nowait(
    fd: BorrowedFd<'_>,
    dst: *mut u8,
    len: usize,
    offset: u64,
) -> io::Result<usize> {
    let offset = i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let iov = libc::iovec {
        iov_base: dst.cast(),
        iov_len: len,
    };
    // SAFETY: iov describes `len` writable bytes at dst (the caller's promise).
    let n = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, offset, libc::RWF_NOWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `pread(fd, buf, offset)` until `buf` is full or the end of the file; the bytes read.
pub fn pread_slice(fd: BorrowedFd<'_>, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    // SAFETY: buf is a live, writable slice of buf.len() bytes.
    unsafe { pread_full(fd, buf.as_mut_ptr(), buf.len(), offset) }
}

/// `pread` of `len` bytes at `offset` into `dst`, again after a short read or EINTR, until
/// `len` bytes or the end of the file; the bytes read.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
unsafe fn pread_full(
    fd: BorrowedFd<'_>,
    dst: *mut u8,
    len: usize,
    offset: u64,
) -> io::Result<usize> {
    let offset = i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut done = 0usize;
    while done < len {
        // SAFETY: dst + done .. dst + len is within the caller's writable range.
        let n = unsafe {
            libc::pread64(
                fd.as_raw_fd(),
                dst.add(done).cast(),
                len - done,
                offset + done as i64,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        done += n as usize;
    }
    Ok(done)
}

/// `pwritev2(fd, [data], offset, flags)` until all of `data` is written.
pub fn pwrite_all(
    fd: BorrowedFd<'_>,
    mut data: &[u8],
    mut offset: u64,
    flags: libc::c_int,
) -> io::Result<()> {
    while !data.is_empty() {
        let off = i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        let iov = libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        // SAFETY: iov describes the readable slice `data` for the duration of the call.
        let n = unsafe { libc::pwritev2(fd.as_raw_fd(), &iov, 1, off, flags) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        data = &data[n as usize..];
        offset += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    #[test]
    fn range_cached_tells_an_evicted_range_from_a_read_one() {
        // under target/, on the disk the build is on (a tmpfs page cannot be evicted)
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        std::fs::create_dir_all(&dir).expect("target dir");
        let path = dir.join(format!("range-cached-{}", std::process::id()));
        let mut f = std::fs::File::create(&path).expect("create");
        f.write_all(&vec![7u8; 1 << 20]).expect("write");
        f.sync_all().expect("sync");
        let f = std::fs::File::open(&path).expect("open");
        std::fs::remove_file(&path).expect("unlink");
        // SAFETY: posix_fadvise on a live descriptor has no memory effects.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
        assert_eq!(range_cached(f.as_fd(), 0, 1 << 20), Some(false), "evicted");
        let mut buf = vec![0u8; 1 << 20];
        assert_eq!(pread_slice(f.as_fd(), &mut buf, 0).expect("read"), 1 << 20);
        assert_eq!(range_cached(f.as_fd(), 0, 1 << 20), Some(true), "read back");
        assert_eq!(range_cached(f.as_fd(), 4095, 2), Some(true), "two pages");
        assert_eq!(range_cached(f.as_fd(), 0, 0), Some(true));
    }
}
