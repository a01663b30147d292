//! The NFSv4 pseudo file system: read-only directories joining the exports under one root.

use std::path::{Component, Path};

use bytes::Bytes;
use nfs4wire::Nfsstat4;
use vfs::{Attr, FileType, Time};

/// A pseudo directory's name in handles: a hash of its path, so that a handle names the same
/// directory after the tree is rebuilt (an export reload, a restart). The root is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PseudoId(pub u64);

impl PseudoId {
    /// The root of the pseudo file system.
    pub const ROOT: PseudoId = PseudoId(0);

    fn of_path(comps: &[Bytes]) -> PseudoId {
        if comps.is_empty() {
            return PseudoId::ROOT;
        }
        PseudoId(path_hash(b"dir", comps).max(2))
    }
}

fn path_hash(kind: &[u8], comps: &[Bytes]) -> u64 {
    use std::hash::Hasher;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x7073_6575_646f, 0x6673);
    h.write(kind);
    for c in comps {
        h.write(b"/");
        h.write(c);
    }
    h.finish()
}

/// Where a name in a pseudo directory leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Another pseudo directory.
    Pseudo(PseudoId),
    /// The root of an export (its handle).
    Export(Bytes),
}

/// One pseudo directory.
#[derive(Debug, Clone)]
pub struct PseudoDir {
    /// Its id.
    pub id: PseudoId,
    /// Parent directory (the root is its own parent).
    pub parent: PseudoId,
    /// Entries.
    pub children: Vec<(Bytes, Target)>,
}

/// One export as the pseudo file system needs it.
#[derive(Debug, Clone)]
pub struct ExportRoot {
    /// Its path on the server.
    pub path: std::path::PathBuf,
    /// Its root handle.
    pub fh: Bytes,
    /// Whether it is the NFSv4 root (`fsid=0` / `fsid=root`).
    pub v4_root: bool,
}

/// The pseudo tree.
#[derive(Debug, Clone)]
pub struct PseudoFs {
    /// Directories; the first is the root.
    dirs: Vec<PseudoDir>,
    /// Fileids of the junctions (the pseudo directory entry an export is mounted on), by the
    /// export's root handle.
    junctions: Vec<(Bytes, u64)>,
    /// The export that is the NFSv4 root (`fsid=0`), or one exported as `/`.
    pub root_export: Option<Bytes>,
}

/// File-system id of the pseudo file system (distinct from any device number).
pub const PSEUDO_FSID: u64 = u64::MAX - 1;
const MARK: [u8; 2] = [0xf0, b'P'];

fn components(path: &Path) -> Vec<Bytes> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(Bytes::copy_from_slice(n.as_encoded_bytes())),
            _ => None,
        })
        .collect()
}

impl PseudoFs {
    /// Builds the tree from the exports. With an NFSv4 root export (`fsid=0`, as in knfsd),
    /// that export is the root and the others are reached through it only where they lie
    /// inside it (as its directories); without one, pseudo directories lead to every export.
    pub fn new(exports: &[ExportRoot]) -> Self {
        let mut fs = PseudoFs {
            dirs: vec![PseudoDir {
                id: PseudoId::ROOT,
                parent: PseudoId::ROOT,
                children: Vec::new(),
            }],
            junctions: Vec::new(),
            root_export: None,
        };
        if let Some(root) = exports.iter().find(|e| e.v4_root) {
            fs.root_export = Some(root.fh.clone());
            for e in exports.iter().filter(|e| !e.path.starts_with(&root.path)) {
                tracing::warn!(export = %e.path.display(), root = %root.path.display(),
                    "outside the NFSv4 root export (fsid=0): not reachable over NFSv4");
            }
            return fs;
        }
        for e in exports {
            let comps = components(&e.path);
            if comps.is_empty() {
                fs.root_export = Some(e.fh.clone());
                continue;
            }
            let mut cur = 0usize;
            for (i, c) in comps.iter().enumerate() {
                let last = i + 1 == comps.len();
                let found = fs.dirs[cur]
                    .children
                    .iter()
                    .find(|(n, _)| n == c)
                    .map(|(_, t)| t.clone());
                match (found, last) {
                    (Some(Target::Pseudo(next)), false) => {
                        cur = fs.index(next).unwrap_or(0);
                    }
                    (Some(_), _) => break, // an export already covers this path
                    (None, true) => {
                        fs.dirs[cur]
                            .children
                            .push((c.clone(), Target::Export(e.fh.clone())));
                        fs.junctions
                            .push((e.fh.clone(), path_hash(b"junction", &comps) | 1 << 63));
                    }
                    (None, false) => {
                        let id = PseudoId::of_path(&comps[..=i]);
                        let parent = fs.dirs[cur].id;
                        fs.dirs[cur].children.push((c.clone(), Target::Pseudo(id)));
                        fs.dirs.push(PseudoDir {
                            id,
                            parent,
                            children: Vec::new(),
                        });
                        cur = fs.dirs.len() - 1;
                    }
                }
            }
        }
        fs
    }

