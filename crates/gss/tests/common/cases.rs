//! The test cases, run by each test binary against its realm.

use super::*;
use sunrpc::gss::client::ClientError;

/// Calls under every service, from initiators of both sides, and the principal's mapping;
/// contexts seal with `cipher` (what the binary's realm makes them use).
pub fn every_service_carries_calls_both_ways_and_maps_the_principal(cipher: &str) {
    let server = acceptor();
    for (side, svc) in SIDES.into_iter().flat_map(|s| {
        [GssService::None, GssService::Integrity, GssService::Privacy].map(|v| (s, v))
    }) {
        let mut c = client(&server, side, "daemon", svc);
        let args = b"\0\0\0\x05hello\0\0\0";
        let call = c.call(7, 100003, 3, 1, args);
        let res = c
            .reply(&call, serve(&server, call.msg.clone()))
            .expect("reply");
        let mut d = xdr::Decoder::new(res);
        assert_eq!(d.opaque(100).unwrap(), format!("daemon@{REALM}").as_bytes());
        assert_eq!(d.u32().unwrap(), 1, "daemon is uid 1");
        assert_eq!(&d.into_rest()[..], &args[..]);
        if svc == GssService::Privacy {
            assert!(
                !call.msg.windows(5).any(|w| w == b"hello"),
                "privacy: the arguments are not in the clear"
            );
        }
    }
    let views = server.views();
    assert_eq!(views.len(), 6);
    assert!(views.iter().all(|v| v.peer.cipher == cipher), "{views:?}");
    let mut c = client(&server, Side::Mit, "stranger", GssService::Integrity);
    let call = c.call(8, 100003, 3, 1, &[]);
    let res = c.reply(&call, serve(&server, call.msg.clone())).unwrap();
    let mut d = xdr::Decoder::new(res);
    d.opaque(100).unwrap();
    assert_eq!(d.u32().unwrap(), u32::MAX, "no local user: anonymous");
}

/// Messages of many lengths, sealed both ways, with tickets of service keys of every AES
/// enctype, from initiators of both sides.
pub fn contexts_with_tickets_of_every_aes_service_key_seal_both_ways() {
    let server = acceptor();
    for (host, _) in ENCTYPES {
        for (side, svc) in SIDES
            .into_iter()
            .flat_map(|s| [GssService::Integrity, GssService::Privacy].map(|v| (s, v)))
        {
            let mut c = client_of(&server, side, "daemon", svc, &format!("nfs@{host}"));
            for len in [0usize, 4, 13, 4096, 65536 + 5] {
                let args: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
                let args = {
                    let mut e = xdr::Encoder::new();
                    e.opaque(&args);
                    e.finish().to_bytes()
                };
                let call = c.call(7, 100003, 3, 1, &args);
                let res = c
                    .reply(&call, serve(&server, call.msg.clone()))
                    .unwrap_or_else(|e| panic!("{side:?} {host} {svc:?} {len}: {e}"));
                let mut d = xdr::Decoder::new(res);
                d.opaque(100).unwrap();
                assert_eq!(d.u32().unwrap(), 1);
                assert_eq!(&d.into_rest()[..], &args[..], "{host} {svc:?} {len}");
            }
        }
    }
}

/// Replays, tampering, forged handles, MAXSEQ and DESTROY.
pub fn replays_tampering_and_forged_handles_are_refused() {
    let server = acceptor();
    let mut c = client(&server, Side::Mit, "root", GssService::Integrity);
    let call = c.call(9, 100003, 3, 1, b"\0\0\0\x01");
    assert!(c.reply(&call, serve(&server, call.msg.clone())).is_ok());
    // the same message again: its sequence number was seen, no answer at all
    assert_eq!(serve(&server, call.msg.clone()), Bytes::new());
    // a flipped bit in the arguments: the checksum fails, GARBAGE_ARGS
    let call = c.call(10, 100003, 3, 1, b"\0\0\0\x01");
    let mut m = call.msg.to_vec();
    let n = m.len();
    m[n - 40] ^= 1;
    assert_eq!(
        c.reply(&call, serve(&server, Bytes::from(m))),
        Err(ClientError::NotExecuted(4))
    );
    // a flipped bit in the header: the verifier fails, CREDPROBLEM
    let call = c.call(11, 100003, 3, 1, b"\0\0\0\x01");
    let mut m = call.msg.to_vec();
    m[12] ^= 1; // the program number
    assert_eq!(
        c.reply(&call, serve(&server, Bytes::from(m))),
        Err(ClientError::Denied(13))
    );
    // past MAXSEQ: CTXPROBLEM
    let call = c.call_as(
        12,
        100003,
        3,
        1,
        sunrpc::gss::wire::GssProc::Data,
        0x8000_0000,
        &[],
    );
    assert_eq!(
        c.reply(&call, serve(&server, call.msg.clone())),
        Err(ClientError::Denied(14))
    );
    // DESTROY, after which the handle is unknown: CREDPROBLEM
    let call = c.call_as(
        13,
        100003,
        3,
        0,
        sunrpc::gss::wire::GssProc::Destroy,
        100,
        &[],
    );
    let r = serve(&server, call.msg.clone());
    assert!(!r.is_empty());
    assert_eq!(server.contexts(), 0);
    let call = c.call(14, 100003, 3, 1, &[]);
    assert_eq!(
        c.reply(&call, serve(&server, call.msg.clone())),
        Err(ClientError::Denied(13))
    );
}

/// INITs past the table's bound.
pub fn a_full_table_refuses_new_contexts() {
    let server = acceptor();
    let _held: Vec<_> = (0..16)
        .map(|_| client(&server, Side::Rust, "root", GssService::None))
        .collect();
    let init = initiator(Side::Rust, "root", "nfs@localhost");
    let s = server.clone();
    let r = GssClient::establish(init, GssService::None, 100003, 3, &mut |m| Ok(serve(&s, m)));
    assert!(matches!(r, Err(ClientError::Refused(..))), "{:?}", r.err());
    assert_eq!(server.contexts(), 16);
}
