//! The running server as the administrator reaches it: export reload (SIGHUP, the admin
//! socket) and the admin socket's commands (crates/admin has the messages and rnfsctl).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use admin::{ExportInfo, LockInfo, Nfs3Client, Nfs4Client, Request, Response, MAX_REQUEST};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use vfs::exports::{ClientRule, Squash};
use vfs::Vfs;

use crate::config::{self, Args};

/// What the admin commands and the signal handlers act on.
pub struct Control {
    /// The command line: where the exports come from.
    pub args: Args,
    /// The backend.
    pub vfs: Arc<Vfs>,
    /// NFSv4 (its pseudo file system follows the exports; its clients can be evicted).
    pub v4: Arc<nfs4::Nfs4>,
    /// MOUNT (its list of mounts).
    pub mount: Arc<nfs3::Mount>,
    /// NLM, unless `--no-nlm`.
    pub nlm: Option<Arc<nlm::LockService>>,
    /// The RPC metrics (connection gauges).
    pub metrics: Arc<sunrpc::metrics::RpcMetrics>,
    /// When the server started.
    pub started: Instant,
    /// The pNFS metadata server, when there are data servers.
    pub pnfs: Option<Arc<pnfs::Mds>>,
    /// The RPCSEC_GSS acceptor, when Kerberos is on.
    pub gss: Option<Arc<sunrpc::gss::GssServer>>,
    /// This head's identity, with `--cluster`.
    pub cluster: Option<Arc<ClusterState>>,
}

/// A head's part in a cluster (`--cluster`), as `rnfsctl cluster` shows it.
pub struct ClusterState {
    /// Where the cluster is and which identity this head serves.
    pub cfg: store::EtcdConfig,
    /// The claim this head holds.
    pub fence: Arc<store::identity::Fence>,
    /// What moves with the identity.
    pub takeover: Arc<crate::takeover::Takeover>,
    /// The records' store in the cluster (its calls' counters).
    pub store: Arc<store::Etcd>,
    /// The lock table (whose grace period NFSv4 and NLM share).
    pub locks: Arc<locks::LockManager>,
    /// How many times the identity has been claimed, this head's claim included (0: not
    /// counted, the cluster did not answer).
    pub claims: u64,
}

/// The cluster's families (docs/metrics.md): this head's claim, its grace, its store's calls.
impl sunrpc::metrics::MetricsSource for ClusterState {
    fn encode(&self, out: &mut sunrpc::metrics::MetricsOut<'_>) -> std::fmt::Result {
        use std::sync::atomic::Ordering::Relaxed;
        out.gauge(
            "rnfs_cluster_serving",
            "1 while this head holds its identity (its fence holds), else 0.",
            u64::from(self.fence.holds()),
        )?;
        out.gauge(
            "rnfs_cluster_claim_revision",
            "The etcd revision of this head's claim (its fencing token).",
            self.fence.revision().max(0) as u64,
        )?;
        out.gauge(
            "rnfs_cluster_standby_milliseconds",
            "How long this head stood by before it claimed its identity (after a failover: from its start).",
            self.fence.waited().as_millis() as u64,
        )?;
        out.gauge(
            "rnfs_cluster_claims",
            "How many times this identity has been claimed, this head's claim included: its first start, then one per failover or restart, whichever head made it (counted in etcd).",
            self.claims,
        )?;
        out.gauge(
            "rnfs_grace",
            "1 while the grace period runs (NFSv4 or NLM reclaims only), else 0.",
            u64::from(self.locks.grace().running()),
        )?;
        out.gauge(
            "rnfs_grace_last_milliseconds",
            "How long the last grace period that ended ran on this head (0 before one ended).",
            self.locks
                .grace()
                .last_duration()
                .map_or(0, |d| d.as_millis() as u64),
        )?;
        let st = self.store.stats();
        out.counter(
            "rnfs_store_calls_total",
            "Calls to the state store in etcd (loads, puts, deletes, updates).",
            st.calls.load(Relaxed),
        )?;
        out.counter_f64(
            "rnfs_store_call_seconds_total",
            "Time spent in calls to the state store: divided by rnfs_store_calls_total, their mean latency.",
            st.micros.load(Relaxed) as f64 / 1e6,
        )?;
        out.counters(
            "rnfs_store_errors_total",
            "Calls to the state store that failed, by why: unavailable (no quorum in time), fenced (another head holds the identity), failed.",
            [
                ([("kind", "unavailable")], st.unavailable.load(Relaxed)),
                ([("kind", "fenced")], st.fenced.load(Relaxed)),
                ([("kind", "failed")], st.failed.load(Relaxed)),
            ],
        )
    }
}

