//! Seeds of nfs3_dispatch: every NFSv3 and MOUNT procedure, alone and in streams.

use super::*;
pub(crate) fn fh(m: &[u8; 8]) -> NfsFh3 {
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

pub(crate) fn nfs3_seeds() -> Vec<(String, Vec<Vec<u8>>)> {
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
