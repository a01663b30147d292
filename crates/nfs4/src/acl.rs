//! NFSv4 ACLs on the file system's POSIX ACLs, by the mapping knfsd uses (after the POSIX-draft
//! mapping of draft-ietf-nfsv4-acl-mapping): a POSIX ACL becomes ALLOW entries with DENY
//! entries before them where a later entry would otherwise grant what an earlier one does not,
//! a directory's default ACL the same entries again flagged inherit-only; an NFSv4 ACL becomes
//! the POSIX ACL that grants each principal what the NFSv4 ACL would, or less (never more).
//! docs/acl.md lists the rules and the choices made where the RFCs leave one.

use nfs4wire::{
    ACE4_ACCESS_ALLOWED_ACE_TYPE, ACE4_ACCESS_DENIED_ACE_TYPE, ACE4_APPEND_DATA, ACE4_DELETE_CHILD,
    ACE4_DIRECTORY_INHERIT_ACE, ACE4_EXECUTE, ACE4_FILE_INHERIT_ACE, ACE4_IDENTIFIER_GROUP,
    ACE4_INHERIT_ONLY_ACE, ACE4_READ_ACL, ACE4_READ_ATTRIBUTES, ACE4_READ_DATA, ACE4_SYNCHRONIZE,
    ACE4_WRITE_ACL, ACE4_WRITE_ATTRIBUTES, ACE4_WRITE_DATA,
};
use vfs::acl::{Ace, PosixAcl, Tag, EXECUTE, READ, WRITE};

/// Whom an NFSv4 ACE is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// `OWNER@`.
    Owner,
    /// `GROUP@`.
    Group,
    /// `EVERYONE@`.
    Everyone,
    /// A user by uid.
    User(u32),
    /// A group by gid (the ACE has ACE4_IDENTIFIER_GROUP).
    NamedGroup(u32),
}

/// An NFSv4 ACE with its principal resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ace4 {
    /// acetype4: ALLOW or DENY (others are refused when set).
    pub kind: u32,
    /// aceflag4.
    pub flag: u32,
    /// acemask4.
    pub mask: u32,
    /// Whom it is for.
    pub who: Who,
}

/// Why an NFSv4 ACL cannot be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapError {
    /// An ACE type other than ALLOW and DENY, a flag outside those POSIX ACLs can express, or
    /// inheritance flags on a file: NFS4ERR_ATTRNOTSUPP, as knfsd answers.
    Unsupported,
    /// The POSIX ACL would have more entries than [`vfs::acl::MAX_ENTRIES`].
    TooBig,
}

/// The special principals' names.
pub const OWNER: &[u8] = b"OWNER@";
/// `GROUP@`.
pub const GROUP: &[u8] = b"GROUP@";
/// `EVERYONE@`.
pub const EVERYONE: &[u8] = b"EVERYONE@";

const READ_MODE: u32 = ACE4_READ_DATA;
const WRITE_MODE: u32 = ACE4_WRITE_DATA | ACE4_APPEND_DATA;
const EXECUTE_MODE: u32 = ACE4_EXECUTE;
/// What every principal is granted whatever its bits: reading attributes and the ACL.
const ANYONE_MODE: u32 = ACE4_READ_ATTRIBUTES | ACE4_READ_ACL | ACE4_SYNCHRONIZE;
/// What the owner alone is granted: changing attributes and the ACL.
const OWNER_MODE: u32 = ACE4_WRITE_ATTRIBUTES | ACE4_WRITE_ACL;
const INHERIT: u32 = ACE4_FILE_INHERIT_ACE | ACE4_DIRECTORY_INHERIT_ACE;
const SUPPORTED_FLAGS: u32 = INHERIT | ACE4_INHERIT_ONLY_ACE | ACE4_IDENTIFIER_GROUP;

/// The NFSv4 access bits rwx `perm` stands for in a DENY (no attribute bits).
fn deny_mask(perm: u8, dir: bool) -> u32 {
    let mut m = 0;
    if perm & READ != 0 {
        m |= READ_MODE;
    }
    if perm & WRITE != 0 {
        m |= WRITE_MODE;
        if dir {
            m |= ACE4_DELETE_CHILD;
        }
    }
    if perm & EXECUTE != 0 {
        m |= EXECUTE_MODE;
    }
    m
}

/// The NFSv4 access bits rwx `perm` stands for in an ALLOW.
fn allow_mask(perm: u8, dir: bool, owner: bool) -> u32 {
    deny_mask(perm, dir) | ANYONE_MODE | if owner { OWNER_MODE } else { 0 }
}

