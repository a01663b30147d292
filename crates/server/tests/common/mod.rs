//! Shared harness for the integration tests: starts the real `rnfsd` binary on 127.0.0.1 and
//! talks to it with a small raw ONC RPC client built on the workspace's own wire types.
//!
//! Every test gets its own server, state directory and export directories, so tests in one file
//! can run in parallel threads.

// System calls the tests make themselves (signals, limits, device nodes, holes, credentials)
// to set up and check what they test.
#![allow(unsafe_code)]
// Each test file uses a different part of this module.
#![allow(dead_code)]

pub mod fault;
pub mod kerberos;
pub mod loopback;
pub mod nfs3_res;
pub mod nfs4_raw;
pub mod nfsrs;
pub mod nlm;
pub mod pnfs;
mod rpc;
mod server;

pub use rpc::*;
pub use server::*;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bytes::Bytes;
pub use nfs3_res::*;
use nfs3wire::*;

/// How long the server may take to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a reply may take before a test fails.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(120);
/// The uid/gid the raw client uses unless a test says otherwise.
pub const TEST_UID: u32 = 1000;

/// WRITE3args for `data` at `offset`.
pub fn write_args(fh: &NfsFh3, offset: u64, data: Bytes, stable: StableHow) -> Write3args {
    Write3args {
        file: fh.clone(),
        offset,
        count: data.len() as u32,
        stable,
        data,
    }
}

/// The attributes of a LOOKUP / CREATE result.
pub fn attrs(p: &PostOpAttr) -> &Fattr3 {
    p.0.as_ref().expect("no post-op attributes")
}

/// A NULL call on a new connection succeeds (the server is alive and accepting).
pub fn assert_serves_new_connection(port: u16) {
    let mut c = RpcClient::connect(port);
    assert_eq!(
        c.null(),
        RpcReply::Success(Bytes::new()),
        "NULL on a new connection"
    );
}

/// Deterministic pseudo-random bytes (xorshift64*), different for each `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}

/// GET `path` from the metrics endpoint at `addr`; the whole HTTP response.
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The value of the first sample of `name` (with its labels, if any) in a metrics text.
pub fn metric(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.trim().parse::<f64>().ok())
        .map(|v| v as u64)
}
