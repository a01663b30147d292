//! The nfs-rs crate as an NFSv4.1 (and NFSv4.0) client against rnfsd: the export is reached
//! through the pseudo file system (nfs://127.0.0.1/<export path>), no MOUNT protocol.
//!
//! nfs-rs 0.8 refuses `version=4.2` itself ("NFSv4.2 is not supported"); the 4.2 operations are
//! covered by the raw client in nfs4_v42.rs.

mod common;

use std::collections::HashMap;
use std::hash::Hasher;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use bytes::Bytes;
use common::nfsrs;
use common::*;
use futures::TryStreamExt;
use nfs_rs::{Mount, Nfs4ErrorCode, NfsError};

/// Mounts the fixture's export over NFSv4.`version` as `uid`/`gid` (ephemeral source port).
async fn mount_v4(fx: &Fixture, version: &str, uid: u32, gid: u32, extra: &str) -> Box<dyn Mount> {
    let url = format!(
        "nfs://127.0.0.1{}?version={version}&nfsport={}&noresvport=true&uid={uid}&gid={gid}{extra}",
        fx.export.display(),
        fx.server.port
    );
    nfs_rs::parse_url_and_mount(&url)
        .await
        .unwrap_or_else(|e| panic!("nfs-rs cannot mount {url}: {e}"))
}

fn assert_nfs4_err<T: std::fmt::Debug>(r: nfs_rs::Result<T>, want: Nfs4ErrorCode, what: &str) {
    match r {
        Ok(v) => panic!("{what}: succeeded ({v:?}), expected {want:?}"),
        Err(NfsError::Nfs4(c)) => assert_eq!(c, want, "{what}"),
        Err(e) => panic!("{what}: {e:?}, expected {want:?}"),
    }
}

/// Reads `len` bytes in calls of the negotiated size (a 1 MiB READ does not fit the 1 MiB
/// replies nfs-rs asks for in CREATE_SESSION: NFS4ERR_REP_TOO_BIG).
async fn read_all(m: &dyn Mount, fh: Bytes, len: usize) -> Vec<u8> {
    let max = m.get_max_read_size();
    assert!(max >= 64 * 1024, "max read size {max}");
    let mut back = Vec::with_capacity(len);
    while back.len() < len {
        let chunk = m
            .read(fh.clone(), back.len() as u64, max)
            .await
            .expect("read");
        assert!(!chunk.is_empty(), "short read at {}", back.len());
        back.extend_from_slice(&chunk);
    }
    back
}

