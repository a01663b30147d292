//! Backend tests on a temporary directory (run as root, as the server does).

// System calls the tests make themselves (signals, limits, device nodes, holes, credentials)
// to set up and check what they test.
#![allow(unsafe_code)]

mod common;

use std::net::IpAddr;

use common::*;
use vfs::exports::parse_exports;
use vfs::{Client, CreateMode, Extent, SetAttrs, Span, Stability, Vfs, VfsConfig, VfsError};

fn setup(opts: &str) -> (tempfile::TempDir, tempfile::TempDir, Vfs) {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let vfs = vfs_exporting(dir.path(), opts, state.path());
    (dir, state, vfs)
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
        .unwrap()
        .value;
    assert_eq!(attr.mode, 0o640);
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    vfs.write(&c, &n, 0, b"hello", Stability::FileSync).unwrap();
    let (data, eof, a) = vfs.read(&c, &n, 0, 100).unwrap();
    assert_eq!(&data[..], b"hello");
    assert!(eof);
    assert_eq!(a.size, 5);
    let fh2 = vfs.lookup(&c, &r, b"f").unwrap().fh;
    assert_eq!(fh2, fh);
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"hello");
    // .. at the root is the root.
    let up = vfs.lookup(&c, &r, b"..").unwrap().fh;
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

#[test]
fn a_cached_handle_vouches_only_for_its_exact_bytes() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    // LOOKUP caches the file's descriptor under its handle; resolving it again needs no MAC
    let fh = vfs.lookup(&c, &r, b"f").unwrap().fh;
    assert!(vfs.authorize(&fh, &client(0)).is_ok());
    for i in 0..fh.len() {
        for bit in [0x01u8, 0x80] {
            let mut bad = fh.to_vec();
            bad[i] ^= bit;
            assert!(
                vfs.check_handle(&bad).is_err(),
                "byte {i} flipped passed the check"
            );
            assert!(
                vfs.authorize(&bad, &client(0)).is_err(),
                "byte {i} flipped resolved"
            );
        }
    }
    // shorter and longer than the cached one
    assert!(vfs.authorize(&fh[..fh.len() - 1], &client(0)).is_err());
    let mut long = fh.to_vec();
    long.push(0);
    assert!(vfs.authorize(&long, &client(0)).is_err());
    assert!(vfs.authorize(&fh, &client(0)).is_ok());
}

#[test]
fn host_name_rules_match_resolved_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let text = format!("{} localhost(rw) 10.9.9.9(ro)\n", dir.path().display());
    let vfs = Vfs::new(VfsConfig {
        exports: parse_exports(&text, "test").unwrap(),
        state_dir: state.path().to_path_buf(),
        fd_cache: 16,
    })
    .unwrap();
    let (fh, _) = vfs
        .mount(dir.path().as_os_str().as_encoded_bytes(), &client(0))
        .unwrap();
    let (c, _) = vfs.authorize(&fh, &client(0)).unwrap();
    assert!(c.writable);
    let stranger = Client {
        addr: IpAddr::from([10, 1, 1, 1]),
        ..client(0)
    };
    assert_eq!(
        vfs.authorize(&fh, &stranger).err(),
        Some(VfsError::ExportDenied)
    );
}

