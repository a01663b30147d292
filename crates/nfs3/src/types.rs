//! NFSv3 and MOUNT v3 protocol types (RFC 1813 sections 2, 3, 5 and Appendix I).
//!
//! Every type follows the `.x` definitions of the RFC and implements both [`Decode`] and
//! [`Encode`], so argument and result types round-trip. Variable-length opaque data (file
//! handles, names, paths, WRITE and READ payloads) is held as [`Bytes`]: decoding returns a slice
//! of the receive buffer and READ data is encoded as a separate bulk segment, so payloads are
//! never copied.
//!
//! Results use the generic [`Res3`]: the `nfsstat3` status word is always encoded first, followed
//! by the `resok` arm when it is `NFS3_OK` and by the `resfail` arm otherwise.

#![forbid(unsafe_code)]

use bytes::Bytes;
use xdr::{Decode, Decoder, Encode, Encoder, Payload, Result, XdrError};

// ---------------------------------------------------------------------------------------------
// Program numbers, sizes and bounds
// ---------------------------------------------------------------------------------------------

/// ONC RPC program number of NFS.
pub const NFS_PROGRAM: u32 = 100_003;
/// NFS protocol version implemented here.
pub const NFS_V3: u32 = 3;
/// ONC RPC program number of MOUNT.
pub const MOUNT_PROGRAM: u32 = 100_005;
/// MOUNT protocol version implemented here.
pub const MOUNT_V3: u32 = 3;

/// Maximum size in bytes of an NFSv3 file handle (`NFS3_FHSIZE`).
pub const NFS3_FHSIZE: usize = 64;
/// Size in bytes of a READDIR cookie verifier (`NFS3_COOKIEVERFSIZE`).
pub const NFS3_COOKIEVERFSIZE: usize = 8;
/// Size in bytes of an exclusive CREATE verifier (`NFS3_CREATEVERFSIZE`).
pub const NFS3_CREATEVERFSIZE: usize = 8;
/// Size in bytes of a WRITE/COMMIT verifier (`NFS3_WRITEVERFSIZE`).
pub const NFS3_WRITEVERFSIZE: usize = 8;
/// Maximum length in bytes accepted for a `filename3`.
pub const NFS3_MAXNAMLEN: usize = 255;
/// Maximum length in bytes accepted for an `nfspath3` (symbolic link target).
pub const NFS3_MAXPATHLEN: usize = 4096;
/// Maximum READ/WRITE payload accepted or produced (1 MiB).
pub const NFS3_MAX_IO: usize = 1 << 20;
/// Maximum number of entries accepted when decoding any linked list (READDIR, MOUNT lists).
pub const MAX_LIST_ENTRIES: usize = 1 << 20;
/// Maximum number of security flavors accepted in a MNT reply.
pub const MAX_AUTH_FLAVORS: usize = 64;
/// Size in bytes of an encoded `fattr3`.
pub const FATTR3_SIZE: usize = 84;

/// Maximum size in bytes of a MOUNT v3 file handle (`FHSIZE3`).
pub const FHSIZE3: usize = 64;
/// Maximum length in bytes of a MOUNT `dirpath` (`MNTPATHLEN`).
pub const MNTPATHLEN: usize = 1024;
/// Maximum length in bytes of a MOUNT `name` (`MNTNAMLEN`).
pub const MNTNAMLEN: usize = 255;

/// ACCESS: read data from a file or read a directory.
pub const ACCESS3_READ: u32 = 0x0001;
/// ACCESS: look up a name in a directory.
pub const ACCESS3_LOOKUP: u32 = 0x0002;
/// ACCESS: rewrite existing file data or modify existing directory entries.
pub const ACCESS3_MODIFY: u32 = 0x0004;
/// ACCESS: write new data or add directory entries.
pub const ACCESS3_EXTEND: u32 = 0x0008;
/// ACCESS: delete an existing directory entry.
pub const ACCESS3_DELETE: u32 = 0x0010;
/// ACCESS: execute a file (no meaning for directories).
pub const ACCESS3_EXECUTE: u32 = 0x0020;

/// FSINFO property: the file system supports hard links.
pub const FSF3_LINK: u32 = 0x0001;
/// FSINFO property: the file system supports symbolic links.
pub const FSF3_SYMLINK: u32 = 0x0002;
/// FSINFO property: PATHCONF information is the same for every file.
pub const FSF3_HOMOGENEOUS: u32 = 0x0008;
/// FSINFO property: the server can set file times with SETATTR.
pub const FSF3_CANSETTIME: u32 = 0x0010;

// ---------------------------------------------------------------------------------------------
// Scalar aliases
// ---------------------------------------------------------------------------------------------

/// `filename3`: a directory entry name, bytes that need not be UTF-8.
pub type Filename3 = Bytes;
/// `nfspath3`: a symbolic link target, bytes that need not be UTF-8.
pub type Nfspath3 = Bytes;
/// `fileid3`: a file serial number.
pub type Fileid3 = u64;
/// `cookie3`: a READDIR position.
pub type Cookie3 = u64;
/// `cookieverf3`: a READDIR cookie verifier.
pub type Cookieverf3 = [u8; NFS3_COOKIEVERFSIZE];
/// `createverf3`: an exclusive CREATE verifier.
pub type Createverf3 = [u8; NFS3_CREATEVERFSIZE];
/// `writeverf3`: a WRITE/COMMIT verifier (changes when the server loses unstable data).
pub type Writeverf3 = [u8; NFS3_WRITEVERFSIZE];
/// `uid3`: a user id.
pub type Uid3 = u32;
/// `gid3`: a group id.
pub type Gid3 = u32;
/// `size3`: a size in bytes.
pub type Size3 = u64;
/// `offset3`: a byte offset in a file.
pub type Offset3 = u64;
/// `mode3`: permission bits.
pub type Mode3 = u32;
/// `count3`: a byte or entry count.
pub type Count3 = u32;
/// MOUNT `dirpath`: an exported path, bytes up to [`MNTPATHLEN`].
pub type Dirpath = Bytes;
/// MOUNT `name`: a host or group name, bytes up to [`MNTNAMLEN`].
pub type MountName = Bytes;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn dec_name(d: &mut Decoder) -> Result<Filename3> {
    // Longer names decode, so that the procedure can answer NFS3ERR_NAMETOOLONG.
    d.opaque(NFS3_MAXPATHLEN)
}

fn dec_path(d: &mut Decoder) -> Result<Nfspath3> {
    d.opaque(NFS3_MAXPATHLEN)
}

fn dec_verf(d: &mut Decoder) -> Result<[u8; 8]> {
    Ok(d.u64()?.to_be_bytes())
}

/// Decodes an XDR linked list (`*T` chains): a `value_follows` boolean before each element and
/// a final `false`.
fn dec_list<T>(d: &mut Decoder, mut f: impl FnMut(&mut Decoder) -> Result<T>) -> Result<Vec<T>> {
    let mut v = Vec::new();
    while d.bool()? {
        if v.len() >= MAX_LIST_ENTRIES {
            return Err(XdrError::TooLong {
                len: v.len() as u64 + 1,
                max: MAX_LIST_ENTRIES,
            });
        }
        v.push(f(d)?);
    }
    Ok(v)
}

/// Encodes an XDR linked list: `true` and the element for each item, then `false`.
fn enc_list<T>(e: &mut Encoder, items: &[T], mut f: impl FnMut(&mut Encoder, &T)) {
    for it in items {
        e.bool(true);
        f(e, it);
    }
    e.bool(false);
}