impl Control {
    /// Re-reads the exports (`--exports` file and `--export` flags) and applies them. A file
    /// with an error, or an export that cannot be opened, changes nothing.
    pub fn reload(&self) -> Result<vfs::fs::ExportChanges, String> {
        let entries = config::exports(&self.args)?;
        if let Some(c) = &self.cluster {
            // trees another identity serves are refused before anything changes
            let paths: Vec<_> = entries.iter().map(|e| e.path.clone()).collect();
            store::exports::register(&c.cfg, &c.takeover.node_id, &paths)
                .map_err(|e| format!("the cluster refuses these exports: {e}"))?;
        }
        let changes = self.vfs.reload(entries).map_err(|e| e.to_string())?;
        self.v4.exports_changed();
        for p in &changes.added {
            tracing::info!(export = %p.display(), "reload: exported");
        }
        for (p, _) in &changes.removed {
            tracing::info!(export = %p.display(), "reload: no longer exported; its handles are stale");
        }
        for p in &changes.changed {
            tracing::info!(export = %p.display(), "reload: client rules changed");
        }
        Ok(changes)
    }

    /// Answers one request.
    pub fn handle(&self, req: Request) -> Response {
        match req {
            Request::Exports => Response::Exports {
                exports: self.exports(),
            },
            Request::Clients => self.clients(),
            Request::Evict { client } => self.evict(&client),
            Request::Reload => match self.reload() {
                Ok(c) => Response::Reloaded {
                    exports: self.vfs.exports().len(),
                    added: c.added.iter().map(|p| p.display().to_string()).collect(),
                    removed: c
                        .removed
                        .iter()
                        .map(|(p, _)| p.display().to_string())
                        .collect(),
                    changed: c.changed.iter().map(|p| p.display().to_string()).collect(),
                },
                Err(message) => Response::Error { message },
            },
            Request::Status => self.status(),
            Request::PnfsDrain { ds } => self.pnfs_drain(&ds),
            Request::Cluster => self.cluster(),
            Request::ClusterRelease { id } => self.cluster_release(&id),
        }
    }

    /// Forgets identity `id`'s exports in the cluster's registry (`store::exports::release`)
    /// when no head holds it: a tree moves to another identity only after its heads stopped.
    fn cluster_release(&self, id: &str) -> Response {
        let Some(c) = &self.cluster else {
            return Response::Error {
                message: "this rnfsd is not in a cluster (no --cluster)".into(),
            };
        };
        let fail = |message: String| Response::Error { message };
        let root = c.cfg.prefix.rsplit_once('/').map_or("/rnfs/id", |(r, _)| r);
        match store::identity::list(&c.cfg, root) {
            Ok(ids) => {
                if let Some(h) = ids
                    .iter()
                    .find(|i| i.id == id)
                    .and_then(|i| i.holder.as_ref())
                {
                    return fail(format!(
                        "identity {id} is held by {h}: stop its heads first"
                    ));
                }
            }
            Err(e) => return fail(format!("cannot read the cluster: {e}")),
        }
        if let Err(e) = store::exports::release(&c.cfg, id) {
            return fail(format!("cannot change the export registry: {e}"));
        }
        tracing::info!(
            identity = id,
            "its exports forgotten in the cluster's registry"
        );
        match store::exports::list(&c.cfg) {
            Ok(rows) => Response::Released {
                id: id.to_string(),
                exports: rows
                    .into_iter()
                    .map(|(i, p)| (i, p.display().to_string()))
                    .collect(),
            },
            Err(e) => fail(format!("cannot read the export registry: {e}")),
        }
    }

