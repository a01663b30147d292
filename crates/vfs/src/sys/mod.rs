//! The system calls the backend needs that std does not wrap. All `unsafe` of the crate is here,
//! behind safe functions that take owned or borrowed descriptors and byte-slice names.

mod data;
pub use data::*;

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Largest kernel file handle we ask for; keeps our NFSv3 handle within 64 bytes.
pub const MAX_KERNEL_HANDLE: usize = 38;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_long(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Zero-initialised `stat` structure.
pub(crate) fn empty_stat() -> libc::stat64 {
    // SAFETY: stat64 is a plain C struct of integers, for which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

/// `fstatat(dirfd, name, flags)`; an empty name with `AT_EMPTY_PATH` stats `dirfd` itself.
pub fn fstatat(dirfd: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<libc::stat64> {
    let mut st = empty_stat();
    // SAFETY: name is NUL-terminated, st is a valid out-pointer for the duration of the call.
    cvt(unsafe { libc::fstatat64(dirfd.as_raw_fd(), name.as_ptr(), &mut st, flags) })?;
    Ok(st)
}

/// `fstat` of a descriptor (O_PATH descriptors included).
pub fn fstat(fd: BorrowedFd<'_>) -> io::Result<libc::stat64> {
    fstatat(fd, c"", libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW)
}

/// `openat(dirfd, name, flags, mode)`, always with O_CLOEXEC.
pub fn openat(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<OwnedFd> {
    // SAFETY: name is NUL-terminated; the returned descriptor is new and owned by us.
    let fd = cvt(unsafe {
        libc::openat(
            dirfd.as_raw_fd(),
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    })?;
    // SAFETY: fd was just returned by openat and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat2(dirfd, name, flags | O_CLOEXEC)` resolving through the kernel's lookup cache only
/// (RESOLVE_CACHED, Linux 5.12): EAGAIN where a component is not cached, so that a caller
/// that must not block can give up instead of reading a directory from the disk.
pub fn openat_cached(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    // struct open_how (linux/openat2.h); libc's is non_exhaustive
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_CACHED,
    };
    // SAFETY: name is NUL-terminated and `how` is a valid open_how of the size passed; the
    // returned descriptor is new and owned by us.
    let fd = cvt(unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd.as_raw_fd(),
            name.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    } as libc::c_int)?;
    // SAFETY: fd was just returned by openat2 and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A kernel file handle: its type and opaque bytes (see name_to_handle_at(2)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelHandle {
    /// `handle_type` chosen by the file system.
    pub handle_type: i32,
    /// Opaque handle bytes.
    pub bytes: Vec<u8>,
}

#[repr(C)]
struct FileHandleBuf {
    handle_bytes: libc::c_uint,
    handle_type: libc::c_int,
    f_handle: [u8; MAX_KERNEL_HANDLE],
}

/// `name_to_handle_at(dirfd, name, flags)`: a persistent handle for the named object, and the
/// id of the mount it was reached through.
pub fn name_to_handle_at(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
) -> io::Result<(KernelHandle, i32)> {
    let mut fh = FileHandleBuf {
        handle_bytes: MAX_KERNEL_HANDLE as libc::c_uint,
        handle_type: 0,
        f_handle: [0; MAX_KERNEL_HANDLE],
    };
    let mut mount_id: libc::c_int = 0;
    // SAFETY: fh is a file_handle header followed by MAX_KERNEL_HANDLE bytes, as handle_bytes
    // tells the kernel; name is NUL-terminated; mount_id is a valid out-pointer.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            dirfd.as_raw_fd(),
            name.as_ptr(),
            &mut fh as *mut FileHandleBuf,
            &mut mount_id as *mut libc::c_int,
            flags,
        ) as libc::c_int
    })?;
    let n = (fh.handle_bytes as usize).min(MAX_KERNEL_HANDLE);
    Ok((
        KernelHandle {
            handle_type: fh.handle_type,
            bytes: fh.f_handle[..n].to_vec(),
        },
        mount_id,
    ))
}

/// `open_by_handle_at(mount_fd, handle, flags)`; needs CAP_DAC_READ_SEARCH.
pub fn open_by_handle_at(
    mount_fd: BorrowedFd<'_>,
    h: &KernelHandle,
    flags: libc::c_int,
) -> io::Result<OwnedFd> {
    if h.bytes.len() > MAX_KERNEL_HANDLE {
        return Err(io::Error::from_raw_os_error(libc::ESTALE));
    }
    let mut fh = FileHandleBuf {
        handle_bytes: h.bytes.len() as libc::c_uint,
        handle_type: h.handle_type,
        f_handle: [0; MAX_KERNEL_HANDLE],
    };
    fh.f_handle[..h.bytes.len()].copy_from_slice(&h.bytes);
    // SAFETY: fh is a valid file_handle whose handle_bytes does not exceed its buffer.
    let fd = cvt(unsafe {
        libc::syscall(
            libc::SYS_open_by_handle_at,
            mount_fd.as_raw_fd(),
            &mut fh as *mut FileHandleBuf,
            flags | libc::O_CLOEXEC,
        ) as libc::c_int
    })?;
    // SAFETY: fd was just returned by the kernel and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets this thread's file-system user id (not the process's: the raw syscall is per thread).
pub fn set_thread_fsuid(uid: u32) {
    // SAFETY: setfsuid takes an integer and cannot fail in a way that corrupts memory.
    unsafe { libc::syscall(libc::SYS_setfsuid, uid as libc::c_long) };
}

/// Sets this thread's file-system group id.
pub fn set_thread_fsgid(gid: u32) {
    // SAFETY: as for setfsuid.
    unsafe { libc::syscall(libc::SYS_setfsgid, gid as libc::c_long) };
}

/// Raises (`on`) or drops CAP_SYS_RESOURCE in this thread's effective capabilities (capset
/// is per thread). Without it the kernel holds a caller to its disk quota and keeps the blocks
/// reserved for root from it; setfsuid drops only the file-system capabilities, so a thread
/// acting for a user drops this one too, as knfsd's `nfsd_setuser` does.
pub fn set_thread_sys_resource(on: bool) -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // _LINUX_CAPABILITY_VERSION_3: 64 bits of each set, in two Data
    const VERSION_3: u32 = 0x2008_0522;
    const SYS_RESOURCE: u32 = 1 << 24;
    let mut h = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: h is a valid header and d the two Data version 3 reads and writes.
    cvt_long(unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) })?;
    let effective = if on {
        d[0].effective | (d[0].permitted & SYS_RESOURCE)
    } else {
        d[0].effective & !SYS_RESOURCE
    };
    if effective == d[0].effective {
        return Ok(());
    }
    d[0].effective = effective;
    // SAFETY: as for capget; capset only reads them.
    cvt_long(unsafe { libc::syscall(libc::SYS_capset, &mut h as *mut Header, d.as_ptr()) })?;
    Ok(())
}

