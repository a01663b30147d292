//! Writes the seed corpus of every fuzz target: `gen-corpus [DIR]` (default: fuzz/corpus).
//!
//! The dispatcher seeds are run through the same harness as the fuzz targets while they are
//! made (this needs root, like the targets): follow-up calls use the client ids, session ids
//! and stateids the server returned, which are reproducible because each input starts from
//! fresh NFSv4 state with a fixed boot value. A summary of every seed's replies is printed.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use harness::build::{self, call, enc, marker, sys, v4, val, MOUNT, NFS};
use nfs3wire::*;
use nfs4wire::*;
use rpcrdma::{ErrorKind, Header, InlineConfig, Proc, RdmaSegment, ReadChunk, WriteChunk};
use sunrpc::Credential;

fn write(dir: &Path, target: &str, name: &str, data: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).expect("create corpus dir");
    std::fs::write(d.join(name), data).expect("write seed");
}

/// Reads the words of an accepted RPC reply: (accept_stat, first result word).
fn rpc_status(r: &Bytes) -> String {
    let w = |i: usize| {
        r.get(i * 4..i * 4 + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    match (w(2), w(5), w(6)) {
        (Some(0), Some(0), Some(s)) => format!("ok/{s}"),
        (Some(0), Some(0), None) => "ok".into(),
        (Some(0), Some(a), _) => format!("accept_stat {a}"),
        (Some(1), _, _) => "denied".into(),
        _ => "?".into(),
    }
}

// ------------------------------------------------------------------------------------------
// NFSv3 / MOUNT
// ------------------------------------------------------------------------------------------

fn fh(m: &[u8; 8]) -> NfsFh3 {
    NfsFh3 { data: marker(m) }
}

fn dirop(m: &[u8; 8], name: &str) -> Diropargs3 {
    Diropargs3 {
        dir: fh(m),
        name: Bytes::copy_from_slice(name.as_bytes()),
    }
}

/// A sattr3 that sets nothing.
fn sattr3() -> Sattr3 {
    Sattr3 {
        mode: SetMode3(None),
        uid: SetUid3(None),
        gid: SetGid3(None),
        size: SetSize3(None),
        atime: SetAtime::Default(TimeHow::DontChange),
        mtime: SetMtime::Default(TimeHow::DontChange),
    }
}

fn sattr_mode(mode: u32) -> Sattr3 {
    Sattr3 {
        mode: SetMode3(Some(mode)),
        ..sattr3()
    }
}

fn nfs3_seeds() -> Vec<(String, Vec<Vec<u8>>)> {
    let root = sys(0, 0);
    let user = sys(1000, 1000);
    let mut x = 0u32;
    let mut c = |proc_: u32, cred: &Credential, args: Vec<u8>| {
        x += 1;
        call(x, NFS, 3, proc_, cred, &args)
    };
    let mut s: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
    let mut one = |name: &str, m: Vec<u8>| s.push((name.to_string(), vec![m]));

    one("null", c(0, &Credential::None, vec![]));
    one(
        "getattr_root",
        c(
            1,
            &root,
            val(&Getattr3args {
                object: fh(b"@FH@ROOT"),
            }),
        ),
    );
    one(
        "getattr_fifo_none",
        c(
            1,
            &Credential::None,
            val(&Getattr3args {
                object: fh(b"@FH@FIFO"),
            }),
        ),
    );
    one(
        "getattr_bad_handle",
        c(
            1,
            &root,
            val(&Getattr3args {
                object: NfsFh3 {
                    data: Bytes::from_static(&[1; 40]),
                },
            }),
        ),
    );
    one(
        "setattr_file_size_mode",
        c(
            2,
            &user,
            val(&Setattr3args {
                object: fh(b"@FH@FILE"),
                new_attributes: Sattr3 {
                    mode: SetMode3(Some(0o640)),
                    size: SetSize3(Some(100)),
                    atime: SetAtime::Default(TimeHow::SetToServerTime),
                    mtime: SetMtime::SetToClientTime(Nfstime3 {
                        seconds: 1_000_000,
                        nseconds: 5,
                    }),
                    ..sattr3()
                },
                guard: Sattrguard3(Some(Nfstime3 {
                    seconds: 1,
                    nseconds: 0,
                })),
            }),
        ),
    );
    one(
        "lookup_file",
        c(
            3,
            &user,
            val(&Lookup3args {
                what: dirop(b"@FH@ROOT", "file"),
            }),
        ),
    );
    one(
        "lookup_dotdot",
        c(
            3,
            &user,
            val(&Lookup3args {
                what: dirop(b"@FH@ROOT", ".."),
            }),
        ),
    );
    one(
        "lookup_dir_a",
        c(
            3,
            &user,
            val(&Lookup3args {
                what: dirop(b"@FH@DIR_", "a"),
            }),
        ),
    );
    one(
        "access_file",
        c(
            4,
            &user,
            val(&Access3args {
                object: fh(b"@FH@FILE"),
                access: 0x3f,
            }),
        ),
    );
    one(
        "readlink_link",
        c(
            5,
            &user,
            val(&Readlink3args {
                symlink: fh(b"@FH@LINK"),
            }),
        ),
    );
    one(
        "read_file",
        c(
            6,
            &user,
            val(&Read3args {
                file: fh(b"@FH@FILE"),
                offset: 0,
                count: 8192,
            }),
        ),
    );
    one(
        "read_file_hole",
        c(
            6,
            &user,
            val(&Read3args {
                file: fh(b"@FH@FILE"),
                offset: 8192,
                count: 4096,
            }),
        ),
    );
    one(
        "read_fifo",
        c(
            6,
            &user,
            val(&Read3args {
                file: fh(b"@FH@FIFO"),
                offset: 0,
                count: 16,
            }),
        ),
    );
    one(
        "read_ro_file",
        c(
            6,
            &root,
            val(&Read3args {
                file: fh(b"@FH@ROFL"),
                offset: 0,
                count: 100,
            }),
        ),
    );
    one(
        "write_file_unstable",
        c(
            7,
            &user,
            val(&Write3args {
                file: fh(b"@FH@FILE"),
                offset: 10,
                count: 5,
                stable: StableHow::Unstable,
                data: Bytes::from_static(b"hello"),
            }),
        ),
    );
    one(
        "write_file_filesync",
        c(
            7,
            &user,
            val(&Write3args {
                file: fh(b"@FH@FILE"),
                offset: 4096,
                count: 8,
                stable: StableHow::FileSync,
                data: Bytes::from_static(b"abcdefgh"),
            }),
        ),
    );
    one(
        "write_ro",
        c(
            7,
            &user,
            val(&Write3args {
                file: fh(b"@FH@ROFL"),
                offset: 0,
                count: 1,
                stable: StableHow::DataSync,
                data: Bytes::from_static(b"x"),
            }),
        ),
    );
    one(
        "create_unchecked",
        c(
            8,
            &user,
            val(&Create3args {
                r#where: dirop(b"@FH@ROOT", "new"),
                how: Createhow3::Unchecked(sattr_mode(0o644)),
            }),
        ),
    );
    one(
        "create_guarded_size",
        c(
            8,
            &root,
            val(&Create3args {
                r#where: dirop(b"@FH@DIR_", "g"),
                how: Createhow3::Guarded(Sattr3 {
                    size: SetSize3(Some(10)),
                    ..sattr_mode(0o600)
                }),
            }),
        ),
    );
    one(
        "create_exclusive",
        c(
            8,
            &user,
            val(&Create3args {
                r#where: dirop(b"@FH@ROOT", "excl"),
                how: Createhow3::Exclusive(*b"verifier"),
            }),
        ),
    );
    one(
        "mkdir",
        c(
            9,
            &user,
            val(&Mkdir3args {
                r#where: dirop(b"@FH@ROOT", "newdir"),
                attributes: sattr_mode(0o755),
            }),
        ),
    );
    one(
        "symlink",
        c(
            10,
            &user,
            val(&Symlink3args {
                r#where: dirop(b"@FH@ROOT", "sl"),
                symlink: Symlinkdata3 {
                    symlink_attributes: sattr3(),
                    symlink_data: Bytes::from_static(b"../../etc/passwd"),
                },
            }),
        ),
    );
    one(
        "mknod_fifo",
        c(
            11,
            &user,
            val(&Mknod3args {
                r#where: dirop(b"@FH@ROOT", "p"),
                what: Mknoddata3::Nf3fifo(sattr_mode(0o644)),
            }),
        ),
    );
    one(
        "mknod_chr",
        c(
            11,
            &root,
            val(&Mknod3args {
                r#where: dirop(b"@FH@ROOT", "null"),
                what: Mknoddata3::Nf3chr(Devicedata3 {
                    dev_attributes: sattr_mode(0o666),
                    spec: Specdata3 {
                        specdata1: 1,
                        specdata2: 3,
                    },
                }),
            }),
        ),
    );
    one(
        "mknod_sock",
        c(
            11,
            &user,
            val(&Mknod3args {
                r#where: dirop(b"@FH@ROOT", "s"),
                what: Mknoddata3::Nf3sock(sattr3()),
            }),
        ),
    );
    one(
        "remove_missing",
        c(
            12,
            &user,
            val(&Remove3args {
                object: dirop(b"@FH@ROOT", "nothing"),
            }),
        ),
    );
    one(
        "remove_fixture",
        c(
            12,
            &user,
            val(&Remove3args {
                object: dirop(b"@FH@DIR_", "a"),
            }),
        ),
    );
    one(
        "rmdir_sub",
        c(
            13,
            &user,
            val(&Rmdir3args {
                object: dirop(b"@FH@DIR_", "sub"),
            }),
        ),
    );
    one(
        "rename_cross",
        c(
            14,
            &user,
            val(&Rename3args {
                from: dirop(b"@FH@DIR_", "b"),
                to: dirop(b"@FH@ROOT", "b2"),
            }),
        ),
    );
    one(
        "link_file",
        c(
            15,
            &user,
            val(&Link3args {
                file: fh(b"@FH@FILE"),
                link: dirop(b"@FH@DIR_", "hard"),
            }),
        ),
    );
    one(
        "readdir_root",
        c(
            16,
            &user,
            val(&Readdir3args {
                dir: fh(b"@FH@ROOT"),
                cookie: 0,
                cookieverf: [0; 8],
                count: 4096,
            }),
        ),
    );
    one(
        "readdir_small",
        c(
            16,
            &user,
            val(&Readdir3args {
                dir: fh(b"@FH@DIR_"),
                cookie: 0,
                cookieverf: [0; 8],
                count: 100,
            }),
        ),
    );
    one(
        "readdirplus_dir",
        c(
            17,
            &user,
            val(&Readdirplus3args {
                dir: fh(b"@FH@DIR_"),
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 512,
                maxcount: 8192,
            }),
        ),
    );
    one(
        "readdirplus_cookie",
        c(
            17,
            &user,
            val(&Readdirplus3args {
                dir: fh(b"@FH@ROOT"),
                cookie: 3,
                cookieverf: [1; 8],
                dircount: 512,
                maxcount: 600,
            }),
        ),
    );
    one(
        "fsstat",
        c(
            18,
            &user,
            val(&Fsstat3args {
                fsroot: fh(b"@FH@ROOT"),
            }),
        ),
    );
    one(
        "fsinfo",
        c(
            19,
            &user,
            val(&Fsinfo3args {
                fsroot: fh(b"@FH@RORT"),
            }),
        ),
    );
    one(
        "pathconf",
        c(
            20,
            &user,
            val(&Pathconf3args {
                object: fh(b"@FH@FILE"),
            }),
        ),
    );
    one(
        "commit",
        c(
            21,
            &user,
            val(&Commit3args {
                file: fh(b"@FH@FILE"),
                offset: 0,
                count: 0,
            }),
        ),
    );
    one("proc_unavail", c(22, &user, vec![]));
    one("garbage_args", c(1, &user, vec![0, 0, 1, 0]));

    // Multi-call streams: create, write, read back, rename, remove.
    let new = val(&Create3args {
        r#where: dirop(b"@FH@ROOT", "f1"),
        how: Createhow3::Guarded(sattr_mode(0o644)),
    });
    let stream = vec![
        c(8, &user, new.clone()),
        c(8, &user, new),
        c(
            3,
            &user,
            val(&Lookup3args {
                what: dirop(b"@FH@ROOT", "f1"),
            }),
        ),
        c(
            14,
            &user,
            val(&Rename3args {
                from: dirop(b"@FH@ROOT", "f1"),
                to: dirop(b"@FH@DIR_", "f2"),
            }),
        ),
        c(
            12,
            &user,
            val(&Remove3args {
                object: dirop(b"@FH@DIR_", "f2"),
            }),
        ),
    ];
    s.push(("stream_create_rename_remove".into(), stream));
    let stream = vec![
        c(
            9,
            &user,
            val(&Mkdir3args {
                r#where: dirop(b"@FH@ROOT", "d"),
                attributes: sattr3(),
            }),
        ),
        c(
            10,
            &user,
            val(&Symlink3args {
                r#where: dirop(b"@FH@ROOT", "d2"),
                symlink: Symlinkdata3 {
                    symlink_attributes: sattr3(),
                    symlink_data: Bytes::from_static(b"d"),
                },
            }),
        ),
        c(
            17,
            &user,
            val(&Readdirplus3args {
                dir: fh(b"@FH@ROOT"),
                cookie: 0,
                cookieverf: [0; 8],
                dircount: 100,
                maxcount: 1000,
            }),
        ),
        c(
            13,
            &user,
            val(&Rmdir3args {
                object: dirop(b"@FH@ROOT", "d"),
            }),
        ),
    ];
    s.push(("stream_mkdir_readdirplus_rmdir".into(), stream));

    // MOUNT.
    let mut m = 100u32;
    let mut mc = |proc_: u32, cred: &Credential, args: Vec<u8>| {
        m += 1;
        call(m, MOUNT, 3, proc_, cred, &args)
    };
    s.push(("mount_null".into(), vec![mc(0, &Credential::None, vec![])]));
    let mnt = mc(1, &root, val(&Dirpath(marker(b"@EXPORT@"))));
    s.push(("mount_mnt".into(), vec![mnt.clone()]));
    s.push((
        "mount_mnt_ro".into(),
        vec![mc(1, &user, val(&Dirpath(marker(b"@ROEXPT@"))))],
    ));
    s.push((
        "mount_mnt_missing".into(),
        vec![mc(
            1,
            &user,
            val(&Dirpath(Bytes::from_static(b"/nonexistent"))),
        )],
    ));
    s.push((
        "mount_mnt_dump_umnt_export".into(),
        vec![
            mnt,
            mc(2, &root, vec![]),
            mc(3, &root, val(&Dirpath(marker(b"@EXPORT@")))),
            mc(4, &root, vec![]),
            mc(5, &root, vec![]),
        ],
    ));
    s.push((
        "mount_v1_mismatch".into(),
        vec![call(7, MOUNT, 1, 1, &root, &[])],
    ));

    // Header-level cases.
    s.push((
        "prog_unavail".into(),
        vec![call(9, 100_021, 4, 0, &root, &[])],
    ));
    s.push((
        "nfs_v2_mismatch".into(),
        vec![call(9, NFS, 2, 0, &root, &[])],
    ));
    let mut bad_rpcvers = call(9, NFS, 3, 0, &root, &[]);
    bad_rpcvers[11] = 3;
    s.push(("rpc_mismatch".into(), vec![bad_rpcvers]));
    let mut bad_flavor = call(9, NFS, 3, 0, &Credential::None, &[]);
    bad_flavor[27] = 6;
    s.push(("auth_badcred".into(), vec![bad_flavor]));

    // A few NFSv4 calls through the same dispatcher.
    let comp = |minor: u32, ops: &[Vec<u8>]| v4::compound(b"seed", minor, ops);
    s.push(("v4_null".into(), vec![call(30, NFS, 4, 0, &root, &[])]));
    s.push((
        "v4_putrootfh_getattr".into(),
        vec![call(
            31,
            NFS,
            4,
            1,
            &root,
            &comp(0, &[v4::putrootfh(), v4::getattr(&v4::ATTRS), v4::getfh()]),
        )],
    ));
    s.push((
        "v4_read_write_anon".into(),
        vec![call(
            32,
            NFS,
            4,
            1,
            &user,
            &comp(
                0,
                &[
                    v4::putfh(b"@FH@FILE"),
                    v4::read(v4::ANON, 0, 100),
                    v4::write(v4::ANON, 0, StableHow4::FileSync4, b"abc"),
                ],
            ),
        )],
    ));
    s.push((
        "v4_exchange_id".into(),
        vec![call(
            33,
            NFS,
            4,
            1,
            &root,
            &comp(1, &[v4::exchange_id(*b"verifier", b"fuzz-client", 1)]),
        )],
    ));
    s
}

// ------------------------------------------------------------------------------------------
// NFSv4 COMPOUND
// ------------------------------------------------------------------------------------------

/// The COMPOUND reply in an RPC reply (which must be an accepted, successful one).
fn results(reply: &Bytes) -> Compound4res {
    let mut d = sunrpc::msg::decode_success(reply.clone()).expect("call not accepted");
    <Compound4res as xdr::Decode>::decode(&mut d).expect("a COMPOUND4res")
}

/// A stateid as the seeds carry it.
fn sid(s: &Stateid4) -> (u32, [u8; 12]) {
    (s.seqid, s.other)
}

struct V4 {
    /// Compound bodies of the seed so far.
    bodies: Vec<Vec<u8>>,
    selector: u8,
}

impl V4 {
    fn new(selector: u8) -> Self {
        V4 {
            bodies: Vec::new(),
            selector,
        }
    }
    fn input(&self) -> Vec<u8> {
        let mut v = vec![self.selector];
        v.extend(harness::join_frames(&self.bodies));
        v
    }
    /// Adds a compound and runs the whole seed; returns the last reply.
    fn push(&mut self, minor: u32, ops: &[Vec<u8>]) -> Bytes {
        self.bodies.push(v4::compound(b"seed", minor, ops));
        let replies = harness::run_compounds(&self.input());
        replies.last().cloned().flatten().expect("a reply")
    }
}

/// EXCHANGE_ID, CREATE_SESSION and (optionally) RECLAIM_COMPLETE; returns the client id and
/// session id.
fn session(s: &mut V4, minor: u32, owner: &[u8], reclaim_complete: bool) -> (u64, [u8; 16]) {
    let r = s.push(minor, &[v4::exchange_id(*b"verifier", owner, 0)]);
    let [NfsResop4::OpExchangeId(ExchangeId4res::Nfs4Ok(ok))] = &results(&r).resarray[..] else {
        panic!("EXCHANGE_ID failed");
    };
    let (clid, seq) = (ok.eir_clientid, ok.eir_sequenceid);
    let r = s.push(minor, &[v4::create_session(clid, seq, 0)]);
    let [NfsResop4::OpCreateSession(CreateSession4res::Nfs4Ok(ok))] = &results(&r).resarray[..]
    else {
        panic!("CREATE_SESSION failed");
    };
    let sid = ok.csr_sessionid;
    if reclaim_complete {
        let r = s.push(
            minor,
            &[v4::sequence(&sid, 1, 0, false), v4::reclaim_complete(false)],
        );
        assert_eq!(
            results(&r).status,
            Nfsstat4::NFS4_OK,
            "RECLAIM_COMPLETE failed"
        );
    }
    (clid, sid)
}

fn nfs4_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let attrs3 = [v4::ATTRS[0], v4::ATTRS[1], 1 << 18];
    let cur = v4::CURRENT;
    let anon = v4::ANON;

    // Stateless NFSv4.0 compounds.
    let single: Vec<(&str, u8, u32, Vec<Vec<u8>>)> = vec![
        (
            "v40_putrootfh_getattr",
            0,
            0,
            vec![v4::putrootfh(), v4::getattr(&v4::ATTRS), v4::getfh()],
        ),
        (
            "v40_lookup_path",
            1,
            0,
            vec![
                v4::putrootfh(),
                v4::lookup(b"tmp"),
                v4::lookup(b"rnfs-fuzz"),
                v4::getattr(&v4::ATTRS),
                v4::lookup(b"export"),
                v4::getfh(),
                v4::getattr(&v4::ATTRS),
                v4::lookupp(),
                v4::getfh(),
            ],
        ),
        (
            "v40_readdir_pseudo",
            0,
            0,
            vec![v4::putrootfh(), v4::readdir(0, 1024, 4096, &v4::ATTRS)],
        ),
        (
            "v40_readdir_root",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::readdir(0, 1024, 8192, &v4::ATTRS),
            ],
        ),
        (
            "v40_readdir_dir_small",
            1,
            0,
            vec![v4::putfh(b"@FH@DIR_"), v4::readdir(0, 64, 200, &[1 << 20])],
        ),
        (
            "v40_read_anon",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::read(anon, 0, 4096),
                v4::getattr(&v4::ATTRS),
            ],
        ),
        (
            "v40_write_anon",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::write(anon, 5, StableHow4::FileSync4, b"data"),
                v4::commit(0, 0),
                v4::getattr(&v4::ATTRS),
            ],
        ),
        (
            "v40_readlink",
            1,
            0,
            vec![
                v4::putfh(b"@FH@LINK"),
                v4::readlink(),
                v4::getattr(&v4::ATTRS),
            ],
        ),
        (
            "v40_access_verify",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::access(0x3f),
                v4::verify(true, NfsFtype4::Nf4reg),
                v4::verify(false, NfsFtype4::Nf4dir),
            ],
        ),
        (
            "v40_secinfo",
            0,
            0,
            vec![v4::putfh(b"@FH@ROOT"), v4::secinfo(b"file")],
        ),
        (
            "v40_savefh_restorefh",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::savefh(),
                v4::putfh(b"@FH@FILE"),
                v4::restorefh(),
                v4::getfh(),
            ],
        ),
        (
            "v40_create_remove",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::create(Createtype4::Nf4dir, b"d40"),
                v4::getfh(),
                v4::putfh(b"@FH@ROOT"),
                v4::create(v4::symlink(b"file"), b"l40"),
                v4::putfh(b"@FH@ROOT"),
                v4::remove(b"d40"),
                v4::remove(b"l40"),
            ],
        ),
        (
            "v40_rename_link",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::savefh(),
                v4::putfh(b"@FH@DIR_"),
                v4::link(b"hard40"),
                v4::putfh(b"@FH@DIR_"),
                v4::savefh(),
                v4::putfh(b"@FH@ROOT"),
                v4::rename(b"hard40", b"moved40"),
            ],
        ),
        (
            "v40_setattr_anon",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::setattr_size(anon, 70000),
                v4::setattr(anon, 1000, 0o600),
            ],
        ),
        (
            "v40_ro_write",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROFL"),
                v4::write(anon, 0, StableHow4::Unstable4, b"x"),
            ],
        ),
        (
            "v40_putpubfh_illegal",
            2,
            0,
            vec![v4::putpubfh(), v4::bare(NfsOpnum4::OP_ILLEGAL), v4::getfh()],
        ),
        ("v40_nofilehandle", 2, 0, vec![v4::getattr(&v4::ATTRS)]),
        ("v43_minor_mismatch", 0, 3, vec![v4::putrootfh()]),
        ("v41_no_sequence", 0, 1, vec![v4::putrootfh()]),
        (
            "v42_xattr_unsupported_ops",
            0,
            2,
            vec![
                v4::bare(NfsOpnum4::OP_WRITE_SAME),
                v4::bare(NfsOpnum4::OP_LAYOUTGET),
            ],
        ),
        ("v40_empty", 3, 0, vec![]),
    ];
    for (name, sel, minor, ops) in single {
        let mut s = V4::new(sel);
        s.bodies.push(v4::compound(b"seed", minor, &ops));
        out.push((name.into(), s.input()));
    }

    // NFSv4.0 client: SETCLIENTID, confirm, OPEN, OPEN_CONFIRM, WRITE, LOCK, LOCKU, CLOSE.
    {
        let mut s = V4::new(1);
        let r = s.push(0, &[v4::setclientid(*b"verifier", b"fuzz-v40")]);
        let [NfsResop4::OpSetclientid(Setclientid4res::Nfs4Ok(ok))] = &results(&r).resarray[..]
        else {
            panic!("SETCLIENTID failed");
        };
        let (clid, confirm) = (ok.clientid, ok.setclientid_confirm);
        s.push(0, &[v4::setclientid_confirm(clid, confirm)]);
        out.push(("v40_setclientid_confirm".into(), s.input()));
        let r = s.push(
            0,
            &[
                v4::putfh(b"@FH@ROOT"),
                v4::open(
                    0,
                    3,
                    0,
                    clid,
                    b"owner40",
                    v4::How::NoCreate,
                    v4::Claim::Null(b"file"),
                ),
                v4::getfh(),
            ],
        );
        let res = results(&r);
        let Some(NfsResop4::OpOpen(Open4res::Nfs4Ok(ok))) = res.resarray.get(1) else {
            panic!("v4.0 OPEN failed: {res:?}");
        };
        let osid = sid(&ok.stateid);
        let r = s.push(0, &[v4::putfh(b"@FH@FILE"), v4::open_confirm(osid, 1)]);
        let Some(NfsResop4::OpOpenConfirm(OpenConfirm4res::Nfs4Ok(ok))) =
            results(&r).resarray.get(1).cloned()
        else {
            panic!("OPEN_CONFIRM failed");
        };
        let osid = sid(&ok.open_stateid);
        out.push(("v40_open_confirm".into(), s.input()));
        let r = s.push(
            0,
            &[
                v4::putfh(b"@FH@FILE"),
                v4::write(osid, 0, StableHow4::Unstable4, b"v40 data"),
                v4::read(osid, 0, 64),
            ],
        );
        assert_eq!(
            results(&r).status,
            Nfsstat4::NFS4_OK,
            "v4.0 WRITE/READ failed"
        );
        let r = s.push(
            0,
            &[
                v4::putfh(b"@FH@FILE"),
                v4::lock_new(
                    NfsLockType4::WriteLt,
                    0,
                    100,
                    2,
                    osid,
                    0,
                    clid,
                    b"lockowner40",
                ),
            ],
        );
        let res = results(&r);
        s.push(
            0,
            &[
                v4::putfh(b"@FH@FILE"),
                v4::lockt(NfsLockType4::ReadLt, 50, 10, clid, b"other"),
            ],
        );
        out.push(("v40_write_lock".into(), s.input()));
        if let Some(NfsResop4::OpLock(Lock4res::Nfs4Ok(ok))) = res.resarray.get(1) {
            let lsid = sid(&ok.lock_stateid);
            s.push(
                0,
                &[
                    v4::putfh(b"@FH@FILE"),
                    v4::locku(NfsLockType4::WriteLt, 1, lsid, 0, 100),
                ],
            );
        }
        s.push(
            0,
            &[v4::putfh(b"@FH@FILE"), v4::open_downgrade(osid, 3, 1, 0)],
        );
        s.push(0, &[v4::renew(clid)]);
        s.push(
            0,
            &[v4::putfh(b"@FH@FILE"), v4::close(4, (osid.0 + 1, osid.1))],
        );
        s.push(0, &[v4::release_lockowner(clid, b"lockowner40")]);
        out.push(("v40_full_open_lock_close".into(), s.input()));
    }

    // NFSv4.1 / 4.2 sessions.
    for minor in [1u32, 2] {
        let mut s = V4::new(1);
        let (clid, sid) = session(&mut s, minor, format!("fuzz-v4{minor}").as_bytes(), false);
        out.push((format!("v4{minor}_exchange_id_create_session"), s.input()));
        let r = s.push(
            minor,
            &[v4::sequence(&sid, 1, 0, true), v4::reclaim_complete(false)],
        );
        assert_eq!(results(&r).status, Nfsstat4::NFS4_OK);
        let seq = 2;
        let mut step = |s: &mut V4, name: &str, ops: Vec<Vec<u8>>| {
            let mut all = vec![v4::sequence(&sid, seq, 0, true)];
            all.extend(ops);
            let mut t = V4::new(s.selector);
            t.bodies = s.bodies.clone();
            t.push(minor, &all);
            out.push((format!("v4{minor}_{name}"), t.input()));
        };
        step(
            &mut s,
            "getattr_root",
            vec![
                v4::putrootfh(),
                v4::getattr(&attrs3),
                v4::secinfo_no_name(SecinfoStyle4::SecinfoStyle4CurrentFh),
            ],
        );
        step(
            &mut s,
            "open_create_write_close",
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::open(
                    0,
                    3,
                    0,
                    clid,
                    b"o1",
                    v4::How::Unchecked(0o644),
                    v4::Claim::Null(b"new41"),
                ),
                v4::write(cur, 0, StableHow4::DataSync4, b"hello nfs4"),
                v4::commit(0, 0),
                v4::getattr(&v4::ATTRS),
                v4::close(0, cur),
            ],
        );
        step(
            &mut s,
            "open_exclusive41",
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::open(
                    0,
                    2,
                    0,
                    clid,
                    b"o2",
                    v4::How::Exclusive41(*b"excl-ver", 0o600),
                    v4::Claim::Null(b"ex41"),
                ),
                v4::getattr(&v4::ATTRS),
                v4::close(0, cur),
            ],
        );
        step(
            &mut s,
            "open_fh_read_lock",
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::open(0, 3, 0, clid, b"o3", v4::How::NoCreate, v4::Claim::Fh),
                v4::read(cur, 0, 128),
                v4::lock_new(NfsLockType4::WriteLt, 0, 10, 0, cur, 0, clid, b"lo3"),
                v4::lockt(NfsLockType4::WriteLt, 50, 1, clid, b"other"),
                v4::locku(NfsLockType4::WriteLt, 0, cur, 0, 10),
                v4::test_stateid(&[cur, anon]),
                v4::close(0, cur),
            ],
        );
        step(
            &mut s,
            "reclaim_previous",
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::open(
                    0,
                    1,
                    0,
                    clid,
                    b"o4",
                    v4::How::NoCreate,
                    v4::Claim::Previous(OpenDelegationType4::OpenDelegateNone),
                ),
            ],
        );
        step(
            &mut s,
            "readdir",
            vec![v4::putfh(b"@FH@DIR_"), v4::readdir(0, 4096, 4096, &attrs3)],
        );
        step(
            &mut s,
            "create_link_rename_remove",
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::create(Createtype4::Nf4dir, b"d41"),
                v4::putfh(b"@FH@ROOT"),
                v4::create(Createtype4::Nf4fifo, b"fifo41"),
                v4::putfh(b"@FH@FILE"),
                v4::savefh(),
                v4::putfh(b"@FH@ROOT"),
                v4::link(b"h41"),
                v4::putfh(b"@FH@ROOT"),
                v4::savefh(),
                v4::rename(b"h41", b"h42"),
                v4::remove(b"h42"),
                v4::remove(b"d41"),
            ],
        );
        step(
            &mut s,
            "misc_session_ops",
            vec![
                v4::bind_conn(&sid, ChannelDirFromClient4::Cdfc4ForeOrBoth),
                v4::backchannel_ctl(),
                v4::free_stateid(anon),
                v4::delegreturn(anon),
            ],
        );
        if minor == 2 {
            step(
                &mut s,
                "read_plus_seek",
                vec![
                    v4::putfh(b"@FH@FILE"),
                    v4::read_plus(anon, 0, 65536),
                    v4::seek(anon, 0, DataContent4::Nfs4ContentHole),
                    v4::seek(anon, 5000, DataContent4::Nfs4ContentData),
                ],
            );
            step(
                &mut s,
                "allocate_copy_clone",
                vec![
                    v4::putfh(b"@FH@ROOT"),
                    v4::open(
                        0,
                        3,
                        0,
                        clid,
                        b"o5",
                        v4::How::Unchecked(0o644),
                        v4::Claim::Null(b"dst42"),
                    ),
                    v4::allocate(cur, 0, 8192),
                    v4::deallocate(cur, 0, 4096),
                    v4::savefh(),
                    v4::putfh(b"@FH@FILE"),
                    v4::savefh(),
                    v4::restorefh(),
                    v4::putfh(b"@FH@FILE"),
                    v4::savefh(),
                    v4::putfh(b"@FH@ROOT"),
                    v4::lookup(b"dst42"),
                    v4::copy(anon, cur, 0, 0, 4096),
                    v4::clone_op(anon, cur, 0, 8192, 4096),
                ],
            );
            step(
                &mut s,
                "xattrs",
                vec![
                    v4::putfh(b"@FH@FILE"),
                    v4::getxattr(b"fuzz"),
                    v4::listxattrs(0, 4096),
                    v4::setxattr(SetxattrOption4::Setxattr4Create, b"new", b"value"),
                    v4::setxattr(SetxattrOption4::Setxattr4Replace, b"new", b"other"),
                    v4::removexattr(b"new"),
                    v4::getattr(&attrs3),
                ],
            );
        }
        let mut t = V4::new(1);
        t.bodies = s.bodies.clone();
        t.push(
            minor,
            &[v4::sequence(&sid, seq, 0, false), v4::destroy_session(&sid)],
        );
        t.push(minor, &[v4::destroy_clientid(clid)]);
        out.push((format!("v4{minor}_destroy"), t.input()));
        // Replay of the last request and a misordered one.
        let mut t = V4::new(1);
        t.bodies = s.bodies.clone();
        t.push(minor, &[v4::sequence(&sid, 1, 0, false), v4::putrootfh()]);
        t.push(minor, &[v4::sequence(&sid, 9, 0, false), v4::putrootfh()]);
        t.push(minor, &[v4::sequence(&sid, 1, 5, false), v4::putrootfh()]);
        out.push((format!("v4{minor}_sequence_misordered"), t.input()));
    }
    let _ = build::NFS;
    out
}

