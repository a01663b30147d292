//! pNFS flexible files on loopback: rnfsd as metadata server (MDS) with two rnfsd data
//! servers (DSes), driven by a raw NFSv4.1 client that does what the Linux flexfiles client
//! does (LAYOUTGET in the OPEN COMPOUND, GETDEVICEINFO, NFSv3 I/O to the DS as the layout's
//! synthetic user, LAYOUTCOMMIT, LAYOUTRETURN before CLOSE), and by clients that read and
//! write through the MDS.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use bytes::Bytes;
use common::nfs4_raw::*;
use common::pnfs::*;
use common::*;
use nfs4wire::{NfsArgop4 as A, NfsOpnum4 as Op, *};
use xdr::Decode;

/// What the Linux client does with a new file: OPEN with LAYOUTGET in one COMPOUND, the
/// device, NFSv3 WRITEs to the DS as the layout's user (anyone else is refused), LAYOUTCOMMIT,
/// then LAYOUTRETURN before CLOSE. The data is on the DS and none in the MDS's export, and a
/// client reading through the MDS gets it.
#[test]
fn a_layout_writes_to_the_data_server_and_commits_the_size() {
    let cl = Cluster::new("rw,insecure,pnfs", 1, &[]);
    let mut c = V4::session(cl.mds.server.port, 2, "pnfs-writer");
    let root = c.path_fh(&cl.mds.export);
    assert_eq!(layout_attrs(&mut c, &root), (vec![4], 1 << 20));

    // EXCHANGE_ID: a metadata server, and not a non-pNFS one (the Linux client refuses both)
    let mut x = V4::connect(cl.mds.server.port, 1, "pnfs-probe");
    let r = x
        .compound(Ops::new().exchange_id(
            boot_verifier(b"pnfs-probe"),
            b"pnfs-probe",
            EXCHGID4_FLAG_USE_PNFS_MDS,
        ))
        .ok("EXCHANGE_ID");
    let flags = r.get(Op::OP_EXCHANGE_ID).exchange_id().eir_flags;
    assert_ne!(flags & EXCHGID4_FLAG_USE_PNFS_MDS, 0, "{flags:#x}");
    assert_eq!(flags & EXCHGID4_FLAG_USE_NON_PNFS, 0, "{flags:#x}");

    let claim = OpenClaim4::ClaimNull(Bytes::from_static(b"data"));
    let ops = Ops::new()
        .putfh(&root)
        .open(
            0,
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            c.clientid,
            b"owner",
            &OpenHow::Unchecked(Sattr::mode(0o644)),
            &claim,
        )
        .getfh()
        .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &current()));
    let r = c.call(ops).ok("OPEN + LAYOUTGET");
    let (fh, open_sid) = (r.fh(), r.open_stateid());
    let lg = r.get(Op::OP_LAYOUTGET).layoutget().clone();
    assert!(lg.logr_return_on_close);
    assert_eq!(lg.logr_stateid.seqid, 1);
    assert_eq!(lg.logr_layout.len(), 1);
    let l = &lg.logr_layout[0];
    assert_eq!((l.lo_offset, l.lo_length), (0, u64::MAX));
    assert_eq!(l.lo_content.loc_type, Layouttype4::LAYOUT4_FLEX_FILES);
    let ff = FfLayout4::decode(&mut xdr::Decoder::new(l.lo_content.loc_body.clone())).unwrap();
    assert_eq!(ff.ffl_stripe_unit, 0);
    assert_eq!(ff.ffl_flags, 0);
    assert_eq!(ff.ffl_mirrors.len(), 1);
    assert_eq!(ff.ffl_mirrors[0].ffm_data_servers.len(), 1);
    let ds = &ff.ffl_mirrors[0].ffm_data_servers[0];
    assert_eq!(ds.ffds_fh_vers.len(), 1);
    let uid: u32 = std::str::from_utf8(&ds.ffds_user).unwrap().parse().unwrap();
    let gid: u32 = std::str::from_utf8(&ds.ffds_group)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        uid >= 1 << 30 && gid >= 1 << 30,
        "synthetic ids {uid}:{gid}"
    );

    // the device: NFSv3 over TCP at a DS's address
    let r = c
        .call(Ops::new().op(getdeviceinfo(&ds.ffds_deviceid, 4096)))
        .ok("GETDEVICEINFO");
    let dev = r.get(Op::OP_GETDEVICEINFO).getdeviceinfo();
    let addr = FfDeviceAddr4::decode(&mut xdr::Decoder::new(
        dev.gdir_device_addr.da_addr_body.clone(),
    ))
    .unwrap();
    assert_eq!(addr.ffda_netaddrs.len(), 1);
    assert_eq!(&addr.ffda_netaddrs[0].na_r_netid[..], b"tcp");
    let uaddr = std::str::from_utf8(&addr.ffda_netaddrs[0].na_r_addr).unwrap();
    let ds_addr = sunrpc::uaddr::parse(uaddr).unwrap();
    let v = &addr.ffda_versions[0];
    assert_eq!((v.ffdv_version, v.ffdv_minorversion), (3, 0));
    assert!(!v.ffdv_tightly_coupled);
    assert_eq!((v.ffdv_rsize, v.ffdv_wsize), (1 << 20, 1 << 20));
    // too small a maxcount is answered with the size needed
    let r = c.call(Ops::new().op(getdeviceinfo(&ds.ffds_deviceid, 16)));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_TOOSMALL, "{}", r.summary());
    let r = c.call(Ops::new().op(getdeviceinfo(&[0xee; 16], 4096)));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_NOENT, "{}", r.summary());

    // NFSv3 WRITE to the DS: as the layout's user, not as anyone else
    let dsx = cl.ds_at(ds_addr.port());
    let data = pattern(7, 300_000);
    let dsfh = fh3(ds.ffds_fh_vers[0].clone());
    let mut other = RpcClient::connect(ds_addr.port());
    match other.write(
        &dsfh,
        0,
        Bytes::from_static(b"x"),
        nfs3wire::StableHow::FileSync,
    ) {
        nfs3wire::Write3res::Fail(s, _) => assert_eq!(s, nfs3wire::Nfsstat3::NFS3ERR_ACCES),
        r => panic!("a write as another user was taken: {r:?}"),
    }
    let mut dsc = RpcClient::connect(ds_addr.port()).with_user(uid, gid);
    // (the size through the MDS, NFSv3, once the first 64 KiB are on the DS)
    let v3_size = || match RpcClient::connect(cl.mds.server.port).getattr(&fh3(fh.clone())) {
        nfs3wire::Getattr3res::Ok(ok) => ok.obj_attributes.size,
        r => panic!("NFSv3 GETATTR: {r:?}"),
    };
    for (i, chunk) in data.chunks(1 << 16).enumerate() {
        if i == 1 {
            assert_eq!(v3_size(), 1 << 16, "NFSv3 GETATTR with a layout out");
        }
        match dsc.write(
            &dsfh,
            (i << 16) as u64,
            Bytes::copy_from_slice(chunk),
            nfs3wire::StableHow::FileSync,
        ) {
            nfs3wire::Write3res::Ok(ok) => assert_eq!(ok.count as usize, chunk.len()),
            r => panic!("DS WRITE: {r:?}"),
        }
    }
    // not yet committed: the MDS still says 0
    let size = |c: &mut V4| {
        let a = c
            .call(Ops::new().putfh(&fh).getattr(&[FATTR4_SIZE]))
            .ok("GETATTR");
        let f = &a.get(Op::OP_GETATTR).getattr().obj_attributes;
        xdr::Decoder::new(f.attr_vals.clone()).u64().unwrap()
    };
    // not committed yet, but a read-write layout is out: the MDS answers with the size of
    // the copy, for this client and any other
    let mut other_client = V4::session(cl.mds.server.port, 1, "pnfs-other");
    assert_eq!(size(&mut other_client), data.len() as u64);
    assert_eq!(size(&mut c), data.len() as u64);
    let commit = A::OpLayoutcommit(Layoutcommit4args {
        loca_offset: 0,
        loca_length: data.len() as u64,
        loca_reclaim: false,
        loca_stateid: lg.logr_stateid.clone(),
        loca_last_write_offset: Newoffset4::True(data.len() as u64 - 1),
        loca_time_modify: Newtime4::False,
        loca_layoutupdate: Layoutupdate4 {
            lou_type: Layouttype4::LAYOUT4_FLEX_FILES,
            lou_body: Bytes::new(),
        },
    });
    let r = c
        .call(Ops::new().putfh(&fh).op(commit.clone()))
        .ok("LAYOUTCOMMIT");
    // (the GETATTRs above took the size already)
    assert_eq!(
        r.get(Op::OP_LAYOUTCOMMIT).layoutcommit().locr_newsize,
        Newsize4::False
    );
    assert_eq!(size(&mut c), data.len() as u64);
    // an open stateid is not a layout stateid
    let mut bad = commit;
    if let A::OpLayoutcommit(a) = &mut bad {
        a.loca_stateid = open_sid.clone();
    }
    let r = c.call(Ops::new().putfh(&fh).op(bad));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BADLAYOUT, "{}", r.summary());

    // the bytes are on the DS, none on the MDS (its file is a hole of the size)
    let local = std::fs::metadata(cl.mds.export.join("data")).unwrap();
    assert_eq!(local.len(), data.len() as u64);
    assert_eq!(local.blocks(), 0, "data on the MDS");
    let on_ds: Vec<PathBuf> = std::fs::read_dir(&dsx.export)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(on_ds.len(), 1);
    assert_eq!(std::fs::read(&on_ds[0]).unwrap(), data);
    let m = std::fs::metadata(&on_ds[0]).unwrap();
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o777), (uid, gid, 0o640));

    // reads through the MDS: NFSv4 READ and NFSv3 READ give what the DS holds
    let r = c
        .call(Ops::new().putfh(&fh).read(&open_sid, 1000, 5000))
        .ok("READ");
    assert_eq!(
        &payload(&r.get(Op::OP_READ).read().data)[..],
        &data[1000..6000]
    );
    assert_eq!(
        v3_read_all(cl.mds.server.port, &cl.mds.export, "data"),
        data
    );

    // LAYOUTRETURN, then CLOSE, in one COMPOUND as the Linux client sends them
    let r = c
        .call(
            Ops::new()
                .putfh(&fh)
                .op(layoutreturn_file(&lg.logr_stateid))
                .close(0, &open_sid),
        )
        .ok("LAYOUTRETURN + CLOSE");
    assert_eq!(
        r.get(Op::OP_LAYOUTRETURN).layoutreturn(),
        &LayoutreturnStateid::False
    );
    // the layout stateid is gone
    let r = c.call(
        Ops::new()
            .putfh(&fh)
            .op(layoutreturn_file(&lg.logr_stateid)),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BAD_STATEID, "{}", r.summary());
}

