//! The initiator's side of RPCSEC_GSS, for rnfs's own clients (tests, the benchmark): builds
//! calls with a signed header and protected arguments, and checks and unprotects replies.

use bytes::Bytes;
use xdr::{Decoder, Encoder};

use super::mech::{GssError, GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED};
use super::wire::{self, GssCred, GssProc, GssService, InitRes, IntegData, RPCSEC_GSS};
use crate::msg::{self, AcceptStat, CALL, MAX_AUTH_BYTES, REPLY, RPC_VERS};

/// The initiator's side of a security context.
pub trait Initiator: Send {
    /// One step of establishment: the server's last token in (none at first), the token for
    /// the server out, and whether the context is complete.
    fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError>;
    /// The MIC token of `msg`.
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError>;
    /// Checks a MIC token.
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError>;
    /// Signs and encrypts.
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError>;
    /// Checks and decrypts.
    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, GssError>;
}

/// Where a server's own initiator contexts come from: NFSv4.0 callbacks to a client that
/// introduced itself under RPCSEC_GSS go under a context this server initiates, as its own
/// service principal, with the client's principal.
pub trait Initiators: Send + Sync {
    /// An unestablished context with `target` (a Kerberos principal, `nfs/host@REALM`) as
    /// `own` (the principal the client authenticated to; None: the server's default). May
    /// read a keytab and reach the KDC: not for a thread that must not block.
    fn initiator(&self, own: Option<&str>, target: &str) -> Result<Box<dyn Initiator>, GssError>;
}

/// A boxed initiator is one (tests choose the kind at run time).
impl<T: Initiator + ?Sized> Initiator for Box<T> {
    fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError> {
        (**self).step(token)
    }
    fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        (**self).get_mic(msg)
    }
    fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
        (**self).verify_mic(msg, mic)
    }
    fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        (**self).wrap(msg)
    }
    fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, GssError> {
        (**self).unwrap(token)
    }
}

