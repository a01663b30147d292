//! rnfs-bench: a load generator for NFS servers (NFSv3 + MOUNT, NFSv4.1, NFSv4.2) over TCP.
//!
//! Every mode prints a Markdown table on stdout and, with `--json FILE`, writes its figures as
//! JSON. Runs longer than two seconds show their progress on stderr.

#![forbid(unsafe_code)]

mod ceiling;
mod client;
mod error;
mod io;
mod modes;
mod progress;
mod rdma;
mod report;
mod rpc;
mod stats;
mod v3;
mod v4;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::client::{Proto, Session, Target};
use crate::error::Result;
use crate::rpc::{Cred, Via};

#[derive(Parser)]
#[command(name = "rnfs-bench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

/// Where the server is and how to reach it; common to all modes that talk NFS.
#[derive(Args, Clone, Debug)]
pub struct Common {
    /// Server host name or address.
    #[arg(long, default_value = "127.0.0.1")]
    server: String,
    /// NFS port.
    #[arg(long, default_value_t = 2049)]
    port: u16,
    /// MOUNT port (NFSv3); defaults to the NFS port.
    #[arg(long)]
    mount_port: Option<u16>,
    /// Export path given to MNT (NFSv3).
    #[arg(long, default_value = "/")]
    export: String,
    /// Path of the export in the NFSv4 pseudo file system; defaults to --export.
    #[arg(long)]
    v4_path: Option<String>,
    /// Protocol: v3, v4.1 or v4.2.
    #[arg(long, default_value = "v3", value_parser = Proto::parse)]
    proto: Proto,
    /// Transport of the NFS calls: tcp, or rdma (RPC-over-RDMA v1, needs an RDMA device; the
    /// port is then the server's RDMA port, usually 20049, and MOUNT still goes over TCP to
    /// --mount-port).
    #[arg(long, default_value = "tcp", value_parser = Via::parse)]
    transport: Via,
    /// Registered 1 MiB buffers for RDMA chunks (each READ, WRITE or listing in flight holds
    /// one until its reply).
    #[arg(long, default_value_t = 64)]
    rdma_bulk_buffers: usize,
    /// AUTH_SYS uid of every call.
    #[arg(long, default_value_t = 1000)]
    uid: u32,
    /// AUTH_SYS gid of every call.
    #[arg(long, default_value_t = 1000)]
    gid: u32,
    /// Calls under RPCSEC_GSS with this Kerberos flavor (krb5, krb5i, krb5p) instead of
    /// AUTH_SYS, as the default principal of the ticket cache (or of the client keytab
    /// KRB5_CLIENT_KTNAME names).
    #[arg(long, value_parser = rpc::Krb5::parse_service)]
    krb5: Option<sunrpc::gss::wire::GssService>,
    /// The server's Kerberos service name.
    #[arg(long, default_value = "nfs@localhost")]
    krb5_target: String,
    /// Client threads (1: a single-threaded runtime).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds before a call without a reply fails the run.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    /// Name of the server in the output (e.g. rnfsd, ganesha).
    #[arg(long, default_value = "server")]
    label: String,
    /// Pid of the server process, to read its memory from /proc.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress line on stderr.
    #[arg(long)]
    quiet: bool,
}

impl Common {
    fn target(&self) -> Result<Target> {
        rdma::set_bulk_buffers(self.rdma_bulk_buffers);
        let (nfs, mount) = Target::resolve(
            &self.server,
            self.port,
            self.mount_port.unwrap_or(self.port),
        )?;
        Ok(Target {
            nfs,
            mount,
            export: self.export.clone(),
            v4_path: self.v4_path.clone().unwrap_or_else(|| self.export.clone()),
            proto: self.proto,
            via: self.transport,
            cred: Cred {
                uid: self.uid,
                gid: self.gid,
                krb5: self.krb5.map(|service| rpc::Krb5 {
                    service,
                    target: self.krb5_target.as_str().into(),
                }),
            },
            timeout: Duration::from_secs(self.timeout),
        })
    }
}

#[derive(Subcommand)]
enum Mode {
    /// µs per WRITE / rewrite / READ / reread by record size (one call outstanding), and the
    /// NULL / GETATTR / LOOKUP round trips.
    Latency(modes::LatencyArgs),
    /// N workers, each writing then reading its own file: ops/s.
    Throughput(modes::ThroughputArgs),
    /// Files written and read through pNFS flexible-files layouts, NFSv3 to the data servers
    /// (--transport is theirs; the metadata server is reached over TCP), then LAYOUTGETs per
    /// second.
    Pnfs(modes::PnfsArgs),
    /// Random reads by job count × queue depth: kIOPS, MiB/s, mean and p99 latency, server RSS.
    Randread(modes::RandreadArgs),
    /// Sequential WRITE then READ of one file in large records: MB/s.
    Seq(modes::SeqArgs),
    /// Create, stat, list and remove many files: operations per second.
    Metadata(modes::MetadataArgs),
    /// READ versus READ_PLUS over files with 0, 50 and 100 % holes (NFSv4.2).
    Sparse(modes::SparseArgs),
    /// Server memory (VmRSS) with 1, 8, 64, 256 idle connections (needs --server-pid).
    Conns(modes::ConnsArgs),
    /// Physical ceilings of this machine: loopback TCP stream and ping-pong, memory copy.
    Ceiling(ceiling::CeilingArgs),
    /// Waits until the server answers (MNT + FSINFO for v3, a session for v4).
    Ping(modes::PingArgs),
}

