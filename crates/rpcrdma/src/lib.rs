//! RPC-over-RDMA version 1 (RFC 8166), the transport-independent half: everything that can be
//! tested without an RDMA device.
//!
//! * [`header`]: the transport header codec (RDMA_MSG, RDMA_NOMSG, RDMA_ERROR; Read list,
//!   Write list, Reply chunk), bounded while decoding.
//! * [`limits`]: receive limits, validation of call headers, credit grants, and the
//!   [`Disposition`] of each failure (RDMA_ERROR, silent discard, or close).
//! * [`private_data`]: RFC 8797 CM private data and inline threshold negotiation.
//! * [`ddp`]: how a reply is conveyed (inline, Write chunk, Reply chunk) under RFC 8267's
//!   DDP-eligibility rules, as a [`SendPlan`] of RDMA Writes plus one gathered Send.
//! * [`read_plan`]: the RDMA Reads a call's Read chunks need and how their data is spliced back
//!   into the RPC call, as zero-copy pieces.
//!
//! The transport engine, which needs a device, sits on top:
//!
//! * [`transport`]: listens with RDMA-CM, accepts connections (RFC 8797 private data), serves
//!   calls through the RPC dispatcher and sends replies with RDMA Writes and a Send.
//! * [`staging`]: the device-independent translation from plans to work requests (RDMA Reads,
//!   staged RDMA Write sources, the Send's bytes) and credit accounting.
//! * [`metrics`]: transport counters for the Prometheus endpoint.
//!
//! The verbs (queue pairs, memory registration, posting) live in the `verbs` crate, the only
//! one with `unsafe`; this one computes what to post and drives it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backchannel;
pub mod ddp;
pub mod header;
pub mod limits;
pub mod private_data;
pub mod read_plan;

pub mod metrics;
pub mod staging;
pub mod transport;

pub use ddp::{plan_reply, remote_invalidate_rkey, PlanError, RdmaWrite, SendPlan};
pub use header::{ErrorKind, Header, Proc, RdmaSegment, ReadChunk, ReadSegment, WriteChunk};
pub use limits::{
    Call, Disposition, Limits, ValidationError, MAX_SEGMENTS, MIN_SEND_DEPTH, MIN_SHARE,
};
pub use private_data::{negotiate, InlineConfig, Negotiated, PrivateData};
pub use read_plan::{PlacedChunk, RdmaRead, ReadPlan};

#[cfg(test)]
mod tests;
