//! pNFS state on loopback: recalls before another client's truncation and fencing of a
//! holder that keeps its layout, LAYOUTCOMMIT after a truncation or a time change, and stale
//! copies repaired once their data server answers, CB_RECALL_ANY past the layout bound (see
//! docs/pnfs.md).

mod common;

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::nfs4_raw::*;
use common::pnfs::*;
use common::*;
use nfs4wire::{NfsArgop4 as A, NfsOpnum4 as Op, *};

/// A truncate by another client recalls the layout with CB_LAYOUTRECALL carrying the next
/// seqid. A holder that returns it lets the truncate go on at once; one that ignores it is
/// fenced a lease later: its writes to the DS are refused, while a new layout's are taken.
#[test]
fn a_truncate_recalls_layouts_and_fences_a_holder_that_keeps_one() {
    let cl = Cluster::new("rw,insecure,pnfs", 1, &["--lease-time", "5"]);
    let port = cl.mds.server.port;
    let (mut a, root) = with_back_channel(&cl, 2, "holder");
    let mut b = V4::session(port, 2, "truncater");
    let truncate = |b: &mut V4, fh: &[u8], sid: &Stateid4| {
        let s = Sattr {
            size: Some(0),
            ..Sattr::default()
        };
        b.call(Ops::new().putfh(fh).setattr(sid, &s))
    };
    let open_b = |b: &mut V4, name: &str| {
        b.open_ok(
            &root,
            name,
            "b",
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            OpenHow::NoCreate,
        )
    };

    // a holder that returns the layout
    let (fh, asid) = create(&mut a, &root, "returned");
    let r = a
        .call(
            Ops::new()
                .putfh(&fh)
                .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &asid)),
        )
        .ok("LAYOUTGET");
    let lsid = r.get(Op::OP_LAYOUTGET).layoutget().logr_stateid.clone();
    let (bfh, bsid) = open_b(&mut b, "returned");
    let r = truncate(&mut b, &bfh, &bsid);
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
    let (xid, recall) = next_layoutrecall(&mut a);
    assert_eq!(recall.clora_type, Layouttype4::LAYOUT4_FLEX_FILES);
    assert!(recall.clora_changed);
    let Layoutrecall4::Layoutrecall4File(f) = &recall.clora_recall else {
        panic!("not a FILE recall: {recall:?}");
    };
    assert_eq!(f.lor_fh, fh);
    assert_eq!((f.lor_offset, f.lor_length), (0, u64::MAX));
    assert_eq!(f.lor_stateid.other, lsid.other);
    assert_eq!(
        f.lor_stateid.seqid,
        lsid.seqid + 1,
        "the recall carries the next seqid"
    );
    // while recalled, no new layout for the holder
    let r = a.call(
        Ops::new()
            .putfh(&fh)
            .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &asid)),
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_RECALLCONFLICT,
        "{}",
        r.summary()
    );
    answer_layoutrecall(&mut a, xid);
    a.call(Ops::new().putfh(&fh).op(layoutreturn_file(&f.lor_stateid)))
        .ok("LAYOUTRETURN");
    truncate(&mut b, &bfh, &bsid).ok("SETATTR after the return");

    // a holder that keeps it
    let (fh, asid) = create(&mut a, &root, "kept");
    let lg = layoutget_ok(&mut a, &fh, Layoutiomode4::Layoutiomode4Rw, &asid);
    let (dport, dsfh, uid, gid) = ds_target(&mut a, &lg);
    assert_eq!(
        ds_write(dport, &dsfh, uid, gid, b"before"),
        nfs3wire::Nfsstat3::NFS3_OK
    );
    let (bfh, bsid) = open_b(&mut b, "kept");
    let t0 = Instant::now();
    let r = truncate(&mut b, &bfh, &bsid);
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
    // the holder answers the recall, and keeps the layout all the same
    let (xid, _) = next_layoutrecall(&mut a);
    answer_layoutrecall(&mut a, xid);
    loop {
        let r = truncate(&mut b, &bfh, &bsid);
        if r.status == Nfsstat4::NFS4_OK {
            break;
        }
        assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "still DELAY after 20 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        t0.elapsed() >= Duration::from_secs(4),
        "fenced before a lease passed"
    );
    // the fenced holder's writes are refused; a new layout has other ids, whose are taken
    assert_eq!(
        ds_write(dport, &dsfh, uid, gid, b"after"),
        nfs3wire::Nfsstat3::NFS3ERR_ACCES
    );
    let lg2 = layoutget_ok(&mut b, &bfh, Layoutiomode4::Layoutiomode4Rw, &bsid);
    let (dport2, dsfh2, uid2, gid2) = ds_target(&mut b, &lg2);
    assert_eq!((dport2, &dsfh2), (dport, &dsfh));
    assert_ne!((uid2, gid2), (uid, gid));
    assert_eq!(
        ds_write(dport, &dsfh, uid2, gid2, b"new"),
        nfs3wire::Nfsstat3::NFS3_OK
    );
    let text = http_get(cl.mds.server.metrics.unwrap(), "/metrics");
    assert_eq!(metric(&text, "rnfs_pnfs_recalls_total"), Some(2));
    assert_eq!(metric(&text, "rnfs_pnfs_fences_total"), Some(1));
    // the fenced layout is gone
    let r = a.call(
        Ops::new()
            .putfh(&fh)
            .op(layoutreturn_file(&lg.logr_stateid)),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BAD_STATEID, "{}", r.summary());

    // an NFSv3 client's truncation recalls too: JUKEBOX until the layout is back
    let (fh, asid) = create(&mut a, &root, "v3");
    let r = a
        .call(
            Ops::new()
                .putfh(&fh)
                .op(layoutget(Layoutiomode4::Layoutiomode4Rw, &asid)),
        )
        .ok("LAYOUTGET");
    let lsid = r.get(Op::OP_LAYOUTGET).layoutget().logr_stateid.clone();
    let mut v3 = RpcClient::connect(port);
    let v3root = v3.mnt_ok(&cl.mds.export);
    let v3fh = v3.lookup_ok(&v3root, "v3");
    let size0 = nfs3wire::Sattr3 {
        size: nfs3wire::SetSize3(Some(0)),
        ..sattr3()
    };
    match v3.setattr(&v3fh, size0.clone()) {
        nfs3wire::Setattr3res::Fail(s, _) => assert_eq!(s, nfs3wire::Nfsstat3::NFS3ERR_JUKEBOX),
        r => panic!("a v3 truncation went on with a layout out: {r:?}"),
    }
    let (xid, recall) = next_layoutrecall(&mut a);
    let Layoutrecall4::Layoutrecall4File(f) = &recall.clora_recall else {
        panic!("not a FILE recall: {recall:?}");
    };
    assert_eq!(f.lor_stateid.other, lsid.other);
    answer_layoutrecall(&mut a, xid);
    a.call(Ops::new().putfh(&fh).op(layoutreturn_file(&f.lor_stateid)))
        .ok("LAYOUTRETURN");
    match v3.setattr(&v3fh, size0) {
        nfs3wire::Setattr3res::Ok(_) => {}
        r => panic!("v3 truncation after the return: {r:?}"),
    }
}