// ------------------------------------------------------------------------------------------
// Transport-level targets
// ------------------------------------------------------------------------------------------

fn record_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let frag = |last: bool, d: &[u8]| {
        let mut v = ((d.len() as u32) | if last { 0x8000_0000 } else { 0 })
            .to_be_bytes()
            .to_vec();
        v.extend_from_slice(d);
        v
    };
    let pre = |max: u16, seed: u8, stream: Vec<u8>| {
        let mut v = max.to_be_bytes().to_vec();
        v.push(seed);
        v.extend(stream);
        v
    };
    let one_call = call(1, NFS, 3, 0, &Credential::None, &[]);
    vec![
        ("single", pre(1024, 7, frag(true, &one_call))),
        (
            "multi_fragment",
            pre(
                1024,
                3,
                [
                    frag(false, &one_call[..8]),
                    frag(false, &one_call[8..20]),
                    frag(true, &one_call[20..]),
                ]
                .concat(),
            ),
        ),
        (
            "two_records",
            pre(
                4096,
                200,
                [frag(true, b"abcd"), frag(true, &one_call)].concat(),
            ),
        ),
        (
            "partial",
            pre(1024, 1, frag(true, &one_call)[..30].to_vec()),
        ),
        (
            "empty_last",
            pre(64, 9, [frag(false, b"ab"), frag(true, b"")].concat()),
        ),
        ("empty_nonfinal", pre(64, 9, frag(false, b""))),
        ("too_large", pre(16, 4, frag(true, &[0; 40]))),
        (
            "too_large_sum",
            pre(
                48,
                4,
                [frag(false, &[1; 30]), frag(true, &[2; 30])].concat(),
            ),
        ),
    ]
}