    fn index(&self, id: PseudoId) -> Option<usize> {
        self.dirs.iter().position(|d| d.id == id)
    }

    /// Pseudo directory `id`, if the tree has it.
    pub fn dir(&self, id: PseudoId) -> Option<&PseudoDir> {
        self.dirs.iter().find(|d| d.id == id)
    }

    /// The handle of pseudo directory `id`.
    pub fn fh(id: PseudoId) -> Bytes {
        let mut v = MARK.to_vec();
        v.extend_from_slice(&id.0.to_be_bytes());
        Bytes::from(v)
    }

    /// The pseudo directory a handle names, if it is a pseudo handle: BADHANDLE when it is
    /// malformed, STALE when the tree no longer has it (an export was removed).
    pub fn parse(&self, fh: &[u8]) -> Option<Result<PseudoId, Nfsstat4>> {
        if fh.len() < 2 || fh[..2] != MARK {
            return None;
        }
        let Ok(id) = <[u8; 8]>::try_from(&fh[2..]) else {
            return Some(Err(if fh.len() == 6 {
                // a handle of the tree before ids were hashes: it once named something
                Nfsstat4::NFS4ERR_STALE
            } else {
                Nfsstat4::NFS4ERR_BADHANDLE
            }));
        };
        let id = PseudoId(u64::from_be_bytes(id));
        Some(match self.dir(id) {
            Some(_) => Ok(id),
            None => Err(Nfsstat4::NFS4ERR_STALE),
        })
    }

    /// Looks a name up in a pseudo directory.
    pub fn lookup(&self, id: PseudoId, name: &[u8]) -> Option<Target> {
        self.dir(id)?
            .children
            .iter()
            .find(|(n, _)| &n[..] == name)
            .map(|(_, t)| t.clone())
    }

    /// The pseudo directory containing the export whose root handle is `fh`.
    pub fn parent_of_export(&self, fh: &[u8]) -> Option<PseudoId> {
        self.dirs
            .iter()
            .find(|d| {
                d.children
                    .iter()
                    .any(|(_, t)| matches!(t, Target::Export(x) if &x[..] == fh))
            })
            .map(|d| d.id)
    }

    /// The fileid of the pseudo-fs directory an export is mounted on (its junction): distinct
    /// from every pseudo directory's fileid, and the same after the tree is rebuilt.
    pub fn junction_fileid(&self, fh: &[u8]) -> Option<u64> {
        self.junctions
            .iter()
            .find(|(x, _)| &x[..] == fh)
            .map(|(_, id)| *id)
    }

