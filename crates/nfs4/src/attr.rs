//! fattr4: attribute bitmaps, encoding of the attributes we support, decoding of the ones a
//! client may set.

use std::sync::OnceLock;

use vfs::{Attr, FileType, FsStat, SetAttrs, SetTime, Time};
use xdr::{Decoder, Encoder};

use crate::acl::{Ace4, Who};
use crate::idmap::IdMap;
use nfs4wire::{Bitmap4, Fattr4, NfsFtype4, Nfsstat4};

/// A bitmap4.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bitmap(pub Vec<u32>);

impl Bitmap {
    /// A bitmap with the given bits.
    pub fn of(bits: &[u32]) -> Self {
        let mut b = Bitmap::default();
        for &n in bits {
            b.set(n);
        }
        b
    }
    /// Whether bit `n` is set.
    pub fn has(&self, n: u32) -> bool {
        self.0
            .get((n / 32) as usize)
            .is_some_and(|w| w & (1 << (n % 32)) != 0)
    }
    /// Sets bit `n`.
    pub fn set(&mut self, n: u32) {
        let i = (n / 32) as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] |= 1 << (n % 32);
    }
    /// Set bits in increasing order.
    pub fn bits(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(i, w)| {
            (0..32)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| i as u32 * 32 + b)
        })
    }
    /// Bits set in both.
    pub fn and(&self, o: &Bitmap) -> Bitmap {
        Bitmap(self.0.iter().zip(o.0.iter()).map(|(a, b)| a & b).collect())
    }
    /// Clears bit `n`.
    pub fn clear(&mut self, n: u32) {
        if let Some(w) = self.0.get_mut((n / 32) as usize) {
            *w &= !(1 << (n % 32));
        }
    }
    /// Whether no bit is set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    /// Encodes a bitmap4, dropping trailing zero words.
    pub fn encode(&self, e: &mut Encoder) {
        e.encode(&self.to_wire());
    }
    /// The bitmap4 to send: without trailing zero words.
    pub fn to_wire(&self) -> Bitmap4 {
        self.clone().into_wire()
    }
    /// [`Bitmap::to_wire`], consuming the bitmap (no copy).
    pub fn into_wire(mut self) -> Bitmap4 {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
        self.0
    }
}

impl From<Bitmap4> for Bitmap {
    fn from(w: Bitmap4) -> Self {
        Bitmap(w)
    }
}

const COMMON: &[u32] = &[
    nfs4wire::FATTR4_SUPPORTED_ATTRS,
    nfs4wire::FATTR4_TYPE,
    nfs4wire::FATTR4_FH_EXPIRE_TYPE,
    nfs4wire::FATTR4_CHANGE,
    nfs4wire::FATTR4_SIZE,
    nfs4wire::FATTR4_LINK_SUPPORT,
    nfs4wire::FATTR4_SYMLINK_SUPPORT,
    nfs4wire::FATTR4_NAMED_ATTR,
    nfs4wire::FATTR4_FSID,
    nfs4wire::FATTR4_UNIQUE_HANDLES,
    nfs4wire::FATTR4_LEASE_TIME,
    nfs4wire::FATTR4_RDATTR_ERROR,
    nfs4wire::FATTR4_ACL,
    nfs4wire::FATTR4_ACLSUPPORT,
    nfs4wire::FATTR4_CANSETTIME,
    nfs4wire::FATTR4_CASE_INSENSITIVE,
    nfs4wire::FATTR4_CASE_PRESERVING,
    nfs4wire::FATTR4_CHOWN_RESTRICTED,
    nfs4wire::FATTR4_FILEHANDLE,
    nfs4wire::FATTR4_FILEID,
    nfs4wire::FATTR4_FILES_AVAIL,
    nfs4wire::FATTR4_FILES_FREE,
    nfs4wire::FATTR4_FILES_TOTAL,
    nfs4wire::FATTR4_FS_LOCATIONS,
    nfs4wire::FATTR4_HOMOGENEOUS,
    nfs4wire::FATTR4_MAXFILESIZE,
    nfs4wire::FATTR4_MAXLINK,
    nfs4wire::FATTR4_MAXNAME,
    nfs4wire::FATTR4_MAXREAD,
    nfs4wire::FATTR4_MAXWRITE,
    nfs4wire::FATTR4_MODE,
    nfs4wire::FATTR4_NO_TRUNC,
    nfs4wire::FATTR4_NUMLINKS,
    nfs4wire::FATTR4_OWNER,
    nfs4wire::FATTR4_OWNER_GROUP,
    nfs4wire::FATTR4_RAWDEV,
    nfs4wire::FATTR4_SPACE_AVAIL,
    nfs4wire::FATTR4_SPACE_FREE,
    nfs4wire::FATTR4_SPACE_TOTAL,
    nfs4wire::FATTR4_SPACE_USED,
    nfs4wire::FATTR4_TIME_ACCESS,
    nfs4wire::FATTR4_TIME_ACCESS_SET,
    nfs4wire::FATTR4_TIME_DELTA,
    nfs4wire::FATTR4_TIME_METADATA,
    nfs4wire::FATTR4_TIME_MODIFY,
    nfs4wire::FATTR4_TIME_MODIFY_SET,
    nfs4wire::FATTR4_MOUNTED_ON_FILEID,
];