/// LAYOUTCOMMIT after a truncation does not grow the file back (the size is bounded by the
/// copies), and one that follows an explicit time change without new data leaves the time.
/// PUTFH and a LAYOUTCOMMIT (no reclaim, no time) of what was written up to `last` under
/// layout `sid`.
fn layoutcommit(fh: &[u8], sid: &Stateid4, last: u64) -> Ops {
    Ops::new()
        .putfh(fh)
        .op(A::OpLayoutcommit(Layoutcommit4args {
            loca_offset: 0,
            loca_length: u64::MAX,
            loca_reclaim: false,
            loca_stateid: sid.clone(),
            loca_last_write_offset: Newoffset4::True(last),
            loca_time_modify: Newtime4::False,
            loca_layoutupdate: Layoutupdate4 {
                lou_type: Layouttype4::LAYOUT4_FLEX_FILES,
                lou_body: Bytes::new(),
            },
        }))
}

#[test]
fn layoutcommit_is_bounded_by_the_copies_and_keeps_set_times() {
    let cl = Cluster::new("rw,insecure,pnfs", 1, &[]);
    let mut c = V4::session(cl.mds.server.port, 2, "committer");
    let root = c.path_fh(&cl.mds.export);
    let (fh, sid) = create(&mut c, &root, "t");
    let lg = layoutget_ok(&mut c, &fh, Layoutiomode4::Layoutiomode4Rw, &sid);
    let (port, dsfh, uid, gid) = ds_target(&mut c, &lg);
    assert_eq!(
        ds_write(port, &dsfh, uid, gid, &pattern(1, 300_000)),
        nfs3wire::Nfsstat3::NFS3_OK
    );
    let commit = |c: &mut V4, last: u64| {
        c.call(layoutcommit(&fh, &lg.logr_stateid, last))
            .ok("LAYOUTCOMMIT")
            .get(Op::OP_LAYOUTCOMMIT)
            .layoutcommit()
            .locr_newsize
            .clone()
    };
    assert_eq!(commit(&mut c, 299_999), Newsize4::True(300_000));
    let local = cl.mds.export.join("t");
    // truncated by its own client (no recall), then a commit of the writes before
    let s = Sattr {
        size: Some(1000),
        ..Sattr::default()
    };
    c.call(Ops::new().putfh(&fh).setattr(&sid, &s))
        .ok("SETATTR size");
    assert_eq!(commit(&mut c, 299_999), Newsize4::False);
    assert_eq!(std::fs::metadata(&local).unwrap().len(), 1000);
    // a time set after the data was written stays through a commit without new data
    let s = Sattr {
        mtime: Some(Settime4::SetToClientTime4(Nfstime4 {
            seconds: 1_000_000_000,
            nseconds: 0,
        })),
        ..Sattr::default()
    };
    c.call(Ops::new().putfh(&fh).setattr(&sid, &s))
        .ok("SETATTR mtime");
    commit(&mut c, 999);
    assert_eq!(std::fs::metadata(&local).unwrap().mtime(), 1_000_000_000);
    // new data moves it
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(
        ds_write(port, &dsfh, uid, gid, b"more"),
        nfs3wire::Nfsstat3::NFS3_OK
    );
    commit(&mut c, 999);
    assert!(std::fs::metadata(&local).unwrap().mtime() > 1_000_000_000);
}

