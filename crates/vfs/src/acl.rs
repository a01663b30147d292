//! POSIX ACLs as Linux keeps them: the `system.posix_acl_access` and `system.posix_acl_default`
//! extended attributes (version 2: a 4-byte header, then 8 bytes per entry, little-endian), the
//! validity rules the kernel enforces (`posix_acl_valid`), and the permission check it makes
//! with them (`posix_acl_permission`), so that checks rnfsd makes itself before I/O through
//! cached descriptors agree with the ones the kernel makes for calls run as the caller.

use std::ffi::CStr;

use crate::cred::Creds;

/// Most entries an ACL may have here: the NFSACL protocol's limit (Linux `NFS_ACL_MAX_ENTRIES`),
/// applied to every ACL rnfsd reads or writes so that NFSv3 and NFSv4 agree on what fits.
pub const MAX_ENTRIES: usize = 1024;

/// Read permission in an entry's `perm`.
pub const READ: u8 = 4;
/// Write permission.
pub const WRITE: u8 = 2;
/// Execute (search, for a directory) permission.
pub const EXECUTE: u8 = 1;

const XATTR_VERSION: u32 = 2;
const UNDEFINED_ID: u32 = u32::MAX;

/// Which of a file's two ACLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclKind {
    /// The ACL that decides access to the file.
    Access,
    /// A directory's ACL that new files and directories in it inherit.
    Default,
}

impl AclKind {
    /// The extended attribute Linux keeps this ACL in.
    pub fn xattr_name(self) -> &'static CStr {
        match self {
            AclKind::Access => c"system.posix_acl_access",
            AclKind::Default => c"system.posix_acl_default",
        }
    }
}

/// Whom an entry is for. The order of the variants is the order entries must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tag {
    /// The file's owner.
    UserObj,
    /// A named user.
    User(u32),
    /// The file's group.
    GroupObj,
    /// A named group.
    Group(u32),
    /// The most any named entry or the file's group may be granted.
    Mask,
    /// Everyone else.
    Other,
}

impl Tag {
    fn code(self) -> (u16, u32) {
        match self {
            Tag::UserObj => (0x01, UNDEFINED_ID),
            Tag::User(u) => (0x02, u),
            Tag::GroupObj => (0x04, UNDEFINED_ID),
            Tag::Group(g) => (0x08, g),
            Tag::Mask => (0x10, UNDEFINED_ID),
            Tag::Other => (0x20, UNDEFINED_ID),
        }
    }

    fn from_code(tag: u16, id: u32) -> Result<Self, AclError> {
        Ok(match tag {
            0x01 => Tag::UserObj,
            0x02 => Tag::User(id),
            0x04 => Tag::GroupObj,
            0x08 => Tag::Group(id),
            0x10 => Tag::Mask,
            0x20 => Tag::Other,
            _ => return Err(AclError::Invalid),
        })
    }
}

/// One entry: whom, and which of read, write, execute ([`READ`], [`WRITE`], [`EXECUTE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ace {
    /// Whom it is for.
    pub tag: Tag,
    /// rwx bits.
    pub perm: u8,
}

/// Why an ACL was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// Malformed, or not an ACL the kernel would accept (order, duplicates, a missing entry).
    #[error("invalid POSIX ACL")]
    Invalid,
    /// More entries than [`MAX_ENTRIES`].
    #[error("POSIX ACL has too many entries")]
    TooBig,
}

/// A valid POSIX ACL: entries in the kernel's order, each named user and group once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PosixAcl {
    entries: Vec<Ace>,
}

impl PosixAcl {
    /// An ACL of these entries in any order, sorted into the kernel's; refused if invalid.
    pub fn new(mut entries: Vec<Ace>) -> Result<Self, AclError> {
        if entries.len() > MAX_ENTRIES {
            return Err(AclError::TooBig);
        }
        entries.sort_by_key(|e| e.tag);
        Self::valid(entries)
    }

    /// The three-entry ACL a mode stands for (owner, group, other).
    pub fn from_mode(mode: u32) -> Self {
        let p = |shift: u32| ((mode >> shift) & 7) as u8;
        PosixAcl {
            entries: vec![
                Ace {
                    tag: Tag::UserObj,
                    perm: p(6),
                },
                Ace {
                    tag: Tag::GroupObj,
                    perm: p(3),
                },
                Ace {
                    tag: Tag::Other,
                    perm: p(0),
                },
            ],
        }
    }