/// Defines a `#[repr(u32)]` enum with `TryFrom<u32>`, `From<Self> for u32`, `Encode`, `Decode`.
macro_rules! xdr_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $var:ident = $val:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum $name {
            $( $(#[$vmeta])* $var = $val, )+
        }

        impl $name {
            /// Every value of the enum, in definition order.
            pub const ALL: &'static [$name] = &[$($name::$var),+];
        }

        impl TryFrom<u32> for $name {
            type Error = XdrError;
            fn try_from(v: u32) -> Result<Self> {
                match v {
                    $( $val => Ok($name::$var), )+
                    other => Err(XdrError::BadDiscriminant(other)),
                }
            }
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                v as u32
            }
        }

        impl Decode for $name {
            fn decode(d: &mut Decoder) -> Result<Self> {
                $name::try_from(d.u32()?)
            }
        }

        impl Encode for $name {
            fn encode(&self, e: &mut Encoder) {
                e.u32(*self as u32)
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Procedure numbers
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// NFSv3 procedure numbers (`NFSPROC3_*`).
    pub enum NfsProc3 {
        /// NFSPROC3_NULL: do nothing.
        Null = 0,
        /// NFSPROC3_GETATTR: get file attributes.
        Getattr = 1,
        /// NFSPROC3_SETATTR: set file attributes.
        Setattr = 2,
        /// NFSPROC3_LOOKUP: look up a file name.
        Lookup = 3,
        /// NFSPROC3_ACCESS: check access permission.
        Access = 4,
        /// NFSPROC3_READLINK: read from a symbolic link.
        Readlink = 5,
        /// NFSPROC3_READ: read from a file.
        Read = 6,
        /// NFSPROC3_WRITE: write to a file.
        Write = 7,
        /// NFSPROC3_CREATE: create a regular file.
        Create = 8,
        /// NFSPROC3_MKDIR: create a directory.
        Mkdir = 9,
        /// NFSPROC3_SYMLINK: create a symbolic link.
        Symlink = 10,
        /// NFSPROC3_MKNOD: create a special device.
        Mknod = 11,
        /// NFSPROC3_REMOVE: remove a file.
        Remove = 12,
        /// NFSPROC3_RMDIR: remove a directory.
        Rmdir = 13,
        /// NFSPROC3_RENAME: rename a file or directory.
        Rename = 14,
        /// NFSPROC3_LINK: create a hard link.
        Link = 15,
        /// NFSPROC3_READDIR: read from a directory.
        Readdir = 16,
        /// NFSPROC3_READDIRPLUS: extended read from a directory.
        Readdirplus = 17,
        /// NFSPROC3_FSSTAT: get dynamic file system information.
        Fsstat = 18,
        /// NFSPROC3_FSINFO: get static file system information.
        Fsinfo = 19,
        /// NFSPROC3_PATHCONF: retrieve POSIX information.
        Pathconf = 20,
        /// NFSPROC3_COMMIT: commit cached data to stable storage.
        Commit = 21,
    }
}

xdr_enum! {
    /// MOUNT v3 procedure numbers (`MOUNTPROC3_*`).
    pub enum MountProc3 {
        /// MOUNTPROC3_NULL: do nothing.
        Null = 0,
        /// MOUNTPROC3_MNT: add a mount entry and return the root file handle.
        Mnt = 1,
        /// MOUNTPROC3_DUMP: return the mount list.
        Dump = 2,
        /// MOUNTPROC3_UMNT: remove a mount entry.
        Umnt = 3,
        /// MOUNTPROC3_UMNTALL: remove all mount entries of the caller.
        Umntall = 4,
        /// MOUNTPROC3_EXPORT: return the export list.
        Export = 5,
    }
}

// ---------------------------------------------------------------------------------------------
// Enumerations
// ---------------------------------------------------------------------------------------------

xdr_enum! {
    /// `nfsstat3`: status of an NFSv3 procedure.
    pub enum Nfsstat3 {
        /// NFS3_OK: success.
        Ok = 0,
        /// NFS3ERR_PERM: not owner.
        Perm = 1,
        /// NFS3ERR_NOENT: no such file or directory.
        Noent = 2,
        /// NFS3ERR_IO: hard I/O error.
        Io = 5,
        /// NFS3ERR_NXIO: no such device or address.
        Nxio = 6,
        /// NFS3ERR_ACCES: permission denied.
        Acces = 13,
        /// NFS3ERR_EXIST: file exists.
        Exist = 17,
        /// NFS3ERR_XDEV: attempt to do a cross-device hard link.
        Xdev = 18,
        /// NFS3ERR_NODEV: no such device.
        Nodev = 19,
        /// NFS3ERR_NOTDIR: not a directory.
        Notdir = 20,
        /// NFS3ERR_ISDIR: is a directory.
        Isdir = 21,
        /// NFS3ERR_INVAL: invalid argument or unsupported argument.
        Inval = 22,
        /// NFS3ERR_FBIG: file too large.
        Fbig = 27,
        /// NFS3ERR_NOSPC: no space left on device.
        Nospc = 28,
        /// NFS3ERR_ROFS: read-only file system.
        Rofs = 30,
        /// NFS3ERR_MLINK: too many hard links.
        Mlink = 31,
        /// NFS3ERR_NAMETOOLONG: file name too long.
        Nametoolong = 63,
        /// NFS3ERR_NOTEMPTY: directory not empty.
        Notempty = 66,
        /// NFS3ERR_DQUOT: resource (quota) hard limit exceeded.
        Dquot = 69,
        /// NFS3ERR_STALE: invalid (stale) file handle.
        Stale = 70,
        /// NFS3ERR_REMOTE: too many levels of remote in path.
        Remote = 71,
        /// NFS3ERR_BADHANDLE: illegal NFS file handle.
        Badhandle = 10001,
        /// NFS3ERR_NOT_SYNC: SETATTR guard check failed.
        NotSync = 10002,
        /// NFS3ERR_BAD_COOKIE: READDIR cookie is stale.
        BadCookie = 10003,
        /// NFS3ERR_NOTSUPP: operation is not supported.
        Notsupp = 10004,
        /// NFS3ERR_TOOSMALL: buffer or request is too small.
        Toosmall = 10005,
        /// NFS3ERR_SERVERFAULT: server error with no matching NFS error.
        Serverfault = 10006,
        /// NFS3ERR_BADTYPE: object type not supported by the server.
        Badtype = 10007,
        /// NFS3ERR_JUKEBOX: request started but not complete; retry later.
        Jukebox = 10008,
    }
}

xdr_enum! {
    /// `mountstat3`: status of a MOUNT v3 procedure.
    pub enum Mountstat3 {
        /// MNT3_OK: no error.
        Ok = 0,
        /// MNT3ERR_PERM: not owner.
        Perm = 1,
        /// MNT3ERR_NOENT: no such file or directory.
        Noent = 2,
        /// MNT3ERR_IO: I/O error.
        Io = 5,
        /// MNT3ERR_ACCES: permission denied.
        Acces = 13,
        /// MNT3ERR_NOTDIR: not a directory.
        Notdir = 20,
        /// MNT3ERR_INVAL: invalid argument.
        Inval = 22,
        /// MNT3ERR_NAMETOOLONG: file name too long.
        Nametoolong = 63,
        /// MNT3ERR_NOTSUPP: operation not supported.
        Notsupp = 10004,
        /// MNT3ERR_SERVERFAULT: a failure on the server.
        Serverfault = 10006,
    }
}

xdr_enum! {
    /// `ftype3`: type of a file.
    pub enum Ftype3 {
        /// NF3REG: regular file.
        Reg = 1,
        /// NF3DIR: directory.
        Dir = 2,
        /// NF3BLK: block special device.
        Blk = 3,
        /// NF3CHR: character special device.
        Chr = 4,
        /// NF3LNK: symbolic link.
        Lnk = 5,
        /// NF3SOCK: socket.
        Sock = 6,
        /// NF3FIFO: named pipe.
        Fifo = 7,
    }
}

xdr_enum! {
    /// `stable_how`: how far a WRITE must be committed before replying.
    pub enum StableHow {
        /// UNSTABLE: the server may cache the data.
        Unstable = 0,
        /// DATA_SYNC: data (and enough metadata to read it) on stable storage.
        DataSync = 1,
        /// FILE_SYNC: data and all metadata on stable storage.
        FileSync = 2,
    }
}

xdr_enum! {
    /// `createmode3`: discriminant of [`Createhow3`].
    pub enum Createmode3 {
        /// UNCHECKED: create or truncate without checking for existence.
        Unchecked = 0,
        /// GUARDED: fail with NFS3ERR_EXIST if the file exists.
        Guarded = 1,
        /// EXCLUSIVE: exclusive create using a verifier.
        Exclusive = 2,
    }
}

xdr_enum! {
    /// `time_how`: discriminant of [`SetTime`].
    pub enum TimeHow {
        /// DONT_CHANGE: leave the time as it is.
        DontChange = 0,
        /// SET_TO_SERVER_TIME: set the time to the server's current time.
        SetToServerTime = 1,
        /// SET_TO_CLIENT_TIME: set the time to the value supplied by the client.
        SetToClientTime = 2,
    }
}

// ---------------------------------------------------------------------------------------------
// Basic structures
// ---------------------------------------------------------------------------------------------

/// An empty arm (`void`) of a union, e.g. the failure arm of GETATTR3res.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Void;

impl Decode for Void {
    fn decode(_: &mut Decoder) -> Result<Self> {
        Ok(Void)
    }
}

impl Encode for Void {
    fn encode(&self, _: &mut Encoder) {}
}

/// `nfs_fh3` (and MOUNT `fhandle3`): an opaque file handle of at most [`NFS3_FHSIZE`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fh3(pub Bytes);

impl Decode for Fh3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Fh3(d.opaque(NFS3_FHSIZE)?))
    }
}

impl Encode for Fh3 {
    fn encode(&self, e: &mut Encoder) {
        e.opaque(&self.0)
    }
}

/// `nfstime3`: seconds and nanoseconds since the epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Nfstime3 {
    /// Seconds.
    pub seconds: u32,
    /// Nanoseconds.
    pub nseconds: u32,
}

impl Decode for Nfstime3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            seconds: d.u32()?,
            nseconds: d.u32()?,
        })
    }
}

impl Encode for Nfstime3 {
    fn encode(&self, e: &mut Encoder) {
        e.u32(self.seconds);
        e.u32(self.nseconds);
    }
}

/// `specdata3`: major and minor device numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Specdata3 {
    /// Major number.
    pub specdata1: u32,
    /// Minor number.
    pub specdata2: u32,
}

impl Decode for Specdata3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            specdata1: d.u32()?,
            specdata2: d.u32()?,
        })
    }
}

impl Encode for Specdata3 {
    fn encode(&self, e: &mut Encoder) {
        e.u32(self.specdata1);
        e.u32(self.specdata2);
    }
}

/// `fattr3`: the attributes of a file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fattr3 {
    /// File type (`type`).
    pub ftype: Ftype3,
    /// Permission bits.
    pub mode: Mode3,
    /// Number of hard links.
    pub nlink: u32,
    /// Owner user id.
    pub uid: Uid3,
    /// Owner group id.
    pub gid: Gid3,
    /// Size in bytes.
    pub size: Size3,
    /// Disk space used in bytes.
    pub used: Size3,
    /// Device numbers for NF3BLK and NF3CHR files.
    pub rdev: Specdata3,
    /// File system identifier.
    pub fsid: u64,
    /// File serial number.
    pub fileid: Fileid3,
    /// Last access time.
    pub atime: Nfstime3,
    /// Last data modification time.
    pub mtime: Nfstime3,
    /// Last attribute change time.
    pub ctime: Nfstime3,
}

impl Decode for Fattr3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            ftype: d.decode()?,
            mode: d.u32()?,
            nlink: d.u32()?,
            uid: d.u32()?,
            gid: d.u32()?,
            size: d.u64()?,
            used: d.u64()?,
            rdev: d.decode()?,
            fsid: d.u64()?,
            fileid: d.u64()?,
            atime: d.decode()?,
            mtime: d.decode()?,
            ctime: d.decode()?,
        })
    }
}

impl Encode for Fattr3 {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.ftype);
        e.u32(self.mode);
        e.u32(self.nlink);
        e.u32(self.uid);
        e.u32(self.gid);
        e.u64(self.size);
        e.u64(self.used);
        e.encode(&self.rdev);
        e.u64(self.fsid);
        e.u64(self.fileid);
        e.encode(&self.atime);
        e.encode(&self.mtime);
        e.encode(&self.ctime);
    }
}

/// `post_op_attr`: attributes after an operation, if the server returns them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PostOpAttr(pub Option<Fattr3>);

impl Decode for PostOpAttr {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self(d.optional(Fattr3::decode)?))
    }
}

impl Encode for PostOpAttr {
    fn encode(&self, e: &mut Encoder) {
        e.optional(self.0.as_ref(), |e, a| a.encode(e))
    }
}

/// `wcc_attr`: the subset of attributes used for weak cache consistency.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct WccAttr {
    /// Size in bytes.
    pub size: Size3,
    /// Last data modification time.
    pub mtime: Nfstime3,
    /// Last attribute change time.
    pub ctime: Nfstime3,
}

impl Decode for WccAttr {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            size: d.u64()?,
            mtime: d.decode()?,
            ctime: d.decode()?,
        })
    }
}

impl Encode for WccAttr {
    fn encode(&self, e: &mut Encoder) {
        e.u64(self.size);
        e.encode(&self.mtime);
        e.encode(&self.ctime);
    }
}

/// `pre_op_attr`: attributes before an operation, if the server returns them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PreOpAttr(pub Option<WccAttr>);

impl Decode for PreOpAttr {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self(d.optional(WccAttr::decode)?))
    }
}

impl Encode for PreOpAttr {
    fn encode(&self, e: &mut Encoder) {
        e.optional(self.0.as_ref(), |e, a| a.encode(e))
    }
}

/// `wcc_data`: weak cache consistency data (attributes before and after an operation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct WccData {
    /// Attributes before the operation.
    pub before: PreOpAttr,
    /// Attributes after the operation.
    pub after: PostOpAttr,
}

impl Decode for WccData {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            before: d.decode()?,
            after: d.decode()?,
        })
    }
}

impl Encode for WccData {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.before);
        e.encode(&self.after);
    }
}

/// `post_op_fh3`: a file handle, if the server returns one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct PostOpFh3(pub Option<Fh3>);

impl Decode for PostOpFh3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self(d.optional(Fh3::decode)?))
    }
}

impl Encode for PostOpFh3 {
    fn encode(&self, e: &mut Encoder) {
        e.optional(self.0.as_ref(), |e, fh| fh.encode(e))
    }
}

/// `set_atime` / `set_mtime`: how SETATTR changes a time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SetTime {
    /// DONT_CHANGE: leave the time unchanged.
    #[default]
    DontChange,
    /// SET_TO_SERVER_TIME: use the server's current time.
    ServerTime,
    /// SET_TO_CLIENT_TIME: use the given time.
    ClientTime(Nfstime3),
}