/// After a restart (as after a takeover) the Linux client resends its LAYOUTCOMMIT with the
/// layout of the instance before, having reclaimed its open: what it wrote to the data servers
/// under that layout is committed (bounded by the copies). A client that holds no open of the
/// file gets NFS4ERR_BADLAYOUT (knfsd's answer to a layout it does not know).
#[test]
fn a_layoutcommit_resent_after_a_restart_commits_the_old_layouts_writes() {
    let mut cl = Cluster::new("rw,insecure,pnfs", 1, &[]);
    let mut c = V4::session(cl.mds.server.port, 2, "committer");
    let root = c.path_fh(&cl.mds.export);
    let (fh, sid) = create(&mut c, &root, "t");
    let lg = layoutget_ok(&mut c, &fh, Layoutiomode4::Layoutiomode4Rw, &sid);
    let (port, dsfh, uid, gid) = ds_target(&mut c, &lg);
    assert_eq!(
        ds_write(port, &dsfh, uid, gid, &pattern(2, 200_000)),
        nfs3wire::Nfsstat3::NFS3_OK
    );
    cl.mds.server.restart();
    let commit = |c: &mut V4| c.call(layoutcommit(&fh, &lg.logr_stateid, 199_999));
    // another client, no open of the file: nothing to commit
    let mut other = V4::connect(cl.mds.server.port, 2, "bystander");
    other.establish_with(8, false);
    let r = commit(&mut other);
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BADLAYOUT, "{}", r.summary());
    // the writer reclaims its open, finishes reclaiming, and its commit is taken
    let mut c = V4::connect(cl.mds.server.port, 2, "committer");
    c.establish_with(8, false);
    c.reclaim_open(
        &fh,
        b"owner",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
    )
    .ok("OPEN CLAIM_PREVIOUS");
    c.call(Ops::new().reclaim_complete(false))
        .ok("RECLAIM_COMPLETE");
    let r = commit(&mut c).ok("LAYOUTCOMMIT with the layout from before the restart");
    assert_eq!(
        r.get(Op::OP_LAYOUTCOMMIT).layoutcommit().locr_newsize,
        Newsize4::True(200_000)
    );
    assert_eq!(
        std::fs::metadata(cl.mds.export.join("t")).unwrap().len(),
        200_000
    );
}

