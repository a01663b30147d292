//! rnfsctl: look inside a running rnfsd and act on it, through its admin socket.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use rnfs_admin::{call, table, Request, Response, DEFAULT_SOCKET};

/// rnfsctl: rnfsd's admin command (root only: the socket is mode 0600).
#[derive(Debug, Parser)]
#[command(version, about)]
struct Args {
    /// rnfsd's admin socket.
    #[arg(long, default_value = DEFAULT_SOCKET, value_name = "PATH")]
    socket: PathBuf,
    /// Print rnfsd's answer as JSON (for scripts) instead of tables.
    #[arg(long)]
    json: bool,
    /// Seconds to wait for rnfsd's answer.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    timeout: u64,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
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
}

fn main() -> ExitCode {
    let args = Args::parse();
    let req = match args.cmd {
        Cmd::Exports => Request::Exports,
        Cmd::Clients => Request::Clients,
        Cmd::Evict { client } => Request::Evict { client },
        Cmd::Reload => Request::Reload,
        Cmd::Status => Request::Status,
    };
    match call(&args.socket, &req, Duration::from_secs(args.timeout)) {
        Ok(resp) => {
            if args.json {
                match serde_json::to_string_pretty(&resp) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("rnfsctl: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", table::render(&resp));
            }
            if matches!(resp, Response::Error { .. }) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("rnfsctl: {}: {e}", args.socket.display());
            ExitCode::from(2)
        }
    }
}
