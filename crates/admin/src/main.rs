//! rnfsctl: look inside a running rnfsd and act on it, through its admin socket.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rnfs_admin::cli::{Args, Cmd};
use rnfs_admin::{call, table, Request, Response};

fn main() -> ExitCode {
    let args = Args::parse();
    let req = match args.cmd {
        Cmd::Exports => Request::Exports,
        Cmd::Clients => Request::Clients,
        Cmd::Evict { client } => Request::Evict { client },
        Cmd::Reload => Request::Reload,
        Cmd::Status => Request::Status,
        Cmd::PnfsDrain { ds } => Request::PnfsDrain { ds },
        Cmd::Cluster => Request::Cluster,
        Cmd::ClusterRelease { id } => Request::ClusterRelease { id },
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
