//! rnfsd: serves local directories over NFSv3 + MOUNT on TCP (and NFS over RPC-over-RDMA).

mod control;
mod metrics_http;
mod portmap;

use std::net::SocketAddr;
use std::sync::Arc;

use clap::Parser;
use rnfs_server::{config, notify, takeover};
use sunrpc::metrics::RpcMetrics;
use sunrpc::tcp::{serve_tcp, serve_udp, TcpConfig};
use sunrpc::Dispatcher;
use tokio::net::{TcpListener, UdpSocket};
use vfs::{Vfs, VfsConfig};

use crate::config::Args;
use crate::portmap::{Mapping, Portmap, IPPROTO_TCP, IPPROTO_UDP};

fn main() {
    let args = Args::parse();
    // The GSS-API reads the acceptor keytab's name from the environment: set it while this
    // is the only thread.
    std::env::set_var("KRB5_KTNAME", &args.keytab);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&args.log_level));
    if args.log_json {
        tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    } else {
        use std::io::IsTerminal;
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .init();
    }
    let threads = call_threads(&args);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("rnfsd")
        // calls tried on these threads may take the caller's identity: RPC-over-RDMA, whose
        // devices refuse a thread that changed it, runs on a runtime of its own (rdma_runtime)
        .on_thread_start(vfs::cred::allow_switch_in_try)
        // TCP calls that may block run on the blocking pool: its size is --threads (RDMA's
        // runtime has a pool of its own, of the same size)
        .max_blocking_threads(threads)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rnfsd: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(args)) {
        tracing::error!("{e}");
        eprintln!("rnfsd: {e}");
        std::process::exit(1);
    }
}

/// CPUs this process may run on.
fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Threads that run calls which may block (`--threads`, else 8 per CPU), per runtime.
fn call_threads(args: &Args) -> usize {
    args.threads.map_or(8 * cpus(), |n| n as usize)
}

/// Threads TCP connections are served on (`--tcp-threads`, else one per CPU).
fn tcp_threads(args: &Args) -> usize {
    args.tcp_threads.map_or(cpus(), |n| n as usize)
}

/// Threads the calls to one export may hold at once (`--export-threads`, else `--threads`
/// less an eighth, at least one left for the other exports).
fn export_threads(args: &Args) -> usize {
    let threads = call_threads(args);
    args.export_threads
        .map_or(threads - (threads / 8).max(1).min(threads - 1), |n| {
            n as usize
        })
}

/// The runtime RPC-over-RDMA connections run on: its threads never take a caller's identity
/// (the verbs and CM devices refuse writes from a thread whose credentials changed), while
/// those of the main runtime may, to run calls without a hand-off (vfs::cred). Built once,
/// it lives as long as the process.
fn rdma_runtime(blocking: usize) -> Result<&'static tokio::runtime::Runtime, String> {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(rt) = RT.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("rnfsd-rdma")
        .max_blocking_threads(blocking)
        .build()
        .map_err(|e| format!("cannot start the RDMA runtime: {e}"))?;
    Ok(RT.get_or_init(|| rt))
}

/// How listeners bind: `early` (with `--service-address`) lets them bind to an address not
/// yet on this machine.
#[derive(Clone, Copy)]
struct Binding {
    early: bool,
}

impl Binding {
    async fn tcp(self, addr: SocketAddr, what: &str) -> Result<TcpListener, String> {
        self.socket(addr, socket2::Type::STREAM)
            .and_then(|s| {
                s.listen(1024)?;
                TcpListener::from_std(s.into())
            })
            .map_err(|e| format!("cannot listen on {addr} for {what}: {e}"))
    }

    fn udp(self, addr: SocketAddr) -> std::io::Result<UdpSocket> {
        UdpSocket::from_std(self.socket(addr, socket2::Type::DGRAM)?.into())
    }