#[test]
fn root_squash_and_readdir_cookies() {
    let (dir, _s, vfs) = setup("rw");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    assert_eq!(c.creds.uid, 65534, "root is squashed by default");
    // The root-owned 0755 export refuses the squashed root.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (c, r2) = vfs.authorize(&root, &client(0)).unwrap();
    assert_eq!(
        vfs.create(&c, &r2, b"x", CreateMode::Guarded, &SetAttrs::default())
            .err(),
        Some(VfsError::Errno(libc::EACCES))
    );
    drop(r);
    // Threads that call the backend keep the last caller's fs identity; become root again.
    vfs::cred::as_root(|| {
        for i in 0..300 {
            std::fs::write(dir.path().join(format!("n{i:03}")), b"").unwrap();
        }
    });
    // Page through the directory 7 entries at a time, whatever the caller expects (the size
    // of the first read of the directory), and all of it in one call (reads that grow).
    let verf = vfs.cookie_verifier(&r2);
    let mut last_cookie = 0;
    for (expect, per_call) in [(0, 7), (1, 7), (7, 7), (1000, 7), (1, usize::MAX)] {
        let mut seen = Vec::new();
        let mut cookie = 0;
        let mut calls = 0;
        loop {
            let mut page = Vec::new();
            let eof = vfs
                .readdir(&c, &r2, cookie, verf, true, expect, |e| {
                    if page.len() == per_call {
                        return false;
                    }
                    assert!(e.plus.is_some());
                    page.push(e);
                    true
                })
                .unwrap();
            calls += 1;
            cookie = page.last().map_or(cookie, |e| e.cookie);
            seen.extend(page.into_iter().map(|e| e.name));
            if eof {
                break;
            }
        }
        let all = seen.len();
        seen.retain(|n| &n[..] != b"." && &n[..] != b"..");
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 300, "expect {expect}");
        assert_eq!(all, 302, "expect {expect}: each entry once");
        if per_call == usize::MAX {
            assert_eq!(calls, 1);
        }
        last_cookie = cookie;
    }
    assert_eq!(
        vfs.readdir(&c, &r2, last_cookie, [1; 8], false, 0, |_| true)
            .err(),
        Some(VfsError::BadCookie)
    );
}

/// A transport for `read_to`: pages or not, and at most one buffer of `Some(len)` bytes.
struct Target {
    pages: bool,
    buffer: std::cell::Cell<Option<usize>>,
}

impl payload::PayloadTarget for Target {
    fn takes_pages(&self) -> bool {
        self.pages
    }
    fn fill(&self, len: usize, fill: &mut dyn FnMut(&mut [u8]) -> usize) -> Option<bytes::Bytes> {
        let mut buf = vec![0u8; self.buffer.take()?.min(len)];
        let n = fill(&mut buf);
        buf.truncate(n);
        Some(bytes::Bytes::from(buf))
    }
}

#[test]
fn read_to_takes_what_the_transport_offers() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let body: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.path().join("f"), &body).unwrap();
    let fh = vfs.lookup(&c, &r, b"f").unwrap().fh;
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    let bytes = |p: &payload::Payload| match p {
        payload::Payload::Bytes(b) => b.clone(),
        payload::Payload::Pages(_) => panic!("pages where bytes were expected"),
    };
    // a transport buffer: the data is read into it (a short one makes a short READ)
    let t = Target {
        pages: false,
        buffer: std::cell::Cell::new(Some(1000)),
    };
    let (data, eof, attr) = vfs.read_to(&c, &n, 100, 4096, &t).unwrap();
    assert_eq!(
        (&bytes(&data)[..], eof, attr.size),
        (&body[100..1100], false, 200_000)
    );
    // no buffer left: memory of its own, the whole count
    let (data, eof, _) = vfs.read_to(&c, &n, 196_000, 8192, &t).unwrap();
    assert_eq!((&bytes(&data)[..], eof), (&body[196_000..], true));
    // READ_PLUS the same ways: one data extent of a dense file
    let t = Target {
        pages: false,
        buffer: std::cell::Cell::new(Some(1 << 20)),
    };
    for _ in 0..2 {
        let (x, eof, _) = vfs.read_extents_to(&c, &n, 0, 300_000, &t).unwrap();
        match &x[..] {
            [vfs::SentExtent::Data { offset: 0, data }] => assert_eq!(&bytes(data)[..], &body[..]),
            other => panic!("{other:?}"),
        }
        assert!(eof);
    }
}