/// layout_blksize: the data servers' preferred I/O size (the Linux client caps it at 1 MiB).
pub const LAYOUT_BLKSIZE: u32 = 1 << 20;

/// The attributes supported in minor version `minor`.
pub fn supported(minor: u32) -> &'static Bitmap {
    static BY_MINOR: [OnceLock<Bitmap>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    // computed once: every GETATTR and every READDIR entry checks against it
    BY_MINOR[(minor as usize).min(2)].get_or_init(|| {
        let mut b = Bitmap::of(COMMON);
        if minor >= 1 {
            b.set(nfs4wire::FATTR4_SUPPATTR_EXCLCREAT);
            // the ACL with its flags (RFC 8881 section 6.2.3); sacl is not supported (knfsd
            // has none either: audit and alarm ACEs have no POSIX counterpart)
            b.set(nfs4wire::FATTR4_DACL);
            // pNFS (RFC 8881 sections 5.12, 5.13): the types are empty where no layout is offered
            b.set(nfs4wire::FATTR4_FS_LAYOUT_TYPES);
            b.set(nfs4wire::FATTR4_LAYOUT_BLKSIZE);
            b.set(nfs4wire::FATTR4_LAYOUT_ALIGNMENT);
        }
        if minor >= 2 {
            b.set(nfs4wire::FATTR4_CLONE_BLKSIZE);
            b.set(nfs4wire::FATTR4_CHANGE_ATTR_TYPE);
            b.set(nfs4wire::FATTR4_XATTR_SUPPORT);
            b.set(crate::proto::FATTR4_OPEN_ARGUMENTS);
            b.set(crate::proto::FATTR4_MODE_UMASK);
        }
        b
    })
}

/// open_arguments4 (RFC 9754 section 6.1.1): each bitmap holds, by value, what OPEN accepts.
fn encode_open_arguments(v: &mut Encoder) {
    let bits = |values: &[u32]| Bitmap::of(values);
    // share access READ, WRITE, BOTH; deny NONE, READ, WRITE, BOTH
    bits(&[1, 2, 3]).encode(v);
    bits(&[0, 1, 2, 3]).encode(v);
    // wants: ANY_DELEG, NO_DELEG (no signalled delegations, no delegated timestamps, no
    // OPEN_XOR_DELEGATION)
    bits(&[3, 4]).encode(v);
    // claims: NULL, PREVIOUS, DELEGATE_CUR, FH, DELEG_CUR_FH (not DELEGATE_PREV and
    // DELEG_PREV_FH, which reclaim delegations across a restart of the client)
    bits(&[0, 1, 2, 4, 5]).encode(v);
    // create modes: UNCHECKED4, GUARDED4, EXCLUSIVE4, EXCLUSIVE4_1
    bits(&[0, 1, 2, 3]).encode(v);
}

