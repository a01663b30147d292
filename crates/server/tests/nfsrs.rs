//! The nfs-rs crate (a pure Rust NFSv3 client) as a second real client against rnfsd.

mod common;

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use bytes::Bytes;
use common::nfsrs;
use common::*;
use futures::TryStreamExt;
use nfs_rs::{Mount, Nfs3ErrorCode, NfsError, Time};

/// Mounts the fixture's export with nfs-rs as `uid`/`gid` (ephemeral source port).
async fn mount_as(fx: &Fixture, uid: u32, gid: u32, extra: &str) -> Box<dyn Mount> {
    let url = format!(
        "{}&noresvport=true&uid={uid}&gid={gid}{extra}",
        fx.server.url(&fx.export)
    );
    nfs_rs::parse_url_and_mount(&url)
        .await
        .unwrap_or_else(|e| panic!("nfs-rs cannot mount {url}: {e}"))
}

fn nfs3_status(e: &NfsError) -> Option<&Nfs3ErrorCode> {
    match e {
        NfsError::Nfs3(c) => Some(c),
        _ => None,
    }
}

fn assert_nfs3_err<T: std::fmt::Debug>(r: nfs_rs::Result<T>, want: Nfs3ErrorCode, what: &str) {
    match r {
        Ok(v) => panic!("{what}: succeeded ({v:?}), expected {want:?}"),
        Err(e) => assert_eq!(nfs3_status(&e), Some(&want), "{what}: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_write_read_rename_remove() {
    let fx = Fixture::new();
    let m = mount_as(&fx, 1000, 1000, "").await;

    let created = m.create_path("f.txt", Some(0o644)).await.expect("create");
    let a = created
        .attr
        .as_ref()
        .expect("create returned no attributes");
    assert_eq!((a.uid, a.gid, a.file_mode & 0o7777), (1000, 1000, 0o644));

    // Larger than one WRITE so the client splits it.
    let data = Bytes::from(pattern(3, 3 * 1024 * 1024 + 17));
    let n = nfs_rs::write_all(&*m, created.fh.clone(), 0, data.clone())
        .await
        .expect("write_all");
    assert_eq!(n, data.len() as u64);

    let mut back = Vec::new();
    while back.len() < data.len() {
        let chunk = m
            .read(created.fh.clone(), back.len() as u64, 1 << 20)
            .await
            .expect("read");
        assert!(!chunk.is_empty(), "short read at {}", back.len());
        back.extend_from_slice(&chunk);
    }
    assert!(back == data[..], "data read back differs");
    assert!(std::fs::read(fx.export.join("f.txt")).unwrap() == data[..]);
    assert_eq!(
        m.getattr(created.fh.clone()).await.unwrap().filesize,
        data.len() as u64
    );

    m.rename_path("f.txt", "g.txt").await.expect("rename");
    assert!(!fx.export.join("f.txt").exists());
    assert!(fx.export.join("g.txt").exists());
    assert_nfs3_err(
        m.lookup_path("f.txt").await,
        Nfs3ErrorCode::NFS3ERR_NOENT,
        "lookup of the old name",
    );
    // The handle follows the file.
    let g = m.lookup_path("g.txt").await.expect("lookup new name");
    assert_eq!(g.fh, created.fh);

    m.remove_path("g.txt").await.expect("remove");
    assert!(!fx.export.join("g.txt").exists());
    assert_nfs3_err(
        m.remove_path("g.txt").await,
        Nfs3ErrorCode::NFS3ERR_NOENT,
        "second remove",
    );
    m.umount().await.expect("umount");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mkdir_and_rmdir() {
    let fx = Fixture::new();
    let m = mount_as(&fx, 1000, 1000, "").await;
    let d = m.mkdir_path("dir", 0o750).await.expect("mkdir");
    let md = std::fs::metadata(fx.export.join("dir")).unwrap();
    assert!(md.is_dir());
    assert_eq!(md.permissions().mode() & 0o7777, 0o750);
    assert_eq!(md.uid(), 1000);
    assert_eq!(d.attr.as_ref().unwrap().type_, 2, "NF3DIR");

    m.mkdir_path("dir/nested", 0o700)
        .await
        .expect("nested mkdir");
    m.create_path("dir/nested/file", Some(0o600))
        .await
        .expect("create in nested dir");
    assert!(fx.export.join("dir/nested/file").is_file());
    assert_nfs3_err(
        m.mkdir_path("dir", 0o755).await,
        Nfs3ErrorCode::NFS3ERR_EXIST,
        "mkdir of an existing name",
    );
    assert_nfs3_err(
        m.rmdir_path("dir/nested").await,
        Nfs3ErrorCode::NFS3ERR_NOTEMPTY,
        "rmdir of a non-empty directory",
    );
    m.remove_path("dir/nested/file").await.expect("remove");
    m.rmdir_path("dir/nested").await.expect("rmdir nested");
    m.rmdir_path("dir").await.expect("rmdir");
    assert!(!fx.export.join("dir").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_readlink_and_hard_link() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("target"), b"linked").unwrap();
    // Owned by the caller: with fs.protected_hardlinks=1 Linux refuses (EPERM) links to files
    // the caller neither owns nor may read and write, and the server links as the caller.
    std::os::unix::fs::chown(fx.export.join("target"), Some(1000), Some(1000)).unwrap();
    let m = mount_as(&fx, 1000, 1000, "").await;

    let l = m
        .symlink_path("some/where/../target", "lnk")
        .await
        .expect("symlink");
    assert_eq!(l.attr.as_ref().map(|a| a.type_), Some(5), "NF3LNK");
    assert_eq!(
        std::fs::read_link(fx.export.join("lnk"))
            .unwrap()
            .to_str()
            .unwrap(),
        "some/where/../target"
    );
    assert_eq!(
        m.readlink_path("lnk").await.expect("readlink"),
        "some/where/../target"
    );
    // An absolute target is stored as text, not resolved.
    m.symlink_path("/etc/passwd", "abs").await.expect("symlink");
    assert_eq!(m.readlink_path("abs").await.unwrap(), "/etc/passwd");

    let attr = m.link_path("target", "hard").await.expect("link");
    assert_eq!(attr.nlink, 2);
    let a = std::fs::metadata(fx.export.join("target")).unwrap();
    let b = std::fs::metadata(fx.export.join("hard")).unwrap();
    assert_eq!(a.ino(), b.ino());
    assert_eq!(a.nlink(), 2);
    assert_eq!(std::fs::read(fx.export.join("hard")).unwrap(), b"linked");
    assert_nfs3_err(
        m.link_path("target", "hard").await,
        Nfs3ErrorCode::NFS3ERR_EXIST,
        "link over an existing name",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setattr_mode_owner_size_and_times() {
    // Changing the owner needs root, so the export does not squash it.
    let fx = Fixture::with_options(0o777, "rw,insecure,no_root_squash");
    let m = mount_as(&fx, 0, 0, "").await;
    let f = m.create_path("f", Some(0o644)).await.expect("create");
    let path = fx.export.join("f");
    std::fs::write(&path, vec![1u8; 1000]).unwrap();

    m.setattr(
        f.fh.clone(),
        None,
        Some(0o600),
        None,
        None,
        None,
        None,
        None,
    )
    .await
    .expect("chmod");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);

    m.setattr(
        f.fh.clone(),
        None,
        None,
        Some(1234),
        Some(4321),
        None,
        None,
        None,
    )
    .await
    .expect("chown");
    let md = std::fs::metadata(&path).unwrap();
    assert_eq!((md.uid(), md.gid()), (1234, 4321));

    let (a, at, mt) = nfsrs::truncate_extend_and_set_times(&*m, &f.fh, &path).await;
    assert_eq!(a.file_mode & 0o7777, 0o600);
    assert_eq!((a.uid, a.gid, a.filesize), (1234, 4321, 5000));
    assert_eq!(a.atime, at);
    assert_eq!(a.mtime, mt);

    // A guard that does not match the ctime is refused.
    let stale = Time {
        seconds: 1,
        nseconds: 0,
    };
    assert_nfs3_err(
        m.setattr(
            f.fh.clone(),
            Some(stale),
            Some(0o644),
            None,
            None,
            None,
            None,
            None,
        )
        .await,
        Nfs3ErrorCode::NFS3ERR_NOT_SYNC,
        "guarded setattr",
    );
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o7777, 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readdir_and_readdirplus() {
    let fx = Fixture::new();
    let n = 700;
    let mut want = HashMap::new();
    for i in 0..n {
        let name = format!("file-{i:04}");
        std::fs::write(fx.export.join(&name), vec![0u8; i % 37]).unwrap();
        want.insert(name, (i % 37) as u64);
    }
    std::fs::create_dir(fx.export.join("subdir")).unwrap();
    // Small directory replies, so that the listing takes many calls.
    let m = mount_as(&fx, 1000, 1000, "&readdir-buffer=2048,2048").await;
    let root = m.getfh().await;

    let entries: Vec<nfs_rs::ReaddirEntry> = m
        .readdir(root.clone())
        .await
        .try_collect()
        .await
        .expect("readdir");
    let mut names: HashMap<String, u32> = HashMap::new();
    for e in &entries {
        *names.entry(e.file_name.clone()).or_default() += 1;
    }
    assert_eq!(entries.len(), n + 1, "readdir entry count");
    assert!(names.values().all(|c| *c == 1), "duplicate names");
    assert!(want.keys().all(|k| names.contains_key(k)));
    assert!(names.contains_key("subdir"));

    let plus: Vec<nfs_rs::ReaddirplusEntry> = m
        .readdirplus(root.clone())
        .await
        .try_collect()
        .await
        .expect("readdirplus");
    assert_eq!(plus.len(), n + 1, "readdirplus entry count");
    let mut seen = 0;
    for e in &plus {
        let a = e.attr.as_ref().expect("entry without attributes");
        assert_eq!(a.fileid, e.fileid);
        assert!(!e.handle.is_empty(), "entry without handle");
        if e.file_name == "subdir" {
            assert_eq!(a.type_, 2);
            continue;
        }
        assert_eq!(a.type_, 1, "{}", e.file_name);
        assert_eq!(a.filesize, want[&e.file_name], "{}", e.file_name);
        seen += 1;
    }
    assert_eq!(seen, n);
    // The handles are usable.
    let e = plus.iter().find(|e| e.file_name == "file-0036").unwrap();
    assert_eq!(m.getattr(e.handle.clone()).await.unwrap().filesize, 36);
}
