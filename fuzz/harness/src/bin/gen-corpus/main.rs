//! Writes the seed corpus of every fuzz target: `gen-corpus [DIR]` (default: fuzz/corpus).
//!
//! The dispatcher seeds are run through the same harness as the fuzz targets while they are
//! made (this needs root, like the targets): follow-up calls use the client ids, session ids
//! and stateids the server returned, which are reproducible because each input starts from
//! fresh NFSv4 state with a fixed boot value. A summary of every seed's replies is printed.

mod nfs3;
mod nfs4;
mod nlm;
mod transport;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use harness::build::{self, call, enc, marker, sys, v4, val, MOUNT, NFS};
use nfs3wire::*;
use nfs4wire::*;
use rpcrdma::{ErrorKind, Header, InlineConfig, Proc, RdmaSegment, ReadChunk, WriteChunk};
use sunrpc::Credential;

use nfs3::nfs3_seeds;
use nfs4::nfs4_seeds;
use nlm::nlm_seeds;
use transport::*;

fn write(dir: &Path, target: &str, name: &str, data: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).expect("create corpus dir");
    std::fs::write(d.join(name), data).expect("write seed");
}

/// Reads the words of an accepted RPC reply: (accept_stat, first result word).
fn rpc_status(r: &Bytes) -> String {
    let w = |i: usize| {
        r.get(i * 4..i * 4 + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    match (w(2), w(5), w(6)) {
        (Some(0), Some(0), Some(s)) => format!("ok/{s}"),
        (Some(0), Some(0), None) => "ok".into(),
        (Some(0), Some(a), _) => format!("accept_stat {a}"),
        (Some(1), _, _) => "denied".into(),
        _ => "?".into(),
    }
}

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus"));

    let env = harness::env::env();
    eprintln!(
        "environment: base {} (private tmpfs: {})",
        env.base.display(),
        env.isolated
    );

    for (name, msgs) in nfs3_seeds() {
        let input = harness::join_frames(&msgs);
        let replies = harness::run_stream(&input);
        let summary: Vec<String> = replies
            .iter()
            .map(|r| r.as_ref().map_or("none".to_string(), rpc_status))
            .collect();
        println!("nfs3_dispatch/{name}: {}", summary.join(" "));
        write(&dir, "nfs3_dispatch", &name, &input);
        if msgs.len() == 1 {
            write(&dir, "rpc_call", &format!("from_{name}"), &msgs[0]);
        }
    }
    for (name, input) in nfs4_seeds() {
        let replies = harness::run_compounds(&input);
        let summary: Vec<String> = replies
            .iter()
            .map(|r| match r {
                Some(b) => match sunrpc::msg::decode_success(b.clone())
                    .and_then(|mut d| <Compound4res as xdr::Decode>::decode(&mut d).ok())
                {
                    Some(res) => format!("nfs4 {}", res.status.0),
                    None => rpc_status(b),
                },
                None => "none".into(),
            })
            .collect();
        println!("nfs4_compound/{name}: {}", summary.join(" "));
        write(&dir, "nfs4_compound", &name, &input);
    }
    for (name, d) in record_seeds() {
        write(&dir, "rpc_record", name, &d);
    }
    for (name, d) in call_seeds() {
        write(&dir, "rpc_call", name, &d);
    }
    for (name, d) in rdma_seeds() {
        write(&dir, "rpcrdma_header", name, &d);
    }
    for (name, d) in private_data_seeds() {
        write(&dir, "rpcrdma_private_data", name, &d);
    }
    for (name, d) in exports_seeds() {
        write(&dir, "exports_parser", name, d.as_bytes());
    }
    for (name, d) in nlm_seeds() {
        write(&dir, "nlmwire_decode", name, &d);
    }
    eprintln!("seeds written to {}", dir.display());
}
