//! RPC message headers (RFC 5531 section 9) and the AUTH_SYS credential (appendix A).

use bytes::Bytes;
use xdr::{Decoder, Encoder, XdrError};

/// The only RPC protocol version (RFC 5531).
pub const RPC_VERS: u32 = 2;
/// msg_type CALL.
pub const CALL: u32 = 0;
/// msg_type REPLY.
pub const REPLY: u32 = 1;
/// Largest opaque_auth body (RFC 5531: 400 bytes).
pub const MAX_AUTH_BYTES: usize = 400;
/// Largest AUTH_SYS machine name.
pub const MAX_MACHINE_NAME: usize = 255;
/// Largest AUTH_SYS supplementary group list.
pub const MAX_GIDS: usize = 16;

/// Authentication flavors we recognise.
pub mod flavor {
    /// AUTH_NONE.
    pub const NONE: u32 = 0;
    /// AUTH_SYS (AUTH_UNIX).
    pub const SYS: u32 = 1;
    /// RPCSEC_GSS (RFC 2203).
    pub const RPCSEC_GSS: u32 = 6;
}

/// accept_stat values of an accepted reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum AcceptStat {
    /// The call was executed.
    Success = 0,
    /// The program is not served here.
    ProgUnavail = 1,
    /// The program is served, but not this version.
    ProgMismatch = 2,
    /// The procedure does not exist.
    ProcUnavail = 3,
    /// The arguments could not be decoded.
    GarbageArgs = 4,
    /// The server failed (memory, I/O) while executing the call.
    SystemErr = 5,
}

/// auth_stat values of a denied reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum AuthStat {
    /// Success (never sent in a denied reply).
    Ok = 0,
    /// Malformed credential.
    BadCred = 1,
    /// The client must begin a new session.
    RejectedCred = 2,
    /// Malformed verifier.
    BadVerf = 3,
    /// Verifier expired or replayed.
    RejectedVerf = 4,
    /// Flavor too weak for this export or program.
    TooWeak = 5,
    /// Bogus response verifier.
    InvalidResp = 6,
    /// Unknown reason.
    Failed = 7,
    /// RPCSEC_GSS: no context for the handle, or its header did not verify (RFC 2203 5.3.3.3).
    GssCredProblem = 13,
    /// RPCSEC_GSS: the context cannot serve the call (sequence number past MAXSEQ).
    GssCtxProblem = 14,
}

/// An AUTH_SYS credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSys {
    /// Arbitrary client stamp.
    pub stamp: u32,
    /// The client's host name, as sent (not verified).
    pub machine: Bytes,
    /// Caller's user id.
    pub uid: u32,
    /// Caller's primary group id.
    pub gid: u32,
    /// Supplementary groups (at most 16).
    pub gids: Vec<u32>,
}

impl AuthSys {
    /// Decodes the body of an AUTH_SYS opaque_auth.
    pub fn decode(d: &mut Decoder) -> xdr::Result<Self> {
        let stamp = d.u32()?;
        let machine = d.opaque(MAX_MACHINE_NAME)?;
        let uid = d.u32()?;
        let gid = d.u32()?;
        let gids = d.array(MAX_GIDS, 4, |d| d.u32())?;
        Ok(Self {
            stamp,
            machine,
            uid,
            gid,
            gids,
        })
    }

    /// Encodes the body of an AUTH_SYS opaque_auth (used by clients and tests).
    pub fn encode(&self, e: &mut Encoder) {
        e.u32(self.stamp);
        e.opaque(&self.machine);
        e.u32(self.uid);
        e.u32(self.gid);
        e.u32(self.gids.len() as u32);
        for g in &self.gids {
            e.u32(*g);
        }
    }
}

/// The caller's credential after decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// AUTH_NONE: an anonymous caller.
    None,
    /// AUTH_SYS: uid/gid asserted by the client host.
    Sys(AuthSys),
}

/// The RPCSEC_GSS part of a call header, for [`crate::gss::GssServer::accept`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssHeader {
    /// The decoded credential.
    pub cred: crate::gss::wire::GssCred,
    /// The header from the xid up to and including the credential: what the verifier signs.
    pub signed: Bytes,
    /// The verifier's flavor.
    pub verf_flavor: u32,
    /// The verifier's body (the MIC of `signed`).
    pub verf: Bytes,
}

