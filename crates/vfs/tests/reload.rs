//! Export reload: what calls see before and after the table is replaced.

use std::net::IpAddr;

use vfs::exports::parse_exports;
use vfs::{Client, Creds, Stability, Vfs, VfsConfig, VfsError};

fn client(port: u16) -> Client {
    Client {
        addr: IpAddr::from([127, 0, 0, 1]),
        privileged: port < 1024,
        ident: Some(Creds {
            uid: 0,
            gid: 0,
            groups: vec![].into(),
        }),
        flavor: vfs::exports::SecFlavor::Sys,
    }
}

fn exports(lines: &[String]) -> Vec<vfs::exports::ExportEntry> {
    parse_exports(&lines.join("\n"), "test").unwrap()
}

struct Setup {
    a: tempfile::TempDir,
    b: tempfile::TempDir,
    _state: tempfile::TempDir,
    vfs: Vfs,
}

fn setup() -> Setup {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::write(a.path().join("f"), b"hello").unwrap();
    let vfs = Vfs::new(VfsConfig {
        exports: exports(&[format!(
            "{} 127.0.0.1(rw,no_root_squash)",
            a.path().display()
        )]),
        state_dir: state.path().to_path_buf(),
        fd_cache: 64,
    })
    .unwrap();
    Setup {
        a,
        b,
        _state: state,
        vfs,
    }
}

fn mount(vfs: &Vfs, dir: &std::path::Path) -> Result<bytes::Bytes, VfsError> {
    vfs.mount(dir.as_os_str().as_encoded_bytes(), &client(700))
        .map(|(fh, _)| fh)
}

/// Export a's file `f`: its handle, and the caller and node a call on it gets.
fn file_f(s: &Setup) -> (bytes::Bytes, vfs::Caller, vfs::Node) {
    let root = mount(&s.vfs, s.a.path()).unwrap();
    let (c, r) = s.vfs.authorize(&root, &client(700)).unwrap();
    let f = s.vfs.lookup(&c, &r, b"f").unwrap().fh;
    let (c, n) = s.vfs.authorize(&f, &client(700)).unwrap();
    (f, c, n)
}

#[test]
fn changed_rules_apply_to_the_next_call_and_handles_stay_valid() {
    let s = setup();
    let (f, c, n) = file_f(&s);
    s.vfs
        .write(&c, &n, 0, b"HELLO", Stability::Unstable)
        .unwrap();

    let changes = s
        .vfs
        .reload(exports(&[format!(
            "{} 127.0.0.1(ro,insecure)",
            s.a.path().display()
        )]))
        .unwrap();
    assert_eq!(changes.changed, vec![s.a.path().canonicalize().unwrap()]);
    assert!(changes.added.is_empty() && changes.removed.is_empty());
    // the same handle, now read-only, and insecure: a port above 1023 is admitted
    let (c, n) = s.vfs.authorize(&f, &client(40000)).unwrap();
    assert!(!c.writable);
    assert!(matches!(
        s.vfs.write(&c, &n, 0, b"x", Stability::Unstable),
        Err(VfsError::ReadOnly)
    ));
    let (data, _, _) = s.vfs.read(&c, &n, 0, 5).unwrap();
    assert_eq!(&data[..], b"HELLO");

    // the same file again: nothing changes
    let again = s
        .vfs
        .reload(exports(&[format!(
            "{} 127.0.0.1(ro,insecure)",
            s.a.path().display()
        )]))
        .unwrap();
    assert_eq!(again, vfs::fs::ExportChanges::default());
}

