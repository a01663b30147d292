//! Calling a blocked request's host back once its lock is granted (NLM4_GRANTED to the host's
//! lock manager, whose port its port mapper gives). The lock is taken before the call; the
//! host's refusal, or no answer after the retries, releases it.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use locks::{FileKey, Granted, WaiterId};
use nlmwire::{Nlm4Lock, Nlm4Res, Nlm4Stats, Nlm4Testargs, NLM4_GRANTED, NLM_PROG, NLM_VERS4};
use parking_lot::Mutex;
use sunrpc::client::{self, CallOpts, Proto};
use xdr::Decode;

use crate::LockService;

/// How grants are delivered.
#[derive(Debug, Clone)]
pub struct GrantPolicy {
    /// Time one NLM4_GRANTED call (and each port mapper query) waits for its reply.
    pub call_timeout: Duration,
    /// Calls after the first before the grant is released.
    pub retries: u32,
    /// Wait before the first retry; the n-th waits n times as long, up to six.
    pub retry_delay: Duration,
    /// The port of the hosts' port mappers (111).
    pub pmap_port: u16,
}

impl Default for GrantPolicy {
    fn default() -> Self {
        GrantPolicy {
            call_timeout: Duration::from_secs(5),
            retries: 5,
            retry_delay: Duration::from_secs(10),
            pmap_port: client::PMAP_PORT,
        }
    }
}

/// A blocked request, as its host must be told of its grant.
#[derive(Debug, Clone)]
pub(crate) struct Blocked {
    /// The host (its number in the host table).
    pub host: u64,
    /// Where the request came from.
    pub peer: IpAddr,
    /// The transport it came over (the callback uses the same).
    pub proto: Proto,
    /// The server address it came to (the callback comes from it).
    pub local: Option<IpAddr>,
    /// The lock as the host asked for it (file handle, owner, range).
    pub lock: Nlm4Lock,
    /// Exclusive lock.
    pub exclusive: bool,
}

/// A grant being delivered, by what the host's retried LOCK would ask.
type Delivery = (u64, u32, FileKey, u64, u64);

/// Blocked requests by their waiter id, and grants on their way.
pub(crate) struct Granter {
    policy: GrantPolicy,
    blocked: Mutex<HashMap<WaiterId, Blocked>>,
    /// Grants being delivered; true once the host took the lock itself by a retried LOCK.
    delivering: Mutex<HashMap<Delivery, bool>>,
}