/// Sets this thread's supplementary groups (the raw syscall, unlike glibc's, is per thread).
pub fn set_thread_groups(groups: &[u32]) -> io::Result<()> {
    // SAFETY: the pointer and length describe a valid slice of gid_t (u32) values.
    cvt_long(unsafe {
        libc::syscall(
            libc::SYS_setgroups,
            groups.len() as libc::c_long,
            groups.as_ptr(),
        )
    })?;
    Ok(())
}

/// `mkdirat(dirfd, name, mode)`.
pub fn mkdirat(dirfd: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::mkdirat(dirfd.as_raw_fd(), name.as_ptr(), mode) }).map(drop)
}

/// `mknodat(dirfd, name, mode, dev)`.
pub fn mknodat(
    dirfd: BorrowedFd<'_>,
    name: &CStr,
    mode: libc::mode_t,
    dev: libc::dev_t,
) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::mknodat(dirfd.as_raw_fd(), name.as_ptr(), mode, dev) }).map(drop)
}

/// `symlinkat(target, dirfd, name)`.
pub fn symlinkat(target: &CStr, dirfd: BorrowedFd<'_>, name: &CStr) -> io::Result<()> {
    // SAFETY: both strings are NUL-terminated.
    cvt(unsafe { libc::symlinkat(target.as_ptr(), dirfd.as_raw_fd(), name.as_ptr()) }).map(drop)
}

