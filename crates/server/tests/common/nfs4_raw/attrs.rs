//! Attributes: bitmap4s of attribute numbers, and fattr4 values, whose attr_vals the XDR
//! leaves opaque (their layout is the attribute types', in attribute order).

use nfs4wire as w;
use xdr::{Decode, Decoder, Encode, Encoder};

/// A bitmap4 with the attribute numbers `bits` set.
pub fn bitmap(bits: &[u32]) -> w::Bitmap4 {
    let words = bits.iter().map(|b| b / 32 + 1).max().unwrap_or(0);
    let mut m = vec![0u32; words as usize];
    for b in bits {
        m[(b / 32) as usize] |= 1 << (b % 32);
    }
    m
}

/// The attribute numbers a bitmap4 has set, in ascending order.
pub fn bits(map: &[u32]) -> Vec<u32> {
    assert!(map.len() <= 8, "bitmap of {} words", map.len());
    (0..map.len() as u32 * 32)
        .filter(|b| map[(b / 32) as usize] & (1 << (b % 32)) != 0)
        .collect()
}

/// A fattr4 of (attribute number, value) pairs given in ascending attribute order.
pub fn fattr(vals: &[(u32, &dyn Encode)]) -> w::Fattr4 {
    let mut e = Encoder::new();
    for (_, v) in vals {
        v.encode(&mut e);
    }
    let nums: Vec<u32> = vals.iter().map(|(n, _)| *n).collect();
    w::Fattr4 {
        attrmask: bitmap(&nums),
        attr_vals: e.finish().to_bytes(),
    }
}

/// A utf8str attribute value (owner, owner_group): `bytes::Bytes`, the generated
/// `Utf8string`, has no encoding of its own.
struct Utf8<'a>(&'a str);

impl Encode for Utf8<'_> {
    fn encode(&self, e: &mut Encoder) {
        e.opaque(self.0.as_bytes());
    }
}

/// An ACL attribute value (fattr4_acl): the count, then the ACEs.
struct Aces<'a>(&'a [w::Nfsace4]);

impl Encode for Aces<'_> {
    fn encode(&self, e: &mut Encoder) {
        e.u32(self.0.len() as u32);
        for a in self.0 {
            a.encode(e);
        }
    }
}

/// An nfsace4 (`who` a name like "OWNER@", "1001").
pub fn ace(kind: u32, flag: u32, mask: u32, who: &str) -> w::Nfsace4 {
    w::Nfsace4 {
        r#type: kind,
        flag,
        access_mask: mask,
        who: bytes::Bytes::copy_from_slice(who.as_bytes()),
    }
}

/// The writable attributes tests set (SETATTR, CREATE, and OPEN's createattrs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sattr {
    /// size.
    pub size: Option<w::Fattr4Size>,
    /// acl.
    pub acl: Option<Vec<w::Nfsace4>>,
    /// mode.
    pub mode: Option<w::Fattr4Mode>,
    /// owner (a string like "1000").
    pub owner: Option<String>,
    /// owner_group.
    pub group: Option<String>,
    /// time_access_set.
    pub atime: Option<w::Fattr4TimeAccessSet>,
    /// time_modify_set.
    pub mtime: Option<w::Fattr4TimeModifySet>,
    /// mode_umask (RFC 8275, NFSv4.2 creates): (mode, umask).
    pub mode_umask: Option<(u32, u32)>,
}

/// The mode_umask attribute number (RFC 8275).
pub const FATTR4_MODE_UMASK: u32 = 81;

/// A mode_umask4 value.
struct ModeUmask(u32, u32);

impl Encode for ModeUmask {
    fn encode(&self, e: &mut Encoder) {
        e.u32(self.0);
        e.u32(self.1);
    }
}

impl Sattr {
    /// Only a mode.
    pub fn mode(m: u32) -> Sattr {
        Sattr {
            mode: Some(m),
            ..Default::default()
        }
    }

    /// The fattr4.
    pub fn fattr(&self) -> w::Fattr4 {
        let owner = self.owner.as_deref().map(Utf8);
        let group = self.group.as_deref().map(Utf8);
        let acl = self.acl.as_deref().map(Aces);
        let mode_umask = self.mode_umask.map(|(m, u)| ModeUmask(m, u));
        let vals: [(u32, Option<&dyn Encode>); 8] = [
            (w::FATTR4_SIZE, self.size.as_ref().map(|v| v as _)),
            (w::FATTR4_ACL, acl.as_ref().map(|v| v as _)),
            (w::FATTR4_MODE, self.mode.as_ref().map(|v| v as _)),
            (w::FATTR4_OWNER, owner.as_ref().map(|v| v as _)),
            (w::FATTR4_OWNER_GROUP, group.as_ref().map(|v| v as _)),
            (
                w::FATTR4_TIME_ACCESS_SET,
                self.atime.as_ref().map(|v| v as _),
            ),
            (
                w::FATTR4_TIME_MODIFY_SET,
                self.mtime.as_ref().map(|v| v as _),
            ),
            (FATTR4_MODE_UMASK, mode_umask.as_ref().map(|v| v as _)),
        ];
        let set: Vec<(u32, &dyn Encode)> = vals
            .into_iter()
            .filter_map(|(n, v)| Some((n, v?)))
            .collect();
        fattr(&set)
    }
}

