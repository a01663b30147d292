//! POSIX semantics a local file system gives that the server must keep for its clients: set-id
//! bits cleared by unprivileged changes to a file's data, the owner held to the mode when it
//! opens a file, real times after an exclusive create, and NFSv4 state that belongs to a file
//! rather than to an inode number the file system reuses. Raw NFSv3 and NFSv4 clients on
//! loopback; the kernel client's view is the guest's differential test (tests/vm, case posix).

// System calls the tests make themselves (signals, limits, device nodes, holes, credentials)
// to set up and check what they test.
#![allow(unsafe_code)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use bytes::Bytes;
use common::nfs4_raw::*;
use common::*;
use nfs3wire::*;
use nfs4wire::*;

/// nobody: an unprivileged caller that owns nothing here.
const OTHER: u32 = 65534;

fn mode_on_disk(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    assert_eq!(mode_on_disk(p), mode, "chmod {mode:o} on the export");
}

/// An export that trusts root (no_root_squash), as the set-id cases need a root-owned file.
fn trusting_export() -> Fixture {
    Fixture::with_options(0o777, "rw,no_root_squash,insecure")
}

/// A change to a file's data, made the same way on the export (through the server) and on a
/// local twin file (by the test itself).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Change {
    /// One byte written at offset 10.
    Write,
    /// Truncated to 3 bytes.
    Truncate,
    /// 64 KiB allocated from offset 0 (fallocate).
    Allocate,
    /// 4 KiB punched at offset 0.
    Deallocate,
    /// 4 KiB copied in at offset 0 (copy_file_range).
    Copy,
}

/// The local kernel as the oracle: the mode a root-owned file of mode `mode` (in `dir`, a
/// local directory) has after `uid` (gid `uid`, no supplementary groups) makes `change` to it.
/// Which set-id bits a change clears differs between kernel versions (since 6.2 set-group-ID
/// without group-execute goes too when the writer is not in the file's group), so the test
/// asks the kernel it runs on rather than hard-coding one.
fn local_mode_after(dir: &Path, mode: u32, uid: u32, change: Change) -> u32 {
    let twin = dir.join(format!("twin-{mode:o}-{uid}-{change:?}"));
    let src = dir.join("twin-src");
    std::fs::write(&src, vec![5u8; 8192]).unwrap();
    std::fs::write(&twin, vec![1u8; 8192]).unwrap();
    set_mode(&twin, mode);
    let path = twin.clone();
    std::thread::spawn(move || {
        if uid != 0 {
            // SAFETY: raw per-thread credential syscalls with integer arguments (setgroups
            // with an empty list); this thread does nothing else and ends after the change.
            unsafe {
                assert_eq!(
                    libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<u32>()),
                    0
                );
                libc::syscall(libc::SYS_setfsgid, uid as libc::c_long);
                libc::syscall(libc::SYS_setfsuid, uid as libc::c_long);
            }
        }
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::FileExt;
        // SAFETY: fallocate and copy_file_range on descriptors this thread owns.
        let rc = unsafe {
            match change {
                Change::Write => return f.write_all_at(b"!", 10).unwrap(),
                Change::Truncate => return f.set_len(3).unwrap(),
                Change::Allocate => libc::fallocate(f.as_raw_fd(), 0, 0, 65536) as isize,
                Change::Deallocate => libc::fallocate(
                    f.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    4096,
                ) as isize,
                Change::Copy => {
                    let s = std::fs::File::open(&src).unwrap();
                    let (mut a, mut b) = (0i64, 0i64);
                    libc::copy_file_range(s.as_raw_fd(), &mut a, f.as_raw_fd(), &mut b, 4096, 0)
                }
            }
        };
        assert!(rc >= 0, "{change:?}: {}", std::io::Error::last_os_error());
    })
    .join()
    .expect("local change");
    mode_on_disk(&twin)
}

const SETID_MODES: [u32; 5] = [0o4777, 0o2777, 0o6777, 0o2767, 0o6755];