/// `unlinkat(dirfd, name, flags)`.
pub fn unlinkat(dirfd: BorrowedFd<'_>, name: &CStr, flags: libc::c_int) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    cvt(unsafe { libc::unlinkat(dirfd.as_raw_fd(), name.as_ptr(), flags) }).map(drop)
}

/// `renameat(from_dir, from, to_dir, to)`.
pub fn renameat(
    from_dir: BorrowedFd<'_>,
    from: &CStr,
    to_dir: BorrowedFd<'_>,
    to: &CStr,
) -> io::Result<()> {
    // SAFETY: both names are NUL-terminated.
    cvt(unsafe {
        libc::renameat(
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
        )
    })
    .map(drop)
}

/// `readlinkat(fd, "")` of an O_PATH descriptor of a symbolic link.
pub fn readlink_fd(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; 4097];
    // SAFETY: buf is valid for buf.len() bytes of writes.
    let n = unsafe {
        libc::readlinkat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `fchownat(fd, "", uid, gid, AT_EMPTY_PATH)`; `u32::MAX` leaves an id unchanged.
pub fn fchown_fd(fd: BorrowedFd<'_>, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: the empty name is NUL-terminated.
    cvt(unsafe {
        libc::fchownat(
            fd.as_raw_fd(),
            c"".as_ptr(),
            uid,
            gid,
            libc::AT_EMPTY_PATH | libc::AT_SYMLINK_NOFOLLOW,
        )
    })
    .map(drop)
}

/// `utimensat(dirfd, name, times, flags)`.
pub fn utimensat(
    dirfd: RawFd,
    name: &CStr,
    times: &[libc::timespec; 2],
    flags: libc::c_int,
) -> io::Result<()> {
    // SAFETY: name is NUL-terminated and times points to two timespecs.
    cvt(unsafe { libc::utimensat(dirfd, name.as_ptr(), times.as_ptr(), flags) }).map(drop)
}

/// `ftruncate(fd, size)`.
pub fn ftruncate(fd: BorrowedFd<'_>, size: u64) -> io::Result<()> {
    let size = i64::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: a plain system call on a descriptor the caller owns.
    cvt(unsafe { libc::ftruncate64(fd.as_raw_fd(), size) }).map(drop)
}

/// `futimens(fd, {UTIME_OMIT, UTIME_NOW})`: the modify (and change) time to now, as a write
/// leaves them.
pub fn touch_mtime(fd: BorrowedFd<'_>) -> io::Result<()> {
    let times = [
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
    ];
    // SAFETY: times points to two timespecs.
    cvt(unsafe { libc::futimens(fd.as_raw_fd(), times.as_ptr()) }).map(drop)
}

/// `futimens(fd, {UTIME_OMIT, t})`: the modify time to `t` (the change time to now).
pub fn set_mtime(fd: BorrowedFd<'_>, sec: i64, nsec: u32) -> io::Result<()> {
    let times = [
        libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        libc::timespec {
            tv_sec: sec,
            tv_nsec: nsec as libc::c_long,
        },
    ];
    // SAFETY: times points to two timespecs.
    cvt(unsafe { libc::futimens(fd.as_raw_fd(), times.as_ptr()) }).map(drop)
}

/// `fchmodat(AT_FDCWD, path, mode, 0)`.
pub fn chmod_path(path: &CStr, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::fchmodat(libc::AT_FDCWD, path.as_ptr(), mode, 0) }).map(drop)
}

/// `truncate(path, size)`.
pub fn truncate_path(path: &CStr, size: u64) -> io::Result<()> {
    let size = i64::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: path is NUL-terminated.
    cvt(unsafe { libc::truncate64(path.as_ptr(), size) }).map(drop)
}

