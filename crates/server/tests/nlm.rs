//! NFSv3 locking (NLM v4) against a running rnfsd: NLM hosts' locks conflict with each other
//! and with NFSv4 locks in both directions; a blocked request is granted by a call back to
//! the waiting host's lock manager, found through its port mapper; ranges, handles and
//! versions the protocol refuses.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use common::nfs4_raw::*;
use common::nlm::*;
use common::*;
use nfs4wire::*;
use nlmwire::*;
use xdr::{Decode, Decoder, Encode, Encoder};

#[test]
fn nlm_and_nfsv4_locks_conflict_both_ways() {
    let fx = Fixture::new();
    let fh = user_file(&fx, "shared");
    let mut a = fx.server.client();
    let mut b = fx.server.client();
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 7, &fh, 0, 100), false),
        Nlm4Stats::nlm4_granted
    );
    // Another host: TEST names the holder, LOCK is denied.
    match test(&mut b, nlm_lock("host-b", 7, &fh, 50, 10)) {
        Nlm4Testrply::Denied(h) => {
            assert_eq!(
                (h.exclusive, h.svid, h.l_offset, h.l_len),
                (true, 7, 0, 100)
            );
            assert_eq!(h.oh, Bytes::from_static(b"7@host-a"));
        }
        other => panic!("TEST over host-a's lock: {other:?}"),
    }
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 7, &fh, 99, 0), false),
        Nlm4Stats::nlm4_denied
    );
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 7, &fh, 100, 0), false),
        Nlm4Stats::nlm4_granted
    );

    // An NFSv4 client is denied over the NLM lock, and told who holds it.
    let mut v4 = V4::session(fx.server.port, 1, "v4-locker");
    let dir = v4.path_fh(&fx.export);
    let (fh4, open) = v4.open_ok(
        &dir,
        "shared",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    let locker = new_lock_owner(0, &open, 0, v4.clientid, b"v4-owner");
    let r = v4.call(
        Ops::new()
            .putfh(&fh4)
            .lock(NfsLockType4::ReadLt, 10, 1, &locker),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DENIED, "{}", r.summary());
    assert_eq!(
        r.last().denied().owner.owner,
        Bytes::from_static(b"7@host-a")
    );

    // host-a unlocks part of its range: NFSv4 locks there, and NLM now sees the NFSv4 holder.
    assert_eq!(
        unlock(&mut a, nlm_lock("host-a", 7, &fh, 0, 50)),
        Nlm4Stats::nlm4_granted
    );
    v4.call(
        Ops::new()
            .putfh(&fh4)
            .lock(NfsLockType4::WriteLt, 10, 1, &locker),
    )
    .ok("NFSv4 LOCK after the NLM unlock");
    match test(&mut b, nlm_lock("host-b", 7, &fh, 0, 20)) {
        Nlm4Testrply::Denied(h) => {
            assert_eq!((h.svid, h.l_offset, h.l_len), (0, 10, 1));
            assert_eq!(h.oh, Bytes::from_static(b"v4-owner"));
        }
        other => panic!("TEST over the NFSv4 lock: {other:?}"),
    }
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 7, &fh, 10, 1), false),
        Nlm4Stats::nlm4_denied
    );
}

