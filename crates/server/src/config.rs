//! Command line and the export list it describes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;

use clap::Parser;
use sunrpc::tcp::SpliceReads;
use vfs::exports::{load_exports, ClientMatch, ClientRule, ExportEntry, ExportOptions};

/// A user-space NFS server for local directories.
///
/// rnfsd serves the directories named by --export and --exports over NFSv3 (with MOUNT, and
/// NLM and NSM for byte-range locks) and NFSv4.0, 4.1 and 4.2, over TCP and, where RDMA devices
/// exist, RPC-over-RDMA. It runs as root and applies each caller's uid, gid and groups per
/// call; file handles are sealed with a key kept in --state-dir and survive restarts.
///
/// Once it serves, rnfsd logs one line starting with "rnfsd ready:" that names every address
/// it listens on and, when started by systemd with Type=notify, sends READY=1.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "rnfsd",
    version,
    override_usage = "rnfsd [--export DIR]... [--exports FILE] [OPTIONS]"
)]
pub struct Args {
    /// Export DIR read-write to localhost clients (127.0.0.0/8 and ::1), root_squash, insecure
    /// ports allowed. Repeatable.
    #[arg(long = "export", value_name = "DIR")]
    pub export: Vec<PathBuf>,
    /// Read exports from FILE in exports(5) syntax.
    #[arg(long = "exports", value_name = "FILE")]
    pub exports: Option<PathBuf>,
    /// TCP address for NFS and MOUNT together.
    #[arg(long, default_value = "0.0.0.0:2049", value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// Also serve MOUNT on this TCP port (same address as --listen).
    #[arg(long, value_name = "PORT")]
    pub mount_port: Option<u16>,
    /// Serve Prometheus metrics over HTTP at ADDR:PORT.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// The admin socket (root only), which `rnfsctl` talks to: exports, clients, eviction,
    /// reload, status.
    #[arg(long, default_value = admin::DEFAULT_SOCKET, value_name = "PATH")]
    pub admin_socket: std::path::PathBuf,
    /// Serve no admin socket.
    #[arg(long, conflicts_with = "admin_socket")]
    pub no_admin: bool,
    /// Neither register with rpcbind nor serve the port mapper.
    #[arg(long)]
    pub no_portmap: bool,
    /// Serve no NFSv3 locking (NLM v4 and NSM): clients then mount with `-o nolock`. Without
    /// it both are served on the NFS port (TCP) and on the same port over UDP.
    #[arg(long)]
    pub no_nlm: bool,
    /// Port of the clients' port mappers that NLM calls back through (111; tests change it).
    #[arg(long, default_value_t = 111, value_name = "PORT", hide = true)]
    pub nlm_client_portmap_port: u16,
    /// Port of our own port mapper when no rpcbind runs.
    #[arg(long, default_value_t = 111, value_name = "PORT")]
    pub portmap_port: u16,
    /// Directory for persistent state (the file handle key).
    #[arg(long, default_value = "/var/lib/rnfsd", value_name = "DIR")]
    pub state_dir: PathBuf,
    /// Largest RPC record accepted, in bytes.
    #[arg(long, default_value_t = (1 << 20) + 64 * 1024)]
    pub max_record: usize,
    /// Connections served at once.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
    /// Calls executing at once per connection.
    #[arg(long, default_value_t = 128)]
    pub max_in_flight: usize,
    /// Calls executing at once over all connections.
    #[arg(long, default_value_t = 1024)]
    pub max_total_in_flight: usize,
    /// Threads that run calls (file-system work); more calls wait for a free one. Default:
    /// 8 per CPU. More threads than that mostly wake and switch: loopback 4 KiB random reads
    /// ran 1.52x faster with 16 than with 512 on 2 CPUs (bench/ab at ffb9823,
    /// docs/benchmarks.md).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Threads the calls to one export may hold at once (`--threads` less an eighth, at least
    /// one left: a file system that stalls leaves the others threads); more wait for one of
    /// them to finish, holding none. Default: that.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub export_threads: Option<u32>,
    /// Reply bytes queued per connection for a client that reads slowly.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    pub max_queued_reply_bytes: usize,
    /// Seconds a client may take to send a record it has begun; then it is disconnected.
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub record_timeout: u64,
    /// Seconds a client may leave its replies unread; then it is disconnected.
    #[arg(long, value_name = "SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub write_timeout: u64,
    /// Replies kept in the duplicate request cache.
    #[arg(long, default_value_t = 8192)]
    pub drc_entries: usize,
    /// Open descriptors cached per kind (paths, data).
    #[arg(long, default_value_t = 8192)]
    pub fd_cache: usize,
    /// NFSv4 owner strings as NAME@DOMAIN from the user and group databases (default: numeric
    /// ids, as the Linux client uses with AUTH_SYS).
    #[arg(long, value_name = "DOMAIN")]
    pub idmap_domain: Option<String>,
    /// NFSv4 lease time in seconds; the grace period after a restart lasts one lease.
    #[arg(long, value_name = "SECS", default_value_t = 90,
          value_parser = clap::value_parser!(u32).range(5..=3600))]
    pub lease_time: u32,
    /// Grant NFSv4.1+ write delegations on opens for reading and writing that do not ask for
    /// one (as knfsd does). Without it a write delegation goes only to a client that asks
    /// (OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG), which the Linux client does not; programs on the
    /// server's machine are never told to wait for one.
    #[arg(long)]
    pub write_delegations: bool,
    /// Which clients get READ data spliced from the page cache into the socket (no copy in the
    /// server) instead of copied: remote (clients not on a loopback address), always, never.
    #[arg(long, default_value = "remote", value_parser = splice_reads_arg)]
    pub splice_reads: SpliceReads,
    /// TCP congestion control of every NFS, MOUNT and NLM connection (a name from
    /// /proc/sys/net/ipv4/tcp_available_congestion_control, e.g. cubic), instead of the
    /// system's: where the system's paces each connection from the kernel's timers (BBR without
    /// an fq qdisc, as on loopback), sequential reads cost the server several times the CPU.
    #[arg(long, value_name = "ALGO")]
    pub tcp_congestion: Option<String>,
    /// Keep looking for a TCP connection's next call for this many microseconds without
    /// sleeping once the connection has nothing to do, one connection at a time, and as long
    /// for the next call that needs a call thread, one thread at a time (0: sleep at once).
    /// Costs up to two CPUs' time; saves waking a sleeping CPU for a call that comes meanwhile,
    /// most of a round trip where that CPU is a VM's halted vCPU.
    #[arg(long, value_name = "USECS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub tcp_busy_poll: u64,
    /// Keep looking for the next call of a client that has one call at a time in flight for
    /// this many microseconds once its reply is written, before sleeping: one connection at a
    /// time, and less often after polls that found nothing (0: sleep at once; unused with
    /// --tcp-busy-poll). Saves that client the wake of a sleeping thread and CPU per call,
    /// at up to one CPU's time while such clients are active.
    #[arg(long, value_name = "USECS", default_value_t = 50,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub tcp_lone_poll: u64,
    /// Threads that serve TCP connections, each connection staying on one, which reads its
    /// calls, runs those that need no waiting and writes their replies (default: one per CPU;
    /// 0: the process's shared runtime, whose threads hand ready connections to each other).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub tcp_threads: Option<u32>,
    // --- RPC-over-RDMA (crates/verbs, crates/rpcrdma) ---
    /// Serve NFS over RPC-over-RDMA on ADDR:PORT (default: port 20049 on every address that
    /// has an RDMA device, when there is one; without devices rnfsd logs why and serves TCP).
    #[arg(long, value_name = "ADDR:PORT", conflicts_with = "no_rdma")]
    pub rdma: Option<SocketAddr>,
    /// Do not serve RPC-over-RDMA.
    #[arg(long)]
    pub no_rdma: bool,
    /// Most RPC-over-RDMA credits (calls in flight) granted to one connection; connections
    /// share the device's receive buffers, so each is granted a fair share of them, at most this.
    #[arg(long, value_name = "N", default_value_t = 128,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub rdma_credits: u32,
    /// Inline threshold offered in the RDMA connection private data, send and receive (bytes,
    /// whole KiB from 1 KiB to 64 KiB; the peer's smaller size wins).
    #[arg(long, value_name = "BYTES", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(1024..=65536))]
    pub rdma_inline: u32,
    /// Receive buffers of each device's shared receive queue (memory: this x the inline size,
    /// whatever the number of connections).
    #[arg(long, value_name = "N", default_value_t = 2048,
          value_parser = clap::value_parser!(u32).range(32..=65536))]
    pub rdma_recv_buffers: u32,
    /// Bulk buffers (1 MiB + 64 KiB) of each device's pool for RDMA Read and Write payloads.
    #[arg(long, value_name = "N", default_value_t = 32,
          value_parser = clap::value_parser!(u32).range(2..=4096))]
    pub rdma_bulk_buffers: u32,
    /// Send queue entries of each RDMA connection: its rings are most of what a connection
    /// costs in memory (in soft-RoCE 0.14 MiB with 127 entries, 0.39 MiB with 511), and a full
    /// queue makes replies wait for completions. At least the largest batch a reply or a
    /// call's reads may need (rpcrdma::MIN_SEND_DEPTH, 65).
    #[arg(long, value_name = "N", default_value_t = 127,
          value_parser = clap::value_parser!(u32).range(rpcrdma::MIN_SEND_DEPTH as i64..=16384))]
    pub rdma_send_depth: u32,
    /// Most RDMA connections per device; more are refused.
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub rdma_max_conns: u32,
    /// Busy-poll each RDMA connection's completion queue for this many microseconds after
    /// its last completion before waiting for an event (0: event-driven only). Trades CPU for
    /// latency under load.
    #[arg(long, value_name = "USECS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub rdma_busy_poll: u64,
    // --- end RPC-over-RDMA ---
    // --- pNFS ---
    /// A pNFS data server (repeat for each): NAME=HOST:PORT:/EXPORT[,rdma=PORT][,mount=PORT],
    /// an NFSv3 export that does not squash this server's root. Clients whose export rule says
    /// `pnfs` get flexible files layouts, and new files' data goes to the data servers.
    #[arg(long = "pnfs-ds", value_name = "NAME=HOST:PORT:/EXPORT")]
    pub pnfs_ds: Vec<pnfs::DsSpec>,
    /// Copies of each file's data, on distinct data servers.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pnfs_mirrors: u32,
    /// How a new file's data servers are chosen: round-robin, or least-used (most space
    /// available first).
    #[arg(long, value_name = "POLICY", default_value = "round-robin")]
    pub pnfs_placement: pnfs::config::Placement,
    /// The uids and gids the files on the data servers are owned by (fencing changes them).
    #[arg(long, value_name = "LOW-HIGH", value_parser = pnfs::config::parse_ids,
          default_value = "1073741824-1342177279")]
    pub pnfs_ids: std::ops::RangeInclusive<u32>,
    /// Seconds between runs of the reconciler, which deletes data server files no file owns.
    #[arg(long, value_name = "SECS", default_value_t = 600,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub pnfs_reconcile_secs: u64,
    /// Layout stateids kept before clients are asked to return the layouts they need least
    /// (CB_RECALL_ANY, at most once a second, each client to its share of half this).
    #[arg(long, value_name = "N", default_value_t = 65536,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub pnfs_max_layouts: u64,
    // --- end pNFS ---
    // --- Kerberos (RPCSEC_GSS) ---
    /// Keytab whose keys accept RPCSEC_GSS contexts (exports with sec=krb5, krb5i, krb5p);
    /// rnfsd reads it at start. Without the file, RPCSEC_GSS is off (and exports that need it
    /// are refused).
    #[arg(long, value_name = "FILE", default_value = "/etc/krb5.keytab")]
    pub keytab: std::path::PathBuf,
    /// Accept contexts only for this service principal, as SERVICE@HOST (nfs@server.example);
    /// default: for any principal the keytab has a key of.
    #[arg(long, value_name = "SERVICE@HOST")]
    pub gss_principal: Option<String>,
    /// Most RPCSEC_GSS contexts held at once (one per user and client machine); more INITs are
    /// refused until contexts expire or are destroyed.
    #[arg(long, value_name = "N", default_value_t = 65536,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub gss_max_contexts: u64,
    // --- end Kerberos ---
    /// Keep the state other heads must find after a failover (NFSv4 client records, NLM hosts
    /// and the NSM state number) in this etcd cluster rather than in --state-dir:
    /// etcd://HOST:PORT[,HOST:PORT...] (docs/ha.md).
    #[arg(long, value_name = "etcd://HOST:PORT[,...]", requires = "node_id")]
    pub cluster: Option<String>,
    /// The serving identity whose records this server keeps in --cluster (letters, digits,
    /// '-', '_', '.'); the head that takes the identity over uses the same id.
    #[arg(long, value_name = "ID", requires = "cluster")]
    pub node_id: Option<String>,
    /// Seconds of the etcd lease through which this head holds its identity: a head that dies
    /// is replaced after at most this long, and one that cannot renew it stops answering
    /// within two thirds of it.
    #[arg(long, value_name = "SECS", default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(2..=300))]
    pub identity_ttl: u64,
    /// The address clients mount, moved with the identity: added to DEVICE (with gratuitous
    /// ARP) when this head takes the identity over, removed when it gives it up.
    #[arg(long, value_name = "ADDR/PREFIX@DEVICE", requires = "cluster")]
    pub service_address: Option<crate::takeover::ServiceAddress>,
    /// A command (run by /bin/sh) when this head takes its identity over (before it serves;
    /// failing, the head exits) and when it gives it up, with RNFS_EVENT=claimed|released,
    /// RNFS_NODE_ID and RNFS_SERVICE_ADDRESS in its environment.
    #[arg(long, value_name = "CMD", requires = "cluster")]
    pub takeover_cmd: Option<String>,
    /// Log filter (tracing EnvFilter syntax), overridden by RUST_LOG.
    #[arg(long, default_value = "info")]
    pub log_level: String,
    /// Log as JSON lines.
    #[arg(long)]
    pub log_json: bool,
}

