//! Byte-range lock arithmetic, stateid checks and the state indexes under random changes.

use super::*;

fn lock(owner: &'static [u8], s: u64, e: u64, w: bool) -> Lock {
    Lock {
        client: 1,
        owner: Bytes::from_static(owner),
        start: s,
        end: e,
        write: w,
    }
}

#[test]
fn lock_conflicts_and_split() {
    let mut st = State::new();
    let f = file_n(2);
    st.add_lock(f, lock(b"a", 0, 100, true));
    assert!(st
        .lock_conflict(f, 1, &Bytes::from_static(b"b"), 50, 60, false)
        .is_some());
    assert!(st
        .lock_conflict(f, 1, &Bytes::from_static(b"b"), 100, 200, true)
        .is_none());
    assert!(st
        .lock_conflict(f, 1, &Bytes::from_static(b"a"), 0, 10, true)
        .is_none());
    st.remove_lock_range(f, 1, &Bytes::from_static(b"a"), 40, 60);
    let v = st.locks.on_file(f);
    assert_eq!(v.len(), 2);
    assert!(st
        .lock_conflict(f, 1, &Bytes::from_static(b"b"), 45, 55, true)
        .is_none());
    assert!(st
        .lock_conflict(f, 1, &Bytes::from_static(b"b"), 59, 61, true)
        .is_some());
}

#[test]
fn read_locks_share() {
    let mut st = State::new();
    let f = file_n(2);
    st.add_lock(f, lock(b"a", 0, u64::MAX, false));
    assert!(st
        .lock_conflict(f, 1, &Bytes::from_static(b"b"), 0, 10, false)
        .is_none());
    assert!(st
        .lock_conflict(f, 1, &Bytes::from_static(b"b"), 0, 10, true)
        .is_some());
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