#[test]
fn read_plus_into_a_buffer_matches_read_plus() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    // 64 KiB of data, a 1 MiB hole, 64 KiB of data
    let path = dir.path().join("sparse");
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::create(&path).unwrap();
        f.write_all_at(&[b'a'; 65536], 0).unwrap();
        f.write_all_at(&[b'b'; 65536], 65536 + (1 << 20)).unwrap();
    }
    let fh = vfs.lookup(&c, &r, b"sparse").unwrap().fh;
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    for (offset, count) in [
        (0u64, 1u32 << 20),
        (60_000, 200_000),
        (65536 + (1 << 20) - 10, 100),
    ] {
        let (own, eof, _) = vfs.read_extents(&c, &n, offset, count).unwrap();
        let mut buf = vec![0xeeu8; count as usize];
        let (spans, eof2, _) = vfs.read_extents_into(&c, &n, offset, &mut buf).unwrap();
        assert_eq!(eof, eof2);
        assert_eq!(
            own.len(),
            spans.len(),
            "{offset}+{count}: {own:?} vs {spans:?}"
        );
        let mut next = 0;
        for (o, s) in own.iter().zip(&spans) {
            match (o, s) {
                (Extent::Data { offset: a, data }, Span::Data { offset: b, at, len }) => {
                    assert_eq!((a, data.len()), (b, *len));
                    assert_eq!(*at, next, "data spans are back to back");
                    assert_eq!(&buf[*at..at + len], &data[..]);
                    next += len;
                }
                (Extent::Hole { offset: a, len: x }, Span::Hole { offset: b, len: y }) => {
                    assert_eq!((a, x), (b, y));
                }
                _ => panic!("{offset}+{count}: {o:?} vs {s:?}"),
            }
        }
    }
    // the buffer bounds what is read, whatever the extents
    let mut small = vec![0u8; 10];
    let (spans, eof, _) = vfs.read_extents_into(&c, &n, 0, &mut small).unwrap();
    assert_eq!(
        spans,
        vec![Span::Data {
            offset: 0,
            at: 0,
            len: 10
        }]
    );
    assert!(!eof);
    assert_eq!(&small, &[b'a'; 10]);
}

/// Descriptors of this process still open on `path`, a removed file.
fn open_on_removed(path: &std::path::Path) -> usize {
    let target = format!("{} (deleted)", path.display());
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| t.as_os_str().as_encoded_bytes() == target.as_bytes())
        .count()
}

#[test]
fn removing_the_last_link_closes_cached_descriptors() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let make = |name: &[u8]| {
        let (fh, _) = vfs
            .create(&c, &r, name, CreateMode::Unchecked, &SetAttrs::default())
            .unwrap()
            .value;
        let (c2, n) = vfs.authorize(&fh, &client(0)).unwrap();
        vfs.write(&c2, &n, 0, &[7u8; 8192], Stability::FileSync)
            .unwrap();
        // a READ leaves the data descriptor in the cache
        vfs.read(&c2, &n, 0, 10).unwrap();
        fh
    };
    // REMOVE of the last link: its space must be freed, so no descriptor may stay open
    make(b"f");
    let f = dir.path().join("f");
    vfs.remove(&c, &r, b"f", false).unwrap();
    assert_eq!(open_on_removed(&f), 0, "REMOVE left {f:?} open");
    // RENAME over a file: the replaced file is gone too
    make(b"g");
    make(b"h");
    let g = dir.path().join("g");
    vfs.rename(&c, &r, b"h", &r, b"g").unwrap();
    assert_eq!(
        open_on_removed(&g),
        0,
        "RENAME left the replaced {g:?} open"
    );
    // a file with another link keeps its descriptors (and its data)
    let fh = make(b"k");
    std::fs::hard_link(dir.path().join("k"), dir.path().join("k2")).unwrap();
    vfs.remove(&c, &r, b"k", false).unwrap();
    let (c3, n) = vfs.authorize(&fh, &client(0)).unwrap();
    assert_eq!(vfs.read(&c3, &n, 0, 4).unwrap().0.len(), 4);
}

/// READDIRPLUS of `dir`: name -> (handle, attributes).
fn list_plus(
    vfs: &Vfs,
    c: &vfs::Caller,
    dir: &vfs::Node,
) -> std::collections::HashMap<Vec<u8>, (bytes::Bytes, vfs::Attr)> {
    let mut out = std::collections::HashMap::new();
    vfs.readdir(c, dir, 0, [0; 8], true, 0, |e| {
        let plus = e.plus.expect("READDIRPLUS entry without handle");
        out.insert(e.name.to_vec(), plus);
        true
    })
    .unwrap();
    out
}

