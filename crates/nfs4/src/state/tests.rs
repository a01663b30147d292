//! Byte-range lock arithmetic, stateid checks and the state indexes under random changes.

use super::*;

fn owner(o: &'static [u8]) -> Bytes {
    Bytes::from_static(o)
}

/// The range arithmetic is the lock table's (crates/locks); here: State's NFSv4 view of it.
#[test]
fn locks_go_through_the_shared_table() {
    let mut st = State::new();
    let f = file_n(2);
    assert!(st.add_lock(f, 1, &owner(b"a"), 0, 100, true).is_ok());
    let c = st.add_lock(f, 2, &owner(b"b"), 50, 60, false).unwrap_err();
    assert!(c.owner.same(&nfs4_owner(1, &owner(b"a"))) && c.write);
    assert!(st.lock_conflict(f, 1, &owner(b"a"), 0, 10, true).is_none());
    // An NLM lock in the same table conflicts with NFSv4 requests.
    let nlm = Owner::Nlm {
        host: 9,
        svid: 1,
        oh: owner(b"1@nfs3client"),
    };
    let want = Lock {
        owner: nlm,
        start: 200,
        end: 300,
        write: true,
    };
    assert!(matches!(
        st.lock_manager().lock(f, want, false),
        LockOutcome::Granted
    ));
    assert!(st
        .lock_conflict(f, 1, &owner(b"a"), 250, 251, false)
        .is_some());
    st.remove_lock_range(f, 1, &owner(b"a"), 40, 60);
    assert!(st.lock_conflict(f, 2, &owner(b"b"), 45, 55, true).is_none());
    assert!(st.owner_has_locks(f, 1, &owner(b"a")));
    assert!(st.lock_owner_holds(1, &owner(b"a")));
    // A client's expiry drops its locks, not NLM's.
    st.expire(1);
    assert!(!st.lock_owner_holds(1, &owner(b"a")));
    assert_eq!(st.lock_manager().totals().nlm_locks, 1);
}

#[test]
fn another_protocols_grace_holds_nfs4_locks_not_opens() {
    let mut st = State::new();
    assert!(!st.in_grace());
    st.lock_manager().grace().begin(
        locks::Participant::Nlm,
        Instant::now() + Duration::from_secs(60),
    );
    assert!(st.in_grace());
    // new locks wait for the NLM hosts' reclaims; new opens do not (as with knfsd's lockd;
    // NFSv4's own grace holding opens back: nfs4_reclaim.rs)
    assert!(!st.opens_in_grace());
    st.lock_manager().grace().end(locks::Participant::Nlm);
    assert!(!st.in_grace());
}

/// Two instances started within one second (a quick restart, two heads of one identity) see
/// each other's ids as stale.
#[test]
fn each_instance_has_its_own_number() {
    let (a, b) = (State::new(), State::new());
    assert_ne!(a.boot, b.boot);
    let mut a = a;
    let sid = Stateid {
        seqid: 1,
        other: a.new_other(),
    };
    assert!(!a.of_earlier_instance(&sid));
    assert!(b.of_earlier_instance(&sid));
}

#[test]
fn stateid_seqid_rules() {
    let mut st = State::new();
    let other = st.new_other();
    st.states.insert(
        other,
        StateObj::Lock(LockState {
            client: 1,
            owner: Bytes::new(),
            file: file_n(1),
            open: [0; 12],
            seqid: 3,
        }),
    );
    let sid = |seqid| Stateid { seqid, other };
    assert!(st.check(&sid(3), 1).is_ok());
    assert!(st.check(&sid(0), 1).is_ok());
    assert_eq!(
        st.check(&sid(2), 1).err(),
        Some(Nfsstat4::NFS4ERR_OLD_STATEID)
    );
    assert_eq!(
        st.check(&sid(4), 1).err(),
        Some(Nfsstat4::NFS4ERR_BAD_STATEID)
    );
    let mut stale = sid(3);
    stale.other[0] ^= 1;
    assert_eq!(
        st.check(&stale, 0).err(),
        Some(Nfsstat4::NFS4ERR_STALE_STATEID)
    );
}

fn file_n(fileid: u64) -> FileKey {
    FileKey {
        fsid: 1,
        fileid,
        generation: 7,
    }
}

fn some_state(client: u64, file: FileKey, deleg: bool, write: bool) -> StateObj {
    if deleg {
        return StateObj::Deleg(Deleg {
            client,
            file,
            fh: Bytes::new(),
            seqid: 1,
            recalled: None,
            recall_sent: false,
            revoked: false,
            write,
            granted_change: 0,
            shown: None,
        });
    }
    StateObj::Lock(LockState {
        client,
        owner: Bytes::new(),
        file,
        open: [0; 12],
        seqid: 1,
    })
}

proptest::proptest! {
    /// Any sequence of inserts (new or replacing), revocations and removes leaves the file,
    /// client and revocation indexes listing exactly the stored states, and the per-file and
    /// per-client views agree with a scan of everything.
    #[test]
    fn state_indexes_follow_every_change(
        ops in proptest::collection::vec(
            (0u8..12, 0u64..4, 0u64..5, 0u8..3, proptest::bool::ANY, proptest::bool::ANY),
            0..200,
        )
    ) {
        let mut st = States::default();
        for (id, client, file, kind, deleg, write) in ops {
            let other = [id; 12];
            match kind {
                0 => drop(st.remove(&other)),
                1 => st.insert(other, some_state(client, file_n(file), deleg, write)),
                _ => st.revoke(&other),
            }
            proptest::prop_assert!(st.indexes_agree());
            let delegs = st.values().any(|v| matches!(v, StateObj::Deleg(_)));
            proptest::prop_assert_eq!(st.any_delegation(), delegs);
        }
        for f in 0..5 {
            let mut a: Vec<[u8; 12]> = st.on_file(file_n(f)).map(|(k, _)| k).collect();
            let mut b: Vec<[u8; 12]> = st
                .all()
                .filter(|(_, v)| v.file() == file_n(f))
                .map(|(k, _)| *k)
                .collect();
            a.sort();
            b.sort();
            proptest::prop_assert_eq!(a, b);
        }
        for c in 0..4 {
            let n = st.values().filter(|v| v.client() == c).count();
            proptest::prop_assert_eq!(st.of_client(c).count(), n);
            proptest::prop_assert_eq!(st.client_has_state(c), n > 0);
            let revoked = st
                .of_client(c)
                .any(|(_, x)| matches!(x, StateObj::Deleg(d) if d.revoked));
            proptest::prop_assert_eq!(st.has_revoked(c), revoked);
        }
    }
}
