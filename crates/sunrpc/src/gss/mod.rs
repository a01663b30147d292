//! RPCSEC_GSS version 1 (RFC 2203), the acceptor's side: context creation and destruction on
//! the NULL procedure, the header verifier of every call, the sequence window, and the
//! integrity and privacy bodies of calls and replies. The mechanism (Kerberos V5 through the
//! system's GSS-API) is behind [`mech::Mechanism`]; this module is protocol logic only.
//!
//! The dispatcher hands [`GssServer::accept`] each call whose credential is RPCSEC_GSS and
//! gets back a [`Verdict`]: run the call (with its arguments unwrapped, as whom, and a
//! [`Seal`] for the reply), answer it at once (context creation, destruction, errors), or drop
//! it (a replay).

pub mod client;
pub mod mech;
pub mod table;
pub mod window;
pub mod wire;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use xdr::{Decoder, Encoder, Reply};

use crate::msg::{self, AcceptStat, AuthStat, GssHeader};
use mech::{GssError, Mechanism, Peer, GSS_S_COMPLETE, GSS_S_CONTINUE_NEEDED};
use table::{Context, ContextTable, Handle};
use window::SEQ_WINDOW;
use wire::{GssProc, GssService, InitRes, IntegData, MAXSEQ, MAX_INIT_TOKEN};

/// How long a context whose establishment is unfinished is kept (a client that never
/// finishes INIT loses it after this).
pub const PENDING_LIFETIME: Duration = Duration::from_secs(60);
/// Contexts held at most, by default: one per user of each client machine, with room.
pub const DEFAULT_MAX_CONTEXTS: usize = 65536;

/// Who made a call authenticated under RPCSEC_GSS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GssCaller {
    /// The context's peer: principal and local identity.
    pub peer: Arc<Peer>,
    /// The protection the call came with.
    pub service: GssService,
}

impl GssCaller {
    /// The credential the programs see: AUTH_SYS with the principal's local ids, or
    /// AUTH_NONE (the export's anonymous identity) for a principal that maps to none.
    pub fn credential(&self) -> crate::msg::Credential {
        match &self.peer.ident {
            Some(i) => crate::msg::Credential::Sys(crate::msg::AuthSys {
                stamp: 0,
                machine: Bytes::new(),
                uid: i.uid,
                gid: i.gid,
                gids: i.gids.clone(),
            }),
            None => crate::msg::Credential::None,
        }
    }

    /// A key of the principal, nonzero, for the duplicate request cache.
    pub fn principal_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.peer.principal.hash(&mut h);
        h.finish() | 1
    }
}

/// How to seal the reply to an authenticated call: its context, sequence number and service.
#[derive(Debug, Clone)]
pub struct Seal {
    ctx: Arc<Context>,
    seq: u32,
    service: GssService,
}

/// Whether [`GssServer::accept`] takes the call's sequence number in the window now, or the
/// caller does with [`GssServer::commit`] once it knows the call runs to its end there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Record it now (the call runs).
    Record,
    /// Only check it: the call is tried on a thread that must not block, and runs again on a
    /// worker (authenticated again) if the try gives up.
    Peek,
}

/// What to do with a call whose credential is RPCSEC_GSS.
#[derive(Debug)]
pub enum Verdict {
    /// Run the call: these are its arguments (unwrapped), its caller, and its reply's seal.
    Call {
        /// The procedure's arguments, after integrity or privacy unwrapping.
        args: Decoder,
        /// Who the call is from.
        caller: Arc<GssCaller>,
        /// What [`GssServer::seal`] needs for the reply.
        seal: Seal,
    },
    /// Send this reply (context creation or destruction, or an error).
    Answer(Reply),
    /// Send nothing: a replay, or a call whose reply cannot be signed.
    Drop,
}

/// Why a call was refused, for the metrics (`rnfs_rpc_events_total{kind}`).
fn reject_kind(stat: AuthStat) -> &'static str {
    match stat {
        AuthStat::GssCredProblem => "gss_credproblem",
        AuthStat::GssCtxProblem => "gss_ctxproblem",
        AuthStat::BadVerf => "gss_badverf",
        _ => "gss_badcred",
    }
}

