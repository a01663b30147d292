//! NFSv3 locking: the Network Lock Manager, version 4 (program 100021; the Open Group's XNFS
//! and RFC 1813's NLM4 notes) and the Network Status Monitor (program 100024, version 1) of
//! this server.
//!
//! NLM's locks live in the table NFSv4 uses (`crates/locks`), so an NFSv3 client's lock
//! conflicts with an NFSv4 client's and the other way round. A blocked request waits in that
//! table's queue; when the range frees, whichever protocol freed it, the lock is taken for the
//! waiter and its host is called back (NLM4_GRANTED to its lock manager, found through its
//! port mapper); a grant the host refuses or never answers is released.
//!
//! This server is its own status monitor. Hosts that take locks are recorded durably
//! (`monitor.rs`) before their first lock is granted; at start the state number moves on, each
//! recorded host is told (SM_NOTIFY to its status monitor) so that its lock manager reclaims,
//! and a grace period shared with NFSv4 lets the reclaims in first. A host whose own status
//! monitor says it restarted loses its locks.

#![forbid(unsafe_code)]

mod grant;
mod hosts;
pub mod monitor;
mod nsm;
pub mod recovery;
mod service;
mod view;

use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use locks::{LockManager, Participant};
use parking_lot::Mutex;
use vfs::Vfs;

pub use grant::GrantPolicy;
use hosts::Hosts;
use monitor::{HostRecord, MonitorDb};
pub use nsm::Nsm;
pub use service::Nlm4;
pub use view::HostView;

/// Decodes a procedure's whole argument: bytes left over are garbage too.
fn decode<A: xdr::Decode>(mut d: xdr::Decoder) -> Result<A, sunrpc::ProcError> {
    let a = A::decode(&mut d)?;
    if d.remaining() != 0 {
        return Err(sunrpc::ProcError::GarbageArgs);
    }
    Ok(a)
}

/// Settings of the lock manager.
#[derive(Debug, Clone)]
pub struct NlmConfig {
    /// Length of the grace period after a restart when hosts held locks before it.
    pub grace: Duration,
    /// Hosts known at once (more are refused with `nlm4_denied_nolocks`).
    pub max_hosts: usize,
    /// How blocked requests' grants are delivered.
    pub grants: GrantPolicy,
    /// A host that has held nothing for this long is forgotten (and its record removed).
    pub host_idle: Duration,
}

impl Default for NlmConfig {
    fn default() -> Self {
        NlmConfig {
            grace: Duration::from_secs(90),
            max_hosts: 4096,
            grants: GrantPolicy::default(),
            host_idle: Duration::from_secs(120),
        }
    }
}

/// Counters for metrics.
#[derive(Debug, Default)]
pub struct Counters {
    /// NLM4_GRANTED calls the host accepted.
    pub grants_sent: AtomicU64,
    /// Grants released because the host refused them or never answered.
    pub grants_failed: AtomicU64,
    /// SM_NOTIFY calls answered by a recorded host after a restart.
    pub notifications_sent: AtomicU64,
    /// SM_NOTIFY calls that no host answered in time.
    pub notifications_failed: AtomicU64,
    /// Hosts whose status monitor said they restarted.
    pub hosts_rebooted: AtomicU64,
}

/// The lock manager and status monitor: what NLM4 and NSM procedures share.
pub struct LockService {
    vfs: Arc<Vfs>,
    locks: Arc<LockManager>,
    hosts: Mutex<Hosts>,
    db: Option<MonitorDb>,
    /// This instance's NSM state number.
    state: u32,
    /// The name this server calls itself in the calls it makes.
    hostname: String,
    cfg: NlmConfig,
    grants: grant::Granter,
    /// The hosts still reclaiming in the grace period this instance began.
    recovery: Mutex<recovery::Recovery>,
    /// Counters for metrics.
    pub counters: Counters,
}

impl std::fmt::Debug for LockService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockService")
            .field("state", &self.state)
            .finish()
    }
}

impl LockService {
    /// The service over `vfs` and the shared lock table, its records in `state_dir` (none:
    /// nothing survives a restart). Must run inside a Tokio runtime (callbacks are tasks).
    /// Hosts recorded by the last instance start a grace period and are notified.
    pub fn start(
        vfs: Arc<Vfs>,
        locks: Arc<LockManager>,
        state_dir: Option<&Path>,
        cfg: NlmConfig,
    ) -> Result<Arc<Self>, monitor::DbError> {
        let db = state_dir
            .map(|d| MonitorDb::open(&d.join("nlm-hosts.redb")))
            .transpose()?;
        Self::start_with(vfs, locks, db, cfg)
    }

