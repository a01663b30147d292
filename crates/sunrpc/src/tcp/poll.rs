//! Looking for a connection's next call without sleeping: where waking a sleeping thread (and
//! a halted CPU) is slow, a call that comes meanwhile is answered without that wake.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::TcpStream;

/// Looks for bytes on `sock` for up to `budget` without sleeping: a non-blocking peek, then a
/// yield to the CPU's other threads and to the runtime's other tasks (whose worker meanwhile
/// polls for I/O without sleeping), in a loop; ends when there are bytes, or the peer closed, or the socket has an error (which
/// the read that follows reports), or at `budget`. The read that follows finds the socket
/// ready. Where waking a sleeping CPU is slow (a virtual CPU halted into its hypervisor takes
/// tens of microseconds) a client's next call is then answered without that wake.
pub(super) async fn poll_for_call(sock: &TcpStream, budget: Duration) -> Option<bool> {
    /// Readers polling now: one at a time, so that polling costs at most one CPU and other
    /// connections' readers sleep as without it (randread at 32 in flight over 8 connections,
    /// each polling: 0.82x).
    static POLLING: AtomicUsize = AtomicUsize::new(0);
    struct Turn;
    impl Drop for Turn {
        fn drop(&mut self) {
            POLLING.fetch_sub(1, Ordering::AcqRel);
        }
    }
    if POLLING
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return None;
    }
    let _turn = Turn;
    let until = std::time::Instant::now() + budget;
    let mut probe = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    loop {
        let peeked = socket2::SockRef::from(sock)
            .recv_with_flags(&mut probe, libc::MSG_PEEK | libc::MSG_DONTWAIT);
        match peeked {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            _ => return Some(true),
        }
        // other threads first: on the CPU this one holds, a call thread or the client may wait
        // to run (the server confined to one CPU: first writes at 0.41x Chimera without it)
        std::thread::yield_now();
        tokio::task::yield_now().await;
        // after the yields, which on a busy CPU can outlast the budget many times: what came
        // meanwhile was not found by polling, and counts as a miss
        if std::time::Instant::now() >= until {
            return Some(false);
        }
    }
}

/// When a connection's reader looks for the next call of a client that has one call at a time
/// in flight ([`TcpConfig::lone_poll`]): each time its reply went out, unless polls found
/// nothing lately; then it skips 1, 3, 7 ... 63 such chances before polling again, so a
/// client that thinks longer than the budget costs the server almost no polling.
pub(super) struct LonePoll {
    budget: Duration,
    misses: u32,
    skip: u32,
}

impl LonePoll {
    pub(super) fn new(budget: Duration) -> Self {
        Self {
            budget,
            misses: 0,
            skip: 0,
        }
    }

    /// After a reply: polls `sock` when the call answered was alone (`lone`) and polls found
    /// calls lately; whether this poll found the next one (None: no poll).
    pub(super) async fn after_reply(&mut self, sock: &TcpStream, lone: bool) -> Option<bool> {
        if !self.wants(lone) {
            return None;
        }
        let hit = poll_for_call(sock, self.budget).await?;
        self.polled(hit);
        Some(hit)
    }

    /// Whether to poll now, `lone` telling whether the call just answered was the only one.
    pub(super) fn wants(&mut self, lone: bool) -> bool {
        if !lone || self.budget.is_zero() {
            return false;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    /// The poll found the next call (or the connection's end), or nothing within the budget.
    pub(super) fn polled(&mut self, hit: bool) {
        if hit {
            self.misses = 0;
        } else {
            self.misses = (self.misses + 1).min(6);
            self.skip = (1 << self.misses) - 1;
        }
    }
}
