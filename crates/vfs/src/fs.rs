//! The local POSIX backend: exports of local directories, reached only through handles.
//!
//! Every object is reached from a handle (open_by_handle_at) or from a directory descriptor plus
//! one name component, never from a path string, and symbolic links are never followed, so
//! nothing outside an export's file system subtree can be named by a client. Namespace calls run
//! with the caller's fsuid/fsgid/groups; reads and writes use cached descriptors after a
//! permission check against the file's mode (with the owner override NFS clients rely on for
//! I/O), and changes to data run as the caller, so the kernel clears set-id bits as it would
//! for a local writer.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};

use crate::cache::{memory_file_system, unique_inode_numbers, Epoch, FdCache, InodeKey, PathCache};
use crate::cred::{self, Creds};
use crate::error::{VfsError, VfsResult};
use crate::exports::{ExportEntry, ExportOptions, Squash};
use crate::handle::{self, HandleKey};
use crate::nowait;
use crate::pages::{FilePages, PipePool, SPLICE_MIN};
use crate::sys;
use crate::types::*;

/// Largest READ or WRITE we serve.
pub const MAX_IO: u32 = 1 << 20;
/// Longest name component.
pub const NAME_MAX: usize = 255;
/// Largest extended attribute value (Linux XATTR_SIZE_MAX).
pub const XATTR_SIZE_MAX: usize = 65536;
/// Largest extended attribute name list (Linux XATTR_LIST_MAX).
const XATTR_LIST_MAX: usize = 65536;
/// Largest read of a directory at once (getdents64), about a thousand short names.
const DENTS_MAX: usize = 32 * 1024;
/// Smallest first read of a directory: room for a few entries with the longest names.
const DENTS_MIN: usize = 1024;
/// Bytes a listed entry with a short name takes in a getdents64 buffer.
const DENT_SIZE: usize = 32;

/// Size of the first getdents64 read for a caller expecting `expect` entries (0: unknown).
fn dents_first_read(expect: usize) -> usize {
    match expect {
        0 => DENTS_MAX,
        n => n.saturating_mul(DENT_SIZE).clamp(DENTS_MIN, DENTS_MAX),
    }
}

/// Who is calling, before export rules are applied.
#[derive(Debug, Clone)]
pub struct Client {
    /// Source address.
    pub addr: IpAddr,
    /// Source port.
    pub port: u16,
    /// AUTH_SYS identity, or `None` for AUTH_NONE.
    pub ident: Option<Creds>,
}

/// A caller admitted to one export: squashed identity and access mode.
#[derive(Debug, Clone)]
pub struct Caller {
    export: usize,
    /// Identity used for file-system calls.
    pub creds: Creds,
    /// Whether the export is writable for this client.
    pub writable: bool,
}

/// An object reached from a handle, with its attributes at the time of resolution.
#[derive(Debug, Clone)]
pub struct Node {
    /// The wire handle.
    pub fh: Bytes,
    fd: Arc<OwnedFd>,
    /// Attributes when resolved.
    pub attr: Attr,
    export: usize,
}

impl Node {
    fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn proc_path(&self) -> CString {
        proc_path(self.fd.as_raw_fd())
    }

    /// Which file this is, for state kept per file (see [`FileId`]).
    pub fn file_id(&self) -> FileId {
        FileId::of(&self.fh, &self.attr)
    }
}

fn proc_path(fd: i32) -> CString {
    // A decimal integer never contains NUL.
    CString::new(format!("/proc/self/fd/{fd}")).unwrap_or_default()
}

struct Export {
    id: u32,
    entry: ExportEntry,
    root: OwnedFd,
    root_fh: Bytes,
    root_dev: u64,
    root_ino: u64,
    /// The mount the export root is on: objects on another (a file system mounted inside
    /// the export) get no handle, which would be resolved against the export's.
    mount_id: i32,
    /// Inode numbers name inodes here (see [`unique_inode_numbers`]): cached descriptors may
    /// be found by the numbers a directory listing gives.
    by_inode: bool,
    /// How a READ that must not block reads, if it may be tried at all.
    nowait_reads: NowaitReads,
    /// The file system splices file pages into pipes (until a splice says it does not).
    splice_reads: AtomicBool,
}

impl Export {
    /// A local file system (the kinds of [`unique_inode_numbers`]): `fstat` of an open
    /// descriptor reads the inode in memory, so calls that need no more may be tried without
    /// blocking ([`crate::nowait`]).
    fn local(&self) -> bool {
        !matches!(self.nowait_reads, NowaitReads::Never)
    }
}

/// How the file system of an export serves reads that must not wait.
#[derive(Debug)]
enum NowaitReads {
    /// Files live in memory (tmpfs): a plain read.
    Memory,
    /// `preadv2(RWF_NOWAIT)`, until the file system refuses it (then never again).
    Flag(AtomicBool),
    /// Not at all.
    Never,
}

/// Backend configuration.
#[derive(Debug, Clone)]
pub struct VfsConfig {
    /// Exported directories and their client rules.
    pub exports: Vec<ExportEntry>,
    /// Where the handle key is kept (must persist across restarts).
    pub state_dir: PathBuf,
    /// Descriptors kept open per cache (paths and data).
    pub fd_cache: usize,
}

/// State another protocol keeps on files (NFSv4 delegations) that a change made without it
/// must recall first: programs that keep no such state (NFSv3) ask before they read a file
/// (READ), change it (WRITE, SETATTR) or one of its names (REMOVE, RENAME, LINK).
pub trait ChangeGuard: Send + Sync {
    /// Ok when `file` may be changed now; [`VfsError::Delay`] while conflicting state held by
    /// another client is being recalled (the caller answers "try again later").
    fn before_change(&self, file: FileId) -> VfsResult<()>;

