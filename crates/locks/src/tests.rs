use std::sync::{Arc, Mutex};

use bytes::Bytes;
use proptest::prelude::*;

use crate::*;

fn file(n: u64) -> FileKey {
    FileKey {
        fsid: 1,
        fileid: n,
        generation: 0,
    }
}

fn v4(client: u64, owner: &'static [u8]) -> Owner {
    Owner::Nfs4 {
        client,
        owner: Bytes::from_static(owner),
    }
}

fn nlm(host: u64, svid: u32) -> Owner {
    Owner::Nlm {
        host,
        svid,
        oh: Bytes::from(format!("{svid}@host{host}")),
    }
}

fn lk(owner: &Owner, start: u64, end: u64, write: bool) -> Lock {
    Lock {
        owner: owner.clone(),
        start,
        end,
        write,
    }
}

/// A manager that records what it announces.
fn recording() -> (LockManager, Arc<Mutex<Vec<Granted>>>) {
    let m = LockManager::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    assert!(m.on_grant(Box::new(move |g| s.lock().unwrap().extend(g))));
    (m, seen)
}

fn granted_ids(seen: &Arc<Mutex<Vec<Granted>>>) -> Vec<WaiterId> {
    seen.lock().unwrap().drain(..).map(|g| g.id).collect()
}

#[test]
fn ranges_split_and_merge_per_owner() {
    let m = LockManager::default();
    let (a, b) = (v4(1, b"a"), v4(1, b"b"));
    assert!(matches!(
        m.lock(file(1), lk(&a, 0, 100, true), false),
        LockOutcome::Granted
    ));
    assert!(m.test(file(1), &lk(&b, 50, 60, false)).is_some());
    assert!(m.test(file(1), &lk(&b, 100, 200, true)).is_none());
    assert!(
        m.test(file(1), &lk(&a, 0, 10, true)).is_none(),
        "own locks never conflict"
    );
    m.unlock(file(1), &a, 40, 60);
    assert_eq!(
        m.on_file(file(1)).len(),
        2,
        "the lock splits around the hole"
    );
    assert!(m.test(file(1), &lk(&b, 45, 55, true)).is_none());
    assert!(m.test(file(1), &lk(&b, 59, 61, true)).is_some());
    // Filling the hole with the same type joins the three pieces again.
    m.lock(file(1), lk(&a, 40, 60, true), false);
    let v = m.on_file(file(1));
    assert_eq!((v.len(), v[0].start, v[0].end), (1, 0, 100));
    // A read lock over part of a write lock replaces that part (the new type wins).
    m.lock(file(1), lk(&a, 10, 20, false), false);
    assert!(m.test(file(1), &lk(&b, 12, 13, false)).is_none());
    assert!(m.test(file(1), &lk(&b, 12, 13, true)).is_some());
    m.unlock(file(1), &a, 0, u64::MAX);
    assert!(m.on_file(file(1)).is_empty());
    assert_eq!(m.totals(), Totals::default());
}

#[test]
fn protocols_conflict_with_each_other() {
    let m = LockManager::default();
    let (n, f) = (nlm(7, 100), v4(3, b"owner"));
    assert!(matches!(
        m.lock(file(1), lk(&n, 0, 10, true), false),
        LockOutcome::Granted
    ));
    match m.lock(file(1), lk(&f, 5, 6, false), false) {
        LockOutcome::Denied(c) => assert!(c.owner.same(&n) && c.write),
        o => panic!("an NFSv4 read over an NLM write lock: {o:?}"),
    }
    assert!(matches!(
        m.lock(file(1), lk(&f, 10, u64::MAX, true), false),
        LockOutcome::Granted
    ));
    assert!(m
        .test(file(1), &lk(&n, 20, 21, false))
        .is_some_and(|c| c.owner.same(&f)));
    assert_eq!(
        m.totals(),
        Totals {
            nfs4_locks: 1,
            nlm_locks: 1,
            waiters: 0
        }
    );
}

#[test]
fn nlm_owners_are_host_and_process_not_owner_handle() {
    let m = LockManager::default();
    let a = nlm(1, 10);
    let a_other_oh = Owner::Nlm {
        host: 1,
        svid: 10,
        oh: Bytes::from_static(b"different"),
    };
    m.lock(file(1), lk(&a, 0, 10, true), false);
    assert!(m.test(file(1), &lk(&a_other_oh, 0, 10, true)).is_none());
    assert!(
        m.test(file(1), &lk(&nlm(1, 11), 0, 10, true)).is_some(),
        "another process"
    );
    assert!(
        m.test(file(1), &lk(&nlm(2, 10), 0, 10, true)).is_some(),
        "another host"
    );
}

