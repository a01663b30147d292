//! The grace period after a restart: which clients may reclaim, and their records on disk.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::db::ClientDb;

/// Reclaim after a restart: clients recorded on disk may reclaim their state during one lease,
/// which ends early once all of them sent RECLAIM_COMPLETE.
#[derive(Debug, Default)]
pub struct Grace {
    /// Confirmed client records on disk.
    db: Option<ClientDb>,
    /// Owners of clients confirmed before the restart, who may reclaim during grace.
    reclaimable: HashSet<Bytes>,
    /// Reclaimable owners that finished reclaiming (RECLAIM_COMPLETE).
    done: HashSet<Bytes>,
    /// End of the grace period, while it lasts.
    until: Option<Instant>,
}

impl Grace {
    /// The records in `db`; a grace period of `lease` when there are any.
    pub fn from_db(db: ClientDb, lease: Duration) -> Self {
        let mut g = Grace::default();
        match db.load() {
            Ok(rows) => {
                g.reclaimable = rows.into_iter().map(|(o, _)| Bytes::from(o)).collect();
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot read client records; no reclaim possible")
            }
        }
        if !g.reclaimable.is_empty() {
            tracing::info!(
                clients = g.reclaimable.len(),
                "grace period of one lease: clients may reclaim their state"
            );
            g.until = Some(Instant::now() + lease);
        }
        g.db = Some(db);
        g
    }

    /// When the grace period ends at the latest, while it runs.
    pub fn until(&self) -> Option<Instant> {
        self.until
    }

    /// The lease changes from `old` to `new`: so does a running grace period.
    pub fn set_lease(&mut self, old: Duration, new: Duration) {
        if let Some(until) = self.until.as_mut() {
            *until = *until - old + new;
        }
    }

    /// Whether the grace period is running; it ends when its time is up or every recorded
    /// client reclaimed, and then the records of those not back (not in `live`) go.
    pub fn running<'a>(&mut self, live: impl Iterator<Item = &'a Bytes>) -> bool {
        let Some(until) = self.until else {
            return false;
        };
        let all_done = self.reclaimable.iter().all(|o| self.done.contains(o));
        if Instant::now() < until && !all_done {
            return true;
        }
        self.until = None;
        let live: HashSet<&Bytes> = live.collect();
        for o in std::mem::take(&mut self.reclaimable) {
            if !live.contains(&o) {
                self.forget(&o);
            }
        }
        tracing::info!("grace period over");
        false
    }

    /// Whether `owner` held state before the restart and has not finished reclaiming.
    pub fn may_reclaim(&self, owner: &Bytes) -> bool {
        self.reclaimable.contains(owner) && !self.done.contains(owner)
    }

    /// `owner` finished reclaiming.
    pub fn reclaim_complete(&mut self, owner: &Bytes) {
        self.done.insert(owner.clone());
    }

    /// Removes `owner`'s record from the store (it holds nothing to reclaim any more): queued,
    /// made by the records' own thread, not under the state lock this runs under.
    pub fn forget(&self, owner: &Bytes) {
        if let Some(db) = &self.db {
            db.remove_later(owner);
        }
    }
}
