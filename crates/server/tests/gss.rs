//! RPCSEC_GSS (Kerberos V5) end to end: a real KDC, rnfsd accepting contexts with its
//! keytab, and the tests' own GSS initiator making NFSv3, MOUNT and NFSv4.1 calls under krb5,
//! krb5i and krb5p, and every kind of bad input.

mod common;

use bytes::Bytes;
use common::kerberos::{realm, server_args};
use common::nfs4_raw::{OpenHow, Ops, Sattr, V4};
use common::*;
use nfs3wire::*;
use nfs4wire as w;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use sunrpc::gss::wire::{GssProc, GssService};

const ALL: [GssService; 3] = [GssService::None, GssService::Integrity, GssService::Privacy];

/// A server with a krb5-only export (`krb5`), a sys-only one (`sys`), and one that takes
/// either (`both`), all world-writable and root_squash.
struct Kfx {
    tmp: tempfile::TempDir,
    server: Server,
}

impl Kfx {
    fn new(extra: &[&str]) -> Kfx {
        realm();
        let tmp = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = ["krb5", "sys", "both"]
            .iter()
            .map(|n| mkdir_mode(&tmp.path().join(n), 0o777))
            .collect();
        let f = tmp.path().join("exports");
        write_exports(
            &f,
            &[
                (&dirs[0], "rw,insecure,sec=krb5:krb5i:krb5p"),
                (&dirs[1], "rw,insecure,sec=sys"),
                (&dirs[2], "rw,insecure,sec=krb5p:sys"),
            ],
        );
        let mut args = server_args();
        args.extend(extra.iter().map(|s| s.to_string()));
        let server = Server::start(ServerConfig {
            state_dir: tmp.path().join("state"),
            exports_file: Some(f),
            metrics: true,
            args,
            ..Default::default()
        });
        Kfx { tmp, server }
    }

    fn dir(&self, name: &str) -> PathBuf {
        std::fs::canonicalize(self.tmp.path().join(name)).unwrap()
    }

    fn client(&self, user: &str, svc: GssService) -> RpcClient {
        RpcClient::connect(self.server.port).with_gss(user, svc)
    }
}

fn fattr(r: Getattr3res) -> Fattr3 {
    match r {
        Getattr3res::Ok(ok) => ok.obj_attributes,
        other => panic!("GETATTR: {other:?}"),
    }
}

#[test]
fn nfsv3_and_mount_work_under_every_service_as_the_principals_user() {
    let fx = Kfx::new(&[]);
    let krb5 = fx.dir("krb5");
    for svc in ALL {
        let mut c = fx.client("daemon", svc);
        // MOUNT under the context: the export's flavors in exports order
        let res: Mountres3 = c.mount(
            MOUNTPROC_MNT,
            &Dirpath(Bytes::from(krb5.display().to_string())),
        );
        let Mountres3::Ok(ok) = res else {
            panic!("MNT under {svc:?}: {res:?}")
        };
        assert_eq!(ok.auth_flavors, vec![390003, 390004, 390005]);
        let root = NfsFh3 { data: ok.fhandle };
        let name = format!("f-{}", svc.krb5_name());
        let fh = c.create_ok(&root, &name, 0o644);
        // an odd size: the last READ reply pads its payload, which the signature covers
        let data: Vec<u8> = (0..200_001u32).map(|i| (i % 251) as u8).collect();
        match c.write(&fh, 0, Bytes::from(data.clone()), StableHow::FileSync) {
            Write3res::Ok(w) => assert_eq!(w.count as usize, data.len()),
            other => panic!("WRITE under {svc:?}: {other:?}"),
        }
        assert_eq!(c.read_all(&fh, 65536), data, "READ under {svc:?}");
        let a = fattr(c.getattr(&fh));
        assert_eq!(
            (a.uid, a.gid),
            (1, 1),
            "created as daemon (uid 1) under {svc:?}"
        );
        let md = std::fs::metadata(krb5.join(&name)).unwrap();
        assert_eq!((md.uid(), md.gid(), md.len()), (1, 1, data.len() as u64));
        // NULL under the context answers under its service too
        assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    }
}