#[test]
fn blocked_requests_are_granted_in_order_when_the_range_frees() {
    let (m, seen) = recording();
    let (holder, w1, w2) = (v4(1, b"h"), nlm(1, 1), nlm(2, 2));
    m.lock(file(1), lk(&holder, 0, 100, true), false);
    let LockOutcome::Blocked(id1) = m.lock(file(1), lk(&w1, 0, 50, true), true) else {
        panic!("first waiter")
    };
    let LockOutcome::Blocked(id2) = m.lock(file(1), lk(&w2, 10, 20, true), true) else {
        panic!("second waiter")
    };
    assert_ne!(id1, id2);
    // A retransmitted blocked request is the same waiter.
    assert!(
        matches!(m.lock(file(1), lk(&w1, 0, 50, true), true), LockOutcome::Blocked(i) if i == id1)
    );
    assert_eq!(m.totals().waiters, 2);
    // Freeing part of the range that nobody waits for grants nothing.
    m.unlock(file(1), &holder, 60, 100);
    assert!(granted_ids(&seen).is_empty());
    // Freeing the rest grants the oldest waiter; the second then waits for it.
    m.unlock(file(1), &holder, 0, 60);
    assert_eq!(granted_ids(&seen), vec![id1]);
    assert!(m.owner_has(file(1), &w1));
    m.unlock(file(1), &w1, 0, 50);
    assert_eq!(granted_ids(&seen), vec![id2]);
    assert_eq!(m.totals().waiters, 0);
    assert_eq!(m.totals().nlm_locks, 1);
}

#[test]
fn an_older_waiter_holds_back_a_younger_conflicting_one() {
    let (m, seen) = recording();
    let (holder, w1, w2) = (v4(1, b"h"), nlm(1, 1), nlm(2, 2));
    m.lock(file(1), lk(&holder, 0, 10, true), false);
    let LockOutcome::Blocked(id1) = m.lock(file(1), lk(&w1, 0, 10, true), true) else {
        panic!()
    };
    let LockOutcome::Blocked(_) = m.lock(file(1), lk(&w2, 0, 10, false), true) else {
        panic!()
    };
    m.unlock(file(1), &holder, 0, 10);
    assert_eq!(
        granted_ids(&seen),
        vec![id1],
        "the younger reader waits for the writer"
    );
    assert_eq!(m.totals().waiters, 1);
}

#[test]
fn cancel_withdraws_a_waiter() {
    let (m, seen) = recording();
    let (holder, w) = (v4(1, b"h"), nlm(1, 1));
    m.lock(file(1), lk(&holder, 0, 10, true), false);
    let LockOutcome::Blocked(id) = m.lock(file(1), lk(&w, 0, 10, true), true) else {
        panic!("a waiter")
    };
    assert!(
        m.cancel(file(1), &lk(&w, 0, 11, true)).is_none(),
        "only the exact request"
    );
    assert_eq!(m.cancel(file(1), &lk(&w, 0, 10, true)), Some(id));
    assert!(m.cancel(file(1), &lk(&w, 0, 10, true)).is_none());
    m.unlock(file(1), &holder, 0, 10);
    assert!(granted_ids(&seen).is_empty());
    assert_eq!(m.totals(), Totals::default());
    assert!(m.on_file(file(1)).is_empty());
}

#[test]
fn a_retried_request_that_succeeds_replaces_its_waiter() {
    let (m, seen) = recording();
    let (holder, w) = (nlm(9, 9), nlm(1, 1));
    m.lock(file(1), lk(&holder, 0, 10, true), false);
    m.lock(file(1), lk(&w, 0, 10, true), true);
    // The holder's lock goes without a wake-up (as when its host is dropped) ...
    m.remove_owners(|o| o.same(&holder));
    // ... and the waiter was granted by that removal.
    assert_eq!(granted_ids(&seen).len(), 1);
    // A fresh request of another waiter that can be granted right away leaves no waiter.
    let other = nlm(2, 2);
    m.lock(file(2), lk(&holder, 0, 1, true), false);
    m.lock(file(2), lk(&other, 0, 1, true), true);
    m.unlock(file(2), &holder, 0, 1);
    assert_eq!(granted_ids(&seen).len(), 1);
    assert!(matches!(
        m.lock(file(2), lk(&other, 0, 1, true), true),
        LockOutcome::Granted
    ));
    assert_eq!(m.totals().waiters, 0);
}