#[test]
fn nfsv3_write_and_truncate_by_another_user_clear_set_id_bits() {
    let fx = trusting_export();
    let local = fx.tmp.path();
    let (mut c, root) = fx.connect();
    for (i, &mode) in SETID_MODES.iter().enumerate() {
        // WRITE by nobody, by root, and SETATTR of the size by nobody
        for (what, uid) in [("write", OTHER), ("root write", 0), ("truncate", OTHER)] {
            let name = format!("f{i}-{}", what.replace(' ', "-"));
            let p = fx.export.join(&name);
            std::fs::write(&p, b"0123456789").unwrap();
            set_mode(&p, mode);
            let fh = {
                c.set_user(0, 0);
                c.lookup_ok(&root, &name)
            };
            c.set_user(uid, uid);
            let writable = mode & 0o002 != 0 || uid == 0;
            let status = match what {
                "truncate" => c
                    .setattr(
                        &fh,
                        Sattr3 {
                            size: SetSize3(Some(3)),
                            ..sattr3()
                        },
                    )
                    .status(),
                _ => c
                    .write(&fh, 10, Bytes::from_static(b"!"), StableHow::FileSync)
                    .status(),
            };
            let change = match what {
                "truncate" => Change::Truncate,
                _ => Change::Write,
            };
            let want = match writable {
                false => {
                    assert_eq!(
                        status,
                        Nfsstat3::NFS3ERR_ACCES,
                        "{what} of {mode:o} by {uid}"
                    );
                    mode
                }
                true => local_mode_after(local, mode, uid, change),
            };
            if writable {
                assert_eq!(status, Nfsstat3::NFS3_OK, "{what} of {mode:o} by {uid}");
            }
            assert_eq!(
                mode_on_disk(&p),
                want,
                "mode of a {mode:o} file after a {what} by uid {uid}"
            );
        }
    }
}

#[test]
fn nfsv3_owner_is_held_to_the_mode_by_access_but_writes_what_it_opened() {
    let fx = trusting_export();
    let (mut c, root) = fx.connect();
    let p = fx.export.join("ro");
    std::fs::write(&p, b"x").unwrap();
    std::os::unix::fs::chown(&p, Some(OTHER), Some(OTHER)).unwrap();
    c.set_user(OTHER, OTHER);
    let fh = c.lookup_ok(&root, "ro");
    for (mode, read) in [(0o477, true), (0o177, false), (0o077, false)] {
        set_mode(&p, mode);
        let granted = c
            .access(&fh, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND)
            .expect_ok("ACCESS")
            .access;
        // the Linux client asks ACCESS at open: the owner gets no write, as locally
        let want = if read { ACCESS3_READ } else { 0 };
        assert_eq!(granted, want, "ACCESS by the owner of a {mode:o} file");
    }
    // NFSv3 has no open: a WRITE by the owner is I/O on a file it may have opened before a
    // chmod, which knfsd and the owner override allow
    set_mode(&p, 0o477);
    assert_eq!(
        c.write(&fh, 1, Bytes::from_static(b"y"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3_OK
    );
    assert_eq!(std::fs::read(&p).unwrap(), b"xy");
}

#[test]
fn a_writer_sets_the_modify_time_to_now_as_its_truncation_asks() {
    // What the Linux client sends for ftruncate() or open(O_TRUNC) by a user who may write
    // the file but does not own it: SETATTR of the size with mtime SET_TO_SERVER_TIME and
    // atime unchanged. utimensat() wants the owner for that mix; a writer must get it.
    let fx = trusting_export();
    let (mut c, root) = fx.connect();
    for (mode, ok) in [(0o666, true), (0o644, false)] {
        let name = format!("t{mode:o}");
        let p = fx.export.join(&name);
        std::fs::write(&p, b"0123456789").unwrap();
        set_mode(&p, mode);
        c.set_user(0, 0);
        let fh = c.lookup_ok(&root, &name);
        c.set_user(OTHER, OTHER);
        for size in [Some(3), None] {
            let status = c
                .setattr(
                    &fh,
                    Sattr3 {
                        size: SetSize3(size),
                        mtime: SetMtime::Default(TimeHow::SetToServerTime),
                        ..sattr3()
                    },
                )
                .status();
            let want = match (ok, size) {
                (true, _) => Nfsstat3::NFS3_OK,
                (false, Some(_)) => Nfsstat3::NFS3ERR_ACCES,
                // utimensat's own answer for a caller who may not write
                (false, None) => Nfsstat3::NFS3ERR_PERM,
            };
            assert_eq!(
                status, want,
                "size {size:?} mtime now on {mode:o} by nobody"
            );
        }
        let len = std::fs::metadata(&p).unwrap().len();
        assert_eq!(len, if ok { 3 } else { 10 }, "{mode:o}");
    }
}

fn v41(fx: &Fixture, owner: &str, uid: u32) -> (V4, Bytes) {
    v4(fx, 1, owner, uid)
}

fn v4(fx: &Fixture, minor: u32, owner: &str, uid: u32) -> (V4, Bytes) {
    let mut c = V4::session(fx.server.port, minor, owner);
    c.rpc.set_user(uid, uid);
    let dir = c.path_fh(&fx.export);
    (c, dir)
}

fn open_status(c: &mut V4, dir: &[u8], name: &str, access: u32, how: OpenHow) -> Nfsstat4 {
    let r = c.open(dir, name, "o", access, OPEN4_SHARE_DENY_NONE, how);
    if r.status == Nfsstat4::NFS4_OK {
        let (fh, sid) = (r.fh(), r.open_stateid());
        c.close_ok(&fh, &sid);
    }
    r.status
}

#[test]
fn nfsv4_open_holds_the_owner_to_the_mode_of_an_existing_file() {
    let fx = trusting_export();
    let (mut c, dir) = v41(&fx, "owner-mode", OTHER);
    let p = fx.export.join("mine");
    std::fs::write(&p, b"x").unwrap();
    std::os::unix::fs::chown(&p, Some(OTHER), Some(OTHER)).unwrap();
    for (mode, read_ok) in [(0o477, true), (0o177, false), (0o077, false), (0o644, true)] {
        set_mode(&p, mode);
        let write_ok = mode & 0o200 != 0;
        let expect = |ok: bool| {
            if ok {
                Nfsstat4::NFS4_OK
            } else {
                Nfsstat4::NFS4ERR_ACCESS
            }
        };
        for (access, want) in [
            (OPEN4_SHARE_ACCESS_READ, expect(read_ok)),
            (OPEN4_SHARE_ACCESS_WRITE, expect(write_ok)),
            (OPEN4_SHARE_ACCESS_BOTH, expect(read_ok && write_ok)),
        ] {
            assert_eq!(
                open_status(&mut c, &dir, "mine", access, OpenHow::NoCreate),
                want,
                "OPEN (access {access}) by the owner of a {mode:o} file"
            );
        }
    }
}

#[test]
fn nfsv4_file_created_read_only_is_written_through_its_open() {
    let fx = trusting_export();
    let (mut c, dir) = v41(&fx, "creat-0444", OTHER);
    // open(O_CREAT | O_WRONLY, 0444) then write: the creator writes what it opened
    let (fh, sid) = c.open_ok(
        &dir,
        "new",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o444)),
    );
    c.write_all(&fh, &sid, 0, b"written");
    c.close_ok(&fh, &sid);
    let p = fx.export.join("new");
    assert_eq!(std::fs::read(&p).unwrap(), b"written");
    assert_eq!(mode_on_disk(&p), 0o444);
    // opened again, the mode holds
    assert_eq!(
        open_status(
            &mut c,
            &dir,
            "new",
            OPEN4_SHARE_ACCESS_WRITE,
            OpenHow::NoCreate
        ),
        Nfsstat4::NFS4ERR_ACCESS
    );
    // an UNCHECKED create of the existing file with size 0 truncates nothing it may not write
    assert_eq!(
        open_status(
            &mut c,
            &dir,
            "new",
            OPEN4_SHARE_ACCESS_WRITE,
            OpenHow::Unchecked(Sattr {
                size: Some(0),
                ..Default::default()
            })
        ),
        Nfsstat4::NFS4ERR_ACCESS
    );
    assert_eq!(std::fs::read(&p).unwrap(), b"written");
}

