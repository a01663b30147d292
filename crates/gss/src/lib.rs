//! The Kerberos V5 mechanism behind RPCSEC_GSS, through the system's GSS-API (MIT Kerberos):
//! acceptor contexts with the keys of a keytab ([`Krb5Acceptor`]), the mapping of a client's
//! principal to a local user ([`IdentityCache`]), and the initiator side for rnfs's own
//! clients ([`Krb5Initiator`]).
//!
//! MIT's GSS-API establishes acceptor contexts and hands their keys over; per-message tokens
//! (MIC, Wrap) are made and checked in Rust ([`cfx`]), as knfsd makes them in the kernel with
//! the keys rpc.gssd hands it. The only `unsafe` code is the FFI of [`sys`].

#![deny(unsafe_code)]

pub mod cfx;
pub mod idmap;
pub mod kdc;
mod sys;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{OidSet, GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};
use sunrpc::gss::client::{Initiator, Initiators};
use sunrpc::gss::mech::{GssError, Mechanism, Peer, SecContext, Step};

pub use idmap::IdentityCache;

fn err(e: libgssapi::error::Error) -> GssError {
    GssError {
        major: e.major.bits(),
        minor: e.minor,
    }
}

fn krb5_mechs() -> Result<OidSet, GssError> {
    let mut s = OidSet::new();
    s.add(GSS_MECH_KRB5).map_err(err)?;
    Ok(s)
}

/// Why the acceptor could not start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// No acceptor credentials: the keytab is missing, unreadable or holds no key.
    #[error("no Kerberos acceptor credentials from keytab {keytab}: {detail}")]
    NoCredentials {
        /// The keytab tried.
        keytab: String,
        /// What the GSS-API said.
        detail: String,
    },
}

/// The acceptor: contexts are accepted with the keys of the keytab the process names in
/// `KRB5_KTNAME` (rnfsd sets it from `--keytab` before any thread starts).
pub struct Krb5Acceptor {
    cred: Arc<sys::AcceptorCred>,
    ids: Arc<IdentityCache>,
    privileged: Privileged,
}

/// Runs a closure with the process's own file-system identity: accepting a context reads the
/// keytab and writes the replay cache, which a server thread that last took a caller's
/// identity cannot.
pub type Privileged = fn(&mut dyn FnMut());

fn unprivileged(f: &mut dyn FnMut()) {
    f()
}

impl Krb5Acceptor {
    /// Acquires acceptor credentials for every key of the keytab (`principal`: only that
    /// service principal's, as `nfs@host`) and maps principals through `ids`.
    pub fn new(
        keytab: &str,
        principal: Option<&str>,
        ids: Arc<IdentityCache>,
    ) -> Result<Self, SetupError> {
        let fail = |detail: String| SetupError::NoCredentials {
            keytab: keytab.to_string(),
            detail,
        };
        // the safe binding checks that the keytab has a key to accept with (the raw
        // credential below does not look until the first INIT)
        let name = match principal {
            Some(p) => Some(
                Name::new(p.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE))
                    .map_err(|e| fail(e.to_string()))?,
            ),
            None => None,
        };
        let mechs = krb5_mechs().map_err(|e| fail(e.to_string()))?;
        Cred::acquire(name.as_ref(), None, CredUsage::Accept, Some(&mechs))
            .and_then(|c| c.info())
            .map_err(|e| fail(e.to_string()))?;
        let cred = sys::AcceptorCred::acquire(principal).map_err(|e| fail(e.to_string()))?;
        Ok(Self {
            cred: Arc::new(cred),
            ids,
            privileged: unprivileged,
        })
    }

    /// Accepts contexts inside `p` (rnfsd: as root, whatever the thread's last caller was).
    pub fn with_privileged(mut self, p: Privileged) -> Self {
        self.privileged = p;
        self
    }
}

impl Mechanism for Krb5Acceptor {
    fn new_context(&self) -> Box<dyn SecContext> {
        Box::new(AcceptorContext {
            state: State::Establishing(sys::AcceptorCtx::default()),
            cred: self.cred.clone(),
            ids: self.ids.clone(),
            privileged: self.privileged,
        })
    }
}

/// Where an acceptor context is: still with the GSS-API, or its keys handed over.
enum State {
    Establishing(sys::AcceptorCtx),
    Open(Box<cfx::Cfx>),
    Failed,
}