    /// A socket bound to `addr`; when early, even while the address is not on this machine
    /// (IP_FREEBIND): a head taking an identity over binds its listeners before it brings the
    /// service address up, so that the first client to arrive after the gratuitous ARP finds
    /// them (a client refused backs off for seconds before it tries again). Without a service
    /// address a listen address that is not this machine's stays an error at start.
    fn socket(self, addr: SocketAddr, ty: socket2::Type) -> std::io::Result<socket2::Socket> {
        let s = socket2::Socket::new(socket2::Domain::for_address(addr), ty, None)?;
        s.set_reuse_address(true)?;
        if self.early {
            match addr {
                SocketAddr::V4(_) => s.set_freebind_v4(true)?,
                SocketAddr::V6(_) => s.set_freebind_v6(true)?,
            }
        }
        s.set_nonblocking(true)?;
        s.bind(&addr.into())?;
        Ok(s)
    }
}

/// The RPCSEC_GSS acceptor, from the keytab: `None` (RPCSEC_GSS calls refused) when there is
/// no keytab and no export asks for Kerberos; an error when one does and it cannot be had.
fn gss_acceptor(
    args: &Args,
    vfs: &Vfs,
    metrics: &Arc<RpcMetrics>,
) -> Result<Option<Arc<sunrpc::gss::GssServer>>, String> {
    let krb5_exports = vfs.exports().iter().any(|e| {
        e.rules
            .iter()
            .any(|r| r.options.sec.iter().any(|f| f.is_krb5()))
    });
    let keytab = args.keytab.display().to_string();
    if !args.keytab.exists() {
        if krb5_exports {
            return Err(format!(
                "exports ask for sec=krb5* but the keytab {keytab} does not exist"
            ));
        }
        tracing::info!(keytab = %keytab, "no keytab: RPCSEC_GSS (Kerberos) is off");
        return Ok(None);
    }
    let ids = Arc::new(gss::IdentityCache::default());
    match gss::Krb5Acceptor::new(&keytab, args.gss_principal.as_deref(), ids) {
        Ok(a) => {
            let a = a.with_privileged(|f| vfs::cred::as_root(f));
            let max = usize::try_from(args.gss_max_contexts).unwrap_or(usize::MAX);
            tracing::info!(keytab = %keytab, principal = ?args.gss_principal, max_contexts = max,
                "RPCSEC_GSS (Kerberos V5) on");
            let server = sunrpc::gss::GssServer::new(Arc::new(a), max).with_events(metrics.clone());
            Ok(Some(Arc::new(server)))
        }
        Err(e) if krb5_exports => Err(e.to_string()),
        Err(e) => {
            tracing::warn!("{e}: RPCSEC_GSS (Kerberos) is off");
            Ok(None)
        }
    }
}

/// The pNFS metadata server's data servers, when `--pnfs-ds` names any: the backend sends
/// placed files' data to them, and the reconciler starts.
fn pnfs_mds(
    args: &Args,
    vfs: &Arc<Vfs>,
    cluster: Option<Arc<dyn store::Store>>,
) -> Result<Option<Arc<pnfs::Mds>>, String> {
    let any_rule = vfs
        .exports()
        .iter()
        .any(|e| e.rules.iter().any(|r| r.options.pnfs));
    if args.pnfs_ds.is_empty() {
        if any_rule {
            tracing::warn!("exports say pnfs but no --pnfs-ds is given: no layouts are handed out");
        }
        return Ok(None);
    }
    if !any_rule {
        tracing::warn!(
            "--pnfs-ds is given but no export rule says pnfs: no layouts are handed out"
        );
    }
    let cfg = pnfs::PnfsConfig {
        data_servers: args.pnfs_ds.clone(),
        mirrors: args.pnfs_mirrors,
        ids: args.pnfs_ids.clone(),
        placement: args.pnfs_placement,
        max_layouts: usize::try_from(args.pnfs_max_layouts).unwrap_or(usize::MAX),
    };
    let mds = Arc::new(pnfs::Mds::open(cfg, &args.state_dir, cluster).map_err(|e| e.to_string())?);
    vfs.set_remote_data(mds.clone());
    let v = vfs.clone();
    mds.start(
        Box::new(move |fh| {
            !matches!(
                v.resolve(fh),
                Err(vfs::VfsError::Stale | vfs::VfsError::BadHandle)
            )
        }),
        std::time::Duration::from_secs(args.pnfs_reconcile_secs),
    );
    for ds in &args.pnfs_ds {
        tracing::info!(ds = %ds.name, addr = %ds.addr, export = %ds.export, "pNFS data server");
    }
    Ok(Some(mds))
}

