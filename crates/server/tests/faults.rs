//! Storage faults under rnfsd, through the LD_PRELOAD fault layer (common/fault.rs): a write or
//! a flush the file system fails reaches the client as its error (NFS3ERR_IO, NOSPC, DQUOT;
//! NFS4ERR_NOSPC), and changes the write verifier, so a client that wrote UNSTABLE and then
//! COMMITs sees a new verifier and sends its writes again: a writeback error is reported once,
//! and the data it lost must not be acknowledged as stable afterwards (knfsd's
//! `commit_reset_write_verifier`). Other files go on being written meanwhile.

mod common;

use bytes::Bytes;
use common::fault::FaultLayer;
use common::nfs4_raw::*;
use common::pnfs::create;
use common::*;
use nfs3wire::*;
use nfs4wire::*;

#[test]
fn a_failed_flush_is_reported_and_changes_the_write_verifier() {
    let faults = FaultLayer::build();
    let fx = Fixture::with_env(&faults.env());
    let (mut c, root) = fx.connect();
    let victim = c.create_ok(&root, "victim", 0o644);
    let other = c.create_ok(&root, "other", 0o644);

    let data = Bytes::from(vec![7u8; 8192]);
    let v1 = c
        .write(&victim, 0, data.clone(), StableHow::Unstable)
        .expect_ok("WRITE UNSTABLE")
        .verf;
    assert_eq!(c.commit(&victim).expect_ok("COMMIT").verf, v1);

    // the next unstable write's writeback fails: COMMIT says so...
    c.write(&victim, 8192, data.clone(), StableHow::Unstable)
        .expect_ok("WRITE UNSTABLE before the fault");
    faults.set("fdatasync", libc::EIO, "victim");
    let r = c.commit(&victim);
    assert_eq!(r.status(), Nfsstat3::NFS3ERR_IO, "{r:?}");
    // ...another file is written and flushed meanwhile...
    c.write(&other, 0, data.clone(), StableHow::FileSync)
        .expect_ok("WRITE FILE_SYNC of another file");
    faults.clear();
    // ...and once the device works again, COMMIT succeeds with a new verifier, so the client
    // resends what it wrote UNSTABLE instead of taking it as stable
    let v2 = c.commit(&victim).expect_ok("COMMIT after the fault").verf;
    assert_ne!(v2, v1, "the verifier did not change after a failed flush");
    // a later write and COMMIT keep the new one
    let w = c
        .write(&victim, 0, data.clone(), StableHow::Unstable)
        .expect_ok("WRITE after");
    assert_eq!(w.verf, v2);
    assert_eq!(c.commit(&victim).expect_ok("COMMIT").verf, v2);
}

#[test]
fn write_errors_reach_the_client_as_theirs_and_change_the_verifier() {
    let faults = FaultLayer::build();
    let fx = Fixture::with_env(&faults.env());
    let (mut c, root) = fx.connect();
    let victim = c.create_ok(&root, "victim", 0o644);
    let data = Bytes::from(vec![1u8; 4096]);
    let mut verf = c
        .write(&victim, 0, data.clone(), StableHow::Unstable)
        .expect_ok("WRITE")
        .verf;
    for (errno, status) in [
        (libc::ENOSPC, Nfsstat3::NFS3ERR_NOSPC),
        (libc::EDQUOT, Nfsstat3::NFS3ERR_DQUOT),
        (libc::EIO, Nfsstat3::NFS3ERR_IO),
    ] {
        for stable in [StableHow::Unstable, StableHow::FileSync] {
            faults.set("pwrite", errno, "victim");
            let r = c.write(&victim, 4096, data.clone(), stable);
            assert_eq!(r.status(), status, "errno {errno}, {stable:?}: {r:?}");
            faults.clear();
            let now = c
                .write(&victim, 4096, data.clone(), stable)
                .expect_ok("WRITE after the fault")
                .verf;
            assert_ne!(now, verf, "errno {errno}: the verifier did not change");
            verf = now;
        }
    }

    // NFSv4: the same errors, as NFS4ERR_NOSPC
    let mut a = V4::session(fx.server.port, 1, "faults-v4");
    let dir = a.path_fh(&fx.export);
    let (fh, sid) = create(&mut a, &dir, "victim4");
    faults.set("pwrite", libc::ENOSPC, "victim4");
    let r = a.call(
        Ops::new()
            .putfh(&fh)
            .write(&sid, 0, StableHow4::Unstable4, b"data"),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_NOSPC, "{}", r.summary());
    faults.clear();
    a.call(
        Ops::new()
            .putfh(&fh)
            .write(&sid, 0, StableHow4::Unstable4, b"data"),
    )
    .ok("WRITE after the fault");
}