fn call_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let user = sys(1000, 1000);
    let many_gids = Credential::Sys(sunrpc::AuthSys {
        stamp: 1,
        machine: Bytes::from_static(b"a-long-machine-name.example.com"),
        uid: 0,
        gid: 0,
        gids: (0..16).collect(),
    });
    let mut v = vec![
        ("null_none", call(1, NFS, 3, 0, &Credential::None, &[])),
        (
            "getattr_sys",
            call(
                2,
                NFS,
                3,
                1,
                &user,
                &val(&Getattr3args {
                    object: fh(b"@FH@ROOT"),
                }),
            ),
        ),
        (
            "sys_16_gids",
            call(
                3,
                MOUNT,
                3,
                1,
                &many_gids,
                &val(&Dirpath(Bytes::from_static(b"/srv"))),
            ),
        ),
        (
            "reply",
            enc(|e| sunrpc::msg::encode_accepted(e, 5, sunrpc::msg::AcceptStat::Success)),
        ),
    ];
    let mut bad = call(4, NFS, 3, 0, &Credential::None, &[]);
    bad[11] = 3;
    v.push(("rpcvers_3", bad));
    let mut bad = call(4, NFS, 3, 0, &user, &[]);
    bad[27] = 6;
    v.push(("flavor_6", bad));
    v
}