#[test]
fn unmapped_principals_are_anonymous_and_root_is_squashed() {
    let fx = Kfx::new(&[]);
    let krb5 = fx.dir("krb5");
    for (user, want) in [("stranger", 65534), ("root", 65534), ("bin", 2)] {
        let mut c = fx.client(user, GssService::Integrity);
        let root = c.mnt_ok(&krb5);
        let fh = c.create_ok(&root, format!("by-{user}"), 0o644);
        assert_eq!(fattr(c.getattr(&fh)).uid, want, "{user}");
    }
}

#[test]
fn flavors_an_export_does_not_list_are_refused() {
    let fx = Kfx::new(&[]);
    // AUTH_SYS on the krb5-only export: MOUNT answers with its flavors, NFS refuses
    let mut sys = RpcClient::connect(fx.server.port);
    let root = match sys.mnt(fx.dir("krb5")) {
        Mountres3::Ok(ok) => {
            assert_eq!(ok.auth_flavors, vec![390003, 390004, 390005]);
            NfsFh3 { data: ok.fhandle }
        }
        other => panic!("MNT: {other:?}"),
    };
    assert!(matches!(
        sys.getattr(&root),
        Getattr3res::Fail(Nfsstat3::NFS3ERR_ACCES)
    ));
    // krb5 on the sys-only export, and krb5i where only krb5p (or sys) is allowed
    let mut k = fx.client("daemon", GssService::None);
    let sys_root = k.mnt_ok(fx.dir("sys"));
    assert!(matches!(
        k.getattr(&sys_root),
        Getattr3res::Fail(Nfsstat3::NFS3ERR_ACCES)
    ));
    let mut ki = fx.client("daemon", GssService::Integrity);
    let both = ki.mnt_ok(fx.dir("both"));
    assert!(matches!(
        ki.getattr(&both),
        Getattr3res::Fail(Nfsstat3::NFS3ERR_ACCES)
    ));
    let mut kp = fx.client("daemon", GssService::Privacy);
    fattr(kp.getattr(&both));
    let both_sys = sys.mnt_ok(fx.dir("both"));
    fattr(sys.getattr(&both_sys));
}