#[test]
fn a_removed_export_answers_stale_and_a_new_one_mounts() {
    let s = setup();
    let root = mount(&s.vfs, s.a.path()).unwrap();
    let (c, r) = s.vfs.authorize(&root, &client(700)).unwrap();
    let f = s.vfs.lookup(&c, &r, b"f").unwrap().fh;
    drop((c, r));
    assert!(matches!(
        mount(&s.vfs, s.b.path()),
        Err(VfsError::Errno(libc::ENOENT))
    ));

    let changes = s
        .vfs
        .reload(exports(&[format!(
            "{} 127.0.0.1(rw,no_root_squash)",
            s.b.path().display()
        )]))
        .unwrap();
    assert_eq!(changes.added, vec![s.b.path().canonicalize().unwrap()]);
    assert_eq!(changes.removed.len(), 1);
    for fh in [&root, &f] {
        assert!(matches!(
            s.vfs.authorize(fh, &client(700)),
            Err(VfsError::Stale)
        ));
        assert!(matches!(s.vfs.check_handle(fh), Err(VfsError::Stale)));
    }
    let b = mount(&s.vfs, s.b.path()).unwrap();
    let (c, r) = s.vfs.authorize(&b, &client(700)).unwrap();
    assert!(c.writable);
    assert_eq!(s.vfs.export_list().len(), 1);

    // exported again: the old handles are valid again (same path, same id)
    s.vfs
        .reload(exports(&[
            format!("{} 127.0.0.1(rw,no_root_squash)", s.a.path().display()),
            format!("{} 127.0.0.1(rw,no_root_squash)", s.b.path().display()),
        ]))
        .unwrap();
    let (c2, n) = s.vfs.authorize(&f, &client(700)).unwrap();
    let (data, _, _) = s.vfs.read(&c2, &n, 0, 5).unwrap();
    assert_eq!(&data[..], b"hello");
    assert!(s.vfs.getattr(&r).is_ok());
    drop(c);
}

#[test]
fn a_reload_that_fails_changes_nothing() {
    let s = setup();
    let root = mount(&s.vfs, s.a.path()).unwrap();
    let missing = s.b.path().join("missing");
    let err = s
        .vfs
        .reload(exports(&[
            format!("{} 127.0.0.1(ro)", s.a.path().display()),
            format!("{} 127.0.0.1(rw)", missing.display()),
        ]))
        .unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    let (c, _) = s.vfs.authorize(&root, &client(700)).unwrap();
    assert!(c.writable, "the old rules still apply");

    let err = s
        .vfs
        .reload(exports(&[
            format!("{} 127.0.0.1(rw,fsid=7)", s.a.path().display()),
            format!("{} 127.0.0.1(rw,fsid=7)", s.b.path().display()),
        ]))
        .unwrap_err();
    assert!(err.to_string().contains("same id 7"), "{err}");
    assert!(s.vfs.authorize(&root, &client(700)).is_ok());
}

#[test]
fn fsid_0_marks_the_nfsv4_root() {
    let s = setup();
    s.vfs
        .reload(exports(&[
            format!("{} 127.0.0.1(rw,fsid=0)", s.a.path().display()),
            format!("{} 127.0.0.1(rw)", s.b.path().display()),
        ]))
        .unwrap();
    let v: Vec<(bool, u32)> = s.vfs.exports().iter().map(|e| (e.v4_root, e.id)).collect();
    assert_eq!(v[0], (true, 0));
    assert!(!v[1].0);
}

#[test]
fn export_counters_count_calls_and_bytes_and_survive_a_rule_change() {
    let s = setup();
    let (_, c, n) = file_f(&s);
    s.vfs
        .write(&c, &n, 0, b"0123456789", Stability::Unstable)
        .unwrap();
    let (data, _, _) = s.vfs.read_to(&c, &n, 0, 4, &NoBuffer).unwrap();
    assert_eq!(data.len(), 4);
    let before = s.vfs.export_counters();
    assert_eq!(before.len(), 1);
    assert_eq!(
        (before[0].calls, before[0].read_bytes, before[0].write_bytes),
        (2, 4, 10)
    );
    s.vfs
        .reload(exports(&[format!(
            "{} 127.0.0.1(ro)",
            s.a.path().display()
        )]))
        .unwrap();
    assert_eq!(s.vfs.export_counters(), before);
}

/// A transport that offers neither pages nor a buffer (the READ reads into memory of its own).
struct NoBuffer;

impl payload::PayloadTarget for NoBuffer {
    fn takes_pages(&self) -> bool {
        false
    }
    fn fill(&self, _len: usize, _read: &mut dyn FnMut(&mut [u8]) -> usize) -> Option<bytes::Bytes> {
        None
    }
}