#[test]
fn nfsv4_data_changes_by_another_user_clear_set_id_bits() {
    let fx = trusting_export();
    let (mut root, dir) = v4(&fx, 2, "setid-root", 0);
    let (mut other, _) = v4(&fx, 2, "setid-other", OTHER);
    let src = fx.export.join("src");
    std::fs::write(&src, vec![5u8; 8192]).unwrap();
    set_mode(&src, 0o644);
    let src_fh = root
        .call(Ops::new().putfh(&dir).lookup("src").getfh())
        .ok("LOOKUP src")
        .fh();
    type Op = fn(&mut V4, &[u8], &Stateid4, &[u8], &Stateid4);
    let changes: [(Change, Op); 4] = [
        (Change::Write, |c, fh, sid, _, _| {
            c.call(
                Ops::new()
                    .putfh(fh)
                    .write(sid, 10, StableHow4::FileSync4, b"!"),
            )
            .ok("WRITE");
        }),
        (Change::Allocate, |c, fh, sid, _, _| {
            c.call(Ops::new().putfh(fh).allocate(sid, 0, 65536))
                .ok("ALLOCATE");
        }),
        (Change::Deallocate, |c, fh, sid, _, _| {
            c.call(Ops::new().putfh(fh).deallocate(sid, 0, 4096))
                .ok("DEALLOCATE");
        }),
        (Change::Copy, |c, fh, sid, src, src_sid| {
            c.call(
                Ops::new()
                    .putfh(src)
                    .savefh()
                    .putfh(fh)
                    .copy(src_sid, sid, 0, 0, 4096),
            )
            .ok("COPY");
        }),
    ];
    for (what, change) in changes {
        for mode in SETID_MODES.into_iter().filter(|m| m & 0o002 != 0) {
            for (uid, c) in [(0, &mut root), (OTHER, &mut other)] {
                let name = format!("{what:?}-{mode:o}-{uid}");
                let p = fx.export.join(&name);
                std::fs::write(&p, vec![1u8; 8192]).unwrap();
                set_mode(&p, mode);
                let (fh, sid) = c.open_ok(
                    &dir,
                    &name,
                    "o",
                    OPEN4_SHARE_ACCESS_BOTH,
                    OPEN4_SHARE_DENY_NONE,
                    OpenHow::NoCreate,
                );
                let (_, src_sid) = c.open_ok(
                    &dir,
                    "src",
                    "o",
                    OPEN4_SHARE_ACCESS_READ,
                    OPEN4_SHARE_DENY_NONE,
                    OpenHow::NoCreate,
                );
                change(c, &fh, &sid, &src_fh, &src_sid);
                c.close_ok(&fh, &sid);
                c.close_ok(&src_fh, &src_sid);
                assert_eq!(
                    mode_on_disk(&p),
                    local_mode_after(fx.tmp.path(), mode, uid, what),
                    "{what:?} into a {mode:o} file by uid {uid}"
                );
            }
        }
    }
}