impl Granter {
    pub(crate) fn new(policy: GrantPolicy) -> Self {
        Granter {
            policy,
            blocked: Mutex::new(HashMap::new()),
            delivering: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `lock` (a request to the lock table) with the blocked requests held, and records
    /// the request under the waiter id it returns, if any: a grant cannot overtake its record.
    pub(crate) fn request<T>(
        &self,
        lock: impl FnOnce() -> T,
        waiter: impl Fn(&T) -> Option<WaiterId>,
        b: Blocked,
    ) -> T {
        let mut reg = self.blocked.lock();
        let out = lock();
        if let Some(id) = waiter(&out) {
            reg.insert(id, b);
        }
        out
    }

    /// A blocked request withdrawn (CANCEL).
    pub(crate) fn cancel(&self, id: WaiterId) {
        self.blocked.lock().remove(&id);
    }

    /// The host took the lock with a retried LOCK while its grant was on the way: a refusal
    /// of the grant must not release it.
    pub(crate) fn taken(&self, host: u64, svid: u32, file: FileKey, start: u64, end: u64) {
        if let Some(t) = self
            .delivering
            .lock()
            .get_mut(&(host, svid, file, start, end))
        {
            *t = true;
        }
    }

    /// Forgets the blocked requests of hosts that are gone.
    pub(crate) fn forget_hosts(&self, ids: &[u64]) {
        let ids: HashSet<&u64> = ids.iter().collect();
        self.blocked.lock().retain(|_, b| !ids.contains(&b.host));
    }

    /// Whether `host` has a blocked request or a grant on its way.
    pub(crate) fn has_host(&self, host: u64) -> bool {
        self.blocked.lock().values().any(|b| b.host == host)
            || self.delivering.lock().keys().any(|k| k.0 == host)
    }
}

/// Hooks the service to the lock table's grants.
pub(crate) fn start(svc: &Arc<LockService>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<Granted>>();
    // The hook only hands grants on: it may run under NFSv4's state lock.
    svc.locks.on_grant(Box::new(move |g| {
        let _ = tx.send(g);
    }));
    let weak = Arc::downgrade(svc);
    tokio::spawn(async move {
        while let Some(batch) = rx.recv().await {
            let Some(svc) = weak.upgrade() else {
                return;
            };
            for g in batch {
                let b = svc.grants.blocked.lock().remove(&g.id);
                match b {
                    Some(b) => {
                        tokio::spawn(deliver(svc.clone(), g, b));
                    }
                    // Its host went between the grant and now: nobody holds it.
                    None => svc
                        .locks
                        .unlock(g.file, &g.lock.owner, g.lock.start, g.lock.end),
                }
            }
        }
    });
}

async fn deliver(svc: Arc<LockService>, g: Granted, b: Blocked) {
    let key = (b.host, b.lock.svid, g.file, g.lock.start, g.lock.end);
    svc.grants.delivering.lock().insert(key, false);
    let p = svc.grants.policy.clone();
    let mut refused = false;
    for attempt in 0..=p.retries {
        if attempt > 0 {
            tokio::time::sleep(p.retry_delay * attempt.min(6)).await;
        }
        // Unlocked (or the host dropped) meanwhile: nothing to tell.
        if !svc.locks.owner_has(g.file, &g.lock.owner) {
            svc.grants.delivering.lock().remove(&key);
            return;
        }
        match call_granted(&svc, &b, g.id).await {
            Ok(s) if s == Nlm4Stats::nlm4_granted => {
                svc.counters.grants_sent.fetch_add(1, Ordering::Relaxed);
                svc.grants.delivering.lock().remove(&key);
                return;
            }
            Ok(s) if s == Nlm4Stats::nlm4_denied_grace_period => {}
            Ok(s) => {
                tracing::debug!(host = %b.peer, status = ?s, "grant refused");
                refused = true;
                break;
            }
            Err(e) => tracing::debug!(host = %b.peer, error = %e, attempt, "grant not delivered"),
        }
    }
    let taken = svc.grants.delivering.lock().remove(&key).unwrap_or(false);
    if taken {
        return;
    }
    svc.counters.grants_failed.fetch_add(1, Ordering::Relaxed);
    tracing::info!(host = %b.peer, refused, "blocked lock granted but not taken: released");
    svc.locks
        .unlock(g.file, &g.lock.owner, g.lock.start, g.lock.end);
}

async fn call_granted(
    svc: &LockService,
    b: &Blocked,
    id: WaiterId,
) -> Result<Nlm4Stats, client::CallError> {
    let p = &svc.grants.policy;
    let opts = CallOpts::new(b.proto, p.call_timeout, 2).from_server(b.local);
    let port = client::getport_at(
        SocketAddr::new(b.peer, p.pmap_port),
        NLM_PROG,
        NLM_VERS4,
        b.proto,
        &opts,
    )
    .await?;
    let args = Nlm4Testargs {
        cookie: Bytes::copy_from_slice(&id.0.to_be_bytes()),
        exclusive: b.exclusive,
        alock: Nlm4Lock {
            caller_name: Bytes::from(svc.hostname.clone()),
            ..b.lock.clone()
        },
    };
    let mut d = client::call(
        SocketAddr::new(b.peer, port),
        NLM_PROG,
        NLM_VERS4,
        NLM4_GRANTED,
        &args,
        &opts,
    )
    .await?;
    let res = Nlm4Res::decode(&mut d).map_err(|_| client::CallError::Rejected)?;
    Ok(res.stat.stat)
}