    fn pnfs_drain(&self, ds: &str) -> Response {
        let Some(mds) = &self.pnfs else {
            return Response::Error {
                message: "no pNFS data servers are configured (--pnfs-ds)".into(),
            };
        };
        match mds.drain(ds) {
            Ok(()) => Response::Draining {
                draining: mds
                    .draining()
                    .into_iter()
                    .map(|d| (d.ds, d.copies as u64))
                    .collect(),
            },
            Err(e) => Response::Error {
                message: e.to_string(),
            },
        }
    }

    fn exports(&self) -> Vec<ExportInfo> {
        self.vfs
            .exports()
            .into_iter()
            .map(|e| ExportInfo {
                path: e.path.display().to_string(),
                fsid: e.id,
                v4_root: e.v4_root,
                rules: e
                    .rules
                    .iter()
                    .map(|r| (r.client.to_string(), options_text(r)))
                    .collect(),
            })
            .collect()
    }

    fn clients(&self) -> Response {
        let nfs4 = self
            .v4
            .clients()
            .into_iter()
            .map(|c| Nfs4Client {
                id: format!("{:016x}", c.id),
                owner: printable(&c.owner),
                address: Some(c.addr.to_string()),
                minor_version: c.minor,
                confirmed: c.confirmed,
                idle_secs: c.idle.as_secs(),
                sessions: c.sessions as u64,
                opens: c.opens as u64,
                locks: c.locks as u64,
                delegations: c.delegations as u64,
                auth: c.auth.to_string(),
            })
            .collect();
        // one entry per NLM host (a client machine may lock under several names), its
        // address's mounts on the first; addresses that only mounted after them
        let mut nfs3: Vec<Nfs3Client> = Vec::new();
        for h in self.nlm.as_ref().map(|n| n.hosts()).unwrap_or_default() {
            nfs3.push(Nfs3Client {
                address: h.addr.to_string(),
                mounts: Vec::new(),
                nlm_name: Some(printable(&h.name)),
                locks: h
                    .locks
                    .iter()
                    .map(|(f, l)| LockInfo {
                        file: format!("{:x}:{}", f.fsid, f.fileid),
                        offset: l.start,
                        length: if l.end == u64::MAX {
                            0
                        } else {
                            l.end - l.start
                        },
                        exclusive: l.write,
                    })
                    .collect(),
                shares: h.shares as u64,
            });
        }
        for (host, path) in self.mount.mounts() {
            match nfs3.iter_mut().find(|c| c.address == host) {
                Some(c) => c.mounts.push(path),
                None => nfs3.push(Nfs3Client {
                    address: host,
                    mounts: vec![path],
                    nlm_name: None,
                    locks: Vec::new(),
                    shares: 0,
                }),
            }
        }
        let gss = self
            .gss
            .as_ref()
            .map(|g| g.views())
            .unwrap_or_default()
            .into_iter()
            .map(|v| admin::GssContextInfo {
                address: v.addr.to_string(),
                principal: v.peer.principal.to_string(),
                uid: v.peer.ident.as_ref().map(|i| i.uid),
                services: v
                    .services
                    .iter()
                    .map(|s| s.krb5_name().to_string())
                    .collect(),
                expires_secs: v.expires_in.as_secs(),
                cipher: v.peer.cipher.to_string(),
            })
            .collect();
        Response::Clients { nfs3, nfs4, gss }
    }

