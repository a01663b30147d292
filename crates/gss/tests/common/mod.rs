//! What the Kerberos test binaries share: a realm (one per binary: its krb5.conf decides which
//! enctype contexts seal with), the acceptor, and initiators of two kinds: MIT's GSS-API
//! making every token (the oracle the Rust tokens are checked against) and rnfs's own.
#![allow(dead_code)]

use std::sync::{Arc, OnceLock};

pub use bytes::Bytes;
pub use gss::kdc::{Kdc, REALM};
use gss::{IdentityCache, Krb5Acceptor, Krb5Initiator};
use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use sunrpc::gss::client::{GssClient, Initiator};
use sunrpc::gss::mech::GssError;
pub use sunrpc::gss::wire::GssService;
use sunrpc::gss::{GssServer, Verdict};
use sunrpc::msg::decode_call;

/// Service hosts whose keys (and so contexts' session keys) are of one AES enctype each.
pub const ENCTYPES: [(&str, &str); 4] = [
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

/// The `[libdefaults]` lines of the binary's realm, set by [`init`] before its first use.
static LIBDEFAULTS: OnceLock<&'static str> = OnceLock::new();

/// Sets the binary's realm's `[libdefaults]` lines (`permitted_enctypes = ...`).
pub fn init(libdefaults: &'static str) {
    let _ = LIBDEFAULTS.set(libdefaults);
}

/// One KDC for the test binary; its environment is set before any test uses GSS.
fn realm() -> &'static Realm {
    static R: OnceLock<Realm> = OnceLock::new();
    R.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("rnfs-gss-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let kdc =
            Kdc::start_with(&dir, LIBDEFAULTS.get().copied().unwrap_or("")).expect("start the KDC");
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

pub fn acceptor() -> Arc<GssServer> {
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
pub fn serve(server: &GssServer, msg: Bytes) -> Bytes {
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

/// Who makes the initiator's tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// MIT's GSS-API, every token: what the acceptor's Rust tokens must agree with.
    Mit,
    /// rnfs's [`Krb5Initiator`] (MIT establishes, Rust makes the tokens).
    Rust,
}

/// Both kinds of initiator.
pub const SIDES: [Side; 2] = [Side::Mit, Side::Rust];

/// An initiator whose tokens are all MIT's (libgssapi's safe binding).
pub struct Mit(ClientCtx);

impl Initiator for Mit {
    fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError> {
        let out = self.0.step(token, None).map_err(err)?;
        Ok((
            out.map(|b| b.to_vec()).unwrap_or_default(),
            self.0.is_complete(),
        ))
    }
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.0.get_mic(msg).map_err(err)?.to_vec())
    }
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.0.verify_mic(msg, mic).map_err(err)
    }
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.0.wrap(true, msg).map_err(err)?.to_vec())
    }
    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.0.unwrap(token).map_err(err)?.to_vec())
    }
}

fn err(e: libgssapi::error::Error) -> GssError {
    GssError {
        major: e.major.bits(),
        minor: e.minor,
    }
}

/// An initiator of either side, as `user` for `target`.
pub fn initiator(side: Side, user: &str, target: &str) -> Box<dyn Initiator> {
    match side {
        Side::Rust => Box::new(Krb5Initiator::new(Some(user), target).expect("initiator")),
        Side::Mit => {
            use libgssapi::credential::{Cred, CredUsage};
            use libgssapi::name::Name;
            use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL};
            let n = Name::new(user.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL)).unwrap();
            let cred = Cred::acquire(Some(&n), None, CredUsage::Initiate, None).unwrap();
            let t = Name::new(target.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE)).unwrap();
            let flags = CtxFlags::GSS_C_MUTUAL_FLAG
                | CtxFlags::GSS_C_INTEG_FLAG
                | CtxFlags::GSS_C_CONF_FLAG;
            Box::new(Mit(ClientCtx::new(
                Some(cred),
                t,
                flags,
                Some(GSS_MECH_KRB5),
            )))
        }
    }
}

/// A context of `user` with the acceptor, for `svc`.
pub fn client(
    server: &Arc<GssServer>,
    side: Side,
    user: &str,
    svc: GssService,
) -> GssClient<Box<dyn Initiator>> {
    client_of(server, side, user, svc, "nfs@localhost")
}

/// As [`client`], for service name `target`.
pub fn client_of(
    server: &Arc<GssServer>,
    side: Side,
    user: &str,
    svc: GssService,
    target: &str,
) -> GssClient<Box<dyn Initiator>> {
    let init = initiator(side, user, target);
    let s = server.clone();
    GssClient::establish(init, svc, 100003, 3, &mut |m| Ok(serve(&s, m))).expect("context")
}

pub mod cases;

/// The tests of a binary whose realm has `[libdefaults]` lines `$libdefaults` and whose
/// contexts seal with `$cipher`; more cases of [`cases`] by name.
#[macro_export]
macro_rules! realm_tests {
    ($libdefaults:expr, $cipher:expr $(, $extra:ident)*) => {
        fn realm() {
            common::init($libdefaults);
        }

        #[test]
        fn every_service_carries_calls_both_ways_and_maps_the_principal() {
            realm();
            common::cases::every_service_carries_calls_both_ways_and_maps_the_principal($cipher);
        }

        #[test]
        fn replays_tampering_and_forged_handles_are_refused() {
            realm();
            common::cases::replays_tampering_and_forged_handles_are_refused();
        }

        #[test]
        fn a_full_table_refuses_new_contexts() {
            realm();
            common::cases::a_full_table_refuses_new_contexts();
        }

        $(
            #[test]
            fn $extra() {
                realm();
                common::cases::$extra();
            }
        )*
    };
}
