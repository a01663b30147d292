//! Codec tests of the generated NFSv3 and MOUNT v3 types: layouts checked against hand-written
//! words, bounds, zero copy of WRITE data, READ data as a bulk segment, and round trips of
//! every argument and result type (generated `Arbitrary` values, and larger hand-made ones).

use super::*;
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use std::fmt::Debug;
use xdr::{Decode, Decoder, Encode, Encoder, Segment, XdrError};

fn enc<T: Encode>(v: &T) -> Bytes {
    let mut e = Encoder::new();
    e.encode(v);
    e.finish().to_bytes()
}

fn dec<T: Decode>(b: Bytes) -> xdr::Result<T> {
    let mut d = Decoder::new(b);
    let v = T::decode(&mut d)?;
    assert_eq!(d.remaining(), 0, "trailing bytes after decode");
    Ok(v)
}

fn words(ws: &[u32]) -> Vec<u8> {
    ws.iter().flat_map(|w| w.to_be_bytes()).collect()
}

/// Encodes, checks alignment, decodes and compares; also checks strict prefixes fail.
fn roundtrip<T: Encode + Decode + PartialEq + Debug>(v: &T) -> Result<(), TestCaseError> {
    let b = enc(v);
    prop_assert_eq!(b.len() % 4, 0);
    let mut d = Decoder::new(b.clone());
    let back = T::decode(&mut d);
    prop_assert_eq!(back.as_ref(), Ok(v));
    prop_assert_eq!(d.remaining(), 0);
    // A strict prefix of a valid encoding never decodes (decoding is deterministic and
    // self-delimiting). Check a few cut points, including the last word.
    let cuts = [
        0,
        b.len() / 2,
        b.len().saturating_sub(4),
        b.len().saturating_sub(1),
    ];
    for &cut in &cuts {
        if cut < b.len() {
            let r = T::decode(&mut Decoder::new(b.slice(..cut)));
            prop_assert!(r.is_err(), "prefix {} of {} decoded: {:?}", cut, b.len(), r);
        }
    }
    Ok(())
}

fn fh(b: &'static [u8]) -> NfsFh3 {
    NfsFh3 {
        data: Bytes::from_static(b),
    }
}

fn sample_fattr() -> Fattr3 {
    Fattr3 {
        r#type: Ftype3::Nf3dir,
        mode: 0o755,
        nlink: 2,
        uid: 1000,
        gid: 100,
        size: 0x1_0000_0002,
        used: 4096,
        rdev: Specdata3 {
            specdata1: 8,
            specdata2: 1,
        },
        fsid: 7,
        fileid: 0xdead_beef_0000_0001,
        atime: Nfstime3 {
            seconds: 1,
            nseconds: 2,
        },
        mtime: Nfstime3 {
            seconds: 3,
            nseconds: 4,
        },
        ctime: Nfstime3 {
            seconds: 5,
            nseconds: 6,
        },
    }
}

fn unset_sattr() -> Sattr3 {
    Sattr3 {
        mode: SetMode3(None),
        uid: SetUid3(None),
        gid: SetGid3(None),
        size: SetSize3(None),
        atime: SetAtime::Default(TimeHow::DontChange),
        mtime: SetMtime::Default(TimeHow::DontChange),
    }
}

// ----- byte-level tests -----

#[test]
fn getattr_fail_is_just_the_status_word() {
    let r = Getattr3res::Fail(Nfsstat3::NFS3ERR_STALE);
    assert_eq!(&enc(&r)[..], &words(&[70])[..]);
    assert_eq!(dec::<Getattr3res>(enc(&r)), Ok(r));
}

#[test]
fn post_op_attr_absent_is_zero() {
    assert_eq!(&enc(&PostOpAttr(None))[..], &[0, 0, 0, 0]);
    assert_eq!(&enc(&PreOpAttr(None))[..], &[0, 0, 0, 0]);
    assert_eq!(&enc(&PostOpFh3(None))[..], &[0, 0, 0, 0]);
    let wcc = WccData {
        before: PreOpAttr::default(),
        after: PostOpAttr::default(),
    };
    assert_eq!(&enc(&wcc)[..], &[0; 8]);
}