#[test]
fn nlm_refuses_what_it_cannot_lock() {
    let fx = Fixture::new();
    let fh = user_file(&fx, "f");
    let mut c = fx.server.client();
    // A range past 2^64.
    assert_eq!(
        lock(&mut c, nlm_lock("h", 1, &fh, u64::MAX - 5, 10), false),
        Nlm4Stats::nlm4_fbig
    );
    // Up to the last byte is a range like any other.
    assert_eq!(
        lock(&mut c, nlm_lock("h", 1, &fh, u64::MAX - 10, 10), false),
        Nlm4Stats::nlm4_granted
    );
    // A handle that names nothing.
    let mut bad = fh.to_vec();
    let n = bad.len();
    bad[n - 1] ^= 0xff;
    assert_eq!(
        lock(&mut c, nlm_lock("h", 1, &Bytes::from(bad), 0, 1), false),
        Nlm4Stats::nlm4_stale_fh
    );
    // An exclusive lock needs write access (the file is the test user's, mode 0644).
    let mut other = fx.server.client().with_user(TEST_UID + 1, TEST_UID + 1);
    assert_eq!(
        lock(&mut other, nlm_lock("h2", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_failed
    );
    // NLM versions 1-3 are not served: version 4 is named.
    match c.call(NLM_PROG, 3, 0, &()) {
        RpcReply::ProgMismatch { low, high } => assert_eq!((low, high), (4, 4)),
        other => panic!("NLM version 3: {other:?}"),
    }
}

/// One RPC record from a stream (the test's port mapper and lock manager).
fn read_call(s: &mut std::net::TcpStream) -> (sunrpc::msg::CallHeader, Decoder) {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    let mut body = vec![0u8; (u32::from_be_bytes(h) & 0x7fff_ffff) as usize];
    s.read_exact(&mut body).unwrap();
    sunrpc::msg::decode_call(Bytes::from(body)).unwrap()
}

fn reply(s: &mut std::net::TcpStream, xid: u32, result: &dyn Encode) {
    let mut e = Encoder::new();
    sunrpc::msg::encode_accepted(&mut e, xid, sunrpc::msg::AcceptStat::Success);
    result.encode(&mut e);
    let b = e.finish().to_bytes();
    let mut v = (0x8000_0000u32 | b.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(&b);
    s.write_all(&v).unwrap();
}

/// A waiting host's port mapper (answering GETPORT with its lock manager's port) and lock
/// manager (answering NLM4_GRANTED with `answer`, sending what it got to the test).
fn waiting_host(answer: Nlm4Stats) -> (u16, mpsc::Receiver<Nlm4Testargs>) {
    let pmap = TcpListener::bind("127.0.0.1:0").unwrap();
    let lockd = TcpListener::bind("127.0.0.1:0").unwrap();
    let lockd_port = lockd.local_addr().unwrap().port();
    let pmap_port = pmap.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in pmap.incoming() {
            let mut s = s.unwrap();
            let (h, mut d) = read_call(&mut s);
            assert_eq!((h.prog, h.proc_), (100_000, 3), "GETPORT");
            let want: Vec<u32> = (0..3).map(|_| d.u32().unwrap()).collect();
            assert_eq!(want, [NLM_PROG, NLM_VERS4, 6], "NLM v4 over TCP");
            reply(&mut s, h.xid, &(lockd_port as u32));
        }
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in lockd.incoming() {
            let mut s = s.unwrap();
            let (h, mut d) = read_call(&mut s);
            assert_eq!(
                (h.prog, h.vers, h.proc_),
                (NLM_PROG, NLM_VERS4, NLM4_GRANTED)
            );
            let a = Nlm4Testargs::decode(&mut d).unwrap();
            reply(
                &mut s,
                h.xid,
                &Nlm4Res {
                    cookie: a.cookie.clone(),
                    stat: Nlm4Stat { stat: answer },
                },
            );
            let _ = tx.send(a);
        }
    });
    (pmap_port, rx)
}

#[test]
fn a_blocked_lock_is_granted_by_calling_the_host_back() {
    let (pmap_port, granted) = waiting_host(Nlm4Stats::nlm4_granted);
    let port = pmap_port.to_string();
    let fx = Fixture::with_args(&["--nlm-client-portmap-port", &port]);
    let fh = user_file(&fx, "queue");
    let mut a = fx.server.client();
    let mut b = fx.server.client();
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 1, &fh, 0, 0), false),
        Nlm4Stats::nlm4_granted
    );
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 9, &fh, 10, 20), true),
        Nlm4Stats::nlm4_blocked
    );
    assert!(
        granted.recv_timeout(Duration::from_millis(300)).is_err(),
        "no grant while held"
    );
    assert_eq!(
        unlock(&mut a, nlm_lock("host-a", 1, &fh, 0, 0)),
        Nlm4Stats::nlm4_granted
    );
    let g = granted
        .recv_timeout(Duration::from_secs(10))
        .expect("NLM4_GRANTED to host-b");
    assert!(g.exclusive);
    assert_eq!((g.alock.svid, g.alock.l_offset, g.alock.l_len), (9, 10, 20));
    assert_eq!(
        (g.alock.fh.clone(), g.alock.oh.clone()),
        (fh.clone(), Bytes::from_static(b"9@host-b"))
    );
    // host-b holds it now.
    match test(&mut a, nlm_lock("host-a", 1, &fh, 15, 1)) {
        Nlm4Testrply::Denied(h) => assert_eq!(h.svid, 9),
        other => panic!("after the grant: {other:?}"),
    }
    // A retried LOCK of the granted request is granted.
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 9, &fh, 10, 20), true),
        Nlm4Stats::nlm4_granted
    );
    let m = http_get(fx.server.metrics.unwrap(), "/metrics");
    assert_eq!(metric(&m, "rnfs_nlm_grants_sent_total"), Some(1), "{m}");
    assert_eq!(metric(&m, "rnfs_locks_held{proto=\"nlm\"}"), Some(1));
    assert_eq!(metric(&m, "rnfs_lock_waiters"), Some(0));

    // A cancelled request is not granted: the next unlock calls nobody back.
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 1, &fh, 0, 0), true),
        Nlm4Stats::nlm4_blocked
    );
    let m = http_get(fx.server.metrics.unwrap(), "/metrics");
    assert_eq!(metric(&m, "rnfs_lock_waiters"), Some(1));
    let cancel = Nlm4Cancargs {
        cookie: Bytes::from_static(b"c"),
        block: true,
        exclusive: true,
        alock: nlm_lock("host-a", 1, &fh, 0, 0),
    };
    let r: Nlm4Res = nlm(&mut a, NLM4_CANCEL, &cancel);
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_granted);
    assert_eq!(
        unlock(&mut b, nlm_lock("host-b", 9, &fh, 10, 20)),
        Nlm4Stats::nlm4_granted
    );
    assert!(
        granted.recv_timeout(Duration::from_secs(1)).is_err(),
        "a cancelled request was granted"
    );
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 9, &fh, 0, 1), false),
        Nlm4Stats::nlm4_granted
    );
}