/// The exports named by `--export` and `--exports`.
pub fn exports(args: &Args) -> Result<Vec<ExportEntry>, String> {
    let mut out = Vec::new();
    if let Some(f) = &args.exports {
        out = load_exports(f).map_err(|e| e.to_string())?;
    }
    for dir in &args.export {
        let path =
            std::fs::canonicalize(dir).map_err(|e| format!("--export {}: {e}", dir.display()))?;
        if !path.is_dir() {
            return Err(format!("--export {}: not a directory", dir.display()));
        }
        out.push(localhost_export(path));
    }
    if out.is_empty() {
        return Err("nothing to export: give --export DIR or --exports FILE".into());
    }
    Ok(out)
}

fn localhost_export(path: PathBuf) -> ExportEntry {
    let options = ExportOptions {
        rw: true,
        secure: false,
        ..Default::default()
    };
    ExportEntry {
        path,
        clients: vec![
            ClientRule {
                client: ClientMatch::Net {
                    addr: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)),
                    prefix: 8,
                },
                options: options.clone(),
            },
            ClientRule {
                client: ClientMatch::Addr(IpAddr::V6(Ipv6Addr::LOCALHOST)),
                options,
            },
        ],
    }
}

fn splice_reads_arg(s: &str) -> Result<SpliceReads, String> {
    match s {
        "remote" => Ok(SpliceReads::Remote),
        "always" => Ok(SpliceReads::Always),
        "never" => Ok(SpliceReads::Never),
        _ => Err(format!("{s}: remote, always or never")),
    }
}