/// Counts of what the RPCSEC_GSS layer did, for metrics.
pub trait GssEvents: Send + Sync {
    /// One event of kind `kind` (`gss_init`, `gss_init_failed`, `gss_replay`, ...).
    fn count(&self, kind: &'static str);
}

/// The acceptor: a mechanism and the contexts established with it.
pub struct GssServer {
    mech: Arc<dyn Mechanism>,
    table: ContextTable,
    events: Option<Arc<dyn GssEvents>>,
}

impl std::fmt::Debug for GssServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GssServer")
            .field("contexts", &self.table.len())
            .finish()
    }
}

impl GssServer {
    /// An acceptor of `mech` holding at most `max_contexts` contexts.
    pub fn new(mech: Arc<dyn Mechanism>, max_contexts: usize) -> Self {
        Self {
            mech,
            table: ContextTable::new(max_contexts),
            events: None,
        }
    }

    /// Counts events into `events`.
    pub fn with_events(mut self, events: Arc<dyn GssEvents>) -> Self {
        self.events = Some(events);
        self
    }

    /// Contexts held now.
    pub fn contexts(&self) -> usize {
        self.table.len()
    }

    /// The established contexts.
    pub fn views(&self) -> Vec<table::ContextView> {
        self.table.views(Instant::now())
    }

    fn count(&self, kind: &'static str) {
        if let Some(e) = &self.events {
            e.count(kind);
        }
    }

    fn deny(&self, xid: u32, stat: AuthStat) -> Verdict {
        self.count(reject_kind(stat));
        let mut e = Encoder::with_capacity(24);
        msg::encode_auth_error(&mut e, xid, stat);
        Verdict::Answer(e.finish())
    }

    /// Authenticates a call of procedure `proc_` from `peer` whose header carried `h`; `args` are the
    /// call's body, `max_args` the largest body the program takes (an integrity or privacy
    /// body past it is refused before anything is allocated for it).
    pub fn accept(
        &self,
        peer: IpAddr,
        xid: u32,
        proc_: u32,
        h: &GssHeader,
        args: Decoder,
        max_args: usize,
    ) -> Verdict {
        match h.cred.proc_ {
            GssProc::Init | GssProc::ContinueInit => self.establish(peer, xid, proc_, h, args),
            GssProc::Data | GssProc::Destroy => {
                self.data(xid, proc_, h, args, max_args, Window::Record)
            }
        }
    }

    /// [`GssServer::accept`] of a data call on a thread that must not block: `None` for
    /// anything but RPCSEC_GSS_DATA (context creation reads the keytab), and the sequence
    /// number is only checked, to be recorded by [`GssServer::commit`].
    pub fn accept_tentative(
        &self,
        xid: u32,
        proc_: u32,
        h: &GssHeader,
        args: Decoder,
    ) -> Option<Verdict> {
        if h.cred.proc_ != GssProc::Data {
            return None;
        }
        let max = args.remaining();
        Some(self.data(xid, proc_, h, args, max, Window::Peek))
    }

    /// Records the sequence number of a call accepted with [`GssServer::accept_tentative`]
    /// that ran; false when another copy of it was recorded first (the reply is dropped, as a
    /// replay's).
    pub fn commit(&self, seal: &Seal) -> bool {
        seal.ctx.window().check(seal.seq) == window::SeqCheck::Fresh
    }

