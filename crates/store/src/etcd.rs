//! The etcd engine: tables as key ranges of an etcd cluster (its v3 API over gRPC, through the
//! `etcd-client` crate), under a prefix per serving identity.
//!
//! A row of table `T` with key `K` is the etcd key `PREFIX/T/HEX(K)` (hex keeps keys readable
//! with `etcdctl get --prefix`). Reads are linearizable (a member without quorum cannot answer
//! them), so a head that lost the cluster gets errors, not stale rows. The client runs on a
//! thread of its own with a single-threaded runtime; callers send it requests and wait for the
//! answer, each request bounded by [`EtcdConfig::timeout`].

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, Txn, TxnOp};

use crate::{Rows, Store, StoreError, Table};

/// Rows fetched per range request when a table is loaded.
const PAGE: i64 = 1000;

/// Where the cluster is and where this head's rows are in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Client URLs of the members (`http://HOST:PORT`).
    pub endpoints: Vec<String>,
    /// Key prefix of the rows (`/rnfs/id/NODE`).
    pub prefix: String,
    /// How long a request may take, reconnection included.
    pub timeout: Duration,
}

impl EtcdConfig {
    /// From `--cluster etcd://HOST:PORT[,HOST:PORT...]` and `--node-id ID`.
    pub fn from_url(url: &str, node_id: &str) -> Result<Self, StoreError> {
        let bad = |why: &str| StoreError::Engine(format!("--cluster {url}: {why}"));
        let hosts = url
            .strip_prefix("etcd://")
            .ok_or_else(|| bad("must start with etcd://"))?;
        let endpoints: Vec<String> = hosts
            .split(',')
            .map(|h| match h.rsplit_once(':') {
                Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                    Ok(format!("http://{h}"))
                }
                _ => Err(bad("each member must be HOST:PORT")),
            })
            .collect::<Result<_, _>>()?;
        if node_id.is_empty()
            || !node_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        {
            return Err(StoreError::Engine(format!(
                "--node-id {node_id:?}: letters, digits, '-', '_' and '.' only"
            )));
        }
        Ok(Self {
            endpoints,
            prefix: format!("/rnfs/id/{node_id}"),
            timeout: Duration::from_secs(5),
        })
    }
}

#[derive(Clone)]
enum Op {
    Load(Table),
    Put(Table, Vec<u8>, Vec<u8>),
    Delete(Table, Vec<u8>),
    /// One row's value and its modification revision (0: absent).
    Get(Table, Vec<u8>),
    /// Put if the row's modification revision is still the one given (0: still absent).
    PutIf(Table, Vec<u8>, Vec<u8>, i64),
}

/// What the client thread answers.
enum Answer {
    Rows(Rows),
    Row(Option<Vec<u8>>, i64),
    Done(bool),
}

struct Request {
    op: Op,
    reply: mpsc::SyncSender<Result<Answer, StoreError>>,
}

/// Tables in an etcd cluster.
pub struct Etcd {
    requests: mpsc::Sender<Request>,
    cfg: EtcdConfig,
    /// The fencing token writes carry (0: none): see [`Etcd::fence_writes`].
    fence: Arc<AtomicI64>,
    stats: EtcdStats,
}

/// What a store's calls have cost so far (for the server's metrics).
#[derive(Debug, Default)]
pub struct EtcdStats {
    /// Calls made (loads, puts, deletes, updates).
    pub calls: AtomicU64,
    /// Calls that failed because the cluster did not answer in time.
    pub unavailable: AtomicU64,
    /// Writes refused because another head holds the identity now.
    pub fenced: AtomicU64,
    /// Calls that failed otherwise.
    pub failed: AtomicU64,
    /// Time spent in calls, in microseconds.
    pub micros: AtomicU64,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Etcd({:?} {})", self.cfg.endpoints, self.cfg.prefix)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &[u8]) -> Option<Vec<u8>> {
    if s.len() & 1 != 0 {
        return None;
    }
    s.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

/// The client thread's side: one connection, made when first needed and again after a
/// request failed (tonic reconnects by itself, but a client made while every member was down
/// keeps failing).
struct Worker {
    cfg: EtcdConfig,
    client: Option<Client>,
    fence: Arc<AtomicI64>,
}

impl Worker {
    async fn client(&mut self) -> Result<&mut Client, StoreError> {
        if self.client.is_none() {
            // a request to a member that died fails in a fraction of the whole budget, and is
            // tried again on another
            let opts = ConnectOptions::new()
                .with_connect_timeout(self.cfg.timeout / 4)
                .with_timeout(self.cfg.timeout / 4);
            let c = Client::connect(&self.cfg.endpoints, Some(opts))
                .await
                .map_err(unavailable)?;
            self.client = Some(c);
        }
        self.client.as_mut().ok_or_else(|| unavailable("no client"))
    }

