//! Running file-system calls with the caller's identity.
//!
//! Each worker thread switches its own fsuid, fsgid and supplementary groups (raw per-thread
//! syscalls) to the caller's before touching the file system, and drops CAP_SYS_RESOURCE for
//! any caller but root, so the kernel applies the same permission checks, disk quotas and
//! reserved blocks it would for a local user. The last identity is remembered per thread and
//! only changed when a call's differs: a thread that calls the backend keeps the last caller's
//! identity afterwards, so only dedicated worker threads should call it.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use crate::sys;

/// A caller's identity after export squashing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Creds {
    /// File-system user id.
    pub uid: u32,
    /// File-system group id.
    pub gid: u32,
    /// Supplementary groups: shared, since the identity is copied for each object a call
    /// resolves.
    pub groups: Arc<[u32]>,
}

impl Creds {
    /// The superuser.
    pub fn root() -> Self {
        Self {
            uid: 0,
            gid: 0,
            groups: no_groups(),
        }
    }

    /// Whether the caller is in group `gid` (primary or supplementary).
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
}

/// An empty group list, shared (an `Arc` of nothing still allocates its counts).
pub fn no_groups() -> Arc<[u32]> {
    static NONE: OnceLock<Arc<[u32]>> = OnceLock::new();
    NONE.get_or_init(|| Arc::from([])).clone()
}

thread_local! {
    static CURRENT: RefCell<Option<Creds>> = const { RefCell::new(None) };
}

/// Whether this process can switch identities at all (it runs as root). Asked once: every
/// file-system call checks it.
pub fn can_switch() -> bool {
    static ROOT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ROOT.get_or_init(|| sys::geteuid() == 0)
}

thread_local! {
    /// Whether calls tried without blocking on this thread may switch its identity.
    static SWITCH_IN_TRY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Lets calls tried without blocking on this thread switch its identity (see
/// [`crate::nowait`]): for the threads of a runtime that never touches a device that checks
/// its opener's credentials, which RDMA's verbs and CM devices do. Elsewhere a try that
/// would switch gives up.
pub fn allow_switch_in_try() {
    SWITCH_IN_TRY.with(|s| s.set(true));
}

/// Makes `c` the identity of the current thread's file-system calls. Inside a try without
/// blocking ([`crate::nowait`]) it never switches: the try gives up instead (what it does next
/// is dropped and the call runs again on a worker), because the threads that try calls also
/// post RDMA work, which the kernel refuses once their credentials changed.
pub fn assume(c: &Creds) {
    if !can_switch() {
        return;
    }
    CURRENT.with(|cur| {
        let mut cur = cur.borrow_mut();
        if cur.as_ref() == Some(c) {
            return;
        }
        if crate::nowait::active() && !SWITCH_IN_TRY.with(std::cell::Cell::get) {
            crate::nowait::give_up();
            return;
        }
        // Groups first: after fsuid leaves 0 the thread keeps CAP_SETGID, but do the
        // privileged part while plainly privileged.
        if sys::set_thread_groups(&c.groups).is_err() {
            tracing::warn!(uid = c.uid, "setgroups failed");
        }
        sys::set_thread_fsgid(c.gid);
        sys::set_thread_fsuid(c.uid);
        // a thread starts as root; quotas and root's reserved blocks hold for everyone else
        let was_root = cur.as_ref().is_none_or(|p| p.uid == 0);
        if was_root != (c.uid == 0) {
            if let Err(e) = sys::set_thread_sys_resource(c.uid == 0) {
                tracing::warn!(uid = c.uid, error = %e, "capset failed");
            }
        }
        *cur = Some(c.clone());
    });
}

/// Runs `f` with the thread's file-system identity set to `c`.
pub fn with_creds<T>(c: &Creds, f: impl FnOnce() -> T) -> T {
    assume(c);
    f()
}

/// Runs `f` as the superuser (opening handles needs CAP_DAC_READ_SEARCH, which a non-zero fsuid
/// drops).
pub fn as_root<T>(f: impl FnOnce() -> T) -> T {
    thread_local! {
        static ROOT: Creds = Creds::root();
    }
    ROOT.with(assume);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current() -> Option<Creds> {
        CURRENT.with(|c| c.borrow().clone())
    }

    #[test]
    fn a_try_without_blocking_gives_up_instead_of_switching() {
        let caller = Creds {
            uid: 4242,
            gid: 4242,
            groups: vec![7].into(),
        };
        let before = current();
        let tried = crate::nowait::without_blocking(|| assume(&caller));
        assert_eq!(
            current(),
            before,
            "a try never changes the thread's identity"
        );
        if can_switch() {
            assert_eq!(tried, None, "the try gave up, to run again on a worker");
            // On a thread allowed to block the switch happens; a later try as the same caller
            // needs no switch and goes on.
            std::thread::spawn(move || {
                assume(&caller);
                assert_eq!(current(), Some(caller.clone()));
                assert_eq!(
                    crate::nowait::without_blocking(|| assume(&caller)),
                    Some(())
                );
                let root = Creds::root();
                assert_eq!(crate::nowait::without_blocking(|| assume(&root)), None);
                assert_eq!(current(), Some(caller));
            })
            .join()
            .expect("worker thread");
            // a thread whose tries may switch (no RDMA device on it) switches in a try
            std::thread::spawn(move || {
                allow_switch_in_try();
                let other = Creds {
                    uid: 4343,
                    gid: 4343,
                    groups: no_groups(),
                };
                assert_eq!(crate::nowait::without_blocking(|| assume(&other)), Some(()));
                assert_eq!(current(), Some(other));
            })
            .join()
            .expect("switching thread");
        } else {
            // Without the right to switch, identities are never changed: nothing to give up.
            assert_eq!(tried, Some(()));
        }
    }

    /// This thread's effective capabilities, from /proc.
    fn effective_caps() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let hex = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .unwrap()
            .trim();
        u64::from_str_radix(hex, 16).unwrap()
    }

    #[test]
    fn a_user_is_held_to_quotas_and_root_is_not() {
        const SYS_RESOURCE: u64 = 1 << 24;
        if !can_switch() || effective_caps() & SYS_RESOURCE == 0 {
            // not root: nothing switches (the suite runs as root, as the server does)
            assert!(!can_switch() || effective_caps() & SYS_RESOURCE == 0);
            return;
        }
        std::thread::spawn(|| {
            let user = Creds {
                uid: 4243,
                gid: 4243,
                groups: no_groups(),
            };
            assume(&user);
            assert_eq!(
                effective_caps() & SYS_RESOURCE,
                0,
                "a user keeps CAP_SYS_RESOURCE"
            );
            // another user: still without it
            assume(&Creds { uid: 4244, ..user });
            assert_eq!(effective_caps() & SYS_RESOURCE, 0);
            as_root(|| assert_ne!(effective_caps() & SYS_RESOURCE, 0, "root lost it"));
        })
        .join()
        .unwrap();
    }
}
