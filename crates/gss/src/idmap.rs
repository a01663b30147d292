//! Principal to local user: krb5's `auth_to_local` rules (through the GSS-API's local name of
//! the principal) give a user name, the passwd and group databases its ids and groups. A
//! principal with no local name or no such user maps to none: the export's anonymous
//! identity, as knfsd's gssd and gssproxy do. Machine principals (`nfs/host`, `host/host`,
//! `root/host`) have two components, which the default rules do not map: they are anonymous
//! too unless the site's krb5.conf maps them.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sunrpc::gss::mech::UnixIdent;

/// How long a mapping is kept before the databases are asked again.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
/// Mappings kept at most.
const MAX_ENTRIES: usize = 4096;

/// The principal-to-identity cache: every context of a principal established within the TTL
/// maps through one look-up.
pub struct IdentityCache {
    ttl: Duration,
    map: Mutex<HashMap<String, (Instant, Option<UnixIdent>)>>,
}

impl Default for IdentityCache {
    fn default() -> Self {
        Self::new(DEFAULT_TTL)
    }
}

impl IdentityCache {
    /// A cache keeping mappings for `ttl`.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            map: Mutex::new(HashMap::new()),
        }
    }

    /// The identity of `principal`, whose local name (auth_to_local) is `local`.
    pub fn lookup(&self, principal: &str, local: Option<&str>) -> Option<UnixIdent> {
        let now = Instant::now();
        if let Some((at, v)) = self.map.lock().get(principal) {
            if now.duration_since(*at) < self.ttl {
                return v.clone();
            }
        }
        // the databases are asked without the lock held (NSS may go to LDAP)
        let v = local.and_then(ident_of);
        let mut m = self.map.lock();
        if m.len() >= MAX_ENTRIES {
            m.retain(|_, (at, _)| now.duration_since(*at) < self.ttl);
            if m.len() >= MAX_ENTRIES {
                m.clear();
            }
        }
        m.insert(principal.to_string(), (now, v.clone()));
        v
    }

    /// Forgets every mapping (the passwd or group database changed: `rnfsctl reload`).
    pub fn clear(&self) {
        self.map.lock().clear();
    }
}

/// The ids and groups of local user `name`.
fn ident_of(name: &str) -> Option<UnixIdent> {
    let user = nix::unistd::User::from_name(name).ok()??;
    let cname = std::ffi::CString::new(name).ok()?;
    let gids = nix::unistd::getgrouplist(&cname, user.gid)
        .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
        .unwrap_or_else(|_| vec![user.gid.as_raw()]);
    Some(UnixIdent {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
        gids,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_map_to_their_ids_and_strangers_to_none() {
        let c = IdentityCache::default();
        let root = c
            .lookup("root@X", Some("root"))
            .expect("root is in every passwd");
        assert_eq!((root.uid, root.gid), (0, 0));
        assert!(root.gids.contains(&0));
        assert_eq!(c.lookup("nobody-here@X", Some("no-such-user-rnfs")), None);
        assert_eq!(c.lookup("nfs/host@X", None), None);
    }

    #[test]
    fn a_mapping_is_kept_for_its_ttl() {
        let c = IdentityCache::new(Duration::from_secs(60));
        assert!(c.lookup("p@X", Some("root")).is_some());
        // within the TTL the cached answer holds whatever local name comes now
        assert!(c.lookup("p@X", None).is_some());
        let c = IdentityCache::new(Duration::ZERO);
        assert!(c.lookup("p@X", Some("root")).is_some());
        assert!(c.lookup("p@X", None).is_none());
    }
}
