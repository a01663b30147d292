//! RPC call headers: `sunrpc::msg::decode_call` (and `AuthSys::decode`) on arbitrary bytes.
//!
//! Checks: no panic; a decoded header re-encodes (`encode_call`) to a message that decodes to
//! the same header with the same argument bytes after it; a rejected message yields an
//! error whose reply (RPC_MISMATCH / AUTH_ERROR) encodes. RPCSEC_GSS calls are the
//! `rpcsec_gss` target's.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use sunrpc::msg::{
    decode_call, encode_auth_error, encode_call, encode_rpc_mismatch, AuthSys, HeaderError,
};
use xdr::{Decoder, Encoder};

fuzz_target!(|data: &[u8]| {
    let msg = Bytes::copy_from_slice(data);
    match decode_call(msg) {
        Ok((hdr, args)) => {
            let rest = args.into_rest();
            assert!(rest.len() <= data.len());
            assert_eq!(
                &data[data.len() - rest.len()..],
                &rest[..],
                "arguments are not the tail"
            );
            if hdr.gss.is_some() {
                // RPCSEC_GSS headers are the rpcsec_gss target's
                return;
            }
            let mut e = Encoder::new();
            encode_call(&mut e, hdr.xid, hdr.prog, hdr.vers, hdr.proc_, &hdr.cred);
            let mut again = e.finish().to_bytes().to_vec();
            again.extend_from_slice(&rest);
            let (hdr2, args2) = decode_call(Bytes::from(again)).expect("re-encoded call decodes");
            assert_eq!(hdr, hdr2);
            assert_eq!(args2.into_rest(), rest);
        }
        Err(HeaderError::RpcMismatch { xid, .. }) => {
            let mut e = Encoder::new();
            encode_rpc_mismatch(&mut e, xid);
            assert_eq!(e.finish().wire_len(), 24);
        }
        Err(HeaderError::Auth { xid, stat }) => {
            let mut e = Encoder::new();
            encode_auth_error(&mut e, xid, stat);
            assert_eq!(e.finish().wire_len(), 20);
        }
        Err(HeaderError::Garbage(_) | HeaderError::NotACall) => {}
    }
    // The AUTH_SYS body decoder on its own.
    let mut d = Decoder::new(Bytes::copy_from_slice(data));
    if let Ok(sys) = AuthSys::decode(&mut d) {
        let mut e = Encoder::new();
        sys.encode(&mut e);
        let b = e.finish().to_bytes();
        let back = AuthSys::decode(&mut Decoder::new(b)).expect("re-encoded AUTH_SYS decodes");
        assert_eq!(sys, back);
    }
});