async fn run(args: Args) -> Result<(), String> {
    let exports = config::exports(&args)?;
    if let Some(cc) = &args.tcp_congestion {
        sunrpc::tcp::congestion_available(cc).map_err(|e| {
            format!(
                "--tcp-congestion {cc}: {e} (the kernel offers: {})",
                std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                    .unwrap_or_default()
                    .trim()
            )
        })?;
    }
    if !vfs::cred::can_switch() {
        tracing::warn!("not running as root: callers' credentials cannot be applied and handles cannot be opened");
    }
    let vfs = Arc::new(
        Vfs::new(VfsConfig {
            exports,
            state_dir: args.state_dir.clone(),
            fd_cache: args.fd_cache,
        })
        .map_err(|e| e.to_string())?,
    );
    for (path, clients) in vfs.export_list() {
        tracing::info!(export = %path.display(), clients = %clients.join(" "), "exporting");
    }
    let metrics = Arc::new(RpcMetrics::default());
    let mut disp = Dispatcher::new(args.drc_entries, metrics.clone());
    disp.set_admission(export_threads(&args));
    let gss = gss_acceptor(&args, &vfs, &metrics)?;
    if let Some(g) = &gss {
        disp.set_gss(g.clone());
        metrics.add_source(g.clone());
    }
    // the state other heads must find (--cluster), or none: each program's own in --state-dir
    let mut etcd_store: Option<Arc<store::Etcd>> = None;
    let mut identity_claims = 0u64;
    let mut identity: Option<(
        Arc<store::identity::Fence>,
        Arc<takeover::Takeover>,
        store::EtcdConfig,
    )> = None;
    let cluster: Option<Arc<dyn store::Store>> = match (&args.cluster, &args.node_id) {
        (Some(url), Some(id)) => {
            let moves = Arc::new(takeover::Takeover {
                node_id: id.clone(),
                address: args.service_address.clone(),
                command: args.takeover_cmd.clone(),
            });
            let cfg = store::EtcdConfig::from_url(url, id).map_err(|e| e.to_string())?;
            // one head serves an identity: wait for it (a standby), then answer only while
            // the claim holds
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            let holder = format!("{} pid {}", host.trim(), std::process::id());
            let fence = store::identity::claim(
                &cfg,
                &holder,
                std::time::Duration::from_secs(args.identity_ttl),
                Box::new({
                    let moves = moves.clone();
                    move || {
                        // the fence already refuses calls; the address goes so that it does
                        // not answer beside the next head's; a new instance starts as a standby
                        moves.released();
                        std::process::exit(3)
                    }
                }),
            )
            .map_err(|e| e.to_string())?;
            identity = Some((fence.clone(), moves.clone(), cfg.clone()));
            let holds = fence.clone();
            disp.set_fence(Arc::new(move || holds.holds()));
            // this identity's trees, which no other identity may serve (docs/ha.md)
            let paths: Vec<_> = vfs.export_list().into_iter().map(|(p, _)| p).collect();
            store::exports::register(&cfg, id, &paths)
                .map_err(|e| format!("cannot serve these exports: {e}"))?;
            let etcd = Arc::new(store::Etcd::new(cfg).map_err(|e| e.to_string())?);
            // writes carry the claim's revision: none lands once another head holds the identity
            etcd.fence_writes(fence.revision());
            // the identity's claims, counted in the cluster: its first start, then one per
            // failover or restart, whichever head made it
            match store::identity::count_claim(&*etcd) {
                Ok(n) => {
                    identity_claims = n;
                    tracing::info!(identity = %id, claims = n, "claim counted");
                }
                Err(e) => tracing::warn!(error = %e, "the identity's claims could not be counted"),
            }
            etcd_store = Some(etcd.clone());
            let etcd: Arc<dyn store::Store> = etcd;
            tracing::info!(store = %etcd.describe(), "NFSv4 clients, NLM hosts and the pNFS map recorded in the cluster");
            Some(etcd)
        }
        _ => None,
    };
    // (a standby gets here once it holds the identity: only then may its reconciler touch the
    // data servers)
    let mds = pnfs_mds(&args, &vfs, cluster.clone())?;
    let v4 = match &cluster {
        Some(etcd) => {
            // the cluster may be starting too: a minute to answer, then refuse to serve
            let t0 = std::time::Instant::now();
            loop {
                match nfs4::Nfs4::with_store(vfs.clone(), etcd.clone()) {
                    Ok(v4) => break v4,
                    Err(e) if t0.elapsed() < std::time::Duration::from_secs(60) => {
                        tracing::warn!(error = %e, "cannot read the client records; trying again");
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                    Err(e) => return Err(format!("cannot read the client records: {e}")),
                }
            }
        }
        None => {
            nfs4::Nfs4::with_state_dir(vfs.clone(), &args.state_dir).map_err(|e| e.to_string())?
        }
    };
    let mut v4 = v4
        .with_lease(args.lease_time)
        .with_unasked_write_delegations(args.write_delegations)
        .with_idmap_domain(args.idmap_domain.clone());
    if let Some(mds) = &mds {
        v4 = v4.with_pnfs(mds.clone());
    }
    if gss.is_some() {
        // NFSv4.0 clients that came under Kerberos are called back as this server's service
        // principal, with the keytab's keys (as knfsd calls them back with its machine's)
        let keytab = args.keytab.display().to_string();
        let initiators = gss::KeytabInitiators::new(&keytab, args.gss_principal.as_deref())
            .with_privileged(|f| vfs::cred::as_root(f));
        v4 = v4.with_callback_initiators(Arc::new(initiators));
    }
    let v4 = Arc::new(v4);
    if let Some((fence, _, _)) = &identity {
        // every head's `rnfsctl cluster` shows this identity's grace period
        let v = Arc::downgrade(&v4);
        fence.publish_grace(Arc::new(move || {
            v.upgrade().is_some_and(|v| v.grace_running())
        }));
    }
    if let Some(mds) = &mds {
        let holders: Arc<dyn pnfs::mds::LayoutHolders> = v4.clone();
        mds.set_layout_holders(Arc::downgrade(&holders));
    }
    // NLM requests see NFSv4's opens (share reservations) and release its expired clients
    v4.share_with_lock_manager();
    // NFSv3 changes recall NFSv4 delegations first
    disp.register(Arc::new(
        nfs3::Nfs3::new(vfs.clone()).with_change_guard(v4.clone()),
    ));
    disp.register(Arc::new(
        nfs3::NfsAcl::new(vfs.clone()).with_change_guard(v4.clone()),
    ));
    let mount = Arc::new(nfs3::Mount::new(vfs.clone()));
    disp.register(mount.clone());
    // NFSv3 locks: one NLM and one NSM program, served on TCP beside NFS and on UDP below.
    let lock_programs = if args.no_nlm {
        None
    } else {
        let cfg = nlm::NlmConfig {
            grace: std::time::Duration::from_secs(args.lease_time as u64),
            grants: nlm::GrantPolicy {
                pmap_port: args.nlm_client_portmap_port,
                ..Default::default()
            },
            ..Default::default()
        };
        let svc = match &cluster {
            Some(etcd) => nlm::LockService::start_with(
                vfs.clone(),
                v4.lock_manager(),
                Some(nlm::monitor::MonitorDb::on(etcd.clone())),
                cfg,
            ),
            None => {
                nlm::LockService::start(vfs.clone(), v4.lock_manager(), Some(&args.state_dir), cfg)
            }
        }
        .map_err(|e| e.to_string())?;
        let nlm4 = Arc::new(nlm::Nlm4::new(svc.clone()));
        let nsm = Arc::new(nlm::Nsm::new(svc.clone()));
        disp.register(nlm4.clone());
        disp.register(nsm.clone());
        metrics.add_source(svc.clone());
        Some((svc, nlm4, nsm))
    };
    metrics.add_source(v4.clone());
    metrics.add_source(Arc::new(metrics_http::ProcessMetrics));
    metrics.add_source(Arc::new(metrics_http::ExportMetrics(vfs.clone())));
    disp.register(v4.clone());
    let disp = Arc::new(disp);
    let cluster_state = match (&identity, &etcd_store) {
        (Some((fence, moves, cfg)), Some(store)) => {
            let c = Arc::new(control::ClusterState {
                cfg: cfg.clone(),
                fence: fence.clone(),
                takeover: moves.clone(),
                store: store.clone(),
                locks: v4.lock_manager(),
                claims: identity_claims,
            });
            metrics.add_source(c.clone());
            Some(c)
        }
        _ => None,
    };
    let control = Arc::new(control::Control {
        args: args.clone(),
        vfs: vfs.clone(),
        v4: v4.clone(),
        mount,
        nlm: lock_programs.as_ref().map(|(svc, _, _)| svc.clone()),
        metrics: metrics.clone(),
        started: std::time::Instant::now(),
        pnfs: mds.clone(),
        gss: gss.clone(),
        cluster: cluster_state.clone(),
    });
    let tcp_cfg = TcpConfig {
        max_record: args.max_record,
        max_connections: args.max_connections,
        max_in_flight: args.max_in_flight,
        max_total_in_flight: args.max_total_in_flight,
        max_queued_reply_bytes: args.max_queued_reply_bytes,
        record_timeout: std::time::Duration::from_secs(args.record_timeout),
        write_timeout: std::time::Duration::from_secs(args.write_timeout),
        splice_reads: args.splice_reads,
        congestion: args.tcp_congestion.as_deref().map(Arc::from),
        busy_poll: std::time::Duration::from_micros(args.tcp_busy_poll),
        lone_poll: std::time::Duration::from_micros(args.tcp_lone_poll),
        calls: Some(
            sunrpc::pool::CallPool::new(
                "rnfsd-call",
                call_threads(&args),
                Some(vfs::cred::allow_switch_in_try),
            )
            .with_busy_poll(std::time::Duration::from_micros(args.tcp_busy_poll)),
        ),
        io_threads: match tcp_threads(&args) {
            0 => None,
            n => Some(
                sunrpc::iothreads::IoThreads::new(
                    "rnfsd-tcp",
                    n,
                    Some(vfs::cred::allow_switch_in_try),
                )
                .map_err(|e| format!("cannot start the TCP threads: {e}"))?,
            ),
        },
    };
    if let Some(t) = &tcp_cfg.io_threads {
        metrics.add_source(Arc::new(t.clone()));
    }
    tracing::info!(
        max_connections = tcp_cfg.max_connections,
        max_record = tcp_cfg.max_record,
        max_in_flight = tcp_cfg.max_in_flight,
        max_total_in_flight = tcp_cfg.max_total_in_flight,
        threads = call_threads(&args),
        export_threads = export_threads(&args),
        max_queued_reply_bytes = tcp_cfg.max_queued_reply_bytes,
        record_timeout_s = args.record_timeout,
        write_timeout_s = args.write_timeout,
        drc_entries = args.drc_entries,
        lease_time_s = args.lease_time,
        splice_reads = ?args.splice_reads,
        tcp_congestion = args.tcp_congestion.as_deref().unwrap_or("the system's"),
        tcp_busy_poll_us = args.tcp_busy_poll,
        tcp_lone_poll_us = args.tcp_lone_poll,
        tcp_threads = tcp_threads(&args),
        "limits"
    );

    let mut ready = Vec::new();
    let mut tasks = tokio::task::JoinSet::new();

    let binding = Binding {
        early: args.service_address.is_some(),
    };
    let nfs = binding.tcp(args.listen, "NFS").await?;
    let nfs_addr = nfs.local_addr().map_err(|e| e.to_string())?;
    ready.push(format!("nfs+mount=tcp://{nfs_addr}"));
    tasks.spawn(serve_tcp(nfs, disp.clone(), tcp_cfg.clone()));

    // NLM and NSM over UDP too (a rebooted client's sm-notify sends over UDP only), on a
    // dispatcher of their own: NFS itself is not served over UDP.
    let mut lock_maps = Vec::new();
    let mut dispatchers = vec![disp.clone()];
    if let Some((svc, nlm4, nsm)) = &lock_programs {
        let mut ld = Dispatcher::new(args.drc_entries.min(4096), metrics.clone());
        if let Some(g) = &gss {
            ld.set_gss(g.clone());
        }
        ld.register(nlm4.clone());
        ld.register(nsm.clone());
        let ld = Arc::new(ld);
        let mut prots = vec![IPPROTO_TCP];
        match binding.udp(nfs_addr) {
            Ok(u) => {
                prots.push(IPPROTO_UDP);
                dispatchers.push(ld.clone());
                tasks.spawn(serve_udp(u, ld));
            }
            Err(e) => tracing::warn!(
                addr = %nfs_addr, error = %e,
                "NLM and NSM not served over UDP: a restarted client's notification cannot arrive"
            ),
        }
        ready.push(format!(
            "nlm+nsm={}://{nfs_addr}(state {})",
            if prots.len() == 2 { "tcp+udp" } else { "tcp" },
            svc.state()
        ));
        for (prog, vers) in [
            (nlmwire::NLM_PROG, nlmwire::NLM_VERS4),
            (nlmwire::SM_PROG, nlmwire::SM_VERS),
        ] {
            for prot in &prots {
                lock_maps.push(Mapping {
                    prog,
                    vers,
                    prot: *prot,
                    port: nfs_addr.port() as u32,
                });
            }
        }
    }

    let mut mount_port = nfs_addr.port();
    if let Some(p) = args.mount_port {
        let l = binding
            .tcp(SocketAddr::new(args.listen.ip(), p), "MOUNT")
            .await?;
        let a = l.local_addr().map_err(|e| e.to_string())?;
        mount_port = a.port();
        ready.push(format!("mount=tcp://{a}"));
        tasks.spawn(serve_tcp(l, disp.clone(), tcp_cfg.clone()));
    }

    let mut maps = vec![
        Mapping {
            prog: nfs3wire::NFS3_PROGRAM,
            vers: 3,
            prot: IPPROTO_TCP,
            port: nfs_addr.port() as u32,
        },
        Mapping {
            prog: nfs3wire::NFS3_PROGRAM,
            vers: 4,
            prot: IPPROTO_TCP,
            port: nfs_addr.port() as u32,
        },
        Mapping {
            prog: nfs3wire::NFS_ACL_PROGRAM,
            vers: nfs3wire::NFS_ACL_V3,
            prot: IPPROTO_TCP,
            port: nfs_addr.port() as u32,
        },
        Mapping {
            prog: nfs3wire::MOUNTPROG,
            vers: 3,
            prot: IPPROTO_TCP,
            port: mount_port as u32,
        },
    ];
    let rpcbind: SocketAddr = ([127, 0, 0, 1], 111).into();
    let mut registered = false;
    if !args.no_portmap {
        if portmap::rpcbind_running(rpcbind).await {
            // The kernel's lockd and rpc.statd (of knfsd, or of this machine's own NFS mounts)
            // may hold these programs: they are left to them, and say so.
            for m in portmap::unclaimed(rpcbind, &lock_maps, nfs_addr.port()).await {
                maps.push(m);
            }
            if lock_maps.iter().any(|m| !maps.contains(m)) {
                tracing::warn!("another lock manager or status monitor is registered with rpcbind: rnfsd's NLM/NSM are not registered, so NFSv3 clients reach that one (use -o nolock, or stop it)");
            }
            match portmap::register(rpcbind, &maps).await {
                Ok(n) if n == maps.len() => {
                    registered = true;
                    ready.push("portmap=rpcbind(registered)".into());
                }
                Ok(n) => tracing::warn!(accepted = n, "rpcbind refused some registrations"),
                Err(e) => tracing::warn!(error = %e, "registering with rpcbind failed"),
            }
        } else {
            let pm_addr = SocketAddr::new(args.listen.ip(), args.portmap_port);
            let mut pm_maps = maps.clone();
            pm_maps.extend(lock_maps.iter().copied());
            pm_maps.push(Mapping {
                prog: portmap::PMAP_PROGRAM,
                vers: 2,
                prot: IPPROTO_TCP,
                port: args.portmap_port as u32,
            });
            pm_maps.push(Mapping {
                prog: portmap::PMAP_PROGRAM,
                vers: 2,
                prot: IPPROTO_UDP,
                port: args.portmap_port as u32,
            });
            let mut pm = Dispatcher::new(64, metrics.clone());
            pm.register(Arc::new(Portmap::new(pm_maps)));
            let pm = Arc::new(pm);
            match (
                binding.tcp(pm_addr, "the port mapper").await,
                binding.udp(pm_addr).map_err(|e| e.to_string()),
            ) {
                (Ok(t), Ok(u)) => {
                    ready.push(format!("portmap=tcp+udp://{pm_addr}"));
                    tasks.spawn(serve_tcp(t, pm.clone(), tcp_cfg.clone()));
                    tasks.spawn(serve_udp(u, pm));
                }
                (Err(e), _) | (_, Err(e)) => tracing::warn!(
                    addr = %pm_addr, error = %e,
                    "no rpcbind and cannot serve the port mapper: clients must give port= and mountport="
                ),
            }
        }
    }

    if let Some(maddr) = args.metrics {
        let l = Binding { early: false }.tcp(maddr, "metrics").await?;
        let a = l.local_addr().map_err(|e| e.to_string())?;
        ready.push(format!("metrics=http://{a}/metrics"));
        let m = metrics.clone();
        tasks.spawn(metrics_http::serve(l, m));
    }

    // --- RPC-over-RDMA (crates/verbs, crates/rpcrdma) ---
    if !args.no_rdma {
        let cfg = rpcrdma::transport::RdmaConfig {
            addr: args.rdma.unwrap_or_else(|| {
                SocketAddr::from(([0, 0, 0, 0], rpcrdma::transport::NFS_RDMA_PORT))
            }),
            credits: args.rdma_credits,
            inline: rpcrdma::InlineConfig::new(args.rdma_inline, args.rdma_inline),
            pool: rpcrdma::transport::PoolConfig {
                recv_count: args.rdma_recv_buffers as usize,
                bulk_count: args.rdma_bulk_buffers as usize,
                ..rpcrdma::transport::RdmaConfig::default().pool
            },
            max_conns: args.rdma_max_conns as usize,
            send_depth: args.rdma_send_depth,
            busy_poll: std::time::Duration::from_micros(args.rdma_busy_poll),
            ..Default::default()
        };
        let addr = cfg.addr;
        let rdma_rt = rdma_runtime(call_threads(&args))?;
        let bound = {
            let _in = rdma_rt.enter();
            rpcrdma::transport::RdmaServer::bind(cfg)
        };
        match bound {
            Ok(srv) => {
                ready.push(format!(
                    "nfs=rdma://{}({})",
                    srv.local_addr(),
                    srv.device_names().join(",")
                ));
                metrics.add_source(srv.metrics());
                let serving = rdma_rt.spawn(srv.serve(disp.clone()));
                tasks.spawn(async move {
                    serving
                        .await
                        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
                });
            }
            // Without --rdma, RDMA is optional: say why it is off, in one line, and go on.
            Err(rpcrdma::transport::StartError::Unavailable(why)) if args.rdma.is_none() => {
                tracing::info!("RDMA unavailable: {why}; serving TCP only");
            }
            Err(e) if args.rdma.is_none() => {
                tracing::warn!(
                    "RDMA unavailable: cannot listen on rdma://{addr}: {e}; serving TCP only"
                );
            }
            Err(e) => return Err(format!("cannot serve RPC-over-RDMA on {addr}: {e}")),
        }
    }
    // --- end RPC-over-RDMA ---

    let admin_socket = match args.no_admin {
        true => None,
        false => control::bind(&args.admin_socket)?,
    };
    let admin_socket = admin_socket.map(|l| {
        let path = args.admin_socket.clone();
        ready.push(format!("admin=unix:{}", path.display()));
        tokio::spawn(control::serve(l, path.clone(), control.clone()));
        path
    });

    // Handlers go in before the ready line, so a SIGTERM right after it is a clean shutdown.
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut hangup = signal(SignalKind::hangup()).map_err(|e| e.to_string())?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    if let Some((_, moves, _)) = &identity {
        // the listeners are bound: now the address, so that clients sent here are answered
        if let Err(e) = moves.claimed() {
            // clients could not reach this head: let a standby have the identity (it does
            // when the lease runs out)
            moves.released();
            return Err(format!("taking the identity over failed: {e}"));
        }
    }
    tracing::info!("rnfsd ready: {}", ready.join(" "));
    notify::ready(&ready.join(" "));
    let failed = loop {
        tokio::select! {
            _ = &mut ctrl_c => break None,
            _ = term.recv() => break None,
            _ = hangup.recv() => {
                tracing::info!("SIGHUP: reloading the exports");
                notify::reloading();
                let c = control.clone();
                match tokio::task::spawn_blocking(move || c.reload()).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::error!("reload refused, the exports stay as they were: {e}"),
                    Err(e) => tracing::error!("reload failed: {e}"),
                }
                notify::reloaded();
            }
            Some(r) = tasks.join_next() => {
                break Some(match r {
                    Ok(Err(e)) => format!("a listener failed: {e}"),
                    Ok(Ok(())) => "a listener stopped".to_string(),
                    Err(e) => format!("a listener failed: {e}"),
                });
            }
        }
    };
    notify::stopping();
    stop(&dispatchers, &vfs).await;
    // client records of clients that went before the stop go too (bounded: a cluster that
    // does not answer leaves them, which only lengthens the next instance's grace period)
    let records = v4.clone();
    let settled = tokio::task::spawn_blocking(move || records.settle_records());
    if tokio::time::timeout(std::time::Duration::from_secs(5), settled)
        .await
        .is_err()
    {
        tracing::warn!("client record removals not made in 5 s; stopping without them");
    }
    tasks.abort_all();
    if let Some((fence, moves, _)) = identity {
        // hand the identity over now (a standby claims it at once), the address first
        let released = tokio::task::spawn_blocking(move || {
            moves.released();
            fence.release(std::time::Duration::from_secs(5))
        })
        .await;
        if !matches!(released, Ok(true)) {
            tracing::warn!(
                "the identity was not released: a standby takes it when its lease runs out"
            );
        }
    }
    if registered {
        portmap::unregister(rpcbind, &maps).await;
    }
    if let Some(path) = &admin_socket {
        let _ = std::fs::remove_file(path);
    }
    tracing::info!("stopped");
    // a listener that failed is a failure of the service (systemd restarts it on one)
    failed.map_or(Ok(()), Err)
}

/// Stops serving: calls that arrive are dropped (their clients send them again to the next
/// instance), calls running finish and their replies go out, and what clients wrote is made
/// durable, so that nothing a client was told is done is lost with the process.
async fn stop(dispatchers: &[Arc<Dispatcher>], vfs: &Arc<Vfs>) {
    tracing::info!("stopping: finishing the calls in flight");
    for d in dispatchers {
        d.stop();
    }
    for d in dispatchers {
        if !d.drained(std::time::Duration::from_secs(10)).await {
            tracing::warn!("calls still running after 10 s; stopping without them");
        }
    }
    // the connections' writers send the replies of the last calls
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let v = vfs.clone();
    match tokio::task::spawn_blocking(move || v.sync_all()).await {
        Ok(failed) => {
            for (path, e) in failed {
                tracing::error!(export = %path.display(), error = %e, "cannot flush the export's file system");
            }
        }
        Err(e) => tracing::error!("flushing the exports failed: {e}"),
    }
}
