//! RPCSEC_GSS version 1 wire types (RFC 2203 section 5): the credential, the context-creation
//! argument and result, and the integrity and privacy bodies.

use bytes::Bytes;
use xdr::{Decoder, Encoder, XdrError};

/// The RPCSEC_GSS authentication flavor number (RFC 2203 section 3).
pub const RPCSEC_GSS: u32 = 6;
/// The only RPCSEC_GSS version.
pub const RPCSEC_GSS_VERS_1: u32 = 1;
/// Sequence numbers at or above this are refused (RFC 2203 section 5.3.3.1).
pub const MAXSEQ: u32 = 0x8000_0000;
/// Largest context handle accepted from a client; ours are [`HANDLE_LEN`] bytes.
pub const MAX_HANDLE: usize = 32;
/// Length of the handles this server hands out.
pub const HANDLE_LEN: usize = 16;
/// Largest context-creation token (a Kerberos AP-REQ with a large PAC fits in well under
/// this; knfsd takes the same page-sized limit for its upcall).
pub const MAX_INIT_TOKEN: usize = 64 * 1024;
/// Largest MIC token in a checksum or verifier (a krb5 MIC is 28 bytes; RFC 5531 caps an
/// opaque_auth body at 400).
pub const MAX_MIC: usize = 400;

/// What a call does with its context (`rpc_gss_proc_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GssProc {
    /// An ordinary call under an established context.
    Data,
    /// The first context-creation call.
    Init,
    /// A further context-creation call (mechanisms with more than one round trip).
    ContinueInit,
    /// The client is done with the context.
    Destroy,
}

impl GssProc {
    fn from_wire(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Data,
            1 => Self::Init,
            2 => Self::ContinueInit,
            3 => Self::Destroy,
            _ => return None,
        })
    }

    fn to_wire(self) -> u32 {
        match self {
            Self::Data => 0,
            Self::Init => 1,
            Self::ContinueInit => 2,
            Self::Destroy => 3,
        }
    }
}

/// The protection of a call's arguments and results (`rpc_gss_service_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GssService {
    /// Authentication only (the header is signed): `sec=krb5`.
    None,
    /// Arguments and results signed: `sec=krb5i`.
    Integrity,
    /// Arguments and results encrypted: `sec=krb5p`.
    Privacy,
}

impl GssService {
    /// The service of wire value `v`.
    pub fn from_wire(v: u32) -> Option<Self> {
        Some(match v {
            1 => Self::None,
            2 => Self::Integrity,
            3 => Self::Privacy,
            _ => return None,
        })
    }

    /// The wire value.
    pub fn to_wire(self) -> u32 {
        match self {
            Self::None => 1,
            Self::Integrity => 2,
            Self::Privacy => 3,
        }
    }

    /// The name used in exports and logs (`krb5`, `krb5i`, `krb5p`).
    pub fn krb5_name(self) -> &'static str {
        match self {
            Self::None => "krb5",
            Self::Integrity => "krb5i",
            Self::Privacy => "krb5p",
        }
    }
}

/// A decoded `rpc_gss_cred_t` of version 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssCred {
    /// What the call does with its context.
    pub proc_: GssProc,
    /// The call's sequence number (ignored for INIT and CONTINUE_INIT).
    pub seq: u32,
    /// The protection the call asks for.
    pub service: GssService,
    /// The context handle (empty on INIT).
    pub handle: Bytes,
}

/// Why a credential body is not a usable RPCSEC_GSS credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CredError {
    /// Truncated, or a length past its bound.
    #[error("malformed RPCSEC_GSS credential")]
    Malformed,
    /// A version other than 1.
    #[error("RPCSEC_GSS version {0} not supported")]
    Version(u32),
    /// An unknown procedure or service value.
    #[error("unknown RPCSEC_GSS procedure or service")]
    Unknown,
}

impl GssCred {
    /// Decodes the body of an RPCSEC_GSS opaque_auth (the whole body must be the credential).
    pub fn decode(body: Bytes) -> Result<Self, CredError> {
        let mut d = Decoder::new(body);
        let m = |_: XdrError| CredError::Malformed;
        let vers = d.u32().map_err(m)?;
        if vers != RPCSEC_GSS_VERS_1 {
            return Err(CredError::Version(vers));
        }
        let proc_ = GssProc::from_wire(d.u32().map_err(m)?).ok_or(CredError::Unknown)?;
        let seq = d.u32().map_err(m)?;
        let service = GssService::from_wire(d.u32().map_err(m)?).ok_or(CredError::Unknown)?;
        let handle = d.opaque(MAX_HANDLE).map_err(m)?;
        if d.remaining() != 0 {
            return Err(CredError::Malformed);
        }
        Ok(Self {
            proc_,
            seq,
            service,
            handle,
        })
    }

    /// Encodes the credential body (the opaque_auth's contents, without its length).
    pub fn encode(&self, e: &mut Encoder) {
        e.u32(RPCSEC_GSS_VERS_1);
        e.u32(self.proc_.to_wire());
        e.u32(self.seq);
        e.u32(self.service.to_wire());
        e.opaque(&self.handle);
    }
}