    fn evict(&self, who: &str) -> Response {
        let hex = who.trim_start_matches("0x");
        if let Ok(id) = u64::from_str_radix(hex, 16) {
            if let Some(released) = self.v4.evict(id) {
                return Response::Evicted {
                    client: format!("NFSv4 client {id:016x}"),
                    released: released as u64,
                };
            }
        }
        let addr = who.parse::<IpAddr>().ok();
        let name = addr.is_none().then_some(who.as_bytes());
        let mounts = match addr {
            Some(a) => self.mount.forget_host(&a.to_string()),
            None => 0,
        };
        let (hosts, released) = self.nlm.as_ref().map_or((0, 0), |n| n.evict(addr, name));
        if mounts == 0 && hosts == 0 {
            return Response::Error {
                message: format!("no client {who:?}: give an NFSv4 client id or an NFSv3 host's address or name, as `clients` shows them"),
            };
        }
        Response::Evicted {
            client: format!("NFSv3 host {who}"),
            released: released as u64,
        }
    }

    fn cluster(&self) -> Response {
        let Some(c) = &self.cluster else {
            return Response::Error {
                message: "this rnfsd is not in a cluster (no --cluster)".into(),
            };
        };
        // the identities' keys share the parent of this one's prefix
        let root = c.cfg.prefix.rsplit_once('/').map_or("/rnfs/id", |(r, _)| r);
        match store::identity::list(&c.cfg, root) {
            Ok(ids) => Response::Cluster {
                node_id: c.takeover.node_id.clone(),
                revision: c.fence.revision(),
                serving: c.fence.holds(),
                service_address: c.takeover.address.as_ref().map(|a| a.to_string()),
                grace: self.v4.grace_running(),
                identities: ids
                    .into_iter()
                    .map(|i| admin::IdentityInfo {
                        grace: i.grace.map(|g| (g.running, g.since_unix)),
                        id: i.id,
                        holder: i.holder,
                        revision: i.revision,
                        lease_ttl_secs: i.lease_ttl_secs,
                    })
                    .collect(),
            },
            Err(e) => Response::Error {
                message: format!("cannot read the cluster: {e}"),
            },
        }
    }