/// GSS_S_NO_CONTEXT: a token operation before the context is established.
const NO_CONTEXT: GssError = GssError {
    major: 8 << 16,
    minor: 0,
};

/// GSS_S_BAD_SIG / GSS_S_BAD_MIC, GSS_S_DEFECTIVE_TOKEN: what a token that does not check out
/// gets.
fn token_error(e: cfx::CfxError) -> GssError {
    let major = match e {
        cfx::CfxError::BadChecksum => 6 << 16,
        cfx::CfxError::Defective => 9 << 16,
        cfx::CfxError::Enctype(_) => 13 << 16,
    };
    GssError { major, minor: 0 }
}

/// One acceptor context.
struct AcceptorContext {
    state: State,
    cred: Arc<sys::AcceptorCred>,
    ids: Arc<IdentityCache>,
    privileged: Privileged,
}

impl AcceptorContext {
    fn open(&self) -> Result<&cfx::Cfx, GssError> {
        match &self.state {
            State::Open(c) => Ok(c),
            _ => Err(NO_CONTEXT),
        }
    }
}

impl SecContext for AcceptorContext {
    fn step(&mut self, token: &[u8]) -> Result<Step, GssError> {
        let State::Establishing(ctx) = &mut self.state else {
            return Err(NO_CONTEXT);
        };
        let mut out = Err(NO_CONTEXT);
        let cred = &self.cred;
        (self.privileged)(&mut || out = ctx.step(cred, token));
        let (token, peer) = out?;
        let Some(peer) = peer else {
            return Ok(Step { token, done: None });
        };
        let lucid = ctx.export()?;
        let cfx = match lucid.protocol {
            1 => cfx::Cfx::new(
                lucid.enctype,
                &lucid.key,
                true,
                lucid.acceptor_subkey,
                lucid.send_seq,
            ),
            _ => Err(cfx::CfxError::Enctype(lucid.enctype)),
        };
        let cfx = match cfx {
            Ok(c) => c,
            Err(e) => {
                self.state = State::Failed;
                tracing::warn!(principal = %peer.principal, enctype = lucid.enctype,
                    "RPCSEC_GSS: the session key's enctype is not one of the AES enctypes (17-20) rnfsd seals with");
                return Err(token_error(e));
            }
        };
        let cipher = cfx.enctype().name();
        self.state = State::Open(Box::new(cfx));
        let ident = self.ids.lookup(&peer.principal, peer.local_name.as_deref());
        Ok(Step {
            token,
            done: Some(Peer {
                principal: peer.principal.into(),
                ident,
                lifetime: Duration::from_secs(u64::from(peer.lifetime_secs)),
                cipher,
                acceptor: peer.acceptor.map(Into::into),
            }),
        })
    }

    fn get_mic(&self, msg: &[u8]) -> Result<Bytes, GssError> {
        Ok(Bytes::from(self.open()?.get_mic(&[msg])))
    }

    fn verify_mic(&self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.open()?.verify_mic(&[msg], mic).map_err(token_error)
    }

    fn wrap(&self, msg: &[u8]) -> Result<Bytes, GssError> {
        let mut confounder = [0u8; 16];
        getrandom::fill(&mut confounder).map_err(|_| GssError::FAILURE)?;
        Ok(Bytes::from(self.open()?.wrap(&[msg], confounder)))
    }

    fn get_mic_parts(&self, parts: &[&[u8]]) -> Result<Bytes, GssError> {
        Ok(Bytes::from(self.open()?.get_mic(parts)))
    }

    fn wrap_parts(&self, parts: &[&[u8]]) -> Result<Bytes, GssError> {
        let mut confounder = [0u8; 16];
        getrandom::fill(&mut confounder).map_err(|_| GssError::FAILURE)?;
        Ok(Bytes::from(self.open()?.wrap(parts, confounder)))
    }

    fn unwrap(&self, token: &[u8]) -> Result<Bytes, GssError> {
        // decrypted in a copy of its own (the token is a slice of the shared receive buffer)
        let mut v = token.to_vec();
        let r = self.open()?.unwrap(&mut v).map_err(token_error)?;
        Ok(Bytes::from(v).slice(r))
    }
}

