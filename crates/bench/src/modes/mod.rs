//! The benchmark modes. Each returns its parameters, figures and Markdown tables.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use parking_lot::Mutex;
use serde_json::json;

use crate::client::{Conn, File, Proto, Session, Target};
use crate::err;
use crate::error::Result;
use crate::io::{par, pattern, seq_read, seq_write, WorkDir};
use crate::progress::Progress;
use crate::report::{f, Table};
use crate::stats::{
    fmt_size, ms_per_gb, parse_size, proc_status_kib, reset_hwm, Lat, MachineCpu, ProcCpu, Rng,
};
use crate::{Common, Outcome};

mod conns;
mod latency;
mod metadata;
mod ping;
mod pnfs;
mod randread;
mod seq;
mod sparse;
mod throughput;

pub use conns::{conns, ConnsArgs};
pub use latency::{latency, LatencyArgs};
pub use metadata::{metadata, MetadataArgs};
pub use ping::{ping, PingArgs};
pub use pnfs::{pnfs, PnfsArgs};
pub use randread::{randread, RandreadArgs};
pub use seq::{seq, SeqArgs};
pub use sparse::{sparse, SparseArgs};
pub use throughput::{throughput, ThroughputArgs};

fn stable_arg(s: &str) -> std::result::Result<u32, String> {
    match s {
        "unstable" => Ok(0),
        "datasync" => Ok(1),
        "filesync" => Ok(2),
        _ => Err(format!("{s:?}: use unstable, datasync or filesync")),
    }
}

fn stable_name(s: u32) -> &'static str {
    ["unstable", "datasync", "filesync"][s.min(2) as usize]
}

fn header(s: &Session, mode: &str, c: &Common) -> String {
    format!(
        "\n### {mode}: {} ({} over {} at {})\n\n",
        c.label,
        s.target.proto.name(),
        s.target.via.name(),
        s.target.nfs
    )
}

fn mb_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64().max(1e-9) / 1e6
}
