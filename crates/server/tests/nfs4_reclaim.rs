//! A server killed with SIGKILL and restarted lets NFSv4.1 clients reclaim their opens and
//! locks during the grace period, keeps others out until then, and refuses bogus reclaims.

mod common;

use common::nfs4_raw::*;
use common::*;
use nfs4wire::*;

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
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_WRITE,
        OpenHow::Unchecked(Sattr::mode(0o666)),
    );
    a.write_all(&fh, &open, 0, b"acknowledged before the crash");
    let locker = new_lock_owner(0, &open, 0, a.clientid, b"a-lock");
    a.call(
        Ops::new()
            .putfh(&fh)
            .lock(NfsLockType4::WriteLt, 0, 100, &locker),
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
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_GRACE,
        "non-reclaim OPEN in grace: {}",
        r.summary()
    );
    // Nor may it pretend to reclaim.
    let r = b.call(Ops::new().putfh(&fh).open(
        0,
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        b.clientid,
        b"b-open",
        &OpenHow::NoCreate,
        &OpenClaim4::ClaimPrevious(OpenDelegationType4::OpenDelegateNone),
    ));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_RECLAIM_BAD,
        "bogus reclaim: {}",
        r.summary()
    );

    // The old client comes back and reclaims its open and its lock.
    let mut a = session_without_reclaim_complete(port, "reclaim-a");
    let r = a
        .reclaim_open(
            &fh,
            b"a-open",
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_WRITE,
        )
        .ok("OPEN CLAIM_PREVIOUS");
    let open = r.open_stateid();
    assert_eq!(r.fh(), fh);
    let locker = new_lock_owner(0, &open, 0, a.clientid, b"a-lock");
    a.call(
        Ops::new()
            .putfh(&fh)
            .lock_with(true, NfsLockType4::WriteLt, 0, 100, &locker),
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
        OPEN4_SHARE_ACCESS_WRITE,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_SHARE_DENIED,
        "reclaimed DENY_WRITE: {}",
        r.summary()
    );
    b.open_ok(
        &dir,
        "held",
        "b-open",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    let r =
        b.call(
            Ops::new()
                .putfh(&fh)
                .lockt(NfsLockType4::ReadLt, 10, 10, b.clientid, b"b-lock"),
        );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_DENIED,
        "reclaimed lock: {}",
        r.summary()
    );
    // Reclaims after the grace period are refused.
    let late = new_lock_owner(0, &open, 0, a.clientid, b"late");
    let r = a.call(
        Ops::new()
            .putfh(&fh)
            .lock_with(true, NfsLockType4::WriteLt, 200, 10, &late),
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_NO_GRACE,
        "late reclaim: {}",
        r.summary()
    );
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
                    OPEN4_SHARE_ACCESS_BOTH,
                    OPEN4_SHARE_DENY_NONE,
                    id,
                    b"oo",
                    &OpenHow::Unchecked(Sattr::mode(0o644)),
                    &OpenClaim4::ClaimNull("f".into()),
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
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            id,
            b"oo",
            &OpenHow::NoCreate,
            &OpenClaim4::ClaimPrevious(OpenDelegationType4::OpenDelegateNone),
        ))
        .ok("OPEN CLAIM_PREVIOUS");
    let rflags = r.get(NfsOpnum4::OP_OPEN).open().rflags;
    assert_eq!(
        rflags & OPEN4_RESULT_CONFIRM,
        0,
        "a reclaimed open asked for OPEN_CONFIRM"
    );
    let open = r.open_stateid();
    a.compound(
        Ops::new()
            .putfh(&fh)
            .write(&open, 0, StableHow4::FileSync4, b"after the crash"),
    )
    .ok("WRITE with the reclaimed open");
    let locker = new_lock_owner(3, &open, 0, id, b"lo");
    a.compound(
        Ops::new()
            .putfh(&fh)
            .lock_with(true, NfsLockType4::WriteLt, 0, 10, &locker),
    )
    .ok("LOCK reclaim");
    assert_eq!(
        std::fs::read(fx.export.join("f")).unwrap(),
        b"after the crash"
    );
}