    /// RPCSEC_GSS_INIT and CONTINUE_INIT (RFC 2203 section 5.2).
    fn establish(
        &self,
        addr: IpAddr,
        xid: u32,
        proc_: u32,
        h: &GssHeader,
        mut args: Decoder,
    ) -> Verdict {
        // Context creation is a call of the NULL procedure with an AUTH_NONE verifier; INIT
        // names no context.
        let init = h.cred.proc_ == GssProc::Init;
        if proc_ != 0 || (init && !h.cred.handle.is_empty()) {
            return self.deny(xid, AuthStat::BadCred);
        }
        if h.verf_flavor != msg::flavor::NONE {
            return self.deny(xid, AuthStat::BadVerf);
        }
        let Ok(token) = args.opaque(MAX_INIT_TOKEN) else {
            self.count("gss_garbage");
            return Verdict::Answer(bare(xid, None, AcceptStat::GarbageArgs));
        };
        let now = Instant::now();
        let mut sec = match init {
            true => self.mech.new_context(),
            false => {
                // Only a context still being established continues; its unfinished state
                // is taken out of the table for the step.
                let Some(handle) = Handle::from_wire(&h.cred.handle) else {
                    return self.deny(xid, AuthStat::GssCredProblem);
                };
                match self.table.get(&handle, now) {
                    Some(c) if c.peer().is_none() => {
                        self.table.remove(&handle);
                        let sec = std::mem::replace(&mut *c.sec_mut(), self.mech.new_context());
                        sec
                    }
                    _ => return self.deny(xid, AuthStat::GssCredProblem),
                }
            }
        };
        let step = sec.step(&token);
        let res = match step {
            Err(e) => {
                self.count("gss_init_failed");
                tracing::debug!(xid, error = %e, "RPCSEC_GSS context creation failed");
                init_reply(xid, None, &failed(e))
            }
            Ok(s) => match s.done {
                None => {
                    let expires = now + PENDING_LIFETIME;
                    match self
                        .table
                        .insert(Context::new(sec, None, expires, addr), now)
                    {
                        Ok(hd) => init_reply(
                            xid,
                            None,
                            &InitRes {
                                handle: Bytes::copy_from_slice(&hd.0),
                                major: GSS_S_CONTINUE_NEEDED,
                                minor: 0,
                                seq_window: SEQ_WINDOW,
                                token: Bytes::from(s.token),
                            },
                        ),
                        Err(_) => {
                            self.count("gss_table_full");
                            init_reply(xid, None, &failed(GssError::FAILURE))
                        }
                    }
                }
                Some(peer) => self.established(xid, sec, peer, s.token, now, addr),
            },
        };
        Verdict::Answer(res)
    }

    /// The reply to the INIT that completes a context: its handle, and a verifier that is the
    /// MIC of the window (which proves to the client that this server holds the context).
    fn established(
        &self,
        xid: u32,
        sec: Box<dyn mech::SecContext>,
        peer: Peer,
        token: Vec<u8>,
        now: Instant,
        addr: IpAddr,
    ) -> Reply {
        let verf = match sec.get_mic(&wire::seq_bytes(SEQ_WINDOW)) {
            Ok(m) => m,
            Err(e) => return init_reply(xid, None, &failed(e)),
        };
        let expires = now + peer.lifetime;
        tracing::debug!(principal = %peer.principal, mapped = ?peer.ident.as_ref().map(|i| i.uid),
            "RPCSEC_GSS context established");
        match self
            .table
            .insert(Context::new(sec, Some(Arc::new(peer)), expires, addr), now)
        {
            Ok(hd) => {
                self.count("gss_init");
                init_reply(
                    xid,
                    Some(&verf),
                    &InitRes {
                        handle: Bytes::copy_from_slice(&hd.0),
                        major: GSS_S_COMPLETE,
                        minor: 0,
                        seq_window: SEQ_WINDOW,
                        token: Bytes::from(token),
                    },
                )
            }
            Err(_) => {
                self.count("gss_table_full");
                init_reply(xid, None, &failed(GssError::FAILURE))
            }
        }
    }