impl Decode for SetTime {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(match TimeHow::decode(d)? {
            TimeHow::DontChange => SetTime::DontChange,
            TimeHow::SetToServerTime => SetTime::ServerTime,
            TimeHow::SetToClientTime => SetTime::ClientTime(d.decode()?),
        })
    }
}

impl Encode for SetTime {
    fn encode(&self, e: &mut Encoder) {
        match self {
            SetTime::DontChange => e.encode(&TimeHow::DontChange),
            SetTime::ServerTime => e.encode(&TimeHow::SetToServerTime),
            SetTime::ClientTime(t) => {
                e.encode(&TimeHow::SetToClientTime);
                e.encode(t);
            }
        }
    }
}

/// `sattr3`: attributes to set; `None` (or [`SetTime::DontChange`]) leaves one unchanged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Sattr3 {
    /// New permission bits.
    pub mode: Option<Mode3>,
    /// New owner user id.
    pub uid: Option<Uid3>,
    /// New owner group id.
    pub gid: Option<Gid3>,
    /// New size (truncate or extend).
    pub size: Option<Size3>,
    /// New access time.
    pub atime: SetTime,
    /// New modification time.
    pub mtime: SetTime,
}

impl Decode for Sattr3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            mode: d.optional(Decoder::u32)?,
            uid: d.optional(Decoder::u32)?,
            gid: d.optional(Decoder::u32)?,
            size: d.optional(Decoder::u64)?,
            atime: d.decode()?,
            mtime: d.decode()?,
        })
    }
}

impl Encode for Sattr3 {
    fn encode(&self, e: &mut Encoder) {
        e.optional(self.mode.as_ref(), |e, v| e.u32(*v));
        e.optional(self.uid.as_ref(), |e, v| e.u32(*v));
        e.optional(self.gid.as_ref(), |e, v| e.u32(*v));
        e.optional(self.size.as_ref(), |e, v| e.u64(*v));
        e.encode(&self.atime);
        e.encode(&self.mtime);
    }
}

/// `diropargs3`: a directory handle and a name in it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DiropArgs3 {
    /// The directory.
    pub dir: Fh3,
    /// The entry name (at most [`NFS3_MAXNAMLEN`] bytes).
    pub name: Filename3,
}

impl Decode for DiropArgs3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            dir: d.decode()?,
            name: dec_name(d)?,
        })
    }
}

impl Encode for DiropArgs3 {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.dir);
        e.opaque(&self.name);
    }
}

// ---------------------------------------------------------------------------------------------
// Generic result
// ---------------------------------------------------------------------------------------------

/// An NFSv3 result union: `Ok` (status NFS3_OK) carries the `resok` arm, `Fail` carries a
/// non-OK status and the `resfail` arm. The status word is encoded first.
///
/// `Fail` must not hold [`Nfsstat3::Ok`]; such a value would not round-trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Res3<T, F> {
    /// NFS3_OK with the success arm.
    Ok(T),
    /// An error status with the failure arm.
    Fail(Nfsstat3, F),
}

impl<T, F> Res3<T, F> {
    /// The status word this result encodes.
    pub fn status(&self) -> Nfsstat3 {
        match self {
            Res3::Ok(_) => Nfsstat3::Ok,
            Res3::Fail(s, _) => *s,
        }
    }

    /// True for the success arm.
    pub fn is_ok(&self) -> bool {
        matches!(self, Res3::Ok(_))
    }
}

impl<T: Decode, F: Decode> Decode for Res3<T, F> {
    fn decode(d: &mut Decoder) -> Result<Self> {
        match Nfsstat3::decode(d)? {
            Nfsstat3::Ok => Ok(Res3::Ok(d.decode()?)),
            s => Ok(Res3::Fail(s, d.decode()?)),
        }
    }
}

impl<T: Encode, F: Encode> Encode for Res3<T, F> {
    fn encode(&self, e: &mut Encoder) {
        match self {
            Res3::Ok(ok) => {
                e.encode(&Nfsstat3::Ok);
                e.encode(ok);
            }
            Res3::Fail(s, fail) => {
                debug_assert_ne!(*s, Nfsstat3::Ok, "Res3::Fail with NFS3_OK");
                e.encode(s);
                e.encode(fail);
            }
        }
    }
}

/// Implements `Decode` and `Encode` for a plain struct whose fields are all `Decode + Encode`.
macro_rules! xdr_struct {
    ($name:ident { $($field:ident),+ $(,)? }) => {
        impl Decode for $name {
            fn decode(d: &mut Decoder) -> Result<Self> {
                Ok(Self { $($field: d.decode()?,)+ })
            }
        }
        impl Encode for $name {
            fn encode(&self, e: &mut Encoder) {
                $(e.encode(&self.$field);)+
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// GETATTR, SETATTR, LOOKUP, ACCESS, READLINK
// ---------------------------------------------------------------------------------------------

/// GETATTR3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetattrArgs {
    /// The file.
    pub object: Fh3,
}
xdr_struct!(GetattrArgs { object });

/// GETATTR3res: resok is `obj_attributes`, resfail is void.
pub type GetattrRes = Res3<Fattr3, Void>;

/// `sattrguard3`: if set, SETATTR only proceeds when the object's ctime equals it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SattrGuard3(pub Option<Nfstime3>);

impl Decode for SattrGuard3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self(d.optional(Nfstime3::decode)?))
    }
}

impl Encode for SattrGuard3 {
    fn encode(&self, e: &mut Encoder) {
        e.optional(self.0.as_ref(), |e, t| t.encode(e))
    }
}

/// SETATTR3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetattrArgs {
    /// The file.
    pub object: Fh3,
    /// Attributes to set.
    pub new_attributes: Sattr3,
    /// Optional ctime guard.
    pub guard: SattrGuard3,
}
xdr_struct!(SetattrArgs {
    object,
    new_attributes,
    guard
});

/// SETATTR3res: both arms are `obj_wcc`.
pub type SetattrRes = Res3<WccData, WccData>;

/// LOOKUP3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupArgs {
    /// Directory and name to look up.
    pub what: DiropArgs3,
}
xdr_struct!(LookupArgs { what });

/// LOOKUP3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupResOk {
    /// Handle of the object found.
    pub object: Fh3,
    /// Attributes of the object found.
    pub obj_attributes: PostOpAttr,
    /// Attributes of the directory.
    pub dir_attributes: PostOpAttr,
}
xdr_struct!(LookupResOk {
    object,
    obj_attributes,
    dir_attributes
});

/// LOOKUP3res: resfail is `dir_attributes`.
pub type LookupRes = Res3<LookupResOk, PostOpAttr>;

/// ACCESS3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessArgs {
    /// The file.
    pub object: Fh3,
    /// Requested `ACCESS3_*` bits.
    pub access: u32,
}
xdr_struct!(AccessArgs { object, access });

/// ACCESS3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessResOk {
    /// Attributes of the object.
    pub obj_attributes: PostOpAttr,
    /// Granted `ACCESS3_*` bits.
    pub access: u32,
}
xdr_struct!(AccessResOk {
    obj_attributes,
    access
});

/// ACCESS3res: resfail is `obj_attributes`.
pub type AccessRes = Res3<AccessResOk, PostOpAttr>;

/// READLINK3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadlinkArgs {
    /// The symbolic link.
    pub symlink: Fh3,
}
xdr_struct!(ReadlinkArgs { symlink });

/// READLINK3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadlinkResOk {
    /// Attributes of the link.
    pub symlink_attributes: PostOpAttr,
    /// The link target (at most [`NFS3_MAXPATHLEN`] bytes).
    pub data: Nfspath3,
}

impl Decode for ReadlinkResOk {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            symlink_attributes: d.decode()?,
            data: dec_path(d)?,
        })
    }
}

impl Encode for ReadlinkResOk {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.symlink_attributes);
        e.opaque(&self.data);
    }
}

/// READLINK3res: resfail is `symlink_attributes`.
pub type ReadlinkRes = Res3<ReadlinkResOk, PostOpAttr>;

// ---------------------------------------------------------------------------------------------
// READ, WRITE
// ---------------------------------------------------------------------------------------------

/// READ3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadArgs {
    /// The file.
    pub file: Fh3,
    /// Starting offset.
    pub offset: Offset3,
    /// Bytes requested.
    pub count: Count3,
}
xdr_struct!(ReadArgs {
    file,
    offset,
    count
});

/// READ3resok; `data` is encoded as a bulk segment (not copied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResOk {
    /// Attributes of the file.
    pub file_attributes: PostOpAttr,
    /// Bytes returned.
    pub count: Count3,
    /// True if the read reached end of file.
    pub eof: bool,
    /// The data read (at most [`NFS3_MAX_IO`] bytes): in memory, or file pages the transport
    /// sends without copying.
    pub data: Payload,
}

impl Decode for ReadResOk {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            file_attributes: d.decode()?,
            count: d.u32()?,
            eof: d.bool()?,
            data: Payload::Bytes(d.opaque(NFS3_MAX_IO)?),
        })
    }
}

impl Encode for ReadResOk {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.file_attributes);
        e.u32(self.count);
        e.bool(self.eof);
        e.opaque_payload(self.data.clone());
    }
}

/// READ3res: resfail is `file_attributes`.
pub type ReadRes = Res3<ReadResOk, PostOpAttr>;

/// WRITE3args; `data` is a slice of the receive buffer. `count` is not checked against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteArgs {
    /// The file.
    pub file: Fh3,
    /// Starting offset.
    pub offset: Offset3,
    /// Bytes to write, as the client claims.
    pub count: Count3,
    /// Requested stability.
    pub stable: StableHow,
    /// The data (at most [`NFS3_MAX_IO`] bytes).
    pub data: Bytes,
}

impl Decode for WriteArgs {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            file: d.decode()?,
            offset: d.u64()?,
            count: d.u32()?,
            stable: d.decode()?,
            data: d.opaque(NFS3_MAX_IO)?,
        })
    }
}

impl Encode for WriteArgs {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.file);
        e.u64(self.offset);
        e.u32(self.count);
        e.encode(&self.stable);
        e.opaque_bulk(self.data.clone());
    }
}

/// WRITE3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteResOk {
    /// WCC data of the file.
    pub file_wcc: WccData,
    /// Bytes written.
    pub count: Count3,
    /// Stability actually achieved.
    pub committed: StableHow,
    /// Write verifier.
    pub verf: Writeverf3,
}

impl Decode for WriteResOk {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            file_wcc: d.decode()?,
            count: d.u32()?,
            committed: d.decode()?,
            verf: dec_verf(d)?,
        })
    }
}

impl Encode for WriteResOk {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.file_wcc);
        e.u32(self.count);
        e.encode(&self.committed);
        e.opaque_fixed(&self.verf);
    }
}

/// WRITE3res: resfail is `file_wcc`.
pub type WriteRes = Res3<WriteResOk, WccData>;

// ---------------------------------------------------------------------------------------------
// CREATE, MKDIR, SYMLINK, MKNOD
// ---------------------------------------------------------------------------------------------

/// `createhow3`: how CREATE behaves when the file exists.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Createhow3 {
    /// UNCHECKED with initial attributes.
    Unchecked(Sattr3),
    /// GUARDED with initial attributes.
    Guarded(Sattr3),
    /// EXCLUSIVE with the client's verifier.
    Exclusive(Createverf3),
}