#[test]
fn listing_cached_files_gives_fresh_attributes_and_current_handles() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let mut handles = Vec::new();
    for name in [&b"a"[..], b"b", b"c"] {
        let (fh, _) = vfs
            .create(&c, &r, name, CreateMode::Unchecked, &SetAttrs::default())
            .unwrap()
            .value;
        // resolving keeps a descriptor, which listings then find by inode number
        vfs.authorize(&fh, &client(0)).unwrap();
        handles.push(fh);
    }
    std::fs::hard_link(dir.path().join("a"), dir.path().join("a2")).unwrap();
    let first = list_plus(&vfs, &c, &r);
    assert_eq!(first[&b"a"[..]].0, handles[0]);
    assert_eq!(
        first[&b"a2"[..]].0,
        handles[0],
        "a hard link has the same handle"
    );
    assert_eq!(first[&b"b"[..]].0, handles[1]);

    // attributes changed behind the server's back are seen
    std::fs::set_permissions(dir.path().join("b"), std::fs::Permissions::from_mode(0o604)).unwrap();
    std::fs::write(dir.path().join("b"), b"12345").unwrap();
    // a cached file replaced behind the server's back: the new file's handle, never the old
    let old_ino = std::fs::metadata(dir.path().join("c")).unwrap().ino();
    std::fs::remove_file(dir.path().join("c")).unwrap();
    std::fs::write(dir.path().join("c"), b"new").unwrap();
    let new_ino = std::fs::metadata(dir.path().join("c")).unwrap().ino();
    assert_ne!(
        old_ino, new_ino,
        "the cached descriptor keeps the old number taken"
    );

    let second = list_plus(&vfs, &c, &r);
    let (bfh, battr) = &second[&b"b"[..]];
    assert_eq!(bfh, &handles[1]);
    assert_eq!((battr.mode, battr.size), (0o604, 5));
    let (cfh, cattr) = &second[&b"c"[..]];
    assert_ne!(cfh, &handles[2]);
    assert_eq!((cattr.fileid, cattr.size), (new_ino, 3));
    let (_, n) = vfs.authorize(cfh, &client(0)).unwrap();
    assert_eq!(n.attr.fileid, new_ino);
    assert_eq!(
        vfs.authorize(&handles[2], &client(0)).err(),
        Some(VfsError::Stale)
    );
    // and every entry agrees with a LOOKUP of its name
    for (name, (fh, attr)) in &second {
        if name == b"." || name == b".." {
            continue;
        }
        let (lfh, lattr) = vfs.lookup(&c, &r, name).map(|n| (n.fh, n.attr)).unwrap();
        assert_eq!((&lfh, lattr.fileid), (fh, attr.fileid), "{name:?}");
    }
}

#[test]
fn a_file_system_mounted_inside_an_export_is_not_crossed() {
    use std::os::unix::fs::MetadataExt;
    // /dev/shm is a mount of its own inside /dev on Linux systems (and in containers)
    let dev = std::fs::metadata("/dev").unwrap().dev();
    let shm = std::fs::metadata("/dev/shm").unwrap().dev();
    assert_ne!(dev, shm, "this test needs /dev/shm mounted inside /dev");
    let state = tempfile::tempdir().unwrap();
    let vfs = vfs_exporting(
        std::path::Path::new("/dev"),
        "rw,no_root_squash",
        state.path(),
    );
    let root = root_fh(&vfs, std::path::Path::new("/dev"));
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    // an object of the export's own file system has a handle
    let (null, attr) = vfs.lookup(&c, &r, b"null").map(|n| (n.fh, n.attr)).unwrap();
    assert_eq!(attr.fsid, dev);
    vfs.authorize(&null, &client(0)).unwrap();
    // the mount point's file system is another: no handle, whose bytes would be resolved
    // against the export's file system
    assert_eq!(
        vfs.lookup(&c, &r, b"shm").err(),
        Some(VfsError::Errno(libc::EACCES))
    );
    let mut listed = None;
    vfs.readdir(&c, &r, 0, [0; 8], true, 0, |e| {
        if &e.name[..] == b"shm" {
            listed = Some(e.plus.is_some());
        }
        true
    })
    .unwrap();
    assert_eq!(
        listed,
        Some(false),
        "shm listed without handle and attributes"
    );
}