/// `fstatvfs(fd)`.
pub fn fstatvfs(fd: BorrowedFd<'_>) -> io::Result<libc::statvfs64> {
    // SAFETY: statvfs64 is plain data; zero is a valid value.
    let mut s: libc::statvfs64 = unsafe { std::mem::zeroed() };
    // SAFETY: s is a valid out-pointer.
    cvt(unsafe { libc::fstatvfs64(fd.as_raw_fd(), &mut s) })?;
    Ok(s)
}

/// The file-system type (`f_type` of fstatfs(2)) of the file system holding `fd`.
pub fn fstatfs_type(fd: BorrowedFd<'_>) -> io::Result<i64> {
    // SAFETY: statfs64 is plain data; zero is a valid value.
    let mut s: libc::statfs64 = unsafe { std::mem::zeroed() };
    // SAFETY: s is a valid out-pointer.
    cvt(unsafe { libc::fstatfs64(fd.as_raw_fd(), &mut s) })?;
    #[allow(clippy::unnecessary_cast)]
    Ok(s.f_type as i64)
}

/// fsync(2): the file's data and metadata on stable storage.
pub fn fsync(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: fsync takes a descriptor only.
    cvt(unsafe { libc::fsync(fd.as_raw_fd()) }).map(drop)
}

/// fdatasync(2): the file's data (and the metadata needed to read it) on stable storage.
pub fn fdatasync(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: fdatasync takes a descriptor only.
    cvt(unsafe { libc::fdatasync(fd.as_raw_fd()) }).map(drop)
}

/// syncfs(2): everything written to the file system holding `fd` on stable storage.
pub fn syncfs(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: syncfs takes a descriptor only.
    cvt(unsafe { libc::syncfs(fd.as_raw_fd()) }).map(drop)
}

/// `lseek(fd, offset, SEEK_SET)` on a directory (cookies are opaque directory offsets).
pub fn seek_dir(fd: BorrowedFd<'_>, offset: u64) -> io::Result<()> {
    // SAFETY: lseek takes integers only.
    let r = unsafe { libc::lseek64(fd.as_raw_fd(), offset as i64, libc::SEEK_SET) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `getdents64(fd)` into `buf`; returns the number of bytes filled (0 at end of directory).
pub fn getdents64(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes of writes.
    let n = cvt_long(unsafe {
        libc::syscall(
            libc::SYS_getdents64,
            fd.as_raw_fd(),
            buf.as_mut_ptr(),
            buf.len(),
        )
    })?;
    Ok(n as usize)
}

/// Raises the soft open-files limit to the hard limit (the backend caches descriptors).
pub fn raise_nofile_limit() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: r is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 1024;
    }
    r.rlim_cur = r.rlim_max;
    // SAFETY: r is a valid in-pointer.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) };
    r.rlim_cur
}

/// The effective user id of the process.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Sets the process umask (once, at start-up).
pub fn set_umask(mask: libc::mode_t) {
    // SAFETY: umask takes an integer and cannot fail.
    unsafe { libc::umask(mask) };
}

/// `linkat(olddir, oldname, newdir, newname, AT_SYMLINK_FOLLOW)`; with a /proc/self/fd path
/// this links an open object without needing CAP_DAC_READ_SEARCH.
pub fn linkat_follow(
    olddir: BorrowedFd<'_>,
    oldname: &CStr,
    newdir: BorrowedFd<'_>,
    newname: &CStr,
) -> io::Result<()> {
    // SAFETY: both names are NUL-terminated.
    cvt(unsafe {
        libc::linkat(
            olddir.as_raw_fd(),
            oldname.as_ptr(),
            newdir.as_raw_fd(),
            newname.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    })
    .map(drop)
}

/// `lseek(fd, offset, whence)` (SEEK_DATA / SEEK_HOLE); returns the new offset.
pub fn lseek(fd: BorrowedFd<'_>, offset: u64, whence: libc::c_int) -> io::Result<u64> {
    let off = i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::ENXIO))?;
    // SAFETY: lseek takes integers only.
    let r = unsafe { libc::lseek64(fd.as_raw_fd(), off, whence) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as u64)
}