impl Createhow3 {
    /// The `createmode3` discriminant.
    pub fn mode(&self) -> Createmode3 {
        match self {
            Createhow3::Unchecked(_) => Createmode3::Unchecked,
            Createhow3::Guarded(_) => Createmode3::Guarded,
            Createhow3::Exclusive(_) => Createmode3::Exclusive,
        }
    }
}

impl Decode for Createhow3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(match Createmode3::decode(d)? {
            Createmode3::Unchecked => Createhow3::Unchecked(d.decode()?),
            Createmode3::Guarded => Createhow3::Guarded(d.decode()?),
            Createmode3::Exclusive => Createhow3::Exclusive(dec_verf(d)?),
        })
    }
}

impl Encode for Createhow3 {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.mode());
        match self {
            Createhow3::Unchecked(a) | Createhow3::Guarded(a) => e.encode(a),
            Createhow3::Exclusive(v) => e.opaque_fixed(v),
        }
    }
}

/// CREATE3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateArgs {
    /// Directory and name of the new file (`where`).
    pub where_: DiropArgs3,
    /// Creation mode.
    pub how: Createhow3,
}
xdr_struct!(CreateArgs { where_, how });

/// CREATE3resok (also MKDIR3resok, SYMLINK3resok, MKNOD3resok, which are identical).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateResOk {
    /// Handle of the new object.
    pub obj: PostOpFh3,
    /// Attributes of the new object.
    pub obj_attributes: PostOpAttr,
    /// WCC data of the directory.
    pub dir_wcc: WccData,
}
xdr_struct!(CreateResOk {
    obj,
    obj_attributes,
    dir_wcc
});

/// CREATE3res: resfail is `dir_wcc`.
pub type CreateRes = Res3<CreateResOk, WccData>;

/// MKDIR3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MkdirArgs {
    /// Directory and name of the new directory (`where`).
    pub where_: DiropArgs3,
    /// Initial attributes.
    pub attributes: Sattr3,
}
xdr_struct!(MkdirArgs { where_, attributes });

/// MKDIR3resok (same fields as CREATE3resok).
pub type MkdirResOk = CreateResOk;
/// MKDIR3res: resfail is `dir_wcc`.
pub type MkdirRes = Res3<MkdirResOk, WccData>;

/// `symlinkdata3`: attributes and target of a new symbolic link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symlinkdata3 {
    /// Initial attributes.
    pub symlink_attributes: Sattr3,
    /// Link target (at most [`NFS3_MAXPATHLEN`] bytes).
    pub symlink_data: Nfspath3,
}

impl Decode for Symlinkdata3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            symlink_attributes: d.decode()?,
            symlink_data: dec_path(d)?,
        })
    }
}

impl Encode for Symlinkdata3 {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.symlink_attributes);
        e.opaque(&self.symlink_data);
    }
}

/// SYMLINK3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymlinkArgs {
    /// Directory and name of the new link (`where`).
    pub where_: DiropArgs3,
    /// Link attributes and target.
    pub symlink: Symlinkdata3,
}
xdr_struct!(SymlinkArgs { where_, symlink });

/// SYMLINK3resok (same fields as CREATE3resok).
pub type SymlinkResOk = CreateResOk;
/// SYMLINK3res: resfail is `dir_wcc`.
pub type SymlinkRes = Res3<SymlinkResOk, WccData>;

/// `devicedata3`: attributes and device numbers of a new device node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Devicedata3 {
    /// Initial attributes.
    pub dev_attributes: Sattr3,
    /// Major and minor numbers.
    pub spec: Specdata3,
}
xdr_struct!(Devicedata3 {
    dev_attributes,
    spec
});

/// `mknoddata3`: what MKNOD creates, discriminated by `ftype3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mknoddata3 {
    /// NF3CHR: character device.
    Chr(Devicedata3),
    /// NF3BLK: block device.
    Blk(Devicedata3),
    /// NF3SOCK: socket.
    Sock(Sattr3),
    /// NF3FIFO: named pipe.
    Fifo(Sattr3),
    /// NF3REG (void arm; the server answers NFS3ERR_BADTYPE).
    Reg,
    /// NF3DIR (void arm; the server answers NFS3ERR_BADTYPE).
    Dir,
    /// NF3LNK (void arm; the server answers NFS3ERR_BADTYPE).
    Lnk,
}

impl Mknoddata3 {
    /// The `ftype3` discriminant.
    pub fn ftype(&self) -> Ftype3 {
        match self {
            Mknoddata3::Chr(_) => Ftype3::Chr,
            Mknoddata3::Blk(_) => Ftype3::Blk,
            Mknoddata3::Sock(_) => Ftype3::Sock,
            Mknoddata3::Fifo(_) => Ftype3::Fifo,
            Mknoddata3::Reg => Ftype3::Reg,
            Mknoddata3::Dir => Ftype3::Dir,
            Mknoddata3::Lnk => Ftype3::Lnk,
        }
    }
}

impl Decode for Mknoddata3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(match Ftype3::decode(d)? {
            Ftype3::Chr => Mknoddata3::Chr(d.decode()?),
            Ftype3::Blk => Mknoddata3::Blk(d.decode()?),
            Ftype3::Sock => Mknoddata3::Sock(d.decode()?),
            Ftype3::Fifo => Mknoddata3::Fifo(d.decode()?),
            Ftype3::Reg => Mknoddata3::Reg,
            Ftype3::Dir => Mknoddata3::Dir,
            Ftype3::Lnk => Mknoddata3::Lnk,
        })
    }
}

impl Encode for Mknoddata3 {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.ftype());
        match self {
            Mknoddata3::Chr(dd) | Mknoddata3::Blk(dd) => e.encode(dd),
            Mknoddata3::Sock(a) | Mknoddata3::Fifo(a) => e.encode(a),
            Mknoddata3::Reg | Mknoddata3::Dir | Mknoddata3::Lnk => {}
        }
    }
}

/// MKNOD3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MknodArgs {
    /// Directory and name of the new node (`where`).
    pub where_: DiropArgs3,
    /// What to create.
    pub what: Mknoddata3,
}
xdr_struct!(MknodArgs { where_, what });

/// MKNOD3resok (same fields as CREATE3resok).
pub type MknodResOk = CreateResOk;
/// MKNOD3res: resfail is `dir_wcc`.
pub type MknodRes = Res3<MknodResOk, WccData>;

// ---------------------------------------------------------------------------------------------
// REMOVE, RMDIR, RENAME, LINK
// ---------------------------------------------------------------------------------------------

/// REMOVE3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoveArgs {
    /// Directory and name to remove.
    pub object: DiropArgs3,
}
xdr_struct!(RemoveArgs { object });

/// REMOVE3res: both arms are `dir_wcc`.
pub type RemoveRes = Res3<WccData, WccData>;

/// RMDIR3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RmdirArgs {
    /// Directory and name to remove.
    pub object: DiropArgs3,
}
xdr_struct!(RmdirArgs { object });

/// RMDIR3res: both arms are `dir_wcc`.
pub type RmdirRes = Res3<WccData, WccData>;

/// RENAME3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenameArgs {
    /// Source directory and name.
    pub from: DiropArgs3,
    /// Target directory and name.
    pub to: DiropArgs3,
}
xdr_struct!(RenameArgs { from, to });

/// RENAME3resok (RENAME3resfail has the same fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenameResOk {
    /// WCC data of the source directory.
    pub fromdir_wcc: WccData,
    /// WCC data of the target directory.
    pub todir_wcc: WccData,
}
xdr_struct!(RenameResOk {
    fromdir_wcc,
    todir_wcc
});

/// RENAME3resfail (same fields as RENAME3resok).
pub type RenameResFail = RenameResOk;
/// RENAME3res.
pub type RenameRes = Res3<RenameResOk, RenameResFail>;

/// LINK3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkArgs {
    /// The existing file.
    pub file: Fh3,
    /// Directory and name of the new link.
    pub link: DiropArgs3,
}
xdr_struct!(LinkArgs { file, link });

/// LINK3resok (LINK3resfail has the same fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkResOk {
    /// Attributes of the file.
    pub file_attributes: PostOpAttr,
    /// WCC data of the link directory.
    pub linkdir_wcc: WccData,
}
xdr_struct!(LinkResOk {
    file_attributes,
    linkdir_wcc
});

/// LINK3resfail (same fields as LINK3resok).
pub type LinkResFail = LinkResOk;
/// LINK3res.
pub type LinkRes = Res3<LinkResOk, LinkResFail>;

// ---------------------------------------------------------------------------------------------
// READDIR, READDIRPLUS
// ---------------------------------------------------------------------------------------------

/// READDIR3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaddirArgs {
    /// The directory.
    pub dir: Fh3,
    /// Position to resume from (0 for the start).
    pub cookie: Cookie3,
    /// Verifier returned with `cookie` (zeros for the start).
    pub cookieverf: Cookieverf3,
    /// Maximum reply size in bytes.
    pub count: Count3,
}

impl Decode for ReaddirArgs {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            dir: d.decode()?,
            cookie: d.u64()?,
            cookieverf: dec_verf(d)?,
            count: d.u32()?,
        })
    }
}

impl Encode for ReaddirArgs {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.dir);
        e.u64(self.cookie);
        e.opaque_fixed(&self.cookieverf);
        e.u32(self.count);
    }
}

/// `entry3`: one READDIR entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entry3 {
    /// File serial number.
    pub fileid: Fileid3,
    /// Entry name.
    pub name: Filename3,
    /// Cookie to resume after this entry.
    pub cookie: Cookie3,
}

impl Entry3 {
    /// Bytes this entry takes in a reply, its `value_follows` word included.
    pub fn wire_len(&self) -> usize {
        4 + 8 + 4 + xdr::pad4(self.name.len()) + 8
    }
}

impl Decode for Entry3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            fileid: d.u64()?,
            name: dec_name(d)?,
            cookie: d.u64()?,
        })
    }
}

impl Encode for Entry3 {
    fn encode(&self, e: &mut Encoder) {
        e.u64(self.fileid);
        e.opaque(&self.name);
        e.u64(self.cookie);
    }
}

/// `dirlist3`: READDIR entries (encoded as a linked list) and the end-of-directory flag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirlist3 {
    /// The entries.
    pub entries: Vec<Entry3>,
    /// True when the last entry is the end of the directory.
    pub eof: bool,
}

impl Decode for Dirlist3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            entries: dec_list(d, Entry3::decode)?,
            eof: d.bool()?,
        })
    }
}

impl Encode for Dirlist3 {
    fn encode(&self, e: &mut Encoder) {
        enc_list(e, &self.entries, |e, x| x.encode(e));
        e.bool(self.eof);
    }
}

/// READDIR3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaddirResOk {
    /// Attributes of the directory.
    pub dir_attributes: PostOpAttr,
    /// Cookie verifier.
    pub cookieverf: Cookieverf3,
    /// Entries and eof.
    pub reply: Dirlist3,
}

impl Decode for ReaddirResOk {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            dir_attributes: d.decode()?,
            cookieverf: dec_verf(d)?,
            reply: d.decode()?,
        })
    }
}

impl Encode for ReaddirResOk {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.dir_attributes);
        e.opaque_fixed(&self.cookieverf);
        e.encode(&self.reply);
    }
}

/// READDIR3res: resfail is `dir_attributes`.
pub type ReaddirRes = Res3<ReaddirResOk, PostOpAttr>;