/// rwx from NFSv4 access bits: a bit only when every NFSv4 bit it stands for is there, so
/// a POSIX ACL made from an NFSv4 one never grants more.
fn perm_of(mask: u32, dir: bool) -> u8 {
    let write = WRITE_MODE | if dir { ACE4_DELETE_CHILD } else { 0 };
    let mut p = 0;
    if mask & READ_MODE == READ_MODE {
        p |= READ;
    }
    if mask & write == write {
        p |= WRITE;
    }
    if mask & EXECUTE_MODE == EXECUTE_MODE {
        p |= EXECUTE;
    }
    p
}

/// The NFSv4 ACL of a file: its access ACL (or the one its mode stands for), and for a directory
/// its default ACL as inherit-only entries.
pub fn to_nfs4(access: &PosixAcl, default: Option<&PosixAcl>, dir: bool) -> Vec<Ace4> {
    let mut out =
        Vec::with_capacity(2 * (access.entries().len() + default.map_or(0, |d| d.entries().len())));
    push_one(&mut out, access, dir, 0);
    if let Some(d) = default.filter(|_| dir) {
        push_one(&mut out, d, dir, INHERIT | ACE4_INHERIT_ONLY_ACE);
    }
    out
}

/// One POSIX ACL's entries, in knfsd's order: owner (DENY, ALLOW), named users (DENY, ALLOW
/// each), the groups' ALLOWs then their DENYs (a user may be in several), everyone.
fn push_one(out: &mut Vec<Ace4>, acl: &PosixAcl, dir: bool, flag: u32) {
    let mask = acl.perm(Tag::Mask).unwrap_or(7);
    let owner = acl.perm(Tag::UserObj).unwrap_or(0);
    let group = acl.perm(Tag::GroupObj).unwrap_or(0) & mask;
    let other = acl.perm(Tag::Other).unwrap_or(0);
    let (mut users, mut groups) = (0u8, 0u8);
    for e in acl.entries() {
        match e.tag {
            Tag::User(_) => users |= e.perm & mask,
            Tag::Group(_) => groups |= e.perm & mask,
            _ => {}
        }
    }
    let mut ace = |kind, extra: u32, mask: u32, who| {
        out.push(Ace4 {
            kind,
            flag: flag | extra,
            mask,
            who,
        })
    };
    // deny the owner only what later entries would grant
    let deny = !owner & (users | group | groups | other);
    if deny & 7 != 0 {
        ace(
            ACE4_ACCESS_DENIED_ACE_TYPE,
            0,
            deny_mask(deny, dir),
            Who::Owner,
        );
    }
    ace(
        ACE4_ACCESS_ALLOWED_ACE_TYPE,
        0,
        allow_mask(owner, dir, true),
        Who::Owner,
    );
    for e in acl.entries() {
        if let Tag::User(uid) = e.tag {
            let deny = !(e.perm & mask) & (groups | group | other);
            if deny & 7 != 0 {
                ace(
                    ACE4_ACCESS_DENIED_ACE_TYPE,
                    0,
                    deny_mask(deny, dir),
                    Who::User(uid),
                );
            }
            ace(
                ACE4_ACCESS_ALLOWED_ACE_TYPE,
                0,
                allow_mask(e.perm & mask, dir, false),
                Who::User(uid),
            );
        }
    }
    ace(
        ACE4_ACCESS_ALLOWED_ACE_TYPE,
        0,
        allow_mask(group, dir, false),
        Who::Group,
    );
    for e in acl.entries() {
        if let Tag::Group(gid) = e.tag {
            let m = allow_mask(e.perm & mask, dir, false);
            ace(
                ACE4_ACCESS_ALLOWED_ACE_TYPE,
                ACE4_IDENTIFIER_GROUP,
                m,
                Who::NamedGroup(gid),
            );
        }
    }
    let deny = !group & other;
    if deny & 7 != 0 {
        ace(
            ACE4_ACCESS_DENIED_ACE_TYPE,
            0,
            deny_mask(deny, dir),
            Who::Group,
        );
    }
    for e in acl.entries() {
        if let Tag::Group(gid) = e.tag {
            let deny = !(e.perm & mask) & other;
            if deny & 7 != 0 {
                let m = deny_mask(deny, dir);
                ace(
                    ACE4_ACCESS_DENIED_ACE_TYPE,
                    ACE4_IDENTIFIER_GROUP,
                    m,
                    Who::NamedGroup(gid),
                );
            }
        }
    }
    ace(
        ACE4_ACCESS_ALLOWED_ACE_TYPE,
        0,
        allow_mask(other, dir, false),
        Who::Everyone,
    );
}

