//! Export options whose effect the backend applies: sec=, sync/async, mountpoint.

use std::net::IpAddr;

use vfs::exports::{parse_exports, SecFlavor};
use vfs::{Client, Creds, Vfs, VfsConfig, VfsError};

fn client(ident: bool) -> Client {
    Client {
        addr: IpAddr::from([127, 0, 0, 1]),
        privileged: true,
        ident: ident.then(|| Creds {
            uid: 0,
            gid: 0,
            groups: vec![].into(),
        }),
        flavor: match ident {
            true => vfs::exports::SecFlavor::Sys,
            false => vfs::exports::SecFlavor::None,
        },
    }
}

fn serve(lines: &[String]) -> (tempfile::TempDir, Vfs) {
    let state = tempfile::tempdir().unwrap();
    let vfs = Vfs::new(VfsConfig {
        exports: parse_exports(&lines.join("\n"), "test").unwrap(),
        state_dir: state.path().to_path_buf(),
        fd_cache: 64,
    })
    .unwrap();
    (state, vfs)
}

#[test]
fn sec_decides_which_flavors_a_call_may_use() {
    let none = tempfile::tempdir().unwrap();
    let both = tempfile::tempdir().unwrap();
    let sys = tempfile::tempdir().unwrap();
    let default = tempfile::tempdir().unwrap();
    let (_s, vfs) = serve(&[
        format!("{} 127.0.0.1(rw,sec=none)", none.path().display()),
        format!("{} 127.0.0.1(rw,sec=sys:none)", both.path().display()),
        format!("{} 127.0.0.1(rw,sec=sys)", sys.path().display()),
        format!("{} 127.0.0.1(rw)", default.path().display()),
    ]);
    let mount = |d: &tempfile::TempDir, ident| {
        vfs.mount(d.path().as_os_str().as_encoded_bytes(), &client(ident))
    };
    // MOUNT answers whatever flavor it is called with, listing what the export takes
    let (fh_none, f) = mount(&none, true).unwrap();
    assert_eq!(f, vec![SecFlavor::None]);
    let (fh_both, f) = mount(&both, false).unwrap();
    assert_eq!(f, vec![SecFlavor::Sys, SecFlavor::None]);
    let (fh_sys, f) = mount(&sys, false).unwrap();
    assert_eq!(f, vec![SecFlavor::Sys]);
    let (fh_default, f) = mount(&default, false).unwrap();
    assert_eq!(f, vec![SecFlavor::Sys]);
    // without sec=, AUTH_NONE callers are admitted too (as the anonymous user), as in knfsd
    assert!(vfs.authorize(&fh_default, &client(false)).is_ok());
    assert!(vfs.authorize(&fh_default, &client(true)).is_ok());

    assert!(matches!(
        vfs.authorize(&fh_none, &client(true)),
        Err(VfsError::WrongSec)
    ));
    assert!(vfs.authorize(&fh_none, &client(false)).is_ok());
    assert!(vfs.authorize(&fh_both, &client(true)).is_ok());
    assert!(vfs.authorize(&fh_both, &client(false)).is_ok());
    assert!(vfs.authorize(&fh_sys, &client(true)).is_ok());
    assert!(matches!(
        vfs.authorize(&fh_sys, &client(false)),
        Err(VfsError::WrongSec)
    ));
}

#[test]
fn sync_is_the_default_and_async_turns_it_off() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (_s, vfs) = serve(&[
        format!("{} 127.0.0.1(rw)", a.path().display()),
        format!("{} 127.0.0.1(rw,async)", b.path().display()),
    ]);
    let caller = |d: &tempfile::TempDir| {
        let (fh, _) = vfs
            .mount(d.path().as_os_str().as_encoded_bytes(), &client(true))
            .unwrap();
        vfs.authorize(&fh, &client(true)).unwrap()
    };
    let (c, root) = caller(&a);
    assert!(c.sync);
    // every change goes through the directory commit on a sync export
    let (_, attr) = vfs
        .mkdir(&c, &root, b"d", &vfs::SetAttrs::default())
        .unwrap()
        .value;
    assert_eq!(attr.ftype, vfs::FileType::Directory);
    vfs.rename(&c, &root, b"d", &root, b"e").unwrap();
    vfs.remove(&c, &root, b"e", true).unwrap();
    let (c, _) = caller(&b);
    assert!(!c.sync);
}

#[test]
fn mountpoint_exports_only_what_is_mounted() {
    // a temporary directory is not a mount point; /dev/shm is one (tmpfs) on Linux
    let plain = tempfile::tempdir().unwrap();
    let (_s, vfs) = serve(&[
        format!("{} 127.0.0.1(rw,mp)", plain.path().display()),
        "/dev/shm 127.0.0.1(rw,mountpoint)".to_string(),
    ]);
    let paths: Vec<_> = vfs.exports().into_iter().map(|e| e.path).collect();
    assert_eq!(paths, vec![std::path::PathBuf::from("/dev/shm")]);
    // mountpoint=PATH names the mount point to wait for
    let (_s, vfs) = serve(&[format!(
        "{} 127.0.0.1(rw,mountpoint=/dev/shm)",
        plain.path().display()
    )]);
    assert_eq!(vfs.exports().len(), 1);
}