#[test]
fn a_grant_the_host_refuses_is_released() {
    let (pmap_port, granted) = waiting_host(Nlm4Stats::nlm4_denied);
    let port = pmap_port.to_string();
    let fx = Fixture::with_args(&["--nlm-client-portmap-port", &port]);
    let fh = user_file(&fx, "refused");
    let mut a = fx.server.client();
    let mut b = fx.server.client();
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 1, &fh, 0, 0), false),
        Nlm4Stats::nlm4_granted
    );
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 2, &fh, 0, 0), true),
        Nlm4Stats::nlm4_blocked
    );
    assert_eq!(
        unlock(&mut a, nlm_lock("host-a", 1, &fh, 0, 0)),
        Nlm4Stats::nlm4_granted
    );
    granted
        .recv_timeout(Duration::from_secs(10))
        .expect("NLM4_GRANTED to host-b");
    // Refused: the lock goes, and host-a locks again.
    let mut got = Nlm4Stats::nlm4_denied;
    for _ in 0..50 {
        got = lock(&mut a, nlm_lock("host-a", 1, &fh, 0, 0), false);
        if got == Nlm4Stats::nlm4_granted {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        got,
        Nlm4Stats::nlm4_granted,
        "the refused grant was released"
    );
}

/// A client host's port mapper and status monitor over UDP (as sm-notify reaches them): the
/// port mapper answers GETPORT of NSM v1 over UDP with the monitor's port; the monitor sends
/// every SM_NOTIFY it gets, with its source address, to the test.
#[test]
fn a_restart_notifies_lock_holders_who_reclaim_during_grace() {
    let (pmap_port, notified) = notified_host();
    let port = pmap_port.to_string();
    let mut fx = Fixture::with_args(&["--nlm-client-portmap-port", &port, "--lease-time", "5"]);
    let fh = user_file(&fx, "kept");
    let mut a = fx.server.client();
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 3, &fh, 0, 10), false),
        Nlm4Stats::nlm4_granted
    );
    assert!(
        notified.recv_timeout(Duration::from_millis(200)).is_err(),
        "nobody told yet"
    );
    drop(a);
    fx.server.crash_and_restart();
    let (chge, from) = notified
        .recv_timeout(Duration::from_secs(10))
        .expect("SM_NOTIFY to the host that held a lock");
    // The state number moved on and is odd; the name is the address the host called.
    assert_eq!(chge.state % 2, 1);
    assert!(chge.state >= 3, "state {}", chge.state);
    assert_eq!(chge.mon_name, Bytes::from_static(b"127.0.0.1"));
    assert_eq!(from.ip(), "127.0.0.1".parse::<std::net::IpAddr>().unwrap());
    // Grace: a new lock waits, the reclaim is taken.
    let mut b = fx.server.client();
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 1, &fh, 20, 1), false),
        Nlm4Stats::nlm4_denied_grace_period
    );
    let mut a = fx.server.client();
    let mut reclaim = lockargs(nlm_lock("host-a", 3, &fh, 0, 10), false);
    reclaim.reclaim = true;
    let r: Nlm4Res = nlm(&mut a, NLM4_LOCK, &reclaim);
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_granted);
    // NFSv4 meanwhile (no NFSv4 client to wait for): a new open goes through, as with
    // knfsd's lockd, while a new NFSv4 lock waits for the NLM hosts as theirs do
    let mut v4 = V4::session(fx.server.port, 1, "opener-in-nlm-grace");
    let dir = v4.path_fh(&fx.export);
    let (vfh, open) = v4.open_ok(
        &dir,
        "kept",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    let locker = new_lock_owner(0, &open, 0, v4.clientid, b"l");
    let r = v4.call(
        Ops::new()
            .putfh(&vfh)
            .lock(NfsLockType4::WriteLt, 100, 1, &locker),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_GRACE, "{}", r.summary());
    // After the grace period (one lease) new locks go through, and the reclaimed one holds.
    let mut got = Nlm4Stats::nlm4_denied_grace_period;
    for _ in 0..80 {
        got = lock(&mut b, nlm_lock("host-b", 1, &fh, 5, 1), false);
        if got != Nlm4Stats::nlm4_denied_grace_period {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        got,
        Nlm4Stats::nlm4_denied,
        "host-a's reclaimed lock holds after grace"
    );
}

#[test]
fn a_host_that_restarted_loses_its_locks() {
    let fx = Fixture::new();
    let fh = user_file(&fx, "rebooted");
    let mut a = fx.server.client();
    let mut b = fx.server.client();
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 3, &fh, 0, 0), false),
        Nlm4Stats::nlm4_granted
    );
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_denied
    );
    // host-a's status monitor says it restarted (sm-notify, by its name).
    let chge = StatChge {
        mon_name: Bytes::from_static(b"host-a"),
        state: 7,
    };
    match a.call(SM_PROG, SM_VERS, SM_NOTIFY, &chge) {
        RpcReply::Success(body) => assert!(body.is_empty()),
        other => panic!("SM_NOTIFY: {other:?}"),
    }
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_granted
    );
    // SM_STAT answers this server's state number (odd: up).
    let r: SmStatRes = match b.call(
        SM_PROG,
        SM_VERS,
        SM_STAT,
        &SmName {
            mon_name: Bytes::from_static(b"x"),
        },
    ) {
        RpcReply::Success(body) => decode_all(body),
        other => panic!("SM_STAT: {other:?}"),
    };
    assert_eq!(r.state % 2, 1);
}

