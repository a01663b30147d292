//! The grace period after a restart: while any protocol's clients may still reclaim, new locks
//! (and NFSv4 opens) wait, so that no one takes what a client held before the restart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// A protocol that runs a grace period of its own length and may end it early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Participant {
    /// NFSv4 clients recorded before the restart (ends early once all sent RECLAIM_COMPLETE).
    Nfs4,
    /// NLM hosts monitored before the restart (notified at start, reclaim during it).
    Nlm,
}

/// The grace period every protocol sees: running while any participant's part runs.
#[derive(Debug, Default)]
pub struct GracePeriod {
    parts: Mutex<Vec<(Participant, Instant)>>,
    /// Whether any part may run: every OPEN and LOCK asks, nearly always after the grace
    /// period, without the mutex.
    any: AtomicBool,
}

impl GracePeriod {
    /// `who` needs a grace period until `until` (a later call moves its end).
    pub fn begin(&self, who: Participant, until: Instant) {
        let mut p = self.parts.lock();
        p.retain(|(w, _)| *w != who);
        p.push((who, until));
        self.any.store(true, Ordering::Release);
    }

    /// `who`'s part is over (its clients all reclaimed, or none may).
    pub fn end(&self, who: Participant) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let mut p = self.parts.lock();
        p.retain(|(w, _)| *w != who);
        self.any.store(!p.is_empty(), Ordering::Release);
    }

    /// Whether any participant's part runs now.
    pub fn running(&self) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let now = Instant::now();
        let mut p = self.parts.lock();
        p.retain(|(_, until)| now < *until);
        self.any.store(!p.is_empty(), Ordering::Release);
        !p.is_empty()
    }

    /// Whether `who`'s own part runs now (its clients may reclaim).
    pub fn running_for(&self, who: Participant) -> bool {
        let now = Instant::now();
        self.parts
            .lock()
            .iter()
            .any(|(w, until)| *w == who && now < *until)
    }
}