#[test]
fn nfsv41_sessions_run_under_every_service_and_secinfo_lists_krb5() {
    let fx = Kfx::new(&[]);
    let krb5 = fx.dir("krb5");
    for svc in ALL {
        let mut v4 = V4::over(
            fx.client("daemon", svc),
            1,
            &format!("gss-{}", svc.krb5_name()),
        );
        v4.establish(8);
        let fh = v4.path_fh(&krb5);
        let r = v4
            .call(
                Ops::new()
                    .putfh(&fh)
                    .secinfo_no_name(w::SecinfoStyle4::SecinfoStyle4CurrentFh),
            )
            .ok("SECINFO_NO_NAME");
        let flavors = r.last().secinfo_no_name().clone();
        let want: Vec<_> = [
            w::RpcGssSvcT::RpcGssSvcNone,
            w::RpcGssSvcT::RpcGssSvcIntegrity,
            w::RpcGssSvcT::RpcGssSvcPrivacy,
        ]
        .into_iter()
        .map(|service| {
            w::Secinfo4::RpcsecGss(w::RpcsecGssInfo {
                oid: Bytes::from_static(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02]),
                qop: 0,
                service,
            })
        })
        .collect();
        assert_eq!(flavors, want);
        let name = format!("v4-{}", svc.krb5_name());
        let (file, sid) = v4.open_ok(
            &fh,
            &name,
            "owner",
            w::OPEN4_SHARE_ACCESS_BOTH,
            w::OPEN4_SHARE_DENY_NONE,
            OpenHow::Unchecked(Sattr::mode(0o644)),
        );
        v4.write_all(&file, &sid, 0, b"sealed");
        v4.close_ok(&file, &sid);
        let md = std::fs::metadata(krb5.join(&name)).unwrap();
        assert_eq!((md.uid(), md.len()), (1, 6));
    }
    // rnfsctl clients: each client's flavor and principal, and the contexts by address
    match fx.server.admin(admin::Request::Clients) {
        admin::Response::Clients { nfs4, gss, .. } => {
            let c = nfs4
                .iter()
                .find(|c| c.owner == "gss-krb5p")
                .expect("listed");
            assert_eq!(c.auth, format!("krb5p daemon@{}", gss::kdc::REALM));
            let g = gss
                .iter()
                .find(|g| g.services == ["krb5i"])
                .expect("a context used with krb5i only");
            assert_eq!(g.address, "127.0.0.1");
            assert_eq!(g.principal, format!("daemon@{}", gss::kdc::REALM));
            assert_eq!(g.uid, Some(1));
            assert!(
                g.expires_secs > 3600,
                "the ticket's lifetime: {}",
                g.expires_secs
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_retransmission_with_a_new_sequence_number_is_answered_from_the_cache() {
    let fx = Kfx::new(&[]);
    let mut c = fx.client("daemon", GssService::Privacy);
    let root = c.mnt_ok(fx.dir("krb5"));
    c.create_ok(&root, "gone", 0o644);
    let args = Remove3args {
        object: Diropargs3 {
            dir: root.clone(),
            name: Bytes::from_static(b"gone"),
        },
    };
    let xid = c.next_xid();
    let first = c.send_gss(xid, NFS3_PROGRAM, NFS_V3, NFSPROC3_REMOVE, &args);
    let (_, a) = c.recv_gss(&first);
    // the same call again, as a client retransmits it: same xid, next sequence number
    let again = c.send_gss(xid, NFS3_PROGRAM, NFS_V3, NFSPROC3_REMOVE, &args);
    assert_ne!(first.seq, again.seq);
    let (_, b) = c.recv_gss(&again);
    assert_eq!(a, b, "the retransmission gets the first answer (not NOENT)");
    let RpcReply::Success(body) = b else {
        panic!("{b:?}")
    };
    let r: Remove3res = decode_all(body);
    assert!(matches!(r, Remove3res::Ok(_)), "{r:?}");
}

#[test]
fn bad_input_gets_rpc_errors_and_leaves_other_clients_alone() {
    let fx = Kfx::new(&["--gss-max-contexts", "4"]);
    let mut good = fx.client("daemon", GssService::Integrity);
    let root = good.mnt_ok(fx.dir("krb5"));

    // a replayed sequence number: no answer at all
    let mut c = fx.client("bin", GssService::Integrity);
    let xid = c.next_xid();
    let call = c.send_gss(xid, NFS3_PROGRAM, NFS_V3, NFSPROC3_NULL, &Void);
    c.recv_gss(&call);
    c.send_record(&call.msg).unwrap();
    assert!(
        !c.readable_within(std::time::Duration::from_millis(500)),
        "a replay is dropped"
    );

    // a forged handle: CREDPROBLEM
    let mut forged = fx.client("bin", GssService::None);
    let g = forged.gss.as_mut().unwrap();
    let call = g.call_as(77, NFS3_PROGRAM, NFS_V3, 0, GssProc::Data, 1_000_000, &[]);
    let mut m = call.msg.to_vec();
    // the handle is the credential's last 16 bytes, which end 4 bytes before the verifier's
    // flavor: at 24 (header) + 8 (flavor, length) + 16 (vers, proc, seq, service) + 4 (length)
    m[52] ^= 0xff;
    forged.send_record(&m).unwrap();
    let (_, r) = forged.recv_reply();
    assert_eq!(r, RpcReply::AuthError(13));

    // past MAXSEQ: CTXPROBLEM
    let g = forged.gss.as_mut().unwrap();
    let call = g.call_as(78, NFS3_PROGRAM, NFS_V3, 0, GssProc::Data, 0x8000_0000, &[]);
    forged.send_record(&call.msg).unwrap();
    assert_eq!(forged.recv_reply().1, RpcReply::AuthError(14));

    // a bad checksum on the arguments: GARBAGE_ARGS
    let g = forged.gss.as_mut().unwrap();
    g.set_service(GssService::Integrity);
    let call = g.call_as(
        79,
        NFS3_PROGRAM,
        NFS_V3,
        1,
        GssProc::Data,
        5,
        &encode(&Getattr3args {
            object: root.clone(),
        }),
    );
    let mut m = call.msg.to_vec();
    let n = m.len();
    m[n - 40] ^= 1;
    forged.send_record(&m).unwrap();
    assert_eq!(forged.recv_reply().1, RpcReply::GarbageArgs);

    // a truncated credential and a wrong RPCSEC_GSS version: AUTH_BADCRED
    let mut t = call.msg.to_vec();
    t[35] = 2; // the credential's version word
    forged.send_record(&t).unwrap();
    assert_eq!(forged.recv_reply().1, RpcReply::AuthError(AUTH_BADCRED));
    let mut t = call.msg.to_vec();
    t[31] = 12; // credential length: cuts it short
    forged.send_record(&t).unwrap();
    assert_eq!(forged.recv_reply().1, RpcReply::AuthError(AUTH_BADCRED));

    // garbage as an INIT token: a GSS failure in the INIT result, no context
    let mut junk = RpcClient::connect(fx.server.port);
    let mut e = xdr::Encoder::new();
    let cred = sunrpc::gss::wire::GssCred {
        proc_: GssProc::Init,
        seq: 0,
        service: GssService::None,
        handle: Bytes::new(),
    };
    let mut body = xdr::Encoder::new();
    cred.encode(&mut body);
    for w in [9u32, 0, 2, NFS3_PROGRAM, NFS_V3, 0, 6] {
        e.u32(w);
    }
    e.opaque(&body.finish().to_bytes());
    e.u32(0);
    e.u32(0);
    e.opaque(&[0x60, 0x03, 0x06, 0x01, 0x00]);
    junk.send_record(&e.finish().to_bytes()).unwrap();
    let RpcReply::Success(res) = junk.recv_reply().1 else {
        panic!("INIT not answered")
    };
    let mut d = xdr::Decoder::new(res);
    let init = sunrpc::gss::wire::InitRes::decode(&mut d).unwrap();
    assert_ne!(init.major, 0);
    assert!(init.handle.is_empty());

    // INITs past --gss-max-contexts: refused, and the contexts held keep working
    let mut extra = RpcClient::connect(fx.server.port);
    let mut refused = 0;
    for _ in 0..6 {
        if extra.establish_gss("stranger", GssService::None).is_err() {
            refused += 1;
        }
    }
    assert!(refused >= 4, "only {refused} INITs refused past the limit");
    fattr(good.getattr(&root));

    let resp = http_get(fx.server.metrics.expect("metrics endpoint"), "/metrics");
    assert!(resp.contains("rnfs_gss_contexts 4\n"), "{resp}");
    for kind in [
        "gss_init",
        "gss_replay",
        "gss_credproblem",
        "gss_ctxproblem",
        "gss_bad_checksum",
        "gss_init_failed",
        "gss_table_full",
    ] {
        assert!(
            resp.contains(&format!("kind=\"{kind}\"")),
            "no {kind} event in the metrics:\n{resp}"
        );
    }
}

#[test]
fn a_session_retry_from_another_principal_is_a_false_retry() {
    let fx = Kfx::new(&[]);
    let mut v4 = V4::over(
        fx.client("daemon", GssService::Integrity),
        1,
        "gss-false-retry",
    );
    v4.establish(8);
    let fh = v4.path_fh(&fx.dir("krb5"));
    let seq = v4.slots[0];
    // the last request on slot 0 again, as its principal: the cached reply
    let again = v4.call_slot(0, seq, false, Ops::new().putfh(&fh).getfh());
    assert_ne!(
        again.status,
        w::Nfsstat4::NFS4ERR_SEQ_FALSE_RETRY,
        "{}",
        again.summary()
    );
    // and as another principal on the same session: not a retry of that request
    let other = fx.client("bin", GssService::Integrity);
    v4.rpc.gss = other.gss;
    let r = v4.call_slot(0, seq, false, Ops::new().putfh(&fh).getfh());
    assert_eq!(
        r.status,
        w::Nfsstat4::NFS4ERR_SEQ_FALSE_RETRY,
        "{}",
        r.summary()
    );
}

#[test]
fn sp4_mach_cred_keeps_session_and_client_operations_to_the_machine_principal() {
    use common::nfs4_raw::boot_verifier;
    use w::NfsOpnum4 as Op;
    let fx = Kfx::new(&[]);
    let owner = b"gss-mach-cred";
    let verf = boot_verifier(owner);
    // what the Linux client asks for on a krb5i mount
    let enforce = [
        0u32,
        1 << (41 - 32) | 1 << (42 - 32) | 1 << (43 - 32) | 1 << (44 - 32) | 1 << (57 - 32),
    ];
    let allow = [
        1u32 << 4 | 1 << 8 | 1 << 14 | 1 << 21,
        1 << (45 - 32) | 1 << (55 - 32),
    ];
    let ask = |v4: &mut V4| {
        v4.compound(Ops::new().exchange_id_mach_cred(
            verf,
            owner,
            w::EXCHGID4_FLAG_USE_NON_PNFS,
            &enforce,
            &allow,
        ))
    };
    // not under a signed flavor: refused
    let mut sys = V4::connect(fx.server.port, 1, "gss-mach-cred-sys");
    assert_eq!(ask(&mut sys).status, w::Nfsstat4::NFS4ERR_INVAL);
    let mut krb5 = V4::over(fx.client("daemon", GssService::None), 1, "x");
    assert_eq!(ask(&mut krb5).status, w::Nfsstat4::NFS4ERR_INVAL);

    let mut machine = V4::over(fx.client("daemon", GssService::Integrity), 1, "m");
    let r = ask(&mut machine).ok("EXCHANGE_ID SP4_MACH_CRED");
    let ok = r.get(Op::OP_EXCHANGE_ID).exchange_id().clone();
    match &ok.eir_state_protect {
        w::StateProtect4R::Sp4MachCred(ops) => {
            assert_eq!(ops.spo_must_enforce, enforce.to_vec());
            assert_eq!(ops.spo_must_allow, allow.to_vec());
        }
        other => panic!("state protection {other:?}"),
    }
    // CREATE_SESSION as another principal: WRONG_CRED; as the machine's: a session
    let mut user = V4::over(fx.client("bin", GssService::Privacy), 1, "u");
    let r = user.compound(Ops::new().create_session(ok.eir_clientid, ok.eir_sequenceid, 4));
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_WRONG_CRED, "{}", r.summary());
    let r = machine
        .compound(Ops::new().create_session(ok.eir_clientid, ok.eir_sequenceid, 4))
        .ok("CREATE_SESSION");
    let sid = r.get(Op::OP_CREATE_SESSION).create_session().csr_sessionid;
    // the user may use the session for its own calls, not end it nor the client
    user.sessionid = sid;
    user.slots = vec![0; 4];
    user.clientid = ok.eir_clientid;
    user.call(Ops::new().putrootfh().getfh())
        .ok("a user's call in the session");
    let r = user.compound(Ops::new().destroy_session(&sid));
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_WRONG_CRED, "{}", r.summary());
    let r = user.compound(Ops::new().destroy_clientid(ok.eir_clientid));
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_WRONG_CRED, "{}", r.summary());
    machine
        .compound(Ops::new().destroy_session(&sid))
        .ok("DESTROY_SESSION by the machine principal");
}