/// READDIRPLUS3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaddirplusArgs {
    /// The directory.
    pub dir: Fh3,
    /// Position to resume from (0 for the start).
    pub cookie: Cookie3,
    /// Verifier returned with `cookie` (zeros for the start).
    pub cookieverf: Cookieverf3,
    /// Maximum bytes of directory information (fileid, name, cookie) in the reply.
    pub dircount: Count3,
    /// Maximum reply size in bytes.
    pub maxcount: Count3,
}

impl Decode for ReaddirplusArgs {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            dir: d.decode()?,
            cookie: d.u64()?,
            cookieverf: dec_verf(d)?,
            dircount: d.u32()?,
            maxcount: d.u32()?,
        })
    }
}

impl Encode for ReaddirplusArgs {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.dir);
        e.u64(self.cookie);
        e.opaque_fixed(&self.cookieverf);
        e.u32(self.dircount);
        e.u32(self.maxcount);
    }
}

/// `entryplus3`: one READDIRPLUS entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Entryplus3 {
    /// File serial number.
    pub fileid: Fileid3,
    /// Entry name.
    pub name: Filename3,
    /// Cookie to resume after this entry.
    pub cookie: Cookie3,
    /// Attributes of the entry.
    pub name_attributes: PostOpAttr,
    /// Handle of the entry.
    pub name_handle: PostOpFh3,
}

impl Entryplus3 {
    /// Bytes this entry takes in a reply, its `value_follows` word included.
    pub fn wire_len(&self) -> usize {
        let attrs = 4 + if self.name_attributes.0.is_some() {
            FATTR3_SIZE
        } else {
            0
        };
        let fh = 4 + self
            .name_handle
            .0
            .as_ref()
            .map_or(0, |fh| 4 + xdr::pad4(fh.0.len()));
        self.dir_wire_len() + 4 + attrs + fh
    }

    /// Bytes of directory information (fileid, name, cookie) counted against `dircount`.
    pub fn dir_wire_len(&self) -> usize {
        8 + 4 + xdr::pad4(self.name.len()) + 8
    }
}

impl Decode for Entryplus3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            fileid: d.u64()?,
            name: dec_name(d)?,
            cookie: d.u64()?,
            name_attributes: d.decode()?,
            name_handle: d.decode()?,
        })
    }
}

impl Encode for Entryplus3 {
    fn encode(&self, e: &mut Encoder) {
        e.u64(self.fileid);
        e.opaque(&self.name);
        e.u64(self.cookie);
        e.encode(&self.name_attributes);
        e.encode(&self.name_handle);
    }
}

/// `dirlistplus3`: READDIRPLUS entries (encoded as a linked list) and the end-of-directory flag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dirlistplus3 {
    /// The entries.
    pub entries: Vec<Entryplus3>,
    /// True when the last entry is the end of the directory.
    pub eof: bool,
}

impl Decode for Dirlistplus3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            entries: dec_list(d, Entryplus3::decode)?,
            eof: d.bool()?,
        })
    }
}

impl Encode for Dirlistplus3 {
    fn encode(&self, e: &mut Encoder) {
        enc_list(e, &self.entries, |e, x| x.encode(e));
        e.bool(self.eof);
    }
}

/// READDIRPLUS3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaddirplusResOk {
    /// Attributes of the directory.
    pub dir_attributes: PostOpAttr,
    /// Cookie verifier.
    pub cookieverf: Cookieverf3,
    /// Entries and eof.
    pub reply: Dirlistplus3,
}

impl Decode for ReaddirplusResOk {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            dir_attributes: d.decode()?,
            cookieverf: dec_verf(d)?,
            reply: d.decode()?,
        })
    }
}

impl Encode for ReaddirplusResOk {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.dir_attributes);
        e.opaque_fixed(&self.cookieverf);
        e.encode(&self.reply);
    }
}

/// READDIRPLUS3res: resfail is `dir_attributes`.
pub type ReaddirplusRes = Res3<ReaddirplusResOk, PostOpAttr>;

// ---------------------------------------------------------------------------------------------
// FSSTAT, FSINFO, PATHCONF, COMMIT
// ---------------------------------------------------------------------------------------------

/// FSSTAT3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsstatArgs {
    /// Any handle in the file system.
    pub fsroot: Fh3,
}
xdr_struct!(FsstatArgs { fsroot });

/// FSSTAT3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsstatResOk {
    /// Attributes of the object.
    pub obj_attributes: PostOpAttr,
    /// Total size in bytes.
    pub tbytes: Size3,
    /// Free bytes.
    pub fbytes: Size3,
    /// Free bytes available to the caller.
    pub abytes: Size3,
    /// Total file slots.
    pub tfiles: Size3,
    /// Free file slots.
    pub ffiles: Size3,
    /// Free file slots available to the caller.
    pub afiles: Size3,
    /// Seconds for which this information is expected to stay valid.
    pub invarsec: u32,
}
xdr_struct!(FsstatResOk {
    obj_attributes,
    tbytes,
    fbytes,
    abytes,
    tfiles,
    ffiles,
    afiles,
    invarsec
});

/// FSSTAT3res: resfail is `obj_attributes`.
pub type FsstatRes = Res3<FsstatResOk, PostOpAttr>;

/// FSINFO3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsinfoArgs {
    /// Any handle in the file system.
    pub fsroot: Fh3,
}
xdr_struct!(FsinfoArgs { fsroot });

/// FSINFO3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsinfoResOk {
    /// Attributes of the object.
    pub obj_attributes: PostOpAttr,
    /// Maximum READ size.
    pub rtmax: u32,
    /// Preferred READ size.
    pub rtpref: u32,
    /// Suggested READ size multiple.
    pub rtmult: u32,
    /// Maximum WRITE size.
    pub wtmax: u32,
    /// Preferred WRITE size.
    pub wtpref: u32,
    /// Suggested WRITE size multiple.
    pub wtmult: u32,
    /// Preferred READDIR size.
    pub dtpref: u32,
    /// Maximum file size.
    pub maxfilesize: Size3,
    /// Server time granularity.
    pub time_delta: Nfstime3,
    /// `FSF3_*` bits.
    pub properties: u32,
}
xdr_struct!(FsinfoResOk {
    obj_attributes,
    rtmax,
    rtpref,
    rtmult,
    wtmax,
    wtpref,
    wtmult,
    dtpref,
    maxfilesize,
    time_delta,
    properties
});

/// FSINFO3res: resfail is `obj_attributes`.
pub type FsinfoRes = Res3<FsinfoResOk, PostOpAttr>;

/// PATHCONF3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathconfArgs {
    /// The object.
    pub object: Fh3,
}
xdr_struct!(PathconfArgs { object });

/// PATHCONF3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathconfResOk {
    /// Attributes of the object.
    pub obj_attributes: PostOpAttr,
    /// Maximum number of hard links.
    pub linkmax: u32,
    /// Maximum name length.
    pub name_max: u32,
    /// True if longer names are rejected rather than truncated.
    pub no_trunc: bool,
    /// True if only a privileged user can change ownership.
    pub chown_restricted: bool,
    /// True if names are compared case-insensitively.
    pub case_insensitive: bool,
    /// True if the case of names is preserved.
    pub case_preserving: bool,
}
xdr_struct!(PathconfResOk {
    obj_attributes,
    linkmax,
    name_max,
    no_trunc,
    chown_restricted,
    case_insensitive,
    case_preserving
});

/// PATHCONF3res: resfail is `obj_attributes`.
pub type PathconfRes = Res3<PathconfResOk, PostOpAttr>;

/// COMMIT3args.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitArgs {
    /// The file.
    pub file: Fh3,
    /// Start of the range to commit.
    pub offset: Offset3,
    /// Length of the range (0 means to the end of file).
    pub count: Count3,
}
xdr_struct!(CommitArgs {
    file,
    offset,
    count
});

/// COMMIT3resok.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitResOk {
    /// WCC data of the file.
    pub file_wcc: WccData,
    /// Write verifier.
    pub verf: Writeverf3,
}

impl Decode for CommitResOk {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            file_wcc: d.decode()?,
            verf: dec_verf(d)?,
        })
    }
}

impl Encode for CommitResOk {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.file_wcc);
        e.opaque_fixed(&self.verf);
    }
}

/// COMMIT3res: resfail is `file_wcc`.
pub type CommitRes = Res3<CommitResOk, WccData>;

// ---------------------------------------------------------------------------------------------
// MOUNT v3
// ---------------------------------------------------------------------------------------------

/// MNT and UMNT arguments: the `dirpath` to mount or unmount.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MntArgs {
    /// The exported path (at most [`MNTPATHLEN`] bytes).
    pub dirpath: Dirpath,
}

impl Decode for MntArgs {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            dirpath: d.opaque(MNTPATHLEN)?,
        })
    }
}

impl Encode for MntArgs {
    fn encode(&self, e: &mut Encoder) {
        e.opaque(&self.dirpath)
    }
}

/// UMNT arguments (same as MNT).
pub type UmntArgs = MntArgs;

/// `mountres3_ok`: the root handle and the security flavors the client may use.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MountRes3Ok {
    /// Root file handle of the export (at most [`FHSIZE3`] bytes).
    pub fhandle: Fh3,
    /// Accepted RPC authentication flavors, preferred first.
    pub auth_flavors: Vec<u32>,
}

impl Decode for MountRes3Ok {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            fhandle: Fh3(d.opaque(FHSIZE3)?),
            auth_flavors: d.array(MAX_AUTH_FLAVORS, 4, Decoder::u32)?,
        })
    }
}

impl Encode for MountRes3Ok {
    fn encode(&self, e: &mut Encoder) {
        e.encode(&self.fhandle);
        e.u32(self.auth_flavors.len() as u32);
        for f in &self.auth_flavors {
            e.u32(*f);
        }
    }
}

/// `mountres3`: MNT result; the status word is encoded first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MountRes3 {
    /// MNT3_OK with the handle and flavors.
    Ok(MountRes3Ok),
    /// An error status (must not be [`Mountstat3::Ok`]).
    Fail(Mountstat3),
}

impl MountRes3 {
    /// The status word this result encodes.
    pub fn status(&self) -> Mountstat3 {
        match self {
            MountRes3::Ok(_) => Mountstat3::Ok,
            MountRes3::Fail(s) => *s,
        }
    }
}

impl Decode for MountRes3 {
    fn decode(d: &mut Decoder) -> Result<Self> {
        match Mountstat3::decode(d)? {
            Mountstat3::Ok => Ok(MountRes3::Ok(d.decode()?)),
            s => Ok(MountRes3::Fail(s)),
        }
    }
}

impl Encode for MountRes3 {
    fn encode(&self, e: &mut Encoder) {
        match self {
            MountRes3::Ok(ok) => {
                e.encode(&Mountstat3::Ok);
                e.encode(ok);
            }
            MountRes3::Fail(s) => {
                debug_assert_ne!(*s, Mountstat3::Ok, "MountRes3::Fail with MNT3_OK");
                e.encode(s);
            }
        }
    }
}

/// `mountbody`: one entry of the DUMP mount list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MountBody {
    /// Client host name (`ml_hostname`).
    pub hostname: MountName,
    /// Mounted path (`ml_directory`).
    pub directory: Dirpath,
}

impl Decode for MountBody {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            hostname: d.opaque(MNTNAMLEN)?,
            directory: d.opaque(MNTPATHLEN)?,
        })
    }
}