/// Attributes a client may set with EXCLUSIVE4_1 create in minor version `minor`.
pub fn exclcreat(minor: u32) -> Bitmap {
    let mut b = Bitmap::of(&[
        nfs4wire::FATTR4_SIZE,
        nfs4wire::FATTR4_MODE,
        nfs4wire::FATTR4_OWNER,
        nfs4wire::FATTR4_OWNER_GROUP,
        // not the times: an exclusive create keeps its verifier in them until the client
        // sets them, as the OPEN's attrset asks it to (see `Nfs4::open`)
    ]);
    if minor >= 2 {
        // the Linux client sends its umask with an exclusive create's mode too
        b.set(crate::proto::FATTR4_MODE_UMASK);
    }
    b
}

/// Whether attribute `n` may only be set (GETATTR, READDIR and VERIFY refuse it).
pub fn write_only(n: u32) -> bool {
    matches!(
        n,
        nfs4wire::FATTR4_TIME_ACCESS_SET
            | nfs4wire::FATTR4_TIME_MODIFY_SET
            | crate::proto::FATTR4_MODE_UMASK
    )
}

/// Whether a requested bitmap names a write-only attribute (GETATTR / READDIR must refuse it).
pub fn has_write_only(req: &Bitmap) -> bool {
    req.bits().any(write_only)
}

/// The ACL attributes, absent from supported_attrs where ACLs are not served.
const ACL_ATTRS: [u32; 2] = [nfs4wire::FATTR4_ACL, nfs4wire::FATTR4_DACL];

/// Most ACEs an ACL set by a client may have: twice the POSIX entries that can hold them (an
/// ALLOW and a DENY each), with room for the special principals.
pub const MAX_ACES: usize = 2 * vfs::acl::MAX_ENTRIES + 8;

/// Whether an attribute is writable.
fn writable(n: u32) -> bool {
    matches!(
        n,
        nfs4wire::FATTR4_SIZE
            | nfs4wire::FATTR4_ACL
            | nfs4wire::FATTR4_DACL
            | nfs4wire::FATTR4_MODE
            | nfs4wire::FATTR4_OWNER
            | nfs4wire::FATTR4_OWNER_GROUP
            | nfs4wire::FATTR4_TIME_ACCESS_SET
            | nfs4wire::FATTR4_TIME_MODIFY_SET
            | crate::proto::FATTR4_MODE_UMASK
    )
}

/// What an object looks like to GETATTR.
pub struct Object<'a> {
    /// stat(2) attributes.
    pub attr: &'a Attr,
    /// Its wire handle.
    pub fh: &'a [u8],
    /// Inode number of the directory it is mounted on (itself unless an export root).
    pub mounted_on_fileid: u64,
    /// File-system usage, fetched only when asked for.
    pub fsstat: &'a dyn Fn() -> Option<FsStat>,
    /// The server's lease time in seconds.
    pub lease: u32,
    /// How owner and owner_group are written.
    pub idmap: &'a IdMap,
    /// The file system offers flexible files layouts to this client (fs_layout_types lists
    /// them; empty otherwise).
    pub layouts: bool,
    /// ACLs are served for it (not with `no_acl`, a file system without POSIX ACLs, the
    /// pseudo file system): supported_attrs and aclsupport say so.
    pub acls: bool,
    /// Its NFSv4 ACL, read only when `acl` or `dacl` is asked for (and `acls`).
    pub acl: &'a dyn Fn() -> Result<Vec<Ace4>, Nfsstat4>,
}