    /// RPCSEC_GSS_DATA and DESTROY (RFC 2203 section 5.3).
    fn data(
        &self,
        xid: u32,
        proc_: u32,
        h: &GssHeader,
        mut args: Decoder,
        max_args: usize,
        record: Window,
    ) -> Verdict {
        let now = Instant::now();
        if h.verf_flavor != wire::RPCSEC_GSS {
            return self.deny(xid, AuthStat::BadVerf);
        }
        let Some(ctx) = Handle::from_wire(&h.cred.handle).and_then(|hd| self.table.get(&hd, now))
        else {
            return self.deny(xid, AuthStat::GssCredProblem);
        };
        let Some(peer) = ctx.peer().cloned() else {
            return self.deny(xid, AuthStat::GssCredProblem);
        };
        let seq = h.cred.seq;
        if seq >= MAXSEQ {
            return self.deny(xid, AuthStat::GssCtxProblem);
        }
        if ctx.sec().verify_mic(&h.signed, &h.verf).is_err() {
            return self.deny(xid, AuthStat::GssCredProblem);
        }
        let fresh = match record {
            Window::Record => ctx.window().check(seq),
            Window::Peek => ctx.window().peek(seq),
        };
        if fresh == window::SeqCheck::Replay {
            self.count("gss_replay");
            return Verdict::Drop;
        }
        ctx.used(h.cred.service);
        let seal = Seal {
            ctx: ctx.clone(),
            seq,
            service: h.cred.service,
        };
        if h.cred.proc_ == GssProc::Destroy {
            // on the NULL procedure only; answered with the verifier and no result, which is
            // not wrapped whatever the service (as knfsd)
            if proc_ != 0 {
                return self.deny(xid, AuthStat::BadCred);
            }
            if let Some(hd) = Handle::from_wire(&h.cred.handle) {
                self.table.remove(&hd);
            }
            self.count("gss_destroy");
            return match self.seal(&seal, xid, Err((AcceptStat::Success, &[]))) {
                Some(r) => Verdict::Answer(r),
                None => self.deny(xid, AuthStat::GssCtxProblem),
            };
        }
        let garbage = |me: &Self, kind| {
            me.count(kind);
            match me.seal(&seal, xid, Err((AcceptStat::GarbageArgs, &[]))) {
                Some(r) => Verdict::Answer(r),
                None => Verdict::Drop,
            }
        };
        let body = match h.cred.service {
            GssService::None => args,
            GssService::Integrity => {
                let Ok(d) = IntegData::decode(&mut args, max_args.saturating_add(4)) else {
                    return garbage(self, "gss_garbage");
                };
                if ctx.sec().verify_mic(&d.body, &d.checksum).is_err() {
                    return garbage(self, "gss_bad_checksum");
                }
                match wire::split_seq(d.body) {
                    Some((s, rest)) if s == seq => Decoder::new(rest),
                    _ => return garbage(self, "gss_seq_mismatch"),
                }
            }
            GssService::Privacy => {
                // The wrap token is larger than what it carries by its header and padding;
                // 1 KiB covers every Kerberos enctype's.
                let Ok(tok) = args.opaque(max_args.saturating_add(1024)) else {
                    return garbage(self, "gss_garbage");
                };
                let Ok(plain) = ctx.sec().unwrap(&tok) else {
                    return garbage(self, "gss_bad_checksum");
                };
                match wire::split_seq(plain) {
                    Some((s, rest)) if s == seq => Decoder::new(rest),
                    _ => return garbage(self, "gss_seq_mismatch"),
                }
            }
        };
        Verdict::Call {
            args: body,
            caller: Arc::new(GssCaller {
                peer,
                service: h.cred.service,
            }),
            seal,
        }
    }

    /// The reply to an authenticated call: its verifier (the MIC of its sequence number),
    /// then `outcome`: the results, protected as the call's service says, or an accept_stat
    /// followed by words that are not protected. `None` when the context cannot sign or wrap
    /// (RFC 2203 section 5.3.3.4.2: no reply is sent).
    pub fn seal(
        &self,
        seal: &Seal,
        xid: u32,
        outcome: Result<Encoder, (AcceptStat, &[u32])>,
    ) -> Option<Reply> {
        let sec = seal.ctx.sec();
        let verf = sec.get_mic(&wire::seq_bytes(seal.seq)).ok()?;
        let mut e = Encoder::with_capacity(64 + verf.len());
        header(&mut e, xid, Some(&verf));
        let body = match outcome {
            Err((stat, info)) => {
                e.u32(stat as u32);
                for w in info {
                    e.u32(*w);
                }
                return Some(e.finish());
            }
            Ok(b) => b,
        };
        e.u32(AcceptStat::Success as u32);
        match seal.service {
            GssService::None => e.append_encoder(body),
            GssService::Integrity => {
                // seq and the results as they are (a READ payload stays its own segment),
                // signed where they lie
                let body = readable(body.finish());
                let seq = wire::seq_bytes(seal.seq);
                let parts = parts_of(&seq, &body);
                let mic = sec.get_mic_parts(&parts).ok()?;
                e.u32(parts.iter().map(|p| p.len()).sum::<usize>() as u32);
                e.opaque_fixed(&seq);
                e.append(body);
                e.opaque(&mic);
            }
            GssService::Privacy => {
                let body = readable(body.finish());
                let seq = wire::seq_bytes(seal.seq);
                let tok = sec.wrap_parts(&parts_of(&seq, &body)).ok()?;
                e.u32(tok.len() as u32);
                append_bytes(&mut e, tok);
            }
        }
        Some(e.finish())
    }
}