impl Encode for MountBody {
    fn encode(&self, e: &mut Encoder) {
        e.opaque(&self.hostname);
        e.opaque(&self.directory);
    }
}

/// `mountlist`: the DUMP result, encoded as a linked list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct MountList(pub Vec<MountBody>);

impl Decode for MountList {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self(dec_list(d, MountBody::decode)?))
    }
}

impl Encode for MountList {
    fn encode(&self, e: &mut Encoder) {
        enc_list(e, &self.0, |e, x| x.encode(e))
    }
}

/// `groups`: the host or netgroup names allowed to mount an export, encoded as a linked list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Groups(pub Vec<MountName>);

impl Decode for Groups {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self(dec_list(d, |d| d.opaque(MNTNAMLEN))?))
    }
}

impl Encode for Groups {
    fn encode(&self, e: &mut Encoder) {
        enc_list(e, &self.0, |e, g| e.opaque(g))
    }
}

/// `exportnode`: one exported path and who may mount it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExportNode {
    /// Exported path (`ex_dir`).
    pub dir: Dirpath,
    /// Allowed groups (`ex_groups`); empty means everyone.
    pub groups: Groups,
}

impl Decode for ExportNode {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self {
            dir: d.opaque(MNTPATHLEN)?,
            groups: d.decode()?,
        })
    }
}

impl Encode for ExportNode {
    fn encode(&self, e: &mut Encoder) {
        e.opaque(&self.dir);
        e.encode(&self.groups);
    }
}

/// `exports`: the EXPORT result, encoded as a linked list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Exports(pub Vec<ExportNode>);

impl Decode for Exports {
    fn decode(d: &mut Decoder) -> Result<Self> {
        Ok(Self(dec_list(d, ExportNode::decode)?))
    }
}

impl Encode for Exports {
    fn encode(&self, e: &mut Encoder) {
        enc_list(e, &self.0, |e, x| x.encode(e))
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;
    use std::fmt::Debug;
    use xdr::Segment;

    fn enc<T: Encode>(v: &T) -> Bytes {
        let mut e = Encoder::new();
        e.encode(v);
        e.finish().to_bytes()
    }

    fn dec<T: Decode>(b: Bytes) -> xdr::Result<T> {
        let mut d = Decoder::new(b);
        let v = T::decode(&mut d)?;
        assert_eq!(d.remaining(), 0, "trailing bytes after decode");
        Ok(v)
    }

    fn words(ws: &[u32]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    /// Encodes, checks alignment, decodes and compares; also checks every strict prefix fails.
    fn roundtrip<T: Encode + Decode + PartialEq + Debug>(
        v: &T,
    ) -> std::result::Result<(), TestCaseError> {
        let b = enc(v);
        prop_assert_eq!(b.len() % 4, 0);
        let mut d = Decoder::new(b.clone());
        let back = T::decode(&mut d);
        prop_assert_eq!(back.as_ref(), Ok(v));
        prop_assert_eq!(d.remaining(), 0);
        // A strict prefix of a valid encoding never decodes (decoding is deterministic and
        // self-delimiting). Check a few cut points, including the last word.
        let cuts = [
            0,
            b.len() / 2,
            b.len().saturating_sub(4),
            b.len().saturating_sub(1),
        ];
        for &cut in &cuts {
            if cut < b.len() {
                let r = T::decode(&mut Decoder::new(b.slice(..cut)));
                prop_assert!(r.is_err(), "prefix {} of {} decoded: {:?}", cut, b.len(), r);
            }
        }
        Ok(())
    }

    // ----- strategies -----

    fn bytes_up_to(max: usize) -> impl Strategy<Value = Bytes> {
        vec(any::<u8>(), 0..=max).prop_map(Bytes::from)
    }

    fn fh() -> impl Strategy<Value = Fh3> {
        bytes_up_to(NFS3_FHSIZE).prop_map(Fh3)
    }

    fn name() -> impl Strategy<Value = Bytes> {
        prop_oneof![bytes_up_to(16), bytes_up_to(NFS3_MAXNAMLEN)]
    }

    fn path() -> impl Strategy<Value = Bytes> {
        prop_oneof![bytes_up_to(32), bytes_up_to(NFS3_MAXPATHLEN)]
    }

    fn time() -> impl Strategy<Value = Nfstime3> {
        (any::<u32>(), any::<u32>()).prop_map(|(seconds, nseconds)| Nfstime3 { seconds, nseconds })
    }

    fn spec() -> impl Strategy<Value = Specdata3> {
        (any::<u32>(), any::<u32>()).prop_map(|(specdata1, specdata2)| Specdata3 {
            specdata1,
            specdata2,
        })
    }

    fn ftype() -> impl Strategy<Value = Ftype3> {
        prop::sample::select(Ftype3::ALL)
    }

    fn stable() -> impl Strategy<Value = StableHow> {
        prop::sample::select(StableHow::ALL)
    }

    fn err_status() -> impl Strategy<Value = Nfsstat3> {
        prop::sample::select(&Nfsstat3::ALL[1..])
    }

    fn verf() -> impl Strategy<Value = [u8; 8]> {
        any::<[u8; 8]>()
    }

    fn set_time() -> impl Strategy<Value = SetTime> {
        prop_oneof![
            Just(SetTime::DontChange),
            Just(SetTime::ServerTime),
            time().prop_map(SetTime::ClientTime),
        ]
    }

    fn sattr() -> impl Strategy<Value = Sattr3> {
        (
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            any::<Option<u32>>(),
            any::<Option<u64>>(),
            set_time(),
            set_time(),
        )
            .prop_map(|(mode, uid, gid, size, atime, mtime)| Sattr3 {
                mode,
                uid,
                gid,
                size,
                atime,
                mtime,
            })
    }

    fn fattr() -> impl Strategy<Value = Fattr3> {
        (
            (
                ftype(),
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
                any::<u32>(),
            ),
            (
                any::<u64>(),
                any::<u64>(),
                spec(),
                any::<u64>(),
                any::<u64>(),
            ),
            (time(), time(), time()),
        )
            .prop_map(
                |(
                    (ftype, mode, nlink, uid, gid),
                    (size, used, rdev, fsid, fileid),
                    (atime, mtime, ctime),
                )| Fattr3 {
                    ftype,
                    mode,
                    nlink,
                    uid,
                    gid,
                    size,
                    used,
                    rdev,
                    fsid,
                    fileid,
                    atime,
                    mtime,
                    ctime,
                },
            )
    }

    fn post_op_attr() -> impl Strategy<Value = PostOpAttr> {
        proptest::option::of(fattr()).prop_map(PostOpAttr)
    }

    fn wcc_attr() -> impl Strategy<Value = WccAttr> {
        (any::<u64>(), time(), time()).prop_map(|(size, mtime, ctime)| WccAttr {
            size,
            mtime,
            ctime,
        })
    }

    fn wcc_data() -> impl Strategy<Value = WccData> {
        (proptest::option::of(wcc_attr()), post_op_attr()).prop_map(|(b, after)| WccData {
            before: PreOpAttr(b),
            after,
        })
    }

    fn post_op_fh() -> impl Strategy<Value = PostOpFh3> {
        proptest::option::of(fh()).prop_map(PostOpFh3)
    }

    fn diropargs() -> impl Strategy<Value = DiropArgs3> {
        (fh(), name()).prop_map(|(dir, name)| DiropArgs3 { dir, name })
    }

    fn createhow() -> impl Strategy<Value = Createhow3> {
        prop_oneof![
            sattr().prop_map(Createhow3::Unchecked),
            sattr().prop_map(Createhow3::Guarded),
            verf().prop_map(Createhow3::Exclusive),
        ]
    }

    fn mknoddata() -> impl Strategy<Value = Mknoddata3> {
        let dev = || {
            (sattr(), spec()).prop_map(|(dev_attributes, spec)| Devicedata3 {
                dev_attributes,
                spec,
            })
        };
        prop_oneof![
            dev().prop_map(Mknoddata3::Chr),
            dev().prop_map(Mknoddata3::Blk),
            sattr().prop_map(Mknoddata3::Sock),
            sattr().prop_map(Mknoddata3::Fifo),
            Just(Mknoddata3::Reg),
            Just(Mknoddata3::Dir),
            Just(Mknoddata3::Lnk),
        ]
    }

    fn res<T: Debug + Clone, F: Debug + Clone>(
        ok: impl Strategy<Value = T>,
        fail: impl Strategy<Value = F>,
    ) -> impl Strategy<Value = Res3<T, F>> {
        prop_oneof![
            ok.prop_map(Res3::Ok),
            (err_status(), fail).prop_map(|(s, f)| Res3::Fail(s, f)),
        ]
    }

    fn entry() -> impl Strategy<Value = Entry3> {
        (any::<u64>(), name(), any::<u64>()).prop_map(|(fileid, name, cookie)| Entry3 {
            fileid,
            name,
            cookie,
        })
    }

    fn entryplus() -> impl Strategy<Value = Entryplus3> {
        (
            any::<u64>(),
            name(),
            any::<u64>(),
            post_op_attr(),
            post_op_fh(),
        )
            .prop_map(
                |(fileid, name, cookie, name_attributes, name_handle)| Entryplus3 {
                    fileid,
                    name,
                    cookie,
                    name_attributes,
                    name_handle,
                },
            )
    }

    fn mount_name() -> impl Strategy<Value = Bytes> {
        bytes_up_to(MNTNAMLEN)
    }

    fn dirpath() -> impl Strategy<Value = Bytes> {
        prop_oneof![bytes_up_to(32), bytes_up_to(MNTPATHLEN)]
    }

    // ----- byte-level tests -----

    #[test]
    fn getattr_fail_is_just_the_status_word() {
        let r: GetattrRes = Res3::Fail(Nfsstat3::Stale, Void);
        assert_eq!(&enc(&r)[..], &words(&[70])[..]);
        assert_eq!(dec::<GetattrRes>(enc(&r)), Ok(r));
    }

    #[test]
    fn post_op_attr_absent_is_zero() {
        assert_eq!(&enc(&PostOpAttr(None))[..], &[0, 0, 0, 0]);
        assert_eq!(&enc(&PreOpAttr(None))[..], &[0, 0, 0, 0]);
        assert_eq!(&enc(&PostOpFh3(None))[..], &[0, 0, 0, 0]);
        assert_eq!(&enc(&WccData::default())[..], &[0; 8]);
    }

    fn sample_fattr() -> Fattr3 {
        Fattr3 {
            ftype: Ftype3::Dir,
            mode: 0o755,
            nlink: 2,
            uid: 1000,
            gid: 100,
            size: 0x1_0000_0002,
            used: 4096,
            rdev: Specdata3 {
                specdata1: 8,
                specdata2: 1,
            },
            fsid: 7,
            fileid: 0xdead_beef_0000_0001,
            atime: Nfstime3 {
                seconds: 1,
                nseconds: 2,
            },
            mtime: Nfstime3 {
                seconds: 3,
                nseconds: 4,
            },
            ctime: Nfstime3 {
                seconds: 5,
                nseconds: 6,
            },
        }
    }

    #[test]
    fn getattr_ok_layout() {
        let r: GetattrRes = Res3::Ok(sample_fattr());
        let expected = words(&[
            0, // NFS3_OK
            2, // NF3DIR
            0o755,
            2,
            1000,
            100,
            1,
            2, // size
            0,
            4096, // used
            8,
            1, // rdev
            0,
            7, // fsid
            0xdead_beef,
            1, // fileid
            1,
            2,
            3,
            4,
            5,
            6, // times
        ]);
        let b = enc(&r);
        assert_eq!(b.len(), 4 + FATTR3_SIZE);
        assert_eq!(&b[..], &expected[..]);
    }

    #[test]
    fn sattr_unset_is_six_zero_words() {
        assert_eq!(&enc(&Sattr3::default())[..], &[0u8; 24][..]);
        let s = Sattr3 {
            mode: Some(0o644),
            size: Some(0),
            mtime: SetTime::ClientTime(Nfstime3 {
                seconds: 9,
                nseconds: 10,
            }),
            atime: SetTime::ServerTime,
            ..Default::default()
        };
        assert_eq!(
            &enc(&s)[..],
            &words(&[1, 0o644, 0, 0, 1, 0, 0, 1, 2, 9, 10])[..]
        );
    }

    #[test]
    fn lookup_args_layout() {
        let b = Bytes::from(words(&[4, 0x0102_0304, 3, u32::from_be_bytes(*b"abc\0")]));
        let a: LookupArgs = dec(b.clone()).unwrap();
        assert_eq!(&a.what.dir.0[..], &[1, 2, 3, 4]);
        assert_eq!(&a.what.name[..], b"abc");
        assert_eq!(enc(&a), b);
    }

    #[test]
    fn write_args_data_points_into_receive_buffer() {
        let mut raw = words(&[2, 0xabcd_0000, 0, 16, 5, 2, 5]);
        raw.extend_from_slice(b"hello\0\0\0");
        let buf = Bytes::from(raw);
        let base = buf.as_ptr() as usize;
        let a: WriteArgs = dec(buf.clone()).unwrap();
        assert_eq!(&a.file.0[..], &[0xab, 0xcd]);
        assert_eq!(a.offset, 16);
        assert_eq!(a.count, 5);
        assert_eq!(a.stable, StableHow::FileSync);
        assert_eq!(&a.data[..], b"hello");
        assert_eq!(a.data.as_ptr() as usize, base + 28);
        assert_eq!(a.file.0.as_ptr() as usize, base + 4);
    }

    #[test]
    fn write_count_mismatch_still_decodes() {
        let mut raw = words(&[0, 0, 0, 100, 0, 3]);
        raw.extend_from_slice(b"xyz\0");
        let a: WriteArgs = dec(Bytes::from(raw)).unwrap();
        assert_eq!(a.count, 100);
        assert_eq!(a.stable, StableHow::Unstable);
        assert_eq!(&a.data[..], b"xyz");
    }

    #[test]
    fn write_too_large_is_rejected() {
        let raw = words(&[0, 0, 0, 0, 0, (NFS3_MAX_IO + 1) as u32]);
        assert!(matches!(
            dec::<WriteArgs>(Bytes::from(raw)),
            Err(XdrError::TooLong { .. })
        ));
    }

    #[test]
    fn oversized_handle_and_name_are_rejected() {
        let raw = words(&[65]);
        assert!(matches!(
            dec::<GetattrArgs>(Bytes::from(raw)),
            Err(XdrError::TooLong { .. })
        ));
        // A 256-byte name decodes (the procedure answers NFS3ERR_NAMETOOLONG); a name longer
        // than a path does not.
        let mut raw = words(&[0, 256]);
        raw.extend(vec![b'a'; 256]);
        assert!(dec::<LookupArgs>(Bytes::from(raw)).is_ok());
        let mut raw = words(&[0, 4097]);
        raw.extend(vec![b'a'; 4100]);
        assert!(matches!(
            dec::<LookupArgs>(Bytes::from(raw)),
            Err(XdrError::TooLong { .. })
        ));
    }

    #[test]
    fn read_res_data_is_a_bulk_segment() {
        let data = Bytes::from(vec![7u8; 4097]);
        let r: ReadRes = Res3::Ok(ReadResOk {
            file_attributes: PostOpAttr(None),
            count: 4097,
            eof: true,
            data: data.clone().into(),
        });
        let mut e = Encoder::new();
        e.encode(&r);
        let reply = e.finish();
        let bulk: Vec<_> = reply
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Bulk(b) => Some(b),
                _ => None,
            })
            .collect();
        assert_eq!(bulk.len(), 1);
        assert_eq!(bulk[0].as_ptr(), data.as_ptr());
        let flat = reply.to_bytes();
        assert_eq!(&flat[..20], &words(&[0, 0, 4097, 1, 4097])[..]);
        assert_eq!(flat.len(), 20 + 4100);
        assert_eq!(dec::<ReadRes>(flat), Ok(r));
    }