    /// Attributes of a pseudo directory.
    pub fn attr(id: PseudoId) -> Attr {
        let t = Time { sec: 0, nsec: 0 };
        Attr {
            ftype: FileType::Directory,
            mode: 0o555,
            nlink: 2,
            uid: 0,
            gid: 0,
            size: 4096,
            used: 4096,
            rdev: (0, 0),
            fsid: PSEUDO_FSID,
            // the root is 1 (0 is no fileid); the others are hashes below 2^63, apart from
            // the junctions' fileids above it
            fileid: if id == PseudoId::ROOT {
                1
            } else {
                id.0 & !(1 << 63) | 2
            },
            atime: t,
            mtime: t,
            ctime: t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export(path: &str, fh: &Bytes, v4_root: bool) -> ExportRoot {
        ExportRoot {
            path: path.into(),
            fh: fh.clone(),
            v4_root,
        }
    }

    #[test]
    fn tree() {
        let a = Bytes::from_static(b"A");
        let b = Bytes::from_static(b"B");
        let fs = PseudoFs::new(&[export("/srv/a", &a, false), export("/srv/x/b", &b, false)]);
        let srv = match fs.lookup(PseudoId::ROOT, b"srv") {
            Some(Target::Pseudo(i)) => i,
            other => panic!("{other:?}"),
        };
        assert_eq!(fs.lookup(srv, b"a"), Some(Target::Export(a.clone())));
        assert_eq!(fs.parent_of_export(&a), Some(srv));
        assert_eq!(fs.dir(srv).map(|d| d.parent), Some(PseudoId::ROOT));
        assert_eq!(fs.parse(&PseudoFs::fh(srv)), Some(Ok(srv)));
        assert_eq!(
            fs.parse(&PseudoFs::fh(PseudoId(99))),
            Some(Err(Nfsstat4::NFS4ERR_STALE))
        );
        assert_eq!(
            fs.parse(b"\xf0Pabc"),
            Some(Err(Nfsstat4::NFS4ERR_BADHANDLE))
        );
        assert_eq!(fs.parse(b"\x01abc"), None);
        assert!(fs.root_export.is_none());
        let ja = fs.junction_fileid(&a).expect("junction of a");
        let jb = fs.junction_fileid(&b).expect("junction of b");
        assert_ne!(ja, jb);
        assert_ne!(ja, PseudoFs::attr(srv).fileid);
    }

    #[test]
    fn handles_and_fileids_survive_a_rebuild_with_other_exports() {
        let a = Bytes::from_static(b"A");
        let b = Bytes::from_static(b"B");
        let c = Bytes::from_static(b"C");
        let before = PseudoFs::new(&[export("/srv/a", &a, false), export("/data/x/b", &b, false)]);
        // /srv/a is gone, /data/c appears ahead of /data/x/b
        let after = PseudoFs::new(&[export("/data/c", &c, false), export("/data/x/b", &b, false)]);
        let x = |fs: &PseudoFs| {
            let Some(Target::Pseudo(data)) = fs.lookup(PseudoId::ROOT, b"data") else {
                panic!("no /data");
            };
            let Some(Target::Pseudo(x)) = fs.lookup(data, b"x") else {
                panic!("no /data/x");
            };
            x
        };
        assert_eq!(x(&before), x(&after));
        assert_eq!(after.parse(&PseudoFs::fh(x(&before))), Some(Ok(x(&after))));
        assert_eq!(before.junction_fileid(&b), after.junction_fileid(&b));
        let Some(Target::Pseudo(srv)) = before.lookup(PseudoId::ROOT, b"srv") else {
            panic!("no /srv");
        };
        assert_eq!(
            after.parse(&PseudoFs::fh(srv)),
            Some(Err(Nfsstat4::NFS4ERR_STALE))
        );
    }

    #[test]
    fn fsid_0_export_is_the_root() {
        let r = Bytes::from_static(b"R");
        let h = Bytes::from_static(b"H");
        let o = Bytes::from_static(b"O");
        let fs = PseudoFs::new(&[
            export("/srv/nfs4/home", &h, false),
            export("/srv/nfs4", &r, true),
            export("/other", &o, false),
        ]);
        assert_eq!(fs.root_export, Some(r));
        assert_eq!(fs.lookup(PseudoId::ROOT, b"other"), None);
        assert_eq!(fs.lookup(PseudoId::ROOT, b"srv"), None);
    }
}
