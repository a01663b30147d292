//! ONC RPC version 2 (RFC 5531): call and reply headers, AUTH_SYS, record marking, dispatch to
//! programs, a duplicate request cache, metrics, and the TCP/UDP transports.
//!
//! The seam with transports is [`dispatch::Dispatcher::dispatch`]: a complete call message in
//! (a `Bytes` slice of the receive buffer), an [`xdr::Reply`] of segments out.

#![forbid(unsafe_code)]

pub mod admission;
pub mod bufpool;
pub mod callback;
pub mod channel;
pub mod client;
pub mod dispatch;
pub mod drc;
pub mod gss;
pub mod iothreads;
pub mod metrics;
pub mod msg;
pub mod outbound;
pub mod pool;
pub mod record;
pub mod tcp;
pub mod uaddr;

pub use dispatch::{
    BackChannel, BulkAlloc, BulkBuf, CallContext, Dispatcher, Origin, ProcError, Program,
    TransportKind,
};
pub use msg::{AuthSys, Credential};