/// The attributes tests read from a fattr4 (others returned make [`Attrs::of`] panic).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    /// type.
    pub ftype: Option<w::Fattr4Type>,
    /// change.
    pub change: Option<w::Fattr4Change>,
    /// size.
    pub size: Option<w::Fattr4Size>,
    /// fsid.
    pub fsid: Option<w::Fattr4Fsid>,
    /// rdattr_error.
    pub rdattr_error: Option<w::Fattr4RdattrError>,
    /// fileid.
    pub fileid: Option<w::Fattr4Fileid>,
    /// mode.
    pub mode: Option<w::Fattr4Mode>,
    /// numlinks.
    pub nlink: Option<w::Fattr4Numlinks>,
    /// owner.
    pub owner: Option<String>,
    /// owner_group.
    pub group: Option<String>,
    /// space_used.
    pub space_used: Option<w::Fattr4SpaceUsed>,
    /// time_access.
    pub atime: Option<w::Fattr4TimeAccess>,
    /// time_metadata.
    pub ctime: Option<w::Fattr4TimeMetadata>,
    /// time_modify.
    pub mtime: Option<w::Fattr4TimeModify>,
    /// mounted_on_fileid.
    pub mounted_on_fileid: Option<w::Fattr4MountedOnFileid>,
    /// supported_attrs (the attribute numbers).
    pub supported: Option<Vec<u32>>,
    /// aclsupport.
    pub aclsupport: Option<w::Fattr4Aclsupport>,
    /// acl.
    pub acl: Option<Vec<w::Nfsace4>>,
    /// dacl.
    pub dacl: Option<w::Nfsacl41>,
}

impl Attrs {
    /// Decodes the values of a fattr4; all of them, or it panics.
    pub fn of(f: &w::Fattr4) -> Attrs {
        fn val<T: Decode>(v: &mut Decoder) -> Option<T> {
            Some(T::decode(v).expect("attribute value"))
        }
        fn aces(v: &mut Decoder) -> Option<Vec<w::Nfsace4>> {
            let n = v.u32().expect("ACE count");
            Some(
                (0..n)
                    .map(|_| w::Nfsace4::decode(v).expect("nfsace4"))
                    .collect(),
            )
        }
        fn utf8(v: &mut Decoder) -> Option<String> {
            Some(v.string(w::NFS4_OPAQUE_LIMIT as usize).expect("utf8str"))
        }
        let mut v = Decoder::new(f.attr_vals.clone());
        let mut a = Attrs::default();
        for b in bits(&f.attrmask) {
            match b {
                w::FATTR4_TYPE => a.ftype = val(&mut v),
                w::FATTR4_CHANGE => a.change = val(&mut v),
                w::FATTR4_SIZE => a.size = val(&mut v),
                w::FATTR4_FSID => a.fsid = val(&mut v),
                w::FATTR4_RDATTR_ERROR => a.rdattr_error = val(&mut v),
                w::FATTR4_FILEID => a.fileid = val(&mut v),
                w::FATTR4_MODE => a.mode = val(&mut v),
                w::FATTR4_NUMLINKS => a.nlink = val(&mut v),
                w::FATTR4_OWNER => a.owner = utf8(&mut v),
                w::FATTR4_OWNER_GROUP => a.group = utf8(&mut v),
                w::FATTR4_SPACE_USED => a.space_used = val(&mut v),
                w::FATTR4_TIME_ACCESS => a.atime = val(&mut v),
                w::FATTR4_TIME_METADATA => a.ctime = val(&mut v),
                w::FATTR4_TIME_MODIFY => a.mtime = val(&mut v),
                w::FATTR4_MOUNTED_ON_FILEID => a.mounted_on_fileid = val(&mut v),
                w::FATTR4_SUPPORTED_ATTRS => {
                    let n = v.u32().expect("bitmap4 length");
                    let words: Vec<u32> = (0..n).map(|_| v.u32().expect("bitmap4 word")).collect();
                    a.supported = Some(bits(&words))
                }
                w::FATTR4_ACLSUPPORT => a.aclsupport = val(&mut v),
                w::FATTR4_ACL => a.acl = aces(&mut v),
                w::FATTR4_DACL => a.dacl = val(&mut v),
                other => panic!("attribute {other} returned but not requested/decodable"),
            }
        }
        assert_eq!(v.remaining(), 0, "bytes left in attr_vals");
        a
    }
}
