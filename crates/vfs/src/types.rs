//! Attribute and argument types shared by every protocol version.

/// Object type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// Regular file.
    Regular,
    /// Directory.
    Directory,
    /// Block device.
    Block,
    /// Character device.
    Char,
    /// Symbolic link.
    Symlink,
    /// Unix socket.
    Socket,
    /// Named pipe.
    Fifo,
}

/// A timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Time {
    /// Seconds since the epoch.
    pub sec: i64,
    /// Nanoseconds.
    pub nsec: u32,
}

/// Which file an object is, for state that belongs to the file (opens, locks, delegations):
/// its file system, its inode number, and a digest of its kernel file handle, which carries
/// the inode's generation where the file system has one. A file created where a removed
/// file's inode number is reused is then another file; the same file reached through two
/// exports is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    /// File system id.
    pub fsid: u64,
    /// Inode number.
    pub fileid: u64,
    /// Digest of the kernel handle (type and bytes), which tells inode numbers reused apart.
    pub generation: u64,
}

impl FileId {
    /// The file with wire handle `fh` (one this backend made) and attributes `attr`.
    pub fn of(fh: &[u8], attr: &Attr) -> FileId {
        FileId {
            fsid: attr.fsid,
            fileid: attr.fileid,
            generation: crate::handle::kernel_digest(fh),
        }
    }
}

/// Attributes of an object, from stat(2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    /// Object type.
    pub ftype: FileType,
    /// Permission bits including setuid, setgid and sticky (07777).
    pub mode: u32,
    /// Hard links.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes.
    pub size: u64,
    /// Bytes of storage allocated.
    pub used: u64,
    /// Device major and minor numbers, for device files.
    pub rdev: (u32, u32),
    /// File system id.
    pub fsid: u64,
    /// Inode number.
    pub fileid: u64,
    /// Last access.
    pub atime: Time,
    /// Last data modification.
    pub mtime: Time,
    /// Last status change.
    pub ctime: Time,
}

impl Attr {
    /// Converts a stat(2) result.
    pub fn from_stat(st: &libc::stat64) -> Self {
        let ftype = match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => FileType::Directory,
            libc::S_IFBLK => FileType::Block,
            libc::S_IFCHR => FileType::Char,
            libc::S_IFLNK => FileType::Symlink,
            libc::S_IFSOCK => FileType::Socket,
            libc::S_IFIFO => FileType::Fifo,
            _ => FileType::Regular,
        };
        let t = |s: i64, ns: i64| Time {
            sec: s,
            nsec: ns.clamp(0, 999_999_999) as u32,
        };
        Attr {
            ftype,
            mode: st.st_mode & 0o7777,
            nlink: st.st_nlink as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            size: st.st_size.max(0) as u64,
            used: (st.st_blocks.max(0) as u64).saturating_mul(512),
            rdev: (libc::major(st.st_rdev), libc::minor(st.st_rdev)),
            fsid: st.st_dev,
            fileid: st.st_ino,
            atime: t(st.st_atime, st.st_atime_nsec),
            mtime: t(st.st_mtime, st.st_mtime_nsec),
            ctime: t(st.st_ctime, st.st_ctime_nsec),
        }
    }
}

/// How to set a timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SetTime {
    /// Leave it.
    #[default]
    DontChange,
    /// The server's current time.
    ServerNow,
    /// A time given by the client.
    Client(Time),
}

/// Attributes to change; `None` fields stay as they are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetAttrs {
    /// New permission bits.
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New size (truncate or extend).
    pub size: Option<u64>,
    /// New access time.
    pub atime: SetTime,
    /// New modification time.
    pub mtime: SetTime,
    /// Creates only: the client's umask (NFSv4.2 `mode_umask`, RFC 8275), taken from the mode
    /// unless the directory has a default ACL, which then decides instead (as for a local
    /// create).
    pub umask: Option<u32>,
}