    /// As [`ChangeGuard::before_change`] before a READ or GETATTR: only state that lets a
    /// client cache changes not yet written (NFSv4 write delegations) conflicts with it. Ok(true)
    /// when such state was there and has been returned: the file may have changed since its
    /// attributes were read.
    fn before_read(&self, file: FileId) -> VfsResult<bool>;

    /// Whether any state that could conflict exists at all: when none does, a change by name
    /// need not look the name up first.
    fn guards_anything(&self) -> bool;
}

/// The backend serving all exports.
pub struct Vfs {
    key: HandleKey,
    exports: Vec<Export>,
    paths: PathCache,
    data: FdCache<OwnedFd>,
    write_verifier: [u8; 8],
    /// Addresses of host names used in client rules, resolved once at start-up.
    host_names: HashMap<IpAddr, String>,
    /// Pipes that READ data is spliced into.
    pipes: Arc<PipePool>,
    /// Turns of large unstable WRITEs, one per file (by inode, striped; see [`Vfs::write`]).
    write_turns: Box<[parking_lot::Mutex<()>]>,
}

impl std::fmt::Debug for Vfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vfs")
            .field("exports", &self.exports.len())
            .finish_non_exhaustive()
    }
}

/// Stripes of the WRITE turns: two files share one with odds 1 in 4,096, and then only take
/// turns with each other (4 KiB of locks).
const WRITE_TURNS: usize = 4096;

/// WRITEs from this size on take turns per file ([`Vfs::write`]).
const WRITE_TURN_MIN: usize = 64 * 1024;

/// The stripe of the WRITE turns of the file with attributes `a`, among `n`.
fn write_turn(a: &Attr, n: usize) -> usize {
    let h = (a.fileid ^ a.fsid.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 32) as usize % n
}

fn cname(name: &[u8]) -> VfsResult<CString> {
    if name.is_empty() || name.contains(&b'/') {
        return Err(VfsError::BadName);
    }
    if name.len() > NAME_MAX {
        return Err(VfsError::Errno(libc::ENAMETOOLONG));
    }
    CString::new(name).map_err(|_| VfsError::BadName)
}

/// A name that creates a new entry: `.` and `..` already exist.
fn new_name(name: &[u8]) -> VfsResult<CString> {
    if name == b"." || name == b".." {
        return Err(VfsError::Errno(libc::EEXIST));
    }
    cname(name)
}

fn export_id(e: &ExportEntry) -> u32 {
    if let Some(n) = e
        .clients
        .first()
        .and_then(|c| c.options.fsid.as_deref())
        .and_then(|f| f.parse::<u32>().ok())
    {
        return n;
    }
    use std::hash::Hasher;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x726e6673, 0x6578706f);
    h.write(e.path.as_os_str().as_encoded_bytes());
    h.finish() as u32
}

fn timespec(t: SetTime) -> libc::timespec {
    match t {
        SetTime::DontChange => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_OMIT,
        },
        SetTime::ServerNow => libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        SetTime::Client(t) => libc::timespec {
            tv_sec: t.sec,
            tv_nsec: t.nsec.min(999_999_999) as i64,
        },
    }
}

/// Whether a SETATTR sets times only to the server's current time (or leaves them).
fn touches_only(s: &SetAttrs) -> bool {
    [s.atime, s.mtime]
        .iter()
        .all(|t| matches!(t, SetTime::DontChange | SetTime::ServerNow))
}

/// Whether `c` may do `want` (a mask of r=4, w=2, x=1) on an object with attributes `a`.
fn mode_allows(c: &Creds, a: &Attr, want: u32, owner_override: bool) -> bool {
    if c.uid == 0 {
        // Root may execute only what someone may execute.
        return want & 1 == 0 || a.ftype == FileType::Directory || a.mode & 0o111 != 0;
    }
    if owner_override && c.uid == a.uid {
        return true;
    }
    let bits = if c.uid == a.uid {
        (a.mode >> 6) & 7
    } else if c.in_group(a.gid) {
        (a.mode >> 3) & 7
    } else {
        a.mode & 7
    };
    bits & want == want
}

/// The error of a read that must not wait: data not in the page cache gives up, and so does a
/// file system that refuses such reads (`usable` is then cleared: no read is tried again);
/// other errors are the read's.
fn nowait_error(e: std::io::Error, usable: &AtomicBool) -> VfsError {
    match e.raw_os_error() {
        Some(libc::EAGAIN) => nowait::give_up(),
        Some(libc::EOPNOTSUPP) => {
            usable.store(false, Ordering::Relaxed);
            nowait::give_up()
        }
        _ => VfsError::from(e),
    }
}

/// A file with every block allocated: it has no hole to look for.
fn dense(attr: &Attr) -> bool {
    attr.used >= attr.size.div_ceil(4096) * 4096
}

/// A read that must not wait and got only part of what the file holds (the rest is not in the
/// page cache) gives up, so that the client gets all of it from a read that may wait.
fn short_nowait_read(n: usize, count: usize, offset: u64, attr: &Attr) -> VfsResult<()> {
    if nowait::active() && n < count && offset.saturating_add(n as u64) < attr.size {
        return Err(nowait::give_up());
    }
    Ok(())
}