/// An ACL as fattr4_acl: the count, then each ACE with its principal's name.
fn encode_aces(v: &mut Encoder, aces: &[Ace4], idmap: &IdMap) {
    v.u32(aces.len() as u32);
    for a in aces {
        v.u32(a.kind);
        v.u32(a.flag);
        v.u32(a.mask);
        match a.who {
            Who::Owner => v.opaque(crate::acl::OWNER),
            Who::Group => v.opaque(crate::acl::GROUP),
            Who::Everyone => v.opaque(crate::acl::EVERYONE),
            Who::User(uid) => v.opaque(idmap.owner(uid).as_ref()),
            Who::NamedGroup(gid) => v.opaque(idmap.group(gid).as_ref()),
        }
    }
}

/// A fattr4_acl from a client: its principals resolved (BADOWNER for a name that maps to no
/// id, as knfsd answers).
fn decode_aces(v: &mut Decoder, idmap: &IdMap) -> Result<Vec<Ace4>, Nfsstat4> {
    let bad = |_| Nfsstat4::NFS4ERR_BADXDR;
    // an ACE takes at least 16 bytes (an empty name): the count is checked against what is left
    let n = v.array_len(MAX_ACES, 16).map_err(|e| match e {
        xdr::XdrError::TooLong { .. } => Nfsstat4::NFS4ERR_NOSPC,
        _ => Nfsstat4::NFS4ERR_BADXDR,
    })?;
    let mut aces = Vec::with_capacity(n);
    for _ in 0..n {
        let kind = v.u32().map_err(bad)?;
        let flag = v.u32().map_err(bad)?;
        let mask = v.u32().map_err(bad)?;
        let name = v
            .opaque(nfs4wire::NFS4_OPAQUE_LIMIT as usize)
            .map_err(bad)?;
        let who = match &name[..] {
            crate::acl::OWNER => Who::Owner,
            crate::acl::GROUP => Who::Group,
            crate::acl::EVERYONE => Who::Everyone,
            _ if flag & nfs4wire::ACE4_IDENTIFIER_GROUP != 0 => {
                Who::NamedGroup(idmap.parse_group(&name)?)
            }
            _ => Who::User(idmap.parse_owner(&name)?),
        };
        aces.push(Ace4 {
            kind,
            flag,
            mask,
            who,
        });
    }
    Ok(aces)
}

fn time(e: &mut Encoder, t: Time) {
    e.i64(t.sec);
    e.u32(t.nsec);
}

/// Whether `req` asks for an attribute that writes change (size, change, modify and metadata
/// times, space used): what a write delegation's holder may know better than the file.
pub fn depends_on_data(req: &Bitmap) -> bool {
    [
        nfs4wire::FATTR4_CHANGE,
        nfs4wire::FATTR4_SIZE,
        nfs4wire::FATTR4_TIME_MODIFY,
        nfs4wire::FATTR4_TIME_METADATA,
        nfs4wire::FATTR4_SPACE_USED,
    ]
    .iter()
    .any(|&a| req.has(a))
}

