//! fattr4: attribute bitmaps, encoding of the attributes we support, decoding of the ones a
//! client may set.

use bytes::Bytes;
use vfs::{Attr, FileType, FsStat, SetAttrs, SetTime, Time};
use xdr::{Decoder, Encoder};

use crate::idmap::IdMap;
use crate::proto::{fattr as fa, ftype, st, NFS4_FHSIZE};

/// Longest bitmap accepted from a client (words).
pub const MAX_BITMAP_WORDS: usize = 1024;
/// Largest attr_vals accepted from a client.
pub const MAX_ATTR_VALS: usize = 64 * 1024;

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
    /// Whether no bit is set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
    /// Decodes a bitmap4.
    pub fn decode(d: &mut Decoder) -> xdr::Result<Self> {
        Ok(Bitmap(d.array(MAX_BITMAP_WORDS, 4, |d| d.u32())?))
    }
    /// Encodes a bitmap4, dropping trailing zero words.
    pub fn encode(&self, e: &mut Encoder) {
        let mut n = self.0.len();
        while n > 0 && self.0[n - 1] == 0 {
            n -= 1;
        }
        e.u32(n as u32);
        for w in &self.0[..n] {
            e.u32(*w);
        }
    }
}

const COMMON: &[u32] = &[
    fa::SUPPORTED_ATTRS,
    fa::TYPE,
    fa::FH_EXPIRE_TYPE,
    fa::CHANGE,
    fa::SIZE,
    fa::LINK_SUPPORT,
    fa::SYMLINK_SUPPORT,
    fa::NAMED_ATTR,
    fa::FSID,
    fa::UNIQUE_HANDLES,
    fa::LEASE_TIME,
    fa::RDATTR_ERROR,
    fa::ACLSUPPORT,
    fa::CANSETTIME,
    fa::CASE_INSENSITIVE,
    fa::CASE_PRESERVING,
    fa::CHOWN_RESTRICTED,
    fa::FILEHANDLE,
    fa::FILEID,
    fa::FILES_AVAIL,
    fa::FILES_FREE,
    fa::FILES_TOTAL,
    fa::FS_LOCATIONS,
    fa::HOMOGENEOUS,
    fa::MAXFILESIZE,
    fa::MAXLINK,
    fa::MAXNAME,
    fa::MAXREAD,
    fa::MAXWRITE,
    fa::MODE,
    fa::NO_TRUNC,
    fa::NUMLINKS,
    fa::OWNER,
    fa::OWNER_GROUP,
    fa::RAWDEV,
    fa::SPACE_AVAIL,
    fa::SPACE_FREE,
    fa::SPACE_TOTAL,
    fa::SPACE_USED,
    fa::TIME_ACCESS,
    fa::TIME_ACCESS_SET,
    fa::TIME_DELTA,
    fa::TIME_METADATA,
    fa::TIME_MODIFY,
    fa::TIME_MODIFY_SET,
    fa::MOUNTED_ON_FILEID,
];

