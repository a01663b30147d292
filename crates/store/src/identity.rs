//! A serving identity held by one head at a time, through an etcd lease.
//!
//! The key `PREFIX/owner` names the head that serves the identity; it is created only when
//! absent (a transaction comparing its create revision with 0) and bound to a lease of `ttl`,
//! which the holder keeps alive. When the holder dies or is cut off, the lease runs out, etcd
//! deletes the key, and a waiting head creates it: the revision of that creation is the claim's
//! fencing token. The holder's [`Fence`] says whether it may still answer: it holds until a
//! deadline that each acknowledged keep-alive moves on to two thirds of the lease past the
//! moment the keep-alive was sent, so it runs out (on the holder's monotonic clock, which a
//! SIGSTOP does not stop) before etcd can let another head claim the identity.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, PutOptions, Txn, TxnOp, WatchOptions,
};

use crate::{EtcdConfig, StoreError};

/// Whether this head still holds its identity: checked before every call it answers.
#[derive(Debug)]
pub struct Fence {
    start: Instant,
    /// Milliseconds since `start` until which the claim holds.
    until_ms: AtomicU64,
    /// The revision of the claim's creation.
    revision: i64,
    /// How long this head stood by before it claimed the identity.
    waited: Duration,
    /// Asks the identity thread to give the claim up; it answers on the channel it is given.
    release: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<std::sync::mpsc::Sender<()>>>>,
    /// Whether this head's grace period runs, which the identity thread publishes.
    grace: GraceSlot,
}

/// Where a [`Fence`] finds its [`GraceSource`], once the head has one.
#[derive(Default)]
struct GraceSlot(std::sync::Mutex<Option<GraceSource>>);

impl std::fmt::Debug for GraceSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GraceSlot")
    }
}

/// Says whether a head's grace period runs (its NFSv4 and NLM reclaims).
pub type GraceSource = Arc<dyn Fn() -> bool + Send + Sync>;

/// An identity's grace period as its holder last published it (`PREFIX/grace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraceView {
    /// Whether it runs.
    pub running: bool,
    /// Since when (Unix time, seconds) it runs or has not run.
    pub since_unix: u64,
    /// The fencing token of the claim under which it was published.
    pub revision: i64,
}

impl GraceView {
    fn encode(&self) -> String {
        format!(
            "{} {} {}",
            u8::from(self.running),
            self.since_unix,
            self.revision
        )
    }

    fn decode(v: &[u8]) -> Option<Self> {
        let s = std::str::from_utf8(v).ok()?;
        let mut w = s.split(' ');
        let running = match w.next()? {
            "1" => true,
            "0" => false,
            _ => return None,
        };
        let since_unix = w.next()?.parse().ok()?;
        let revision = w.next()?.parse().ok()?;
        w.next().is_none().then_some(GraceView {
            running,
            since_unix,
            revision,
        })
    }
}

impl Fence {
    /// Whether the claim holds now.
    pub fn holds(&self) -> bool {
        (self.start.elapsed().as_millis() as u64) < self.until_ms.load(Ordering::Acquire)
    }

    /// The fencing token: the etcd revision at which this head claimed the identity.
    pub fn revision(&self) -> i64 {
        self.revision
    }

    /// How long this head stood by (another head held the identity, or the cluster did not
    /// answer) before its claim.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Gives the identity up on a clean stop: this head stops answering and its claim is
    /// deleted, so that a standby takes over at once rather than when the lease runs out.
    /// Waits up to `wait` for etcd; false when the claim could not be deleted (it then ends
    /// with its lease).
    pub fn release(&self, wait: Duration) -> bool {
        let asked = self.release.lock().ok().and_then(|mut r| r.take());
        let released = asked.is_some_and(|tx| {
            let (ack, done) = std::sync::mpsc::channel();
            tx.send(ack).is_ok() && done.recv_timeout(wait).is_ok()
        });
        self.revoke();
        released
    }

    /// Publishes whether this head's grace period runs, as `source` says, in the cluster
    /// (`PREFIX/grace`, written only under this claim: a transaction compares the claim's
    /// revision), for every head's `rnfsctl cluster`.
    pub fn publish_grace(&self, source: GraceSource) {
        if let Ok(mut g) = self.grace.0.lock() {
            *g = Some(source);
        }
    }

