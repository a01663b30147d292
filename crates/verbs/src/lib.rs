//! Safe RDMA verbs for rnfs: the only crate with `unsafe` for RDMA.
//!
//! It wraps rdma-core's libibverbs and librdmacm through `rdma-mummy-sys`, which loads both
//! libraries with `dlopen` at run time: a binary built with this crate starts (and serves TCP)
//! on machines without rdma-core, and [`open_devices`] then says why RDMA is unavailable.
//!
//! What it offers:
//!
//! * [`open_devices`]: every RDMA device with a protection domain, a [`Pool`] of buffers mapped
//!   and registered once (receive, send and bulk classes), and one shared receive queue
//!   ([`Srq`]) per device, filled at start-up and reposted in batches.
//! * [`Listener`]: an RDMA-CM listening id whose event channel is watched by tokio
//!   (`AsyncFd`), delivering [`CmEvent`]s; connection requests carry the peer's private data.
//! * [`Device::accept`]: an RC queue pair on the request's id, receiving from the SRQ, with a
//!   completion queue whose channel is watched by tokio ([`Endpoint::wait`]).
//! * [`Endpoint::connect`]: the requester's side (a benchmark client): resolves a server's
//!   address, creates the same kind of queue pair and connects with RFC 8797 private data.
//! * [`Endpoint::post`]: Sends (optionally With Invalidate) with gathered entries, RDMA Writes
//!   and RDMA Reads to the peer's (R_key, address) segments, posted as one [`Batch`] that owns
//!   its memory until its completion ([`Completion`]).
//!
//! Memory registration happens only when a device is opened; [`registrations`] counts them
//! so that a test or a metric can check the I/O path never registers memory.

// The FFI crate: rdma-core's verbs and connection manager through rdma-mummy-sys, the one
// crate with `unsafe` (each block with its SAFETY comment).
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};

mod cm;
mod cq;
mod device;
mod endpoint;
mod pool;
mod srq;

pub use cm::{CmEvent, ConnectRequest, IdKey, Listener};
pub use device::{open_devices, Device, DeviceAttr, Unavailable};
pub use endpoint::{
    AcceptOptions, Batch, Completion, ConnectOptions, Endpoint, PostError, SendCaps, WcStatus,
    WorkRequest,
};
pub use pool::{Buf, Class, Pool, PoolConfig};
pub use srq::{Srq, REPOST_BATCH};

static REGISTRATIONS: AtomicU64 = AtomicU64::new(0);

/// Memory registrations (`ibv_reg_mr`) made by this process since it started. They all happen
/// in [`open_devices`] (one per device); the I/O path never registers memory.
pub fn registrations() -> u64 {
    REGISTRATIONS.load(Ordering::Relaxed)
}