/// The contexts held, as a gauge (`rnfs_gss_contexts`).
impl crate::metrics::MetricsSource for GssServer {
    fn encode(&self, out: &mut crate::metrics::MetricsOut<'_>) -> std::fmt::Result {
        out.gauge(
            "rnfs_gss_contexts",
            "RPCSEC_GSS (Kerberos) contexts held, established or being established.",
            self.contexts() as u64,
        )
    }
}

/// `r` with file pages read into memory: calls under integrity or privacy are given none (the
/// dispatcher turns them off), but their bytes must be at hand to be signed should one come.
fn readable(r: Reply) -> Reply {
    if r.segments
        .iter()
        .all(|s| !matches!(s, xdr::Segment::Pages(_) | xdr::Segment::BodyPages(_)))
    {
        return r;
    }
    Reply {
        segments: vec![xdr::Segment::Inline(r.to_bytes())],
    }
}

/// The bytes `seq` then `body` are sent as, padding included, as slices.
fn parts_of<'a>(seq: &'a [u8; 4], body: &'a Reply) -> Vec<&'a [u8]> {
    const PAD: [u8; 3] = [0; 3];
    let mut parts: Vec<&[u8]> = Vec::with_capacity(1 + 2 * body.segments.len());
    parts.push(seq);
    for seg in &body.segments {
        if let Some(b) = seg.bytes() {
            parts.push(b);
        }
        if seg.padding() > 0 {
            parts.push(&PAD[..seg.padding()]);
        }
    }
    parts
}

/// Appends `b` to `e` as it is (not copied unless small), padded to a multiple of 4 bytes.
fn append_bytes(e: &mut Encoder, b: Bytes) {
    let pad = xdr::pad4(b.len()) - b.len();
    e.append(Reply {
        segments: vec![xdr::Segment::Inline(b)],
    });
    if pad > 0 {
        e.append(Reply {
            segments: vec![xdr::Segment::Inline(Bytes::from_static(&[0u8; 3][..pad]))],
        });
    }
}

/// An INIT result for a failure `e`.
fn failed(e: GssError) -> InitRes {
    InitRes {
        handle: Bytes::new(),
        major: e.major,
        minor: e.minor,
        seq_window: 0,
        token: Bytes::new(),
    }
}

/// The accepted header of a reply to `xid`: its verifier is RPCSEC_GSS with `verf`, or
/// AUTH_NONE.
fn header(e: &mut Encoder, xid: u32, verf: Option<&[u8]>) {
    e.u32(xid);
    e.u32(msg::REPLY);
    e.u32(0); // MSG_ACCEPTED
    match verf {
        Some(v) => {
            e.u32(wire::RPCSEC_GSS);
            e.opaque(v);
        }
        None => {
            e.u32(msg::flavor::NONE);
            e.u32(0);
        }
    }
}

/// A context-creation reply.
fn init_reply(xid: u32, verf: Option<&[u8]>, res: &InitRes) -> Reply {
    let mut e = Encoder::with_capacity(128 + res.token.len());
    header(&mut e, xid, verf);
    e.u32(AcceptStat::Success as u32);
    res.encode(&mut e);
    e.finish()
}

/// An accepted reply carrying only `stat`, with an AUTH_NONE verifier or `seal`'s.
fn bare(xid: u32, verf: Option<&[u8]>, stat: AcceptStat) -> Reply {
    let mut e = Encoder::with_capacity(64);
    header(&mut e, xid, verf);
    e.u32(stat as u32);
    e.finish()
}