/// statfs f_type of `path`.
fn fs_type(path: &std::path::Path) -> i64 {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a NUL-terminated path and st a writable statfs.
    assert_eq!(unsafe { libc::statfs(c.as_ptr(), &mut st) }, 0);
    st.f_type as i64
}

/// Whether `try_read`, a read that must not wait, gives up on a file whose pages were just
/// dropped, in one of 20 tries; a try that does not give up must return `want`. Dropping is
/// not exact on ext4 here: a POSIX_FADV_DONTNEED followed at once by the read left the page
/// readable in 1 of 13 to 30 runs, and with no read of the whole file before it (which waits
/// for readahead a try that gave up started) in half of them; waiting 10 ms after it, no try
/// of 40 runs found the page. RWF_NOWAIT may also find the read it started already done.
fn gives_up_on_dropped_pages(
    f: &std::fs::File,
    want: &[u8],
    mut try_read: impl FnMut() -> Option<Vec<u8>>,
) -> bool {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    (0..20).any(|_| {
        // a read of the whole file first waits for readahead still in flight (a try that gave
        // up may have started one), which POSIX_FADV_DONTNEED would skip
        let mut all = Vec::new();
        std::io::Seek::rewind(&mut &*f).unwrap();
        (&*f).read_to_end(&mut all).unwrap();
        // SAFETY: f is an open descriptor; the range covers the file.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0);
        std::thread::sleep(std::time::Duration::from_millis(10));
        match try_read() {
            None => true,
            Some(got) => {
                assert_eq!(got, want, "a read that did not give up");
                false
            }
        }
    })
}