    /// Runs `op`, again on a new connection after a failure (a member died under an open
    /// connection), until it succeeds or the timeout is spent. Every request here may be
    /// repeated: a put of the same value, a delete, a read.
    async fn run_until_done(&mut self, op: Op) -> Result<Answer, StoreError> {
        let timeout = self.cfg.timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let err = match tokio::time::timeout_at(deadline, self.run(op.clone())).await {
                Ok(Err(StoreError::Unavailable(e))) => e,
                Ok(r) => return r,
                Err(_) => "timed out".to_string(),
            };
            self.client = None;
            if tokio::time::Instant::now() + Duration::from_millis(100) >= deadline {
                return Err(StoreError::Unavailable(format!(
                    "no answer from {:?} within {timeout:?}: {err}",
                    self.cfg.endpoints
                )));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The compares a write carries: the identity's owner key still the one created at the
    /// fencing token's revision (none before [`Etcd::fence_writes`]).
    fn fenced(&self) -> Vec<Compare> {
        match self.fence.load(Ordering::Acquire) {
            0 => Vec::new(),
            rev => vec![Compare::create_revision(
                format!("{}/owner", self.cfg.prefix),
                CompareOp::Equal,
                rev,
            )],
        }
    }

    /// A write as a transaction with the fence's compares; Fenced when they fail.
    async fn write(&mut self, op: TxnOp) -> Result<(), StoreError> {
        let compares = self.fenced();
        if compares.is_empty() {
            self.client()
                .await?
                .txn(Txn::new().and_then([op]))
                .await
                .map_err(unavailable)?;
            return Ok(());
        }
        let resp = self
            .client()
            .await?
            .txn(Txn::new().when(compares).and_then([op]))
            .await
            .map_err(unavailable)?;
        match resp.succeeded() {
            true => Ok(()),
            false => Err(StoreError::Fenced),
        }
    }

    fn table_prefix(&self, t: Table) -> String {
        format!("{}/{}/", self.cfg.prefix, t.name())
    }

    async fn run(&mut self, op: Op) -> Result<Answer, StoreError> {
        match op {
            Op::Put(t, k, v) => {
                let key = format!("{}{}", self.table_prefix(t), hex(&k));
                self.write(TxnOp::put(key, v, None)).await?;
                Ok(Answer::Done(true))
            }
            Op::Delete(t, k) => {
                let key = format!("{}{}", self.table_prefix(t), hex(&k));
                self.write(TxnOp::delete(key, None)).await?;
                Ok(Answer::Done(true))
            }
            Op::Get(t, k) => {
                let key = format!("{}{}", self.table_prefix(t), hex(&k));
                let resp = self
                    .client()
                    .await?
                    .get(key, None)
                    .await
                    .map_err(unavailable)?;
                Ok(match resp.kvs().first() {
                    Some(kv) => Answer::Row(Some(kv.value().to_vec()), kv.mod_revision()),
                    None => Answer::Row(None, 0),
                })
            }
            Op::PutIf(t, k, v, rev) => {
                let key = format!("{}{}", self.table_prefix(t), hex(&k));
                // an absent key's modification revision compares as 0
                let mut compares = self.fenced();
                let fenced = !compares.is_empty();
                compares.push(Compare::mod_revision(key.clone(), CompareOp::Equal, rev));
                let txn = Txn::new()
                    .when(compares)
                    .and_then([TxnOp::put(key, v, None)]);
                let written = self
                    .client()
                    .await?
                    .txn(txn)
                    .await
                    .map_err(unavailable)?
                    .succeeded();
                if !written && fenced {
                    // another writer came between, or another head holds the identity
                    let still = self.fenced();
                    let owner = self
                        .client()
                        .await?
                        .txn(Txn::new().when(still))
                        .await
                        .map_err(unavailable)?;
                    if !owner.succeeded() {
                        return Err(StoreError::Fenced);
                    }
                }
                Ok(Answer::Done(written))
            }
            Op::Load(t) => {
                let start = self.table_prefix(t);
                // the range end of a prefix: its last byte ('/') plus one
                let mut end = start.clone().into_bytes();
                if let Some(last) = end.last_mut() {
                    *last += 1;
                }
                let mut from = start.clone().into_bytes();
                let mut rows = Vec::new();
                loop {
                    let opts = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
                    let resp = self
                        .client()
                        .await?
                        .get(from.clone(), Some(opts))
                        .await
                        .map_err(unavailable)?;
                    for kv in resp.kvs() {
                        // a key this engine did not write (by hand, or damaged) is left out:
                        // one bad row must not keep a head from serving every other client
                        match kv.key().strip_prefix(start.as_bytes()).and_then(unhex) {
                            Some(k) => rows.push((k, kv.value().to_vec())),
                            None => tracing::warn!(
                                key = %String::from_utf8_lossy(kv.key()),
                                "malformed key in etcd: skipped"
                            ),
                        }
                    }
                    match (resp.more(), resp.kvs().last()) {
                        (true, Some(last)) => {
                            from = last.key().to_vec();
                            from.push(0);
                        }
                        _ => break,
                    }
                }
                Ok(Answer::Rows(rows))
            }
        }
    }
}

impl Etcd {
    /// A store on the cluster `cfg` names; nothing is sent until the first call.
    pub fn new(cfg: EtcdConfig) -> Result<Self, StoreError> {
        let (tx, rx) = mpsc::channel::<Request>();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Engine(format!("etcd client runtime: {e}")))?;
        let fence = Arc::new(AtomicI64::new(0));
        let mut worker = Worker {
            cfg: cfg.clone(),
            client: None,
            fence: fence.clone(),
        };
        std::thread::Builder::new()
            .name("etcd-client".into())
            .spawn(move || {
                while let Ok(req) = rx.recv() {
                    let res = rt.block_on(worker.run_until_done(req.op));
                    let _ = req.reply.send(res);
                }
            })
            .map_err(|e| StoreError::Engine(format!("etcd client thread: {e}")))?;
        Ok(Self {
            requests: tx,
            cfg,
            fence,
            stats: EtcdStats::default(),
        })
    }

    /// The calls made so far, their failures and the time they took.
    pub fn stats(&self) -> &EtcdStats {
        &self.stats
    }

    /// From now on every write carries the fencing token `revision` (the revision at which
    /// this head claimed its identity, [`crate::identity::Fence::revision`]): etcd applies it
    /// only while the identity's owner key is still the one created then, so that a head that
    /// lost its identity cannot change records another head now serves from
    /// ([`StoreError::Fenced`]).
    pub fn fence_writes(&self, revision: i64) {
        self.fence.store(revision, Ordering::Release);
    }

    fn call(&self, op: Op) -> Result<Answer, StoreError> {
        let t0 = std::time::Instant::now();
        let r = self.call_once(op);
        let st = &self.stats;
        st.calls.fetch_add(1, Ordering::Relaxed);
        st.micros
            .fetch_add(t0.elapsed().as_micros() as u64, Ordering::Relaxed);
        match &r {
            Ok(_) => {}
            Err(StoreError::Unavailable(_)) => {
                st.unavailable.fetch_add(1, Ordering::Relaxed);
            }
            Err(StoreError::Fenced) => {
                st.fenced.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                st.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        r
    }

    fn call_once(&self, op: Op) -> Result<Answer, StoreError> {
        let (reply, answer) = mpsc::sync_channel(1);
        self.requests
            .send(Request { op, reply })
            .map_err(|_| unavailable("etcd client thread gone"))?;
        // the worker bounds each request; a little more here in case it is busy with others
        answer
            .recv_timeout(self.cfg.timeout * 4)
            .map_err(|_| unavailable("etcd client thread did not answer"))?
    }
}

impl Store for Etcd {
    fn load(&self, table: Table) -> Result<Rows, StoreError> {
        match self.call(Op::Load(table))? {
            Answer::Rows(r) => Ok(r),
            _ => Err(StoreError::Engine("unexpected answer".into())),
        }
    }

    fn update(
        &self,
        table: Table,
        key: &[u8],
        f: &dyn Fn(Option<&[u8]>) -> Vec<u8>,
    ) -> Result<Vec<u8>, StoreError> {
        // read, compute, and write only if nobody wrote in between (compare the revision);
        // again when someone did
        for _ in 0..100 {
            let (old, rev) = match self.call(Op::Get(table, key.to_vec()))? {
                Answer::Row(v, rev) => (v, rev),
                _ => return Err(StoreError::Engine("unexpected answer".into())),
            };
            let new = f(old.as_deref());
            match self.call(Op::PutIf(table, key.to_vec(), new.clone(), rev))? {
                Answer::Done(true) => return Ok(new),
                Answer::Done(false) => continue,
                _ => return Err(StoreError::Engine("unexpected answer".into())),
            }
        }
        Err(StoreError::Unavailable(
            "update lost to other writers 100 times".into(),
        ))
    }

    fn put(&self, table: Table, key: &[u8], value: &[u8]) -> Result<(), StoreError> {
        self.call(Op::Put(table, key.to_vec(), value.to_vec()))
            .map(drop)
    }

    fn delete(&self, table: Table, key: &[u8]) -> Result<(), StoreError> {
        self.call(Op::Delete(table, key.to_vec())).map(drop)
    }

    fn describe(&self) -> String {
        format!(
            "etcd {} under {}",
            self.cfg.endpoints.join(","),
            self.cfg.prefix
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::EtcdCluster;

    #[test]
    fn cluster_urls_and_node_ids_are_checked() {
        let c = EtcdConfig::from_url("etcd://10.0.0.1:2379,e2:2379", "head-1").unwrap();
        assert_eq!(
            c.endpoints,
            vec![
                "http://10.0.0.1:2379".to_string(),
                "http://e2:2379".to_string()
            ]
        );
        assert_eq!(c.prefix, "/rnfs/id/head-1");
        assert!(EtcdConfig::from_url("http://e:2379", "a").is_err());
        assert!(EtcdConfig::from_url("etcd://e", "a").is_err());
        assert!(EtcdConfig::from_url("etcd://e:x", "a").is_err());
        assert!(EtcdConfig::from_url("etcd://e:1", "a/b").is_err());
        assert!(EtcdConfig::from_url("etcd://e:1", "").is_err());
        assert_eq!(unhex(hex(&[0, 255, 16]).as_bytes()), Some(vec![0, 255, 16]));
        assert_eq!(unhex(b"0g"), None);
    }

    fn store(cluster: &EtcdCluster, node: &str) -> Etcd {
        Etcd::new(EtcdConfig {
            endpoints: cluster.endpoints(),
            prefix: format!("/rnfs/id/{node}"),
            timeout: Duration::from_secs(3),
        })
        .unwrap()
    }

    #[test]
    fn conformance_against_a_real_three_member_cluster() {
        let Some(cluster) = EtcdCluster::start(3) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let a = store(&cluster, "a");
        crate::conformance::basic(&a);
        crate::conformance::many(&a);
        crate::conformance::update(&a);
        // another identity's rows are its own
        let b = store(&cluster, "b");
        assert_eq!(b.load(Table::new("a")).unwrap(), vec![]);
        // a new client (another head taking over) finds what the first wrote
        let again = store(&cluster, "a");
        assert_eq!(again.load(Table::new("many")).unwrap().len(), 2500);
    }

    #[test]
    fn a_key_this_engine_did_not_write_is_skipped_not_fatal() {
        let Some(cluster) = EtcdCluster::start(1) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let s = store(&cluster, "k");
        let t = Table::new("t");
        s.put(t, b"good", b"1").unwrap();
        // a row written past the engine: its key is not hex
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut c = etcd_client::Client::connect(cluster.endpoints(), None)
                .await
                .unwrap();
            c.put("/rnfs/id/k/t/not-hex!", "x", None).await.unwrap();
        });
        assert_eq!(s.load(t).unwrap(), vec![(b"good".to_vec(), b"1".to_vec())]);
    }

    #[test]
    fn a_lost_quorum_is_an_error_in_bounded_time_and_service_resumes() {
        let Some(mut cluster) = EtcdCluster::start(3) else {
            panic!("etcd is not installed (scripts/install-deps installs etcd-server)")
        };
        let s = store(&cluster, "q");
        let t = Table::new("t");
        s.put(t, b"before", b"1").unwrap();
        // one member down: a quorum is left
        cluster.stop(2);
        s.put(t, b"one down", b"2").unwrap();
        // two down: no quorum; writes and (linearizable) reads fail, within the timeout
        cluster.stop(1);
        let t0 = std::time::Instant::now();
        assert!(matches!(
            s.put(t, b"no quorum", b"3"),
            Err(StoreError::Unavailable(_))
        ));
        assert!(matches!(s.load(t), Err(StoreError::Unavailable(_))));
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        // quorum back: the same store works again, and nothing written was lost
        cluster.restart(1);
        let mut rows = None;
        for _ in 0..50 {
            if let Ok(r) = s.load(t) {
                rows = Some(r);
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let keys: Vec<Vec<u8>> = rows
            .expect("quorum back")
            .into_iter()
            .map(|r| r.0)
            .collect();
        assert!(keys.contains(&b"before".to_vec()) && keys.contains(&b"one down".to_vec()));
        s.put(t, b"after", b"4").unwrap();
    }
}