fn rdma_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let seg = |handle: u32, length: u32, offset: u64| RdmaSegment {
        handle,
        length,
        offset,
    };
    let rpc = |xid: u32| call(xid, NFS, 3, 0, &Credential::None, &[]);
    let with = |h: &Header, inline: &[u8]| {
        let mut v = h.encode().to_vec();
        v.extend_from_slice(inline);
        v
    };
    let msg = Header::msg(0x11, 32);
    let mut long = Header::msg(0x22, 32);
    long.proc_ = Proc::NoMsg;
    long.read_list = vec![ReadChunk {
        position: 0,
        segments: vec![seg(1, 200, 0x1000), seg(2, 100, 0x2000)],
    }];
    let mut write_payload = Header::msg(0x33, 8);
    write_payload.read_list = vec![ReadChunk {
        position: 8,
        segments: vec![seg(3, 4097, 0x3000)],
    }];
    let mut chunks = Header::msg(0x44, 8);
    chunks.write_list = vec![WriteChunk(vec![
        seg(4, 65536, 0x4000),
        seg(5, 4096, 0x5000),
    ])];
    chunks.reply_chunk = Some(WriteChunk(vec![seg(6, 4096, 0x6000)]));
    let mut both = long.clone();
    both.xid = 0x55;
    both.read_list.push(ReadChunk {
        position: 12,
        segments: vec![seg(7, 3, 0)],
    });
    vec![
        ("msg_inline", with(&msg, &rpc(0x11))),
        ("nomsg_call_chunk", with(&long, &[])),
        (
            "msg_write_payload_chunk",
            with(&write_payload, &rpc(0x33)[..16]),
        ),
        ("msg_write_list_reply_chunk", with(&chunks, &rpc(0x44))),
        ("nomsg_call_and_data_chunks", with(&both, &[])),
        (
            "error_vers",
            Header::error(1, 1, 1, ErrorKind::Vers { low: 1, high: 1 })
                .encode()
                .to_vec(),
        ),
        (
            "error_chunk",
            Header::error(2, 1, 1, ErrorKind::Chunk).encode().to_vec(),
        ),
        ("bad_version", {
            let mut v = with(&msg, &rpc(0x11));
            v[7] = 2;
            v
        }),
        ("msgp", {
            let mut v = with(&msg, &rpc(0x11));
            v[15] = 2;
            v
        }),
        ("xid_mismatch", with(&msg, &rpc(0x12))),
    ]
}

