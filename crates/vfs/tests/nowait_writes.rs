//! WRITEs tried without blocking ([`vfs::nowait`]): done where files live in memory (tmpfs),
//! given up on a disk file system (ext4), before anything is written. The file systems are
//! mounted here, ext4 on a loop device (run as root, as the server and scripts/test are).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use vfs::nowait::without_blocking;
use vfs::{CreateMode, SetAttrs, Stability, Vfs};

/// A file system mounted on a temporary directory for the test's life.
struct Mounted {
    dir: tempfile::TempDir,
    _image: Option<tempfile::TempDir>,
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Mounted {
    /// `kind`: "tmpfs", or a file system made with `mkfs.<kind>` on a 512 MiB sparse image.
    fn new(kind: &str) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        let image = (kind != "tmpfs").then(|| {
            let d = tempfile::tempdir().unwrap();
            let img = d.path().join("fs.img");
            std::fs::File::create(&img)
                .unwrap()
                .set_len(512 << 20)
                .unwrap();
            run(Command::new(format!("mkfs.{kind}")).arg("-q").arg(&img));
            run(Command::new("mount")
                .args(["-o", "loop"])
                .arg(&img)
                .arg(dir.path()));
            d
        });
        if image.is_none() {
            run(Command::new("mount")
                .args(["-t", "tmpfs", "tmpfs"])
                .arg(dir.path()));
        }
        Mounted { dir, _image: image }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        // a loop device goes with its last mount (autoclear)
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// An export of `dir` holding file "f" (mode 666, 8 KiB of 1s), and the handle of "f".
fn export_with_file(dir: &Path, state: &Path) -> (Vfs, bytes::Bytes) {
    let vfs = vfs_exporting(dir, "rw,no_root_squash", state);
    let root = root_fh(&vfs, dir);
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let attrs = SetAttrs {
        mode: Some(0o666),
        ..Default::default()
    };
    let (fh, _) = vfs
        .create(&c, &r, b"f", CreateMode::Guarded, &attrs)
        .unwrap()
        .value;
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    // the data descriptor is opened here: a try never opens one
    vfs.write(&c, &n, 0, &[1u8; 8192], Stability::Unstable)
        .unwrap();
    (vfs, fh)
}

/// Tries a WRITE of `len` bytes of `byte` at `offset` as `uid`: whether it was done (Some) or
/// given up (None, and then nothing of it was written: checked against the file).
fn try_write(
    vfs: &Vfs,
    fh: &bytes::Bytes,
    dir: &Path,
    (uid, offset, len, byte): (u32, u64, usize, u8),
    stable: Stability,
) -> Option<Stability> {
    let before = std::fs::read(dir.join("f")).unwrap();
    let (c, n) = vfs.authorize(fh, &client(uid)).unwrap();
    let data = vec![byte; len];
    let r = without_blocking(|| vfs.write(&c, &n, offset, &data, stable));
    let after = std::fs::read(dir.join("f")).unwrap();
    match r {
        Some(done) => {
            let (done, attr) = done.unwrap();
            let end = offset as usize + len;
            assert_eq!(&after[offset as usize..end], &data[..], "written");
            assert_eq!(attr.size, after.len() as u64, "the attributes after it");
            Some(done)
        }
        None => {
            assert_eq!(after, before, "a try that gave up wrote nothing");
            None
        }
    }
}

#[test]
fn tmpfs_writes_are_tried_whatever_their_durability() {
    let fs = Mounted::new("tmpfs");
    let state = tempfile::tempdir().unwrap();
    let (vfs, fh) = export_with_file(fs.path(), state.path());
    vfs::cred::allow_switch_in_try();
    for stable in [
        Stability::Unstable,
        Stability::DataSync,
        Stability::FileSync,
    ] {
        let w = (1000, 4096, 4096, 2);
        assert_eq!(try_write(&vfs, &fh, fs.path(), w, stable), Some(stable));
    }
    // past the end, leaving a hole: still memory
    let w = (1000, 1 << 20, 4096, 3);
    assert!(try_write(&vfs, &fh, fs.path(), w, Stability::FileSync).is_some());
    // a large one: its turn among writes of the file is free here
    let w = (0, 0, 256 * 1024, 4);
    assert!(try_write(&vfs, &fh, fs.path(), w, Stability::Unstable).is_some());
}

#[test]
fn a_try_that_may_not_switch_identity_writes_nothing() {
    let fs = Mounted::new("tmpfs");
    let state = tempfile::tempdir().unwrap();
    let (vfs, fh) = export_with_file(fs.path(), state.path());
    // a thread that posts RDMA work keeps its credentials (vfs::nowait): the caller's write
    // would have been made as root
    std::thread::scope(|s| {
        s.spawn(|| {
            let w = (1000, 0, 4096, 5);
            assert_eq!(
                try_write(&vfs, &fh, fs.path(), w, Stability::Unstable),
                None
            );
            vfs::cred::allow_switch_in_try();
            let w = (1000, 0, 4096, 5);
            assert!(try_write(&vfs, &fh, fs.path(), w, Stability::Unstable).is_some());
        });
    });
}

#[test]
fn ext4_writes_are_never_tried() {
    let fs = Mounted::new("ext4");
    let state = tempfile::tempdir().unwrap();
    let (vfs, fh) = export_with_file(fs.path(), state.path());
    vfs::cred::allow_switch_in_try();
    for _ in 0..2 {
        let w = (1000, 0, 4096, 2);
        assert_eq!(
            try_write(&vfs, &fh, fs.path(), w, Stability::Unstable),
            None
        );
    }
    // a worker writes it
    let (c, n) = vfs.authorize(&fh, &client(1000)).unwrap();
    vfs.write(&c, &n, 0, &[2u8; 4096], Stability::Unstable)
        .unwrap();
    assert_eq!(
        std::fs::read(fs.path().join("f")).unwrap()[..4096],
        [2u8; 4096]
    );
}
