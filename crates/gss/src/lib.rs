//! The Kerberos V5 mechanism behind RPCSEC_GSS, through the system's GSS-API (MIT Kerberos):
//! acceptor contexts with the keys of a keytab ([`Krb5Acceptor`]), the mapping of a client's
//! principal to a local user ([`IdentityCache`]), and the initiator side for rnfs's own
//! clients ([`Krb5Initiator`]).
//!
//! This crate has no `unsafe`: libgssapi is the FFI binding.

#![forbid(unsafe_code)]

pub mod idmap;
pub mod kdc;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext, ServerCtx};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{OidSet, GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL};
use sunrpc::gss::client::Initiator;
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
    cred: Cred,
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
        let fail = |e: libgssapi::error::Error| SetupError::NoCredentials {
            keytab: keytab.to_string(),
            detail: e.to_string(),
        };
        let name = match principal {
            Some(p) => Some(Name::new(p.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE)).map_err(fail)?),
            None => None,
        };
        let mechs = krb5_mechs().map_err(|e| SetupError::NoCredentials {
            keytab: keytab.to_string(),
            detail: e.to_string(),
        })?;
        let cred =
            Cred::acquire(name.as_ref(), None, CredUsage::Accept, Some(&mechs)).map_err(fail)?;
        // A keytab with no key is found out at the first INIT otherwise.
        cred.info().map_err(fail)?;
        Ok(Self {
            cred,
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
            ctx: ServerCtx::new(Some(self.cred.clone())),
            ids: self.ids.clone(),
            privileged: self.privileged,
        })
    }
}

/// One acceptor context.
struct AcceptorContext {
    ctx: ServerCtx,
    ids: Arc<IdentityCache>,
    privileged: Privileged,
}

impl AcceptorContext {
    fn peer(&self) -> Result<Peer, GssError> {
        let name = self.ctx.source_name().map_err(err)?;
        let principal: Arc<str> =
            String::from_utf8_lossy(&name.display_name().map_err(err)?).into();
        let local = name
            .local_name(Some(GSS_MECH_KRB5))
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        let ident = self.ids.lookup(&principal, local.as_deref());
        let lifetime = self.ctx.lifetime().map_err(err)?;
        Ok(Peer {
            principal,
            ident,
            lifetime,
        })
    }
}

impl SecContext for AcceptorContext {
    fn step(&mut self, token: &[u8]) -> Result<Step, GssError> {
        let mut out = Ok(None);
        let ctx = &mut self.ctx;
        (self.privileged)(&mut || out = ctx.step(token, None));
        let out = out.map_err(err)?;
        let token = out.map(|b| b.to_vec()).unwrap_or_default();
        let done = match self.ctx.is_complete() {
            true => Some(self.peer()?),
            false => None,
        };
        Ok(Step { token, done })
    }

    fn get_mic(&mut self, msg: &[u8]) -> Result<Bytes, GssError> {
        Ok(owned(self.ctx.get_mic(msg).map_err(err)?))
    }

    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.ctx.verify_mic(msg, mic).map_err(err)
    }

    fn wrap(&mut self, msg: &[u8]) -> Result<Bytes, GssError> {
        Ok(owned(self.ctx.wrap(true, msg).map_err(err)?))
    }

    fn unwrap(&mut self, token: &[u8]) -> Result<Bytes, GssError> {
        Ok(owned(self.ctx.unwrap(token).map_err(err)?))
    }
}

/// A buffer the GSS-API allocated, as `Bytes` without a copy (freed with the last reference).
fn owned(b: libgssapi::util::Buf) -> Bytes {
    struct Owned(libgssapi::util::Buf);
    impl AsRef<[u8]> for Owned {
        fn as_ref(&self) -> &[u8] {
            &self.0
        }
    }
    Bytes::from_owner(Owned(b))
}

/// The initiator's side, for rnfs's own clients: a context with `service` (`nfs@host`) as
/// the principal `user` (from the credential cache, or the client keytab that
/// `KRB5_CLIENT_KTNAME` names), or the default principal.
pub struct Krb5Initiator {
    ctx: ClientCtx,
}

impl Krb5Initiator {
    /// A context to establish with [`sunrpc::gss::client::GssClient::establish`].
    pub fn new(user: Option<&str>, service: &str) -> Result<Self, GssError> {
        let mechs = krb5_mechs()?;
        let cred = match user {
            Some(u) => {
                let n = Name::new(u.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL)).map_err(err)?;
                Some(
                    Cred::acquire(Some(&n), None, CredUsage::Initiate, Some(&mechs))
                        .map_err(err)?,
                )
            }
            None => None,
        };
        let target = Name::new(service.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE)).map_err(err)?;
        let flags =
            CtxFlags::GSS_C_MUTUAL_FLAG | CtxFlags::GSS_C_INTEG_FLAG | CtxFlags::GSS_C_CONF_FLAG;
        Ok(Self {
            ctx: ClientCtx::new(cred, target, flags, Some(GSS_MECH_KRB5)),
        })
    }

    /// The context's remaining lifetime.
    pub fn lifetime(&self) -> Option<Duration> {
        self.ctx.lifetime().ok()
    }
}

impl Initiator for Krb5Initiator {
    fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError> {
        let out = self.ctx.step(token, None).map_err(err)?;
        Ok((
            out.map(|b| b.to_vec()).unwrap_or_default(),
            self.ctx.is_complete(),
        ))
    }

    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.ctx.get_mic(msg).map_err(err)?.to_vec())
    }

    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        self.ctx.verify_mic(msg, mic).map_err(err)
    }

    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.ctx.wrap(true, msg).map_err(err)?.to_vec())
    }

    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, GssError> {
        Ok(self.ctx.unwrap(token).map_err(err)?.to_vec())
    }
}