fn private_data_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let cfg = |s: u32, r: u32| [s.to_be_bytes(), r.to_be_bytes()].concat();
    let ours = InlineConfig::default().private_data().encode();
    let big = InlineConfig::new(65536, 32768)
        .with_remote_invalidate(true)
        .private_data()
        .encode();
    let mut zeroed = vec![0u8; 56];
    zeroed[..8].copy_from_slice(&ours);
    vec![
        ("default", [cfg(4096, 4096), ours.to_vec()].concat()),
        ("big_invalidate", [cfg(65536, 1024), big.to_vec()].concat()),
        ("cm_area_zero_filled", [cfg(8192, 8192), zeroed].concat()),
        (
            "wrong_magic",
            [cfg(4096, 4096), vec![0xf6, 0xab, 0x0e, 0x19, 1, 0, 3, 3]].concat(),
        ),
        (
            "wrong_version",
            [cfg(4096, 4096), vec![0xf6, 0xab, 0x0e, 0x18, 2, 1, 255, 0]].concat(),
        ),
        ("short", [cfg(0, u32::MAX), vec![0xf6, 0xab, 0x0e]].concat()),
    ]
}

fn exports_seeds() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "doc_example",
            "# comment\n/srv/data      10.0.0.0/8(rw,no_root_squash) *.example.com(ro) @trusted\n\"/srv/my data\" fd00::/64(rw,sync) \\\n               (ro)                       # continuation\n/srv/odd\\040name -rw,async host1 host2(ro)\n",
        ),
        ("localhost", "/srv/rnfs 127.0.0.0/8(rw,insecure,root_squash) ::1(rw,insecure)\n"),
        (
            "all_options",
            "/export *(rw,sync,no_subtree_check,all_squash,anonuid=1000,anongid=1000,insecure,fsid=0,crossmnt,nohide,no_wdelay,no_acl,sec=sys:none,mp=/export)\n/e2 192.168.1.0/255.255.255.0(ro,fsid=root) h?st[0-9].lan(rw,fsid=0123456789abcdef0123456789abcdef,mountpoint)\n",
        ),
        ("bare_path", "/pub\n/pub2 (ro)\n"),
        ("errors", "relative(rw)\n/x *(rw,,sync)\n/y host(rw\n/z 10.0.0.0/33(rw)\n/w *(sec=krb5)\n/v *(anonuid=-1)\n/x *(ro)\n"),
        ("octal_quote", "\"/a b\\011c\" *(rw)\n/d\\000 *(rw)\n\"/unterminated *(rw)\n"),
    ]
}

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus"));

    let env = harness::env::env();
    eprintln!(
        "environment: base {} (private tmpfs: {})",
        env.base.display(),
        env.isolated
    );

    for (name, msgs) in nfs3_seeds() {
        let input = harness::join_frames(&msgs);
        let replies = harness::run_stream(&input);
        let summary: Vec<String> = replies
            .iter()
            .map(|r| r.as_ref().map_or("none".to_string(), rpc_status))
            .collect();
        println!("nfs3_dispatch/{name}: {}", summary.join(" "));
        write(&dir, "nfs3_dispatch", &name, &input);
        if msgs.len() == 1 {
            write(&dir, "rpc_call", &format!("from_{name}"), &msgs[0]);
        }
    }
    for (name, input) in nfs4_seeds() {
        let replies = harness::run_compounds(&input);
        let summary: Vec<String> = replies
            .iter()
            .map(|r| match r {
                Some(b) => match sunrpc::msg::decode_success(b.clone())
                    .and_then(|mut d| <Compound4res as xdr::Decode>::decode(&mut d).ok())
                {
                    Some(res) => format!("nfs4 {}", res.status.0),
                    None => rpc_status(b),
                },
                None => "none".into(),
            })
            .collect();
        println!("nfs4_compound/{name}: {}", summary.join(" "));
        write(&dir, "nfs4_compound", &name, &input);
    }
    for (name, d) in record_seeds() {
        write(&dir, "rpc_record", name, &d);
    }
    for (name, d) in call_seeds() {
        write(&dir, "rpc_call", name, &d);
    }
    for (name, d) in rdma_seeds() {
        write(&dir, "rpcrdma_header", name, &d);
    }
    for (name, d) in private_data_seeds() {
        write(&dir, "rpcrdma_private_data", name, &d);
    }
    for (name, d) in exports_seeds() {
        write(&dir, "exports_parser", name, d.as_bytes());
    }
    eprintln!("seeds written to {}", dir.display());
}