    fn grace_source(&self) -> Option<GraceSource> {
        self.grace.0.lock().ok().and_then(|g| g.clone())
    }

    fn extend_from(&self, sent: Instant, ttl: Duration) {
        let until = sent.duration_since(self.start) + ttl * 2 / 3;
        self.until_ms
            .fetch_max(until.as_millis() as u64, Ordering::AcqRel);
    }

    fn revoke(&self) {
        self.until_ms.store(0, Ordering::Release);
    }
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// Claims the identity of `cfg` for `holder` (a name for logs and `etcdctl`), waiting while
/// another head holds it; then keeps the claim alive on a thread of its own and calls `lost`
/// once, when it can no longer (the head must stop answering: its fence no longer holds).
pub fn claim(
    cfg: &EtcdConfig,
    holder: &str,
    ttl: Duration,
    lost: Box<dyn FnOnce() + Send>,
) -> Result<Arc<Fence>, StoreError> {
    // everything on a thread of its own, with its own runtime: callers may be inside another
    // runtime (rnfsd's main), and the keep-alives must not wait behind anything else
    let (tx, rx) = std::sync::mpsc::channel();
    let (cfg, holder) = (cfg.clone(), holder.to_owned());
    std::thread::Builder::new()
        .name("identity-lease".into())
        .spawn(move || hold(cfg, holder, ttl, lost, tx))
        .map_err(|e| StoreError::Engine(format!("identity thread: {e}")))?;
    rx.recv()
        .map_err(|_| StoreError::Engine("identity thread ended".into()))?
}

/// The identity thread: claims, reports the fence, keeps the lease alive until it cannot.
fn hold(
    cfg: EtcdConfig,
    holder: String,
    ttl: Duration,
    lost: Box<dyn FnOnce() + Send>,
    report: std::sync::mpsc::Sender<Result<Arc<Fence>, StoreError>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = report.send(Err(StoreError::Engine(format!("identity runtime: {e}"))));
            return;
        }
    };
    let key = format!("{}/owner", cfg.prefix);
    let ttl_secs = ttl.as_secs().max(2) as i64;
    let start = Instant::now();
    let (mut client, lease, revision, granted) = rt.block_on(async {
        let opts = ConnectOptions::new()
            .with_connect_timeout(cfg.timeout)
            .with_timeout(cfg.timeout);
        let mut logged = false;
        loop {
            let attempt = async {
                let mut c = Client::connect(&cfg.endpoints, Some(opts.clone()))
                    .await
                    .map_err(unavailable)?;
                let held = c.get(key.clone(), None).await.map_err(unavailable)?;
                if let Some(kv) = held.kvs().first() {
                    let holder = String::from_utf8_lossy(kv.value()).into_owned();
                    let seen = held.header().map_or(0, |h| h.revision());
                    return Ok(Err((holder, Some((c, seen)))));
                }
                let granted = Instant::now();
                let lease = c
                    .lease_grant(ttl_secs, None)
                    .await
                    .map_err(unavailable)?
                    .id();
                let txn = Txn::new()
                    .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(
                        key.clone(),
                        holder.as_str(),
                        Some(PutOptions::new().with_lease(lease)),
                    )]);
                let resp = c.txn(txn).await.map_err(unavailable)?;
                if !resp.succeeded() {
                    let _ = c.lease_revoke(lease).await;
                    return Ok(Err(("another head, just now".to_string(), None)));
                }
                let revision = resp.header().map_or(0, |h| h.revision());
                Ok::<_, StoreError>(Ok((c, lease, revision, granted)))
            };
            match attempt.await {
                Ok(Ok(got)) => break got,
                Ok(Err((other, watch))) => {
                    if !logged {
                        tracing::info!(holder = %other, identity = %cfg.prefix, "identity held by another head: standing by");
                        logged = true;
                    }
                    if let Some((c, seen)) = watch {
                        // wait for the claim's deletion (its lease run out, or released)
                        // rather than poll; a lost watch falls back to asking again
                        if released(c, &key, seen, ttl).await {
                            continue;
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot claim the identity yet"),
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    });
    let (release_tx, release_rx) = tokio::sync::oneshot::channel();
    let fence = Arc::new(Fence {
        start,
        until_ms: AtomicU64::new(0),
        revision,
        waited: granted.duration_since(start),
        release: std::sync::Mutex::new(Some(release_tx)),
        grace: GraceSlot::default(),
    });
    fence.extend_from(granted, ttl);
    tracing::info!(identity = %cfg.prefix, revision, lease, "identity claimed");
    if report.send(Ok(fence.clone())).is_err() {
        return;
    }
    let period = ttl / 3;
    let opts = ConnectOptions::new()
        .with_connect_timeout(period)
        .with_timeout(period);
    let keep = async {
        // a keep-alive stream on a member that dies is made again on another (the lease
        // lives in the cluster, not in the connection), for as long as the fence holds
        let mut last_error = String::new();
        loop {
            if !fence.holds() {
                return format!("no keep-alive acknowledged within the lease: {last_error}");
            }
            let stream = match client.lease_keep_alive(lease).await {
                Ok(x) => Ok(x),
                Err(e) => match Client::connect(&cfg.endpoints, Some(opts.clone())).await {
                    Ok(c) => {
                        client = c;
                        Err(format!("keep-alive stream: {e}; reconnected"))
                    }
                    Err(e2) => Err(format!("keep-alive stream: {e}; connect: {e2}")),
                },
            };
            let (mut k, mut stream) = match stream {
                Ok(x) => x,
                Err(e) => {
                    last_error = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            loop {
                let sent = Instant::now();
                if let Err(e) = k.keep_alive().await {
                    last_error = format!("keep-alive: {e}");
                    break;
                }
                match tokio::time::timeout(period, stream.message()).await {
                    Ok(Ok(Some(r))) if r.ttl() > 0 => fence.extend_from(sent, ttl),
                    // etcd says the lease is gone: another head may hold the identity now
                    Ok(Ok(Some(_))) => return "the lease ran out".to_string(),
                    Ok(Ok(None)) => {
                        last_error = "keep-alive stream closed".to_string();
                        break;
                    }
                    Ok(Err(e)) => {
                        last_error = format!("keep-alive: {e}");
                        break;
                    }
                    Err(_) => {
                        last_error = "no keep-alive answer".to_string();
                        break;
                    }
                }
                if !fence.holds() {
                    break;
                }
                tokio::time::sleep(period).await;
            }
            // connect again (another member) before trying once more
            if let Ok(c) = Client::connect(&cfg.endpoints, Some(opts.clone())).await {
                client = c;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    // the grace period's state, published when it changes (looked at every second, or every
    // third of a shorter lease)
    let publish = {
        let (fence, cfg, key, opts) = (fence.clone(), cfg.clone(), key.clone(), opts.clone());
        let grace_key = format!("{}/grace", cfg.prefix);
        async move {
            let mut published: Option<bool> = None;
            let mut c: Option<Client> = None;
            loop {
                tokio::time::sleep(period.min(Duration::from_secs(1))).await;
                let Some(running) = fence.grace_source().map(|f| f()) else {
                    continue;
                };
                if published == Some(running) {
                    continue;
                }
                if c.is_none() {
                    c = Client::connect(&cfg.endpoints, Some(opts.clone()))
                        .await
                        .ok();
                }
                let Some(client) = c.as_mut() else { continue };
                let view = GraceView {
                    running,
                    since_unix: std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs()),
                    revision,
                };
                let txn = Txn::new()
                    .when([Compare::create_revision(
                        key.clone(),
                        CompareOp::Equal,
                        revision,
                    )])
                    .and_then([TxnOp::put(grace_key.clone(), view.encode(), None)]);
                match client.txn(txn).await {
                    Ok(r) if r.succeeded() => published = Some(running),
                    // the claim is not ours any more: nothing more to publish (the keep-alive
                    // finds the lease gone and stops this head); never ends, so that the
                    // select below goes on driving the keep-alive
                    Ok(_) => std::future::pending::<()>().await,
                    Err(e) => {
                        tracing::debug!(error = %e, "grace state not published yet");
                        c = None;
                    }
                }
            }
        }
    };
    let asked = async {
        match release_rx.await {
            Ok(ack) => ack,
            // the fence was dropped without a release: keep the claim alive
            Err(_) => std::future::pending().await,
        }
    };
    let why = rt.block_on(async {
        tokio::select! {
            why = keep => Some(why),
            // never ends (see above)
            _ = publish => None,
            ack = asked => {
                // a clean stop: delete the claim (its lease, and the owner key with it)
                let revoked = async {
                    let mut c = Client::connect(&cfg.endpoints, Some(opts.clone())).await?;
                    c.lease_revoke(lease).await
                };
                match tokio::time::timeout(ttl, revoked).await {
                    Ok(Ok(_)) => {
                        tracing::info!(identity = %cfg.prefix, "identity released");
                        let _ = ack.send(());
                    }
                    Ok(Err(e)) => tracing::warn!(error = %e, "cannot release the identity: it ends with its lease"),
                    Err(_) => tracing::warn!("cannot release the identity in time: it ends with its lease"),
                }
                None
            }
        }
    });
    fence.revoke();
    if let Some(why) = why {
        tracing::error!(reason = %why, "identity lost: this head stops answering");
        lost();
    }
}

/// One identity of the cluster, as etcd has it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentityView {
    /// The identity (`--node-id`).
    pub id: String,
    /// Who holds it (host name and pid), or `None` while no head does.
    pub holder: Option<String>,
    /// The fencing token of the claim (its creation revision); 0 while unheld.
    pub revision: i64,
    /// Seconds left on the claim's lease (-1 when etcd no longer knows it).
    pub lease_ttl_secs: i64,
    /// Its grace period as its holder published it under the current claim (None: unheld,
    /// or nothing published under this claim: an earlier claim's record says nothing of it).
    pub grace: Option<GraceView>,
}

/// Counts a claim of the identity whose records `store` holds (its row `cluster/claims`:
/// the first start, then one per failover or restart, whichever head made it) and returns the
/// count, this claim included.
pub fn count_claim(store: &dyn crate::Store) -> Result<u64, StoreError> {
    let got = store.update(crate::Table::new("cluster"), b"claims", &|old| {
        (old.and_then(crate::u64_of).unwrap_or(0) + 1)
            .to_be_bytes()
            .to_vec()
    })?;
    crate::u64_of(&got).ok_or_else(|| StoreError::Engine("malformed claim count".into()))
}

/// Every identity with records or a claim under `root` (the prefix identities' keys share,
/// `/rnfs/id`), sorted: for `rnfsctl cluster`.
pub fn list(cfg: &EtcdConfig, root: &str) -> Result<Vec<IdentityView>, StoreError> {
    let (cfg, root) = (cfg.clone(), root.trim_end_matches('/').to_owned());
    std::thread::Builder::new()
        .name("identity-list".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| StoreError::Engine(format!("identity runtime: {e}")))?;
            rt.block_on(async { tokio::time::timeout(cfg.timeout, list_in(&cfg, &root)).await })
                .map_err(|_| StoreError::Unavailable("etcd did not answer in time".into()))?
        })
        .map_err(|e| StoreError::Engine(format!("identity thread: {e}")))?
        .join()
        .map_err(|_| StoreError::Engine("identity thread panicked".into()))?
}

async fn list_in(cfg: &EtcdConfig, root: &str) -> Result<Vec<IdentityView>, StoreError> {
    use etcd_client::GetOptions;
    let opts = ConnectOptions::new()
        .with_connect_timeout(cfg.timeout)
        .with_timeout(cfg.timeout);
    let mut c = Client::connect(&cfg.endpoints, Some(opts))
        .await
        .map_err(unavailable)?;
    // the identities: the first path segment under the root of every key (keys only)
    let from = format!("{root}/");
    let end = format!("{root}0"); // '0' follows '/': the end of the prefix's range
    let keys = c
        .get(
            from.as_str(),
            Some(GetOptions::new().with_range(end.as_str()).with_keys_only()),
        )
        .await
        .map_err(unavailable)?;
    let mut ids: Vec<String> = keys
        .kvs()
        .iter()
        .filter_map(|kv| {
            let k = std::str::from_utf8(kv.key()).ok()?;
            Some(k.strip_prefix(&from)?.split('/').next()?.to_owned())
        })
        .collect();
    ids.sort();
    ids.dedup();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let grace = c
            .get(format!("{from}{id}/grace"), None)
            .await
            .map_err(unavailable)?
            .kvs()
            .first()
            .and_then(|kv| GraceView::decode(kv.value()));
        let got = c
            .get(format!("{from}{id}/owner"), None)
            .await
            .map_err(unavailable)?;
        let view = match got.kvs().first() {
            Some(kv) => {
                let ttl = match kv.lease() {
                    0 => -1,
                    lease => c
                        .lease_time_to_live(lease, None)
                        .await
                        .map_or(-1, |r| r.ttl()),
                };
                IdentityView {
                    id,
                    holder: Some(String::from_utf8_lossy(kv.value()).into_owned()),
                    revision: kv.create_revision(),
                    lease_ttl_secs: ttl,
                    grace: grace.filter(|g| g.revision == kv.create_revision()),
                }
            }
            None => IdentityView {
                id,
                holder: None,
                revision: 0,
                lease_ttl_secs: -1,
                grace: None,
            },
        };
        out.push(view);
    }
    Ok(out)
}

/// Waits until the claim `key` seen at revision `seen` is deleted (true), or the watch fails
/// or `ttl` twice over has passed (false: the caller looks again after a pause).
async fn released(mut c: Client, key: &str, seen: i64, ttl: Duration) -> bool {
    let opts = WatchOptions::new().with_start_revision(seen + 1);
    let Ok(mut stream) = c.watch(key, Some(opts)).await else {
        return false;
    };
    let deleted = async {
        while let Ok(Some(resp)) = stream.message().await {
            if resp.canceled() {
                return false;
            }
            if resp
                .events()
                .iter()
                .any(|e| e.event_type() == EventType::Delete)
            {
                return true;
            }
        }
        false
    };
    tokio::time::timeout(ttl * 2, deleted)
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::EtcdCluster;

    fn cfg(c: &EtcdCluster) -> EtcdConfig {
        EtcdConfig {
            endpoints: c.endpoints(),
            prefix: "/rnfs/id/claim-test".into(),
            timeout: Duration::from_secs(3),
        }
    }

    #[test]
    fn one_holder_at_a_time_and_the_next_claims_when_it_is_gone() {
        let Some(mut cluster) = EtcdCluster::start(3) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let c = cfg(&cluster);
        let (tx, rx) = std::sync::mpsc::channel();
        let a = claim(
            &c,
            "head-a",
            Duration::from_secs(2),
            Box::new(move || {
                let _ = tx.send(());
            }),
        )
        .unwrap();
        assert!(a.holds());
        // a second claimant waits while a holds it
        let c2 = c.clone();
        let waiter = std::thread::spawn(move || {
            let t0 = Instant::now();
            let b = claim(&c2, "head-b", Duration::from_secs(2), Box::new(|| {})).unwrap();
            (b, t0.elapsed())
        });
        std::thread::sleep(Duration::from_secs(3));
        assert!(!waiter.is_finished(), "b claimed while a held the identity");
        assert!(a.holds(), "a's keep-alives keep its claim");
        // a is cut off from the cluster (every member down, then back): its fence runs out on
        // its own clock, and b claims only after that
        for i in 0..3 {
            cluster.stop(i);
        }
        std::thread::sleep(Duration::from_secs(2));
        assert!(!a.holds(), "a still answers without keep-alives");
        for i in 0..3 {
            cluster.restart(i);
        }
        let (b, _) = waiter.join().unwrap();
        assert!(b.holds());
        assert!(b.revision() > a.revision(), "fencing tokens grow");
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a was told it lost the identity");
    }

    #[test]
    fn a_released_claim_passes_to_the_standby_at_once() {
        let Some(cluster) = EtcdCluster::start(1) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let c = cfg(&cluster);
        let (tx, lost) = std::sync::mpsc::channel();
        // a lease of 10 s: a standby that waited for it would show
        let a = claim(
            &c,
            "head-a",
            Duration::from_secs(10),
            Box::new(move || {
                let _ = tx.send(());
            }),
        )
        .unwrap();
        let c2 = c.clone();
        let waiter = std::thread::spawn(move || {
            let b = claim(&c2, "head-b", Duration::from_secs(10), Box::new(|| {})).unwrap();
            (b, Instant::now())
        });
        std::thread::sleep(Duration::from_secs(1));
        assert!(!waiter.is_finished(), "b claimed while a held the identity");
        let released = Instant::now();
        assert!(
            a.release(Duration::from_secs(5)),
            "a's claim was not deleted"
        );
        assert!(!a.holds(), "a answers after giving its identity up");
        let (b, claimed) = waiter.join().unwrap();
        let took = claimed.duration_since(released);
        assert!(
            took < Duration::from_secs(3),
            "b waited {took:?} (lease 10 s)"
        );
        assert!(b.holds());
        assert!(b.revision() > a.revision());
        assert!(
            lost.recv_timeout(Duration::from_secs(1)).is_err(),
            "a release was reported as a loss"
        );
    }

    #[test]
    fn the_list_shows_each_identity_and_its_holder() {
        use crate::Store;
        let Some(cluster) = EtcdCluster::start(1) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let held = cfg(&cluster);
        let a = claim(
            &held,
            "head-a pid 1",
            Duration::from_secs(5),
            Box::new(|| {}),
        )
        .unwrap();
        // an identity with records but no head serving it
        let idle = EtcdConfig {
            prefix: "/rnfs/id/idle-one".into(),
            ..held.clone()
        };
        crate::Etcd::new(idle)
            .unwrap()
            .put(crate::Table::new("nfs4_clients"), b"c", b"1")
            .map_err(|e| e.to_string())
            .unwrap();
        let got = list(&held, "/rnfs/id").unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].id, "claim-test");
        assert_eq!(got[0].holder.as_deref(), Some("head-a pid 1"));
        assert_eq!(got[0].revision, a.revision());
        assert!((1..=5).contains(&got[0].lease_ttl_secs), "{got:?}");
        assert_eq!(
            got[1],
            IdentityView {
                id: "idle-one".into(),
                holder: None,
                revision: 0,
                lease_ttl_secs: -1,
                grace: None,
            }
        );
        // the holder publishes its grace period under its claim
        assert_eq!(got[0].grace, None);
        a.publish_grace(Arc::new(|| true));
        let t = Instant::now();
        let grace = loop {
            if let Some(g) = list(&held, "/rnfs/id").unwrap()[0].grace {
                break g;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "never published");
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(grace.running);
        assert_eq!(grace.revision, a.revision());
    }

    #[test]
    fn a_grace_record_reads_back_and_damaged_ones_are_none() {
        let g = GraceView {
            running: true,
            since_unix: 1_700_000_000,
            revision: 42,
        };
        assert_eq!(GraceView::decode(g.encode().as_bytes()), Some(g));
        for bad in [&b""[..], b"2 1 1", b"1 x 1", b"1 1", b"1 1 1 1", b"\xff"] {
            assert_eq!(GraceView::decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_head_that_lost_its_identity_cannot_write() {
        use crate::{Etcd, Store, StoreError, Table};
        let Some(cluster) = EtcdCluster::start(1) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let c = cfg(&cluster);
        let t = Table::new("fenced");
        let a = claim(&c, "head-a", Duration::from_secs(5), Box::new(|| {})).unwrap();
        let store_a = Etcd::new(c.clone()).unwrap();
        store_a.fence_writes(a.revision());
        store_a.put(t, b"k", b"from a").unwrap();
        // the owner key goes (as when a's lease runs out) and b claims the identity
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut raw = Client::connect(c.endpoints.clone(), None).await.unwrap();
            raw.delete(format!("{}/owner", c.prefix), None)
                .await
                .unwrap();
        });
        let b = claim(&c, "head-b", Duration::from_secs(5), Box::new(|| {})).unwrap();
        let store_b = Etcd::new(c.clone()).unwrap();
        store_b.fence_writes(b.revision());
        // a's late writes are refused, whatever their kind; b's go through
        assert_eq!(store_a.put(t, b"k", b"late a"), Err(StoreError::Fenced));
        assert_eq!(store_a.delete(t, b"k"), Err(StoreError::Fenced));
        assert_eq!(
            store_a.update(t, b"n", &|_| b"late".to_vec()),
            Err(StoreError::Fenced)
        );
        store_b.put(t, b"k", b"from b").unwrap();
        assert_eq!(store_b.update(t, b"n", &|_| b"b".to_vec()).unwrap(), b"b");
        assert_eq!(
            store_b.load(t).unwrap(),
            vec![
                (b"k".to_vec(), b"from b".to_vec()),
                (b"n".to_vec(), b"b".to_vec())
            ]
        );
    }
}