/// The initiator's side, for rnfs's own clients: a context with `service` (`nfs@host`) as
/// the principal `user` (from the credential cache, or the client keytab that
/// `KRB5_CLIENT_KTNAME` names), or the default principal. Established by MIT's GSS-API, its
/// tokens then made in Rust as the acceptor's (and as the Linux kernel client makes them).
pub struct Krb5Initiator {
    state: InitState,
    privileged: Privileged,
}

enum InitState {
    Establishing(sys::InitiatorCtx),
    Open(Box<cfx::Cfx>),
}

impl Krb5Initiator {
    /// A context to establish with [`sunrpc::gss::client::GssClient::establish`].
    pub fn new(user: Option<&str>, service: &str) -> Result<Self, GssError> {
        Ok(Self {
            state: InitState::Establishing(sys::InitiatorCtx::new(user, service)?),
            privileged: unprivileged,
        })
    }

    fn open(&mut self) -> Result<&mut cfx::Cfx, GssError> {
        match &mut self.state {
            InitState::Open(c) => Ok(c),
            InitState::Establishing(_) => Err(NO_CONTEXT),
        }
    }
}

impl Initiator for Krb5Initiator {
    fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError> {
        let InitState::Establishing(ctx) = &mut self.state else {
            return Err(NO_CONTEXT);
        };
        let mut out = Err(NO_CONTEXT);
        (self.privileged)(&mut || out = ctx.step(token));
        let (out, done) = out?;
        if done {
            let l = ctx.export()?;
            let c = match l.protocol {
                1 => cfx::Cfx::new(l.enctype, &l.key, false, l.acceptor_subkey, l.send_seq),
                _ => Err(cfx::CfxError::Enctype(l.enctype)),
            }
            .map_err(token_error)?;
            self.state = InitState::Open(Box::new(c));
        }
        Ok((out, done))
    }

    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.open()?.get_mic(&[msg]))
    }

    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.open()?.verify_mic(&[msg], mic).map_err(token_error)
    }

    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        let mut confounder = [0u8; 16];
        getrandom::fill(&mut confounder).map_err(|_| GssError::FAILURE)?;
        Ok(self.open()?.wrap(&[msg], confounder))
    }

    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, GssError> {
        let mut v = token.to_vec();
        let r = self.open()?.unwrap(&mut v).map_err(token_error)?;
        v.truncate(r.end);
        v.drain(..r.start);
        Ok(v)
    }
}

/// A server's own initiator contexts ([`Initiators`]): as its service principal, with the
/// keys of its keytab used as a client keytab, tickets kept in a memory cache of the process
/// (no user's credential cache is read or written).
pub struct KeytabInitiators {
    keytab: String,
    own: Option<String>,
    privileged: Privileged,
}

/// The credential caches of [`KeytabInitiators`] (this, a dash, and the principal called
/// as): in the process's memory, kept for its life, so that the tickets for a client are got
/// once.
const CCACHE: &str = "MEMORY:rnfsd-initiator";

impl KeytabInitiators {
    /// Contexts from `keytab`, as the principal asked for, else as `own` (`nfs@host`; None:
    /// the keytab's first principal).
    pub fn new(keytab: &str, own: Option<&str>) -> Self {
        Self {
            keytab: keytab.to_string(),
            own: own.map(str::to_string),
            privileged: unprivileged,
        }
    }

    /// Reads the keytab and reaches the KDC inside `p` (rnfsd: as root, whatever the thread's
    /// last caller was).
    pub fn with_privileged(mut self, p: Privileged) -> Self {
        self.privileged = p;
        self
    }
}

impl Initiators for KeytabInitiators {
    fn initiator(&self, own: Option<&str>, target: &str) -> Result<Box<dyn Initiator>, GssError> {
        let mut ctx = Err(NO_CONTEXT);
        let own = match own {
            Some(p) => sys::OwnName::Principal(p),
            None => match &self.own {
                Some(s) => sys::OwnName::Service(s),
                None => sys::OwnName::First,
            },
        };
        // a cache holds one principal's tickets: one cache for each name this server calls as
        let ccache = match own {
            sys::OwnName::Principal(p) | sys::OwnName::Service(p) => format!("{CCACHE}-{p}"),
            sys::OwnName::First => CCACHE.to_string(),
        };
        (self.privileged)(&mut || {
            ctx = sys::InitiatorCtx::from_keytab(&self.keytab, &ccache, own, target)
        });
        Ok(Box::new(Krb5Initiator {
            state: InitState::Establishing(ctx?),
            privileged: self.privileged,
        }))
    }
}
