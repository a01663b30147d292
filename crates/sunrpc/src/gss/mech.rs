//! What RPCSEC_GSS needs of a GSS-API mechanism, as traits: the protocol logic here has no
//! FFI, and the Kerberos V5 binding (the `gss` crate) implements them.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

/// A GSS-API failure: its major and minor status, as `rpc_gss_init_res` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("GSS-API major {major:#x} minor {minor}")]
pub struct GssError {
    /// Major status (RFC 2744 routine and calling errors).
    pub major: u32,
    /// Mechanism-specific minor status.
    pub minor: u32,
}

impl GssError {
    /// GSS_S_FAILURE with no mechanism detail: what a server that refuses a context says.
    pub const FAILURE: GssError = GssError {
        major: 13 << 16,
        minor: 0,
    };
}

/// GSS_S_COMPLETE.
pub const GSS_S_COMPLETE: u32 = 0;
/// GSS_S_CONTINUE_NEEDED (a supplementary bit).
pub const GSS_S_CONTINUE_NEEDED: u32 = 1;

/// A local identity a principal maps to: what file-system calls run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnixIdent {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Supplementary groups (all of them: not capped at AUTH_SYS's 16).
    pub gids: Vec<u32>,
}

/// Who is at the other end of an established context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The initiator's principal as the mechanism displays it (`alice@EXAMPLE.COM`).
    pub principal: Arc<str>,
    /// The local identity it maps to; `None`: no mapping (the export's anonymous identity).
    pub ident: Option<UnixIdent>,
    /// How long the context stays valid (the ticket's remaining lifetime for Kerberos).
    pub lifetime: Duration,
    /// What protects its messages, for operators (the Kerberos enctype's name).
    pub cipher: &'static str,
    /// The principal of this side the peer authenticated to (`nfs/server.example.com@REALM`):
    /// who this server is to that client, and so whom it calls it back as.
    pub acceptor: Option<Arc<str>>,
}

/// One step of context establishment.
#[derive(Debug)]
pub struct Step {
    /// Token for the client (may be empty).
    pub token: Vec<u8>,
    /// The context is established (`Some`: who the peer is) or needs another step (`None`).
    pub done: Option<Peer>,
}

/// The acceptor's side of one security context. Establishing it (`step`) is exclusive; once
/// established, its tokens are made and checked by any number of threads at once (one user's
/// calls in flight seal on several cores).
pub trait SecContext: Send + Sync {
    /// Feeds a token from the client (RPCSEC_GSS_INIT / CONTINUE_INIT).
    fn step(&mut self, token: &[u8]) -> Result<Step, GssError>;
    /// The MIC token of `msg`.
    fn get_mic(&self, msg: &[u8]) -> Result<Bytes, GssError>;
    /// Checks that `mic` is this context's MIC of `msg`.
    fn verify_mic(&self, msg: &[u8], mic: &[u8]) -> Result<(), GssError>;
    /// Signs and encrypts `msg` into one wrap token (in the mechanism's own buffer, not
    /// copied again).
    fn wrap(&self, msg: &[u8]) -> Result<Bytes, GssError>;
    /// Checks and decrypts a wrap token.
    fn unwrap(&self, token: &[u8]) -> Result<Bytes, GssError>;
    /// The MIC token of the concatenation of `parts` (a reply kept in segments is signed
    /// where it lies); by default, of the parts joined.
    fn get_mic_parts(&self, parts: &[&[u8]]) -> Result<Bytes, GssError> {
        self.get_mic(&parts.concat())
    }
    /// The wrap token of the concatenation of `parts`; by default, of the parts joined.
    fn wrap_parts(&self, parts: &[&[u8]]) -> Result<Bytes, GssError> {
        self.wrap(&parts.concat())
    }
}

/// A mechanism that makes acceptor contexts (from the server's credentials).
pub trait Mechanism: Send + Sync {
    /// A new, unestablished context.
    fn new_context(&self) -> Box<dyn SecContext>;
}