/// A regular file a create returned.
#[derive(Debug, Clone)]
pub struct Created {
    /// Its handle.
    pub fh: bytes::Bytes,
    /// Its attributes.
    pub attr: Attr,
    /// Whether this create made it (for an exclusive create: this one or an earlier try with
    /// the same verifier); false for an existing file an UNCHECKED create opened.
    pub created: bool,
}

/// How CREATE treats an existing name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateMode {
    /// Succeed on an existing regular file, leaving it as it is ([`crate::Vfs::create`],
    /// NFSv3's CREATE, then sets its size when asked).
    Unchecked,
    /// Fail with EEXIST on an existing file.
    Guarded,
    /// Exclusive create: a retransmission with the same verifier succeeds.
    Exclusive([u8; 8]),
}

/// Durability asked of a WRITE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stability {
    /// May stay in the page cache until COMMIT.
    Unstable,
    /// Data and the metadata needed to read it reach stable storage before the reply.
    DataSync,
    /// Data and all metadata reach stable storage before the reply.
    FileSync,
}

/// Kinds of special file MKNOD creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialFile {
    /// Character device (major, minor).
    Char(u32, u32),
    /// Block device (major, minor).
    Block(u32, u32),
    /// Unix socket.
    Socket,
    /// Named pipe.
    Fifo,
}

/// File-system usage, from statvfs(3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsStat {
    /// Total bytes.
    pub total_bytes: u64,
    /// Free bytes.
    pub free_bytes: u64,
    /// Bytes available to unprivileged users.
    pub avail_bytes: u64,
    /// Total inodes.
    pub total_files: u64,
    /// Free inodes.
    pub free_files: u64,
    /// Inodes available to unprivileged users.
    pub avail_files: u64,
}

/// ACCESS bits (same values as NFSv3 and NFSv4).
pub mod access {
    /// Read data / list directory.
    pub const READ: u32 = 0x01;
    /// Look up names in a directory.
    pub const LOOKUP: u32 = 0x02;
    /// Rewrite data / change directory entries.
    pub const MODIFY: u32 = 0x04;
    /// Extend a file / add directory entries.
    pub const EXTEND: u32 = 0x08;
    /// Delete directory entries.
    pub const DELETE: u32 = 0x10;
    /// Execute a file.
    pub const EXECUTE: u32 = 0x20;
}

/// One directory entry, as READDIR returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Inode number.
    pub fileid: u64,
    /// Name (bytes, not necessarily UTF-8).
    pub name: bytes::Bytes,
    /// Cookie that resumes the listing after this entry.
    pub cookie: u64,
    /// Handle and attributes, when asked for (READDIRPLUS) and available.
    pub plus: Option<(bytes::Bytes, Attr)>,
}

/// A piece of a file as READ_PLUS sends it ([`crate::Vfs::read_extents_to`]): data in memory
/// or as file pages, or a hole.
#[derive(Debug, Clone)]
pub enum SentExtent {
    /// Data read from the file.
    Data {
        /// Where it starts.
        offset: u64,
        /// The bytes or pages.
        data: payload::Payload,
    },
    /// A range that reads as zeros and has no storage.
    Hole {
        /// Where it starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
}

/// A piece of a file as READ_PLUS returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extent {
    /// Bytes read from the file.
    Data {
        /// Where they start.
        offset: u64,
        /// The bytes.
        data: bytes::Bytes,
    },
    /// A range that reads as zeros and has no storage.
    Hole {
        /// Where it starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
}

/// An extent of a READ_PLUS read into a caller's buffer ([`crate::Vfs::read_extents_into`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// File bytes, at `at..at + len` of the buffer.
    Data {
        /// Where they start in the file.
        offset: u64,
        /// Where they are in the buffer.
        at: usize,
        /// How many.
        len: usize,
    },
    /// A range that reads as zeros and has no storage.
    Hole {
        /// Where it starts.
        offset: u64,
        /// Its length.
        len: u64,
    },
}