/// `rpc_gss_init_res`: what a context-creation call answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitRes {
    /// The context's handle (empty when creation failed).
    pub handle: Bytes,
    /// GSS-API major status.
    pub major: u32,
    /// GSS-API minor status.
    pub minor: u32,
    /// The sequence window the server keeps.
    pub seq_window: u32,
    /// The token for the client's next step (may be empty).
    pub token: Bytes,
}

impl InitRes {
    /// Appends the result.
    pub fn encode(&self, e: &mut Encoder) {
        e.opaque(&self.handle);
        e.u32(self.major);
        e.u32(self.minor);
        e.u32(self.seq_window);
        e.opaque(&self.token);
    }

    /// Decodes a result (the client side).
    pub fn decode(d: &mut Decoder) -> xdr::Result<Self> {
        Ok(Self {
            handle: d.opaque(MAX_HANDLE)?,
            major: d.u32()?,
            minor: d.u32()?,
            seq_window: d.u32()?,
            token: d.opaque(MAX_INIT_TOKEN)?,
        })
    }
}

/// An `rpc_gss_integ_data` split into its parts: the signed body (`seq_num` then the
/// arguments or results) and its checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegData {
    /// `databody_integ`: the sequence number followed by the arguments, as signed.
    pub body: Bytes,
    /// The MIC of `body`.
    pub checksum: Bytes,
}

impl IntegData {
    /// Decodes an integrity body whose signed part is at most `max` bytes: a slice of the
    /// message, not a copy.
    pub fn decode(d: &mut Decoder, max: usize) -> xdr::Result<Self> {
        let body = d.opaque(max)?;
        let checksum = d.opaque(MAX_MIC)?;
        Ok(Self { body, checksum })
    }
}

/// Splits a signed or unwrapped body into its sequence number and the rest.
pub fn split_seq(body: Bytes) -> Option<(u32, Bytes)> {
    let mut d = Decoder::new(body);
    let seq = d.u32().ok()?;
    Some((seq, d.into_rest()))
}

/// The four bytes a sequence number is signed as (reply verifiers and the INIT window).
pub fn seq_bytes(seq: u32) -> [u8; 4] {
    seq.to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cred_bytes(c: &GssCred) -> Bytes {
        let mut e = Encoder::new();
        c.encode(&mut e);
        e.finish().to_bytes()
    }

    #[test]
    fn cred_roundtrip_and_refusals() {
        let c = GssCred {
            proc_: GssProc::Data,
            seq: 7,
            service: GssService::Privacy,
            handle: Bytes::from_static(&[1; 16]),
        };
        assert_eq!(GssCred::decode(cred_bytes(&c)), Ok(c.clone()));
        let mut b = cred_bytes(&c).to_vec();
        b[3] = 2;
        assert_eq!(GssCred::decode(Bytes::from(b)), Err(CredError::Version(2)));
        let mut b = cred_bytes(&c).to_vec();
        b[15] = 4; // service
        assert_eq!(GssCred::decode(Bytes::from(b)), Err(CredError::Unknown));
        let mut b = cred_bytes(&c).to_vec();
        b[7] = 9; // procedure
        assert_eq!(GssCred::decode(Bytes::from(b)), Err(CredError::Unknown));
        let mut b = cred_bytes(&c).to_vec();
        b.extend_from_slice(&[0; 4]);
        assert_eq!(GssCred::decode(Bytes::from(b)), Err(CredError::Malformed));
        let long = GssCred {
            handle: Bytes::from(vec![0; MAX_HANDLE + 1]),
            ..c
        };
        assert_eq!(
            GssCred::decode(cred_bytes(&long)),
            Err(CredError::Malformed)
        );
    }

    #[test]
    fn init_res_roundtrip() {
        let r = InitRes {
            handle: Bytes::from_static(b"0123456789abcdef"),
            major: 0,
            minor: 0,
            seq_window: 128,
            token: Bytes::from_static(b"tok"),
        };
        let mut e = Encoder::new();
        r.encode(&mut e);
        let mut d = Decoder::new(e.finish().to_bytes());
        assert_eq!(InitRes::decode(&mut d).unwrap(), r);
        assert_eq!(d.remaining(), 0);
    }

    proptest! {
        #[test]
        fn cred_garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = GssCred::decode(Bytes::from(v));
        }

        #[test]
        fn truncated_creds_are_errors(cut in 0usize..36) {
            let full = cred_bytes(&GssCred {
                proc_: GssProc::Init, seq: 0, service: GssService::None,
                handle: Bytes::from_static(&[9; 16]),
            });
            prop_assert!(GssCred::decode(full.slice(..cut.min(full.len() - 1))).is_err());
        }

        #[test]
        fn integ_bodies_are_bounded(len in 0u32..u32::MAX, max in 0usize..4096) {
            let mut e = Encoder::new();
            e.u32(len);
            e.opaque_fixed(&[0; 64]);
            let mut d = Decoder::new(e.finish().to_bytes());
            if let Ok(x) = IntegData::decode(&mut d, max) {
                prop_assert!(x.body.len() <= max);
            }
        }
    }
}