#[test]
fn waiters_are_bounded_per_host_and_in_all() {
    let m = LockManager::new(Limits {
        waiters_total: 3,
        waiters_per_host: 2,
    });
    let holder = v4(1, b"h");
    m.lock(file(1), lk(&holder, 0, u64::MAX, true), false);
    for svid in 0..2 {
        assert!(matches!(
            m.lock(file(1), lk(&nlm(1, svid), 0, 1, true), true),
            LockOutcome::Blocked(_)
        ));
    }
    assert!(matches!(
        m.lock(file(1), lk(&nlm(1, 5), 0, 1, true), true),
        LockOutcome::TooManyWaiters
    ));
    assert!(matches!(
        m.lock(file(1), lk(&nlm(2, 5), 0, 1, true), true),
        LockOutcome::Blocked(_)
    ));
    assert!(matches!(
        m.lock(file(1), lk(&nlm(3, 5), 0, 1, true), true),
        LockOutcome::TooManyWaiters
    ));
    // A host's requests going frees its share of the queue.
    m.remove_owners(|o| matches!(o, Owner::Nlm { host: 1, .. }));
    assert_eq!(m.totals().waiters, 1);
    assert!(matches!(
        m.lock(file(1), lk(&nlm(3, 5), 0, 1, true), true),
        LockOutcome::Blocked(_)
    ));
}

#[test]
fn removing_a_client_frees_its_locks_for_waiters() {
    let (m, seen) = recording();
    let (gone, w) = (v4(5, b"x"), nlm(1, 1));
    m.lock(file(1), lk(&gone, 0, 10, true), false);
    m.lock(file(2), lk(&gone, 0, 10, false), false);
    let LockOutcome::Blocked(id) = m.lock(file(1), lk(&w, 5, 6, false), true) else {
        panic!()
    };
    m.remove_owners(|o| matches!(o, Owner::Nfs4 { client: 5, .. }));
    assert!(!m.held_by(&gone));
    assert_eq!(granted_ids(&seen), vec![id]);
    assert!(m.on_file(file(2)).is_empty());
}

#[test]
fn grace_runs_while_any_part_does() {
    use std::time::{Duration, Instant};
    let g = GracePeriod::default();
    assert!(!g.running());
    g.begin(Participant::Nfs4, Instant::now() + Duration::from_secs(60));
    g.begin(Participant::Nlm, Instant::now() + Duration::from_secs(60));
    g.end(Participant::Nfs4);
    assert!(g.running() && g.running_for(Participant::Nlm));
    assert!(!g.running_for(Participant::Nfs4));
    g.begin(Participant::Nlm, Instant::now());
    assert!(!g.running(), "a part whose time is up is over");
}

#[derive(Debug, Clone)]
enum Op {
    Lock(u8, u64, u64, bool, bool),
    Unlock(u8, u64, u64),
    Cancel(u8, u64, u64, bool),
    Drop(u8),
}

fn owner_of(i: u8) -> Owner {
    if i.is_multiple_of(2) {
        v4(u64::from(i / 2), b"o")
    } else {
        nlm(u64::from(i), u32::from(i))
    }
}

fn op() -> impl Strategy<Value = Op> {
    let range = (0u64..40, 1u64..20).prop_map(|(s, l)| (s, if l == 19 { u64::MAX } else { s + l }));
    prop_oneof![
        (0u8..6, range.clone(), any::<bool>(), any::<bool>())
            .prop_map(|(o, (s, e), w, b)| Op::Lock(o, s, e, w, b)),
        (0u8..6, range.clone()).prop_map(|(o, (s, e))| Op::Unlock(o, s, e)),
        (0u8..6, range, any::<bool>()).prop_map(|(o, (s, e), w)| Op::Cancel(o, s, e, w)),
        (0u8..6).prop_map(Op::Drop),
    ]
}

