//! rnfsctl's command line, in the library so that its manual page can be generated from it.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::DEFAULT_SOCKET;

/// Look inside a running rnfsd and act on it.
///
/// rnfsctl talks to rnfsd through its admin socket (root only: the socket is mode 0600), one
/// request per invocation, and prints rnfsd's answer as tables, or as JSON with --json.
#[derive(Debug, Parser)]
#[command(name = "rnfsctl", version)]
pub struct Args {
    /// rnfsd's admin socket.
    #[arg(long, default_value = DEFAULT_SOCKET, value_name = "PATH")]
    pub socket: PathBuf,
    /// Print rnfsd's answer as JSON (for scripts) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for rnfsd's answer.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub timeout: u64,
    /// What to ask.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// rnfsctl's commands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// List the exports and their client rules.
    Exports,
    /// List NFSv3 hosts (mounts, NLM locks) and NFSv4 clients (sessions, opens, locks, delegations).
    Clients,
    /// Revoke a client's state: an NFSv4 client id, or an NFSv3 host's address or NLM name.
    Evict {
        /// The client, as `rnfsctl clients` shows it.
        client: String,
    },
    /// Re-read the exports file(s) and apply the change without a restart (as SIGHUP does).
    Reload,
    /// Show limits and counters.
    Status,
    /// Take a pNFS data server out of service: no new files are placed there, and every copy
    /// it holds is copied to another data server, then deleted from it (watch the copies left
    /// with this command again, or rnfs_pnfs_ds_copies). Remove it from --pnfs-ds once none
    /// is left.
    PnfsDrain {
        /// The data server, by the name --pnfs-ds gives it.
        ds: String,
    },
    /// Show this head's identity (--cluster) and every identity of the cluster: which head
    /// holds it, its fencing token, the seconds left on its lease.
    Cluster,
    /// Forget an identity's exports in the cluster's export registry, so that another identity
    /// may export those trees (moving a tree between identities). Refused while a head holds
    /// the identity: stop its heads first.
    ClusterRelease {
        /// The identity, as --node-id names it.
        id: String,
    },
}