    /// Checks order and completeness as the kernel's `posix_acl_valid` does.
    fn valid(entries: Vec<Ace>) -> Result<Self, AclError> {
        let mut prev: Option<Tag> = None;
        let (mut user_obj, mut group_obj, mut other, mut mask, mut named) =
            (false, false, false, false, false);
        for e in &entries {
            if e.perm & !7 != 0 {
                return Err(AclError::Invalid);
            }
            // strictly increasing: the kind order, and ids ascending within named users/groups
            if prev.is_some_and(|p| p >= e.tag) {
                return Err(AclError::Invalid);
            }
            prev = Some(e.tag);
            match e.tag {
                Tag::UserObj => user_obj = true,
                Tag::GroupObj => group_obj = true,
                Tag::Other => other = true,
                Tag::Mask => mask = true,
                Tag::User(_) | Tag::Group(_) => named = true,
            }
        }
        if !(user_obj && group_obj && other) || (named && !mask) {
            return Err(AclError::Invalid);
        }
        Ok(PosixAcl { entries })
    }

    /// Parses the value of a `system.posix_acl_*` extended attribute.
    pub fn from_xattr(b: &[u8]) -> Result<Self, AclError> {
        let body = b.get(4..).ok_or(AclError::Invalid)?;
        if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) != XATTR_VERSION || body.len() % 8 != 0 {
            return Err(AclError::Invalid);
        }
        if body.len() / 8 > MAX_ENTRIES {
            return Err(AclError::TooBig);
        }
        let entries = body
            .chunks_exact(8)
            .map(|c| {
                let tag = u16::from_le_bytes([c[0], c[1]]);
                let perm = u16::from_le_bytes([c[2], c[3]]);
                let id = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
                Ok(Ace {
                    tag: Tag::from_code(tag, id)?,
                    perm: u8::try_from(perm).map_err(|_| AclError::Invalid)?,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::valid(entries)
    }

    /// The value of a `system.posix_acl_*` extended attribute holding this ACL.
    pub fn to_xattr(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(4 + 8 * self.entries.len());
        v.extend_from_slice(&XATTR_VERSION.to_le_bytes());
        for e in &self.entries {
            let (tag, id) = e.tag.code();
            v.extend_from_slice(&tag.to_le_bytes());
            v.extend_from_slice(&u16::from(e.perm).to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        v
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[Ace] {
        &self.entries
    }

    /// The permissions of the entry with this tag, if there is one.
    pub fn perm(&self, tag: Tag) -> Option<u8> {
        self.entries.iter().find(|e| e.tag == tag).map(|e| e.perm)
    }

    /// Whether the ACL says no more than a mode could (three entries).
    pub fn is_minimal(&self) -> bool {
        self.entries.len() == 3
    }

    /// The permission bits of the mode that goes with this ACL: owner, group (the mask when
    /// there is one, as the kernel shows it), other.
    pub fn mode_bits(&self) -> u32 {
        let p = |t| u32::from(self.perm(t).unwrap_or(0));
        let group = self.perm(Tag::Mask).map_or(p(Tag::GroupObj), u32::from);
        (p(Tag::UserObj) << 6) | (group << 3) | p(Tag::Other)
    }

    /// Whether `c` may do `want` (rwx bits) on a file owned by `owner`:`group` that has this
    /// access ACL, by the kernel's rules: the owner's entry for the owner; else a named user's
    /// entry, limited by the mask; else every group entry the caller is in that grants it all
    /// (limited by the mask), denied if the caller is in a group but none grants it; else
    /// other. The superuser is not special here (see `fs::perm`).
    pub fn permits(&self, owner: u32, group: u32, c: &Creds, want: u8) -> bool {
        let masked = |perm: u8| {
            let mask = self.perm(Tag::Mask).unwrap_or(7);
            perm & mask & want == want
        };
        let mut in_a_group = false;
        for e in &self.entries {
            match e.tag {
                Tag::UserObj if c.uid == owner => return e.perm & want == want,
                Tag::User(u) if u == c.uid => return masked(e.perm),
                Tag::GroupObj if c.in_group(group) => {
                    in_a_group = true;
                    if e.perm & want == want {
                        return masked(e.perm);
                    }
                }
                Tag::Group(g) if c.in_group(g) => {
                    in_a_group = true;
                    if e.perm & want == want {
                        return masked(e.perm);
                    }
                }
                Tag::Other => return !in_a_group && e.perm & want == want,
                _ => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ace(tag: Tag, perm: u8) -> Ace {
        Ace { tag, perm }
    }

    fn creds(uid: u32, gid: u32, groups: &[u32]) -> Creds {
        Creds {
            uid,
            gid,
            groups: Arc::from(groups),
        }
    }

    fn sample() -> PosixAcl {
        PosixAcl::new(vec![
            ace(Tag::Other, 0),
            ace(Tag::Group(300), 5),
            ace(Tag::User(2000), 7),
            ace(Tag::User(1500), 0),
            ace(Tag::GroupObj, 4),
            ace(Tag::Mask, 6),
            ace(Tag::UserObj, 6),
        ])
        .unwrap()
    }

    #[test]
    fn entries_are_sorted_into_the_kernels_order() {
        let tags: Vec<Tag> = sample().entries().iter().map(|e| e.tag).collect();
        assert_eq!(
            tags,
            vec![
                Tag::UserObj,
                Tag::User(1500),
                Tag::User(2000),
                Tag::GroupObj,
                Tag::Group(300),
                Tag::Mask,
                Tag::Other
            ]
        );
    }

    #[test]
    fn xattr_round_trip_and_layout() {
        let a = sample();
        let x = a.to_xattr();
        assert_eq!(x.len(), 4 + 8 * 7);
        assert_eq!(&x[..4], &[2, 0, 0, 0]);
        // USER_OBJ rw-, id undefined
        assert_eq!(&x[4..12], &[1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff]);
        // the first named user: tag 2, perm 0, uid 1500
        assert_eq!(&x[12..20], &[2, 0, 0, 0, 0xdc, 0x05, 0, 0]);
        assert_eq!(PosixAcl::from_xattr(&x).unwrap(), a);
        assert_eq!(a.mode_bits(), 0o660);
        assert_eq!(PosixAcl::from_mode(0o754).mode_bits(), 0o754);
    }

    #[test]
    fn invalid_acls_are_refused() {
        let bad = |e: Vec<Ace>| PosixAcl::new(e).unwrap_err();
        // a named entry without a mask
        assert_eq!(
            bad(vec![
                ace(Tag::UserObj, 7),
                ace(Tag::User(5), 7),
                ace(Tag::GroupObj, 7),
                ace(Tag::Other, 7)
            ]),
            AclError::Invalid
        );
        // no other entry
        assert_eq!(
            bad(vec![ace(Tag::UserObj, 7), ace(Tag::GroupObj, 7)]),
            AclError::Invalid
        );
        // the same user twice
        assert_eq!(
            bad(vec![
                ace(Tag::UserObj, 7),
                ace(Tag::User(5), 7),
                ace(Tag::User(5), 1),
                ace(Tag::GroupObj, 7),
                ace(Tag::Mask, 7),
                ace(Tag::Other, 7)
            ]),
            AclError::Invalid
        );
        // a permission bit beyond rwx
        assert_eq!(
            bad(vec![
                ace(Tag::UserObj, 8),
                ace(Tag::GroupObj, 7),
                ace(Tag::Other, 7)
            ]),
            AclError::Invalid
        );
        let too_many = (0..=MAX_ENTRIES as u32)
            .map(|u| ace(Tag::User(u), 7))
            .collect();
        assert_eq!(bad(too_many), AclError::TooBig);
        // xattr values: bad version, a cut entry, an unknown tag, unsorted entries
        let mut x = sample().to_xattr();
        assert!(PosixAcl::from_xattr(&x[..x.len() - 1]).is_err());
        assert!(PosixAcl::from_xattr(&x[..3]).is_err());
        x[4] = 0x40;
        assert!(PosixAcl::from_xattr(&x).is_err());
        let mut x = sample().to_xattr();
        x[0] = 1;
        assert!(PosixAcl::from_xattr(&x).is_err());
        let mut x = sample().to_xattr();
        x.swap(4, 12);
        assert!(PosixAcl::from_xattr(&x).is_err());
    }

    #[test]
    fn permission_follows_the_kernels_algorithm() {
        let a = sample();
        let (owner, group) = (1000, 100);
        // the owner: USER_OBJ rw-, no mask applied
        assert!(a.permits(owner, group, &creds(1000, 1, &[]), READ | WRITE));
        assert!(!a.permits(owner, group, &creds(1000, 1, &[]), EXECUTE));
        // named user 2000 has rwx, limited by the mask rw-
        assert!(a.permits(owner, group, &creds(2000, 1, &[]), READ | WRITE));
        assert!(!a.permits(owner, group, &creds(2000, 1, &[]), EXECUTE));
        // named user 1500 has nothing, even in the owning group (a user entry decides)
        assert!(!a.permits(owner, group, &creds(1500, 100, &[]), READ));
        // the owning group r--
        assert!(a.permits(owner, group, &creds(7, 100, &[]), READ));
        assert!(!a.permits(owner, group, &creds(7, 100, &[]), WRITE));
        // group 300 r-x, masked to r--
        assert!(a.permits(owner, group, &creds(7, 1, &[300]), READ));
        assert!(!a.permits(owner, group, &creds(7, 1, &[300]), EXECUTE));
        // in a matching group that does not grant it: denied, other is not consulted
        let open_other = PosixAcl::new(vec![
            ace(Tag::UserObj, 7),
            ace(Tag::GroupObj, 0),
            ace(Tag::Other, 7),
        ])
        .unwrap();
        assert!(!open_other.permits(owner, group, &creds(7, 100, &[]), READ));
        assert!(open_other.permits(owner, group, &creds(7, 1, &[]), READ));
        // other: nothing
        assert!(!a.permits(owner, group, &creds(7, 1, &[]), READ));
    }
}