    #[test]
    fn readdir_list_layout() {
        let r: ReaddirRes = Res3::Ok(ReaddirResOk {
            dir_attributes: PostOpAttr(None),
            cookieverf: [1, 2, 3, 4, 5, 6, 7, 8],
            reply: Dirlist3 {
                entries: vec![Entry3 {
                    fileid: 5,
                    name: Bytes::from_static(b"a"),
                    cookie: 9,
                }],
                eof: true,
            },
        });
        let b = enc(&r);
        let expected = words(&[
            0,
            0,
            0x0102_0304,
            0x0506_0708,
            1,
            0,
            5,
            1,
            u32::from_be_bytes(*b"a\0\0\0"),
            0,
            9,
            0,
            1,
        ]);
        assert_eq!(&b[..], &expected[..]);
        let r2: ReaddirRes = dec(b).unwrap();
        assert_eq!(r2, r);
        if let Res3::Ok(ok) = &r {
            assert_eq!(ok.reply.entries[0].wire_len(), 28);
        }
    }

    #[test]
    fn entry_wire_len_matches_encoding() {
        let e = Entryplus3 {
            fileid: 1,
            name: Bytes::from_static(b"hello"),
            cookie: 2,
            name_attributes: PostOpAttr(Some(sample_fattr())),
            name_handle: PostOpFh3(Some(Fh3(Bytes::from_static(&[1; 10])))),
        };
        assert_eq!(e.wire_len(), 4 + enc(&e).len());
        let e3 = Entry3 {
            fileid: 1,
            name: Bytes::from_static(b"hello"),
            cookie: 2,
        };
        assert_eq!(e3.wire_len(), 4 + enc(&e3).len());
    }

    #[test]
    fn readdir_list_bad_bool_is_rejected() {
        let raw = words(&[2]);
        assert_eq!(dec::<Dirlist3>(Bytes::from(raw)), Err(XdrError::BadBool(2)));
    }

    #[test]
    fn unknown_discriminants() {
        assert_eq!(
            dec::<Nfsstat3>(Bytes::from(words(&[3]))),
            Err(XdrError::BadDiscriminant(3))
        );
        assert_eq!(
            dec::<Createhow3>(Bytes::from(words(&[3]))),
            Err(XdrError::BadDiscriminant(3))
        );
        assert_eq!(
            dec::<Mknoddata3>(Bytes::from(words(&[0]))),
            Err(XdrError::BadDiscriminant(0))
        );
        assert_eq!(
            dec::<SetTime>(Bytes::from(words(&[3]))),
            Err(XdrError::BadDiscriminant(3))
        );
        assert_eq!(NfsProc3::try_from(22), Err(XdrError::BadDiscriminant(22)));
        assert_eq!(NfsProc3::try_from(17), Ok(NfsProc3::Readdirplus));
        assert_eq!(MountProc3::try_from(5), Ok(MountProc3::Export));
        assert_eq!(MountProc3::try_from(6), Err(XdrError::BadDiscriminant(6)));
    }

    #[test]
    fn status_values_match_rfc() {
        assert_eq!(u32::from(Nfsstat3::Nametoolong), 63);
        assert_eq!(u32::from(Nfsstat3::Badhandle), 10001);
        assert_eq!(u32::from(Nfsstat3::Jukebox), 10008);
        assert_eq!(Nfsstat3::ALL.len(), 29);
        assert_eq!(Mountstat3::ALL.len(), 10);
        for s in Nfsstat3::ALL {
            assert_eq!(Nfsstat3::try_from(*s as u32), Ok(*s));
        }
        assert_eq!(u32::from(NfsProc3::Commit), 21);
    }

    #[test]
    fn mount_layouts() {
        assert_eq!(
            &enc(&MountRes3::Fail(Mountstat3::Acces))[..],
            &words(&[13])[..]
        );
        let ok = MountRes3::Ok(MountRes3Ok {
            fhandle: Fh3(Bytes::from_static(&[9, 9, 9, 9, 9])),
            auth_flavors: vec![1, 390_004],
        });
        assert_eq!(
            &enc(&ok)[..],
            &words(&[0, 5, 0x0909_0909, 0x0900_0000, 2, 1, 390_004])[..]
        );
        let ex = Exports(vec![ExportNode {
            dir: Bytes::from_static(b"/x"),
            groups: Groups(vec![Bytes::from_static(b"*")]),
        }]);
        assert_eq!(
            &enc(&ex)[..],
            &words(&[
                1,
                2,
                u32::from_be_bytes(*b"/x\0\0"),
                1,
                1,
                u32::from_be_bytes(*b"*\0\0\0"),
                0,
                0
            ])[..]
        );
        assert_eq!(&enc(&Exports::default())[..], &[0, 0, 0, 0]);
        assert_eq!(&enc(&MountList::default())[..], &[0, 0, 0, 0]);
    }

    #[test]
    fn mnt_args_layout() {
        let b = Bytes::from(words(&[4, u32::from_be_bytes(*b"/exp")]));
        let a: MntArgs = dec(b.clone()).unwrap();
        assert_eq!(&a.dirpath[..], b"/exp");
        let mut raw = words(&[1025]);
        raw.extend(vec![b'a'; 1028]);
        assert!(matches!(
            dec::<MntArgs>(Bytes::from(raw)),
            Err(XdrError::TooLong { .. })
        ));
    }

    #[test]
    fn long_list_is_bounded_by_input() {
        // "true" with no entry after it must fail, not loop or allocate.
        let raw = words(&[1; 3]);
        assert!(dec::<Dirlist3>(Bytes::from(raw)).is_err());
        let raw = words(&[1, 1, 1]);
        assert!(dec::<Groups>(Bytes::from(raw)).is_err());
    }

    // ----- property tests -----

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn rt_sattr(v in sattr()) { roundtrip(&v)?; }

        #[test]
        fn rt_fattr(v in fattr()) { roundtrip(&v)?; }

        #[test]
        fn rt_wcc_data(v in wcc_data()) { roundtrip(&v)?; }

        #[test]
        fn rt_getattr_args(object in fh()) { roundtrip(&GetattrArgs { object })?; }

        #[test]
        fn rt_setattr_args(object in fh(), new_attributes in sattr(), g in proptest::option::of(time())) {
            roundtrip(&SetattrArgs { object, new_attributes, guard: SattrGuard3(g) })?;
        }

        #[test]
        fn rt_lookup_args(what in diropargs()) { roundtrip(&LookupArgs { what })?; }

        #[test]
        fn rt_access_args(object in fh(), access: u32) { roundtrip(&AccessArgs { object, access })?; }

        #[test]
        fn rt_readlink_args(symlink in fh()) { roundtrip(&ReadlinkArgs { symlink })?; }

