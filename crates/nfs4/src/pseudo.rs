//! The NFSv4 pseudo file system: read-only directories joining the exports under one root.

use std::path::{Component, Path};

use bytes::Bytes;
use vfs::{Attr, FileType, Time};

/// Where a name in a pseudo directory leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Another pseudo directory.
    Pseudo(usize),
    /// The root of an export (its handle).
    Export(Bytes),
}

/// One pseudo directory.
#[derive(Debug, Clone)]
pub struct PseudoDir {
    /// Parent directory (the root is its own parent).
    pub parent: usize,
    /// Entries.
    pub children: Vec<(Bytes, Target)>,
}

/// The pseudo tree.
#[derive(Debug, Clone)]
pub struct PseudoFs {
    /// Directories; index 0 is the root.
    pub dirs: Vec<PseudoDir>,
    /// When an export is `/`, the root is that export.
    pub root_export: Option<Bytes>,
}

/// File-system id of the pseudo file system (distinct from any device number).
pub const PSEUDO_FSID: u64 = u64::MAX - 1;
const MARK: [u8; 2] = [0xf0, b'P'];

impl PseudoFs {
    /// Builds the tree from export paths and root handles.
    pub fn new(exports: &[(std::path::PathBuf, Bytes)]) -> Self {
        let mut fs = PseudoFs {
            dirs: vec![PseudoDir {
                parent: 0,
                children: Vec::new(),
            }],
            root_export: None,
        };
        for (path, fh) in exports {
            let comps: Vec<Bytes> = Path::new(path)
                .components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(Bytes::copy_from_slice(n.as_encoded_bytes())),
                    _ => None,
                })
                .collect();
            if comps.is_empty() {
                fs.root_export = Some(fh.clone());
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
                    (Some(Target::Pseudo(next)), false) => cur = next,
                    (Some(_), _) => break, // an export already covers this path
                    (None, true) => {
                        fs.dirs[cur]
                            .children
                            .push((c.clone(), Target::Export(fh.clone())));
                    }
                    (None, false) => {
                        let idx = fs.dirs.len();
                        fs.dirs.push(PseudoDir {
                            parent: cur,
                            children: Vec::new(),
                        });
                        fs.dirs[cur].children.push((c.clone(), Target::Pseudo(idx)));
                        cur = idx;
                    }
                }
            }
        }
        fs
    }

    /// The handle of pseudo directory `idx`.
    pub fn fh(idx: usize) -> Bytes {
        let i = idx as u32;
        let mut v = MARK.to_vec();
        v.extend_from_slice(&i.to_be_bytes());
        Bytes::from(v)
    }

    /// The pseudo directory a handle names, if it is a pseudo handle.
    pub fn parse(&self, fh: &[u8]) -> Option<Result<usize, ()>> {
        if fh.len() < 2 || fh[..2] != MARK {
            return None;
        }
        if fh.len() != 6 {
            return Some(Err(()));
        }
        let i = u32::from_be_bytes([fh[2], fh[3], fh[4], fh[5]]) as usize;
        Some(if i < self.dirs.len() { Ok(i) } else { Err(()) })
    }

    /// Looks a name up in a pseudo directory.
    pub fn lookup(&self, idx: usize, name: &[u8]) -> Option<Target> {
        self.dirs
            .get(idx)?
            .children
            .iter()
            .find(|(n, _)| &n[..] == name)
            .map(|(_, t)| t.clone())
    }

    /// The pseudo directory containing the export whose root handle is `fh`.
    pub fn parent_of_export(&self, fh: &[u8]) -> Option<usize> {
        self.dirs.iter().position(|d| {
            d.children
                .iter()
                .any(|(_, t)| matches!(t, Target::Export(x) if &x[..] == fh))
        })
    }

    /// The fileid of the pseudo-fs directory an export is mounted on (its junction): distinct
    /// from every pseudo directory's fileid.
    pub fn junction_fileid(&self, fh: &[u8]) -> Option<u64> {
        let mut n = 0u64;
        for d in &self.dirs {
            for (_, t) in &d.children {
                if let Target::Export(x) = t {
                    n += 1;
                    if &x[..] == fh {
                        return Some(self.dirs.len() as u64 + n);
                    }
                }
            }
        }
        None
    }

    /// Attributes of a pseudo directory.
    pub fn attr(&self, idx: usize) -> Attr {
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
            fileid: idx as u64 + 1,
            atime: t,
            mtime: t,
            ctime: t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree() {
        let a = Bytes::from_static(b"A");
        let b = Bytes::from_static(b"B");
        let fs = PseudoFs::new(&[("/srv/a".into(), a.clone()), ("/srv/x/b".into(), b.clone())]);
        let srv = match fs.lookup(0, b"srv") {
            Some(Target::Pseudo(i)) => i,
            other => panic!("{other:?}"),
        };
        assert_eq!(fs.lookup(srv, b"a"), Some(Target::Export(a.clone())));
        assert_eq!(fs.parent_of_export(&a), Some(srv));
        assert_eq!(fs.dirs[srv].parent, 0);
        assert_eq!(fs.parse(&PseudoFs::fh(srv)), Some(Ok(srv)));
        assert_eq!(fs.parse(&PseudoFs::fh(99)), Some(Err(())));
        assert_eq!(fs.parse(b"\x01abc"), None);
        assert!(fs.root_export.is_none());
    }
}