fn attrset(r: &CompoundRes) -> Vec<u32> {
    bits(&r.get(NfsOpnum4::OP_OPEN).open().attrset)
}

/// Whether attribute `n` is among `bits` (the client decodes a bitmap into attribute numbers).
fn has_bit(bits: &[u32], n: u32) -> bool {
    bits.contains(&n)
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn exclusive_create_asks_the_client_to_set_the_times() {
    let fx = trusting_export();
    // The verifier the Linux client sends: jiffies-like, whose halves read as times in 2036.
    let verf = [0x71, 0xf5, 0x3a, 0xff, 0x7d, 0x00, 0x00, 0x00];
    let mut c41 = V4::session(fx.server.port, 1, "excl41");
    let dir = c41.path_fh(&fx.export);
    let mut c40 = V4::v40(fx.server.port, "excl40");
    let clientid = c40.clientid;
    for (name, r) in [
        (
            "excl41",
            c41.open(
                &dir,
                "excl41",
                "o",
                OPEN4_SHARE_ACCESS_BOTH,
                OPEN4_SHARE_DENY_NONE,
                OpenHow::Exclusive41(verf, Sattr::mode(0o640)),
            ),
        ),
        (
            "excl40",
            c40.call(
                Ops::new()
                    .putfh(&dir)
                    .open(
                        0,
                        OPEN4_SHARE_ACCESS_BOTH,
                        OPEN4_SHARE_DENY_NONE,
                        clientid,
                        b"o",
                        &OpenHow::Exclusive(verf),
                        &OpenClaim4::ClaimNull("excl40".into()),
                    )
                    .getfh(),
            ),
        ),
    ] {
        let r = r.ok(&format!("exclusive OPEN {name}"));
        let set = attrset(&r);
        assert!(
            has_bit(&set, FATTR4_TIME_ACCESS) && has_bit(&set, FATTR4_TIME_MODIFY),
            "{name}: attrset {set:?} does not flag the times, so the client keeps the verifier \
             as the file's times"
        );
        // The file holds the verifier until the client's SETATTR; the mode asked is there.
        let md = std::fs::metadata(fx.export.join(name)).unwrap();
        if name == "excl41" {
            assert_eq!(md.mode() & 0o7777, 0o640, "EXCLUSIVE4_1 createattrs");
            assert!(!has_bit(&set, FATTR4_TIME_ACCESS_SET), "{set:?}");
        }
        // what the client then does (Linux: SETATTR time_access_set / time_modify_set to the
        // server's time) gives the file real times
        let fh = r.fh();
        let sid = r.open_stateid();
        let client = if name == "excl41" { &mut c41 } else { &mut c40 };
        if name == "excl40" {
            client
                .call(Ops::new().putfh(&fh).open_confirm(&sid, 1))
                .ok("OPEN_CONFIRM");
        }
        let t0 = now_secs();
        client
            .call(Ops::new().putfh(&fh).setattr(
                &ANON_STATEID,
                &Sattr {
                    atime: Some(Settime4::Default(TimeHow4::SetToServerTime4)),
                    mtime: Some(Settime4::Default(TimeHow4::SetToServerTime4)),
                    ..Default::default()
                },
            ))
            .ok("SETATTR times");
        let md = std::fs::metadata(fx.export.join(name)).unwrap();
        assert!(
            (md.mtime() - t0).abs() < 60 && (md.atime() - t0).abs() < 60,
            "{name}: times {} / {} after the client set them at {t0}",
            md.atime(),
            md.mtime()
        );
    }
}

#[test]
fn a_new_file_on_a_removed_files_inode_number_starts_without_state() {
    // async: a sync export flushes its directory at every create (milliseconds on ext4), long
    // enough for the other tests of this binary, running beside this one on the same file
    // system, to be handed the freed inode number first
    let fx = Fixture::with_options(0o777, "rw,no_root_squash,insecure,async");
    let (mut a, dir) = v41(&fx, "reuse-a", TEST_UID);
    let (mut b, _) = v41(&fx, "reuse-b", TEST_UID);
    // a opens a file denying writes and removes it without closing (pynfs RLOWN2)
    let (fh, _sid) = a.open_ok(
        &dir,
        "gone",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_WRITE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    let ino = a.getattr(&fh, &[FATTR4_FILEID]).fileid.unwrap();
    a.call(Ops::new().putfh(&dir).remove("gone")).ok("REMOVE");
    // ext4 gives a new file the lowest free inode number of its directory's group; a group on
    // a used file system has free numbers below the one just freed, and other tests create
    // files beside this one: local files are made (in the export's directory, as a
    // subdirectory may be given another group) until one lands on the freed number, and that
    // file, created outside the server, is the new file
    let mut landed = None;
    for i in 0..200_000 {
        let name = format!("new{i}");
        let p = fx.export.join(&name);
        std::fs::File::create(&p).unwrap();
        if std::fs::metadata(&p).unwrap().ino() == ino {
            landed = Some(name);
            break;
        }
    }
    let name = landed.unwrap_or_else(|| {
        panic!(
            "the export's file system ({}) did not reuse inode {ino} in 200000 creates: this \
             test needs one that does (ext4)",
            fx.export.display()
        )
    });
    // b opens it for writing: a's DENY_WRITE was on the removed file
    set_mode(&fx.export.join(&name), 0o666);
    let r = b.open(
        &dir,
        &name,
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4_OK,
        "OPEN of new file {name} on the removed file's inode {ino}: {}",
        r.summary()
    );
    let new_fh = r.fh();
    assert_eq!(b.getattr(&new_fh, &[FATTR4_FILEID]).fileid, Some(ino));
    b.close_ok(&new_fh, &r.open_stateid());
    // the old handle names the removed file, not the new one
    let old = a.call(Ops::new().putfh(&fh).getattr(&[FATTR4_FILEID]));
    assert_ne!(
        old.status,
        Nfsstat4::NFS4_OK,
        "the removed file's handle still resolves"
    );
}

#[test]
fn an_open_whose_truncation_fails_leaves_no_share_reservation() {
    // OPEN with O_TRUNC of a program that is running: the truncation fails (ETXTBSY, DELAY)
    // after the open state was taken; the OPEN must give it back, or the file stays held for
    // writing by an open nobody has.
    let fx = trusting_export();
    let prog = fx.export.join("prog");
    std::fs::copy("/bin/sleep", &prog).unwrap();
    set_mode(&prog, 0o777);
    let mut running = std::process::Command::new(&prog).arg("30").spawn().unwrap();
    let (mut a, dir) = v41(&fx, "trunc-a", TEST_UID);
    let (mut b, _) = v41(&fx, "trunc-b", TEST_UID);
    let r = a.open(
        &dir,
        "prog",
        "o",
        OPEN4_SHARE_ACCESS_WRITE,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr {
            size: Some(0),
            ..Default::default()
        }),
    );
    let busy = r.status;
    let status = open_status(
        &mut b,
        &dir,
        "prog",
        OPEN4_SHARE_ACCESS_READ,
        OpenHow::NoCreate,
    );
    let deny_write = b.open(
        &dir,
        "prog",
        "o2",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_WRITE,
        OpenHow::NoCreate,
    );
    running.kill().unwrap();
    running.wait().unwrap();
    assert_eq!(
        busy,
        Nfsstat4::NFS4ERR_DELAY,
        "O_TRUNC of a running program"
    );
    assert_eq!(status, Nfsstat4::NFS4_OK);
    assert_eq!(
        deny_write.status,
        Nfsstat4::NFS4_OK,
        "a reader denying writes, after the failed O_TRUNC: {}",
        deny_write.summary()
    );
    assert!(
        std::fs::metadata(&prog).unwrap().len() > 0,
        "nothing truncated"
    );
}