/// Why a GSS call failed on the client's side.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The mechanism failed.
    #[error("{0}")]
    Gss(#[from] GssError),
    /// The server refused context creation with these statuses.
    #[error("context creation refused: major {0:#x} minor {1}")]
    Refused(u32, u32),
    /// The server denied the call (MSG_DENIED) with this auth_stat.
    #[error("call denied: auth_stat {0}")]
    Denied(u32),
    /// The call was accepted with a status other than SUCCESS.
    #[error("call not executed: accept_stat {0}")]
    NotExecuted(u32),
    /// The reply's verifier or protection did not check out, or it could not be decoded.
    #[error("bad reply: {0}")]
    BadReply(&'static str),
}

/// An established context as a client uses it.
pub struct GssClient<I> {
    ctx: I,
    handle: Bytes,
    seq: u32,
    service: GssService,
}

/// A call message and the sequence number its reply is checked against.
#[derive(Debug, Clone)]
pub struct GssCall {
    /// The whole call message.
    pub msg: Bytes,
    /// Its sequence number.
    pub seq: u32,
}

/// A CALL header up to and including the credential `cred` (flavor `flavor`).
fn call_header(e: &mut Encoder, xid: u32, prog: u32, vers: u32, proc_: u32, cred: &GssCred) {
    e.u32(xid);
    e.u32(CALL);
    e.u32(RPC_VERS);
    e.u32(prog);
    e.u32(vers);
    e.u32(proc_);
    let mut body = Encoder::new();
    cred.encode(&mut body);
    e.u32(RPCSEC_GSS);
    e.opaque(&body.finish().to_bytes());
}

/// The results of an accepted reply: its verifier (flavor, body) and a decoder after a
/// SUCCESS accept_stat.
fn accepted(reply: Bytes) -> Result<(u32, Bytes, Decoder), ClientError> {
    let bad = |_| ClientError::BadReply("truncated header");
    let mut d = Decoder::new(reply);
    d.u32().map_err(bad)?;
    if d.u32().map_err(bad)? != REPLY {
        return Err(ClientError::BadReply("not a reply"));
    }
    if d.u32().map_err(bad)? != 0 {
        d.u32().map_err(bad)?; // reject_stat (AUTH_ERROR for what we test)
        return Err(ClientError::Denied(d.u32().map_err(bad)?));
    }
    let flavor = d.u32().map_err(bad)?;
    let verf = d.opaque(MAX_AUTH_BYTES).map_err(bad)?;
    let stat = d.u32().map_err(bad)?;
    if stat != AcceptStat::Success as u32 {
        return Err(ClientError::NotExecuted(stat));
    }
    Ok((flavor, verf, d))
}

impl<I: Initiator> GssClient<I> {
    /// Establishes a context for `service` with the server of `prog`/`vers`; `rpc` sends a
    /// call message and returns the reply message.
    pub fn establish(
        mut ctx: I,
        service: GssService,
        prog: u32,
        vers: u32,
        rpc: &mut dyn FnMut(Bytes) -> std::io::Result<Bytes>,
    ) -> Result<Self, ClientError> {
        let mut handle = Bytes::new();
        let mut server_token: Option<Bytes> = None;
        let mut xid = 0x4753_0000u32;
        loop {
            let (token, done) = ctx.step(server_token.as_deref())?;
            if done && token.is_empty() {
                return Err(ClientError::BadReply(
                    "context complete without a server reply",
                ));
            }
            let cred = GssCred {
                proc_: if handle.is_empty() {
                    GssProc::Init
                } else {
                    GssProc::ContinueInit
                },
                seq: 0,
                service,
                handle: handle.clone(),
            };
            let mut e = Encoder::new();
            call_header(&mut e, xid, prog, vers, 0, &cred);
            e.u32(msg::flavor::NONE);
            e.u32(0);
            e.opaque(&token);
            xid += 1;
            let reply =
                rpc(e.finish().to_bytes()).map_err(|_| ClientError::BadReply("no reply"))?;
            let (flavor, verf, mut d) = accepted(reply)?;
            let res = InitRes::decode(&mut d).map_err(|_| ClientError::BadReply("init result"))?;
            match res.major {
                GSS_S_COMPLETE => {
                    if !res.token.is_empty() {
                        ctx.step(Some(&res.token))?;
                    }
                    if flavor != RPCSEC_GSS {
                        return Err(ClientError::BadReply("no verifier on the completing reply"));
                    }
                    ctx.verify_mic(&wire::seq_bytes(res.seq_window), &verf)
                        .map_err(|_| ClientError::BadReply("window verifier"))?;
                    return Ok(Self {
                        ctx,
                        handle: res.handle,
                        seq: 1,
                        service,
                    });
                }
                GSS_S_CONTINUE_NEEDED => {
                    handle = res.handle;
                    server_token = Some(res.token);
                }
                m => return Err(ClientError::Refused(m, res.minor)),
            }
        }
    }

    /// The context's handle.
    pub fn handle(&self) -> &Bytes {
        &self.handle
    }

    /// The service calls are made with.
    pub fn service(&self) -> GssService {
        self.service
    }

    /// Makes later calls with `service` (one context serves every service).
    pub fn set_service(&mut self, service: GssService) {
        self.service = service;
    }

    /// The next call of `proc_` with XDR arguments `args`, under the next sequence number.
    pub fn call(&mut self, xid: u32, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> GssCall {
        let seq = self.seq;
        self.seq += 1;
        self.call_as(xid, prog, vers, proc_, GssProc::Data, seq, args)
    }

    /// A call with the sequence number and GSS procedure given (replays, DESTROY).
    #[allow(clippy::too_many_arguments)]
    pub fn call_as(
        &mut self,
        xid: u32,
        prog: u32,
        vers: u32,
        proc_: u32,
        gss_proc: GssProc,
        seq: u32,
        args: &[u8],
    ) -> GssCall {
        let cred = GssCred {
            proc_: gss_proc,
            seq,
            service: self.service,
            handle: self.handle.clone(),
        };
        let mut e = Encoder::with_capacity(128 + args.len());
        call_header(&mut e, xid, prog, vers, proc_, &cred);
        let head = e.finish().to_bytes();
        // A MIC the context cannot make leaves an empty verifier, which the server refuses:
        // what a test of a broken context wants to see.
        let verf = self.ctx.get_mic(&head).unwrap_or_default();
        let mut e = Encoder::with_capacity(128 + args.len());
        e.opaque_fixed(&head);
        e.u32(RPCSEC_GSS);
        e.opaque(&verf);
        let mut body = Vec::with_capacity(4 + args.len());
        body.extend_from_slice(&wire::seq_bytes(seq));
        body.extend_from_slice(args);
        match self.service {
            GssService::None => e.opaque_fixed(args),
            GssService::Integrity => {
                let mic = self.ctx.get_mic(&body).unwrap_or_default();
                e.opaque(&body);
                e.opaque(&mic);
            }
            GssService::Privacy => {
                let tok = self.ctx.wrap(&body).unwrap_or_default();
                e.opaque(&tok);
            }
        }
        GssCall {
            msg: e.finish().to_bytes(),
            seq,
        }
    }

    /// Checks the reply to call `call` and returns its results, unprotected.
    pub fn reply(&mut self, call: &GssCall, reply: Bytes) -> Result<Bytes, ClientError> {
        let (flavor, verf, mut d) = accepted(reply)?;
        if flavor != RPCSEC_GSS {
            return Err(ClientError::BadReply("reply verifier is not RPCSEC_GSS"));
        }
        self.ctx
            .verify_mic(&wire::seq_bytes(call.seq), &verf)
            .map_err(|_| ClientError::BadReply("reply verifier"))?;
        let body = match self.service {
            GssService::None => return Ok(d.into_rest()),
            GssService::Integrity => {
                let x = IntegData::decode(&mut d, usize::MAX >> 1)
                    .map_err(|_| ClientError::BadReply("integrity body"))?;
                self.ctx
                    .verify_mic(&x.body, &x.checksum)
                    .map_err(|_| ClientError::BadReply("reply checksum"))?;
                x.body
            }
            GssService::Privacy => {
                let tok = d
                    .opaque(usize::MAX >> 1)
                    .map_err(|_| ClientError::BadReply("privacy body"))?;
                Bytes::from(
                    self.ctx
                        .unwrap(&tok)
                        .map_err(|_| ClientError::BadReply("reply unwrap"))?,
                )
            }
        };
        match wire::split_seq(body) {
            Some((s, rest)) if s == call.seq => Ok(rest),
            _ => Err(ClientError::BadReply("reply sequence number")),
        }
    }

    /// Signs `msg` with the context (for tests that forge a header).
    pub fn mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
        self.ctx.get_mic(msg)
    }
}
