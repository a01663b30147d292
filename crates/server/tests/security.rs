//! Export rules and containment against the running server: read-only exports, squashing,
//! permission checks, privileged ports, path escapes, forged and stale handles.

// System calls the tests make themselves (signals, limits, device nodes, holes, credentials)
// to set up and check what they test.
#![allow(unsafe_code)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use common::*;
use nfs3wire::*;

fn mode_sattr(mode: u32) -> Sattr3 {
    Sattr3 {
        mode: SetMode3(Some(mode)),
        ..sattr3()
    }
}

// ---------------------------------------------------------------------------------------------
// Export options
// ---------------------------------------------------------------------------------------------

#[test]
fn ro_export_refuses_changes_with_rofs() {
    let fx = Fixture::with_options(0o777, "ro,insecure");
    let f = fx.export.join("f");
    std::fs::write(&f, b"read only").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::create_dir(fx.export.join("d")).unwrap();
    let (mut c, root) = fx.connect();
    let fh = c.lookup_ok(&root, "f");

    assert_eq!(
        c.create(&root, "new", 0o644).status(),
        Nfsstat3::NFS3ERR_ROFS
    );
    assert_eq!(
        c.write(&fh, 0, Bytes::from_static(b"XX"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3ERR_ROFS
    );
    assert_eq!(
        c.setattr(&fh, mode_sattr(0o600)).status(),
        Nfsstat3::NFS3ERR_ROFS
    );
    assert_eq!(
        c.setattr(
            &fh,
            Sattr3 {
                size: SetSize3(Some(0)),
                ..sattr3()
            }
        )
        .status(),
        Nfsstat3::NFS3ERR_ROFS
    );
    assert_eq!(c.remove(&root, "f").status(), Nfsstat3::NFS3ERR_ROFS);
    assert_eq!(c.mkdir(&root, "nd", 0o755).status(), Nfsstat3::NFS3ERR_ROFS);
    assert_eq!(c.rmdir(&root, "d").status(), Nfsstat3::NFS3ERR_ROFS);
    assert_eq!(c.symlink(&root, "l", "f").status(), Nfsstat3::NFS3ERR_ROFS);
    assert_eq!(
        c.rename(&root, "f", &root, "g").status(),
        Nfsstat3::NFS3ERR_ROFS
    );
    assert_eq!(c.link(&fh, &root, "h").status(), Nfsstat3::NFS3ERR_ROFS);

    // Reading still works, and ACCESS grants no modification.
    let r = c.read(&fh, 0, 100).expect_ok("READ on ro export");
    assert_eq!(&r.data.in_memory().expect("decoded")[..], b"read only");
    let granted = c
        .access(&fh, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND)
        .expect_ok("ACCESS")
        .access;
    assert_eq!(granted, ACCESS3_READ);

    // Nothing changed on disk.
    assert_eq!(std::fs::read(&f).unwrap(), b"read only");
    assert_eq!(
        std::fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
        0o666
    );
    let mut names: Vec<_> = std::fs::read_dir(&fx.export)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["d", "f"]);
}

#[test]
fn root_squash_denies_root_create_in_root_owned_dir() {
    let fx = Fixture::with_options(0o755, "rw,insecure,root_squash");
    assert_eq!(std::fs::metadata(&fx.export).unwrap().uid(), 0);
    let (c, root) = fx.connect();
    let mut c = c.with_user(0, 0);
    assert_eq!(
        c.create(&root, "f", 0o644).status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert_eq!(c.mkdir(&root, "d", 0o755).status(), Nfsstat3::NFS3ERR_ACCES);
    assert!(!fx.export.join("f").exists());
    assert!(!fx.export.join("d").exists());
}

#[test]
fn no_root_squash_lets_root_create_root_owned_file() {
    let fx = Fixture::with_options(0o755, "rw,insecure,no_root_squash");
    let (c, root) = fx.connect();
    let mut c = c.with_user(0, 0);
    let ok = c.create(&root, "f", 0o640).expect_ok("CREATE as root");
    let a = attrs(&ok.obj_attributes);
    assert_eq!((a.uid, a.gid, a.mode), (0, 0, 0o640));
    let md = std::fs::metadata(fx.export.join("f")).unwrap();
    assert_eq!((md.uid(), md.gid()), (0, 0));
    assert_eq!(md.mode() & 0o7777, 0o640);
}

#[test]
fn all_squash_maps_caller_to_anonuid() {
    let fx = Fixture::with_options(0o777, "rw,insecure,all_squash,anonuid=1234,anongid=1234");
    let (c, root) = fx.connect();
    let mut c = c.with_user(1000, 1000);
    let ok = c.create(&root, "f", 0o644).expect_ok("CREATE all_squash");
    let a = attrs(&ok.obj_attributes);
    assert_eq!((a.uid, a.gid), (1234, 1234));
    c.mkdir(&root, "d", 0o755).expect_ok("MKDIR all_squash");
    for n in ["f", "d"] {
        let md = std::fs::symlink_metadata(fx.export.join(n)).unwrap();
        assert_eq!((md.uid(), md.gid()), (1234, 1234), "owner of {n} on disk");
    }
    // Root is squashed too.
    c.set_user(0, 0);
    c.create(&root, "g", 0o644).expect_ok("CREATE as root");
    let md = std::fs::metadata(fx.export.join("g")).unwrap();
    assert_eq!((md.uid(), md.gid()), (1234, 1234));
}

#[test]
fn private_file_not_readable_by_other_user() {
    let fx = Fixture::new();
    let f = fx.export.join("secret");
    std::fs::write(&f, b"top secret").unwrap();
    std::os::unix::fs::chown(&f, Some(1000), Some(1000)).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (mut c, root) = fx.connect();
    let fh = c.lookup_ok(&root, "secret");

    c.set_user(2000, 2000);
    assert_eq!(c.read(&fh, 0, 100).status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(
        c.write(&fh, 0, Bytes::from_static(b"x"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert_eq!(
        c.access(&fh, ACCESS3_READ | ACCESS3_MODIFY)
            .expect_ok("ACCESS")
            .access,
        0
    );

    // The owner reads it.
    c.set_user(1000, 1000);
    let r = c.read(&fh, 0, 100).expect_ok("READ by owner");
    assert_eq!(&r.data.in_memory().expect("decoded")[..], b"top secret");
    assert_eq!(std::fs::read(&f).unwrap(), b"top secret");
}

#[test]
fn secure_export_refuses_unprivileged_source_port() {
    let fx = Fixture::with_options(0o777, "rw");
    std::fs::write(fx.export.join("f"), b"data").unwrap();

    // From an ephemeral port: MNT is refused.
    let mut c = fx.server.client();
    assert!(c.local_port() >= 1024);
    assert_eq!(c.mnt(&fx.export).status(), Mountstat3::MNT3ERR_ACCES);

    // From a privileged port it works.
    let mut p = RpcClient::connect_privileged(fx.server.port);
    assert!(p.local_port() < 1024);
    let root = p.mnt_ok(&fx.export);
    let f = p.lookup_ok(&root, "f");
    p.getattr(&f).expect_ok("GETATTR from a privileged port");

    // The same handles from an ephemeral port are refused.
    assert_eq!(c.getattr(&root).status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(c.lookup(&root, "f").status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(c.read(&f, 0, 10).status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(
        c.write(&f, 0, Bytes::from_static(b"x"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert_eq!(
        c.create(&root, "g", 0o644).status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert!(!fx.export.join("g").exists());
    assert_eq!(std::fs::read(fx.export.join("f")).unwrap(), b"data");
}

// ---------------------------------------------------------------------------------------------
// Path escapes
// ---------------------------------------------------------------------------------------------

#[test]
fn lookup_dotdot_at_export_root_returns_root() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.export.join("sub")).unwrap();
    let (mut c, root) = fx.connect();
    let root_attr = c.getattr(&root).expect_ok("GETATTR root");

    let up = c.lookup(&root, "..").expect_ok("LOOKUP .. at root");
    assert_eq!(
        up.object, root,
        "LOOKUP .. at the root is not the root handle"
    );
    assert_eq!(attrs(&up.obj_attributes).fileid, root_attr.fileid);
    // Twice more, for good measure.
    let up2 = c.lookup_ok(&up.object, "..");
    assert_eq!(up2, root);
    assert_eq!(c.lookup_ok(&root, "."), root);

    // ".." of a subdirectory is the root too.
    let sub = c.lookup_ok(&root, "sub");
    assert_eq!(c.lookup_ok(&sub, ".."), root);
    let sub_up = c.lookup_ok(&sub, "..");
    let sub_up_up = c.lookup_ok(&sub_up, "..");
    assert_eq!(sub_up_up, root);

    // READDIRPLUS at the root: ".." is the root itself.
    let r = c
        .readdirplus(&root, 0, [0; 8], 8192, 65536)
        .expect_ok("READDIRPLUS root");
    let dotdot = r
        .reply
        .entries
        .iter()
        .find(|e| &e.name[..] == b"..")
        .expect("no .. entry");
    assert_eq!(dotdot.fileid, root_attr.fileid);
    if let Some(fh) = &dotdot.name_handle.0 {
        assert_eq!(fh, &root);
    }
}

#[test]
fn symlinks_are_returned_never_followed() {
    let fx = Fixture::new();
    let links = [("to_root", "/"), ("up", "../.."), ("etc", "/etc")];
    for (n, t) in links {
        std::os::unix::fs::symlink(t, fx.export.join(n)).unwrap();
    }
    let (mut c, root) = fx.connect();
    for (n, t) in links {
        let l = c.lookup(&root, n).expect_ok("LOOKUP symlink");
        assert_eq!(attrs(&l.obj_attributes).r#type, Ftype3::Nf3lnk, "{n}");
        let fh = l.object;
        assert_eq!(c.getattr(&fh).expect_ok("GETATTR").r#type, Ftype3::Nf3lnk);
        let rl = c.readlink(&fh).expect_ok("READLINK");
        assert_eq!(&rl.data[..], t.as_bytes());
        // The link is not a directory to the server...
        assert_eq!(
            c.lookup(&fh, "passwd").status(),
            Nfsstat3::NFS3ERR_NOTDIR,
            "{n}"
        );
        assert_eq!(
            c.lookup(&fh, "..").status(),
            Nfsstat3::NFS3ERR_NOTDIR,
            "{n}"
        );
        assert_eq!(
            c.readdir(&fh, 0, [0; 8], 4096).status(),
            Nfsstat3::NFS3ERR_NOTDIR,
            "{n}"
        );
        assert_eq!(c.create(&fh, "x", 0o644).status(), Nfsstat3::NFS3ERR_NOTDIR);
        // ...nor a file to read.
        assert_eq!(c.read(&fh, 0, 100).status(), Nfsstat3::NFS3ERR_INVAL, "{n}");
    }
    // A name with a slash is not a path.
    assert_eq!(
        c.lookup(&root, "etc/passwd").status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert_eq!(
        c.lookup(&root, "to_root/etc").status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    // MNT through a symlink is not followed either.
    assert_eq!(
        c.mnt(fx.export.join("to_root")).status(),
        Mountstat3::MNT3ERR_NOTDIR
    );
    assert_eq!(
        c.mnt(fx.export.join("etc")).status(),
        Mountstat3::MNT3ERR_NOTDIR
    );
    // Nothing was created outside.
    assert!(!Path::new("/x").exists());
}

#[test]
fn mnt_outside_the_export_is_refused() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.export.join("sub")).unwrap();
    let sibling = mkdir_mode(&fx.tmp.path().join("sibling"), 0o777);
    let mut c = fx.server.client();
    let e = fx.export.display().to_string();
    for p in [
        "/etc".to_string(),
        "/".to_string(),
        format!("{e}/.."),
        format!("{e}/../"),
        format!("{e}/../sibling"),
        format!("{e}/sub/../.."),
        format!("{e}/sub/.."),
        format!("{}/..", sibling.display()),
        "etc".to_string(),
        String::new(),
    ] {
        assert_eq!(c.mnt(&p).status(), Mountstat3::MNT3ERR_NOENT, "MNT {p:?}");
    }
    assert_eq!(
        c.mnt(&sibling).status(),
        Mountstat3::MNT3ERR_NOENT,
        "MNT of a directory that is not exported"
    );
    // Positive controls: the export and a directory below it.
    let root = c.mnt_ok(&fx.export);
    let sub = c.mnt_ok(fx.export.join("sub"));
    assert_eq!(c.lookup_ok(&root, "sub"), sub);
    assert_eq!(c.mnt_ok(format!("{e}/")), root);
}

#[test]
fn flipped_bit_handle_is_badhandle() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("f"), b"x").unwrap();
    let (mut c, root) = fx.connect();
    let f = c.lookup_ok(&root, "f");
    for fh in [&root, &f] {
        c.getattr(fh).expect_ok("GETATTR of the real handle");
        for bit in 0..fh.data.len() * 8 {
            let mut v = fh.data.to_vec();
            v[bit / 8] ^= 1 << (bit % 8);
            let bad = fh3(Bytes::from(v));
            assert_eq!(
                c.getattr(&bad).status(),
                Nfsstat3::NFS3ERR_BADHANDLE,
                "bit {bit} flipped"
            );
        }
        // Truncated and extended handles too.
        let short = fh3(fh.data.slice(..fh.data.len() - 1));
        assert_eq!(c.getattr(&short).status(), Nfsstat3::NFS3ERR_BADHANDLE);
        let mut long = fh.data.to_vec();
        long.push(0);
        assert_eq!(
            c.getattr(&fh3(Bytes::from(long))).status(),
            Nfsstat3::NFS3ERR_BADHANDLE
        );
    }
    assert_eq!(
        c.getattr(&fh3(Bytes::new())).status(),
        Nfsstat3::NFS3ERR_BADHANDLE
    );
    assert_eq!(
        c.getattr(&fh3(Bytes::from(vec![0u8; 64]))).status(),
        Nfsstat3::NFS3ERR_BADHANDLE
    );
    // Bit-flipped handles are refused by the other procedures as well.
    let mut v = f.data.to_vec();
    let last = v.len() - 1;
    v[last] ^= 0x80;
    let bad = fh3(Bytes::from(v));
    assert_eq!(c.read(&bad, 0, 1).status(), Nfsstat3::NFS3ERR_BADHANDLE);
    assert_eq!(c.lookup(&bad, "x").status(), Nfsstat3::NFS3ERR_BADHANDLE);
    assert_eq!(
        c.write(&bad, 0, Bytes::from_static(b"y"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3ERR_BADHANDLE
    );
    assert_eq!(std::fs::read(fx.export.join("f")).unwrap(), b"x");
}

/// Two exports served with `--export`.
struct TwoExports {
    _tmp: tempfile::TempDir,
    a: PathBuf,
    b: PathBuf,
    server: Server,
}

fn two_exports() -> TwoExports {
    let tmp = tempfile::tempdir().unwrap();
    let a = mkdir_mode(&tmp.path().join("a"), 0o777);
    let b = mkdir_mode(&tmp.path().join("b"), 0o777);
    let server = Server::with_exports(&tmp.path().join("state"), &[&a, &b]);
    TwoExports {
        _tmp: tmp,
        a,
        b,
        server,
    }
}

#[test]
fn handle_of_removed_export_is_stale() {
    let mut t = two_exports();
    std::fs::write(t.a.join("fa"), b"a").unwrap();
    std::fs::write(t.b.join("fb"), b"b").unwrap();
    let mut c = t.server.client();
    let ra = c.mnt_ok(&t.a);
    let rb = c.mnt_ok(&t.b);
    let fa = c.lookup_ok(&ra, "fa");
    let fb = c.lookup_ok(&rb, "fb");
    c.getattr(&fb).expect_ok("GETATTR in b");
    drop(c);

    let mut cfg = t.server.cfg.clone();
    cfg.exports = vec![t.a.clone()];
    t.server.restart_with(cfg);

    let mut c = t.server.client();
    assert_eq!(c.getattr(&rb).status(), Nfsstat3::NFS3ERR_STALE);
    assert_eq!(c.getattr(&fb).status(), Nfsstat3::NFS3ERR_STALE);
    assert_eq!(c.read(&fb, 0, 1).status(), Nfsstat3::NFS3ERR_STALE);
    assert_eq!(c.lookup(&rb, "fb").status(), Nfsstat3::NFS3ERR_STALE);
    assert_eq!(c.mnt(&t.b).status(), Mountstat3::MNT3ERR_NOENT);
    // The export that stays keeps working with its old handles.
    let r = c.read(&fa, 0, 10).expect_ok("READ in a");
    assert_eq!(&r.data.in_memory().expect("decoded")[..], b"a");
    c.getattr(&ra).expect_ok("GETATTR root a");
}

#[test]
fn rename_and_link_across_exports_is_xdev() {
    let t = two_exports();
    std::fs::write(t.a.join("f"), b"stay").unwrap();
    // Owned by the caller (fs.protected_hardlinks refuses links to others' files).
    std::os::unix::fs::chown(t.a.join("f"), Some(TEST_UID), Some(TEST_UID)).unwrap();
    let mut c = t.server.client();
    let ra = c.mnt_ok(&t.a);
    let rb = c.mnt_ok(&t.b);
    let f = c.lookup_ok(&ra, "f");

    assert_eq!(
        c.rename(&ra, "f", &rb, "g").status(),
        Nfsstat3::NFS3ERR_XDEV
    );
    assert_eq!(
        c.rename(&rb, "nothing", &ra, "g").status(),
        Nfsstat3::NFS3ERR_XDEV
    );
    assert_eq!(c.link(&f, &rb, "h").status(), Nfsstat3::NFS3ERR_XDEV);

    assert_eq!(std::fs::read(t.a.join("f")).unwrap(), b"stay");
    assert_eq!(std::fs::read_dir(&t.b).unwrap().count(), 0);
    // Within one export both work.
    c.link(&f, &ra, "h").expect_ok("LINK within a");
    c.rename(&ra, "h", &ra, "g").expect_ok("RENAME within a");
    assert_eq!(std::fs::read(t.a.join("g")).unwrap(), b"stay");
}

#[test]
fn auth_none_caller_is_anonymous() {
    let fx = Fixture::new();
    let (mut c, root) = fx.connect();
    c.cred = sunrpc::msg::Credential::None;
    let ok = c
        .create(&root, "anon", 0o644)
        .expect_ok("CREATE with AUTH_NONE");
    let a = attrs(&ok.obj_attributes);
    assert_eq!((a.uid, a.gid), (65534, 65534));
    let md = std::fs::metadata(fx.export.join("anon")).unwrap();
    assert_eq!((md.uid(), md.gid()), (65534, 65534));
}

#[test]
fn private_directory_is_not_searchable_or_listable() {
    let fx = Fixture::new();
    let d = fx.export.join("private");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("inside"), b"x").unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (mut c, root) = fx.connect();
    let dh = c.lookup_ok(&root, "private");
    assert_eq!(c.lookup(&dh, "inside").status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(
        c.readdir(&dh, 0, [0; 8], 4096).status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert_eq!(
        c.readdirplus(&dh, 0, [0; 8], 4096, 4096).status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert_eq!(
        c.create(&dh, "new", 0o644).status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    assert!(!d.join("new").exists());
}

#[test]
fn symlinks_to_another_export_are_not_followed() {
    let t = two_exports();
    std::fs::write(t.b.join("secret"), b"b only").unwrap();
    // absolute and relative links from export a into export b
    std::os::unix::fs::symlink(&t.b, t.a.join("abs")).unwrap();
    std::os::unix::fs::symlink("../b", t.a.join("rel")).unwrap();
    std::os::unix::fs::symlink(t.b.join("secret"), t.a.join("file")).unwrap();
    let mut c = t.server.client();
    let ra = c.mnt_ok(&t.a);
    for n in ["abs", "rel", "file"] {
        let l = c.lookup_ok(&ra, n);
        assert_eq!(
            c.getattr(&l).expect_ok("GETATTR").r#type,
            Ftype3::Nf3lnk,
            "{n}"
        );
        assert_eq!(
            c.lookup(&l, "secret").status(),
            Nfsstat3::NFS3ERR_NOTDIR,
            "{n}"
        );
        assert_eq!(c.read(&l, 0, 100).status(), Nfsstat3::NFS3ERR_INVAL, "{n}");
        assert_eq!(
            c.write(&l, 0, Bytes::from_static(b"x"), StableHow::FileSync)
                .status(),
            Nfsstat3::NFS3ERR_INVAL,
            "{n}"
        );
        assert_eq!(
            c.create(&l, "new", 0o644).status(),
            Nfsstat3::NFS3ERR_NOTDIR,
            "{n}"
        );
    }
    // MNT of a path through a link in a is not followed into b
    assert_eq!(c.mnt(t.a.join("abs")).status(), Mountstat3::MNT3ERR_NOTDIR);
    assert_eq!(c.mnt(t.a.join("rel")).status(), Mountstat3::MNT3ERR_NOTDIR);
    assert_eq!(std::fs::read(t.b.join("secret")).unwrap(), b"b only");
    assert_eq!(std::fs::read_dir(&t.b).unwrap().count(), 1);
}

#[test]
fn devices_fifos_and_sockets_are_never_opened() {
    let fx = Fixture::new();
    let e = &fx.export;
    // what a local user (or a root client without root_squash) could leave in an export
    let mk = |name: &str, mode: u32, dev: libc::dev_t| {
        let p = std::ffi::CString::new(e.join(name).as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mknod reads the NUL-terminated path we own; no memory is shared.
        assert_eq!(
            unsafe { libc::mknod(p.as_ptr(), mode, dev) },
            0,
            "mknod {name}"
        );
    };
    mk("zero", libc::S_IFCHR | 0o666, libc::makedev(1, 5));
    mk("pipe", libc::S_IFIFO | 0o666, 0);
    let _sock = std::os::unix::net::UnixListener::bind(e.join("sock")).unwrap();
    let (mut c, root) = fx.connect();
    c.set_read_timeout(std::time::Duration::from_secs(20));
    for (n, t) in [
        ("zero", Ftype3::Nf3chr),
        ("pipe", Ftype3::Nf3fifo),
        ("sock", Ftype3::Nf3sock),
    ] {
        let fh = c.lookup_ok(&root, n);
        assert_eq!(c.getattr(&fh).expect_ok("GETATTR").r#type, t, "{n}");
        // never opened: reading /dev/zero would answer, a FIFO would hang the call
        assert_eq!(
            c.read(&fh, 0, 4096).status(),
            Nfsstat3::NFS3ERR_INVAL,
            "READ {n}"
        );
        assert_eq!(
            c.write(&fh, 0, Bytes::from_static(b"x"), StableHow::FileSync)
                .status(),
            Nfsstat3::NFS3ERR_INVAL,
            "WRITE {n}"
        );
        assert_eq!(
            c.commit(&fh).status(),
            Nfsstat3::NFS3ERR_INVAL,
            "COMMIT {n}"
        );
    }
    // Only privileged callers make device nodes: not a user, not root squashed to nobody.
    let chr = |dir: &NfsFh3, name: &str| Mknod3args {
        r#where: Diropargs3 {
            dir: dir.clone(),
            name: Bytes::copy_from_slice(name.as_bytes()),
        },
        what: Mknoddata3::Nf3chr(Devicedata3 {
            dev_attributes: mode_sattr(0o666),
            spec: Specdata3 {
                specdata1: 8,
                specdata2: 0,
            },
        }),
    };
    let r: Mknod3res = c.nfs(NFSPROC3_MKNOD, &chr(&root, "sda"));
    assert_eq!(r.status(), Nfsstat3::NFS3ERR_PERM, "MKNOD chr as a user");
    c.set_user(0, 0);
    let r: Mknod3res = c.nfs(NFSPROC3_MKNOD, &chr(&root, "sda"));
    assert_eq!(
        r.status(),
        Nfsstat3::NFS3ERR_PERM,
        "MKNOD chr as squashed root"
    );
    assert!(!e.join("sda").exists());
    // FIFOs need no privilege
    c.set_user(TEST_UID, TEST_UID);
    let fifo = Mknod3args {
        r#where: Diropargs3 {
            dir: root.clone(),
            name: Bytes::from_static(b"fifo2"),
        },
        what: Mknoddata3::Nf3fifo(mode_sattr(0o600)),
    };
    let r: Mknod3res = c.nfs(NFSPROC3_MKNOD, &fifo);
    r.expect_ok("MKNOD fifo");
    let m = std::fs::symlink_metadata(e.join("fifo2")).unwrap();
    assert_eq!(m.mode() & libc::S_IFMT, libc::S_IFIFO);
    assert_eq!(m.uid(), TEST_UID);
}

#[test]
fn client_address_acls_are_enforced() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = mkdir_mode(&tmp.path().join("mine"), 0o777);
    let theirs = mkdir_mode(&tmp.path().join("theirs"), 0o777);
    std::fs::write(theirs.join("f"), b"not for 127.0.0.1").unwrap();
    let exports = tmp.path().join("exports");
    let write = |theirs_clients: &str| {
        std::fs::write(
            &exports,
            format!(
                "{} 127.0.0.0/8(rw,insecure)\n{} {theirs_clients}\n",
                mine.display(),
                theirs.display()
            ),
        )
        .unwrap()
    };
    // first everyone on loopback, to get handles a client could keep
    write("127.0.0.1(rw,insecure)");
    let mut s = Server::with_exports_file(&tmp.path().join("state"), &exports);
    let mut c = s.client();
    let rt = c.mnt_ok(&theirs);
    let f = c.lookup_ok(&rt, "f");
    drop(c);
    // then only hosts elsewhere: 192.0.2.0/24 and a name that does not resolve here
    write("192.0.2.0/24(rw,insecure) nosuch.invalid(rw,insecure)");
    let cfg = s.cfg.clone();
    s.restart_with(cfg);
    let mut c = s.client();
    assert_eq!(c.mnt(&theirs).status(), Mountstat3::MNT3ERR_ACCES);
    assert_eq!(c.getattr(&rt).status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(c.getattr(&f).status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(c.read(&f, 0, 100).status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(c.lookup(&rt, "f").status(), Nfsstat3::NFS3ERR_ACCES);
    assert_eq!(
        c.write(&f, 0, Bytes::from_static(b"x"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    // the export this client may use still works
    let rm = c.mnt_ok(&mine);
    c.create_ok(&rm, "ok", 0o644);
    assert_eq!(
        std::fs::read(theirs.join("f")).unwrap(),
        b"not for 127.0.0.1"
    );
}
