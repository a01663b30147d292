//! State kept in an etcd cluster (`--cluster`, docs/ha.md) against a real three-member etcd
//! (Debian's etcd-server, started by the test on loopback under a temporary directory): NFSv4
//! client records are in etcd before their confirmation is answered, and a head that takes
//! the identity over with a state directory of its own (only the handle key shared) finds them,
//! starts a grace period, and lets the client reclaim its open and lock.

mod common;

use common::nfs4_raw::*;
use common::*;
use nfs4wire::*;
use store::testkit::EtcdCluster;
use store::{Etcd, EtcdConfig, Store, Table};

fn cluster() -> EtcdCluster {
    EtcdCluster::start(3)
        .expect("etcd is not installed (scripts/install-deps installs etcd-server)")
}

/// The rows of the NFSv4 client table that identity `node` has in the cluster.
fn client_rows(c: &EtcdCluster, node: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let s = Etcd::new(EtcdConfig {
        endpoints: c.endpoints(),
        prefix: format!("/rnfs/id/{node}"),
        timeout: std::time::Duration::from_secs(5),
    })
    .unwrap();
    s.load(Table::new("nfs4_clients")).unwrap()
}

#[test]
fn client_records_in_etcd_let_another_head_grant_reclaims() {
    let etcd = cluster();
    let url = etcd.url();
    let mut fx = Fixture::with_args(&["--cluster", &url, "--node-id", "head-a"]);
    let mut a = V4::session(fx.server.port, 1, "ha-client-a");
    let dir = a.path_fh(&fx.export);
    let (fh, open) = a.open_ok(
        &dir,
        "held",
        "a-open",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_WRITE,
        OpenHow::Unchecked(Sattr::mode(0o666)),
    );
    a.write_all(&fh, &open, 0, b"acknowledged before the failover");
    let locker = new_lock_owner(0, &open, 0, a.clientid, b"a-lock");
    a.call(
        Ops::new()
            .putfh(&fh)
            .lock(NfsLockType4::WriteLt, 0, 100, &locker),
    )
    .ok("LOCK before the failover");

    // the confirmation was answered after the record reached etcd: it is there, under this
    // identity, and nowhere in the state directory
    let rows = client_rows(&etcd, "head-a");
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].0.windows(11).any(|w| w == b"ha-client-a"),
        "{:?}",
        String::from_utf8_lossy(&rows[0].0)
    );
    assert!(client_rows(&etcd, "head-b").is_empty());
    let old = fx.server.config();
    assert!(
        !old.state_dir.join("nfs4-clients.redb").exists(),
        "client records went to the state directory"
    );

    // the head dies; another takes the identity over with a state directory of its own (the
    // handle key is the one thing shared: files keep their handles)
    fx.server.crash();
    // beside the good record, a damaged one (a value that is no minor version): the new head
    // leaves it out with a warning and serves, rather than refuse to start
    Etcd::new(EtcdConfig {
        endpoints: etcd.endpoints(),
        prefix: "/rnfs/id/head-a".into(),
        timeout: std::time::Duration::from_secs(5),
    })
    .unwrap()
    .put(Table::new("nfs4_clients"), b"damaged-client", b"\x01")
    .unwrap();
    assert_eq!(client_rows(&etcd, "head-a").len(), 2);
    let other = tempfile::tempdir().unwrap();
    fx.server
        .start_again(other_head(&fx, other.path(), Some(fx.server.port)));
    let port = fx.server.port;

    // the records from etcd started a grace period: a newcomer waits
    let mut b = V4::session(port, 1, "ha-client-b");
    let r = b.open(
        &dir,
        "held",
        "b-open",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_GRACE, "{}", r.summary());

    // and the client reclaims its open and its lock on the new head
    let mut a = V4::connect(port, 1, "ha-client-a");
    a.establish_with(8, false);
    let r = a
        .reclaim_open(
            &fh,
            b"a-open",
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_WRITE,
        )
        .ok("OPEN CLAIM_PREVIOUS on the new head");
    let open = r.open_stateid();
    let locker = new_lock_owner(0, &open, 0, a.clientid, b"a-lock");
    a.call(
        Ops::new()
            .putfh(&fh)
            .lock_with(true, NfsLockType4::WriteLt, 0, 100, &locker),
    )
    .ok("LOCK reclaim on the new head");
    a.call(Ops::new().reclaim_complete(false))
        .ok("RECLAIM_COMPLETE");
    // the reclaimed lock holds against the newcomer once grace is over
    let r =
        b.call(
            Ops::new()
                .putfh(&fh)
                .lockt(NfsLockType4::ReadLt, 10, 10, b.clientid, b"b-lock"),
        );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DENIED, "{}", r.summary());
    assert_eq!(
        std::fs::read(fx.export.join("held")).unwrap(),
        b"acknowledged before the failover"
    );
}