#[test]
fn nlm_over_udp_and_on_a_read_only_export() {
    let fx = Fixture::with_options(0o777, "ro,insecure");
    let fh = {
        let p = fx.export.join("ro-file");
        std::fs::write(&p, [0u8; 10]).unwrap();
        std::os::unix::fs::chown(&p, Some(TEST_UID), Some(TEST_UID)).unwrap();
        let (mut c, root) = fx.connect();
        c.lookup_ok(&root, "ro-file").data
    };
    let mut c = fx.server.client();
    // As knfsd: an exclusive lock needs the file open for writing, which a read-only export
    // refuses; a shared lock needs reading only.
    assert_eq!(
        lock(&mut c, nlm_lock("h", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_failed
    );
    let mut shared = lockargs(nlm_lock("h", 1, &fh, 0, 1), false);
    shared.exclusive = false;
    let r: Nlm4Res = nlm(&mut c, NLM4_LOCK, &shared);
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_granted);

    // TEST over UDP: a datagram each way, on the NFS port.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t = Nlm4Testargs {
        cookie: Bytes::from_static(b"u"),
        exclusive: true,
        alock: nlm_lock("udp-host", 2, &fh, 0, 1),
    };
    let mut e = Encoder::new();
    sunrpc::msg::encode_call(
        &mut e,
        77,
        NLM_PROG,
        NLM_VERS4,
        NLM4_TEST,
        &auth_sys(TEST_UID, TEST_UID),
    );
    t.encode(&mut e);
    udp.send_to(&e.finish().to_bytes(), ("127.0.0.1", fx.server.port))
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = udp.recv(&mut buf).expect("an NLM reply over UDP");
    let mut d = sunrpc::msg::decode_success(Bytes::copy_from_slice(&buf[..n])).expect("accepted");
    match Nlm4Testres::decode(&mut d).unwrap().stat {
        Nlm4Testrply::Denied(h) => assert_eq!((h.svid, h.exclusive), (1, false)),
        other => panic!("TEST over UDP: {other:?}"),
    }
}

