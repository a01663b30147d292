//! Backend tests on a temporary directory (run as root, as the server does).

use std::net::IpAddr;

use vfs::exports::parse_exports;
use vfs::{Client, CreateMode, Creds, SetAttrs, Stability, Vfs, VfsConfig, VfsError};

fn setup(opts: &str) -> (tempfile::TempDir, tempfile::TempDir, Vfs) {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let text = format!("{} 127.0.0.1({opts})\n", dir.path().display());
    let exports = parse_exports(&text, "test").unwrap();
    let vfs = Vfs::new(VfsConfig {
        exports,
        state_dir: state.path().to_path_buf(),
        fd_cache: 64,
    })
    .unwrap();
    (dir, state, vfs)
}

fn client(uid: u32) -> Client {
    Client {
        addr: IpAddr::from([127, 0, 0, 1]),
        port: 700,
        ident: Some(Creds {
            uid,
            gid: uid,
            groups: vec![],
        }),
    }
}

fn root_fh(vfs: &Vfs, dir: &std::path::Path) -> bytes::Bytes {
    vfs.mount(dir.as_os_str().as_encoded_bytes(), &client(0))
        .unwrap()
}

#[test]
fn create_write_read_lookup() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let (fh, attr) = vfs
        .create(
            &c,
            &r,
            b"f",
            CreateMode::Guarded,
            &SetAttrs {
                mode: Some(0o640),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(attr.mode, 0o640);
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    vfs.write(&c, &n, 0, b"hello", Stability::FileSync).unwrap();
    let (data, eof, a) = vfs.read(&c, &n, 0, 100).unwrap();
    assert_eq!(&data[..], b"hello");
    assert!(eof);
    assert_eq!(a.size, 5);
    let (fh2, _) = vfs.lookup(&c, &r, b"f").unwrap();
    assert_eq!(fh2, fh);
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"hello");
    // .. at the root is the root.
    let (up, _) = vfs.lookup(&c, &r, b"..").unwrap();
    assert_eq!(up, root);
}

#[test]
fn flipped_handle_is_bad() {
    let (dir, _s, vfs) = setup("rw");
    let mut root = root_fh(&vfs, dir.path()).to_vec();
    root[12] ^= 1;
    assert_eq!(
        vfs.authorize(&root, &client(0)).err(),
        Some(VfsError::BadHandle)
    );
}