#[test]
fn getattr_ok_layout() {
    let r = Getattr3res::Ok(Getattr3resok {
        obj_attributes: sample_fattr(),
    });
    let expected = words(&[
        0, // NFS3_OK
        2, // NF3DIR
        0o755,
        2,
        1000,
        100,
        1,
        2, // size
        0,
        4096, // used
        8,
        1, // rdev
        0,
        7, // fsid
        0xdead_beef,
        1, // fileid
        1,
        2,
        3,
        4,
        5,
        6, // times
    ]);
    let b = enc(&r);
    assert_eq!(b.len(), 4 + FATTR3_SIZE);
    assert_eq!(&b[..], &expected[..]);
    assert_eq!(enc(&sample_fattr()).len(), FATTR3_SIZE);
}

#[test]
fn sattr_unset_is_six_zero_words() {
    assert_eq!(&enc(&unset_sattr())[..], &[0u8; 24][..]);
    let s = Sattr3 {
        mode: SetMode3(Some(0o644)),
        size: SetSize3(Some(0)),
        mtime: SetMtime::SetToClientTime(Nfstime3 {
            seconds: 9,
            nseconds: 10,
        }),
        atime: SetAtime::Default(TimeHow::SetToServerTime),
        ..unset_sattr()
    };
    assert_eq!(
        &enc(&s)[..],
        &words(&[1, 0o644, 0, 0, 1, 0, 0, 1, 2, 9, 10])[..]
    );
    assert_eq!(dec::<Sattr3>(enc(&s)), Ok(s));
}

#[test]
fn lookup_args_layout() {
    let b = Bytes::from(words(&[4, 0x0102_0304, 3, u32::from_be_bytes(*b"abc\0")]));
    let a: Lookup3args = dec(b.clone()).unwrap();
    assert_eq!(&a.what.dir.data[..], &[1, 2, 3, 4]);
    assert_eq!(&a.what.name[..], b"abc");
    assert_eq!(enc(&a), b);
}

#[test]
fn write_args_data_points_into_receive_buffer() {
    let mut raw = words(&[2, 0xabcd_0000, 0, 16, 5, 2, 5]);
    raw.extend_from_slice(b"hello\0\0\0");
    let buf = Bytes::from(raw);
    let base = buf.as_ptr() as usize;
    let a: Write3args = dec(buf.clone()).unwrap();
    assert_eq!(&a.file.data[..], &[0xab, 0xcd]);
    assert_eq!(a.offset, 16);
    assert_eq!(a.count, 5);
    assert_eq!(a.stable, StableHow::FileSync);
    assert_eq!(&a.data[..], b"hello");
    assert_eq!(a.data.as_ptr() as usize, base + 28);
    assert_eq!(a.file.data.as_ptr() as usize, base + 4);
}