/// A READ layout names a user that may read the DS file but not write it; a file that holds
/// its data on the MDS gets no layout; LAYOUTGET's argument checks.
#[test]
fn read_layouts_and_layoutget_refusals() {
    let cl = Cluster::new("rw,insecure,pnfs", 1, &[]);
    let mut c = V4::session(cl.mds.server.port, 2, "pnfs-reader");
    let root = c.path_fh(&cl.mds.export);
    let (fh, sid) = create(&mut c, &root, "f");
    let r = c
        .call(
            Ops::new()
                .putfh(&fh)
                .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &sid)),
        )
        .ok("LAYOUTGET RW");
    let rw = r.get(Op::OP_LAYOUTGET).layoutget().logr_stateid.clone();
    let r = c
        .call(
            Ops::new()
                .putfh(&fh)
                .op(layoutget(Layoutiomode4::Layoutiomode4Read, &sid)),
        )
        .ok("LAYOUTGET READ");
    let lg = r.get(Op::OP_LAYOUTGET).layoutget();
    // one layout stateid per client and file, its seqid moving
    assert_eq!(lg.logr_stateid.other, rw.other);
    assert_eq!(lg.logr_stateid.seqid, rw.seqid + 1);
    let ff = ff_layout_of(lg);
    let ds = &ff.ffl_mirrors[0].ffm_data_servers[0];
    let user: u32 = std::str::from_utf8(&ds.ffds_user).unwrap().parse().unwrap();
    let group: u32 = std::str::from_utf8(&ds.ffds_group)
        .unwrap()
        .parse()
        .unwrap();
    let dev = c
        .call(Ops::new().op(getdeviceinfo(&ds.ffds_deviceid, 4096)))
        .ok("GETDEVICEINFO");
    let addr = FfDeviceAddr4::decode(&mut xdr::Decoder::new(
        dev.get(Op::OP_GETDEVICEINFO)
            .getdeviceinfo()
            .gdir_device_addr
            .da_addr_body
            .clone(),
    ))
    .unwrap();
    let port = sunrpc::uaddr::parse(std::str::from_utf8(&addr.ffda_netaddrs[0].na_r_addr).unwrap())
        .unwrap()
        .port();
    let dsfh = fh3(ds.ffds_fh_vers[0].clone());
    let mut reader = RpcClient::connect(port).with_user(user, group);
    match reader.write(
        &dsfh,
        0,
        Bytes::from_static(b"x"),
        nfs3wire::StableHow::FileSync,
    ) {
        nfs3wire::Write3res::Fail(s, _) => assert_eq!(s, nfs3wire::Nfsstat3::NFS3ERR_ACCES),
        r => panic!("a READ layout's user wrote: {r:?}"),
    }
    match reader.read(&dsfh, 0, 10) {
        nfs3wire::Read3res::Ok(_) => {}
        r => panic!("a READ layout's user cannot read: {r:?}"),
    }

    // the argument checks
    let mut any = layoutget(Layoutiomode4::Layoutiomode4Any, &sid);
    let r = c.call(Ops::new().putfh(&fh).op(any.clone()));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BADIOMODE, "{}", r.summary());
    if let A::OpLayoutget(a) = &mut any {
        a.loga_iomode = Layoutiomode4::Layoutiomode4Read;
        a.loga_layout_type = Layouttype4::LAYOUT4_BLOCK_VOLUME;
    }
    let r = c.call(Ops::new().putfh(&fh).op(any.clone()));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_UNKNOWN_LAYOUTTYPE,
        "{}",
        r.summary()
    );
    if let A::OpLayoutget(a) = &mut any {
        a.loga_layout_type = Layouttype4::LAYOUT4_FLEX_FILES;
        a.loga_maxcount = 40;
    }
    let r = c.call(Ops::new().putfh(&fh).op(any.clone()));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_TOOSMALL, "{}", r.summary());
    if let A::OpLayoutget(a) = &mut any {
        a.loga_maxcount = 4096;
        a.loga_length = 0;
    }
    let r = c.call(Ops::new().putfh(&fh).op(any.clone()));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_INVAL, "{}", r.summary());
    let r = c.call(
        Ops::new()
            .putfh(&root)
            .op(layoutget(Layoutiomode4::Layoutiomode4Read, &sid)),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_ISDIR, "{}", r.summary());

    // a file with data of its own on the MDS keeps it there: no layout
    std::fs::write(cl.mds.export.join("local"), b"here").unwrap();
    std::os::unix::fs::chown(cl.mds.export.join("local"), Some(TEST_UID), Some(TEST_UID)).unwrap();
    let (lfh, lsid) = create(&mut c, &root, "local");
    let r = c.call(
        Ops::new()
            .putfh(&lfh)
            .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &lsid)),
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE,
        "{}",
        r.summary()
    );
    c.write_all(&lfh, &lsid, 4, b" too");
    assert_eq!(
        std::fs::read(cl.mds.export.join("local")).unwrap(),
        b"here too"
    );
}