/// NFSv4 bits allowed and denied to one principal so far (the first ACE to mention a bit
/// decides it).
#[derive(Debug, Clone, Copy, Default)]
struct Bits {
    allow: u32,
    deny: u32,
}

impl Bits {
    fn allow(&mut self, m: u32) {
        self.allow |= m & !self.deny;
    }
    fn deny(&mut self, m: u32) {
        self.deny |= m & !self.allow;
    }
    /// [`Bits::allow`] or [`Bits::deny`], as the ACE's type says.
    fn apply(&mut self, allow: bool, m: u32) {
        if allow {
            self.allow(m)
        } else {
            self.deny(m)
        }
    }
}

/// What an NFSv4 ACL grants each principal, walked in order.
#[derive(Debug, Default)]
struct State {
    empty: bool,
    owner: Bits,
    group: Bits,
    other: Bits,
    everyone: Bits,
    users: Vec<(u32, Bits)>,
    groups: Vec<(u32, Bits)>,
}

impl State {
    fn new() -> Self {
        State {
            empty: true,
            ..Default::default()
        }
    }

    /// The principal's entry, starting from what EVERYONE@ has been given or refused so far.
    fn named(list: &mut Vec<(u32, Bits)>, id: u32, everyone: Bits) -> &mut Bits {
        let i = match list.iter().position(|(u, _)| *u == id) {
            Some(i) => i,
            None => {
                list.push((id, everyone));
                list.len() - 1
            }
        };
        &mut list[i].1
    }

    /// A group's DENY reaches everyone who may be in the group: the owner, the named users
    /// and groups, and what EVERYONE@ grants later.
    fn deny_possible_members(&mut self, d: u32) {
        self.owner.deny(d);
        self.everyone.deny(d);
        for (_, b) in self.users.iter_mut().chain(self.groups.iter_mut()) {
            b.deny(d);
        }
    }

    fn apply(&mut self, a: &Ace4) {
        self.empty = false;
        let allow = a.kind == ACE4_ACCESS_ALLOWED_ACE_TYPE;
        let m = a.mask;
        match a.who {
            Who::Owner => self.owner.apply(allow, m),
            Who::User(uid) => {
                let b = Self::named(&mut self.users, uid, self.everyone);
                b.apply(allow, m);
                if !allow {
                    // what the user is refused, the owner (who might be that user) is too
                    let d = b.deny;
                    self.owner.deny(d);
                }
            }
            Who::Group => {
                self.group.apply(allow, m);
                if !allow {
                    self.deny_possible_members(self.group.deny);
                }
            }
            Who::NamedGroup(gid) => {
                let b = Self::named(&mut self.groups, gid, self.everyone);
                b.apply(allow, m);
                if !allow {
                    let d = b.deny;
                    self.group.deny(d);
                    self.deny_possible_members(d);
                }
            }
            Who::Everyone => {
                for b in [
                    &mut self.owner,
                    &mut self.group,
                    &mut self.other,
                    &mut self.everyone,
                ] {
                    b.apply(allow, m);
                }
                for (_, b) in self.users.iter_mut().chain(self.groups.iter_mut()) {
                    b.apply(allow, m);
                }
            }
        }
    }

    /// The POSIX ACL granting what the state allows; None for an inheritable state no ACE
    /// went into (the directory then has no default ACL).
    fn to_posix(&self, dir: bool, default: bool) -> Result<Option<PosixAcl>, MapError> {
        if self.empty && default {
            return Ok(None);
        }
        if self.users.len() + self.groups.len() + 4 > vfs::acl::MAX_ENTRIES {
            return Err(MapError::TooBig);
        }
        let p = |b: &Bits| perm_of(b.allow, dir);
        let mut e = vec![
            Ace {
                tag: Tag::UserObj,
                perm: p(&self.owner),
            },
            Ace {
                tag: Tag::GroupObj,
                perm: p(&self.group),
            },
            Ace {
                tag: Tag::Other,
                perm: p(&self.other),
            },
        ];
        if !self.users.is_empty() || !self.groups.is_empty() {
            // the mask: all that the named entries and the owning group are allowed
            let mut mask = self.group.allow;
            for (uid, b) in &self.users {
                e.push(Ace {
                    tag: Tag::User(*uid),
                    perm: p(b),
                });
                mask |= b.allow;
            }
            for (gid, b) in &self.groups {
                e.push(Ace {
                    tag: Tag::Group(*gid),
                    perm: p(b),
                });
                mask |= b.allow;
            }
            e.push(Ace {
                tag: Tag::Mask,
                perm: perm_of(mask, dir),
            });
        }
        PosixAcl::new(e).map(Some).map_err(|_| MapError::TooBig)
    }
}