/// A copy that missed writes (its DS was down) is left out until its DS answers again, then
/// resynchronised from the other; a copy a client reports a write error for is left out
/// likewise, and repaired once no read-write layout is out.
#[test]
fn stale_copies_are_resynchronised() {
    let mut cl = Cluster::new("rw,insecure,pnfs", 2, &[]);
    let mut c = V4::session(cl.mds.server.port, 2, "resync");
    let root = c.path_fh(&cl.mds.export);
    let (fh, sid) = create(&mut c, &root, "m");
    let data = pattern(5, 2_500_000);
    c.write_all(&fh, &sid, 0, &data);
    let copy = |cl: &Cluster, i: usize| std::fs::read(&cl.ds_files(i)[0]).unwrap();

    // DS 0 down while the file changes: its copy is stale
    let port0 = cl.dss[0].server.port;
    cl.dss[0].server.stop();
    c.write_all(&fh, &sid, 100_000, b"written while DS 0 was down");
    let s = Sattr {
        size: Some(2_000_000),
        ..Sattr::default()
    };
    c.call(Ops::new().putfh(&fh).setattr(&sid, &s))
        .ok("SETATTR size");
    assert_eq!(mirror_count(&mut c, &fh, &sid), 1);
    assert_ne!(copy(&cl, 0), copy(&cl, 1));
    // back on its port: repaired
    let mut cfg = cl.dss[0].server.cfg.clone();
    cfg.port = Some(port0);
    cl.dss[0].server.start_again(cfg);
    eventually("the copy resynchronised", || {
        mirror_count(&mut c, &fh, &sid) == 2
    });
    assert_eq!(copy(&cl, 0), copy(&cl, 1));
    assert_eq!(copy(&cl, 1).len(), 2_000_000);
    assert_eq!(
        &copy(&cl, 1)[100_000..100_027],
        b"written while DS 0 was down"
    );

    // a client's write error for DS 1, reported while it holds a RW layout
    let lg = layoutget_ok(&mut c, &fh, Layoutiomode4::Layoutiomode4Rw, &sid);
    let ff = ff_layout_of(&lg);
    let dev1 = ff.ffl_mirrors[1].ffm_data_servers[0].ffds_deviceid;
    let error = A::OpLayouterror(Layouterror4args {
        lea_offset: 0,
        lea_length: u64::MAX,
        lea_stateid: lg.logr_stateid.clone(),
        lea_errors: vec![DeviceError4 {
            de_deviceid: dev1,
            de_status: Nfsstat4::NFS4ERR_NXIO,
            de_opnum: Op::OP_WRITE,
        }],
    });
    c.call(Ops::new().putfh(&fh).op(error)).ok("LAYOUTERROR");
    // while the layout is out the copy stays stale (a new layout has one mirror)
    std::thread::sleep(Duration::from_secs(3));
    let lg = layoutget_ok(&mut c, &fh, Layoutiomode4::Layoutiomode4Rw, &sid);
    let ff = ff_layout_of(&lg);
    assert_eq!(ff.ffl_mirrors.len(), 1);
    assert_ne!(ff.ffl_mirrors[0].ffm_data_servers[0].ffds_deviceid, dev1);
    c.call(
        Ops::new()
            .putfh(&fh)
            .op(layoutreturn_file(&lg.logr_stateid)),
    )
    .ok("LAYOUTRETURN");
    eventually("repaired after the layout came back", || {
        mirror_count(&mut c, &fh, &sid) == 2
    });
    assert_eq!(copy(&cl, 0), copy(&cl, 1));

    // the metrics tell it all
    let text = http_get(cl.mds.server.metrics.unwrap(), "/metrics");
    let m = |name: &str| metric(&text, name).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(m("rnfs_pnfs_files"), 1);
    assert_eq!(m("rnfs_pnfs_stale_files"), 0);
    assert_eq!(m("rnfs_pnfs_stale_copies_total"), 2);
    assert_eq!(m("rnfs_pnfs_resyncs_total"), 2);
    // two repairs of the 2,000,000-byte file, each writing all of it
    assert_eq!(m("rnfs_pnfs_resync_bytes_total"), 4_000_000);
    assert_eq!(m("rnfs_pnfs_client_errors_total"), 1);
    assert!(m(r#"rnfs_pnfs_ds_written_bytes_total{ds="ds0"}"#) >= 2_500_000);
    assert!(
        m(r#"rnfs_pnfs_ds_errors_total{ds="ds0"}"#) >= 1,
        "DS 0 was down"
    );
    assert_eq!(m(r#"rnfs_pnfs_ds_connected{ds="ds1"}"#), 1);
}

/// Past --pnfs-max-layouts layout stateids, the holders are asked to return the layouts they
/// need least (CB_RECALL_ANY with the flexible files READ and RW bits), each keeping its
/// share of half the bound; within it, nothing is asked.
#[test]
fn layouts_past_the_bound_are_recalled_with_recall_any() {
    let cl = Cluster::new("rw,insecure,pnfs", 1, &["--pnfs-max-layouts", "4"]);
    let (mut a, root) = with_back_channel(&cl, 1, "recall-any");
    let mut held = Vec::new();
    for i in 0..5 {
        let (fh, sid) = create(&mut a, &root, &format!("f{i}"));
        let lg = layoutget_ok(&mut a, &fh, Layoutiomode4::Layoutiomode4Rw, &sid);
        if i < 4 {
            assert!(
                !a.rpc.callback_within(Duration::from_millis(200)),
                "a callback with {} layouts out, 4 allowed",
                i + 1
            );
        }
        held.push((fh, lg.logr_stateid));
    }
    let (xid, op) = next_cb_op(&mut a);
    let NfsCbArgop4::OpCbRecallAny(args) = op else {
        panic!("not CB_RECALL_ANY: {op:?}");
    };
    // its 5 of 5 layouts: keep its share of half the bound
    assert_eq!(args.craa_objects_to_keep, 2);
    assert_eq!(
        args.craa_type_mask,
        vec![(1 << RCA4_TYPE_MASK_FF_LAYOUT_MIN) | (1 << RCA4_TYPE_MASK_FF_LAYOUT_MAX)]
    );
    a.answer_callback(
        xid,
        NfsCbResop4::OpCbRecallAny(CbRecallAny4res {
            crar_status: Nfsstat4::NFS4_OK,
        }),
    );
    // the client returns three
    for (fh, sid) in held.drain(..3) {
        a.call(Ops::new().putfh(&fh).op(layoutreturn_file(&sid)))
            .ok("LAYOUTRETURN");
    }
    let text = http_get(cl.mds.server.metrics.unwrap(), "/metrics");
    assert_eq!(metric(&text, "rnfs_pnfs_recall_any_total"), Some(1));
    assert_eq!(
        metric(&text, "rnfs_nfs4_state{kind=\"layout_stateids\"}"),
        Some(2)
    );
}

/// `rnfsctl pnfs-drain`: a data server taken out of service gets no new file, and each copy
/// it holds is placed on another data server, filled from it, its layouts recalled, then
/// dropped and deleted; the data reads back the same; the drain outlives a restart; the
/// last data server in service and an unknown one are refused.
#[test]
fn a_drained_data_server_gives_its_copies_to_the_others() {
    let mut cl = Cluster::new("rw,insecure,pnfs", 1, &[]);
    let port = cl.mds.server.port;
    let (mut c, root) = with_back_channel(&cl, 1, "drain");
    // round-robin: f0 on ds0, f1 on ds1
    let data = pattern(11, 1_300_000);
    let mut files = Vec::new();
    for name in ["f0", "f1"] {
        let (fh, sid) = create(&mut c, &root, name);
        c.write_all(&fh, &sid, 0, &data);
        files.push((fh, sid));
    }
    assert_eq!((cl.ds_files(0).len(), cl.ds_files(1).len()), (1, 1));
    let (fh0, sid0) = files[0].clone();
    // a layout of f0 names ds0
    let lg = layoutget_ok(&mut c, &fh0, Layoutiomode4::Layoutiomode4Read, &sid0);
    assert_eq!(lg.logr_stateid.seqid, 1);
    let dev0 = ff_layout_of(&lg).ffl_mirrors[0].ffm_data_servers[0].ffds_deviceid;

    match cl
        .mds
        .server
        .admin(admin::Request::PnfsDrain { ds: "ds0".into() })
    {
        admin::Response::Draining { draining } => {
            assert_eq!(draining, vec![("ds0".to_string(), 1)])
        }
        r => panic!("pnfs-drain: {r:?}"),
    }
    // once f0 has its copy on ds1, its layout is recalled; returned, the copy on ds0 goes
    let (xid, recall) = next_layoutrecall(&mut c);
    let recalled = match recall.clora_recall {
        Layoutrecall4::Layoutrecall4File(f) => {
            assert_eq!(&f.lor_fh[..], &fh0[..]);
            f.lor_stateid
        }
        r => panic!("recall of {r:?}"),
    };
    answer_layoutrecall(&mut c, xid);
    c.call(Ops::new().putfh(&fh0).op(layoutreturn_file(&recalled)))
        .ok("LAYOUTRETURN");
    let metrics = |cl: &Cluster| http_get(cl.mds.server.metrics.unwrap(), "/metrics");
    eventually("ds0 emptied", || {
        metric(&metrics(&cl), r#"rnfs_pnfs_ds_copies{ds="ds0"}"#) == Some(0)
    });
    // the row drops the copy first, then the copy is removed from ds0 (drain.rs: a crash in
    // between leaves an orphan for the reconciler, never a row naming a missing copy)
    eventually("ds0's copy removed", || cl.ds_files(0).is_empty());
    assert_eq!(cl.ds_files(1).len(), 2);
    for f in cl.ds_files(1) {
        assert_eq!(std::fs::read(f).unwrap(), data);
    }
    assert_eq!(v3_read_all(port, &cl.mds.export, "f0"), data);
    let lg = layoutget_ok(&mut c, &fh0, Layoutiomode4::Layoutiomode4Read, &sid0);
    let ff = ff_layout_of(&lg);
    assert_eq!(ff.ffl_mirrors.len(), 1);
    assert_ne!(ff.ffl_mirrors[0].ffm_data_servers[0].ffds_deviceid, dev0);
    // new files go to ds1 only
    for name in ["g0", "g1"] {
        let (fh, sid) = create(&mut c, &root, name);
        c.write_all(&fh, &sid, 0, b"new");
    }
    assert!(cl.ds_files(0).is_empty());
    assert_eq!(cl.ds_files(1).len(), 4);
    let m = metrics(&cl);
    assert_eq!(metric(&m, r#"rnfs_pnfs_ds_copies{ds="ds1"}"#), Some(4));
    assert_eq!(metric(&m, r#"rnfs_pnfs_ds_draining{ds="ds0"}"#), Some(1));
    assert_eq!(metric(&m, r#"rnfs_pnfs_ds_draining{ds="ds1"}"#), Some(0));

    // refused: the last one in service, and one not configured
    for ds in ["ds1", "nope"] {
        match cl
            .mds
            .server
            .admin(admin::Request::PnfsDrain { ds: ds.into() })
        {
            admin::Response::Error { message } => assert!(message.contains(ds), "{message}"),
            r => panic!("pnfs-drain {ds}: {r:?}"),
        }
    }
    // a restart remembers the drain
    drop(c);
    cl.mds.server.restart();
    assert_eq!(
        metric(&metrics(&cl), r#"rnfs_pnfs_ds_draining{ds="ds0"}"#),
        Some(1)
    );
}