/// A client of a rule without `pnfs` sees no layout types and gets no layouts; its writes to
/// new files stay on the MDS. A server without data servers says it is not a pNFS server.
#[test]
fn no_layouts_without_the_pnfs_option_or_data_servers() {
    let cl = Cluster::new("rw,insecure", 1, &[]);
    let mut c = V4::session(cl.mds.server.port, 2, "plain");
    let root = c.path_fh(&cl.mds.export);
    assert_eq!(layout_attrs(&mut c, &root), (vec![], 1 << 20));
    let (fh, sid) = create(&mut c, &root, "f");
    let r = c.call(
        Ops::new()
            .putfh(&fh)
            .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &sid)),
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_LAYOUTUNAVAILABLE,
        "{}",
        r.summary()
    );
    c.write_all(&fh, &sid, 0, b"local data");
    assert_eq!(
        std::fs::read(cl.mds.export.join("f")).unwrap(),
        b"local data"
    );
    assert!(cl.ds_files(0).is_empty() && cl.ds_files(1).is_empty());

    let fx = Fixture::new();
    let mut c = V4::connect(fx.server.port, 1, "non-pnfs");
    let r = c
        .compound(Ops::new().exchange_id(
            boot_verifier(b"non-pnfs"),
            b"non-pnfs",
            EXCHGID4_FLAG_USE_NON_PNFS,
        ))
        .ok("EXCHANGE_ID");
    let flags = r.get(Op::OP_EXCHANGE_ID).exchange_id().eir_flags;
    assert_ne!(flags & EXCHGID4_FLAG_USE_NON_PNFS, 0, "{flags:#x}");
    assert_eq!(flags & EXCHGID4_FLAG_USE_PNFS_MDS, 0, "{flags:#x}");
    let mut c = V4::session(fx.server.port, 2, "non-pnfs-2");
    let root = c.path_fh(&fx.export);
    let (fh, sid) = create(&mut c, &root, "g");
    let r = c.call(
        Ops::new()
            .putfh(&fh)
            .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &sid)),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_NOTSUPP, "{}", r.summary());
}