#[test]
fn nlm_locks_on_a_kerberos_export_come_with_auth_sys() {
    use nlmwire::*;
    let fx = Kfx::new(&[]);
    let mut k = fx.client("daemon", GssService::Privacy);
    let root = k.mnt_ok(fx.dir("krb5"));
    let fh = k.create_ok(&root, "locked", 0o666);
    // the Linux client's lockd calls with AUTH_SYS whatever the mount's flavor; knfsd does not
    // require sec= of NLM, nor does rnfsd
    let mut lockd = RpcClient::connect(fx.server.port);
    let l = Nlm4Lock {
        caller_name: Bytes::from_static(b"client"),
        fh: fh.data.clone(),
        oh: Bytes::from_static(b"1@client"),
        svid: 1,
        l_offset: 0,
        l_len: 10,
    };
    let a = Nlm4Lockargs {
        cookie: Bytes::from_static(b"ck"),
        block: false,
        exclusive: true,
        alock: l,
        reclaim: false,
        state: 1,
    };
    let r: Nlm4Res = match lockd.call(NLM_PROG, NLM_VERS4, NLM4_LOCK, &a) {
        RpcReply::Success(body) => decode_all(body),
        other => panic!("NLM LOCK: {other:?}"),
    };
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_granted);
    // while NFS itself still wants the export's flavor
    assert!(matches!(
        lockd.getattr(&fh),
        Getattr3res::Fail(Nfsstat3::NFS3ERR_ACCES)
    ));
}