#[test]
fn size_changes_allocations_and_copies_report_the_storage_error() {
    let faults = FaultLayer::build();
    let fx = Fixture::with_env(&faults.env());
    let (mut c, root) = fx.connect();
    let victim = c.create_ok(&root, "victim", 0o644);
    for (errno, status) in [
        (libc::EIO, Nfsstat3::NFS3ERR_IO),
        (libc::ENOSPC, Nfsstat3::NFS3ERR_NOSPC),
        (libc::EDQUOT, Nfsstat3::NFS3ERR_DQUOT),
    ] {
        faults.set("ftruncate", errno, "victim");
        let r = c.setattr(
            &victim,
            Sattr3 {
                size: SetSize3(Some(1 << 20)),
                ..sattr3()
            },
        );
        assert_eq!(r.status(), status, "SETATTR size, errno {errno}: {r:?}");
    }
    faults.clear();
    c.setattr(
        &victim,
        Sattr3 {
            size: SetSize3(Some(1 << 20)),
            ..sattr3()
        },
    )
    .expect_ok("SETATTR size after the fault");

    // NFSv4.2: ALLOCATE and COPY (to the victim), and SETATTR of the size
    let mut a = V4::session(fx.server.port, 2, "faults-v42");
    let dir = a.path_fh(&fx.export);
    let (src, src_sid) = create(&mut a, &dir, "source");
    a.write_all(&src, &src_sid, 0, &[5u8; 65536]);
    let (dst, dst_sid) = create(&mut a, &dir, "victim4");
    faults.set("fallocate", libc::ENOSPC, "victim4");
    let r = a.call(Ops::new().putfh(&dst).allocate(&dst_sid, 0, 1 << 20));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_NOSPC,
        "ALLOCATE: {}",
        r.summary()
    );
    faults.set("copy", libc::EDQUOT, "victim4");
    let r = a.call(
        Ops::new()
            .putfh(&src)
            .savefh()
            .putfh(&dst)
            .copy(&src_sid, &dst_sid, 0, 0, 65536),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DQUOT, "COPY: {}", r.summary());
    faults.set("ftruncate", libc::EIO, "victim4");
    let r = a.call(Ops::new().putfh(&dst).setattr(
        &dst_sid,
        &Sattr {
            size: Some(4096),
            ..Default::default()
        },
    ));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_IO,
        "SETATTR size: {}",
        r.summary()
    );
    faults.clear();
    a.call(Ops::new().putfh(&dst).allocate(&dst_sid, 0, 1 << 20))
        .ok("ALLOCATE after the fault");
    a.call(
        Ops::new()
            .putfh(&src)
            .savefh()
            .putfh(&dst)
            .copy(&src_sid, &dst_sid, 0, 0, 65536),
    )
    .ok("COPY after the fault");
}

/// A device that stalls holds at most its export's share of the call threads
/// (`--export-threads`, by default `--threads` less an eighth): while every call to the stalled
/// export waits for it, another export's calls are answered at once; the stalled ones all
/// complete, none refused, once the device answers.
#[test]
fn a_stalled_export_leaves_threads_to_the_other_exports() {
    let faults = FaultLayer::build();
    let tmp = tempfile::tempdir().unwrap();
    let slow = mkdir_mode(&tmp.path().join("slow"), 0o777);
    let fast = mkdir_mode(&tmp.path().join("fast"), 0o777);
    let server = Server::start(ServerConfig {
        state_dir: tmp.path().join("state"),
        exports: vec![slow.clone(), fast.clone()],
        args: vec!["--threads".into(), "4".into()],
        env: faults.env(),
        metrics: true,
        ..Default::default()
    });
    assert!(
        server.log_text().contains("threads=4 export_threads=3"),
        "{}",
        server.log_text()
    );
    let mut c = RpcClient::connect(server.port);
    let (sroot, froot) = (c.mnt_ok(&slow), c.mnt_ok(&fast));
    let sf = c.create_ok(&sroot, "f", 0o644);
    let ff = c.create_ok(&froot, "f", 0o644);
    let data = Bytes::from(vec![5u8; 4096]);

    // every write to the slow export's files waits 2 s for its device
    faults.stall("pwrite", 2000, "/slow/");
    let mut s = RpcClient::connect(server.port);
    let n = 8u64;
    for i in 0..n {
        let args = write_args(&sf, i * 4096, data.clone(), StableHow::FileSync);
        s.send_call(NFS3_PROGRAM, NFS_V3, NFSPROC3_WRITE, &args);
    }
    // (they reach the server, three take their export's threads, the rest wait)
    std::thread::sleep(std::time::Duration::from_millis(300));
    let t0 = std::time::Instant::now();
    c.write(&ff, 0, data.clone(), StableHow::FileSync)
        .expect_ok("WRITE to the other export");
    let took = t0.elapsed();
    assert!(
        took < std::time::Duration::from_millis(1000),
        "the other export's WRITE waited {took:?} behind the stalled one"
    );
    s.set_read_timeout(std::time::Duration::from_secs(30));
    for _ in 0..n {
        match s.recv_reply().1 {
            RpcReply::Success(b) => match decode_all::<Write3res>(b) {
                Write3res::Ok(ok) => assert_eq!(ok.count, 4096),
                other => panic!("a stalled WRITE: {other:?}"),
            },
            other => panic!("a stalled WRITE: {other:?}"),
        }
    }
    faults.clear();
    assert_eq!(std::fs::metadata(slow.join("f")).unwrap().len(), n * 4096);
    // the ones that waited without a thread are counted
    let m = http_get(server.metrics.unwrap(), "/metrics");
    let waited = metric(&m, "rnfs_rpc_events_total{kind=\"export_wait\"}").unwrap_or(0);
    assert!(waited >= n - 3, "{waited} calls waited for their export");
}