/// Clients that do not use layouts read and write through the MDS: a new file's data goes to
/// the DSes all the same, NFSv3 clients see it, a truncate reaches the DS, and REMOVE deletes
/// the DS file. After an MDS restart the placement is still known; a DS file of this MDS that
/// no file owns is deleted by the reconciler.
#[test]
fn io_through_the_mds_remove_restart_and_reconcile() {
    let mut cl = Cluster::new("rw,insecure,pnfs", 1, &["--pnfs-reconcile-secs", "1"]);
    let mut c = V4::session(cl.mds.server.port, 1, "through-mds");
    let root = c.path_fh(&cl.mds.export);
    let (fh, sid) = create(&mut c, &root, "a");
    let data = pattern(3, (1 << 20) + 4321);
    c.write_all(&fh, &sid, 0, &data);
    let (fh2, sid2) = create(&mut c, &root, "b");
    c.write_all(&fh2, &sid2, 0, b"second file");
    let local = std::fs::metadata(cl.mds.export.join("a")).unwrap();
    assert_eq!((local.len(), local.blocks()), (data.len() as u64, 0));
    let on_ds: Vec<PathBuf> = (0..2).flat_map(|i| cl.ds_files(i)).collect();
    assert_eq!(on_ds.len(), 2, "{on_ds:?}");
    let a_on_ds = on_ds
        .iter()
        .find(|p| std::fs::read(p).unwrap() == data)
        .expect("file a on a DS")
        .clone();
    assert_eq!(v3_read_all(cl.mds.server.port, &cl.mds.export, "a"), data);

    // SETATTR of the size truncates the copy
    let trunc = Sattr {
        size: Some(1000),
        ..Sattr::default()
    };
    c.call(Ops::new().putfh(&fh).setattr(&sid, &trunc))
        .ok("SETATTR size");
    assert_eq!(std::fs::metadata(&a_on_ds).unwrap().len(), 1000);
    assert_eq!(
        v3_read_all(cl.mds.server.port, &cl.mds.export, "a"),
        &data[..1000]
    );
    c.close_ok(&fh, &sid);
    c.close_ok(&fh2, &sid2);

    // a restart keeps the placement
    cl.mds.server.restart();
    assert_eq!(
        v3_read_all(cl.mds.server.port, &cl.mds.export, "a"),
        &data[..1000]
    );
    assert_eq!(
        v3_read_all(cl.mds.server.port, &cl.mds.export, "b"),
        b"second file"
    );

    // an orphan with this MDS's name prefix goes, other files stay
    let name = a_on_ds.file_name().unwrap().to_str().unwrap().to_owned();
    let prefix = &name[..name.find('.').unwrap() + 1];
    let ds_dir = a_on_ds.parent().unwrap();
    let orphan = ds_dir.join(format!("{prefix}00000000000000000000000000000000"));
    let foreign = ds_dir.join("not-of-this-mds");
    std::fs::write(&orphan, b"orphan").unwrap();
    std::fs::write(&foreign, b"kept").unwrap();
    eventually("the orphan removed", || !orphan.exists());
    assert!(foreign.exists() && a_on_ds.exists());

    // REMOVE of the last link deletes the DS file
    let mut c = V4::session(cl.mds.server.port, 1, "remover");
    let root = c.path_fh(&cl.mds.export);
    c.call(Ops::new().putfh(&root).remove("a")).ok("REMOVE");
    eventually("the DS file removed", || !a_on_ds.exists());
    assert_eq!(
        (0..2).flat_map(|i| cl.ds_files(i)).count(),
        2,
        "b and the foreign file"
    );
}