fn shareargs(host: &str, fh: &Bytes, access: FshAccess, mode: FshMode) -> Nlm4Shareargs {
    Nlm4Shareargs {
        cookie: Bytes::from_static(b"s"),
        share: Nlm4Share {
            caller_name: Bytes::from(host.to_string()),
            fh: fh.clone(),
            oh: Bytes::from(format!("oh@{host}")),
            mode,
            access,
        },
        reclaim: false,
    }
}

#[test]
fn nlm_shares_and_nfsv4_opens_deny_each_other() {
    let fx = Fixture::new();
    let fh = user_file(&fx, "shared-mode");
    let mut c = fx.server.client();
    // An NLM host reads, denying writers.
    let r: Nlm4Shareres = nlm(
        &mut c,
        NLM4_SHARE,
        &shareargs("dos", &fh, FshAccess::FsaR, FshMode::FsmDw),
    );
    assert_eq!(r.stat, Nlm4Stats::nlm4_granted);
    let r: Nlm4Shareres = nlm(
        &mut c,
        NLM4_SHARE,
        &shareargs("dos2", &fh, FshAccess::FsaW, FshMode::FsmDn),
    );
    assert_eq!(r.stat, Nlm4Stats::nlm4_denied, "another host's writer");
    // An NFSv4 open for writing is refused; one for reading is not.
    let mut v4 = V4::session(fx.server.port, 1, "v4-share");
    let dir = v4.path_fh(&fx.export);
    let r = v4.open(
        &dir,
        "shared-mode",
        "w",
        OPEN4_SHARE_ACCESS_WRITE,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_SHARE_DENIED, "{}", r.summary());
    let (_, _) = v4.open_ok(
        &dir,
        "shared-mode",
        "r",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_WRITE,
        OpenHow::NoCreate,
    );
    // UNSHARE: the NFSv4 reader's own deny-write still refuses an NLM writer.
    let r: Nlm4Shareres = nlm(
        &mut c,
        NLM4_UNSHARE,
        &shareargs("dos", &fh, FshAccess::FsaR, FshMode::FsmDw),
    );
    assert_eq!(r.stat, Nlm4Stats::nlm4_granted);
    let r: Nlm4Shareres = nlm(
        &mut c,
        NLM4_SHARE,
        &shareargs("dos2", &fh, FshAccess::FsaW, FshMode::FsmDn),
    );
    assert_eq!(
        r.stat,
        Nlm4Stats::nlm4_denied,
        "an NLM writer against an NFSv4 deny-write open"
    );
    let r: Nlm4Shareres = nlm(
        &mut c,
        NLM4_SHARE,
        &shareargs("dos2", &fh, FshAccess::FsaR, FshMode::FsmDn),
    );
    assert_eq!(r.stat, Nlm4Stats::nlm4_granted);
}