#[test]
fn write_args_data_is_encoded_as_a_bulk_segment() {
    let data = Bytes::from(vec![3u8; 5000]);
    let a = Write3args {
        file: fh(&[1]),
        offset: 0,
        count: 5000,
        stable: StableHow::Unstable,
        data: data.clone(),
    };
    let mut e = Encoder::new();
    e.encode(&a);
    let reply = e.finish();
    let bulk: Vec<_> = reply
        .segments
        .iter()
        .filter_map(|s| match s {
            Segment::Bulk(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(bulk.len(), 1);
    assert_eq!(bulk[0].as_ptr(), data.as_ptr());
    assert_eq!(dec::<Write3args>(reply.to_bytes()), Ok(a));
}

#[test]
fn write_count_mismatch_still_decodes() {
    let mut raw = words(&[0, 0, 0, 100, 0, 3]);
    raw.extend_from_slice(b"xyz\0");
    let a: Write3args = dec(Bytes::from(raw)).unwrap();
    assert_eq!(a.count, 100);
    assert_eq!(a.stable, StableHow::Unstable);
    assert_eq!(&a.data[..], b"xyz");
}

#[test]
fn write_too_large_is_rejected() {
    let raw = words(&[0, 0, 0, 0, 0, (NFS3_MAX_IO + 1) as u32]);
    assert!(matches!(
        dec::<Write3args>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
    // The largest accepted payload decodes.
    let mut raw = words(&[0, 0, 0, 0, 0, NFS3_MAX_IO as u32]);
    raw.resize(raw.len() + NFS3_MAX_IO, 0);
    assert_eq!(
        dec::<Write3args>(Bytes::from(raw)).unwrap().data.len(),
        NFS3_MAX_IO
    );
}

#[test]
fn oversized_handle_and_name_are_rejected() {
    let raw = words(&[65]);
    assert!(matches!(
        dec::<Getattr3args>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
    // A 256-byte name decodes (the procedure answers NFS3ERR_NAMETOOLONG); a name longer
    // than a path does not.
    let mut raw = words(&[0, 256]);
    raw.extend(vec![b'a'; 256]);
    assert!(dec::<Lookup3args>(Bytes::from(raw)).is_ok());
    let mut raw = words(&[0, 4096]);
    raw.extend(vec![b'a'; 4096]);
    assert!(dec::<Lookup3args>(Bytes::from(raw)).is_ok());
    let mut raw = words(&[0, 4097]);
    raw.extend(vec![b'a'; 4100]);
    assert!(matches!(
        dec::<Lookup3args>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
    // A symbolic link's target: up to NFS3_MAXPATHLEN.
    let mut raw = words(&[0, 1, 0, 0, 0, 0, 0, 0, 0, 4097]);
    raw.extend(vec![b'a'; 4100]);
    assert!(matches!(
        dec::<Symlink3args>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
}

#[test]
fn read_res_data_is_a_bulk_segment() {
    let data = Bytes::from(vec![7u8; 4097]);
    let r = Read3res::Ok(Read3resok {
        file_attributes: PostOpAttr(None),
        count: 4097,
        eof: true,
        data: data.clone().into(),
    });
    let mut e = Encoder::new();
    e.encode(&r);
    let reply = e.finish();
    let bulk: Vec<_> = reply
        .segments
        .iter()
        .filter_map(|s| match s {
            Segment::Bulk(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(bulk.len(), 1);
    assert_eq!(bulk[0].as_ptr(), data.as_ptr());
    let flat = reply.to_bytes();
    assert_eq!(&flat[..20], &words(&[0, 0, 4097, 1, 4097])[..]);
    assert_eq!(flat.len(), 20 + 4100);
    assert_eq!(dec::<Read3res>(flat), Ok(r));
}

#[test]
fn read_data_over_the_maximum_is_rejected() {
    let raw = words(&[0, 0, 0, 1, (NFS3_MAX_IO + 1) as u32]);
    assert!(matches!(
        dec::<Read3res>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
}

#[test]
fn readdir_list_layout() {
    let r = Readdir3res::Ok(Readdir3resok {
        dir_attributes: PostOpAttr(None),
        cookieverf: [1, 2, 3, 4, 5, 6, 7, 8],
        reply: Dirlist3 {
            entries: vec![Entry3 {
                fileid: 5,
                name: Bytes::from_static(b"a"),
                cookie: 9,
            }],
            eof: true,
        },
    });
    let b = enc(&r);
    let expected = words(&[
        0,
        0,
        0x0102_0304,
        0x0506_0708,
        1,
        0,
        5,
        1,
        u32::from_be_bytes(*b"a\0\0\0"),
        0,
        9,
        0,
        1,
    ]);
    assert_eq!(&b[..], &expected[..]);
    let r2: Readdir3res = dec(b).unwrap();
    assert_eq!(r2, r);
}

#[test]
fn readdirplus_entry_layout() {
    let e = Entryplus3 {
        fileid: 1,
        name: Bytes::from_static(b"hello"),
        cookie: 2,
        name_attributes: PostOpAttr(Some(sample_fattr())),
        name_handle: PostOpFh3(Some(fh(&[1; 10]))),
    };
    // fileid, name (5 bytes padded to 8), cookie, attributes, handle (10 padded to 12)
    let b = enc(&e);
    assert_eq!(b.len(), 8 + 4 + 8 + 8 + 4 + FATTR3_SIZE + 4 + 4 + 12);
    assert_eq!(&b[..12], &words(&[0, 1, 5])[..]);
    assert_eq!(&b[b.len() - 20..b.len() - 12], &words(&[1, 10])[..]);
    assert_eq!(dec::<Entryplus3>(b), Ok(e));
}

#[test]
fn readdir_list_bad_bool_is_rejected() {
    let raw = words(&[2]);
    assert_eq!(dec::<Dirlist3>(Bytes::from(raw)), Err(XdrError::BadBool(2)));
}

#[test]
fn unknown_discriminants() {
    // nfsstat3 is open: an unknown status is carried (a client decodes any server's reply).
    assert_eq!(dec::<Nfsstat3>(Bytes::from(words(&[3]))), Ok(Nfsstat3(3)));
    assert_eq!(
        dec::<Getattr3res>(Bytes::from(words(&[99_999]))),
        Ok(Getattr3res::Fail(Nfsstat3(99_999)))
    );
    assert_eq!(
        dec::<Createhow3>(Bytes::from(words(&[3]))),
        Err(XdrError::BadDiscriminant(3))
    );
    assert_eq!(
        dec::<Mknoddata3>(Bytes::from(words(&[0]))),
        Err(XdrError::BadDiscriminant(0))
    );
    // NF3REG, NF3DIR, NF3LNK are the void arm (MKNOD answers NFS3ERR_BADTYPE).
    assert_eq!(
        dec::<Mknoddata3>(Bytes::from(words(&[1]))),
        Ok(Mknoddata3::Default(Ftype3::Nf3reg))
    );
    assert_eq!(
        dec::<SetAtime>(Bytes::from(words(&[3]))),
        Err(XdrError::BadDiscriminant(3))
    );
    assert_eq!(
        dec::<StableHow>(Bytes::from(words(&[3]))),
        Err(XdrError::BadDiscriminant(3))
    );
    assert_eq!(
        dec::<PostOpAttr>(Bytes::from(words(&[2]))),
        Err(XdrError::BadBool(2))
    );
}

#[test]
fn status_and_procedure_values_match_rfc() {
    assert_eq!(Nfsstat3::NFS3ERR_NAMETOOLONG.0, 63);
    assert_eq!(Nfsstat3::NFS3ERR_BADHANDLE.0, 10001);
    assert_eq!(Nfsstat3::NFS3ERR_JUKEBOX.0, 10008);
    assert_eq!(Nfsstat3::NFS3ERR_JUKEBOX.name(), Some("NFS3ERR_JUKEBOX"));
    assert_eq!(Nfsstat3(3).name(), None);
    assert_eq!(format!("{:?}", Nfsstat3::NFS3ERR_STALE), "NFS3ERR_STALE");
    assert_eq!(Mountstat3::MNT3ERR_SERVERFAULT.0, 10006);
    // All 29 statuses of RFC 1813 section 2.6 have a name, and nothing else up to 10008.
    let named = (0..=10_010)
        .filter(|v| Nfsstat3(*v).name().is_some())
        .count();
    assert_eq!(named, 29);
    let named = (0..=10_010)
        .filter(|v| Mountstat3(*v).name().is_some())
        .count();
    assert_eq!(named, 10);
    assert_eq!((NFS3_PROGRAM, NFS_V3), (100_003, 3));
    assert_eq!((MOUNTPROG, MOUNTVERS3), (100_005, 3));
    assert_eq!(NFSPROC3_READDIRPLUS, 17);
    assert_eq!(NFSPROC3_COMMIT, 21);
    assert_eq!(MOUNTPROC_EXPORT, 5);
    assert_eq!(
        (ACCESS3_READ, ACCESS3_EXECUTE, FSF3_CANSETTIME),
        (1, 0x20, 0x10)
    );
    assert_eq!(
        (NFS3_FHSIZE, MNTPATHLEN, MNTNAMLEN, FHSIZE3),
        (64, 1024, 255, 64)
    );
}

#[test]
fn mount_layouts() {
    assert_eq!(
        &enc(&Mountres3::Fail(Mountstat3::MNT3ERR_ACCES))[..],
        &words(&[13])[..]
    );
    let ok = Mountres3::Ok(Mountres3Ok {
        fhandle: Bytes::from_static(&[9, 9, 9, 9, 9]),
        auth_flavors: vec![1, 390_004],
    });
    assert_eq!(
        &enc(&ok)[..],
        &words(&[0, 5, 0x0909_0909, 0x0900_0000, 2, 1, 390_004])[..]
    );
    assert_eq!(dec::<Mountres3>(enc(&ok)), Ok(ok));
    let ex = Exports(vec![Exportnode {
        ex_dir: Dirpath(Bytes::from_static(b"/x")),
        ex_groups: vec![Groupnode {
            gr_name: Bytes::from_static(b"*"),
        }],
    }]);
    assert_eq!(
        &enc(&ex)[..],
        &words(&[
            1,
            2,
            u32::from_be_bytes(*b"/x\0\0"),
            1,
            1,
            u32::from_be_bytes(*b"*\0\0\0"),
            0,
            0
        ])[..]
    );
    assert_eq!(dec::<Exports>(enc(&ex)), Ok(ex));
    assert_eq!(&enc(&Exports(vec![]))[..], &[0, 0, 0, 0]);
    assert_eq!(&enc(&Mountlist(vec![]))[..], &[0, 0, 0, 0]);
    let ml = Mountlist(vec![Mountbody {
        ml_hostname: Bytes::from_static(b"h"),
        ml_directory: Dirpath(Bytes::from_static(b"/d")),
    }]);
    assert_eq!(
        &enc(&ml)[..],
        &words(&[
            1,
            1,
            u32::from_be_bytes(*b"h\0\0\0"),
            2,
            u32::from_be_bytes(*b"/d\0\0"),
            0
        ])[..]
    );
}

#[test]
fn mnt_args_layout() {
    let b = Bytes::from(words(&[4, u32::from_be_bytes(*b"/exp")]));
    let a: Dirpath = dec(b.clone()).unwrap();
    assert_eq!(&a.0[..], b"/exp");
    assert_eq!(enc(&a), b);
    let mut raw = words(&[1025]);
    raw.extend(vec![b'a'; 1028]);
    assert!(matches!(
        dec::<Dirpath>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
}

#[test]
fn mount_bounds() {
    // A handle longer than FHSIZE3, a host name longer than MNTNAMLEN, too many flavors.
    let mut raw = words(&[0, 65]);
    raw.extend(vec![0; 68]);
    raw.extend(words(&[0]));
    assert!(matches!(
        dec::<Mountres3>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
    let mut raw = words(&[1, 256]);
    raw.extend(vec![b'h'; 256]);
    raw.extend(words(&[0, 0]));
    assert!(matches!(
        dec::<Mountlist>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
    let mut raw = words(&[0, 0, (MAX_AUTH_FLAVORS + 1) as u32]);
    raw.extend(vec![0; 4 * (MAX_AUTH_FLAVORS + 1)]);
    assert!(matches!(
        dec::<Mountres3>(Bytes::from(raw)),
        Err(XdrError::TooLong { .. })
    ));
}

#[test]
fn long_list_is_bounded_by_input() {
    // "true" with no entry after it must fail, not loop or allocate.
    let raw = words(&[1; 3]);
    assert!(dec::<Dirlist3>(Bytes::from(raw)).is_err());
    let raw = words(&[1, 1, 1]);
    assert!(dec::<Exports>(Bytes::from(raw)).is_err());
}

#[test]
fn list_node_count_is_bounded() {
    // MAX_LIST_ENTRIES empty-named entries, then one more: refused without decoding on.
    let one = words(&[1, 0, 0, 0, 0, 0]);
    let mut raw = Vec::with_capacity(one.len() * (MAX_LIST_ENTRIES + 1) + 8);
    for _ in 0..=MAX_LIST_ENTRIES {
        raw.extend_from_slice(&one);
    }
    raw.extend(words(&[0, 1]));
    assert_eq!(
        dec::<Dirlist3>(Bytes::from(raw)),
        Err(XdrError::TooLong {
            len: MAX_LIST_ENTRIES as u64 + 1,
            max: MAX_LIST_ENTRIES
        })
    );
}

// ----- larger values than the generated strategies make -----

fn bytes_up_to(max: usize) -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..=max).prop_map(Bytes::from)
}

fn name() -> impl Strategy<Value = Bytes> {
    prop_oneof![bytes_up_to(16), bytes_up_to(NFS3_MAXNAMLEN)]
}

fn path() -> impl Strategy<Value = Bytes> {
    prop_oneof![bytes_up_to(32), bytes_up_to(NFS3_MAXPATHLEN)]
}

fn handle() -> impl Strategy<Value = NfsFh3> {
    bytes_up_to(NFS3_FHSIZE as usize).prop_map(|data| NfsFh3 { data })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn rt_args(
        a: Getattr3args, b: Setattr3args, c: Lookup3args, d: Access3args, e: Readlink3args,
        f: Read3args, g: Write3args, h: Create3args, i: Mkdir3args, j: Symlink3args,
    ) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
        roundtrip(&f)?; roundtrip(&g)?; roundtrip(&h)?; roundtrip(&i)?; roundtrip(&j)?;
    }

    #[test]
    fn rt_more_args(
        a: Mknod3args, b: Remove3args, c: Rmdir3args, d: Rename3args, e: Link3args,
        f: Readdir3args, g: Readdirplus3args, h: Fsstat3args, i: Fsinfo3args, j: Pathconf3args,
    ) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
        roundtrip(&f)?; roundtrip(&g)?; roundtrip(&h)?; roundtrip(&i)?; roundtrip(&j)?;
    }

    #[test]
    fn rt_results(
        a: Getattr3res, b: Setattr3res, c: Lookup3res, d: Access3res, e: Readlink3res,
        f: Read3res, g: Write3res, h: Create3res, i: Mkdir3res, j: Symlink3res,
    ) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
        roundtrip(&f)?; roundtrip(&g)?; roundtrip(&h)?; roundtrip(&i)?; roundtrip(&j)?;
    }

    #[test]
    fn rt_more_results(
        a: Mknod3res, b: Remove3res, c: Rmdir3res, d: Rename3res, e: Link3res,
        f: Readdir3res, g: Readdirplus3res, h: Fsstat3res, i: Fsinfo3res, j: Pathconf3res,
    ) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
        roundtrip(&f)?; roundtrip(&g)?; roundtrip(&h)?; roundtrip(&i)?; roundtrip(&j)?;
    }

    #[test]
    fn rt_commit_and_mount(
        a: Commit3args, b: Commit3res, c: Dirpath, d: Mountres3, e: Mountlist, f: Exports,
        g: Sattr3, h: Fattr3, i: WccData,
    ) {
        roundtrip(&a)?; roundtrip(&b)?; roundtrip(&c)?; roundtrip(&d)?; roundtrip(&e)?;
        roundtrip(&f)?; roundtrip(&g)?; roundtrip(&h)?; roundtrip(&i)?;
    }

    #[test]
    fn rt_large_names_paths_and_data(
        dir in handle(), n in name(), target in path(), data in bytes_up_to(5000),
        dirpath in prop_oneof![bytes_up_to(32), bytes_up_to(MNTPATHLEN as usize)],
        offset: u64, stable: StableHow, symlink_attributes: Sattr3,
    ) {
        let w = Diropargs3 { dir: dir.clone(), name: n };
        roundtrip(&Lookup3args { what: w.clone() })?;
        roundtrip(&Symlink3args { r#where: w, symlink: Symlinkdata3 { symlink_attributes, symlink_data: target.clone() } })?;
        roundtrip(&Readlink3res::Ok(Readlink3resok { symlink_attributes: PostOpAttr(None), data: target }))?;
        roundtrip(&Write3args { file: dir.clone(), offset, count: data.len() as u32, stable, data: data.clone() })?;
        roundtrip(&Read3res::Ok(Read3resok { file_attributes: PostOpAttr(None), count: data.len() as u32, eof: false, data: data.into() }))?;
        roundtrip(&Dirpath(dirpath))?;
    }

    #[test]
    fn rt_long_directory_listings(
        entries in vec((any::<u64>(), name(), any::<u64>()).prop_map(|(fileid, name, cookie)| Entry3 { fileid, name, cookie }), 0..20),
        plus in vec((any::<u64>(), name(), any::<u64>(), any::<PostOpAttr>(), any::<PostOpFh3>())
            .prop_map(|(fileid, name, cookie, name_attributes, name_handle)| Entryplus3 { fileid, name, cookie, name_attributes, name_handle }), 0..10),
        cookieverf: [u8; 8], eof: bool,
    ) {
        roundtrip(&Readdir3res::Ok(Readdir3resok { dir_attributes: PostOpAttr(None), cookieverf, reply: Dirlist3 { entries, eof } }))?;
        roundtrip(&Readdirplus3res::Ok(Readdirplus3resok { dir_attributes: PostOpAttr(None), cookieverf, reply: Dirlistplus3 { entries: plus, eof } }))?;
    }

    #[test]
    fn garbage_never_panics(raw in vec(any::<u8>(), 0..512)) {
        let b = Bytes::from(raw);
        fn go<T: Decode>(b: &Bytes) {
            let _ = T::decode(&mut Decoder::new(b.clone()));
        }
        go::<Getattr3args>(&b);
        go::<Setattr3args>(&b);
        go::<Lookup3args>(&b);
        go::<Access3args>(&b);
        go::<Readlink3args>(&b);
        go::<Read3args>(&b);
        go::<Write3args>(&b);
        go::<Create3args>(&b);
        go::<Mkdir3args>(&b);
        go::<Symlink3args>(&b);
        go::<Mknod3args>(&b);
        go::<Remove3args>(&b);
        go::<Rmdir3args>(&b);
        go::<Rename3args>(&b);
        go::<Link3args>(&b);
        go::<Readdir3args>(&b);
        go::<Readdirplus3args>(&b);
        go::<Fsstat3args>(&b);
        go::<Fsinfo3args>(&b);
        go::<Pathconf3args>(&b);
        go::<Commit3args>(&b);
        go::<Dirpath>(&b);
        go::<Readdirplus3res>(&b);
        go::<Readdir3res>(&b);
        go::<Mountres3>(&b);
        go::<Exports>(&b);
        go::<Mountlist>(&b);
    }

    #[test]
    fn garbage_words_never_panic(ws in vec(prop_oneof![0u32..4, any::<u32>()], 0..64)) {
        // Small words make discriminants and booleans valid more often, reaching deeper.
        let b = Bytes::from(words(&ws));
        fn go<T: Decode>(b: &Bytes) {
            let _ = T::decode(&mut Decoder::new(b.clone()));
        }
        go::<Setattr3args>(&b);
        go::<Create3args>(&b);
        go::<Mknod3args>(&b);
        go::<Symlink3args>(&b);
        go::<Write3args>(&b);
        go::<Rename3args>(&b);
        go::<Readdirplus3res>(&b);
        go::<Exports>(&b);
        go::<Mountres3>(&b);
    }

    #[test]
    fn truncated_args_fail(a: Create3args, cut in any::<prop::sample::Index>()) {
        let b = enc(&a);
        let cut = cut.index(b.len());
        prop_assert!(dec::<Create3args>(b.slice(..cut)).is_err());
    }
}
