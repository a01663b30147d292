//! A server killed with SIGKILL and restarted lets NFSv4.1 clients reclaim their opens and
//! locks during the grace period, keeps others out until then, and refuses bogus reclaims.

mod common;

use common::nfs4_raw::*;
use common::*;

/// EXCHANGE_ID and CREATE_SESSION without RECLAIM_COMPLETE (a client about to reclaim).
fn session_without_reclaim_complete(port: u16, owner: &str) -> V4 {
    let mut c = V4::connect(port, 1, owner);
    c.establish_with(8, false);
    c
}

#[test]
fn opens_and_locks_are_reclaimed_after_sigkill() {
    let mut fx = Fixture::new();
    let mut a = V4::session(fx.server.port, 1, "reclaim-a");
    let dir = a.path_fh(&fx.export);
    let (fh, open) = a.open_ok(
        &dir,
        "held",
        "a-open",
        share::ACCESS_BOTH,
        share::DENY_WRITE,
        OpenHow::Unchecked(Sattr::mode(0o666)),
    );
    a.write_all(&fh, &open, 0, b"acknowledged before the crash");
    let locker = Locker::New {
        open_seqid: 0,
        open_stateid: open,
        lock_seqid: 0,
        clientid: a.clientid,
        owner: b"a-lock".to_vec(),
    };
    a.call(
        Ops::new()
            .putfh(&fh)
            .lock(lock_type::WRITE, 0, 100, &locker),
    )
    .ok("LOCK before the crash");

    fx.server.crash_and_restart();
    let port = fx.server.port;

    // A newcomer that never held state waits for the grace period.
    let mut b = V4::session(port, 1, "reclaim-b");
    let r = b.open(
        &dir,
        "held",
        "b-open",
        share::ACCESS_READ,
        share::DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(
        r.status,
        st::GRACE,
        "non-reclaim OPEN in grace: {}",
        r.summary()
    );
    // Nor may it pretend to reclaim.
    let r = b.call(Ops::new().putfh(&fh).open(
        0,
        share::ACCESS_READ,
        share::DENY_NONE,
        b.clientid,
        b"b-open",
        &OpenHow::NoCreate,
        &Claim::Previous(0),
    ));
    assert_eq!(r.status, st::RECLAIM_BAD, "bogus reclaim: {}", r.summary());

    // The old client comes back and reclaims its open and its lock.
    let mut a = session_without_reclaim_complete(port, "reclaim-a");
    let r = a
        .call(
            Ops::new()
                .putfh(&fh)
                .open(
                    0,
                    share::ACCESS_BOTH,
                    share::DENY_WRITE,
                    a.clientid,
                    b"a-open",
                    &OpenHow::NoCreate,
                    &Claim::Previous(0),
                )
                .getfh(),
        )
        .ok("OPEN CLAIM_PREVIOUS");
    let open = r.open_stateid();
    assert_eq!(r.fh(), fh);
    let locker = Locker::New {
        open_seqid: 0,
        open_stateid: open,
        lock_seqid: 0,
        clientid: a.clientid,
        owner: b"a-lock".to_vec(),
    };
    a.call(
        Ops::new()
            .putfh(&fh)
            .lock_with(true, lock_type::WRITE, 0, 100, &locker),
    )
    .ok("LOCK reclaim");
    a.call(Ops::new().reclaim_complete(false))
        .ok("RECLAIM_COMPLETE");

    // Grace is over (every recorded client finished): B opens, but the reclaimed share
    // reservation and lock still hold.
    let r = b.open(
        &dir,
        "held",
        "b-open",
        share::ACCESS_WRITE,
        share::DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(
        r.status,
        st::SHARE_DENIED,
        "reclaimed DENY_WRITE: {}",
        r.summary()
    );
    b.open_ok(
        &dir,
        "held",
        "b-open",
        share::ACCESS_READ,
        share::DENY_NONE,
        OpenHow::NoCreate,
    );
    let r = b.call(
        Ops::new()
            .putfh(&fh)
            .lockt(lock_type::READ, 10, 10, b.clientid, b"b-lock"),
    );
    assert_eq!(r.status, st::DENIED, "reclaimed lock: {}", r.summary());
    // Reclaims after the grace period are refused.
    let late = Locker::New {
        open_seqid: 0,
        open_stateid: open,
        lock_seqid: 0,
        clientid: a.clientid,
        owner: b"late".to_vec(),
    };
    let r = a.call(
        Ops::new()
            .putfh(&fh)
            .lock_with(true, lock_type::WRITE, 200, 10, &late),
    );
    assert_eq!(r.status, st::NO_GRACE, "late reclaim: {}", r.summary());
    // The data acknowledged before the crash is there.
    assert_eq!(
        std::fs::read(fx.export.join("held")).unwrap(),
        b"acknowledged before the crash"
    );
}

/// The Linux 4.0 client reclaims with PUTFH(file) + OPEN(CLAIM_PREVIOUS) + GETATTR: no GETFH,
/// so it has no handle to send OPEN_CONFIRM with. The reclaimed open must need no confirmation
/// (as with knfsd), and WRITE and a reclaiming LOCK work on it at once.
#[test]
fn v40_reclaimed_open_needs_no_confirm() {
    let mut fx = Fixture::new();
    let mut a = V4::v40(fx.server.port, "reclaim-v40");
    let dir = a.path_fh(&fx.export);
    let id = a.clientid;
    let r = a
        .compound(
            Ops::new()
                .putfh(&dir)
                .open(
                    0,
                    share::ACCESS_BOTH,
                    share::DENY_NONE,
                    id,
                    b"oo",
                    &OpenHow::Unchecked(Sattr::mode(0o644)),
                    &Claim::Null(b"f".to_vec()),
                )
                .getfh(),
        )
        .ok("OPEN");
    let fh = r.fh();
    let sid = r.open_stateid();
    a.compound(Ops::new().putfh(&fh).open_confirm(&sid, 1))
        .ok("OPEN_CONFIRM");

    fx.server.crash_and_restart();

    let mut a = V4::v40(fx.server.port, "reclaim-v40");
    let id = a.clientid;
    let r = a
        .compound(Ops::new().putfh(&fh).open(
            2,
            share::ACCESS_BOTH,
            share::DENY_NONE,
            id,
            b"oo",
            &OpenHow::NoCreate,
            &Claim::Previous(0),
        ))
        .ok("OPEN CLAIM_PREVIOUS");
    let Res::Open { rflags, .. } = r.get(op::OPEN).res else {
        panic!("OPEN: {:?}", r.results);
    };
    assert_eq!(rflags & 2, 0, "a reclaimed open asked for OPEN_CONFIRM");
    let open = r.open_stateid();
    a.compound(
        Ops::new()
            .putfh(&fh)
            .write(&open, 0, FILE_SYNC4, b"after the crash"),
    )
    .ok("WRITE with the reclaimed open");
    let locker = Locker::New {
        open_seqid: 3,
        open_stateid: open,
        lock_seqid: 0,
        clientid: id,
        owner: b"lo".to_vec(),
    };
    a.compound(
        Ops::new()
            .putfh(&fh)
            .lock_with(true, lock_type::WRITE, 0, 10, &locker),
    )
    .ok("LOCK reclaim");
    assert_eq!(
        std::fs::read(fx.export.join("f")).unwrap(),
        b"after the crash"
    );
}

#[test]
fn delegations_are_reclaimed_with_their_opens_after_a_restart() {
    let mut fx = Fixture::new();
    for name in ["r", "r2"] {
        std::fs::write(fx.export.join(name), b"x").unwrap();
        std::os::unix::fs::chown(fx.export.join(name), Some(TEST_UID), Some(TEST_UID)).unwrap();
    }
    let held = |a: &mut V4, dir: &[u8], name: &str, access: u32, how: OpenHow| {
        let r = a
            .open(dir, name, name, access, share::DENY_NONE, how)
            .ok(name);
        match r.get(op::OPEN).res {
            Res::Open { delegation, .. } => (r.fh(), delegation),
            _ => unreachable!(),
        }
    };
    let mut a = V4::connect(fx.server.port, 1, "deleg-reclaim-a");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);
    let want_write = share::ACCESS_BOTH | share::WANT_WRITE_DELEG;
    let (wfh, w) = held(
        &mut a,
        &dir,
        "w",
        want_write,
        OpenHow::Unchecked(Sattr::default()),
    );
    let (rfh, r) = held(&mut a, &dir, "r", share::ACCESS_READ, OpenHow::NoCreate);
    assert_eq!(
        (w, r),
        (2, 1),
        "a write and a read delegation before the restart"
    );
    let mut c = V4::connect(fx.server.port, 1, "deleg-reclaim-c");
    c.establish_back_channel(8);
    let (r2fh, r2) = held(&mut c, &dir, "r2", share::ACCESS_READ, OpenHow::NoCreate);
    assert_eq!(r2, 1);

    fx.server.crash_and_restart();
    let port = fx.server.port;
    let reclaim = |a: &mut V4, fh: &[u8], name: &str, access: u32, held: u32| {
        let id = a.clientid;
        let r = a
            .call(Ops::new().putfh(fh).open(
                0,
                access,
                share::DENY_NONE,
                id,
                name.as_bytes(),
                &OpenHow::NoCreate,
                &Claim::Previous(held),
            ))
            .ok(&format!("reclaim of {name}"));
        match r.get(op::OPEN).res {
            Res::Open {
                delegation,
                deleg,
                recall,
                ..
            } => (delegation, deleg, recall),
            _ => unreachable!(),
        }
    };

    // The holder comes back with its back channel: both delegations, to keep.
    let mut a = V4::connect(port, 1, "deleg-reclaim-a");
    a.establish_back_channel_to_reclaim(8);
    let (t, wdeleg, recall) = reclaim(&mut a, &wfh, "w", share::ACCESS_BOTH, 2);
    assert_eq!((t, recall), (2, false), "write delegation reclaimed");
    let (t, _, recall) = reclaim(&mut a, &rfh, "r", share::ACCESS_READ, 1);
    assert_eq!((t, recall), (1, false), "read delegation reclaimed");
    let wdeleg = wdeleg.expect("the write delegation's stateid");
    a.call(Ops::new().putfh(&wfh).write(&wdeleg, 0, 2, b"kept"))
        .ok("WRITE under the reclaimed delegation");

    // One that comes back without a back channel gets its delegation to return at once.
    let mut c = session_without_reclaim_complete(port, "deleg-reclaim-c");
    let (t, cdeleg, recall) = reclaim(&mut c, &r2fh, "r2", share::ACCESS_READ, 1);
    assert_eq!((t, recall), (1, true), "to be returned: no back channel");
    c.call(
        Ops::new()
            .putfh(&r2fh)
            .delegreturn(&cdeleg.expect("the read delegation's stateid")),
    )
    .ok("DELEGRETURN");
}
