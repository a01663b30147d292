//! The Kerberos mechanism against a real KDC: contexts, MICs, wrap tokens, identity mapping,
//! and the RPCSEC_GSS acceptor driven by the initiator, in one process.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use gss::kdc::{Kdc, REALM};
use gss::{IdentityCache, Krb5Acceptor, Krb5Initiator};
use sunrpc::gss::client::{ClientError, GssClient};
use sunrpc::gss::wire::GssService;
use sunrpc::gss::{GssServer, Verdict};
use sunrpc::msg::decode_call;

/// Service hosts whose keys (and so contexts' session keys) are of one AES enctype each.
const ENCTYPES: [(&str, &str); 4] = [
    ("e17", "aes128-cts-hmac-sha1-96:normal"),
    ("e18", "aes256-cts-hmac-sha1-96:normal"),
    ("e19", "aes128-cts-hmac-sha256-128:normal"),
    ("e20", "aes256-cts-hmac-sha384-192:normal"),
];

struct Realm {
    _kdc: Kdc,
    server_keytab: std::path::PathBuf,
    _dir: std::path::PathBuf,
}

/// One KDC for the test binary; its environment is set before any test uses GSS.
fn realm() -> &'static Realm {
    static R: OnceLock<Realm> = OnceLock::new();
    R.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rnfs-gss-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let kdc = Kdc::start(&dir).expect("start the KDC");
        let server_keytab = dir.join("server.keytab");
        let client_keytab = dir.join("client.keytab");
        kdc.add("nfs/localhost", &server_keytab).unwrap();
        // a service name per AES enctype, so that contexts get session keys of each
        for (host, e) in ENCTYPES {
            kdc.add_with(&format!("nfs/{host}"), &server_keytab, Some(e))
                .unwrap();
        }
        // users that exist in every passwd, and one that exists nowhere
        for p in ["root", "daemon", "stranger"] {
            kdc.add(p, &client_keytab).unwrap();
        }
        for (k, v) in kdc.env(&client_keytab) {
            std::env::set_var(k, v);
        }
        std::env::set_var("KRB5_KTNAME", &server_keytab);
        Realm {
            _kdc: kdc,
            server_keytab,
            _dir: dir,
        }
    })
}

fn acceptor() -> Arc<GssServer> {
    let r = realm();
    let a = Krb5Acceptor::new(
        &r.server_keytab.display().to_string(),
        None,
        Arc::new(IdentityCache::default()),
    )
    .expect("acceptor credentials");
    Arc::new(GssServer::new(Arc::new(a), 16))
}

/// Runs a call message through the acceptor and, for data calls, echoes the arguments back as
/// the results.
fn serve(server: &GssServer, msg: Bytes) -> Bytes {
    let (hdr, args) = decode_call(msg).expect("a call");
    let g = hdr.gss.expect("an RPCSEC_GSS call");
    let max = args.remaining();
    match server.accept([127, 0, 0, 1].into(), hdr.xid, hdr.proc_, &g, args, max) {
        Verdict::Answer(r) => r.to_bytes(),
        Verdict::Drop => Bytes::new(),
        Verdict::Call { args, caller, seal } => {
            let mut e = xdr::Encoder::new();
            e.opaque(caller.peer.principal.as_bytes());
            e.u32(caller.peer.ident.as_ref().map_or(u32::MAX, |i| i.uid));
            e.opaque_fixed(&args.into_rest());
            server.seal(&seal, hdr.xid, Ok(e)).unwrap().to_bytes()
        }
    }
}

fn client(server: &Arc<GssServer>, user: &str, svc: GssService) -> GssClient<Krb5Initiator> {
    client_of(server, user, svc, "nfs@localhost")
}

fn client_of(
    server: &Arc<GssServer>,
    user: &str,
    svc: GssService,
    target: &str,
) -> GssClient<Krb5Initiator> {
    let init = Krb5Initiator::new(Some(user), target).expect("initiator");
    let s = server.clone();
    GssClient::establish(init, svc, 100003, 3, &mut |m| Ok(serve(&s, m))).expect("context")
}

#[test]
fn every_service_carries_calls_both_ways_and_maps_the_principal() {
    let server = acceptor();
    for svc in [GssService::None, GssService::Integrity, GssService::Privacy] {
        let mut c = client(&server, "daemon", svc);
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
    // MIT's default first choice; crates/server's tests use aes256-cts-hmac-sha384-192
    assert!(server
        .views()
        .iter()
        .all(|v| v.peer.cipher == "aes256-cts-hmac-sha1-96"));
    let mut c = client(&server, "stranger", GssService::Integrity);
    let call = c.call(8, 100003, 3, 1, &[]);
    let res = c.reply(&call, serve(&server, call.msg.clone())).unwrap();
    let mut d = xdr::Decoder::new(res);
    d.opaque(100).unwrap();
    assert_eq!(d.u32().unwrap(), u32::MAX, "no local user: anonymous");
}

#[test]
fn contexts_with_tickets_of_every_aes_service_key_seal_both_ways() {
    let server = acceptor();
    for (host, _) in ENCTYPES {
        for svc in [GssService::Integrity, GssService::Privacy] {
            let mut c = client_of(&server, "daemon", svc, &format!("nfs@{host}"));
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
                    .unwrap_or_else(|e| panic!("{host} {svc:?} {len}: {e}"));
                let mut d = xdr::Decoder::new(res);
                d.opaque(100).unwrap();
                assert_eq!(d.u32().unwrap(), 1);
                assert_eq!(&d.into_rest()[..], &args[..], "{host} {svc:?} {len}");
            }
        }
    }
}

#[test]
fn replays_tampering_and_forged_handles_are_refused() {
    let server = acceptor();
    let mut c = client(&server, "root", GssService::Integrity);
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

#[test]
fn a_full_table_refuses_new_contexts() {
    let server = acceptor();
    let _held: Vec<_> = (0..16)
        .map(|_| client(&server, "root", GssService::None))
        .collect();
    let init = Krb5Initiator::new(Some("root"), "nfs@localhost").unwrap();
    let s = server.clone();
    let r = GssClient::establish(init, GssService::None, 100003, 3, &mut |m| Ok(serve(&s, m)));
    assert!(matches!(r, Err(ClientError::Refused(..))), "{:?}", r.err());
    assert_eq!(server.contexts(), 16);
}