/// The change attribute: ctime in nanoseconds, which moves on every data or metadata change.
pub fn change(a: &Attr) -> u64 {
    (a.ctime.sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(a.ctime.nsec as u64)
}

/// nfs_ftype4 of a file type.
pub fn ftype4(t: FileType) -> u32 {
    match t {
        FileType::Regular => NfsFtype4::Nf4reg as u32,
        FileType::Directory => NfsFtype4::Nf4dir as u32,
        FileType::Block => NfsFtype4::Nf4blk as u32,
        FileType::Char => NfsFtype4::Nf4chr as u32,
        FileType::Symlink => NfsFtype4::Nf4lnk as u32,
        FileType::Socket => NfsFtype4::Nf4sock as u32,
        FileType::Fifo => NfsFtype4::Nf4fifo as u32,
    }
}

/// The requested attributes of `o` as a fattr4 (the bitmap of what is returned and the values).
pub fn fattr(req: &Bitmap, o: &Object<'_>, minor: u32) -> Fattr4 {
    fattr_in(req, o, minor, &mut Encoder::new())
}

/// [`fattr`], its values encoded in `v` (which holds nothing else): a listing encodes all its
/// entries' values in one buffer.
pub fn fattr_in(req: &Bitmap, o: &Object<'_>, minor: u32, v: &mut Encoder) -> Fattr4 {
    let sup = supported(minor);
    let mut got = Bitmap::default();
    let a = o.attr;
    let mut fs: Option<Option<FsStat>> = None;
    let mut fsstat = || fs.get_or_insert_with(|| (o.fsstat)()).clone();
    let mut read_acl: Option<Result<Vec<Ace4>, Nfsstat4>> = None;
    let mut acl = || read_acl.get_or_insert_with(|| (o.acl)()).clone();
    for n in req.bits() {
        if !sup.has(n) || write_only(n) {
            continue;
        }
        match n {
            nfs4wire::FATTR4_SUPPORTED_ATTRS => match o.acls {
                true => sup.encode(v),
                false => {
                    let mut without = sup.clone();
                    for b in ACL_ATTRS {
                        without.clear(b);
                    }
                    without.encode(v)
                }
            },
            nfs4wire::FATTR4_TYPE => v.u32(ftype4(a.ftype)),
            nfs4wire::FATTR4_FH_EXPIRE_TYPE => v.u32(0),
            nfs4wire::FATTR4_CHANGE => v.u64(change(a)),
            nfs4wire::FATTR4_SIZE => v.u64(a.size),
            nfs4wire::FATTR4_LINK_SUPPORT
            | nfs4wire::FATTR4_SYMLINK_SUPPORT
            | nfs4wire::FATTR4_UNIQUE_HANDLES => v.bool(true),
            nfs4wire::FATTR4_NAMED_ATTR => v.bool(false),
            nfs4wire::FATTR4_FSID => {
                v.u64(a.fsid);
                v.u64(0);
            }
            nfs4wire::FATTR4_LEASE_TIME => v.u32(o.lease),
            nfs4wire::FATTR4_RDATTR_ERROR => v.u32(Nfsstat4::NFS4_OK.0),
            nfs4wire::FATTR4_ACLSUPPORT => v.u32(match o.acls {
                true => nfs4wire::ACL4_SUPPORT_ALLOW_ACL | nfs4wire::ACL4_SUPPORT_DENY_ACL,
                false => 0,
            }),
            nfs4wire::FATTR4_ACL | nfs4wire::FATTR4_DACL if !o.acls => continue,
            nfs4wire::FATTR4_ACL | nfs4wire::FATTR4_DACL => match acl() {
                Ok(aces) => {
                    if n == nfs4wire::FATTR4_DACL {
                        v.u32(0); // aclflag4: no automatic inheritance
                    }
                    encode_aces(v, &aces, o.idmap)
                }
                // unreadable: left out of the reply
                Err(_) => continue,
            },
            nfs4wire::FATTR4_CANSETTIME
            | nfs4wire::FATTR4_CASE_PRESERVING
            | nfs4wire::FATTR4_CHOWN_RESTRICTED
            | nfs4wire::FATTR4_HOMOGENEOUS
            | nfs4wire::FATTR4_NO_TRUNC => v.bool(true),
            nfs4wire::FATTR4_CASE_INSENSITIVE => v.bool(false),
            nfs4wire::FATTR4_FILEHANDLE => v.opaque(o.fh),
            nfs4wire::FATTR4_FILEID => v.u64(a.fileid),
            nfs4wire::FATTR4_FILES_AVAIL
            | nfs4wire::FATTR4_FILES_FREE
            | nfs4wire::FATTR4_FILES_TOTAL
            | nfs4wire::FATTR4_SPACE_AVAIL
            | nfs4wire::FATTR4_SPACE_FREE
            | nfs4wire::FATTR4_SPACE_TOTAL => {
                let s = fsstat().unwrap_or(FsStat {
                    total_bytes: 0,
                    free_bytes: 0,
                    avail_bytes: 0,
                    total_files: 0,
                    free_files: 0,
                    avail_files: 0,
                });
                v.u64(match n {
                    nfs4wire::FATTR4_FILES_AVAIL => s.avail_files,
                    nfs4wire::FATTR4_FILES_FREE => s.free_files,
                    nfs4wire::FATTR4_FILES_TOTAL => s.total_files,
                    nfs4wire::FATTR4_SPACE_AVAIL => s.avail_bytes,
                    nfs4wire::FATTR4_SPACE_FREE => s.free_bytes,
                    _ => s.total_bytes,
                })
            }
            nfs4wire::FATTR4_FS_LOCATIONS => {
                // fs_root: empty pathname; no locations.
                v.u32(0);
                v.u32(0);
            }
            nfs4wire::FATTR4_MAXFILESIZE => v.u64(i64::MAX as u64),
            nfs4wire::FATTR4_MAXLINK => v.u32(65000),
            nfs4wire::FATTR4_MAXNAME => v.u32(vfs::fs::NAME_MAX as u32),
            nfs4wire::FATTR4_MAXREAD | nfs4wire::FATTR4_MAXWRITE => v.u64(vfs::fs::MAX_IO as u64),
            nfs4wire::FATTR4_MODE => v.u32(a.mode & 0o7777),
            nfs4wire::FATTR4_NUMLINKS => v.u32(a.nlink),
            nfs4wire::FATTR4_OWNER => v.opaque(o.idmap.owner(a.uid).as_ref()),
            nfs4wire::FATTR4_OWNER_GROUP => v.opaque(o.idmap.group(a.gid).as_ref()),
            nfs4wire::FATTR4_RAWDEV => {
                v.u32(a.rdev.0);
                v.u32(a.rdev.1);
            }
            nfs4wire::FATTR4_SPACE_USED => v.u64(a.used),
            nfs4wire::FATTR4_TIME_ACCESS => time(v, a.atime),
            nfs4wire::FATTR4_TIME_DELTA => time(v, Time { sec: 0, nsec: 1 }),
            nfs4wire::FATTR4_TIME_METADATA => time(v, a.ctime),
            nfs4wire::FATTR4_TIME_MODIFY => time(v, a.mtime),
            nfs4wire::FATTR4_MOUNTED_ON_FILEID => v.u64(o.mounted_on_fileid),
            nfs4wire::FATTR4_SUPPATTR_EXCLCREAT => exclcreat(minor).encode(v),
            nfs4wire::FATTR4_FS_LAYOUT_TYPES => match o.layouts {
                true => {
                    v.u32(1);
                    v.encode(&nfs4wire::Layouttype4::LAYOUT4_FLEX_FILES);
                }
                false => v.u32(0),
            },
            // the I/O size clients should use towards the data servers
            nfs4wire::FATTR4_LAYOUT_BLKSIZE => v.u32(LAYOUT_BLKSIZE),
            nfs4wire::FATTR4_LAYOUT_ALIGNMENT => v.u32(4096),
            nfs4wire::FATTR4_CLONE_BLKSIZE => v.u32(4096),
            nfs4wire::FATTR4_CHANGE_ATTR_TYPE => v.u32(3), // NFS4_CHANGE_TYPE_IS_TIME_METADATA
            nfs4wire::FATTR4_XATTR_SUPPORT => v.bool(true),
            crate::proto::FATTR4_OPEN_ARGUMENTS => encode_open_arguments(v),
            _ => continue,
        }
        got.set(n);
    }
    Fattr4 {
        attrmask: got.into_wire(),
        attr_vals: v.take_bytes(),
    }
}

fn settime(d: &mut Decoder) -> Result<SetTime, Nfsstat4> {
    match d.u32().map_err(|_| Nfsstat4::NFS4ERR_BADXDR)? {
        0 => Ok(SetTime::ServerNow),
        1 => {
            let sec = d.i64().map_err(|_| Nfsstat4::NFS4ERR_BADXDR)?;
            let nsec = d.u32().map_err(|_| Nfsstat4::NFS4ERR_BADXDR)?;
            if nsec >= 1_000_000_000 {
                return Err(Nfsstat4::NFS4ERR_INVAL);
            }
            Ok(SetTime::Client(Time { sec, nsec }))
        }
        _ => Err(Nfsstat4::NFS4ERR_BADXDR),
    }
}

/// What a fattr4 to set asks for.
#[derive(Debug, Clone, Default)]
pub struct Sattr {
    /// The changes the file system makes in one SETATTR.
    pub set: SetAttrs,
    /// An ACL to set (acl, or dacl's ACEs), applied after `set` as knfsd does.
    pub acl: Option<Vec<Ace4>>,
    /// The attributes it names.
    pub bits: Bitmap,
}

/// The changes a fattr4 to set asks for, and the bitmap of the attributes it sets.
pub fn decode_sattr(f: &Fattr4, minor: u32, idmap: &IdMap) -> Result<Sattr, Nfsstat4> {
    let bm = Bitmap(f.attrmask.clone());
    let mut v = Decoder::new(f.attr_vals.clone());
    let sup = supported(minor);
    let mut s = SetAttrs::default();
    let mut acl = None;
    for n in bm.bits() {
        if !sup.has(n) {
            return Err(Nfsstat4::NFS4ERR_ATTRNOTSUPP);
        }
        if !writable(n) {
            return Err(Nfsstat4::NFS4ERR_INVAL);
        }
        let bad = |_| Nfsstat4::NFS4ERR_BADXDR;
        match n {
            nfs4wire::FATTR4_SIZE => s.size = Some(v.u64().map_err(bad)?),
            nfs4wire::FATTR4_ACL => acl = Some(decode_aces(&mut v, idmap)?),
            nfs4wire::FATTR4_DACL => {
                // aclflag4: the inheritance bookkeeping flags have no POSIX counterpart
                v.u32().map_err(bad)?;
                acl = Some(decode_aces(&mut v, idmap)?);
            }
            nfs4wire::FATTR4_MODE => s.mode = Some(v.u32().map_err(bad)? & 0o7777),
            crate::proto::FATTR4_MODE_UMASK => {
                // mode_umask4: the mode (it replaces a mode attribute, as in knfsd) and umask
                s.mode = Some(v.u32().map_err(bad)? & 0o7777);
                s.umask = Some(v.u32().map_err(bad)? & 0o777);
            }
            nfs4wire::FATTR4_OWNER => {
                s.uid = Some(
                    idmap.parse_owner(
                        &v.opaque(nfs4wire::NFS4_OPAQUE_LIMIT as usize)
                            .map_err(bad)?,
                    )?,
                )
            }
            nfs4wire::FATTR4_OWNER_GROUP => {
                s.gid = Some(
                    idmap.parse_group(
                        &v.opaque(nfs4wire::NFS4_OPAQUE_LIMIT as usize)
                            .map_err(bad)?,
                    )?,
                )
            }
            nfs4wire::FATTR4_TIME_ACCESS_SET => s.atime = settime(&mut v)?,
            nfs4wire::FATTR4_TIME_MODIFY_SET => s.mtime = settime(&mut v)?,
            _ => return Err(Nfsstat4::NFS4ERR_ATTRNOTSUPP),
        }
    }
    if v.remaining() != 0 {
        return Err(Nfsstat4::NFS4ERR_BADXDR);
    }
    Ok(Sattr {
        set: s,
        acl,
        bits: bm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_arguments_are_a_4_2_attribute_listing_what_open_accepts() {
        let attr = crate::pseudo::PseudoFs::attr(crate::pseudo::PseudoId::ROOT);
        let none = || None;
        let o = Object {
            attr: &attr,
            fh: b"fh",
            mounted_on_fileid: 1,
            fsstat: &none,
            lease: 90,
            idmap: &IdMap::default(),
            layouts: false,
            acls: false,
            acl: &|| Ok(Vec::new()),
        };
        let req = Bitmap::of(&[crate::proto::FATTR4_OPEN_ARGUMENTS]);
        for minor in [1, 2] {
            assert_eq!(
                supported(minor).has(crate::proto::FATTR4_OPEN_ARGUMENTS),
                minor == 2
            );
            let f = fattr(&req, &o, minor);
            let got = Bitmap(f.attrmask);
            let mut v = Decoder::new(f.attr_vals);
            if minor == 1 {
                assert!(!got.has(crate::proto::FATTR4_OPEN_ARGUMENTS) && v.remaining() == 0);
                continue;
            }
            assert!(got.has(crate::proto::FATTR4_OPEN_ARGUMENTS));
            let maps: Vec<Vec<u32>> = (0..5)
                .map(|_| Bitmap(v.array(8, 4, |d| d.u32()).unwrap()).bits().collect())
                .collect();
            assert_eq!(v.remaining(), 0);
            assert_eq!(
                maps,
                vec![
                    vec![1, 2, 3],
                    vec![0, 1, 2, 3],
                    vec![3, 4],
                    vec![0, 1, 2, 4, 5],
                    vec![0, 1, 2, 3]
                ]
            );
        }
    }

    #[test]
    fn bitmap_ops() {
        let b = Bitmap::of(&[1, 33, 75]);
        assert!(b.has(1) && b.has(33) && b.has(75) && !b.has(2));
        assert_eq!(b.bits().collect::<Vec<_>>(), vec![1, 33, 75]);
        let mut e = Encoder::new();
        Bitmap(vec![1, 0, 0]).encode(&mut e);
        assert_eq!(&e.finish().to_bytes()[..], &[0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn sattr_roundtrip_and_errors() {
        let f = |bits: &[u32], vals: Encoder| Fattr4 {
            attrmask: Bitmap::of(bits).into_wire(),
            attr_vals: vals.finish().to_bytes(),
        };
        let mut v = Encoder::new();
        v.u64(10);
        v.u32(0o644);
        v.opaque(b"1000");
        let set = f(
            &[
                nfs4wire::FATTR4_SIZE,
                nfs4wire::FATTR4_MODE,
                nfs4wire::FATTR4_OWNER,
            ],
            v,
        );
        let s = decode_sattr(&set, 1, &IdMap::default()).unwrap().set;
        assert_eq!((s.size, s.mode, s.uid), (Some(10), Some(0o644), Some(1000)));

        let mut v = Encoder::new();
        v.u32(1);
        let set = f(&[nfs4wire::FATTR4_TYPE], v);
        assert_eq!(
            decode_sattr(&set, 1, &IdMap::default()).err(),
            Some(Nfsstat4::NFS4ERR_INVAL)
        );

        let mut v = Encoder::new();
        v.opaque(b"bob");
        let set = f(&[nfs4wire::FATTR4_OWNER], v);
        assert_eq!(
            decode_sattr(&set, 1, &IdMap::default()).err(),
            Some(Nfsstat4::NFS4ERR_BADOWNER)
        );
        // values left over after the attributes the bitmap names
        let mut v = Encoder::new();
        v.u64(10);
        v.u32(0);
        let set = f(&[nfs4wire::FATTR4_SIZE], v);
        assert_eq!(
            decode_sattr(&set, 1, &IdMap::default()).err(),
            Some(Nfsstat4::NFS4ERR_BADXDR)
        );
    }
}