#[test]
fn a_server_without_its_cluster_does_not_serve_until_it_answers() {
    // every member down when the server starts: it waits to claim its identity and read its
    // records (it would otherwise serve without the grace period its clients' reclaims need),
    // and serves once they come
    let mut etcd = cluster();
    let url = etcd.url();
    for i in 0..3 {
        etcd.stop(i);
    }
    let later = std::thread::spawn(move || {
        // past one whole request timeout (5 s), so that the server has given up once
        std::thread::sleep(std::time::Duration::from_secs(7));
        for i in 0..3 {
            etcd.restart(i);
        }
        etcd
    });
    let t0 = std::time::Instant::now();
    let fx = Fixture::with_args(&["--cluster", &url, "--node-id", "head-w"]);
    let waited = t0.elapsed();
    let etcd = later.join().unwrap();
    assert!(
        waited >= std::time::Duration::from_secs(7),
        "ready after {waited:?}, before the cluster was back"
    );
    assert!(
        fx.server
            .log_text()
            .contains("cannot claim the identity yet"),
        "{}",
        fx.server.log_text()
    );
    let mut a = V4::session(fx.server.port, 1, "ha-after-wait");
    let dir = a.path_fh(&fx.export);
    a.open_ok(
        &dir,
        "f",
        "o",
        OPEN4_SHARE_ACCESS_WRITE,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    assert_eq!(client_rows(&etcd, "head-w").len(), 1);
}

#[test]
fn a_confirmation_the_cluster_cannot_record_is_delayed_while_others_are_served() {
    let mut etcd = cluster();
    let url = etcd.url();
    // a lease longer than the outage: the head keeps its identity through it
    let fx = Fixture::with_args(&[
        "--cluster",
        &url,
        "--node-id",
        "head-d",
        "--identity-ttl",
        "30",
    ]);
    let port = fx.server.port;
    // a client with its session before the cluster goes
    let mut a = V4::session(port, 1, "ha-established");
    let dir = a.path_fh(&fx.export);
    for i in 0..3 {
        etcd.stop(i);
    }
    // a new client's first CREATE_SESSION cannot be recorded: NFS4ERR_DELAY (not a confirmed
    // client that could not reclaim after a failover), within the store's timeout
    let waiting = std::thread::spawn(move || {
        let mut b = V4::connect(port, 1, "ha-during-outage");
        let (clientid, seq) = b.exchange_id();
        let t0 = std::time::Instant::now();
        let r = b.compound(Ops::new().create_session(clientid, seq, 8));
        (b, clientid, seq, r, t0.elapsed())
    });
    // while that CREATE_SESSION waits for the store, the established client is served: the
    // store is not asked under the state lock
    std::thread::sleep(std::time::Duration::from_secs(1));
    let t0 = std::time::Instant::now();
    a.getattr(&dir, &[FATTR4_TYPE]);
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t0.elapsed()
    );
    let (mut b, clientid, seq, r, took) = waiting.join().unwrap();
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
    assert!(
        took > std::time::Duration::from_secs(2),
        "answered in {took:?}: did it wait?"
    );
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
    // the cluster back, the retried CREATE_SESSION confirms, and the record is there
    for i in 0..3 {
        etcd.restart(i);
    }
    let mut done = None;
    for _ in 0..60 {
        let r = b.compound(Ops::new().create_session(clientid, seq, 8));
        if r.status == Nfsstat4::NFS4_OK {
            done = Some(r);
            break;
        }
        assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    done.expect("CREATE_SESSION after the cluster came back");
    let rows = client_rows(&etcd, "head-d");
    assert_eq!(rows.len(), 2, "{rows:?}");
}

#[test]
fn nlm_hosts_in_etcd_are_notified_by_the_head_that_takes_over() {
    use common::nlm::*;
    let etcd = cluster();
    let url = etcd.url();
    let (pmap_port, notified) = notified_host();
    let pmap = pmap_port.to_string();
    let mut fx = Fixture::with_args(&[
        "--cluster",
        &url,
        "--node-id",
        "head-n",
        "--nlm-client-portmap-port",
        &pmap,
        "--lease-time",
        "15",
    ]);
    let fh = user_file(&fx, "kept");
    let mut a = fx.server.client();
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 3, &fh, 0, 10), false),
        nlmwire::Nlm4Stats::nlm4_granted
    );
    drop(a);
    // the host and the state number are in the cluster, under the identity
    let s = Etcd::new(EtcdConfig {
        endpoints: etcd.endpoints(),
        prefix: "/rnfs/id/head-n".into(),
        timeout: std::time::Duration::from_secs(5),
    })
    .unwrap();
    assert_eq!(s.load(Table::new("nlm_hosts")).unwrap().len(), 1);
    let state = s.load(Table::new("nlm_meta")).unwrap();
    assert_eq!(
        state,
        vec![(b"state".to_vec(), 1u32.to_be_bytes().to_vec())]
    );

    // another head with a state directory of its own takes the identity over
    fx.server.crash();
    let other = tempfile::tempdir().unwrap();
    fx.server
        .start_again(other_head(&fx, other.path(), Some(fx.server.port)));
    // it tells the host, with the identity's next state number
    let (chge, _) = notified
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("SM_NOTIFY from the new head to the host that held a lock");
    assert_eq!(chge.state, 3);
    // and takes its reclaim in the grace period
    let mut a = fx.server.client();
    let mut reclaim = lockargs(nlm_lock("host-a", 3, &fh, 0, 10), false);
    reclaim.reclaim = true;
    let r: nlmwire::Nlm4Res = nlm(&mut a, nlmwire::NLM4_LOCK, &reclaim);
    assert_eq!(r.stat.stat, nlmwire::Nlm4Stats::nlm4_granted);
    // grace ends once the host is done: a call from before the takeover sent again (an xid
    // before the reclaim's) does not end it, a new call after the reclaims does (the Linux
    // client sends none while it reclaims)
    let reclaimed_at = a.last_xid();
    a.set_xid(reclaimed_at.wrapping_sub(10));
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 4, &fh, 20, 10), false),
        nlmwire::Nlm4Stats::nlm4_denied_grace_period,
        "an old call sent again ended the grace period"
    );
    a.set_xid(reclaimed_at);
    assert_eq!(
        lock(&mut a, nlm_lock("host-a", 4, &fh, 20, 10), false),
        nlmwire::Nlm4Stats::nlm4_granted,
        "the host reclaimed, yet its new lock waits for the grace period (lease 15 s)"
    );
    assert!(fx.server.logs_within(
        "NLM grace period over: every host that held locks reclaimed them",
        std::time::Duration::from_secs(5)
    ));
}