async fn create_write_read_rename_remove(version: &str) {
    let fx = Fixture::new();
    let m = mount_v4(&fx, version, 1000, 1000, "").await;

    let created = m.create_path("f.txt", Some(0o640)).await.expect("create");
    let md = std::fs::metadata(fx.export.join("f.txt")).unwrap();
    assert_eq!(
        (md.uid(), md.gid(), md.mode() & 0o7777),
        (1000, 1000, 0o640)
    );

    let data = Bytes::from(pattern(3, 3 * 1024 * 1024 + 17));
    let n = nfs_rs::write_all(&*m, created.fh.clone(), 0, data.clone())
        .await
        .expect("write_all");
    assert_eq!(n, data.len() as u64);
    m.close(created.fh.clone()).await.expect("close");
    assert!(std::fs::read(fx.export.join("f.txt")).unwrap() == data[..]);

    let opened = m.open_path("f.txt", nfs_rs::OPEN_READ).await.expect("open");
    assert_eq!(opened.fh, created.fh);
    let back = read_all(&*m, opened.fh.clone(), data.len()).await;
    assert!(back == data[..], "data read back differs");
    m.close(opened.fh.clone()).await.expect("close");
    assert_eq!(
        m.getattr(created.fh.clone()).await.unwrap().filesize,
        data.len() as u64
    );

    m.rename_path("f.txt", "g.txt").await.expect("rename");
    assert!(!fx.export.join("f.txt").exists());
    assert!(fx.export.join("g.txt").exists());
    assert_nfs4_err(
        m.lookup_path("f.txt").await,
        Nfs4ErrorCode::NFS4ERR_NOENT,
        "lookup of the old name",
    );
    // The handle follows the file.
    assert_eq!(m.lookup_path("g.txt").await.unwrap().fh, created.fh);

    m.remove_path("g.txt").await.expect("remove");
    assert!(!fx.export.join("g.txt").exists());
    assert_nfs4_err(
        m.remove_path("g.txt").await,
        Nfs4ErrorCode::NFS4ERR_NOENT,
        "second remove",
    );
    m.umount().await.expect("umount");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v41_create_write_read_rename_remove() {
    create_write_read_rename_remove("4.1").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v40_create_write_read_rename_remove() {
    create_write_read_rename_remove("4.0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v41_mkdir_rmdir_symlink_and_hard_link() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("target"), b"linked").unwrap();
    // Owned by the caller: with fs.protected_hardlinks=1 Linux refuses links to files the
    // caller neither owns nor may write, and the server links as the caller.
    std::os::unix::fs::chown(fx.export.join("target"), Some(1000), Some(1000)).unwrap();
    let m = mount_v4(&fx, "4.1", 1000, 1000, "").await;

    let d = m.mkdir_path("dir", 0o750).await.expect("mkdir");
    let md = std::fs::metadata(fx.export.join("dir")).unwrap();
    assert!(md.is_dir());
    assert_eq!(md.permissions().mode() & 0o7777, 0o750);
    assert_eq!(md.uid(), 1000);
    assert!(!d.fh.is_empty());
    m.mkdir_path("dir/nested", 0o700)
        .await
        .expect("nested mkdir");
    let f = m
        .create_path("dir/nested/file", Some(0o600))
        .await
        .expect("create in nested dir");
    m.close(f.fh).await.expect("close");
    assert!(fx.export.join("dir/nested/file").is_file());
    assert_nfs4_err(
        m.mkdir_path("dir", 0o755).await,
        Nfs4ErrorCode::NFS4ERR_EXIST,
        "mkdir of an existing name",
    );
    assert_nfs4_err(
        m.rmdir_path("dir/nested").await,
        Nfs4ErrorCode::NFS4ERR_NOTEMPTY,
        "rmdir of a non-empty directory",
    );
    m.remove_path("dir/nested/file").await.expect("remove");
    m.rmdir_path("dir/nested").await.expect("rmdir nested");
    m.rmdir_path("dir").await.expect("rmdir");
    assert!(!fx.export.join("dir").exists());

    m.symlink_path("some/where/../target", "lnk")
        .await
        .expect("symlink");
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
    assert_eq!(
        m.lookup_path("lnk").await.unwrap().attr.map(|a| a.type_),
        Some(5),
        "NF4LNK"
    );

    let attr = m.link_path("target", "hard").await.expect("link");
    assert_eq!(attr.nlink, 2);
    let a = std::fs::metadata(fx.export.join("target")).unwrap();
    let b = std::fs::metadata(fx.export.join("hard")).unwrap();
    assert_eq!(a.ino(), b.ino());
    assert_eq!(a.nlink(), 2);
    assert_nfs4_err(
        m.link_path("target", "hard").await,
        Nfs4ErrorCode::NFS4ERR_EXIST,
        "link over an existing name",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v41_setattr_mode_size_and_times() {
    let fx = Fixture::new();
    let m = mount_v4(&fx, "4.1", 1000, 1000, "").await;
    let f = m.create_path("f", Some(0o644)).await.expect("create");
    m.close(f.fh.clone()).await.expect("close");
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

    let (a, at, mt) = nfsrs::truncate_extend_and_set_times(&*m, &f.fh, &path).await;
    assert_eq!(a.file_mode & 0o7777, 0o600);
    assert_eq!((a.uid, a.gid, a.filesize), (1000, 1000, 5000));
    assert_eq!(a.atime, at);
    assert_eq!(a.mtime, mt);

    // Changing the owner to someone else is not allowed for a non-root caller.
    assert!(
        m.setattr(f.fh.clone(), None, None, Some(1234), None, None, None, None)
            .await
            .is_err(),
        "chown by a non-root caller succeeded"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().uid(), 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v41_readdir_of_2000_entries() {
    let fx = Fixture::new();
    let n = 2000;
    let mut want = HashMap::new();
    for i in 0..n {
        let name = format!("entry-with-a-longer-name-{i:05}");
        std::fs::write(fx.export.join(&name), vec![0u8; i % 41]).unwrap();
        want.insert(name, (i % 41) as u64);
    }
    std::fs::create_dir(fx.export.join("subdir")).unwrap();
    // Small directory replies, so that the listing takes many calls.
    let m = mount_v4(&fx, "4.1", 1000, 1000, "&readdir-buffer=4096,8192").await;
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
    assert!(
        names.values().all(|c| *c == 1),
        "duplicate names in the listing"
    );
    assert!(!names.contains_key(".") && !names.contains_key(".."));
    assert_eq!(entries.len(), n + 1, "readdir entry count");
    assert!(want.keys().all(|k| names.contains_key(k)));
    assert!(names.contains_key("subdir"));

    let plus: Vec<nfs_rs::ReaddirplusEntry> = m
        .readdirplus(root.clone())
        .await
        .try_collect()
        .await
        .expect("readdirplus");
    assert_eq!(plus.len(), n + 1, "readdirplus entry count");
    for e in &plus {
        let a = e.attr.as_ref().expect("entry without attributes");
        if e.file_name == "subdir" {
            assert_eq!(a.type_, 2);
            continue;
        }
        assert_eq!(a.type_, 1, "{}", e.file_name);
        assert_eq!(a.filesize, want[&e.file_name], "{}", e.file_name);
        let ino = std::fs::metadata(fx.export.join(&e.file_name))
            .unwrap()
            .ino();
        assert_eq!(e.fileid, ino, "{}", e.file_name);
    }
}

fn checksum(data: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(data);
    h.finish()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v41_64mib_file_round_trip() {
    round_trip(Fixture::new(), 64 << 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v41_round_trip_with_reads_spliced_from_the_page_cache() {
    round_trip(Fixture::with_args(&["--splice-reads", "always"]), 16 << 20).await;
}

/// A file of `size` bytes written and read back over NFSv4.1.
async fn round_trip(fx: Fixture, size: usize) {
    let m = mount_v4(&fx, "4.1", 1000, 1000, "").await;
    let data = Bytes::from(pattern(0x64, size));
    let sum = checksum(&data);

    let f = m.create_path("big", Some(0o644)).await.expect("create");
    let n = nfs_rs::write_all(&*m, f.fh.clone(), 0, data.clone())
        .await
        .expect("write_all");
    assert_eq!(n, size as u64);
    m.close(f.fh.clone()).await.expect("close");
    assert_eq!(
        std::fs::metadata(fx.export.join("big")).unwrap().len(),
        size as u64
    );
    drop(data);

    let o = m.open_path("big", nfs_rs::OPEN_READ).await.expect("open");
    let back = read_all(&*m, o.fh.clone(), size).await;
    m.close(o.fh).await.expect("close");
    assert_eq!(back.len(), size);
    assert_eq!(checksum(&back), sum, "checksum of the data read back");
    assert_eq!(
        checksum(&std::fs::read(fx.export.join("big")).unwrap()),
        sum,
        "checksum of the file on disk"
    );
    m.umount().await.expect("umount");
}