/// The fixed part of a CALL message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallHeader {
    /// Transaction id, echoed in the reply.
    pub xid: u32,
    /// Program number.
    pub prog: u32,
    /// Program version.
    pub vers: u32,
    /// Procedure number.
    pub proc_: u32,
    /// Decoded credential ([`Credential::None`] for RPCSEC_GSS until authenticated).
    pub cred: Credential,
    /// The RPCSEC_GSS credential and verifier, when the call has them.
    pub gss: Option<GssHeader>,
}

/// Why a message could not be accepted as a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Not even an xid and message type could be read, or it is not a CALL: drop it.
    #[error("not an RPC call: {0}")]
    Garbage(XdrError),
    /// A REPLY arrived where a CALL was expected (possible on a back channel): drop it.
    #[error("message is not a call")]
    NotACall,
    /// rpcvers is not 2: answer MSG_DENIED / RPC_MISMATCH.
    #[error("RPC version {vers} not supported")]
    RpcMismatch {
        /// Transaction id to answer.
        xid: u32,
        /// Version the client asked for.
        vers: u32,
    },
    /// The credential or verifier is malformed or of an unknown flavor: answer AUTH_ERROR.
    #[error("authentication error {stat:?}")]
    Auth {
        /// Transaction id to answer.
        xid: u32,
        /// Status to send.
        stat: AuthStat,
    },
}

/// Decodes a CALL header; returns it and a decoder positioned at the procedure arguments.
pub fn decode_call(msg: Bytes) -> Result<(CallHeader, Decoder), HeaderError> {
    let whole = msg.clone();
    let mut d = Decoder::new(msg);
    let xid = d.u32().map_err(HeaderError::Garbage)?;
    let mtype = d.u32().map_err(HeaderError::Garbage)?;
    if mtype != CALL {
        return Err(HeaderError::NotACall);
    }
    let rpcvers = d.u32().map_err(HeaderError::Garbage)?;
    if rpcvers != RPC_VERS {
        return Err(HeaderError::RpcMismatch { xid, vers: rpcvers });
    }
    let badcred = HeaderError::Auth {
        xid,
        stat: AuthStat::BadCred,
    };
    let prog = d.u32().map_err(|_| badcred.clone())?;
    let vers = d.u32().map_err(|_| badcred.clone())?;
    let proc_ = d.u32().map_err(|_| badcred.clone())?;
    let cred_flavor = d.u32().map_err(|_| badcred.clone())?;
    let cred_body = d.opaque(MAX_AUTH_BYTES).map_err(|_| badcred.clone())?;
    let mut gss = None;
    let cred = match cred_flavor {
        flavor::NONE => Credential::None,
        flavor::RPCSEC_GSS => {
            let cred = crate::gss::wire::GssCred::decode(cred_body).map_err(|_| badcred.clone())?;
            let signed = whole.slice(..whole.len() - d.remaining());
            gss = Some((cred, signed));
            Credential::None
        }
        flavor::SYS => {
            let mut cd = Decoder::new(cred_body);
            let sys = AuthSys::decode(&mut cd).map_err(|_| badcred.clone())?;
            if cd.remaining() != 0 {
                return Err(badcred);
            }
            Credential::Sys(sys)
        }
        _ => return Err(badcred),
    };
    let badverf = HeaderError::Auth {
        xid,
        stat: AuthStat::BadVerf,
    };
    let verf_flavor = d.u32().map_err(|_| badverf.clone())?;
    let verf = d.opaque(MAX_AUTH_BYTES).map_err(|_| badverf)?;
    Ok((
        CallHeader {
            xid,
            prog,
            vers,
            proc_,
            cred,
            gss: gss.map(|(cred, signed)| GssHeader {
                cred,
                signed,
                verf_flavor,
                verf,
            }),
        },
        d,
    ))
}

/// The results of a reply to a call this side made: the decoder after the header of an
/// accepted, successful reply; None for any other reply.
pub fn decode_success(msg: Bytes) -> Option<Decoder> {
    let mut d = Decoder::new(msg);
    d.u32().ok()?; // xid (matched by the caller)
    let ok = d.u32().ok()? == REPLY
        && d.u32().ok()? == 0 // MSG_ACCEPTED
        && d.u32().is_ok() // verifier flavor
        && d.opaque(MAX_AUTH_BYTES).is_ok()
        && d.u32().ok()? == AcceptStat::Success as u32;
    ok.then_some(d)
}

/// Writes the header of an accepted reply (verifier AUTH_NONE) followed by `stat`.
pub fn encode_accepted(e: &mut Encoder, xid: u32, stat: AcceptStat) {
    e.u32(xid);
    e.u32(REPLY);
    e.u32(0); // MSG_ACCEPTED
    e.u32(flavor::NONE);
    e.u32(0);
    e.u32(stat as u32);
}