#[test]
fn wrongsec_comes_from_the_put_filehandle_operation_where_rfc_8881_says() {
    use w::NfsOpnum4 as Op;
    let fx = Kfx::new(&[]);
    let krb5 = fx.dir("krb5");
    let mut k = V4::over(fx.client("daemon", GssService::Privacy), 1, "gss-ws-k");
    k.establish(8);
    let fh = k.path_fh(&krb5);
    let mut sys = V4::session(fx.server.port, 1, "gss-ws-sys");
    // put-filehandle + an operation that uses it: the put answers WRONGSEC (2.6.3.1.1.7)
    let r = sys.call(Ops::new().putfh(&fh).getattr(&[w::FATTR4_TYPE]));
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_WRONGSEC);
    assert_eq!(
        r.results.last().map(|x| x.op),
        Some(Op::OP_PUTFH),
        "{}",
        r.summary()
    );
    // + SECINFO_NO_NAME: no WRONGSEC, the flavors (2.6.3.1.1.5)
    sys.call(
        Ops::new()
            .putfh(&fh)
            .secinfo_no_name(w::SecinfoStyle4::SecinfoStyle4CurrentFh),
    )
    .ok("PUTFH + SECINFO_NO_NAME");
    // alone (2.6.3.1.1.6) and + another put (2.6.3.1.1.2): no WRONGSEC
    sys.call(Ops::new().putfh(&fh)).ok("PUTFH alone");
    sys.call(Ops::new().putfh(&fh).putrootfh().getfh())
        .ok("PUTFH + PUTROOTFH");
    // LOOKUP into the export from the pseudo file system answers it itself (2.6.3.1.1.3)
    let name = krb5.file_name().unwrap().as_encoded_bytes().to_vec();
    let mut ops = Ops::new().putrootfh();
    for c in krb5.parent().unwrap().components().skip(1) {
        ops = ops.lookup(c.as_os_str().as_encoded_bytes());
    }
    let r = sys.call(ops.lookup(&name).getfh());
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_WRONGSEC);
    assert_eq!(
        r.results.last().map(|x| x.op),
        Some(Op::OP_LOOKUP),
        "{}",
        r.summary()
    );
    // under the export's flavor, all of it works
    k.call(Ops::new().putfh(&fh).getattr(&[w::FATTR4_TYPE]))
        .ok("PUTFH + GETATTR under krb5p");
}
