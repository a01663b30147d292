//! The grace period after a restart: while any protocol's clients may still reclaim, new locks
//! (and NFSv4 opens) wait, so that no one takes what a client held before the restart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
    parts: Mutex<Parts>,
    /// Whether any part may run: every OPEN and LOCK asks, nearly always after the grace
    /// period, without the mutex.
    any: AtomicBool,
}

/// The parts running, and how long the grace period runs or ran.
#[derive(Debug, Default)]
struct Parts {
    list: Vec<(Participant, Instant)>,
    /// When the running grace period began.
    began: Option<Instant>,
    /// How long the last one that ended ran.
    last: Option<Duration>,
}

impl Parts {
    /// Drops the parts `gone` says are over; notes the end when none is left.
    fn drop_where(&mut self, gone: impl Fn(&(Participant, Instant)) -> bool) -> bool {
        self.list.retain(|p| !gone(p));
        if self.list.is_empty() {
            if let Some(b) = self.began.take() {
                self.last = Some(b.elapsed());
            }
        }
        !self.list.is_empty()
    }
}

impl GracePeriod {
    /// `who` needs a grace period until `until` (a later call moves its end).
    pub fn begin(&self, who: Participant, until: Instant) {
        let mut p = self.parts.lock();
        p.list.retain(|(w, _)| *w != who);
        p.list.push((who, until));
        p.began.get_or_insert_with(Instant::now);
        self.any.store(true, Ordering::Release);
    }

    /// `who`'s part is over (its clients all reclaimed, or none may).
    pub fn end(&self, who: Participant) {
        if !self.any.load(Ordering::Acquire) {
            return;
        }
        let mut p = self.parts.lock();
        let any = p.drop_where(|(w, _)| *w == who);
        self.any.store(any, Ordering::Release);
    }

    /// Whether any participant's part runs now.
    pub fn running(&self) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let now = Instant::now();
        let mut p = self.parts.lock();
        let any = p.drop_where(|(_, until)| now >= *until);
        self.any.store(any, Ordering::Release);
        any
    }

    /// Whether `who`'s own part runs now (its clients may reclaim).
    pub fn running_for(&self, who: Participant) -> bool {
        let now = Instant::now();
        self.parts
            .lock()
            .list
            .iter()
            .any(|(w, until)| *w == who && now < *until)
    }

    /// How long the last grace period that ended ran (from its first part's start to its
    /// last part's end), for the metrics; None before one ended.
    pub fn last_duration(&self) -> Option<Duration> {
        self.running();
        self.parts.lock().last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_grace_periods_length_is_kept_once_every_part_ended() {
        let g = GracePeriod::default();
        assert_eq!(g.last_duration(), None);
        let far = Instant::now() + Duration::from_secs(60);
        g.begin(Participant::Nfs4, far);
        g.begin(Participant::Nlm, Instant::now() + Duration::from_millis(30));
        std::thread::sleep(Duration::from_millis(50));
        assert!(g.running(), "NFSv4's part still runs");
        assert_eq!(g.last_duration(), None);
        g.end(Participant::Nfs4);
        assert!(!g.running());
        let d = g.last_duration().expect("ended");
        assert!(
            d >= Duration::from_millis(50) && d < Duration::from_secs(5),
            "{d:?}"
        );
        // the next one is measured afresh
        g.begin(Participant::Nlm, far);
        g.end(Participant::Nlm);
        assert!(g.last_duration().expect("ended") < Duration::from_millis(50));
    }
}