/// Encodes a complete PROG_MISMATCH reply with the supported version range.
pub fn encode_prog_mismatch(e: &mut Encoder, xid: u32, low: u32, high: u32) {
    encode_accepted(e, xid, AcceptStat::ProgMismatch);
    e.u32(low);
    e.u32(high);
}

/// Encodes a complete MSG_DENIED / RPC_MISMATCH reply.
pub fn encode_rpc_mismatch(e: &mut Encoder, xid: u32) {
    e.u32(xid);
    e.u32(REPLY);
    e.u32(1); // MSG_DENIED
    e.u32(0); // RPC_MISMATCH
    e.u32(RPC_VERS);
    e.u32(RPC_VERS);
}

/// Encodes a complete MSG_DENIED / AUTH_ERROR reply.
pub fn encode_auth_error(e: &mut Encoder, xid: u32, stat: AuthStat) {
    e.u32(xid);
    e.u32(REPLY);
    e.u32(1); // MSG_DENIED
    e.u32(1); // AUTH_ERROR
    e.u32(stat as u32);
}

/// Encodes a CALL header (used by our own clients and tests).
pub fn encode_call(e: &mut Encoder, xid: u32, prog: u32, vers: u32, proc_: u32, cred: &Credential) {
    e.u32(xid);
    e.u32(CALL);
    e.u32(RPC_VERS);
    e.u32(prog);
    e.u32(vers);
    e.u32(proc_);
    match cred {
        Credential::None => {
            e.u32(flavor::NONE);
            e.u32(0);
        }
        Credential::Sys(s) => {
            let mut body = Encoder::new();
            s.encode(&mut body);
            e.u32(flavor::SYS);
            e.opaque(&body.finish().to_bytes());
        }
    }
    e.u32(flavor::NONE);
    e.u32(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn call_bytes(cred: &Credential) -> Bytes {
        let mut e = Encoder::new();
        encode_call(&mut e, 42, 100003, 3, 1, cred);
        e.u32(0xabcd);
        e.finish().to_bytes()
    }

    #[test]
    fn call_roundtrip_auth_sys() {
        let cred = Credential::Sys(AuthSys {
            stamp: 1,
            machine: Bytes::from_static(b"host"),
            uid: 1000,
            gid: 100,
            gids: vec![1, 2, 3],
        });
        let (h, mut args) = decode_call(call_bytes(&cred)).unwrap();
        assert_eq!(h.xid, 42);
        assert_eq!((h.prog, h.vers, h.proc_), (100003, 3, 1));
        assert_eq!(h.cred, cred);
        assert_eq!(args.u32().unwrap(), 0xabcd);
    }

    #[test]
    fn wrong_rpc_version_and_bad_flavor() {
        let mut b = call_bytes(&Credential::None).to_vec();
        b[11] = 3;
        assert_eq!(
            decode_call(Bytes::from(b)).err(),
            Some(HeaderError::RpcMismatch { xid: 42, vers: 3 })
        );
        let mut b = call_bytes(&Credential::None).to_vec();
        b[27] = 9; // credential flavor
        assert_eq!(
            decode_call(Bytes::from(b)).err(),
            Some(HeaderError::Auth {
                xid: 42,
                stat: AuthStat::BadCred
            })
        );
    }

    #[test]
    fn too_many_gids_is_badcred() {
        let cred = Credential::Sys(AuthSys {
            stamp: 1,
            machine: Bytes::new(),
            uid: 0,
            gid: 0,
            gids: (0..17).collect(),
        });
        assert!(matches!(
            decode_call(call_bytes(&cred)),
            Err(HeaderError::Auth {
                stat: AuthStat::BadCred,
                ..
            })
        ));
    }

    #[test]
    fn reply_is_not_a_call() {
        let mut e = Encoder::new();
        encode_accepted(&mut e, 1, AcceptStat::Success);
        assert_eq!(
            decode_call(e.finish().to_bytes()).err(),
            Some(HeaderError::NotACall)
        );
    }

    proptest! {
        #[test]
        fn garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = decode_call(Bytes::from(v));
        }

        #[test]
        fn truncated_calls_are_errors(cut in 0usize..60) {
            let full = call_bytes(&Credential::Sys(AuthSys {
                stamp: 7, machine: Bytes::from_static(b"m"), uid: 1, gid: 2, gids: vec![3],
            }));
            let cut = cut.min(full.len() - 5);
            prop_assert!(decode_call(full.slice(..cut)).is_err());
        }
    }
}