#[test]
fn calls_tried_without_blocking_give_up_where_they_would_wait() {
    use vfs::nowait::without_blocking;
    const TMPFS: i64 = 0x0102_1994;
    const DISK: [i64; 3] = [0xEF53, 0x5846_5342, 0x9123_683E]; // ext4, XFS, Btrfs
    let (dir, state, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let data = vec![7u8; 256 * 1024];
    let (fh, _) = vfs
        .create(&c, &r, b"f", CreateMode::Guarded, &SetAttrs::default())
        .unwrap()
        .value;
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    vfs.write(&c, &n, 0, &data, Stability::FileSync).unwrap();

    // a second server over the same export and key: nothing cached yet
    let fresh = vfs_exporting(dir.path(), "rw,no_root_squash", state.path());
    assert!(
        without_blocking(|| fresh.authorize(&fh, &client(0))).is_none(),
        "opening a handle may read the disk: given up"
    );
    let (c, n) = fresh.authorize(&fh, &client(0)).unwrap();
    let (_, again) = without_blocking(|| fresh.authorize(&fh, &client(0)))
        .expect("a cached descriptor answers without blocking")
        .unwrap();
    assert_eq!(again.attr.size, data.len() as u64);
    assert!(
        without_blocking(|| fresh.read(&c, &n, 0, 4096)).is_none(),
        "the data descriptor is not open yet: given up"
    );
    let (whole, _, _) = fresh.read(&c, &n, 0, data.len() as u32).unwrap();
    assert_eq!(whole, data);

    let kind = fs_type(dir.path());
    if kind != TMPFS && !DISK.contains(&kind) {
        // other file systems are never tried: everything gives up
        assert!(without_blocking(|| fresh.read(&c, &n, 0, 4096)).is_none());
        assert!(without_blocking(|| fresh.read_extents(&c, &n, 0, 4096)).is_none());
        return;
    }
    let (got, eof, _) = without_blocking(|| fresh.read(&c, &n, 4096, 8192))
        .expect("data in the page cache (or tmpfs) is read without blocking")
        .unwrap();
    assert_eq!((got.len(), eof), (8192, false));
    let (x, eof, _) = without_blocking(|| fresh.read_extents(&c, &n, 4096, 8192))
        .expect("READ_PLUS of a dense file in memory is read without blocking")
        .unwrap();
    assert_eq!((data_len(&x), eof), (8192, false));
    if DISK.contains(&kind) {
        // drop the file's pages: a read that must not wait gives up, a normal one reads them
        let f = std::fs::File::open(dir.path().join("f")).unwrap();
        let want = &data[128 * 1024..][..4096];
        assert!(gives_up_on_dropped_pages(&f, want, || {
            without_blocking(|| fresh.read(&c, &n, 128 * 1024, 4096)).map(|r| r.unwrap().0.to_vec())
        }));
        assert!(
            gives_up_on_dropped_pages(&f, want, || {
                without_blocking(|| fresh.read_extents(&c, &n, 128 * 1024, 4096)).map(|r| {
                    let (x, _, _) = r.unwrap();
                    let mut got = Vec::new();
                    for e in &x {
                        match e {
                            Extent::Data { data, .. } => got.extend_from_slice(data),
                            Extent::Hole { len, .. } => got.resize(got.len() + *len as usize, 0),
                        }
                    }
                    got
                })
            }),
            "READ_PLUS gives up where READ does"
        );
        let mut buf = vec![0u8; 4096];
        assert!(gives_up_on_dropped_pages(&f, want, || {
            without_blocking(|| fresh.read_extents_into(&c, &n, 128 * 1024, &mut buf))
                .map(|r| r.map(|_| buf.clone()).unwrap())
        }));
        let (got, _, _) = fresh.read(&c, &n, 128 * 1024, 4096).unwrap();
        assert_eq!(&got[..], &data[..4096]);
    }
}

#[test]
fn a_read_that_contradicts_the_resolved_size_reports_the_file_as_it_is_now() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, vec![7u8; 100]).unwrap();
    let fh = vfs.lookup(&c, &r, b"f").unwrap().fh;

    // Nothing changed since the handle was resolved: a read up to the end is at EOF.
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    let (data, eof, a) = vfs.read(&c, &n, 0, 100).unwrap();
    assert_eq!((data.len(), eof, a.size), (100, true, 100));
    let mut buf = vec![0u8; 60];
    assert!(!vfs.read_into(&c, &n, 0, &mut buf).unwrap().1);

    // The file grows between the resolve (size 100) and the read: the read returns data past
    // the size it was resolved with, so it is not at EOF and the size is the new one.
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    std::fs::write(&path, vec![8u8; 300]).unwrap();
    let (data, eof, a) = vfs.read(&c, &n, 0, 150).unwrap();
    assert_eq!((data.len(), eof, a.size), (150, false, 300));
    let mut buf = vec![0u8; 150];
    let (k, eof, a) = vfs.read_into(&c, &n, 0, &mut buf).unwrap();
    assert_eq!((k, eof, a.size), (150, false, 300));

    // It shrinks between the resolve (size 300) and the read: a short read inside the size it
    // was resolved with is at EOF of the new size.
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    truncate(&path, 50);
    let (data, eof, a) = vfs.read(&c, &n, 0, 100).unwrap();
    assert_eq!((data.len(), eof, a.size), (50, true, 50));
    let mut buf = vec![0u8; 100];
    let (k, eof, a) = vfs.read_into(&c, &n, 0, &mut buf).unwrap();
    assert_eq!((k, eof, a.size), (50, true, 50));

    // READ_PLUS of the (dense) file reads as READ does.
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    std::fs::write(&path, vec![9u8; 300]).unwrap();
    let (x, eof, a) = vfs.read_extents(&c, &n, 0, 150).unwrap();
    assert_eq!((data_len(&x), eof, a.size), (150, false, 300));
    let (c, n) = vfs.authorize(&fh, &client(0)).unwrap();
    let (x, eof, a) = vfs.read_extents(&c, &n, 100, 1000).unwrap();
    assert_eq!((data_len(&x), eof, a.size), (200, true, 300));
    truncate(&path, 50);
    let (x, eof, a) = vfs.read_extents(&c, &n, 0, 100).unwrap();
    assert_eq!((data_len(&x), eof, a.size), (50, true, 50));
    let (x, eof, _) = vfs.read_extents(&c, &n, u64::MAX - 10, 100).unwrap();
    assert_eq!((data_len(&x), eof), (0, true));
    let mut buf = vec![0u8; 100];
    let (spans, eof, a) = vfs.read_extents_into(&c, &n, 0, &mut buf).unwrap();
    assert_eq!(
        (spans, eof, a.size),
        (
            vec![Span::Data {
                offset: 0,
                at: 0,
                len: 50
            }],
            true,
            50
        )
    );
}

