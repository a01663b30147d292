//! Nothing a call carries outlives its reply. Over RDMA a call with a Read chunk is rebuilt in
//! a registered bulk buffer and a WRITE payload is a slice of it; READ payloads go out of
//! registered buffers too. Anything the server keeps (NFSv4 owners and session credentials,
//! descriptor-cache keys, the mount list, a session's reply cache) must be a copy, or one
//! client could hold the transport's pool for ever. The programs run in this process behind
//! [`common::loopback`], which fails the call that leaves a buffer referenced.

mod common;

use common::loopback::LocalServer;
use common::nfs4_raw::*;
use common::*;
use nfs3wire::*;
use nfs4wire::*;

fn server() -> (tempfile::TempDir, std::path::PathBuf, LocalServer) {
    let tmp = tempfile::tempdir().unwrap();
    let export = mkdir_mode(&tmp.path().join("export"), 0o777);
    let state = tmp.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let srv = LocalServer::new(&export, &state);
    (tmp, export, srv)
}

#[test]
fn nfsv3_and_mount_keep_no_call_buffer() {
    let (tmp, export, srv) = server();
    let mut c = RpcClient::loopback(&srv);
    let root = c.mnt_ok(&export);
    let fh = c.create_ok(&root, "f", 0o644);
    let data = bytes::Bytes::from(vec![7u8; 100_000]);
    assert!(matches!(
        c.write(&fh, 0, data.clone(), StableHow::FileSync),
        Write3res::Ok(_)
    ));
    match c.read(&fh, 0, 100_000) {
        Read3res::Ok(r) => assert_eq!(r.data.in_memory(), Some(&data)),
        other => panic!("READ: {other:?}"),
    }
    assert!(srv.bulk_handed() > 0, "READ did not use transport buffers");
    // again, now that the handle is in the descriptor caches
    match c.read(&fh, 4096, 10) {
        Read3res::Ok(r) => assert_eq!(&r.data.in_memory().expect("decoded")[..], &[7u8; 10]),
        other => panic!("READ: {other:?}"),
    }
    assert!(matches!(c.commit(&fh), Commit3res::Ok(_)));
    assert!(matches!(c.mkdir(&root, "d", 0o755), Mkdir3res::Ok(_)));
    assert!(matches!(c.symlink(&root, "l", "f"), Symlink3res::Ok(_)));
    assert!(matches!(
        c.readdirplus(&root, 0, [0; 8], 4096, 65536),
        Readdirplus3res::Ok(_)
    ));
    // A server that has not seen these handles yet (as after a restart): each call's handle
    // misses the descriptor caches and is resolved, then cached.
    // (as root: serving calls left this thread with the caller's credentials)
    let again = vfs::cred::as_root(|| LocalServer::new(&export, &tmp.path().join("state")));
    let mut c2 = RpcClient::loopback(&again);
    match c2.read(&fh, 0, 10) {
        Read3res::Ok(r) => assert_eq!(&r.data.in_memory().expect("decoded")[..], &[7u8; 10]),
        other => panic!("READ after restart: {other:?}"),
    }
    assert!(matches!(
        c2.write(&fh, 0, data.slice(..10), StableHow::Unstable),
        Write3res::Ok(_)
    ));
    assert!(matches!(
        c2.rename(&root, "f", &root, "g"),
        Rename3res::Ok(_)
    ));
    assert!(matches!(c2.remove(&root, "g"), Remove3res::Ok(_)));
}

#[test]
fn nfsv41_state_keeps_no_call_buffer() {
    let (_tmp, export, srv) = server();
    let mut c = V4::over(RpcClient::loopback(&srv), 1, "retention-41");
    c.establish(8);
    // A second client whose session keeps an AUTH_SYS callback credential.
    let mut b = V4::over(RpcClient::loopback(&srv), 1, "retention-41-cb");
    let (clientid, seqid) = b.exchange_id();
    let create = CreateSession4args {
        csa_clientid: clientid,
        csa_sequence: seqid,
        csa_flags: 0,
        csa_fore_chan_attrs: channel(1 << 20, 1 << 20, 65536, 16, 4),
        csa_back_chan_attrs: channel(4096, 4096, 0, 2, 1),
        csa_cb_program: CB_PROGRAM,
        csa_sec_parms: vec![CallbackSecParms4::AuthSys(AuthsysParms {
            stamp: 1,
            machinename: bytes::Bytes::from_static(b"client.example"),
            uid: 0,
            gid: 0,
            gids: vec![],
        })],
    };
    b.compound(Ops::new().op(NfsArgop4::OpCreateSession(create)))
        .ok("CREATE_SESSION with an AUTH_SYS callback credential");

    let dir = c.path_fh(&export);
    let (fh, open) = c.open_ok(
        &dir,
        "f",
        "open-owner",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    c.write_all(&fh, &open, 0, &[5u8; 70_000]);
    let locker = new_lock_owner(0, &open, 0, c.clientid, b"lock-owner");
    let r = c
        .call(
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::WriteLt, 0, 100, &locker),
        )
        .ok("LOCK");
    let lock = r.stateid(NfsOpnum4::OP_LOCK);
    c.call(
        Ops::new()
            .putfh(&fh)
            .locku(NfsLockType4::WriteLt, 0, &lock, 0, 100),
    )
    .ok("LOCKU");
    // A READ whose reply the slot caches (sa_cachethis): the cache must not keep the READ's
    // transport buffer.
    let handed = srv.bulk_handed();
    c.call_slot(1, 1, true, Ops::new().putfh(&fh).read(&open, 0, 4096))
        .ok("cached READ");
    assert!(
        srv.bulk_handed() > handed,
        "READ did not use transport buffers"
    );
    // its replay comes from the cache, byte for byte
    let again = c.call_slot(1, 1, true, Ops::new().putfh(&fh).read(&open, 0, 4096));
    assert_eq!(again.status, Nfsstat4::NFS4_OK);
    c.close_ok(&fh, &open);
    c.destroy();
}

#[test]
fn nfsv40_owners_keep_no_call_buffer() {
    let (_tmp, export, srv) = server();
    let mut c = V4::over(RpcClient::loopback(&srv), 0, "retention-40");
    c.establish_v40();
    let dir = c.path_fh(&export);
    let clientid = c.clientid;
    c.compound(
        Ops::new()
            .putfh(&dir)
            .open(
                0,
                OPEN4_SHARE_ACCESS_BOTH,
                OPEN4_SHARE_DENY_NONE,
                clientid,
                b"open-owner-40",
                &OpenHow::Unchecked(Sattr::mode(0o644)),
                &OpenClaim4::ClaimNull("f".into()),
            )
            .getfh(),
    )
    .ok("OPEN");
}
