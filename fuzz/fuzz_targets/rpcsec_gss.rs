//! RPCSEC_GSS (RFC 2203): the credential, INIT result and integrity body decoders, and the
//! acceptor (`sunrpc::gss::GssServer::accept` and `seal`) on arbitrary call messages.
//!
//! The acceptor runs with a stand-in mechanism whose MICs always verify and whose wrap tokens
//! are the plain bytes, so that inputs reach every path after the cryptography (the window,
//! the integrity and privacy bodies, DESTROY); a context is kept established (again after an
//! input destroys it), and an input whose credential carries a 16-byte handle gets that
//! context's handle in its place.
//!
//! Checks: no panic; a decoded credential re-encodes to the same credential and length; a body the acceptor
//! unwrapped is no longer than the message; every answer is a reply to the call's xid.
#![no_main]

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use sunrpc::gss::mech::{GssError, Mechanism, Peer, SecContext, Step, UnixIdent};
use sunrpc::gss::wire::{GssCred, GssProc, GssService, InitRes, IntegData};
use sunrpc::gss::{GssServer, Verdict};
use sunrpc::msg::decode_call;
use xdr::{Decoder, Encoder};

struct Plain;

impl SecContext for Plain {
    fn step(&mut self, _token: &[u8]) -> Result<Step, GssError> {
        Ok(Step {
            token: b"ok".to_vec(),
            done: Some(Peer {
                principal: "fuzz@FUZZ".into(),
                ident: Some(UnixIdent {
                    uid: 1,
                    gid: 1,
                    gids: vec![1],
                }),
                lifetime: Duration::from_secs(3600),
                cipher: "plain",
                acceptor: None,
            }),
        })
    }
    fn get_mic(&self, msg: &[u8]) -> Result<Bytes, GssError> {
        Ok(Bytes::copy_from_slice(&msg[..msg.len().min(8)]))
    }
    fn verify_mic(&self, _msg: &[u8], _mic: &[u8]) -> Result<(), GssError> {
        Ok(())
    }
    fn wrap(&self, msg: &[u8]) -> Result<Bytes, GssError> {
        Ok(Bytes::copy_from_slice(msg))
    }
    fn unwrap(&self, token: &[u8]) -> Result<Bytes, GssError> {
        Ok(Bytes::copy_from_slice(token))
    }
}

struct PlainMech;

impl Mechanism for PlainMech {
    fn new_context(&self) -> Box<dyn SecContext> {
        Box::new(Plain)
    }
}

/// The acceptor.
fn server() -> &'static GssServer {
    static S: OnceLock<GssServer> = OnceLock::new();
    S.get_or_init(|| GssServer::new(Arc::new(PlainMech), 4096))
}

/// The handle of a live context, established again when an input destroyed it; `None` when
/// the table is full of contexts inputs made.
fn live_handle(s: &GssServer) -> Option<Bytes> {
    static H: Mutex<Option<Bytes>> = Mutex::new(None);
    let mut h = H.lock().unwrap_or_else(|e| e.into_inner());
    if h.is_none() || s.contexts() == 0 {
        *h = establish(s);
    }
    h.clone()
}

fn establish(s: &GssServer) -> Option<Bytes> {
    let mut e = Encoder::new();
    for w in [1u32, 0, 2, 100003, 3, 0, 6] {
        e.u32(w);
    }
    let mut c = Encoder::new();
    GssCred {
        proc_: GssProc::Init,
        seq: 0,
        service: GssService::None,
        handle: Bytes::new(),
    }
    .encode(&mut c);
    e.opaque(&c.finish().to_bytes());
    e.u32(0);
    e.u32(0);
    e.opaque(b"token");
    let (hdr, args) = decode_call(e.finish().to_bytes()).expect("INIT decodes");
    let g = hdr.gss.expect("an RPCSEC_GSS call");
    let Verdict::Answer(r) = s.accept([127, 0, 0, 1].into(), hdr.xid, 0, &g, args, 1 << 20) else {
        panic!("INIT not answered")
    };
    let mut d = Decoder::new(r.to_bytes());
    for _ in 0..4 {
        d.u32().expect("reply header");
    }
    d.opaque(400).expect("verifier");
    d.u32().expect("accept_stat");
    let res = InitRes::decode(&mut d).expect("INIT result");
    (res.major == 0).then_some(res.handle)
}

fuzz_target!(|data: &[u8]| {
    // the decoders on their own
    if let Ok(c) = GssCred::decode(Bytes::copy_from_slice(data)) {
        // the same credential, as long (XDR padding, which the decoder does not look at, is
        // written as zeros)
        let mut e = Encoder::new();
        c.encode(&mut e);
        let again = e.finish().to_bytes();
        assert_eq!(again.len(), data.len(), "credential re-encodes to another length");
        assert_eq!(GssCred::decode(again), Ok(c), "credential re-encodes differently");
    }
    let _ = InitRes::decode(&mut Decoder::new(Bytes::copy_from_slice(data)));
    if let Ok(i) = IntegData::decode(&mut Decoder::new(Bytes::copy_from_slice(data)), 4096) {
        assert!(i.body.len() <= 4096);
    }

    // the acceptor, with the live context's handle put in place of a 16-byte one
    let server = server();
    let mut msg = data.to_vec();
    if msg.len() >= 68 && msg[48..52] == [0, 0, 0, 16] {
        if let Some(h) = live_handle(server) {
            msg[52..68].copy_from_slice(&h);
        }
    }
    let Ok((hdr, args)) = decode_call(Bytes::from(msg)) else {
        return;
    };
    let Some(g) = hdr.gss else { return };
    let len = args.remaining();
    match server.accept([127, 0, 0, 1].into(), hdr.xid, hdr.proc_, &g, args, len) {
        Verdict::Answer(r) => {
            let b = r.to_bytes();
            assert_eq!(&b[..4], &hdr.xid.to_be_bytes(), "answer to another xid");
        }
        Verdict::Drop => {}
        Verdict::Call { args, seal, .. } => {
            assert!(args.remaining() <= data.len());
            let mut body = Encoder::new();
            body.opaque_fixed(&args.into_rest());
            if let Some(r) = server.seal(&seal, hdr.xid, Ok(body)) {
                assert_eq!(&r.to_bytes()[..4], &hdr.xid.to_be_bytes());
            }
        }
    }
});