    fn status(&self) -> Response {
        let a = &self.args;
        let limits = [
            ("max_connections", a.max_connections as u64),
            ("max_in_flight", a.max_in_flight as u64),
            ("max_total_in_flight", a.max_total_in_flight as u64),
            ("max_record", a.max_record as u64),
            ("max_queued_reply_bytes", a.max_queued_reply_bytes as u64),
            ("record_timeout_s", a.record_timeout),
            ("write_timeout_s", a.write_timeout),
            ("drc_entries", a.drc_entries as u64),
            ("fd_cache", a.fd_cache as u64),
            ("lease_time_s", a.lease_time as u64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let (clients, sessions, stateids) = self.v4.state_counts();
        let mut counters = vec![
            ("exports", self.vfs.exports().len() as u64),
            ("nfs3_mounts", self.mount.mounts().len() as u64),
            ("nfs4_clients", clients as u64),
            ("nfs4_sessions", sessions as u64),
            ("nfs4_stateids", stateids as u64),
            (
                "tcp_connections",
                self.metrics.gauge("tcp_connections").get() as u64,
            ),
        ];
        let t = self.v4.lock_manager().totals();
        counters.push(("locks_nfs4", t.nfs4_locks as u64));
        counters.push(("locks_nlm", t.nlm_locks as u64));
        counters.push(("lock_waiters", t.waiters as u64));
        if let Some(n) = &self.nlm {
            counters.push(("nlm_hosts", n.hosts().len() as u64));
        }
        Response::Status {
            version: env!("CARGO_PKG_VERSION").to_string(),
            uptime_secs: self.started.elapsed().as_secs(),
            limits,
            counters: counters
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }
}

/// A rule's options as exports(5) writes them.
fn options_text(r: &ClientRule) -> String {
    let o = &r.options;
    let mut v: Vec<String> = vec![
        if o.rw { "rw" } else { "ro" }.into(),
        if o.sync { "sync" } else { "async" }.into(),
        if o.secure { "secure" } else { "insecure" }.into(),
        match o.squash {
            Squash::None => "no_root_squash",
            Squash::Root => "root_squash",
            Squash::All => "all_squash",
        }
        .into(),
    ];
    if o.squash != Squash::None {
        v.push(format!("anonuid={},anongid={}", o.anonuid, o.anongid));
    }
    if let Some(f) = &o.fsid {
        v.push(format!("fsid={f}"));
    }
    if !o.sec.is_empty() {
        let names: Vec<&str> = o.sec.iter().map(|f| f.name()).collect();
        v.push(format!("sec={}", names.join(":")));
    }
    if o.mountpoint {
        match &o.mountpoint_path {
            Some(p) => v.push(format!("mountpoint={}", p.display())),
            None => v.push("mountpoint".into()),
        }
    }
    if o.pnfs {
        v.push("pnfs".into());
    }
    v.join(",")
}

/// Bytes a client chose, as text: printable ASCII kept, the rest escaped.
fn printable(b: &[u8]) -> String {
    b.iter()
        .flat_map(|c| std::ascii::escape_default(*c))
        .map(char::from)
        .collect()
}

/// Listens on `path`, mode 0600 in a directory made if missing. None (and a warning) when
/// another live server answers there; a socket file nobody answers on is replaced.
pub fn bind(path: &Path) -> Result<Option<UnixListener>, String> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("admin socket directory {}: {e}", dir.display()))?;
    }
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            tracing::warn!(socket = %path.display(),
                "another server answers on the admin socket: no admin interface (give --admin-socket)");
            return Ok(None);
        }
        std::fs::remove_file(path)
            .map_err(|e| format!("stale admin socket {}: {e}", path.display()))?;
    }
    let l = UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on admin socket {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("admin socket {}: {e}", path.display()))?;
    Ok(Some(l))
}

/// Serves the admin socket: one request per connection, from root or the server's own user.
pub async fn serve(l: UnixListener, path: PathBuf, control: Arc<Control>) {
    use std::os::unix::fs::MetadataExt;
    // the socket's owner is the user the server runs as
    let owner = std::fs::metadata(&path).map(|m| m.uid()).unwrap_or(0);
    loop {
        let Ok((s, _)) = l.accept().await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let uid = s.peer_cred().map(|c| c.uid()).ok();
        if uid != Some(0) && uid != Some(owner) {
            tracing::warn!(
                ?uid,
                "admin socket: refused a caller that is neither root nor the server's user"
            );
            continue;
        }
        let control = control.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(s, control).await {
                tracing::debug!(error = %e, "admin socket: connection failed");
            }
        });
    }
}

async fn answer(s: UnixStream, control: Arc<Control>) -> std::io::Result<()> {
    let (rd, mut wr) = s.into_split();
    let mut line = Vec::new();
    let mut rd = BufReader::new(rd).take(MAX_REQUEST as u64);
    tokio::time::timeout(Duration::from_secs(10), rd.read_until(b'\n', &mut line))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    let resp = match serde_json::from_slice::<Request>(&line) {
        Ok(req) => {
            tracing::info!(?req, "admin request");
            // a reload opens export roots and resolves host names: off the runtime's threads
            tokio::task::spawn_blocking(move || control.handle(req))
                .await
                .unwrap_or_else(|e| Response::Error {
                    message: format!("the request failed: {e}"),
                })
        }
        Err(e) => Response::Error {
            message: format!("not a request: {e}"),
        },
    };
    let mut out = serde_json::to_vec(&resp).map_err(std::io::Error::other)?;
    out.push(b'\n');
    wr.write_all(&out).await?;
    wr.shutdown().await
}