/// Two mirrors: a file's data is on both DSes and both are in its layout. With one DS down,
/// reads and writes through the MDS go on with the other copy, which alone is handed out
/// in layouts from then on.
#[test]
fn mirrors_and_a_data_server_down() {
    let mut cl = Cluster::new("rw,insecure,pnfs", 2, &[]);
    let mut c = V4::session(cl.mds.server.port, 2, "mirrors");
    let root = c.path_fh(&cl.mds.export);
    let (fh, sid) = create(&mut c, &root, "m");
    let data = pattern(11, 200_000);
    c.write_all(&fh, &sid, 0, &data);
    for i in 0..2 {
        let files = cl.ds_files(i);
        assert_eq!(files.len(), 1, "DS {i}");
        assert_eq!(std::fs::read(&files[0]).unwrap(), data, "DS {i}");
    }
    let mirrors = |c: &mut V4| {
        let lg = layoutget_ok(c, &fh, Layoutiomode4::Layoutiomode4Rw, &sid);
        ff_layout_of(&lg).ffl_mirrors.len()
    };
    assert_eq!(mirrors(&mut c), 2);

    cl.dss[0].server.stop();
    let r = c
        .call(Ops::new().putfh(&fh).read(&sid, 0, 1 << 20))
        .ok("READ, one DS down");
    assert_eq!(&payload(&r.get(Op::OP_READ).read().data)[..], &data[..]);
    c.write_all(&fh, &sid, 0, b"changed");
    let r = c.call(Ops::new().putfh(&fh).read(&sid, 0, 7)).ok("READ");
    assert_eq!(&payload(&r.get(Op::OP_READ).read().data)[..], b"changed");
    assert_eq!(mirrors(&mut c), 1);
    assert_eq!(&std::fs::read(&cl.ds_files(1)[0]).unwrap()[..7], b"changed");
}

/// Least-used placement asks the data servers for their space (FSSTAT); DSes with equal space
/// (both exports on one file system here) take files in turn.
#[test]
fn least_used_placement() {
    let cl = Cluster::new("rw,insecure,pnfs", 1, &["--pnfs-placement", "least-used"]);
    let mut c = V4::session(cl.mds.server.port, 1, "least-used");
    let root = c.path_fh(&cl.mds.export);
    for i in 0..4 {
        let (fh, sid) = create(&mut c, &root, &format!("f{i}"));
        c.write_all(&fh, &sid, 0, b"data");
        c.close_ok(&fh, &sid);
    }
    assert_eq!((cl.ds_files(0).len(), cl.ds_files(1).len()), (2, 2));
    let text = http_get(cl.mds.server.metrics.unwrap(), "/metrics");
    assert_eq!(metric(&text, "rnfs_pnfs_files"), Some(4));
}
