//! owner and owner_group strings (RFC 7530 section 5.9, RFC 8881 section 5.9).
//!
//! By default they are numeric ("1000"), which is what the Linux client sends and expects with
//! AUTH_SYS (its `nfs4_disable_idmapping` default). With a domain configured, rnfsd sends
//! `name@domain` from the server's user and group databases (NSS), as knfsd does with idmapd,
//! falling back to the number for ids without a name; it accepts names of its domain and
//! numbers in SETATTR and CREATE, and answers NFS4ERR_BADOWNER for anything else.

use std::collections::HashMap;

use parking_lot::Mutex;

use nfs4wire::Nfsstat4;

/// Lookups kept per direction before the cache is emptied (names change rarely, but they do).
const CACHE_MAX: usize = 4096;

/// How ids map to owner strings.
#[derive(Debug, Default)]
pub struct IdMap {
    domain: Option<String>,
    users: Mutex<HashMap<u32, String>>,
    groups: Mutex<HashMap<u32, String>>,
}

impl IdMap {
    /// Numeric strings, or `name@domain` when a domain is given.
    pub fn new(domain: Option<String>) -> Self {
        Self {
            domain: domain.filter(|d| !d.is_empty()),
            ..Default::default()
        }
    }

    /// The owner string of `uid`.
    pub fn owner(&self, uid: u32) -> IdName {
        self.name(uid, &self.users, vfs::nss::user_name)
    }

    /// The owner_group string of `gid`.
    pub fn group(&self, gid: u32) -> IdName {
        self.name(gid, &self.groups, vfs::nss::group_name)
    }

    /// The uid an owner string names.
    pub fn parse_owner(&self, s: &[u8]) -> Result<u32, Nfsstat4> {
        self.parse(s, vfs::nss::user_id)
    }

    /// The gid an owner_group string names.
    pub fn parse_group(&self, s: &[u8]) -> Result<u32, Nfsstat4> {
        self.parse(s, vfs::nss::group_id)
    }

    fn name(
        &self,
        id: u32,
        cache: &Mutex<HashMap<u32, String>>,
        lookup: fn(u32) -> Option<String>,
    ) -> IdName {
        let Some(domain) = &self.domain else {
            return IdName::number(id);
        };
        if let Some(s) = cache.lock().get(&id) {
            return IdName::Name(s.clone());
        }
        if vfs::nowait::active() {
            // NSS may ask a directory server: not on a thread that must not wait (the call is
            // dropped and runs again where it may)
            let _ = vfs::nowait::give_up();
            return IdName::number(id);
        }
        let s = lookup(id).map_or_else(|| id.to_string(), |n| format!("{n}@{domain}"));
        let mut c = cache.lock();
        if c.len() >= CACHE_MAX {
            c.clear();
        }
        c.insert(id, s.clone());
        IdName::Name(s)
    }

    fn parse(&self, s: &[u8], lookup: fn(&str) -> Option<u32>) -> Result<u32, Nfsstat4> {
        if s.is_empty() {
            return Err(Nfsstat4::NFS4ERR_INVAL);
        }
        let s = std::str::from_utf8(s).map_err(|_| Nfsstat4::NFS4ERR_BADOWNER)?;
        let (who, dom) = match s.split_once('@') {
            Some((w, d)) => (w, Some(d)),
            None => (s, None),
        };
        if let Ok(id) = who.parse::<u32>() {
            return Ok(id);
        }
        let (Some(domain), Some(dom)) = (&self.domain, dom) else {
            return Err(Nfsstat4::NFS4ERR_BADOWNER);
        };
        if !dom.eq_ignore_ascii_case(domain) {
            return Err(Nfsstat4::NFS4ERR_BADOWNER);
        }
        lookup(who).ok_or(Nfsstat4::NFS4ERR_BADOWNER)
    }
}

/// An owner or owner_group string. The numeric default is kept inline: every attribute reply
/// and every entry of a listing carries two, and allocating them cost more than encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdName {
    /// The decimal digits of an id (at most 10 for a u32), and how many there are.
    Number([u8; 10], usize),
    /// `name@domain`, or a number from the cache.
    Name(String),
}

impl IdName {
    /// The decimal string of `id`.
    fn number(mut id: u32) -> Self {
        let mut digits = [0u8; 10];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (id % 10) as u8;
            id /= 10;
            if id == 0 {
                break;
            }
        }
        digits.copy_within(at.., 0);
        IdName::Number(digits, 10 - at)
    }
}

impl std::ops::Deref for IdName {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            // digits only: always UTF-8
            IdName::Number(d, n) => std::str::from_utf8(&d[..*n]).unwrap_or_default(),
            IdName::Name(s) => s,
        }
    }
}

impl AsRef<[u8]> for IdName {
    fn as_ref(&self) -> &[u8] {
        (**self).as_bytes()
    }
}

impl PartialEq<&str> for IdName {
    fn eq(&self, o: &&str) -> bool {
        **self == **o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_by_default() {
        let m = IdMap::new(None);
        assert_eq!(m.owner(0), "0");
        assert_eq!(m.group(1000), "1000");
        assert_eq!(m.parse_owner(b"1000"), Ok(1000));
        assert_eq!(m.parse_owner(b"1000@any.domain"), Ok(1000));
        assert_eq!(
            m.parse_owner(b"root@example.org"),
            Err(Nfsstat4::NFS4ERR_BADOWNER)
        );
        assert_eq!(m.parse_owner(b""), Err(Nfsstat4::NFS4ERR_INVAL));
        assert_eq!(m.parse_group(b"\xff"), Err(Nfsstat4::NFS4ERR_BADOWNER));
    }

    #[test]
    fn a_name_not_cached_is_not_looked_up_where_the_call_must_not_wait() {
        use vfs::nowait::without_blocking;
        let m = IdMap::new(Some("example.org".into()));
        assert!(
            without_blocking(|| m.owner(0)).is_none(),
            "NSS may block: given up"
        );
        assert_eq!(m.owner(0), "root@example.org");
        assert_eq!(
            without_blocking(|| m.owner(0)).as_deref(),
            Some("root@example.org"),
            "cached names need no lookup"
        );
        let numeric = IdMap::new(None);
        assert_eq!(without_blocking(|| numeric.group(7)).as_deref(), Some("7"));
    }

    #[test]
    fn names_with_a_domain() {
        let m = IdMap::new(Some("example.org".into()));
        // root and its group exist on every Linux system; an unnamed id stays numeric
        assert_eq!(m.owner(0), "root@example.org");
        assert_eq!(m.group(0), "root@example.org");
        assert_eq!(m.owner(3_999_999_999), "3999999999");
        let numeric = IdMap::new(None);
        for id in [0, 7, 10, 99, 1000, 65534, 4_294_967_295] {
            assert_eq!(&*numeric.owner(id), id.to_string());
        }
        assert_eq!(m.parse_owner(b"root@example.org"), Ok(0));
        assert_eq!(m.parse_owner(b"root@EXAMPLE.ORG"), Ok(0));
        assert_eq!(m.parse_group(b"root@example.org"), Ok(0));
        assert_eq!(m.parse_owner(b"42"), Ok(42));
        assert_eq!(
            m.parse_owner(b"root@other.org"),
            Err(Nfsstat4::NFS4ERR_BADOWNER)
        );
        assert_eq!(m.parse_owner(b"root"), Err(Nfsstat4::NFS4ERR_BADOWNER));
        assert_eq!(
            m.parse_owner(b"no-such-user-xyz@example.org"),
            Err(Nfsstat4::NFS4ERR_BADOWNER)
        );
    }
}