/// The POSIX access ACL and (for a directory) default ACL an NFSv4 ACL maps to. ACEs with
/// inheritance flags go to the default ACL (and, unless inherit-only, to the access ACL too);
/// a directory whose NFSv4 ACL has none gets no default ACL (None: it is removed).
pub fn from_nfs4(aces: &[Ace4], dir: bool) -> Result<(PosixAcl, Option<PosixAcl>), MapError> {
    let mut effective = State::new();
    let mut inherited = State::new();
    for a in aces {
        if a.kind != ACE4_ACCESS_ALLOWED_ACE_TYPE && a.kind != ACE4_ACCESS_DENIED_ACE_TYPE {
            return Err(MapError::Unsupported);
        }
        if a.flag & !SUPPORTED_FLAGS != 0 {
            return Err(MapError::Unsupported);
        }
        if a.flag & INHERIT == 0 {
            effective.apply(a);
            continue;
        }
        if !dir {
            return Err(MapError::Unsupported);
        }
        // FILE_INHERIT alone or DIRECTORY_INHERIT alone is taken as both (RFC 3530 allows it)
        inherited.apply(a);
        if a.flag & ACE4_INHERIT_ONLY_ACE == 0 {
            effective.apply(a);
        }
    }
    let access = effective
        .to_posix(dir, false)?
        .ok_or(MapError::Unsupported)?;
    Ok((access, inherited.to_posix(dir, true)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ace(tag: Tag, perm: u8) -> Ace {
        Ace { tag, perm }
    }

    fn allow(who: Who, mask: u32) -> Ace4 {
        Ace4 {
            kind: ACE4_ACCESS_ALLOWED_ACE_TYPE,
            flag: if matches!(who, Who::NamedGroup(_)) {
                ACE4_IDENTIFIER_GROUP
            } else {
                0
            },
            mask,
            who,
        }
    }

    fn deny(who: Who, mask: u32) -> Ace4 {
        Ace4 {
            kind: ACE4_ACCESS_DENIED_ACE_TYPE,
            ..allow(who, mask)
        }
    }

    const R: u32 = READ_MODE;
    const W: u32 = WRITE_MODE;
    const X: u32 = EXECUTE_MODE;

    #[test]
    fn a_mode_maps_to_knfsds_aces() {
        // 0640 on a file: owner rw-, group r--, other ---
        let aces = to_nfs4(&PosixAcl::from_mode(0o640), None, false);
        assert_eq!(
            aces,
            vec![
                allow(Who::Owner, R | W | ANYONE_MODE | OWNER_MODE),
                allow(Who::Group, R | ANYONE_MODE),
                allow(Who::Everyone, ANYONE_MODE),
            ]
        );
        // 0604: other may read what the group may not: the group is denied it first
        let aces = to_nfs4(&PosixAcl::from_mode(0o604), None, false);
        assert_eq!(
            aces,
            vec![
                allow(Who::Owner, R | W | ANYONE_MODE | OWNER_MODE),
                allow(Who::Group, ANYONE_MODE),
                deny(Who::Group, R),
                allow(Who::Everyone, R | ANYONE_MODE),
            ]
        );
        // 0077: the owner is denied what everyone else gets
        let aces = to_nfs4(&PosixAcl::from_mode(0o077), None, true);
        assert_eq!(aces[0], deny(Who::Owner, R | W | ACE4_DELETE_CHILD | X));
    }

    #[test]
    fn named_entries_are_limited_by_the_mask_and_default_acls_inherit_only() {
        let access = PosixAcl::new(vec![
            ace(Tag::UserObj, 7),
            ace(Tag::User(1001), 7),
            ace(Tag::GroupObj, 5),
            ace(Tag::Group(50), 6),
            ace(Tag::Mask, 5),
            ace(Tag::Other, 0),
        ])
        .unwrap();
        let default = PosixAcl::from_mode(0o750);
        let aces = to_nfs4(&access, Some(&default), true);
        assert!(aces.contains(&allow(Who::User(1001), R | X | ANYONE_MODE)));
        assert!(aces.contains(&allow(Who::NamedGroup(50), R | ANYONE_MODE)));
        let inherited: Vec<&Ace4> = aces.iter().filter(|a| a.flag & INHERIT != 0).collect();
        assert_eq!(inherited.len(), 3);
        assert!(inherited
            .iter()
            .all(|a| a.flag & ACE4_INHERIT_ONLY_ACE != 0));
        // and back: the same effective permissions (named entries come back masked, as
        // through knfsd: NFSv4 ACEs carry what is granted, not what the mask hides)
        let (a2, d2) = from_nfs4(&aces, true).unwrap();
        let masked = PosixAcl::new(vec![
            ace(Tag::UserObj, 7),
            ace(Tag::User(1001), 5),
            ace(Tag::GroupObj, 5),
            ace(Tag::Group(50), 4),
            ace(Tag::Mask, 5),
            ace(Tag::Other, 0),
        ])
        .unwrap();
        assert_eq!(a2, masked);
        assert_eq!(d2.as_ref(), Some(&default));
    }

    #[test]
    fn every_mode_and_acl_round_trips() {
        for mode in 0..0o1000 {
            for dir in [false, true] {
                let a = PosixAcl::from_mode(mode);
                let (back, d) = from_nfs4(&to_nfs4(&a, None, dir), dir).unwrap();
                assert_eq!(
                    (back.mode_bits(), d),
                    (mode, None),
                    "mode {mode:o} dir {dir}"
                );
            }
        }
        for (u, g, m, o) in [(7, 5, 7, 0), (0, 7, 6, 4), (4, 0, 0, 7), (6, 6, 2, 1)] {
            let a = PosixAcl::new(vec![
                ace(Tag::UserObj, 6),
                ace(Tag::User(5), u),
                ace(Tag::GroupObj, g),
                ace(Tag::Group(7), 7),
                ace(Tag::Mask, m),
                ace(Tag::Other, o),
            ])
            .unwrap();
            let (back, _) = from_nfs4(&to_nfs4(&a, None, false), false).unwrap();
            // what each principal may do is kept (entries are stored masked)
            for (who, uid, gid) in [(0, 1000, 1), (1, 5, 1), (2, 9, 100), (3, 9, 7), (4, 9, 1)] {
                let c = vfs::Creds {
                    uid,
                    gid,
                    groups: std::sync::Arc::from([]),
                };
                for want in [READ, WRITE, EXECUTE] {
                    assert_eq!(
                        back.permits(1000, 100, &c, want),
                        a.permits(1000, 100, &c, want),
                        "principal {who} want {want} in {a:?} -> {back:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_deny_takes_away_what_a_later_allow_gives() {
        // alice is denied write, then everyone may read and write
        let aces = [
            deny(Who::User(1001), W),
            allow(Who::Owner, R | W),
            allow(Who::Everyone, R | W),
        ];
        let (a, d) = from_nfs4(&aces, false).unwrap();
        assert_eq!(d, None);
        assert_eq!(a.perm(Tag::User(1001)), Some(READ));
        assert_eq!(a.perm(Tag::Other), Some(READ | WRITE));
        // the owner is denied too: it might be alice
        assert_eq!(a.perm(Tag::UserObj), Some(READ));
        let c = |uid| vfs::Creds {
            uid,
            gid: 1,
            groups: std::sync::Arc::from([]),
        };
        assert!(!a.permits(1000, 100, &c(1001), WRITE));
        assert!(a.permits(1000, 100, &c(1002), WRITE));
    }

    #[test]
    fn what_posix_cannot_hold_is_refused() {
        let mut audit = allow(Who::Everyone, R);
        audit.kind = nfs4wire::ACE4_SYSTEM_AUDIT_ACE_TYPE;
        assert_eq!(from_nfs4(&[audit], false), Err(MapError::Unsupported));
        let mut inherited = allow(Who::Everyone, R);
        inherited.flag = ACE4_FILE_INHERIT_ACE;
        assert_eq!(from_nfs4(&[inherited], false), Err(MapError::Unsupported));
        assert!(from_nfs4(&[inherited], true).is_ok());
        let mut odd = allow(Who::Everyone, R);
        odd.flag = nfs4wire::ACE4_NO_PROPAGATE_INHERIT_ACE;
        assert_eq!(from_nfs4(&[odd], true), Err(MapError::Unsupported));
        let many: Vec<Ace4> = (0..2000).map(|u| allow(Who::User(u), R)).collect();
        assert_eq!(from_nfs4(&many, false), Err(MapError::TooBig));
        // an empty ACL leaves nobody anything
        let (a, _) = from_nfs4(&[], false).unwrap();
        assert_eq!(a.mode_bits(), 0);
    }
}
