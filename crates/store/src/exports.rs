//! Which identity serves which exported directory, cluster-wide: two identities must never
//! export one file tree at once. Each identity's head keeps its own lock table and share
//! reservations, and its own grace period; two heads serving the same files would grant
//! conflicting locks, and one's grace would not hold back the other's new state. Identities
//! therefore own disjoint trees, and a head registers its identity's exports before it serves:
//! a directory equal to, inside or above one another identity registered is refused.
//!
//! The registry is one row (`/rnfs/cluster/exports/...`), changed with [`Store::update`], so
//! two heads registering overlapping trees at once cannot both succeed. An identity's entries
//! stay after its head stops (a standby of the same identity takes them over); an
//! administrator moves a tree to another identity with [`release`].

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use crate::{Etcd, EtcdConfig, Store, StoreError, Table};

const TABLE: Table = Table::new("exports");
const KEY: &[u8] = b"registry";

/// Why an identity may not serve its exports.
#[derive(Debug, thiserror::Error)]
pub enum ExportsError {
    /// Another identity serves the same tree, or one inside or around it.
    #[error("{path} overlaps {other_path}, exported by identity {other}")]
    Overlap {
        /// This identity's export.
        path: PathBuf,
        /// The other identity.
        other: String,
        /// Its export.
        other_path: PathBuf,
    },
    /// The cluster did not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The registry: (identity, path) lines.
fn decode(v: Option<&[u8]>) -> Vec<(String, PathBuf)> {
    let text = v.map(String::from_utf8_lossy).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(id, p)| (id.to_string(), PathBuf::from(p)))
        .collect()
}

fn encode(rows: &[(String, PathBuf)]) -> Vec<u8> {
    let mut out = String::new();
    for (id, p) in rows {
        out.push_str(id);
        out.push('\t');
        out.push_str(&p.to_string_lossy());
        out.push('\n');
    }
    out.into_bytes()
}

/// Whether one tree holds the other (or they are the same).
fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn registry(cfg: &EtcdConfig) -> Result<Etcd, StoreError> {
    Etcd::new(EtcdConfig {
        endpoints: cfg.endpoints.clone(),
        prefix: "/rnfs/cluster".into(),
        timeout: cfg.timeout,
    })
}

/// Registers `paths` (canonical) as the exports of identity `id`, replacing what it had;
/// refused, with nothing written, when one overlaps another identity's.
pub fn register(cfg: &EtcdConfig, id: &str, paths: &[PathBuf]) -> Result<(), ExportsError> {
    let conflict = RefCell::new(None);
    registry(cfg)?.update(TABLE, KEY, &|old| {
        let rows = decode(old);
        *conflict.borrow_mut() = paths.iter().find_map(|p| {
            rows.iter()
                .find(|(other, q)| other != id && overlaps(p, q))
                .map(|(other, q)| ExportsError::Overlap {
                    path: p.clone(),
                    other: other.clone(),
                    other_path: q.clone(),
                })
        });
        if conflict.borrow().is_some() {
            return old.map(<[u8]>::to_vec).unwrap_or_default();
        }
        let mut rows: Vec<_> = rows.into_iter().filter(|(other, _)| other != id).collect();
        rows.extend(paths.iter().map(|p| (id.to_string(), p.clone())));
        encode(&rows)
    })?;
    match conflict.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Forgets the exports of identity `id`, so that another identity may take its trees.
pub fn release(cfg: &EtcdConfig, id: &str) -> Result<(), StoreError> {
    registry(cfg)?.update(TABLE, KEY, &|old| {
        let rows: Vec<_> = decode(old)
            .into_iter()
            .filter(|(other, _)| other != id)
            .collect();
        encode(&rows)
    })?;
    Ok(())
}

/// Every registered (identity, export).
pub fn list(cfg: &EtcdConfig) -> Result<Vec<(String, PathBuf)>, StoreError> {
    Ok(registry(cfg)?
        .load(TABLE)?
        .into_iter()
        .find(|(k, _)| k == KEY)
        .map(|(_, v)| decode(Some(&v)))
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::EtcdCluster;
    use std::time::Duration;

    fn cfg(c: &EtcdCluster, id: &str) -> EtcdConfig {
        EtcdConfig {
            endpoints: c.endpoints(),
            prefix: format!("/rnfs/id/{id}"),
            timeout: Duration::from_secs(3),
        }
    }

    #[test]
    fn identities_own_disjoint_trees() {
        let Some(c) = EtcdCluster::start(1) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let p = |s: &str| PathBuf::from(s);
        register(&cfg(&c, "a"), "a", &[p("/srv/a"), p("/srv/shared/x")]).unwrap();
        // the same identity again (a restart, a standby): its own trees are no conflict
        register(&cfg(&c, "a"), "a", &[p("/srv/a"), p("/srv/shared/x")]).unwrap();
        register(&cfg(&c, "b"), "b", &[p("/srv/b"), p("/srv/shared/y")]).unwrap();
        for (bad, other) in [
            ("/srv/a", "/srv/a"),
            ("/srv/a/sub", "/srv/a"),
            ("/srv/shared", "/srv/shared/x"),
        ] {
            match register(&cfg(&c, "b"), "b", &[p("/srv/b"), p(bad)]) {
                Err(ExportsError::Overlap {
                    other: o,
                    other_path,
                    ..
                }) => assert_eq!((o.as_str(), other_path), ("a", p(other))),
                r => panic!("{bad}: {r:?}"),
            }
        }
        // a refused registration wrote nothing: b keeps what it had
        let mut all = list(&cfg(&c, "a")).unwrap();
        all.sort();
        assert_eq!(
            all,
            vec![
                ("a".into(), p("/srv/a")),
                ("a".into(), p("/srv/shared/x")),
                ("b".into(), p("/srv/b")),
                ("b".into(), p("/srv/shared/y")),
            ]
        );
        // once a lets go, b may take a's tree
        release(&cfg(&c, "a"), "a").unwrap();
        register(&cfg(&c, "b"), "b", &[p("/srv/b"), p("/srv/a")]).unwrap();
    }
}
