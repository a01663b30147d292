//! The local POSIX backend: exports of local directories, reached only through handles.
//!
//! Every object is reached from a handle (open_by_handle_at) or from a directory descriptor plus
//! one name component, never from a path string, and symbolic links are never followed, so
//! nothing outside an export's file system subtree can be named by a client. Namespace calls run
//! with the caller's fsuid/fsgid/groups; reads and writes use cached descriptors after a
//! permission check against the file's mode (with the owner override NFS clients rely on for
//! I/O), and changes to data run as the caller, so the kernel clears set-id bits as it would
//! for a local writer.
//!
//! Here: the types (`Vfs`, `Caller`, `Node`), start-up and the export list. By concern:
//! `handles` (admission and handle resolution), `perm` (mode checks), `names` (the namespace),
//! `dirs` (listings), `attrs` (SETATTR, xattrs), `io` (READ, WRITE, COMMIT) and `sparse` (SEEK,
//! extents, ALLOCATE, COPY).

mod attrs;
mod dirs;
mod handles;
mod io;
mod names;
mod perm;
mod sparse;

use io::dense;
use perm::mode_allows;

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