/// The attributes supported in minor version `minor`.
pub fn supported(minor: u32) -> Bitmap {
    let mut b = Bitmap::of(COMMON);
    if minor >= 1 {
        b.set(fa::SUPPATTR_EXCLCREAT);
    }
    if minor >= 2 {
        b.set(fa::CLONE_BLKSIZE);
        b.set(fa::CHANGE_ATTR_TYPE);
        b.set(fa::XATTR_SUPPORT);
        b.set(fa::OPEN_ARGUMENTS);
    }
    b
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

/// Attributes a client may set with EXCLUSIVE4_1 create.
pub fn exclcreat() -> Bitmap {
    Bitmap::of(&[
        fa::SIZE,
        fa::MODE,
        fa::OWNER,
        fa::OWNER_GROUP,
        // not the times: an exclusive create keeps its verifier in them until the client
        // sets them, as the OPEN's attrset asks it to (see `Nfs4::open`)
    ])
}

/// Whether a requested bitmap names a write-only attribute (GETATTR / READDIR must refuse it).
pub fn has_write_only(req: &Bitmap) -> bool {
    req.has(fa::TIME_ACCESS_SET) || req.has(fa::TIME_MODIFY_SET)
}

/// Whether an attribute is writable.
fn writable(n: u32) -> bool {
    matches!(
        n,
        fa::SIZE
            | fa::MODE
            | fa::OWNER
            | fa::OWNER_GROUP
            | fa::TIME_ACCESS_SET
            | fa::TIME_MODIFY_SET
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
}

fn time(e: &mut Encoder, t: Time) {
    e.i64(t.sec);
    e.u32(t.nsec);
}

/// Whether `req` asks for an attribute that writes change (size, change, modify and metadata
/// times, space used): what a write delegation's holder may know better than the file.
pub fn depends_on_data(req: &Bitmap) -> bool {
    [
        fa::CHANGE,
        fa::SIZE,
        fa::TIME_MODIFY,
        fa::TIME_METADATA,
        fa::SPACE_USED,
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
        FileType::Regular => ftype::REG,
        FileType::Directory => ftype::DIR,
        FileType::Block => ftype::BLK,
        FileType::Char => ftype::CHR,
        FileType::Symlink => ftype::LNK,
        FileType::Socket => ftype::SOCK,
        FileType::Fifo => ftype::FIFO,
    }
}

/// Encodes the requested attributes of `o` as fattr4 (bitmap of what is returned + values).
pub fn encode_fattr(e: &mut Encoder, req: &Bitmap, o: &Object<'_>, minor: u32) {
    let sup = supported(minor);
    let mut got = Bitmap::default();
    let mut v = Encoder::new();
    let a = o.attr;
    let mut fs: Option<Option<FsStat>> = None;
    let mut fsstat = || fs.get_or_insert_with(|| (o.fsstat)()).clone();
    for n in req.bits() {
        if !sup.has(n) || n == fa::TIME_ACCESS_SET || n == fa::TIME_MODIFY_SET {
            continue;
        }
        match n {
            fa::SUPPORTED_ATTRS => sup.encode(&mut v),
            fa::TYPE => v.u32(ftype4(a.ftype)),
            fa::FH_EXPIRE_TYPE => v.u32(0),
            fa::CHANGE => v.u64(change(a)),
            fa::SIZE => v.u64(a.size),
            fa::LINK_SUPPORT | fa::SYMLINK_SUPPORT | fa::UNIQUE_HANDLES => v.bool(true),
            fa::NAMED_ATTR => v.bool(false),
            fa::FSID => {
                v.u64(a.fsid);
                v.u64(0);
            }
            fa::LEASE_TIME => v.u32(o.lease),
            fa::RDATTR_ERROR => v.u32(st::OK),
            fa::ACLSUPPORT => v.u32(0),
            fa::CANSETTIME
            | fa::CASE_PRESERVING
            | fa::CHOWN_RESTRICTED
            | fa::HOMOGENEOUS
            | fa::NO_TRUNC => v.bool(true),
            fa::CASE_INSENSITIVE => v.bool(false),
            fa::FILEHANDLE => v.opaque(o.fh),
            fa::FILEID => v.u64(a.fileid),
            fa::FILES_AVAIL
            | fa::FILES_FREE
            | fa::FILES_TOTAL
            | fa::SPACE_AVAIL
            | fa::SPACE_FREE
            | fa::SPACE_TOTAL => {
                let s = fsstat().unwrap_or(FsStat {
                    total_bytes: 0,
                    free_bytes: 0,
                    avail_bytes: 0,
                    total_files: 0,
                    free_files: 0,
                    avail_files: 0,
                });
                v.u64(match n {
                    fa::FILES_AVAIL => s.avail_files,
                    fa::FILES_FREE => s.free_files,
                    fa::FILES_TOTAL => s.total_files,
                    fa::SPACE_AVAIL => s.avail_bytes,
                    fa::SPACE_FREE => s.free_bytes,
                    _ => s.total_bytes,
                })
            }
            fa::FS_LOCATIONS => {
                // fs_root: empty pathname; no locations.
                v.u32(0);
                v.u32(0);
            }
            fa::MAXFILESIZE => v.u64(i64::MAX as u64),
            fa::MAXLINK => v.u32(65000),
            fa::MAXNAME => v.u32(vfs::fs::NAME_MAX as u32),
            fa::MAXREAD | fa::MAXWRITE => v.u64(vfs::fs::MAX_IO as u64),
            fa::MODE => v.u32(a.mode & 0o7777),
            fa::NUMLINKS => v.u32(a.nlink),
            fa::OWNER => v.opaque(o.idmap.owner(a.uid).as_bytes()),
            fa::OWNER_GROUP => v.opaque(o.idmap.group(a.gid).as_bytes()),
            fa::RAWDEV => {
                v.u32(a.rdev.0);
                v.u32(a.rdev.1);
            }
            fa::SPACE_USED => v.u64(a.used),
            fa::TIME_ACCESS => time(&mut v, a.atime),
            fa::TIME_DELTA => time(&mut v, Time { sec: 0, nsec: 1 }),
            fa::TIME_METADATA => time(&mut v, a.ctime),
            fa::TIME_MODIFY => time(&mut v, a.mtime),
            fa::MOUNTED_ON_FILEID => v.u64(o.mounted_on_fileid),
            fa::SUPPATTR_EXCLCREAT => exclcreat().encode(&mut v),
            fa::CLONE_BLKSIZE => v.u32(4096),
            fa::CHANGE_ATTR_TYPE => v.u32(3), // NFS4_CHANGE_TYPE_IS_TIME_METADATA
            fa::XATTR_SUPPORT => v.bool(true),
            fa::OPEN_ARGUMENTS => encode_open_arguments(&mut v),
            _ => continue,
        }
        got.set(n);
    }
    got.encode(e);
    e.opaque(&v.finish().to_bytes());
}

fn settime(d: &mut Decoder) -> Result<SetTime, u32> {
    match d.u32().map_err(|_| st::BADXDR)? {
        0 => Ok(SetTime::ServerNow),
        1 => {
            let sec = d.i64().map_err(|_| st::BADXDR)?;
            let nsec = d.u32().map_err(|_| st::BADXDR)?;
            if nsec >= 1_000_000_000 {
                return Err(st::INVAL);
            }
            Ok(SetTime::Client(Time { sec, nsec }))
        }
        _ => Err(st::BADXDR),
    }
}

/// Decodes a fattr4 to set; returns the changes and the bitmap of attributes set.
pub fn decode_sattr(d: &mut Decoder, minor: u32, idmap: &IdMap) -> Result<(SetAttrs, Bitmap), u32> {
    let bm = Bitmap::decode(d).map_err(|_| st::BADXDR)?;
    let vals = d.opaque(MAX_ATTR_VALS).map_err(|_| st::BADXDR)?;
    let mut v = Decoder::new(vals);
    let sup = supported(minor);
    let mut s = SetAttrs::default();
    for n in bm.bits() {
        if !sup.has(n) {
            return Err(st::ATTRNOTSUPP);
        }
        if !writable(n) {
            return Err(st::INVAL);
        }
        let bad = |_| st::BADXDR;
        match n {
            fa::SIZE => s.size = Some(v.u64().map_err(bad)?),
            fa::MODE => s.mode = Some(v.u32().map_err(bad)? & 0o7777),
            fa::OWNER => s.uid = Some(idmap.parse_owner(&v.opaque(NFS4_FHSIZE * 8).map_err(bad)?)?),
            fa::OWNER_GROUP => {
                s.gid = Some(idmap.parse_group(&v.opaque(NFS4_FHSIZE * 8).map_err(bad)?)?)
            }
            fa::TIME_ACCESS_SET => s.atime = settime(&mut v)?,
            fa::TIME_MODIFY_SET => s.mtime = settime(&mut v)?,
            _ => return Err(st::ATTRNOTSUPP),
        }
    }
    if v.remaining() != 0 {
        return Err(st::BADXDR);
    }
    Ok((s, bm))
}

/// Decodes a fattr4 for VERIFY / NVERIFY: the bitmap and the raw values.
pub fn decode_raw(d: &mut Decoder) -> Result<(Bitmap, Bytes), u32> {
    let bm = Bitmap::decode(d).map_err(|_| st::BADXDR)?;
    let vals = d.opaque(MAX_ATTR_VALS).map_err(|_| st::BADXDR)?;
    Ok((bm, vals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_arguments_are_a_4_2_attribute_listing_what_open_accepts() {
        let attr = crate::pseudo::PseudoFs::new(&[]).attr(0);
        let none = || None;
        let o = Object {
            attr: &attr,
            fh: b"fh",
            mounted_on_fileid: 1,
            fsstat: &none,
            lease: 90,
            idmap: &IdMap::default(),
        };
        let req = Bitmap::of(&[fa::OPEN_ARGUMENTS]);
        for minor in [1, 2] {
            assert_eq!(supported(minor).has(fa::OPEN_ARGUMENTS), minor == 2);
            let mut e = Encoder::new();
            encode_fattr(&mut e, &req, &o, minor);
            let mut d = Decoder::new(e.finish().to_bytes());
            let got = Bitmap::decode(&mut d).unwrap();
            let mut v = Decoder::new(d.opaque(MAX_ATTR_VALS).unwrap());
            if minor == 1 {
                assert!(!got.has(fa::OPEN_ARGUMENTS) && v.remaining() == 0);
                continue;
            }
            assert!(got.has(fa::OPEN_ARGUMENTS));
            let maps: Vec<Vec<u32>> = (0..5)
                .map(|_| Bitmap::decode(&mut v).unwrap().bits().collect())
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
        let mut e = Encoder::new();
        Bitmap::of(&[fa::SIZE, fa::MODE, fa::OWNER]).encode(&mut e);
        let mut v = Encoder::new();
        v.u64(10);
        v.u32(0o644);
        v.opaque(b"1000");
        e.opaque(&v.finish().to_bytes());
        let mut d = Decoder::new(e.finish().to_bytes());
        let (s, _) = decode_sattr(&mut d, 1, &IdMap::default()).unwrap();
        assert_eq!((s.size, s.mode, s.uid), (Some(10), Some(0o644), Some(1000)));

        let mut e = Encoder::new();
        Bitmap::of(&[fa::TYPE]).encode(&mut e);
        e.opaque(&[0, 0, 0, 1]);
        assert_eq!(
            decode_sattr(
                &mut Decoder::new(e.finish().to_bytes()),
                1,
                &IdMap::default()
            )
            .err(),
            Some(st::INVAL)
        );

        let mut e = Encoder::new();
        Bitmap::of(&[fa::OWNER]).encode(&mut e);
        let mut v = Encoder::new();
        v.opaque(b"bob");
        e.opaque(&v.finish().to_bytes());
        assert_eq!(
            decode_sattr(
                &mut Decoder::new(e.finish().to_bytes()),
                1,
                &IdMap::default()
            )
            .err(),
            Some(st::BADOWNER)
        );
    }
}