    /// [`LockService::start`] with its records in `db` (the state store the heads share, for
    /// one): the head that serves this identity next notifies the same hosts.
    pub fn start_with(
        vfs: Arc<Vfs>,
        locks: Arc<LockManager>,
        db: Option<MonitorDb>,
        cfg: NlmConfig,
    ) -> Result<Arc<Self>, monitor::DbError> {
        let state = match &db {
            Some(db) => db.next_state()?,
            None => 1,
        };
        let recorded = match &db {
            Some(db) => db.hosts().unwrap_or_else(|e| {
                tracing::error!(error = %e, "cannot read NLM host records; no host is notified");
                Vec::new()
            }),
            None => Vec::new(),
        };
        if !recorded.is_empty() {
            tracing::info!(
                hosts = recorded.len(),
                grace_s = cfg.grace.as_secs(),
                "NLM grace period: hosts that held locks may reclaim them"
            );
            locks
                .grace()
                .begin(Participant::Nlm, Instant::now() + cfg.grace);
        }
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "rnfsd".into());
        let svc = Arc::new(LockService {
            vfs,
            hosts: Mutex::new(Hosts::new(cfg.max_hosts)),
            db,
            state,
            hostname,
            grants: grant::Granter::new(cfg.grants.clone()),
            cfg,
            locks,
            recovery: Mutex::new(recovery::Recovery::new(
                recorded.iter().map(|h| (h.addr, h.server)),
            )),
            counters: Counters::default(),
        });
        grant::start(&svc);
        for h in recorded {
            nsm::notify_restart(&svc, h);
        }
        hosts::start_gc(&svc);
        Ok(svc)
    }

    /// Notes what call `xid` of `host` says about its recovery; ends NLM's part of the grace
    /// period once every host that held locks has reclaimed them ([`recovery`]).
    fn note_recovery(&self, host: recovery::HostKey, xid: u32, seen: recovery::Seen) {
        if !self.locks.grace().running_for(Participant::Nlm) {
            return;
        }
        tracing::debug!(host = ?host, xid, seen = ?seen, "NLM call in the grace period");
        if self.recovery.lock().note(host, xid, seen) {
            self.locks.grace().end(Participant::Nlm);
            tracing::info!("NLM grace period over: every host that held locks reclaimed them");
        }
    }

    /// The NSM state number of this instance.
    pub fn state(&self) -> u32 {
        self.state
    }

    /// The shared lock table.
    pub fn lock_manager(&self) -> &Arc<LockManager> {
        &self.locks
    }

    /// Records `h` durably (before its first lock is granted); false when it could not be.
    fn record(&self, h: &HostRecord) -> bool {
        match &self.db {
            Some(db) => match db.insert(h) {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(error = %e, host = %h.addr, "host not recorded: no lock for it");
                    false
                }
            },
            None => true,
        }
    }

    fn forget_record(&self, addr: IpAddr, server: Option<IpAddr>) {
        if let Some(db) = &self.db {
            if let Err(e) = db.remove(addr, server) {
                tracing::warn!(error = %e, host = %addr, "host record removal failed");
            }
        }
    }

    /// Drops every lock, blocked request and share of the hosts at `addr` or named `name`
    /// (the host restarted, or asked it with FREE_ALL).
    fn drop_hosts(&self, addr: Option<IpAddr>, name: Option<&[u8]>) -> usize {
        let ids = self.hosts.lock().matching(addr, name);
        if ids.is_empty() {
            return 0;
        }
        self.locks
            .remove_owners(|o| matches!(o, locks::Owner::Nlm { host, .. } if ids.contains(host)));
        self.grants.forget_hosts(&ids);
        let gone = self.hosts.lock().remove(&ids);
        for (a, server) in gone {
            self.forget_record(a, server);
        }
        ids.len()
    }
}

/// The NLM metrics, a source of the RPC metrics registry.
impl sunrpc::metrics::MetricsSource for LockService {
    fn encode(&self, out: &mut sunrpc::metrics::MetricsOut<'_>) -> std::fmt::Result {
        let t = self.locks.totals();
        out.gauges(
            "rnfs_locks_held",
            "Byte-range locks held, by protocol.",
            [
                ([("proto", "nfs4")], t.nfs4_locks as u64),
                ([("proto", "nlm")], t.nlm_locks as u64),
            ],
        )?;
        out.gauge(
            "rnfs_lock_waiters",
            "Blocked NLM lock requests waiting.",
            t.waiters as u64,
        )?;
        out.gauge(
            "rnfs_nlm_hosts",
            "NLM client hosts known.",
            self.hosts.lock().len() as u64,
        )?;
        let c = &self.counters;
        for (name, help, v) in [
            (
                "rnfs_nlm_grants_sent_total",
                "NLM4_GRANTED calls the host accepted.",
                &c.grants_sent,
            ),
            (
                "rnfs_nlm_grants_failed_total",
                "Grants released because the host refused them or never answered.",
                &c.grants_failed,
            ),
            (
                "rnfs_nsm_notifications_sent_total",
                "SM_NOTIFY calls answered by a recorded host after a restart.",
                &c.notifications_sent,
            ),
            (
                "rnfs_nsm_notifications_failed_total",
                "SM_NOTIFY calls that no host answered in time.",
                &c.notifications_failed,
            ),
            (
                "rnfs_nsm_hosts_rebooted_total",
                "Hosts whose status monitor said they restarted.",
                &c.hosts_rebooted,
            ),
        ] {
            out.counter(name, help, v.load(Ordering::Relaxed))?;
        }
        Ok(())
    }
}