/// `fallocate(fd, mode, offset, len)`.
pub fn fallocate(fd: BorrowedFd<'_>, mode: libc::c_int, offset: u64, len: u64) -> io::Result<()> {
    let off = i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    let len = i64::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: fallocate takes integers only.
    cvt(unsafe { libc::fallocate64(fd.as_raw_fd(), mode, off, len) }).map(drop)
}

/// `copy_file_range` between two descriptors at explicit offsets; returns bytes copied.
pub fn copy_file_range(
    src: BorrowedFd<'_>,
    src_off: u64,
    dst: BorrowedFd<'_>,
    dst_off: u64,
    len: usize,
) -> io::Result<usize> {
    let mut so = i64::try_from(src_off).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut dof = i64::try_from(dst_off).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    // SAFETY: the offset pointers are valid for the call; the kernel updates them.
    let n = unsafe {
        libc::copy_file_range(src.as_raw_fd(), &mut so, dst.as_raw_fd(), &mut dof, len, 0)
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// FICLONERANGE: share the source range's blocks with the destination (reflink).
pub fn clone_range(
    src: BorrowedFd<'_>,
    dst: BorrowedFd<'_>,
    src_off: u64,
    dst_off: u64,
    len: u64,
) -> io::Result<()> {
    #[repr(C)]
    struct FileCloneRange {
        src_fd: i64,
        src_offset: u64,
        src_length: u64,
        dest_offset: u64,
    }
    const FICLONERANGE: libc::c_ulong = 0x4020940d;
    let arg = FileCloneRange {
        src_fd: src.as_raw_fd() as i64,
        src_offset: src_off,
        src_length: len,
        dest_offset: dst_off,
    };
    // SAFETY: arg is a valid file_clone_range for the duration of the ioctl.
    cvt(unsafe { libc::ioctl(dst.as_raw_fd(), FICLONERANGE, &arg) }).map(drop)
}

/// `getxattr(path, name)` into a buffer of at most `max` bytes.
pub fn getxattr(path: &CStr, name: &CStr, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; max];
    // SAFETY: path and name are NUL-terminated; buf is valid for buf.len() bytes.
    let n = unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `setxattr(path, name, value, flags)`.
pub fn setxattr(path: &CStr, name: &CStr, value: &[u8], flags: libc::c_int) -> io::Result<()> {
    // SAFETY: path and name are NUL-terminated; value is valid for its length.
    cvt(unsafe {
        libc::setxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            flags,
        )
    })
    .map(drop)
}

/// `listxattr(path)`: NUL-separated names, at most `max` bytes.
pub fn listxattr(path: &CStr, max: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; max];
    // SAFETY: path is NUL-terminated; buf is valid for buf.len() bytes.
    let n = unsafe { libc::listxattr(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// `removexattr(path, name)`.
pub fn removexattr(path: &CStr, name: &CStr) -> io::Result<()> {
    // SAFETY: path and name are NUL-terminated.
    cvt(unsafe { libc::removexattr(path.as_ptr(), name.as_ptr()) }).map(drop)
}

/// The current directory as a directory descriptor for `*at` calls given absolute paths
/// (AT_FDCWD), saving an open of "/" per call.
pub fn cwd() -> BorrowedFd<'static> {
    // SAFETY: AT_FDCWD is a sentinel the kernel accepts wherever a directory descriptor is
    // expected; it is never closed and is only passed to *at system calls.
    unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) }
}

/// Calls a reentrant NSS lookup (`getpwuid_r` and friends) with a buffer that grows on ERANGE;
/// `call` gets the buffer and returns the C error number and whether an entry was found.
fn nss_lookup<T>(mut call: impl FnMut(&mut [u8]) -> (i32, Option<T>)) -> Option<T> {
    let mut buf = vec![0u8; 4096];
    loop {
        match call(&mut buf) {
            (0, found) => return found,
            (libc::ERANGE, _) if buf.len() < (1 << 20) => buf.resize(buf.len() * 2, 0),
            _ => return None,
        }
    }
}