#[test]
fn delegations_are_reclaimed_with_their_opens_after_a_restart() {
    use OpenDelegationType4::{OpenDelegateRead, OpenDelegateWrite};
    let mut fx = Fixture::new();
    for name in ["r", "r2"] {
        std::fs::write(fx.export.join(name), b"x").unwrap();
        std::os::unix::fs::chown(fx.export.join(name), Some(TEST_UID), Some(TEST_UID)).unwrap();
    }
    let held = |a: &mut V4, dir: &[u8], name: &str, access: u32, how: OpenHow| {
        let r = a
            .open(dir, name, name, access, OPEN4_SHARE_DENY_NONE, how)
            .ok(name);
        (
            r.fh(),
            r.get(NfsOpnum4::OP_OPEN).open().delegation.discriminant(),
        )
    };
    let mut a = V4::connect(fx.server.port, 1, "deleg-reclaim-a");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);
    let want_write = OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG;
    let (wfh, w) = held(
        &mut a,
        &dir,
        "w",
        want_write,
        OpenHow::Unchecked(Sattr::default()),
    );
    let (rfh, r) = held(
        &mut a,
        &dir,
        "r",
        OPEN4_SHARE_ACCESS_READ,
        OpenHow::NoCreate,
    );
    assert_eq!(
        (w, r),
        (OpenDelegateWrite, OpenDelegateRead),
        "a write and a read delegation before the restart"
    );
    let mut c = V4::connect(fx.server.port, 1, "deleg-reclaim-c");
    c.establish_back_channel(8);
    let (r2fh, r2) = held(
        &mut c,
        &dir,
        "r2",
        OPEN4_SHARE_ACCESS_READ,
        OpenHow::NoCreate,
    );
    assert_eq!(r2, OpenDelegateRead);

    fx.server.crash_and_restart();
    let port = fx.server.port;
    let reclaim = |a: &mut V4, fh: &[u8], name: &str, access: u32, held| {
        let id = a.clientid;
        let r = a
            .call(Ops::new().putfh(fh).open(
                0,
                access,
                OPEN4_SHARE_DENY_NONE,
                id,
                name.as_bytes(),
                &OpenHow::NoCreate,
                &OpenClaim4::ClaimPrevious(held),
            ))
            .ok(&format!("reclaim of {name}"));
        let delegation = &r.get(NfsOpnum4::OP_OPEN).open().delegation;
        let (deleg, recall) = match delegated(delegation) {
            Some((sid, recall)) => (Some(sid.clone()), recall),
            None => (None, false),
        };
        (delegation.discriminant(), deleg, recall)
    };

    // The holder comes back with its back channel: both delegations, to keep.
    let mut a = V4::connect(port, 1, "deleg-reclaim-a");
    a.establish_back_channel_to_reclaim(8);
    let (t, wdeleg, recall) = reclaim(
        &mut a,
        &wfh,
        "w",
        OPEN4_SHARE_ACCESS_BOTH,
        OpenDelegateWrite,
    );
    assert_eq!(
        (t, recall),
        (OpenDelegateWrite, false),
        "write delegation reclaimed"
    );
    let (t, _, recall) = reclaim(&mut a, &rfh, "r", OPEN4_SHARE_ACCESS_READ, OpenDelegateRead);
    assert_eq!(
        (t, recall),
        (OpenDelegateRead, false),
        "read delegation reclaimed"
    );
    let wdeleg = wdeleg.expect("the write delegation's stateid");
    a.call(
        Ops::new()
            .putfh(&wfh)
            .write(&wdeleg, 0, StableHow4::FileSync4, b"kept"),
    )
    .ok("WRITE under the reclaimed delegation");

    // One that comes back without a back channel gets its delegation to return at once.
    let mut c = session_without_reclaim_complete(port, "deleg-reclaim-c");
    let (t, cdeleg, recall) = reclaim(
        &mut c,
        &r2fh,
        "r2",
        OPEN4_SHARE_ACCESS_READ,
        OpenDelegateRead,
    );
    assert_eq!(
        (t, recall),
        (OpenDelegateRead, true),
        "to be returned: no back channel"
    );
    c.call(
        Ops::new()
            .putfh(&r2fh)
            .delegreturn(&cdeleg.expect("the read delegation's stateid")),
    )
    .ok("DELEGRETURN");
}