#[test]
fn an_expired_nfsv4_clients_lock_gives_way_to_nlm() {
    let fx = Fixture::with_args(&["--lease-time", "5"]);
    let fh = user_file(&fx, "courtesy");
    let mut v4 = V4::session(fx.server.port, 1, "goes-away");
    let dir = v4.path_fh(&fx.export);
    let (fh4, open) = v4.open_ok(
        &dir,
        "courtesy",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    let locker = new_lock_owner(0, &open, 0, v4.clientid, b"gone-owner");
    v4.call(
        Ops::new()
            .putfh(&fh4)
            .lock(NfsLockType4::WriteLt, 0, 10, &locker),
    )
    .ok("NFSv4 LOCK");
    let mut c = fx.server.client();
    assert_eq!(
        lock(&mut c, nlm_lock("h", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_denied
    );
    // The NFSv4 client stops renewing; past its lease its lock is kept only until wanted.
    std::thread::sleep(Duration::from_secs(7));
    assert_eq!(
        lock(&mut c, nlm_lock("h", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_granted
    );
}

/// A client host's port mapper (TCP, answering GETPORT of anything with the lock manager's
/// port) and lock manager (TCP), which sends every call it gets (procedure, arguments) to the
/// test and answers it with no result.
fn recording_host() -> (u16, mpsc::Receiver<(u32, Bytes)>) {
    let pmap = TcpListener::bind("127.0.0.1:0").unwrap();
    let lockd = TcpListener::bind("127.0.0.1:0").unwrap();
    let lockd_port = lockd.local_addr().unwrap().port();
    let pmap_port = pmap.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in pmap.incoming() {
            let mut s = s.unwrap();
            let (h, _) = read_call(&mut s);
            reply(&mut s, h.xid, &(lockd_port as u32));
        }
    });
    let (tx, rx) = mpsc::channel();
    let udp_tx = tx.clone();
    std::thread::spawn(move || {
        for s in lockd.incoming() {
            let mut s = s.unwrap();
            let (h, d) = read_call(&mut s);
            reply(&mut s, h.xid, &());
            let _ = tx.send((h.proc_, d.peek_rest().clone()));
        }
    });
    // The same over UDP, on the same port numbers (status monitor callbacks are datagrams).
    let upmap = std::net::UdpSocket::bind(("127.0.0.1", pmap_port)).unwrap();
    let ulockd = std::net::UdpSocket::bind(("127.0.0.1", lockd_port)).unwrap();
    let answer = |s: &std::net::UdpSocket, xid: u32, to, result: &dyn Encode| {
        let mut e = Encoder::new();
        sunrpc::msg::encode_accepted(&mut e, xid, sunrpc::msg::AcceptStat::Success);
        result.encode(&mut e);
        s.send_to(&e.finish().to_bytes(), to).unwrap();
    };
    std::thread::spawn(move || loop {
        let mut buf = [0u8; 2048];
        let (n, from) = upmap.recv_from(&mut buf).unwrap();
        let (h, _) = sunrpc::msg::decode_call(Bytes::copy_from_slice(&buf[..n])).unwrap();
        answer(&upmap, h.xid, from, &(lockd_port as u32));
    });
    std::thread::spawn(move || loop {
        let mut buf = [0u8; 2048];
        let (n, from) = ulockd.recv_from(&mut buf).unwrap();
        let (h, d) = sunrpc::msg::decode_call(Bytes::copy_from_slice(&buf[..n])).unwrap();
        answer(&ulockd, h.xid, from, &());
        let _ = udp_tx.send((h.proc_, d.peek_rest().clone()));
    });
    (pmap_port, rx)
}

#[test]
fn every_other_procedure_and_bad_input() {
    let (pmap_port, calls) = recording_host();
    let port = pmap_port.to_string();
    let fx = Fixture::with_args(&["--nlm-client-portmap-port", &port]);
    let fh = user_file(&fx, "procs");
    let mut c = fx.server.client();
    // NULL of both programs.
    for prog in [(NLM_PROG, NLM_VERS4), (SM_PROG, SM_VERS)] {
        match c.call(prog.0, prog.1, 0, &()) {
            RpcReply::Success(b) => assert!(b.is_empty()),
            other => panic!("NULL of {prog:?}: {other:?}"),
        }
    }
    // GRANTED to a server: it holds no request of its own.
    let t = Nlm4Testargs {
        cookie: Bytes::from_static(b"g"),
        exclusive: true,
        alock: nlm_lock("h", 1, &fh, 0, 1),
    };
    let r: Nlm4Res = nlm(&mut c, NLM4_GRANTED, &t);
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_denied);
    // The asynchronous procedures answer nothing, then call the caller's lock manager with
    // the result (LOCK_MSG -> LOCK_RES, TEST_MSG -> TEST_RES, ...).
    let msg = |c: &mut RpcClient, p: u32, a: &dyn Encode| match c.call(NLM_PROG, NLM_VERS4, p, a) {
        RpcReply::Success(b) => assert!(b.is_empty(), "an _MSG call has no reply body"),
        other => panic!("NLM {p}: {other:?}"),
    };
    let next = |want: u32| {
        let (p, body) = calls
            .recv_timeout(Duration::from_secs(10))
            .expect("an _RES call");
        assert_eq!(p, want);
        body
    };
    msg(
        &mut c,
        NLM4_LOCK_MSG,
        &lockargs(nlm_lock("m", 5, &fh, 0, 10), false),
    );
    let r: Nlm4Res = decode_all(next(NLM4_LOCK_RES));
    assert_eq!(
        (r.cookie, r.stat.stat),
        (Bytes::from_static(b"ck"), Nlm4Stats::nlm4_granted)
    );
    msg(
        &mut c,
        NLM4_TEST_MSG,
        &Nlm4Testargs {
            alock: nlm_lock("other", 1, &fh, 5, 1),
            ..t.clone()
        },
    );
    let r: Nlm4Testres = decode_all(next(NLM4_TEST_RES));
    assert!(matches!(r.stat, Nlm4Testrply::Denied(ref h) if h.svid == 5));
    msg(
        &mut c,
        NLM4_CANCEL_MSG,
        &Nlm4Cancargs {
            cookie: Bytes::from_static(b"c"),
            block: false,
            exclusive: true,
            alock: nlm_lock("m", 5, &fh, 0, 10),
        },
    );
    let r: Nlm4Res = decode_all(next(NLM4_CANCEL_RES));
    assert_eq!(
        r.stat.stat,
        Nlm4Stats::nlm4_denied,
        "CANCEL of a lock already granted"
    );
    msg(
        &mut c,
        NLM4_UNLOCK_MSG,
        &Nlm4Unlockargs {
            cookie: Bytes::from_static(b"u"),
            alock: nlm_lock("m", 5, &fh, 0, 10),
        },
    );
    let r: Nlm4Res = decode_all(next(NLM4_UNLOCK_RES));
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_granted);
    msg(&mut c, NLM4_GRANTED_MSG, &t);
    let r: Nlm4Res = decode_all(next(NLM4_GRANTED_RES));
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_denied);
    // _RES calls from a client are taken and answered with nothing.
    msg(&mut c, NLM4_GRANTED_RES, &res_of(Nlm4Stats::nlm4_granted));
    // NM_LOCK locks (without monitoring); FREE_ALL drops everything of the named host.
    let r: Nlm4Res = nlm(
        &mut c,
        NLM4_NM_LOCK,
        &lockargs(nlm_lock("pc", 1, &fh, 0, 1), false),
    );
    assert_eq!(r.stat.stat, Nlm4Stats::nlm4_granted);
    assert_eq!(
        lock(&mut c, nlm_lock("x", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_denied
    );
    msg(
        &mut c,
        NLM4_FREE_ALL,
        &Nlm4Notify {
            name: Bytes::from_static(b"pc"),
            state: 3,
        },
    );
    assert_eq!(
        lock(&mut c, nlm_lock("x", 1, &fh, 0, 1), false),
        Nlm4Stats::nlm4_granted
    );

    // NSM from loopback: SM_MON / SM_UNMON / SM_UNMON_ALL / SM_SIMU_CRASH.
    let my_id = MyId {
        my_name: Bytes::from_static(b"localhost"),
        my_prog: 200_000,
        my_vers: 1,
        my_proc: 1,
    };
    let mon = Mon {
        mon_id: MonId {
            mon_name: Bytes::from_static(b"watched"),
            my_id: my_id.clone(),
        },
        r#priv: [7; 16],
    };
    let sm = |c: &mut RpcClient, p: u32, a: &dyn Encode| match c.call(SM_PROG, SM_VERS, p, a) {
        RpcReply::Success(b) => b,
        other => panic!("NSM {p}: {other:?}"),
    };
    let r: SmStatRes = decode_all(sm(&mut c, SM_MON, &mon));
    assert_eq!(r.res_stat, SmRes::stat_succ);
    // The watched host restarts: the monitor's program is called with its priv bytes.
    let chge = StatChge {
        mon_name: Bytes::from_static(b"watched"),
        state: 9,
    };
    assert!(sm(&mut c, SM_NOTIFY, &chge).is_empty());
    let (p, body) = calls
        .recv_timeout(Duration::from_secs(10))
        .expect("the monitor's callback");
    assert_eq!(p, 1);
    let st: SmStatus = decode_all(body);
    assert_eq!(
        (st.mon_name, st.state, st.r#priv),
        (Bytes::from_static(b"watched"), 9, [7; 16])
    );
    let r: SmStat = decode_all(sm(&mut c, SM_UNMON, &mon.mon_id));
    assert_eq!(r.state % 2, 1);
    let r: SmStat = decode_all(sm(&mut c, SM_UNMON_ALL, &my_id));
    assert_eq!(r.state % 2, 1);
    assert!(sm(&mut c, SM_SIMU_CRASH, &()).is_empty());

    // Bad input: names, owner handles and file handles past their bounds are garbage, not
    // allocations; so is a truncated call.
    for (what, l) in [
        (
            "caller_name of 1,025 bytes",
            Nlm4Lock {
                caller_name: Bytes::from(vec![b'a'; 1025]),
                ..nlm_lock("h", 1, &fh, 0, 1)
            },
        ),
        (
            "owner handle of 1,025 bytes",
            Nlm4Lock {
                oh: Bytes::from(vec![1; 1025]),
                ..nlm_lock("h", 1, &fh, 0, 1)
            },
        ),
        (
            "file handle of 65 bytes",
            Nlm4Lock {
                fh: Bytes::from(vec![1; 65]),
                ..nlm_lock("h", 1, &fh, 0, 1)
            },
        ),
    ] {
        match c.call(NLM_PROG, NLM_VERS4, NLM4_LOCK, &lockargs(l, false)) {
            RpcReply::GarbageArgs => {}
            other => panic!("{what}: {other:?}"),
        }
    }
    match c.call(NLM_PROG, NLM_VERS4, NLM4_LOCK, &7u32) {
        RpcReply::GarbageArgs => {}
        other => panic!("a truncated LOCK: {other:?}"),
    }
    // A flood of blocked requests from one host is bounded (1,024 waiters per host).
    let mut b = fx.server.client();
    assert_eq!(
        lock(&mut b, nlm_lock("holder", 1, &fh, 100, 0), false),
        Nlm4Stats::nlm4_granted
    );
    let mut last = Nlm4Stats::nlm4_blocked;
    for svid in 0..1100u32 {
        last = lock(&mut c, nlm_lock("flood", svid, &fh, 100, 1), true);
        if last != Nlm4Stats::nlm4_blocked {
            assert_eq!(svid, 1024, "the per-host bound");
            break;
        }
    }
    assert_eq!(last, Nlm4Stats::nlm4_denied_nolocks);
    // Another host is not affected.
    assert_eq!(
        lock(&mut b, nlm_lock("calm", 1, &fh, 100, 1), true),
        Nlm4Stats::nlm4_blocked
    );
}

fn res_of(stat: Nlm4Stats) -> Nlm4Res {
    Nlm4Res {
        cookie: Bytes::new(),
        stat: Nlm4Stat { stat },
    }
}

#[test]
fn evicting_an_nfsv3_host_through_the_admin_socket_frees_its_locks() {
    let fx = Fixture::new();
    let fh = user_file(&fx, "evicted");
    let mut a = fx.server.client();
    let mut b = fx.server.client();
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 3, &fh, 0, 10), false),
        Nlm4Stats::nlm4_granted
    );
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 1, &fh, 5, 1), false),
        Nlm4Stats::nlm4_denied
    );
    // the listing shows host-a's lock: its range and type
    match fx.server.admin(admin::Request::Clients) {
        admin::Response::Clients { nfs3, .. } => {
            let h = nfs3
                .iter()
                .find(|h| h.nlm_name.as_deref() == Some("host-a"))
                .expect("host-a listed");
            assert_eq!(h.address, "127.0.0.1");
            assert_eq!(h.locks.len(), 1);
            let l = &h.locks[0];
            assert_eq!((l.offset, l.length, l.exclusive), (0, 10, true));
        }
        other => panic!("{other:?}"),
    }
    match fx.server.admin(admin::Request::Evict {
        client: "host-a".into(),
    }) {
        admin::Response::Evicted { released, .. } => assert_eq!(released, 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        lock(&mut b, nlm_lock("host-b", 1, &fh, 5, 1), false),
        Nlm4Stats::nlm4_granted
    );
}
