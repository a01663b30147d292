//! Running file-system calls with the caller's identity.
//!
//! Each worker thread switches its own fsuid, fsgid and supplementary groups (raw per-thread
//! syscalls) to the caller's before touching the file system, so the kernel applies the same
//! permission checks it would for a local user. The last identity is remembered per thread and
//! only changed when a call's differs: a thread that calls the backend keeps the last caller's
//! identity afterwards, so only dedicated worker threads should call it.

use std::cell::RefCell;

use crate::sys;

/// A caller's identity after export squashing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Creds {
    /// File-system user id.
    pub uid: u32,
    /// File-system group id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

impl Creds {
    /// The superuser.
    pub fn root() -> Self {
        Self {
            uid: 0,
            gid: 0,
            groups: Vec::new(),
        }
    }

    /// Whether the caller is in group `gid` (primary or supplementary).
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }
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

/// Makes `c` the identity of the current thread's file-system calls.
pub fn assume(c: &Creds) {
    if !can_switch() {
        return;
    }
    CURRENT.with(|cur| {
        let mut cur = cur.borrow_mut();
        if cur.as_ref() == Some(c) {
            return;
        }
        // Groups first: after fsuid leaves 0 the thread keeps CAP_SETGID, but do the
        // privileged part while plainly privileged.
        if sys::set_thread_groups(&c.groups).is_err() {
            tracing::warn!(uid = c.uid, "setgroups failed");
        }
        sys::set_thread_fsgid(c.gid);
        sys::set_thread_fsuid(c.uid);
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