impl Mode {
    fn common(&self) -> Option<&Common> {
        match self {
            Mode::Latency(a) => Some(&a.common),
            Mode::Throughput(a) => Some(&a.common),
            Mode::Randread(a) => Some(&a.common),
            Mode::Seq(a) => Some(&a.common),
            Mode::Pnfs(a) => Some(&a.common),
            Mode::Metadata(a) => Some(&a.common),
            Mode::Sparse(a) => Some(&a.common),
            Mode::Conns(a) => Some(&a.common),
            Mode::Ping(a) => Some(&a.common),
            Mode::Ceiling(_) => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Mode::Latency(_) => "latency",
            Mode::Throughput(_) => "throughput",
            Mode::Randread(_) => "randread",
            Mode::Seq(_) => "seq",
            Mode::Pnfs(_) => "pnfs",
            Mode::Metadata(_) => "metadata",
            Mode::Sparse(_) => "sparse",
            Mode::Conns(_) => "conns",
            Mode::Ceiling(_) => "ceiling",
            Mode::Ping(_) => "ping",
        }
    }
}

/// What a mode produced: parameters, results (JSON) and the Markdown shown on stdout.
pub struct Outcome {
    /// Parameters of the run.
    pub params: serde_json::Value,
    /// Figures.
    pub results: serde_json::Value,
    /// Tables for people.
    pub markdown: String,
}

fn main() {
    let cli = Cli::parse();
    let name = cli.mode.name();
    let started = stats::unix_now();
    let load_before = stats::loadavg();
    let outcome = match &cli.mode {
        Mode::Ceiling(a) => ceiling::run(a),
        m => {
            let c = m.common().expect("an NFS mode");
            let rt = if c.threads <= 1 {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
            } else {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(c.threads)
                    .enable_all()
                    .build()
            };
            let rt = match rt {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("rnfs-bench: cannot start the runtime: {e}");
                    std::process::exit(1);
                }
            };
            rt.block_on(run_nfs(m))
        }
    };
    let out = match outcome {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rnfs-bench {name}: {e}");
            std::process::exit(1);
        }
    };
    print!("{}", out.markdown);
    let (label, json) = match cli.mode.common() {
        Some(c) => (c.label.clone(), c.json.clone()),
        None => match &cli.mode {
            Mode::Ceiling(a) => ("machine".to_string(), a.json.clone()),
            _ => unreachable!(),
        },
    };
    if let Some(path) = json {
        let c = cli.mode.common();
        let doc = serde_json::json!({
            "tool": "rnfs-bench",
            "version": env!("CARGO_PKG_VERSION"),
            "mode": name,
            "label": label,
            "proto": c.map(|c| c.proto.name()),
            "server": c.map(|c| format!("{}:{}", c.server, c.port)),
            "command": std::env::args().collect::<Vec<_>>().join(" "),
            "date_unix": started,
            "load_before": load_before,
            "load_after": stats::loadavg(),
            "machine": stats::machine(),
            "params": out.params,
            "results": out.results,
        });
        let text = serde_json::to_string_pretty(&doc).expect("JSON of plain values");
        if let Err(e) = std::fs::write(&path, text + "\n") {
            eprintln!("rnfs-bench: cannot write {}: {e}", path.display());
            std::process::exit(1);
        }
    }
}

async fn run_nfs(m: &Mode) -> Result<Outcome> {
    let c = m.common().expect("an NFS mode");
    let target = c.target()?;
    if let Mode::Ping(a) = m {
        return modes::ping(target, a).await;
    }
    let session = Session::open(target).await?;
    match m {
        Mode::Latency(a) => modes::latency(&session, a).await,
        Mode::Throughput(a) => modes::throughput(&session, a).await,
        Mode::Randread(a) => modes::randread(&session, a).await,
        Mode::Seq(a) => modes::seq(&session, a).await,
        Mode::Pnfs(a) => modes::pnfs(&session, a).await,
        Mode::Metadata(a) => modes::metadata(&session, a).await,
        Mode::Sparse(a) => modes::sparse(&session, a).await,
        Mode::Conns(a) => modes::conns(&session, a).await,
        Mode::Ceiling(_) | Mode::Ping(_) => unreachable!(),
    }
}