/// The name of user `uid` in the passwd database (files, LDAP, ... through NSS), if any.
pub fn user_name(uid: u32) -> Option<String> {
    nss_lookup(|buf| {
        // SAFETY: an all-zero passwd is a valid value for the out-parameter.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut res: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is to live memory of the stated size; on success pw_name
        // points into buf, which outlives the CStr made from it here.
        unsafe {
            let rc = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr().cast(), buf.len(), &mut res);
            let name = (rc == 0 && !res.is_null())
                .then(|| CStr::from_ptr(pwd.pw_name).to_string_lossy().into_owned());
            (rc, name)
        }
    })
}

/// The uid of user `name` in the passwd database, if any.
pub fn user_id(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    nss_lookup(|buf| {
        // SAFETY: an all-zero passwd is a valid value for the out-parameter.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut res: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: c is NUL-terminated; the other pointers are to live memory of stated size.
        let rc = unsafe {
            libc::getpwnam_r(
                c.as_ptr(),
                &mut pwd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut res,
            )
        };
        (rc, (rc == 0 && !res.is_null()).then_some(pwd.pw_uid))
    })
}

/// The name of group `gid` in the group database, if any.
pub fn group_name(gid: u32) -> Option<String> {
    nss_lookup(|buf| {
        // SAFETY: an all-zero group is a valid value for the out-parameter.
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut res: *mut libc::group = std::ptr::null_mut();
        // SAFETY: as in user_name: gr_name points into buf, alive during the copy.
        unsafe {
            let rc = libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr().cast(), buf.len(), &mut res);
            let name = (rc == 0 && !res.is_null())
                .then(|| CStr::from_ptr(grp.gr_name).to_string_lossy().into_owned());
            (rc, name)
        }
    })
}

/// The gid of group `name` in the group database, if any.
pub fn group_id(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    nss_lookup(|buf| {
        // SAFETY: an all-zero group is a valid value for the out-parameter.
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut res: *mut libc::group = std::ptr::null_mut();
        // SAFETY: c is NUL-terminated; the other pointers are to live memory of stated size.
        let rc = unsafe {
            libc::getgrnam_r(
                c.as_ptr(),
                &mut grp,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut res,
            )
        };
        (rc, (rc == 0 && !res.is_null()).then_some(grp.gr_gid))
    })
}

/// A new pipe (read end, write end), non-blocking and close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a writable array of two descriptors.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    // SAFETY: pipe2 succeeded: both descriptors are new and owned by us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sets the capacity of a pipe (`F_SETPIPE_SZ`); returns the capacity granted.
pub fn set_pipe_size(fd: BorrowedFd<'_>, size: usize) -> io::Result<usize> {
    let size =
        libc::c_int::try_from(size).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: F_SETPIPE_SZ takes an integer argument.
    let r = cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, size) })?;
    Ok(r as usize)
}

/// `splice(2)` of at most `len` bytes from `from` (at `*offset` when given, which moves on) to
/// `to`; returns the bytes moved (0: end of file).
pub fn splice(
    from: BorrowedFd<'_>,
    offset: Option<&mut i64>,
    to: BorrowedFd<'_>,
    len: usize,
    flags: libc::c_uint,
) -> io::Result<usize> {
    let off = offset.map_or(std::ptr::null_mut(), |o| o as *mut i64);
    // SAFETY: off is null or points to a live i64 the kernel may update; the rest are integers.
    let r = unsafe {
        libc::splice(
            from.as_raw_fd(),
            off,
            to.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            flags,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// One `read(2)` into `buf`.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is a live, writable slice of buf.len() bytes.
    let r = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// One non-blocking `send(2)` of `buf` to a stream socket (`more`: MSG_MORE).
pub fn send(fd: BorrowedFd<'_>, buf: &[u8], more: bool) -> io::Result<usize> {
    let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    // SAFETY: buf is a live slice of buf.len() bytes.
    let r = unsafe { libc::send(fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}