        #[test]
        fn rt_read_args(file in fh(), offset: u64, count: u32) {
            roundtrip(&ReadArgs { file, offset, count })?;
        }

        #[test]
        fn rt_write_args(file in fh(), offset: u64, count: u32, stable in stable(), data in bytes_up_to(5000)) {
            roundtrip(&WriteArgs { file, offset, count, stable, data })?;
        }

        #[test]
        fn rt_create_args(where_ in diropargs(), how in createhow()) {
            roundtrip(&CreateArgs { where_, how })?;
        }

        #[test]
        fn rt_mkdir_args(where_ in diropargs(), attributes in sattr()) {
            roundtrip(&MkdirArgs { where_, attributes })?;
        }

        #[test]
        fn rt_symlink_args(where_ in diropargs(), symlink_attributes in sattr(), symlink_data in path()) {
            roundtrip(&SymlinkArgs { where_, symlink: Symlinkdata3 { symlink_attributes, symlink_data } })?;
        }

        #[test]
        fn rt_mknod_args(where_ in diropargs(), what in mknoddata()) {
            roundtrip(&MknodArgs { where_, what })?;
        }

        #[test]
        fn rt_remove_rmdir_args(object in diropargs()) {
            roundtrip(&RemoveArgs { object: object.clone() })?;
            roundtrip(&RmdirArgs { object })?;
        }

        #[test]
        fn rt_rename_args(from in diropargs(), to in diropargs()) {
            roundtrip(&RenameArgs { from, to })?;
        }

        #[test]
        fn rt_link_args(file in fh(), link in diropargs()) { roundtrip(&LinkArgs { file, link })?; }

        #[test]
        fn rt_readdir_args(dir in fh(), cookie: u64, cookieverf in verf(), count: u32) {
            roundtrip(&ReaddirArgs { dir, cookie, cookieverf, count })?;
        }

        #[test]
        fn rt_readdirplus_args(dir in fh(), cookie: u64, cookieverf in verf(), dircount: u32, maxcount: u32) {
            roundtrip(&ReaddirplusArgs { dir, cookie, cookieverf, dircount, maxcount })?;
        }

        #[test]
        fn rt_fs_args(a in fh(), b in fh(), c in fh()) {
            roundtrip(&FsstatArgs { fsroot: a })?;
            roundtrip(&FsinfoArgs { fsroot: b })?;
            roundtrip(&PathconfArgs { object: c })?;
        }

        #[test]
        fn rt_commit_args(file in fh(), offset: u64, count: u32) {
            roundtrip(&CommitArgs { file, offset, count })?;
        }

        #[test]
        fn rt_mnt_args(dirpath in dirpath()) { roundtrip(&MntArgs { dirpath })?; }

        #[test]
        fn rt_getattr_res(r in res(fattr(), Just(Void))) { roundtrip(&r)?; }

        #[test]
        fn rt_setattr_res(r in res(wcc_data(), wcc_data())) { roundtrip(&r)?; }

        #[test]
        fn rt_lookup_res(r in res(
            (fh(), post_op_attr(), post_op_attr()).prop_map(|(object, obj_attributes, dir_attributes)| LookupResOk { object, obj_attributes, dir_attributes }),
            post_op_attr(),
        )) { roundtrip(&r)?; }

        #[test]
        fn rt_access_readlink_res(
            a in res((post_op_attr(), any::<u32>()).prop_map(|(obj_attributes, access)| AccessResOk { obj_attributes, access }), post_op_attr()),
            l in res((post_op_attr(), path()).prop_map(|(symlink_attributes, data)| ReadlinkResOk { symlink_attributes, data }), post_op_attr()),
        ) {
            roundtrip(&a)?;
            roundtrip(&l)?;
        }

        #[test]
        fn rt_read_res(r in res(
            (post_op_attr(), any::<u32>(), any::<bool>(), bytes_up_to(5000))
                .prop_map(|(file_attributes, count, eof, data)| ReadResOk { file_attributes, count, eof, data: data.into() }),
            post_op_attr(),
        )) { roundtrip(&r)?; }

        #[test]
        fn rt_write_res(r in res(
            (wcc_data(), any::<u32>(), stable(), verf())
                .prop_map(|(file_wcc, count, committed, verf)| WriteResOk { file_wcc, count, committed, verf }),
            wcc_data(),
        )) { roundtrip(&r)?; }

        #[test]
        fn rt_create_res(r in res(
            (post_op_fh(), post_op_attr(), wcc_data())
                .prop_map(|(obj, obj_attributes, dir_wcc)| CreateResOk { obj, obj_attributes, dir_wcc }),
            wcc_data(),
        )) { roundtrip(&r)?; }

        #[test]
        fn rt_rename_link_res(
            r in res(
                (wcc_data(), wcc_data()).prop_map(|(fromdir_wcc, todir_wcc)| RenameResOk { fromdir_wcc, todir_wcc }),
                (wcc_data(), wcc_data()).prop_map(|(fromdir_wcc, todir_wcc)| RenameResOk { fromdir_wcc, todir_wcc }),
            ),
            l in res(
                (post_op_attr(), wcc_data()).prop_map(|(file_attributes, linkdir_wcc)| LinkResOk { file_attributes, linkdir_wcc }),
                (post_op_attr(), wcc_data()).prop_map(|(file_attributes, linkdir_wcc)| LinkResOk { file_attributes, linkdir_wcc }),
            ),
        ) {
            roundtrip(&r)?;
            roundtrip(&l)?;
        }

        #[test]
        fn rt_readdir_res(r in res(
            (post_op_attr(), verf(), vec(entry(), 0..20), any::<bool>())
                .prop_map(|(dir_attributes, cookieverf, entries, eof)| ReaddirResOk { dir_attributes, cookieverf, reply: Dirlist3 { entries, eof } }),
            post_op_attr(),
        )) { roundtrip(&r)?; }

        #[test]
        fn rt_readdirplus_res(r in res(
            (post_op_attr(), verf(), vec(entryplus(), 0..10), any::<bool>())
                .prop_map(|(dir_attributes, cookieverf, entries, eof)| ReaddirplusResOk { dir_attributes, cookieverf, reply: Dirlistplus3 { entries, eof } }),
            post_op_attr(),
        )) {
            roundtrip(&r)?;
            if let Res3::Ok(ok) = &r {
                for e in &ok.reply.entries {
                    prop_assert_eq!(e.wire_len(), 4 + enc(e).len());
                }
            }
        }

        #[test]
        fn rt_fs_res(
            s in res(
                (post_op_attr(), (any::<u64>(), any::<u64>(), any::<u64>()), (any::<u64>(), any::<u64>(), any::<u64>()), any::<u32>())
                    .prop_map(|(obj_attributes, (tbytes, fbytes, abytes), (tfiles, ffiles, afiles), invarsec)| FsstatResOk { obj_attributes, tbytes, fbytes, abytes, tfiles, ffiles, afiles, invarsec }),
                post_op_attr(),
            ),
            i in res(
                (post_op_attr(), any::<[u32; 7]>(), any::<u64>(), time(), any::<u32>())
                    .prop_map(|(obj_attributes, t, maxfilesize, time_delta, properties)| FsinfoResOk {
                        obj_attributes, rtmax: t[0], rtpref: t[1], rtmult: t[2], wtmax: t[3], wtpref: t[4], wtmult: t[5], dtpref: t[6],
                        maxfilesize, time_delta, properties,
                    }),
                post_op_attr(),
            ),
            p in res(
                (post_op_attr(), any::<u32>(), any::<u32>(), any::<[bool; 4]>())
                    .prop_map(|(obj_attributes, linkmax, name_max, b)| PathconfResOk {
                        obj_attributes, linkmax, name_max, no_trunc: b[0], chown_restricted: b[1], case_insensitive: b[2], case_preserving: b[3],
                    }),
                post_op_attr(),
            ),
            c in res(
                (wcc_data(), verf()).prop_map(|(file_wcc, verf)| CommitResOk { file_wcc, verf }),
                wcc_data(),
            ),
        ) {
            roundtrip(&s)?;
            roundtrip(&i)?;
            roundtrip(&p)?;
            roundtrip(&c)?;
        }

        #[test]
        fn rt_mount_res(
            m in prop_oneof![
                (fh(), vec(any::<u32>(), 0..8)).prop_map(|(fhandle, auth_flavors)| MountRes3::Ok(MountRes3Ok { fhandle, auth_flavors })),
                prop::sample::select(&Mountstat3::ALL[1..]).prop_map(MountRes3::Fail),
            ],
            ml in vec((mount_name(), dirpath()).prop_map(|(hostname, directory)| MountBody { hostname, directory }), 0..5),
            ex in vec((dirpath(), vec(mount_name(), 0..4)).prop_map(|(dir, g)| ExportNode { dir, groups: Groups(g) }), 0..5),
        ) {
            roundtrip(&m)?;
            roundtrip(&MountList(ml))?;
            roundtrip(&Exports(ex))?;
        }

        #[test]
        fn garbage_never_panics(raw in vec(any::<u8>(), 0..512)) {
            let b = Bytes::from(raw);
            fn go<T: Decode>(b: &Bytes) {
                let _ = T::decode(&mut Decoder::new(b.clone()));
            }
            go::<GetattrArgs>(&b);
            go::<SetattrArgs>(&b);
            go::<LookupArgs>(&b);
            go::<AccessArgs>(&b);
            go::<ReadlinkArgs>(&b);
            go::<ReadArgs>(&b);
            go::<WriteArgs>(&b);
            go::<CreateArgs>(&b);
            go::<MkdirArgs>(&b);
            go::<SymlinkArgs>(&b);
            go::<MknodArgs>(&b);
            go::<RemoveArgs>(&b);
            go::<RmdirArgs>(&b);
            go::<RenameArgs>(&b);
            go::<LinkArgs>(&b);
            go::<ReaddirArgs>(&b);
            go::<ReaddirplusArgs>(&b);
            go::<FsstatArgs>(&b);
            go::<FsinfoArgs>(&b);
            go::<PathconfArgs>(&b);
            go::<CommitArgs>(&b);
            go::<MntArgs>(&b);
            go::<ReaddirplusRes>(&b);
            go::<ReaddirRes>(&b);
            go::<MountRes3>(&b);
            go::<Exports>(&b);
            go::<MountList>(&b);
        }

        #[test]
        fn garbage_words_never_panic(ws in vec(prop_oneof![0u32..4, any::<u32>()], 0..64)) {
            // Small words make discriminants and booleans valid more often, reaching deeper.
            let b = Bytes::from(words(&ws));
            fn go<T: Decode>(b: &Bytes) {
                let _ = T::decode(&mut Decoder::new(b.clone()));
            }
            go::<SetattrArgs>(&b);
            go::<CreateArgs>(&b);
            go::<MknodArgs>(&b);
            go::<SymlinkArgs>(&b);
            go::<WriteArgs>(&b);
            go::<RenameArgs>(&b);
            go::<ReaddirplusRes>(&b);
            go::<Exports>(&b);
            go::<MountRes3>(&b);
        }

        #[test]
        fn truncated_args_fail(what in diropargs(), how in createhow(), cut in any::<prop::sample::Index>()) {
            let b = enc(&CreateArgs { where_: what, how });
            let cut = cut.index(b.len());
            prop_assert!(dec::<CreateArgs>(b.slice(..cut)).is_err());
        }
    }
}
