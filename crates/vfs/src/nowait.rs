//! Running a call on a thread that must not block: the thread that reads a connection.
//!
//! Handing each call to a worker thread costs a wake-up and a switch per call, as much as a
//! GETATTR of a cached file itself. A protocol layer may instead try a call that is cheap when
//! all it needs is in memory (its descriptor cached, its data in the page cache) inside
//! [`without_blocking`]: wherever the backend would have to wait (open a handle, read from
//! the disk) it gives up instead, and the call is run again on a worker thread. Only calls
//! that may be run again may be tried, since a try that gives up is thrown away: calls without
//! side effects, and WRITE, which is tried only where files live in memory (tmpfs) and gives
//! up before it writes anything (an NFSv4 operation after it in its COMPOUND that gives up
//! has the worker write the same bytes to the same place again).
//!
//! A try must not switch the thread's credentials (`cred::with_creds`): the threads that read
//! connections also post RDMA work, and the kernel refuses writes to the verbs device from a
//! thread whose credentials are not the very ones it was opened with (`ib_safe_file_access`
//! compares the pointers; switching back makes new ones), which stalls every RDMA connection
//! served from that thread. A LOOKUP tried here with the caller's credentials did exactly that
//! (session 7, reverted); `cred::assume` now gives up instead of switching inside a try.

use std::cell::Cell;

use crate::error::VfsError;

/// Largest READ or WRITE worth trying without blocking while other calls of its connection
/// wait behind it: a larger one there would hold them up (1 MiB READs tried on the reader
/// whatever waited took loopback sequential reads from 3.0 to 2.5 GB/s, 4 in flight on one
/// connection). One with nothing received behind it is tried whatever its size
/// (`sunrpc::CallContext::alone`): the hand-off to a worker is then pure cost.
pub const IO_MAX: u32 = 64 * 1024;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Calls may block.
    Normal,
    /// In [`without_blocking`]; nothing needed waiting so far.
    NoWait,
    /// In [`without_blocking`]; something would have waited.
    GaveUp,
}

thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Normal) };
}

/// Runs `f` where the backend must not wait for I/O; `None` when it would have (what `f`
/// returned then is dropped: run it again where blocking is allowed).
pub fn without_blocking<R>(f: impl FnOnce() -> R) -> Option<R> {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            MODE.with(|m| m.set(Mode::Normal));
        }
    }
    MODE.with(|m| m.set(Mode::NoWait));
    let _reset = Reset;
    let r = f();
    (MODE.with(Cell::get) == Mode::NoWait).then_some(r)
}

/// Whether the current call must not wait for I/O.
pub fn active() -> bool {
    MODE.with(Cell::get) != Mode::Normal
}

/// Whether the current call, not allowed to wait, gave up: what it did is to be undone.
pub fn given_up() -> bool {
    MODE.with(Cell::get) == Mode::GaveUp
}

/// Records that the current call would have to wait (or does something a try may not do);
/// the error makes it stop early (its result is dropped by [`without_blocking`]).
pub fn give_up() -> VfsError {
    MODE.with(|m| m.set(Mode::GaveUp));
    VfsError::Errno(libc::EAGAIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_try_that_gives_up_is_dropped_and_the_mode_ends() {
        assert!(!active());
        assert_eq!(without_blocking(|| active().then_some(1)), Some(Some(1)));
        assert!(!active());
        let r: Option<Result<(), VfsError>> = without_blocking(|| Err(give_up()));
        assert!(r.is_none());
        assert!(!active(), "the mode ends with the try");
        // a later try starts afresh
        assert_eq!(without_blocking(|| 2), Some(2));
    }
}