/// Sets the size of the file at `path`.
fn truncate(path: &std::path::Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Bytes of data in READ_PLUS extents.
fn data_len(x: &[Extent]) -> usize {
    x.iter()
        .map(|e| match e {
            Extent::Data { data, .. } => data.len(),
            Extent::Hole { .. } => 0,
        })
        .sum()
}

#[test]
fn concurrent_large_unstable_writes_to_one_file_and_to_many_all_land() {
    // large unstable WRITEs take turns per file (Vfs::write): same file, other files, and
    // small and synchronous writes in between must all end up as written
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let files: Vec<_> = (0..3)
        .map(|i| {
            vfs.create(
                &c,
                &r,
                format!("w{i}").as_bytes(),
                CreateMode::Guarded,
                &SetAttrs::default(),
            )
            .unwrap()
            .value
            .0
        })
        .collect();
    const PIECE: usize = 192 * 1024;
    std::thread::scope(|s| {
        for t in 0..8usize {
            let (vfs, files) = (&vfs, &files);
            s.spawn(move || {
                for (f, fh) in files.iter().enumerate() {
                    let (c, n) = vfs.authorize(fh, &client(0)).unwrap();
                    let byte = (t * 16 + f) as u8;
                    let stable = match t % 4 {
                        3 => Stability::FileSync,
                        _ => Stability::Unstable,
                    };
                    let off = (t * PIECE) as u64;
                    // a large write, then a small one over its start
                    vfs.write(&c, &n, off, &vec![byte; PIECE], stable).unwrap();
                    vfs.write(&c, &n, off, &[byte ^ 0xff; 100], Stability::Unstable)
                        .unwrap();
                }
            });
        }
    });
    for f in 0..files.len() {
        let data = std::fs::read(dir.path().join(format!("w{f}"))).unwrap();
        assert_eq!(data.len(), 8 * PIECE);
        for t in 0..8usize {
            let byte = (t * 16 + f) as u8;
            let piece = &data[t * PIECE..(t + 1) * PIECE];
            assert!(
                piece[..100].iter().all(|b| *b == byte ^ 0xff),
                "file {f} piece {t} head"
            );
            assert!(
                piece[100..].iter().all(|b| *b == byte),
                "file {f} piece {t} body"
            );
        }
    }
}

/// LOOKUP tried without blocking answers from the kernel's lookup cache only: a name never
/// looked up gives up, one looked up (found or not) is answered as a blocking LOOKUP would;
/// the caller's identity is taken only on a thread whose tries may switch it.
#[test]
fn a_lookup_tried_without_blocking_answers_from_the_dentry_cache() {
    use vfs::nowait::without_blocking;
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let user = client(4321);
    std::fs::create_dir(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join("d/f"), b"x").unwrap();
    let vfs = std::sync::Arc::new(vfs);
    // the root of the export is open; "d" and "d/f" were made behind the server's back
    let (c, r) = vfs.authorize(&root, &user).unwrap();
    let d = vfs.lookup(&c, &r, b"d").unwrap().fh;
    let (c, dn) = vfs.authorize(&d, &user).unwrap();
    // a thread whose tries may not switch (and that has not taken this user's identity
    // yet): the try gives up
    let (v, c2, dn2) = (vfs.clone(), c.clone(), dn.clone());
    std::thread::spawn(move || {
        assert!(without_blocking(|| v.lookup(&c2, &dn2, b"f")).is_none());
    })
    .join()
    .expect("thread without the right to switch in a try");
    let v = vfs.clone();
    std::thread::spawn(move || {
        vfs::cred::allow_switch_in_try();
        // a name not in the lookup cache: given up
        assert!(without_blocking(|| v.lookup(&c, &dn, b"never-looked-up")).is_none());
        // looked up once (ENOENT): the negative entry answers the next try
        assert!(matches!(
            v.lookup(&c, &dn, b"never-looked-up"),
            Err(vfs::VfsError::Errno(libc::ENOENT))
        ));
        assert!(matches!(
            without_blocking(|| v.lookup(&c, &dn, b"never-looked-up")),
            Some(Err(vfs::VfsError::Errno(libc::ENOENT)))
        ));
        // a cached name: the handle and attributes of the blocking LOOKUP
        let n = v.lookup(&c, &dn, b"f").unwrap();
        let n2 = without_blocking(|| v.lookup(&c, &dn, b"f"))
            .expect("a cached name is looked up without blocking")
            .unwrap();
        assert_eq!(
            (n2.fh, n2.attr.fileid, n2.attr.size),
            (n.fh, n.attr.fileid, 1)
        );
    })
    .join()
    .expect("lookup thread");
}

#[test]
fn unchecked_create_file_leaves_an_existing_file_and_nfsv3_create_sets_its_size() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let size0 = SetAttrs {
        size: Some(0),
        ..Default::default()
    };
    let made = vfs
        .create_file(&c, &r, b"f", CreateMode::Unchecked, &SetAttrs::default())
        .unwrap();
    assert!(made.value.created);
    std::fs::write(dir.path().join("f"), b"data").unwrap();
    // found, not made: left as it is (NFSv4's OPEN truncates after its share checks)
    let found = vfs
        .create_file(&c, &r, b"f", CreateMode::Unchecked, &size0)
        .unwrap();
    assert!(!found.value.created);
    assert_eq!(found.value.fh, made.value.fh);
    assert_eq!(found.value.attr.size, 4);
    assert_eq!(found.before.mtime, found.after.mtime, "nothing changed");
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"data");
    // NFSv3's CREATE UNCHECKED applies the size
    let (_, attr) = vfs
        .create(&c, &r, b"f", CreateMode::Unchecked, &size0)
        .unwrap()
        .value;
    assert_eq!(attr.size, 0);
    assert_eq!(std::fs::metadata(dir.path().join("f")).unwrap().len(), 0);
    // GUARDED refuses it; UNCHECKED refuses what is not a regular file
    assert_eq!(
        vfs.create_file(&c, &r, b"f", CreateMode::Guarded, &SetAttrs::default())
            .err(),
        Some(VfsError::Errno(libc::EEXIST))
    );
    std::fs::create_dir(dir.path().join("d")).unwrap();
    assert_eq!(
        vfs.create_file(&c, &r, b"d", CreateMode::Unchecked, &SetAttrs::default())
            .err(),
        Some(VfsError::Errno(libc::EEXIST))
    );
}