impl Vfs {
    /// Opens every export root and the handle key.
    pub fn new(cfg: VfsConfig) -> std::io::Result<Self> {
        // Two descriptor caches share the limit with sockets and directory reads, whatever was
        // configured: the path cache, which every call uses (and READDIRPLUS finds listed
        // files in), at most half of it; the data cache, which only I/O uses, a quarter.
        let nofile = sys::raise_nofile_limit();
        let path_cache = cfg.fd_cache.min((nofile / 2) as usize).max(16);
        let data_cache = cfg.fd_cache.min((nofile / 4) as usize).max(16);
        if data_cache < cfg.fd_cache {
            tracing::info!(
                limit = nofile,
                paths = path_cache,
                data = data_cache,
                "descriptor caches sized to the open-files limit"
            );
        }
        // The client applies its own umask; modes it sends are final.
        sys::set_umask(0);
        let key = HandleKey::load_or_create(&cfg.state_dir.join("fh.key"))?;
        let mut exports: Vec<Export> = Vec::new();
        for entry in cfg.exports {
            let path = std::fs::canonicalize(&entry.path).map_err(|e| {
                std::io::Error::new(e.kind(), format!("export {}: {e}", entry.path.display()))
            })?;
            let cpath = CString::new(path.as_os_str().as_encoded_bytes())
                .map_err(|_| std::io::Error::other("export path contains NUL"))?;
            let cwd = std::fs::File::open("/")?;
            let root = sys::openat(
                cwd.as_fd(),
                &cpath,
                // open_by_handle_at takes the mount from this descriptor; it refuses O_PATH ones.
                libc::O_RDONLY | libc::O_DIRECTORY,
                0,
            )
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("export {}: {e}", path.display()))
            })?;
            let st = sys::fstat(root.as_fd())?;
            let (kh, mount_id) = sys::name_to_handle_at(root.as_fd(), c"", libc::AT_EMPTY_PATH)
                .map_err(|e| {
                    std::io::Error::new(
                        e.kind(),
                        format!(
                            "export {}: file system cannot produce handles: {e}",
                            path.display()
                        ),
                    )
                })?;
            let mut entry = entry;
            entry.path = path;
            let id = export_id(&entry);
            if let Some(other) = exports.iter().find(|x| x.id == id) {
                return Err(std::io::Error::other(format!(
                    "exports {} and {} have the same id {id}; give one an fsid=",
                    other.entry.path.display(),
                    entry.path.display()
                )));
            }
            if entry
                .clients
                .iter()
                .any(|c| c.options.crossmnt || !c.options.hide)
            {
                tracing::warn!(export = %entry.path.display(),
                    "crossmnt and nohide are not supported: file systems mounted inside the export are not crossed");
            }
            let root_fh = Bytes::from(key.seal(id, &kh));
            let f_type = sys::fstatfs_type(root.as_fd()).ok();
            let by_inode = f_type.is_some_and(unique_inode_numbers);
            let nowait_reads = match f_type {
                Some(t) if memory_file_system(t) => NowaitReads::Memory,
                _ if by_inode => NowaitReads::Flag(AtomicBool::new(true)),
                _ => NowaitReads::Never,
            };
            exports.push(Export {
                id,
                entry,
                root,
                root_fh,
                root_dev: st.st_dev,
                root_ino: st.st_ino,
                mount_id,
                by_inode,
                nowait_reads,
                splice_reads: AtomicBool::new(true),
            });
        }
        let host_names = resolve_host_rules(&exports);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        let verifier = (now ^ ((std::process::id() as u64) << 48)).to_be_bytes();
        Ok(Self {
            key,
            exports,
            paths: PathCache::new(path_cache),
            data: FdCache::new(data_cache),
            write_verifier: verifier,
            host_names,
            pipes: Arc::default(),
            write_turns: (0..WRITE_TURNS)
                .map(|_| parking_lot::Mutex::new(()))
                .collect(),
        })
    }

    /// The WRITE/COMMIT verifier; it changes at every start, telling clients to resend
    /// unstable data.
    pub fn write_verifier(&self) -> [u8; 8] {
        self.write_verifier
    }

    /// Export paths with the client specifications allowed to mount them.
    pub fn export_list(&self) -> Vec<(PathBuf, Vec<String>)> {
        self.exports
            .iter()
            .map(|e| {
                (
                    e.entry.path.clone(),
                    e.entry
                        .clients
                        .iter()
                        .map(|c| c.client.to_string())
                        .collect(),
                )
            })
            .collect()
    }

    fn admit(&self, export: usize, client: &Client) -> VfsResult<Caller> {
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

    fn export_index(&self, id: u32) -> VfsResult<usize> {
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
    fn inode_key(&self, export: usize, st: &libc::stat64) -> Option<InodeKey> {
        (self.exports[export].by_inode && st.st_mode & libc::S_IFMT != libc::S_IFDIR)
            .then_some((export, st.st_dev, st.st_ino))
    }

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

    fn handle_at(
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

    fn attr(&self, fd: BorrowedFd<'_>) -> VfsResult<Attr> {
        Ok(Attr::from_stat(&sys::fstat(fd)?))
    }

    /// Current attributes of a node (fresh stat).
    pub fn getattr(&self, node: &Node) -> VfsResult<Attr> {
        self.attr(node.fd())
    }

    fn writable(&self, caller: &Caller) -> VfsResult<()> {
        if caller.writable {
            Ok(())
        } else {
            Err(VfsError::ReadOnly)
        }
    }

    fn same_export(&self, caller: &Caller, node: &Node) -> VfsResult<()> {
        if caller.export == node.export {
            Ok(())
        } else {
            Err(VfsError::Errno(libc::EXDEV))
        }
    }

    /// LOOKUP: the handle and attributes of `name` in `dir`. `..` of an export root is the root.
    pub fn lookup(&self, caller: &Caller, dir: &Node, name: &[u8]) -> VfsResult<(Bytes, Attr)> {
        self.same_export(caller, dir)?;
        if dir.attr.ftype != FileType::Directory {
            return Err(VfsError::Errno(libc::ENOTDIR));
        }
        if !mode_allows(&caller.creds, &dir.attr, 1, false) {
            return Err(VfsError::Errno(libc::EACCES));
        }
        if name == b"." || (name == b".." && self.is_export_root(dir)) {
            let root = if name == b"." {
                dir.clone()
            } else {
                self.resolve(&self.exports[dir.export].root_fh)?
            };
            return Ok((root.fh.clone(), root.attr));
        }
        if name == b".." {
            let parent = cred::with_creds(&caller.creds, || {
                sys::openat(dir.fd(), c"..", libc::O_PATH | libc::O_DIRECTORY, 0)
            })?;
            let fh = self.handle_at(dir.export, parent.as_fd(), c"", libc::AT_EMPTY_PATH)?;
            return Ok((fh, self.attr(parent.as_fd())?));
        }
        let c = cname(name)?;
        cred::with_creds(&caller.creds, || {
            let read_at = self.paths.epoch();
            let st = sys::fstatat(dir.fd(), &c, libc::AT_SYMLINK_NOFOLLOW)?;
            // a descriptor cached before the stat pins the inode, so its number names this
            // file (cache.rs)
            if let Some(key) = self.inode_key(dir.export, &st) {
                if let Some((fh, _)) = self.paths.by_inode(&key, read_at) {
                    return Ok((fh, Attr::from_stat(&st)));
                }
            }
            // The client is about to use the handle: open the object once and keep the
            // descriptor, so that call needs no open_by_handle_at (as root, which costs two
            // credential switches).
            let fd = sys::openat(dir.fd(), &c, libc::O_PATH | libc::O_NOFOLLOW, 0)?;
            let st = sys::fstat(fd.as_fd())?;
            let fh = self.handle_at(dir.export, fd.as_fd(), c"", libc::AT_EMPTY_PATH)?;
            self.paths
                .put(fh.clone(), Arc::new(fd), self.inode_key(dir.export, &st));
            Ok((fh, Attr::from_stat(&st)))
        })
    }

    fn lookup_c(&self, caller: &Caller, dir: &Node, c: &CStr) -> VfsResult<(Bytes, Attr)> {
        cred::with_creds(&caller.creds, || {
            let st = sys::fstatat(dir.fd(), c, libc::AT_SYMLINK_NOFOLLOW)?;
            let fh = self.handle_at(dir.export, dir.fd(), c, 0)?;
            Ok((fh, Attr::from_stat(&st)))
        })
    }

    /// ACCESS: which of the `mask` bits the caller holds on `node`.
    pub fn access(&self, caller: &Caller, node: &Node, mask: u32) -> u32 {
        let a = &node.attr;
        let c = &caller.creds;
        let mut granted = 0;
        let r = mode_allows(c, a, 4, false);
        let w = mode_allows(c, a, 2, false) && caller.writable;
        let x = mode_allows(c, a, 1, false);
        if a.ftype == FileType::Directory {
            if r {
                granted |= access::READ;
            }
            if x {
                granted |= access::LOOKUP;
            }
            if w {
                granted |= access::MODIFY | access::EXTEND | access::DELETE;
            }
        } else {
            if r {
                granted |= access::READ;
            }
            if w {
                granted |= access::MODIFY | access::EXTEND;
            }
            if x {
                granted |= access::EXECUTE;
            }
        }
        granted & mask
    }

    /// READLINK: the target of a symbolic link.
    pub fn readlink(&self, _caller: &Caller, node: &Node) -> VfsResult<Bytes> {
        if node.attr.ftype != FileType::Symlink {
            return Err(VfsError::Errno(libc::EINVAL));
        }
        Ok(Bytes::from(sys::readlink_fd(node.fd())?))
    }

    fn data_fd(&self, node: &Node) -> VfsResult<Arc<OwnedFd>> {
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
        self.data.put(node.fh.clone(), fd.clone());
        Ok(fd)
    }

    fn check_regular(node: &Node) -> VfsResult<()> {
        match node.attr.ftype {
            FileType::Regular => Ok(()),
            FileType::Directory => Err(VfsError::Errno(libc::EISDIR)),
            _ => Err(VfsError::Errno(libc::EINVAL)),
        }
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
        let export = &self.exports[node.export];
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
    fn after_read(
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
    fn pread_owned(
        &self,
        fd: BorrowedFd<'_>,
        node: &Node,
        buf: &mut BytesMut,
        count: usize,
        offset: u64,
    ) -> VfsResult<usize> {
        Ok(match self.nowait_flag(node) {
            Some(flag) => {
                sys::pread_into_nowait(fd, buf, count, offset).map_err(|e| nowait_error(e, flag))?
            }
            None => sys::pread_into(fd, buf, count, offset)?,
        })
    }

    /// `buf.len()` bytes at `offset` into `buf`, with `preadv2(RWF_NOWAIT)` where the call must
    /// not wait.
    fn pread_to(
        &self,
        fd: BorrowedFd<'_>,
        node: &Node,
        buf: &mut [u8],
        offset: u64,
    ) -> VfsResult<usize> {
        Ok(match self.nowait_flag(node) {
            Some(flag) => {
                sys::pread_slice_nowait(fd, buf, offset).map_err(|e| nowait_error(e, flag))?
            }
            None => sys::pread_slice(fd, buf, offset)?,
        })
    }

    /// For a read that must not wait and may be tried, the flag of `preadv2(RWF_NOWAIT)`
    /// (None: a plain read, as when waiting is allowed).
    fn nowait_flag(&self, node: &Node) -> Option<&AtomicBool> {
        match &self.exports[node.export].nowait_reads {
            NowaitReads::Flag(usable) if nowait::active() => Some(usable),
            _ => None,
        }
    }

    /// The checks READ makes, then the file's data descriptor.
    fn read_fd(&self, caller: &Caller, node: &Node) -> VfsResult<Arc<OwnedFd>> {
        if nowait::active() {
            let tried = match &self.exports[node.export].nowait_reads {
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
        if !mode_allows(&caller.creds, &node.attr, 4, true)
            && !mode_allows(&caller.creds, &node.attr, 1, false)
        {
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
        self.same_export(caller, node)?;
        self.writable(caller)?;
        Self::check_regular(node)?;
        if !mode_allows(&caller.creds, &node.attr, 2, true) {
            return Err(VfsError::Errno(libc::EACCES));
        }
        let fd = self.data_fd(node)?;
        let flags = match stable {
            Stability::Unstable => 0,
            Stability::DataSync => libc::RWF_DSYNC,
            Stability::FileSync => libc::RWF_SYNC,
        };
        // Writes to one file hold its inode lock in turn anyway; a thread that finds it taken
        // spins in the kernel for as long as the holder copies (a 1 MiB WRITE: ~100 µs, 3 % of
        // all CPU with 16 in flight on loopback). Here it sleeps instead. Not for synchronous
        // writes: their flushes overlap once the inode lock is let go.
        let turn = (flags == 0 && data.len() >= WRITE_TURN_MIN)
            .then(|| self.write_turns[write_turn(&node.attr, self.write_turns.len())].lock());
        // As the caller: the kernel clears the set-id bits of a file written by anyone without
        // CAP_FSETID, which a thread has only while its fsuid is 0 (see [`Vfs::as_writer`]).
        Self::as_writer(caller, || sys::pwrite_all(fd.as_fd(), data, offset, flags))?;
        drop(turn);
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
    fn as_writer<T>(caller: &Caller, f: impl FnOnce() -> T) -> T {
        cred::with_creds(&caller.creds, f)
    }

    /// COMMIT: makes all written data of the file durable.
    pub fn commit(&self, caller: &Caller, node: &Node) -> VfsResult<Attr> {
        self.same_export(caller, node)?;
        Self::check_regular(node)?;
        let fd = self.data_fd(node)?;
        let f = std::fs::File::from(fd.as_fd().try_clone_to_owned()?);
        f.sync_data()?;
        self.attr(fd.as_fd())
    }

    /// SETATTR, with an optional ctime guard; returns the new attributes.
    pub fn setattr(
        &self,
        caller: &Caller,
        node: &Node,
        s: &SetAttrs,
        guard: Option<Time>,
    ) -> VfsResult<Attr> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        if let Some(g) = guard {
            if g != node.attr.ctime {
                return Err(VfsError::NotSync);
            }
        }
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || -> VfsResult<()> {
            if s.uid.is_some() || s.gid.is_some() {
                sys::fchown_fd(
                    node.fd(),
                    s.uid.unwrap_or(u32::MAX),
                    s.gid.unwrap_or(u32::MAX),
                )?;
            }
            if let Some(m) = s.mode {
                if node.attr.ftype != FileType::Symlink {
                    sys::chmod_path(&path, m & 0o7777)?;
                }
            }
            if let Some(size) = s.size {
                Self::check_regular(node)?;
                match sys::truncate_path(&path, size) {
                    Ok(()) => {}
                    // The owner may truncate a file it cannot write (it created it read-only).
                    Err(e)
                        if e.raw_os_error() == Some(libc::EACCES)
                            && caller.creds.uid == node.attr.uid =>
                    {
                        let fd = self.data_fd(node)?;
                        let f = std::fs::File::from(fd.as_fd().try_clone_to_owned()?);
                        // data_fd may have opened the file as root: truncate as the caller.
                        Self::as_writer(caller, || f.set_len(size))?;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if s.atime != SetTime::DontChange || s.mtime != SetTime::DontChange {
                let times = [timespec(s.atime), timespec(s.mtime)];
                match sys::utimensat(libc::AT_FDCWD, &path, &times, 0) {
                    Ok(()) => {}
                    // Setting one time to now and leaving the other needs ownership in
                    // utimensat, but it is what the client sends for a writer's ftruncate
                    // or O_TRUNC (mtime to the server's time): anyone who may write the file
                    // may do it, as a write would (knfsd allows it alike).
                    Err(e)
                        if e.raw_os_error() == Some(libc::EPERM)
                            && touches_only(s)
                            && mode_allows(&caller.creds, &node.attr, 2, false) =>
                    {
                        cred::as_root(|| sys::utimensat(libc::AT_FDCWD, &path, &times, 0))?
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(())
        })?;
        self.attr(node.fd())
    }

    fn finish_create(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &CStr,
        s: &SetAttrs,
    ) -> VfsResult<(Bytes, Attr)> {
        let (fh, _) = self.lookup_c(caller, dir, name)?;
        let node = self.resolve(&fh)?;
        let attr = self.set_after_create(caller, &node, s)?;
        Ok((fh, attr))
    }

    /// Applies what a create asked for beyond the mode (given at creation) to the new `node`;
    /// its attributes.
    fn set_after_create(&self, caller: &Caller, node: &Node, s: &SetAttrs) -> VfsResult<Attr> {
        let rest = SetAttrs {
            mode: None,
            ..s.clone()
        };
        if rest != SetAttrs::default() {
            self.setattr(caller, node, &rest, None)
        } else {
            Ok(node.attr.clone())
        }
    }

    /// The node of a file CREATE just made, from the (read-write) descriptor that made it: no
    /// name is looked up again (which also cannot race with a rename), and the descriptor is
    /// cached for both uses, so neither the client's next call on the handle needs an
    /// open_by_handle_at nor its first WRITE a data descriptor (each opened as root, which
    /// costs two credential switches).
    fn created_node(&self, dir: &Node, fd: OwnedFd) -> VfsResult<Node> {
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

    fn check_dir_for_change(&self, caller: &Caller, dir: &Node) -> VfsResult<()> {
        self.same_export(caller, dir)?;
        self.writable(caller)?;
        if dir.attr.ftype != FileType::Directory {
            return Err(VfsError::Errno(libc::ENOTDIR));
        }
        Ok(())
    }

    /// CREATE a regular file.
    pub fn create(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        how: CreateMode,
        s: &SetAttrs,
    ) -> VfsResult<(Bytes, Attr)> {
        self.create_file(caller, dir, name, how, s)
            .map(|c| (c.fh, c.attr))
    }

    /// CREATE a regular file, telling whether it was made or found.
    pub fn create_file(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        how: CreateMode,
        s: &SetAttrs,
    ) -> VfsResult<Created> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        let mode = match how {
            CreateMode::Exclusive(_) => 0o600,
            _ => s.mode.unwrap_or(0o644) & 0o7777,
        };
        let created = cred::with_creds(&caller.creds, || {
            sys::openat(
                dir.fd(),
                &c,
                // a new file opens read-write whatever its mode
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_NOFOLLOW,
                mode,
            )
        });
        match (created, how) {
            (Ok(fd), CreateMode::Exclusive(verf)) => {
                let node = self.created_node(dir, fd)?;
                let fh = node.fh.clone();
                let t = exclusive_times(verf);
                let attr = self.setattr(
                    caller,
                    &node,
                    &SetAttrs {
                        atime: SetTime::Client(t.0),
                        mtime: SetTime::Client(t.1),
                        ..Default::default()
                    },
                    None,
                )?;
                Ok(Created {
                    fh,
                    attr,
                    created: true,
                })
            }
            (Ok(fd), _) => {
                let node = self.created_node(dir, fd)?;
                let attr = self.set_after_create(caller, &node, s)?;
                Ok(Created {
                    fh: node.fh,
                    attr,
                    created: true,
                })
            }
            (Err(e), CreateMode::Unchecked) if e.raw_os_error() == Some(libc::EEXIST) => {
                let (fh, attr) = self.lookup_c(caller, dir, &c)?;
                if attr.ftype != FileType::Regular {
                    return Err(VfsError::Errno(libc::EEXIST));
                }
                if let Some(size) = s.size {
                    let node = self.resolve(&fh)?;
                    let a = self.setattr(
                        caller,
                        &node,
                        &SetAttrs {
                            size: Some(size),
                            ..Default::default()
                        },
                        None,
                    )?;
                    return Ok(Created {
                        fh,
                        attr: a,
                        created: false,
                    });
                }
                Ok(Created {
                    fh,
                    attr,
                    created: false,
                })
            }
            (Err(e), CreateMode::Exclusive(verf)) if e.raw_os_error() == Some(libc::EEXIST) => {
                let (fh, attr) = self.lookup_c(caller, dir, &c)?;
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
            (Err(e), _) => Err(e.into()),
        }
    }

    /// MKDIR.
    pub fn mkdir(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        s: &SetAttrs,
    ) -> VfsResult<(Bytes, Attr)> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        cred::with_creds(&caller.creds, || {
            sys::mkdirat(dir.fd(), &c, s.mode.unwrap_or(0o755) & 0o7777)
        })?;
        self.finish_create(caller, dir, &c, s)
    }

    /// SYMLINK.
    pub fn symlink(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        target: &[u8],
        s: &SetAttrs,
    ) -> VfsResult<(Bytes, Attr)> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        if target.is_empty() {
            return Err(VfsError::Errno(libc::ENOENT));
        }
        let t = CString::new(target).map_err(|_| VfsError::Errno(libc::EINVAL))?;
        cred::with_creds(&caller.creds, || sys::symlinkat(&t, dir.fd(), &c))?;
        let rest = SetAttrs {
            mode: None,
            size: None,
            ..s.clone()
        };
        self.finish_create(caller, dir, &c, &rest)
    }

    /// MKNOD: a device, socket or pipe.
    pub fn mknod(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        kind: SpecialFile,
        s: &SetAttrs,
    ) -> VfsResult<(Bytes, Attr)> {
        self.check_dir_for_change(caller, dir)?;
        let c = new_name(name)?;
        let perm = s.mode.unwrap_or(0o644) & 0o7777;
        let (fmt, dev) = match kind {
            SpecialFile::Char(ma, mi) => (libc::S_IFCHR, libc::makedev(ma, mi)),
            SpecialFile::Block(ma, mi) => (libc::S_IFBLK, libc::makedev(ma, mi)),
            SpecialFile::Socket => (libc::S_IFSOCK, 0),
            SpecialFile::Fifo => (libc::S_IFIFO, 0),
        };
        cred::with_creds(&caller.creds, || {
            sys::mknodat(dir.fd(), &c, fmt | perm, dev)
        })?;
        let rest = SetAttrs {
            mode: None,
            size: None,
            ..s.clone()
        };
        self.finish_create(caller, dir, &c, &rest)
    }

    /// REMOVE (non-directories) or RMDIR (`dir_only`).
    pub fn remove(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &[u8],
        dir_only: bool,
    ) -> VfsResult<()> {
        self.check_dir_for_change(caller, dir)?;
        if name == b"." {
            return Err(VfsError::Errno(libc::EINVAL));
        }
        if name == b".." {
            return Err(VfsError::Errno(libc::ENOTEMPTY));
        }
        let c = cname(name)?;
        let gone = cred::with_creds(&caller.creds, || {
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
        })?;
        if let Some(fh) = gone {
            self.forget(&fh);
        }
        Ok(())
    }

    /// The handle of `c` in `dir` (whose stat `st` was read at epoch `read_at`) when removing
    /// that name frees the file: its last link, not a directory.
    fn last_link_handle(
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
    fn forget(&self, fh: &Bytes) {
        self.paths.remove(fh);
        self.data.remove(fh);
    }

    /// RENAME `from_name` in `from` to `to_name` in `to` (same export only).
    pub fn rename(
        &self,
        caller: &Caller,
        from: &Node,
        from_name: &[u8],
        to: &Node,
        to_name: &[u8],
    ) -> VfsResult<()> {
        self.check_dir_for_change(caller, from)?;
        self.check_dir_for_change(caller, to)?;
        let is_dot = |n: &[u8]| n == b"." || n == b"..";
        if is_dot(from_name) || is_dot(to_name) {
            return Err(VfsError::Errno(libc::EINVAL));
        }
        let f = cname(from_name)?;
        let t = cname(to_name)?;
        let gone = cred::with_creds(&caller.creds, || {
            // a file the new name replaces may lose its last link
            let read_at = self.paths.epoch();
            let gone = sys::fstatat(to.fd(), &t, libc::AT_SYMLINK_NOFOLLOW)
                .ok()
                .and_then(|st| self.last_link_handle(to, &t, &st, read_at));
            sys::renameat(from.fd(), &f, to.fd(), &t)?;
            Ok::<_, VfsError>(gone)
        })?;
        if let Some(fh) = gone {
            self.forget(&fh);
        }
        Ok(())
    }

    /// LINK: a new name `name` in `dir` for `node` (same export only).
    pub fn link(&self, caller: &Caller, node: &Node, dir: &Node, name: &[u8]) -> VfsResult<Attr> {
        self.same_export(caller, node)?;
        self.check_dir_for_change(caller, dir)?;
        if node.attr.ftype == FileType::Directory {
            return Err(VfsError::Errno(libc::EISDIR));
        }
        let c = new_name(name)?;
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || {
            sys::linkat_follow(sys::cwd(), &path, dir.fd(), &c)
        })?;
        self.attr(node.fd())
    }

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
    fn read_entries(
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
        let mut size = first.min(buf.len());
        loop {
            let read_at = self.paths.epoch();
            let n = sys::getdents64(dfd, &mut buf[..size])?;
            // the caller takes more than expected: read more at once from now on
            size = (size * 2).min(buf.len());
            if n == 0 {
                return Ok(true);
            }
            let mut off = 0;
            while off + 19 <= n {
                let rec = &buf[off..n];
                let ino = u64::from_ne_bytes(rec[0..8].try_into().unwrap_or_default());
                let next = u64::from_ne_bytes(rec[8..16].try_into().unwrap_or_default());
                let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
                if reclen < 19 || reclen > rec.len() {
                    return Err(VfsError::Errno(libc::EIO));
                }
                let name_raw = &rec[19..reclen];
                // the kernel terminates every name with NUL inside its record
                let Some(nlen) = name_raw.iter().position(|b| *b == 0) else {
                    return Err(VfsError::Errno(libc::EIO));
                };
                let cname = CStr::from_bytes_with_nul(&name_raw[..=nlen])
                    .map_err(|_| VfsError::Errno(libc::EIO))?;
                off += reclen;
                let mut entry = DirEntry {
                    fileid: ino,
                    name: Bytes::copy_from_slice(&name_raw[..nlen]),
                    cookie: next,
                    plus: None,
                };
                if name_raw[..nlen] == *b".." && at_root {
                    entry.fileid = dir.attr.fileid;
                }
                if plus {
                    let listed = (ino, rec[18], read_at);
                    entry.plus = self.entry_plus(caller, dir, cname, listed, at_root);
                }
                if !accept(entry) {
                    return Ok(false);
                }
            }
        }
    }

    /// The handle and attributes of the entry `name` of `dir`, which the listing gave as
    /// (inode number, d_type, epoch before the listing was read) `listed`.
    fn entry_plus(
        &self,
        caller: &Caller,
        dir: &Node,
        name: &CStr,
        listed: (u64, u8, Epoch),
        at_root: bool,
    ) -> Option<(Bytes, Attr)> {
        let raw = name.to_bytes();
        if raw == b"." || (raw == b".." && at_root) {
            return Some((dir.fh.clone(), dir.attr.clone()));
        }
        if raw == b".." {
            return self.lookup(caller, dir, raw).ok();
        }
        let (ino, d_type, read_at) = listed;
        if self.exports[dir.export].by_inode && !matches!(d_type, libc::DT_DIR | libc::DT_UNKNOWN) {
            let key = (dir.export, dir.attr.fsid, ino);
            if let Some((fh, fd)) = self.paths.by_inode(&key, read_at) {
                // The descriptor, cached before the listing was read, keeps inode `ino` alive,
                // so the name listed with that number is this inode (see cache.rs): fstat only
                // re-reads its attributes. No name is
                // walked, but the caller needed search permission on `dir` to open it above,
                // as a walk would.
                match sys::fstat(fd.as_fd()) {
                    Ok(st) if st.st_ino == ino && st.st_dev == dir.attr.fsid && st.st_nlink > 0 => {
                        return Some((fh, Attr::from_stat(&st)));
                    }
                    // unlinked (or not what was listed): its descriptors keep its space
                    _ => self.forget(&fh),
                }
            }
        }
        // Not cached: two path walks, and no descriptor kept (listing a directory larger than
        // the cache would otherwise evict every descriptor the clients are using).
        self.lookup_c(caller, dir, name).ok()
    }

    /// Export paths with their root handles, for building the NFSv4 pseudo file system.
    pub fn export_roots(&self) -> Vec<(PathBuf, Bytes)> {
        self.exports
            .iter()
            .map(|e| (e.entry.path.clone(), e.root_fh.clone()))
            .collect()
    }

    /// The path of the export `node` belongs to.
    pub fn export_path(&self, node: &Node) -> &Path {
        &self.exports[node.export].entry.path
    }

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
    fn scan_extents(
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
        self.same_export(caller, node)?;
        self.writable(caller)?;
        Self::check_regular(node)?;
        if !mode_allows(&caller.creds, &node.attr, 2, true) {
            return Err(VfsError::Errno(libc::EACCES));
        }
        let fd = self.data_fd(node)?;
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
        if !mode_allows(&caller.creds, &src.attr, 4, true)
            || !mode_allows(&caller.creds, &dst.attr, 2, true)
        {
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

    fn xattr_name(name: &[u8]) -> VfsResult<CString> {
        if name.is_empty() || name.len() > NAME_MAX {
            return Err(VfsError::Errno(libc::ENAMETOOLONG));
        }
        let mut full = b"user.".to_vec();
        full.extend_from_slice(name);
        CString::new(full).map_err(|_| VfsError::BadName)
    }

    /// GETXATTR: the value of user extended attribute `name`.
    pub fn getxattr(&self, caller: &Caller, node: &Node, name: &[u8]) -> VfsResult<Bytes> {
        self.same_export(caller, node)?;
        let n = Self::xattr_name(name)?;
        let path = node.proc_path();
        let v = cred::with_creds(&caller.creds, || sys::getxattr(&path, &n, XATTR_SIZE_MAX))?;
        Ok(Bytes::from(v))
    }

    /// SETXATTR: sets user extended attribute `name` (`flags`: XATTR_CREATE / XATTR_REPLACE).
    pub fn setxattr(
        &self,
        caller: &Caller,
        node: &Node,
        name: &[u8],
        value: &[u8],
        flags: i32,
    ) -> VfsResult<()> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        let n = Self::xattr_name(name)?;
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || sys::setxattr(&path, &n, value, flags))?;
        Ok(())
    }

    /// LISTXATTRS: names of the user extended attributes, without the `user.` prefix.
    pub fn listxattrs(&self, caller: &Caller, node: &Node) -> VfsResult<Vec<Bytes>> {
        self.same_export(caller, node)?;
        let path = node.proc_path();
        let raw = cred::with_creds(&caller.creds, || sys::listxattr(&path, XATTR_LIST_MAX))?;
        Ok(raw
            .split(|b| *b == 0)
            .filter_map(|n| n.strip_prefix(b"user."))
            .filter(|n| !n.is_empty())
            .map(Bytes::copy_from_slice)
            .collect())
    }

    /// REMOVEXATTR: removes user extended attribute `name`.
    pub fn removexattr(&self, caller: &Caller, node: &Node, name: &[u8]) -> VfsResult<()> {
        self.same_export(caller, node)?;
        self.writable(caller)?;
        let n = Self::xattr_name(name)?;
        let path = node.proc_path();
        cred::with_creds(&caller.creds, || sys::removexattr(&path, &n))?;
        Ok(())
    }

    /// FSSTAT: usage of the export's file system.
    pub fn fsstat(&self, node: &Node) -> VfsResult<FsStat> {
        let s = sys::fstatvfs(node.fd())?;
        let f = s.f_frsize.max(1);
        Ok(FsStat {
            total_bytes: s.f_blocks.saturating_mul(f),
            free_bytes: s.f_bfree.saturating_mul(f),
            avail_bytes: s.f_bavail.saturating_mul(f),
            total_files: s.f_files,
            free_files: s.f_ffree,
            avail_files: s.f_favail,
        })
    }
}

/// Resolves the host names of client rules (forward lookup at start-up). Wildcard host patterns
/// would need a reverse lookup of every client, which rnfsd does not do: they never match.
fn resolve_host_rules(exports: &[Export]) -> HashMap<IpAddr, String> {
    use crate::exports::ClientMatch;
    use std::net::ToSocketAddrs;
    let mut out = HashMap::new();
    for e in exports {
        for rule in &e.entry.clients {
            match &rule.client {
                ClientMatch::Host(name) => match (name.as_str(), 0u16).to_socket_addrs() {
                    Ok(addrs) => {
                        for a in addrs {
                            out.entry(a.ip().to_canonical())
                                .or_insert_with(|| name.clone());
                        }
                    }
                    Err(err) => {
                        tracing::warn!(host = %name, error = %err, "exports: host name does not resolve")
                    }
                },
                ClientMatch::HostPattern(p) => tracing::warn!(
                    pattern = %p,
                    "exports: wildcard host names need reverse DNS, which rnfsd does not do; this rule never matches"
                ),
                ClientMatch::Netgroup(g) => {
                    tracing::warn!(netgroup = %g, "exports: netgroups are not supported; this rule never matches")
                }
                _ => {}
            }
        }
    }
    out
}

/// Normalizes an absolute path lexically; `..` components are refused rather than resolved.
fn normalize(p: &Path) -> Option<PathBuf> {
    use std::path::Component;
    if !p.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn exclusive_times(verf: [u8; 8]) -> (Time, Time) {
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

/// Applies root_squash / all_squash and the anonymous ids to a caller's identity.
pub fn squash(opts: &ExportOptions, ident: Option<&Creds>) -> Creds {
    let anon = Creds {
        uid: opts.anonuid,
        gid: opts.anongid,
        groups: Vec::new(),
    };
    let Some(id) = ident else {
        return anon;
    };
    match opts.squash {
        Squash::All => anon,
        Squash::None => id.clone(),
        Squash::Root => Creds {
            uid: if id.uid == 0 { opts.anonuid } else { id.uid },
            gid: if id.gid == 0 { opts.anongid } else { id.gid },
            groups: id
                .groups
                .iter()
                .map(|g| if *g == 0 { opts.anongid } else { *g })
                .collect(),
        },
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