proptest! {
    /// Whatever happens, no two owners hold conflicting locks, an owner's own locks never
    /// overlap, and the waiter count matches the waiters there are.
    #[test]
    fn held_locks_never_conflict(ops in proptest::collection::vec(op(), 1..60)) {
        let (m, seen) = recording();
        let mut waiting = std::collections::HashSet::new();
        for op in ops {
            match op {
                Op::Lock(o, s, e, w, b) => {
                    if let LockOutcome::Blocked(id) = m.lock(file(1), lk(&owner_of(o), s, e, w), b) {
                        waiting.insert(id);
                    }
                }
                Op::Unlock(o, s, e) => m.unlock(file(1), &owner_of(o), s, e),
                Op::Cancel(o, s, e, w) => { m.cancel(file(1), &lk(&owner_of(o), s, e, w)); }
                Op::Drop(o) => { let gone = owner_of(o); m.remove_owners(|x| x.same(&gone)); }
            }
            for g in granted_ids(&seen) {
                prop_assert!(waiting.remove(&g), "granted {g:?}, which never waited or was granted before");
            }
            prop_assert!(m.totals().waiters <= waiting.len());
            let locks = m.on_file(file(1));
            for (i, a) in locks.iter().enumerate() {
                for b in &locks[i + 1..] {
                    let overlap = a.start < b.end && b.start < a.end;
                    if a.owner.same(&b.owner) {
                        prop_assert!(!overlap, "an owner's locks overlap: {a:?} {b:?}");
                    } else {
                        prop_assert!(!(overlap && (a.write || b.write)), "conflict: {a:?} {b:?}");
                    }
                }
            }
        }
    }
}

struct FakeNfs4 {
    deny_all: bool,
    released: Mutex<Vec<FileKey>>,
}

impl OtherState for FakeNfs4 {
    fn share_conflict(&self, _file: FileKey, _access: u32, _deny: u32) -> bool {
        self.deny_all
    }
    fn release_expired(&self, file: FileKey) {
        self.released.lock().unwrap().push(file);
    }
}

fn share(host: u64, oh: &'static [u8], access: u32, deny: u32) -> Share {
    Share {
        host,
        oh: Bytes::from_static(oh),
        access,
        deny,
    }
}

#[test]
fn share_reservations_conflict_across_hosts_and_with_nfs4_opens() {
    let m = LockManager::default();
    // read access, denying write
    assert!(m.share(file(1), share(1, b"a", 1, 2)));
    assert!(
        !m.share(file(1), share(2, b"b", 2, 0)),
        "a writer is denied"
    );
    assert!(
        m.share(file(1), share(2, b"b", 1, 0)),
        "another reader is not"
    );
    assert!(
        !m.share(file(1), share(2, b"c", 1, 1)),
        "denying read to a reader"
    );
    // NFSv4 OPENs ask the table: the same bits.
    assert!(m.share_conflict(file(1), 2, 0));
    assert!(!m.share_conflict(file(1), 1, 0));
    assert!(!m.share_conflict(file(2), 3, 3));
    // The holder replaces its own reservation; unshare and host removal drop them.
    assert!(m.share(file(1), share(1, b"a", 1, 0)));
    assert!(!m.share_conflict(file(1), 2, 0));
    m.unshare(file(1), 2, b"b");
    m.remove_owners(|o| matches!(o, Owner::Nlm { host: 1, .. }));
    assert!(
        m.share(file(1), share(3, b"x", 3, 3)),
        "nothing left in the way"
    );
    // NFSv4's opens are asked too, through the registered view.
    let nfs4: Arc<dyn OtherState> = Arc::new(FakeNfs4 {
        deny_all: true,
        released: Mutex::new(Vec::new()),
    });
    assert!(m.set_nfs4(Arc::downgrade(&nfs4)));
    assert!(!m.share(file(9), share(1, b"a", 1, 0)));
}

#[test]
fn expired_nfs4_holders_are_released_through_the_view() {
    let m = LockManager::default();
    let fake = Arc::new(FakeNfs4 {
        deny_all: false,
        released: Mutex::new(Vec::new()),
    });
    let view: Arc<dyn OtherState> = fake.clone();
    m.set_nfs4(Arc::downgrade(&view));
    m.release_expired(file(4));
    assert_eq!(*fake.released.lock().unwrap(), vec![file(4)]);
    drop(view);
    drop(fake);
    m.release_expired(file(5)); // NFSv4 gone: nothing to ask
}