/// Another head for the identity of `fx`'s server: the same exports and arguments, on
/// `port`, and state directory `dir` of its own with the same handle key (the one thing
/// heads share besides the cluster: files keep their handles).
fn other_head(fx: &Fixture, dir: &std::path::Path, port: Option<u16>) -> ServerConfig {
    let old = fx.server.config();
    std::fs::copy(old.state_dir.join("fh.key"), dir.join("fh.key")).unwrap();
    ServerConfig {
        state_dir: dir.to_owned(),
        port,
        ..old
    }
}

/// A second head for the identity of `fx`'s server ([`other_head`]), started on a thread (it
/// waits while the identity is held), with when it got ready.
fn standby(
    fx: &Fixture,
    dir: &std::path::Path,
) -> std::thread::JoinHandle<(Server, std::time::Instant)> {
    let cfg = other_head(fx, dir, None);
    std::thread::spawn(move || {
        let s = Server::start(cfg);
        (s, std::time::Instant::now())
    })
}

#[test]
fn a_standby_serves_within_the_lease_after_the_active_head_dies() {
    let etcd = cluster();
    let url = etcd.url();
    let mut fx = Fixture::with_args(&[
        "--cluster",
        &url,
        "--node-id",
        "head-s",
        "--identity-ttl",
        "3",
    ]);
    let mut a = V4::session(fx.server.port, 1, "ha-standby-client");
    let dir = a.path_fh(&fx.export);
    let (fh, open) = a.open_ok(
        &dir,
        "f",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    a.write_all(&fh, &open, 0, b"written on the first head");
    let b_dir = tempfile::tempdir().unwrap();
    let b = standby(&fx, b_dir.path());
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(
        !b.is_finished(),
        "the standby served while the identity was held"
    );
    let killed = std::time::Instant::now();
    fx.server.crash();
    let (b, ready) = b.join().unwrap();
    let took = ready.duration_since(killed);
    eprintln!("failover: the standby was ready {took:?} after the kill (lease 3 s)");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    assert!(b
        .log_text()
        .contains("identity held by another head: standing by"));
    // the client reclaims its open on the new head
    let mut a = V4::connect(b.port, 1, "ha-standby-client");
    a.establish_with(8, false);
    a.reclaim_open(&fh, b"o", OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE)
        .ok("OPEN CLAIM_PREVIOUS on the standby");
}

#[test]
fn a_frozen_head_past_its_lease_never_answers_again() {
    let etcd = cluster();
    let url = etcd.url();
    let mut fx = Fixture::with_args(&[
        "--cluster",
        &url,
        "--node-id",
        "head-f",
        "--identity-ttl",
        "2",
    ]);
    let b_dir = tempfile::tempdir().unwrap();
    let b = standby(&fx, b_dir.path());
    let mut c = fx.server.client();
    assert!(matches!(c.null(), RpcReply::Success(_)));
    // frozen (SIGSTOP) past its lease: the standby takes over
    fx.server.signal(libc::SIGSTOP);
    let (b, _) = b.join().unwrap();
    let mut on_b = b.client();
    assert!(matches!(on_b.null(), RpcReply::Success(_)));
    // thawed, the old head answers nothing: its fence ran out on its own clock, and it exits
    fx.server.signal(libc::SIGCONT);
    c.set_read_timeout(std::time::Duration::from_secs(3));
    let xid = c.send_call(nfs3wire::NFS3_PROGRAM, nfs3wire::NFS_V3, 0, &());
    assert!(
        c.read_record().is_err(),
        "the frozen head answered call {xid} after another head took its identity over"
    );
    let mut exited = false;
    for _ in 0..100 {
        if !fx.server.is_running() {
            exited = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        exited,
        "the old head is still running: {}",
        fx.server.log_text()
    );
    assert!(fx
        .server
        .log_text()
        .contains("identity lost: this head stops answering"));
    assert!(matches!(on_b.null(), RpcReply::Success(_)));
}

#[test]
fn a_clean_stop_hands_the_identity_over_at_once() {
    let etcd = cluster();
    let url = etcd.url();
    // a long lease: a standby that waited for it to run out would take 10 s
    let mut fx = Fixture::with_args(&[
        "--cluster",
        &url,
        "--node-id",
        "head-c",
        "--identity-ttl",
        "10",
    ]);
    let b_dir = tempfile::tempdir().unwrap();
    let b = standby(&fx, b_dir.path());
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        !b.is_finished(),
        "the standby served while the identity was held"
    );
    // rnfsctl cluster: this head serves the identity, which etcd shows held by it
    match fx.server.admin(admin::Request::Cluster) {
        admin::Response::Cluster {
            node_id,
            revision,
            serving,
            service_address,
            identities,
            ..
        } => {
            assert_eq!(node_id, "head-c");
            assert!(serving && revision > 0 && service_address.is_none());
            let me = identities.iter().find(|i| i.id == "head-c").unwrap();
            assert_eq!(me.revision, revision);
            assert!(me
                .holder
                .as_deref()
                .is_some_and(|h| h.ends_with(&format!("pid {}", fx.server.pid()))));
            assert!((1..=10).contains(&me.lease_ttl_secs), "{me:?}");
        }
        other => panic!("rnfsctl cluster: {other:?}"),
    }
    let stopped = std::time::Instant::now();
    assert!(fx.server.stop().success());
    let (b, ready) = b.join().unwrap();
    let took = ready.duration_since(stopped);
    eprintln!("hand-over: the standby was ready {took:?} after SIGTERM (lease 10 s)");
    assert!(
        took < std::time::Duration::from_secs(5),
        "the standby waited for the lease: {took:?}"
    );
    assert!(fx.server.log_text().contains("identity released"));
    let mut c = b.client();
    assert!(matches!(c.null(), RpcReply::Success(_)));
}

/// Active/active: three identities, each with its own export, served by three machines with no
/// idle standby (m1 serves `aa-1`; m2 serves `aa-2` and stands by for `aa-1`; m3 serves
/// `aa-3`). When m1 dies its identity moves to m2, whose grace period holds back new state on
/// `aa-1`'s export only: the other identities' clients open new files meanwhile, and `aa-1`'s
/// client reclaims on m2.
#[test]
fn an_identity_moves_to_a_machine_serving_another_and_only_its_clients_wait() {
    let etcd = cluster();
    let url = etcd.url();
    let start =
        |id: &str| Fixture::with_args(&["--cluster", &url, "--node-id", id, "--identity-ttl", "3"]);
    let mut m1 = start("aa-1");
    let m2 = start("aa-2");
    let m3 = start("aa-3");
    let both = OPEN4_SHARE_ACCESS_BOTH;
    let none = OPEN4_SHARE_DENY_NONE;
    let create = || OpenHow::Unchecked(Sattr::mode(0o644));
    let mut on1 = V4::session(m1.server.port, 1, "aa-client-1");
    let dir1 = on1.path_fh(&m1.export);
    let (fh1, open1) = on1.open_ok(&dir1, "kept", "o", both, none, create());
    on1.write_all(&fh1, &open1, 0, b"identity aa-1");
    let mut on2 = V4::session(m2.server.port, 1, "aa-client-2");
    let dir2 = on2.path_fh(&m2.export);
    let mut on3 = V4::session(m3.server.port, 1, "aa-client-3");
    let dir3 = on3.path_fh(&m3.export);
    // m2's standby for aa-1: waits while m1 holds it
    let standby_dir = tempfile::tempdir().unwrap();
    let taker = standby(&m1, standby_dir.path());
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(!taker.is_finished(), "aa-1 served twice");
    let killed = std::time::Instant::now();
    m1.server.crash();
    let (new1, ready) = taker.join().unwrap();
    eprintln!(
        "aa-1 served on m2 {:?} after m1 died",
        ready.duration_since(killed)
    );
    // aa-1 is in its grace period: a new client's new file waits ...
    let mut fresh = V4::session(new1.port, 1, "aa-client-new");
    let r = fresh.open(&dir1, "new", "o", both, none, create());
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_GRACE,
        "a new OPEN on aa-1 in its grace"
    );
    // ... while the other identities' clients go on making new state
    for (c, dir, name) in [(&mut on2, &dir2, "during-2"), (&mut on3, &dir3, "during-3")] {
        let (fh, sid) = c.open_ok(dir, name, "o", both, none, create());
        c.write_all(&fh, &sid, 0, name.as_bytes());
    }
    // aa-1's client reclaims its open on m2 and its file is there
    let mut back = V4::connect(new1.port, 1, "aa-client-1");
    back.establish_with(8, false);
    let sid = back
        .reclaim_open(&fh1, b"o", both, none)
        .ok("OPEN CLAIM_PREVIOUS on aa-1's new head")
        .open_stateid();
    let r = back
        .call(Ops::new().putfh(&fh1).read(&sid, 0, 64))
        .ok("READ on aa-1's new head");
    assert_eq!(
        &payload(&r.get(NfsOpnum4::OP_READ).read().data)[..],
        b"identity aa-1"
    );
    assert!(matches!(m2.server.client().null(), RpcReply::Success(_)));
    assert!(matches!(m3.server.client().null(), RpcReply::Success(_)));
    // the cluster counted aa-1's claims: m1's, then m2's takeover; the others' once
    for (id, want) in [("aa-1", 2u64), ("aa-2", 1), ("aa-3", 1)] {
        let s = Etcd::new(EtcdConfig {
            endpoints: etcd.endpoints(),
            prefix: format!("/rnfs/id/{id}"),
            timeout: std::time::Duration::from_secs(5),
        })
        .unwrap();
        let rows = s.load(Table::new("cluster")).unwrap();
        assert_eq!(
            rows,
            vec![(b"claims".to_vec(), want.to_be_bytes().to_vec())],
            "{id}"
        );
    }
    // every head sees each identity's grace period, as its holder published it in etcd
    let graces = |on: &Server| match on.admin(admin::Request::Cluster) {
        admin::Response::Cluster { identities, .. } => identities
            .into_iter()
            .map(|i| (i.id, i.grace.map(|(running, _)| running)))
            .collect::<std::collections::BTreeMap<_, _>>(),
        other => panic!("rnfsctl cluster: {other:?}"),
    };
    let wait_for = |on: &Server, want: [(&str, Option<bool>); 3]| {
        let want: std::collections::BTreeMap<String, Option<bool>> =
            want.iter().map(|(i, g)| (i.to_string(), *g)).collect();
        let t = std::time::Instant::now();
        loop {
            let got = graces(on);
            if got == want {
                return;
            }
            assert!(
                t.elapsed().as_secs() < 10,
                "grace as published: {got:?}, want {want:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    };
    wait_for(
        &m3.server,
        [
            ("aa-1", Some(true)),
            ("aa-2", Some(false)),
            ("aa-3", Some(false)),
        ],
    );
    // aa-1's one client done reclaiming: its grace ends, and every head sees it
    back.call(Ops::new().reclaim_complete(false))
        .ok("RECLAIM_COMPLETE");
    wait_for(
        &m2.server,
        [
            ("aa-1", Some(false)),
            ("aa-2", Some(false)),
            ("aa-3", Some(false)),
        ],
    );
}

/// Moves this thread, and the processes it starts from now on, into a network namespace of
/// its own (the test's devices and addresses vanish with it).
#[allow(unsafe_code)]
fn enter_new_network_namespace() {
    // SAFETY: unshare(2) with CLONE_NEWNET only changes the calling thread's network
    // namespace; no memory is involved.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(
        rc,
        0,
        "unshare(CLONE_NEWNET) (needs root): {}",
        std::io::Error::last_os_error()
    );
}

fn sh(cmd: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_service_address_follows_the_identity() {
    enter_new_network_namespace();
    // one device per head, as two machines' interfaces on one link
    sh(
        "ip link set lo up && ip link add rnfs-a type veth peer name rnfs-b && \
        ip link set rnfs-a up && ip link set rnfs-b up",
    );
    let has = |dev: &str| sh(&format!("ip -o addr show dev {dev}")).contains("10.77.0.100/24");
    let etcd = cluster();
    let url = etcd.url();
    let events = tempfile::NamedTempFile::new().unwrap();
    let hook = format!(
        "echo \"$RNFS_EVENT $RNFS_NODE_ID $RNFS_SERVICE_ADDRESS\" >> {}",
        events.path().display()
    );
    let mut fx = Fixture::with_args(&[
        "--cluster",
        &url,
        "--node-id",
        "head-v",
        "--identity-ttl",
        "3",
        "--service-address",
        "10.77.0.100/24@rnfs-a",
        "--takeover-cmd",
        &hook,
    ]);
    assert!(has("rnfs-a"), "{}", fx.server.log_text());
    assert!(matches!(
        fx.server.admin(admin::Request::Cluster),
        admin::Response::Cluster { service_address: Some(a), .. } if a == "10.77.0.100/24@rnfs-a"
    ));
    // the same head again, listening on every address: clients come by the service address
    let port = fx.server.port;
    let cfg = ServerConfig {
        host: Some([0, 0, 0, 0].into()),
        port: Some(port),
        metrics: true,
        ..fx.server.config()
    };
    fx.server.restart_with(cfg);
    let m = http_get(fx.server.metrics.expect("metrics endpoint"), "/metrics");
    let value = |m: &str, name: &str| -> f64 {
        m.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in\n{m}"))
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(value(&m, "rnfs_cluster_serving"), 1.0);
    assert!(value(&m, "rnfs_cluster_claim_revision") > 0.0);
    assert!(
        value(&m, "rnfs_store_calls_total") >= 1.0,
        "the client records were read"
    );
    assert!(
        m.contains("rnfs_store_errors_total{kind=\"unavailable\"} 0"),
        "{m}"
    );
    let service = std::net::SocketAddr::from(([10, 77, 0, 100], port));
    assert!(matches!(
        RpcClient::connect_to(service).null(),
        RpcReply::Success(_)
    ));
    // a standby on the other device takes over when the active head dies
    let b_dir = tempfile::tempdir().unwrap();
    let mut b_cfg = other_head(&fx, b_dir.path(), Some(port));
    for a in b_cfg.args.iter_mut() {
        if a == "10.77.0.100/24@rnfs-a" {
            *a = "10.77.0.100/24@rnfs-b".into();
        }
    }
    let b = std::thread::spawn(move || Server::start(b_cfg));
    std::thread::sleep(std::time::Duration::from_secs(1));
    fx.server.crash();
    // the dead machine's address goes with it (here: what a fencing agent does)
    sh("ip addr del 10.77.0.100/24 dev rnfs-a");
    let mut b = b.join().unwrap();
    assert!(has("rnfs-b"), "{}", b.log_text());
    // the standby stood by from its start until the dead head's lease ran out
    let m = http_get(b.metrics.expect("metrics endpoint"), "/metrics");
    assert!(
        value(&m, "rnfs_cluster_standby_milliseconds") >= 1000.0,
        "{m}"
    );
    assert!(matches!(
        RpcClient::connect_to(service).null(),
        RpcReply::Success(_)
    ));
    // a clean stop takes the address down
    assert!(b.stop().success());
    assert!(!has("rnfs-b"), "{}", b.log_text());
    let got = std::fs::read_to_string(events.path()).unwrap();
    assert_eq!(
        got.lines().collect::<Vec<_>>(),
        [
            "claimed head-v 10.77.0.100/24@rnfs-a",
            "released head-v 10.77.0.100/24@rnfs-a",
            "claimed head-v 10.77.0.100/24@rnfs-a",
            "claimed head-v 10.77.0.100/24@rnfs-b",
            "released head-v 10.77.0.100/24@rnfs-b",
        ]
    );
}

/// The pNFS metadata server's map is in etcd under the identity: the head that takes the
/// identity over (a state directory of its own) finds where each file's data lives and serves
/// it from the same data servers; the data servers keep serving throughout.
#[test]
fn the_pnfs_map_in_etcd_serves_placed_files_after_a_takeover() {
    use common::pnfs::{create, v3_read_all, Cluster};
    let etcd = cluster();
    let url = etcd.url();
    let mut cl = Cluster::new(
        "rw,insecure,pnfs",
        2,
        &["--cluster", &url, "--node-id", "mds-a"],
    );
    let mut c = V4::session(cl.mds.server.port, 2, "pnfs-ha");
    let root = c.path_fh(&cl.mds.export);
    let (fh, sid) = create(&mut c, &root, "placed");
    // written through the MDS: it goes to the file's copies on both data servers
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    c.write_all(&fh, &sid, 0, &data);
    c.close_ok(&fh, &sid);
    let s = Etcd::new(EtcdConfig {
        endpoints: etcd.endpoints(),
        prefix: "/rnfs/id/mds-a".into(),
        timeout: std::time::Duration::from_secs(5),
    })
    .unwrap();
    let rows = s.load(Table::new("pnfs_files")).unwrap();
    assert_eq!(rows.len(), 1, "the map's row is not in etcd");
    assert!(!cl.mds.server.config().state_dir.join("pnfs.redb").exists());
    for i in 0..2 {
        assert_eq!(cl.ds_files(i).len(), 1, "no copy on data server {i}");
    }

    cl.mds.server.crash();
    let other = tempfile::tempdir().unwrap();
    let port = cl.mds.server.port;
    let cfg = other_head(&cl.mds, other.path(), Some(port));
    cl.mds.server.start_again(cfg);
    // the new head reads the file from the data servers by the map it found in etcd (its own
    // export holds no data of a placed file)
    assert_eq!(v3_read_all(port, &cl.mds.export, "placed"), data);
    assert_eq!(s.load(Table::new("pnfs_files")).unwrap().len(), 1);
}

/// Identities own disjoint trees: a head of another identity that would export the same
/// directory, or one inside it, does not start (two heads would grant conflicting locks); one
/// with a tree of its own serves beside the first (active/active: each identity on its head).
#[test]
fn another_identity_may_not_export_a_tree_an_identity_serves() {
    let etcd = cluster();
    let url = etcd.url();
    let fx = Fixture::with_args(&["--cluster", &url, "--node-id", "tree-a"]);
    let sub = fx.export.join("inside");
    std::fs::create_dir(&sub).unwrap();
    let run = |dir: &std::path::Path, id: &str| {
        let state = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rnfsd"))
            .args(["--listen", "127.0.0.1:0", "--no-portmap", "--no-nlm"])
            .arg("--state-dir")
            .arg(state.path())
            .arg("--export")
            .arg(dir)
            .args(["--cluster", &url, "--node-id", id, "--identity-ttl", "2"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
    };
    for dir in [&fx.export, &sub] {
        let log = run(dir, "tree-b");
        assert!(
            log.contains("cannot serve these exports") && log.contains("tree-a"),
            "{}: {log}",
            dir.display()
        );
    }
    // a tree of its own: served, beside tree-a's
    let b = Fixture::with_args(&["--cluster", &url, "--node-id", "tree-b"]);
    let (mut c, root) = b.connect();
    c.create_ok(&root, "beside", 0o644);
    let (mut c, root) = fx.connect();
    c.create_ok(&root, "first", 0o644);
    // moving tree-a's tree to tree-c (rnfsctl cluster-release): refused while a head holds
    // tree-a, done once its heads stopped
    let release = || {
        b.server.admin(admin::Request::ClusterRelease {
            id: "tree-a".into(),
        })
    };
    match release() {
        admin::Response::Error { message } => assert!(message.contains("held by"), "{message}"),
        other => panic!("released a held identity's exports: {other:?}"),
    }
    let mut fx = fx;
    assert!(fx.server.stop().success());
    match release() {
        admin::Response::Released { id, exports } => {
            assert_eq!(id, "tree-a");
            assert!(exports.iter().all(|(i, _)| i != "tree-a"), "{exports:?}");
            assert!(exports.iter().any(|(i, _)| i == "tree-b"), "{exports:?}");
        }
        other => panic!("cluster-release: {other:?}"),
    }
    let state = tempfile::tempdir().unwrap();
    let c3 = Server::start(ServerConfig {
        state_dir: state.path().to_owned(),
        exports: vec![sub.clone()],
        args: ["--cluster", &url, "--node-id", "tree-c"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    });
    let mut c = c3.client();
    assert!(matches!(c.null(), RpcReply::Success(_)));
    assert!(!c3.log_text().contains("cannot serve these exports"));
}
