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
//! `handles` (admission and handle resolution), `perm` (mode checks), `acl` (POSIX ACLs and the
//! checks that follow them), `names` (the namespace),
//! `dirs` (listings), `attrs` (SETATTR, xattrs), `io` (READ, WRITE, COMMIT) and `sparse` (SEEK,
//! extents, ALLOCATE, COPY).

mod acl;
mod attrs;
mod dirchange;
mod dirs;
mod handles;
mod io;
mod names;
mod perm;
mod remote;
mod sparse;
mod table;

pub use dirchange::DirChange;
pub use remote::RemoteData;
pub use table::{ExportChanges, ExportCounters, ExportView};
use table::{ExportTable, NowaitReads};

use io::dense;
use perm::mode_allows;

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{Bytes, BytesMut};

use crate::cache::{Epoch, FdCache, InodeKey, PathCache};
use crate::cred::{self, Creds};
use crate::error::{VfsError, VfsResult};
use crate::exports::{ExportEntry, ExportOptions, SecFlavor, Squash};
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
    /// Whether the call came from a privileged source (a port below 1024, or a transport
    /// trusted as one): what `secure` exports require.
    pub privileged: bool,
    /// The identity the call carries (AUTH_SYS's, or the one a Kerberos principal maps to),
    /// or `None` (AUTH_NONE, or a principal that maps to no local user): anonymous.
    pub ident: Option<Creds>,
    /// The security flavor the call came with (what `sec=` admits).
    pub flavor: SecFlavor,
}

/// A caller admitted to one export: squashed identity and access mode.
#[derive(Debug, Clone)]
pub struct Caller {
    export: usize,
    /// Identity used for file-system calls.
    pub creds: Creds,
    /// Whether the export is writable for this client.
    pub writable: bool,
    /// Changes are made durable before the reply (`sync`, the default; `async` does not,
    /// as knfsd: acknowledged changes may be lost if the server crashes).
    pub sync: bool,
    /// The client's rule says `pnfs`: data it writes first to an empty file is placed on the
    /// data servers ([`RemoteData::place`]).
    pub pnfs: bool,
    /// ACLs are shown to and set by this client (`acl`, the default; not with `no_acl`).
    pub acls: bool,
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

    /// As [`ChangeGuard::before_change`] before the size of `node` is set: clients writing
    /// its data elsewhere themselves (pNFS layouts) stop first.
    fn before_truncate(&self, _node: &Node) -> VfsResult<()> {
        Ok(())
    }
}

/// The backend serving all exports.
pub struct Vfs {
    key: HandleKey,
    exports: table::Table,
    /// Held by a reload (one at a time).
    reloading: parking_lot::Mutex<()>,
    paths: PathCache,
    data: FdCache<OwnedFd>,
    /// The WRITE/COMMIT verifier (see [`Vfs::write_verifier`]).
    write_verifier: AtomicU64,
    /// Pipes that READ data is spliced into.
    pipes: Arc<PipePool>,
    /// Turns of large unstable WRITEs, one per file (by inode, striped; see [`Vfs::write`]).
    write_turns: Box<[parking_lot::Mutex<()>]>,
    /// Locks held over a change of names in a directory (striped; see [`Vfs::change_dir`]).
    dir_turns: Box<[parking_lot::Mutex<()>]>,
    /// Where the data of files placed elsewhere lives (a pNFS metadata server's data servers).
    remote: std::sync::OnceLock<Arc<dyn RemoteData>>,
    /// Access ACLs of files recently checked (see [`Vfs::may`]).
    acls: acl::AclCache,
}

impl std::fmt::Debug for Vfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vfs")
            .field("exports", &self.table().live().count())
            .finish_non_exhaustive()
    }
}

/// Stripes of the WRITE turns: two files share one with odds 1 in 4,096, and then only take
/// turns with each other (4 KiB of locks).
const WRITE_TURNS: usize = 4096;

/// WRITEs from this size on take turns per file ([`Vfs::write`]).
const WRITE_TURN_MIN: usize = 64 * 1024;

/// A verifier no earlier instance or failure of this server is likely to have used: the
/// clock's nanoseconds and the process id.
fn fresh_verifier() -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    now ^ ((std::process::id() as u64) << 48)
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
        let (table, _) = ExportTable::build(cfg.exports, None, &key)?;
        Ok(Self {
            key,
            exports: table::shared(table),
            reloading: parking_lot::Mutex::new(()),
            paths: PathCache::new(path_cache),
            data: FdCache::new(data_cache),
            write_verifier: AtomicU64::new(fresh_verifier()),
            pipes: Arc::default(),
            write_turns: (0..WRITE_TURNS)
                .map(|_| parking_lot::Mutex::new(()))
                .collect(),
            dir_turns: (0..dirchange::DIR_TURNS)
                .map(|_| parking_lot::Mutex::new(()))
                .collect(),
            remote: std::sync::OnceLock::new(),
            acls: acl::AclCache::new(),
        })
    }

    /// The WRITE/COMMIT verifier; it changes at every start and after a write or flush
    /// failed, telling clients to resend the data they wrote unstable.
    pub fn write_verifier(&self) -> [u8; 8] {
        self.write_verifier.load(Ordering::Acquire).to_be_bytes()
    }

    /// A write or a flush failed with `e`: data acknowledged UNSTABLE may be lost with it
    /// (a failed writeback is reported once, on one descriptor, and its pages may be gone),
    /// so the verifier changes and every client's next COMMIT tells it to send its unstable
    /// writes again, as knfsd's `commit_reset_write_verifier` does. Not for EAGAIN (a
    /// non-blocking try), EINTR or ESTALE, which say nothing of the storage.
    fn write_failed(&self, e: &std::io::Error) {
        if matches!(
            e.raw_os_error(),
            Some(libc::EAGAIN | libc::EINTR | libc::ESTALE)
        ) {
            return;
        }
        let old = self.write_verifier.load(Ordering::Acquire);
        let mut new = fresh_verifier();
        if new == old {
            new = new.wrapping_add(1);
        }
        // a concurrent failure may have changed it already: either value is new to clients
        let _ = self
            .write_verifier
            .compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire);
        tracing::warn!(error = %e, "a write or flush failed: the write verifier changes");
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
        groups: crate::cred::no_groups(),
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
            groups: if id.groups.contains(&0) {
                id.groups
                    .iter()
                    .map(|g| if *g == 0 { opts.anongid } else { *g })
                    .collect()
            } else {
                id.groups.clone()
            },
        },
    }
}
