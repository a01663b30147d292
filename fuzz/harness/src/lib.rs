//! Shared code of the rnfs fuzz targets.
//!
//! * [`env`]: one scratch server environment per process: a [`vfs::Vfs`] exporting a temporary
//!   directory with a few fixture objects, on a private tmpfs when the process may mount one.
//! * [`frames`] and [`substitute`]: how a fuzz input is cut into RPC messages, and the markers
//!   that stand for the file handles and export paths of this process.
//! * [`Server`] and [`run_stream`]: a fresh dispatcher (NFSv3, MOUNT, NFSv4) per input over the
//!   shared backend, so every input starts from the same protocol state.
//! * [`build`]: encoders for the seed corpus (used by the `gen-corpus` binary).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use sunrpc::{Dispatcher, TransportKind};

pub mod build;
pub mod env;

/// Most RPC messages taken from one fuzz input.
pub const MAX_MESSAGES: usize = 16;

/// NFSv4 `boot` value of every per-input server, so client ids, session ids and stateids that
/// a seed saw when it was generated are valid again when the seed is replayed.
pub const FIXED_BOOT: u32 = 0x6000_0000;

/// The peer address every call comes from (a privileged port, so `secure` exports admit it).
pub fn peer() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 800))
}

/// Cuts a fuzz input into messages: each is a 4-byte big-endian length (top bit ignored, as the
/// last-fragment bit of record marking) followed by that many bytes; a length past the end of
/// the input takes what is left. At most [`MAX_MESSAGES`] messages.
pub fn frames(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while rest.len() >= 4 && out.len() < MAX_MESSAGES {
        let len = (u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) & 0x7fff_ffff) as usize;
        rest = &rest[4..];
        let n = len.min(rest.len());
        out.push(&rest[..n]);
        rest = &rest[n..];
    }
    out
}

/// Joins messages into one fuzz input in the format [`frames`] reads (record marking with the
/// last-fragment bit set).
pub fn join_frames(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in msgs {
        out.extend_from_slice(&(0x8000_0000u32 | m.len() as u32).to_be_bytes());
        out.extend_from_slice(m);
    }
    out
}

/// Replaces every marker in `msg` (an XDR opaque of length 8 whose content is a marker name,
/// see [`env::MARKERS`]) with the XDR opaque of the value it stands for in this process.
pub fn substitute(msg: &[u8], env: &env::Env) -> Vec<u8> {
    let mut out = Vec::with_capacity(msg.len() + 64);
    let mut i = 0;
    while i < msg.len() {
        if msg.len() - i >= 12 && msg[i..i + 4] == [0, 0, 0, 8] && msg[i + 4] == b'@' {
            if let Some(v) = env.marker_value(&msg[i + 4..i + 12]) {
                out.extend_from_slice(&(v.len() as u32).to_be_bytes());
                out.extend_from_slice(v);
                out.resize(out.len() + (4 - v.len() % 4) % 4, 0);
                i += 12;
                continue;
            }
        }
        out.push(msg[i]);
        i += 1;
    }
    out
}

/// A dispatcher with NFSv3, MOUNT, NFSACL and NFSv4 registered over the shared backend, with fresh
/// protocol state (NFSv4 clients, sessions, DRC).
pub struct Server {
    /// The dispatcher.
    pub disp: Dispatcher,
}

impl Server {
    /// A fresh server over the process's environment.
    pub fn new(env: &env::Env) -> Self {
        let mut disp = Dispatcher::new(64, env.metrics.clone());
        disp.register(Arc::new(nfs3::Nfs3::new(env.vfs.clone())));
        disp.register(Arc::new(nfs3::Mount::new(env.vfs.clone())));
        disp.register(Arc::new(nfs3::NfsAcl::new(env.vfs.clone())));
        let v4 = nfs4::Nfs4::new(env.vfs.clone());
        v4.state.lock().set_boot(FIXED_BOOT);
        disp.register(Arc::new(v4));
        Server { disp }
    }

    /// Dispatches one call message (markers substituted) and checks the reply's framing: a
    /// whole number of XDR words that echoes the call's xid. Returns the flattened reply.
    pub fn call(&self, env: &env::Env, msg: &[u8]) -> Option<Bytes> {
        let msg = substitute(msg, env);
        let reply = self
            .disp
            .dispatch(Bytes::from(msg.clone()), peer(), TransportKind::Tcp)?;
        let bytes = reply.to_bytes();
        assert_eq!(bytes.len(), reply.wire_len(), "reply length");
        assert_eq!(
            bytes.len() % 4,
            0,
            "reply is not a whole number of XDR words"
        );
        assert!(bytes.len() >= 12, "reply shorter than an RPC reply header");
        assert_eq!(
            bytes.get(..4),
            msg.get(..4),
            "reply does not echo the call's xid"
        );
        Some(bytes)
    }
}

/// Runs the messages of one fuzz input through a fresh [`Server`]; returns the replies.
pub fn run_stream(data: &[u8]) -> Vec<Option<Bytes>> {
    let env = env::env();
    env.before_input();
    let server = Server::new(env);
    let replies = frames(data)
        .into_iter()
        .map(|m| server.call(env, m))
        .collect();
    env.after_input();
    replies
}

/// Credential of the calls built by [`run_compounds`], chosen by the first input byte.
pub fn compound_cred(selector: u8) -> sunrpc::Credential {
    match selector % 4 {
        0 => build::sys(0, 0),
        1 => build::sys(1000, 1000),
        2 => sunrpc::Credential::None,
        _ => build::sys(65534, 65534),
    }
}

/// Runs NFSv4 COMPOUNDs: the first byte picks the credential ([`compound_cred`]), the rest is
/// cut by [`frames`] into COMPOUND4args bodies, each sent as program 100003 version 4
/// procedure 1 through a fresh [`Server`].
pub fn run_compounds(data: &[u8]) -> Vec<Option<Bytes>> {
    let Some((&sel, rest)) = data.split_first() else {
        return Vec::new();
    };
    let cred = compound_cred(sel);
    let env = env::env();
    env.before_input();
    let server = Server::new(env);
    let replies = frames(rest)
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            let msg = build::call(0x4000 + i as u32, build::NFS, 4, 1, &cred, body);
            server.call(env, &msg)
        })
        .collect();
    env.after_input();
    replies
}