#[test]
fn an_exclusive_create_is_found_again_by_its_verifier_only() {
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let none = SetAttrs::default();
    let made = vfs
        .create_file(&c, &r, b"x", CreateMode::Exclusive(*b"verifier"), &none)
        .unwrap();
    assert!(made.value.created);
    // a retransmission (same verifier) is told it made the file, and changes nothing
    let again = vfs
        .create_file(&c, &r, b"x", CreateMode::Exclusive(*b"verifier"), &none)
        .unwrap();
    assert!(again.value.created);
    assert_eq!(again.value.fh, made.value.fh);
    assert_eq!(again.before.mtime, again.after.mtime);
    // another client's exclusive create of the name fails
    assert_eq!(
        vfs.create_file(&c, &r, b"x", CreateMode::Exclusive(*b"someone2"), &none)
            .err(),
        Some(VfsError::Errno(libc::EEXIST))
    );
}

#[test]
fn a_size_asked_of_a_new_directory_is_ignored() {
    // NFSv3's MKDIR carries a sattr3 with a size; the directory is made, as by knfsd
    let (dir, _s, vfs) = setup("rw,no_root_squash");
    let root = root_fh(&vfs, dir.path());
    let (c, r) = vfs.authorize(&root, &client(0)).unwrap();
    let s = SetAttrs {
        mode: Some(0o750),
        size: Some(7),
        ..Default::default()
    };
    let (_, attr) = vfs.mkdir(&c, &r, b"d", &s).unwrap().value;
    assert_eq!(attr.mode & 0o7777, 0o750);
    assert!(dir.path().join("d").is_dir());
}
