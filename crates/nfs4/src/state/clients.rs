//! Client records (SETCLIENTID / EXCHANGE_ID), by client id.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sunrpc::callback::Waiter;
use sunrpc::outbound::Outbound;

use super::{ClientId, IdMap};

/// A client owner string and verifier (SETCLIENTID / EXCHANGE_ID).
#[derive(Debug, Clone)]
pub struct ClientRec {
    /// Client id handed out.
    pub id: u64,
    /// The client's co_ownerid.
    pub owner: Bytes,
    /// The client's boot verifier.
    pub verifier: [u8; 8],
    /// Who created the record (principal checks): a uid, or a Kerberos principal's key.
    pub principal: u64,
    /// Confirmed (SETCLIENTID_CONFIRM or CREATE_SESSION done).
    pub confirmed: bool,
    /// NFSv4.0 SETCLIENTID_CONFIRM verifier.
    pub confirm: [u8; 8],
    /// Minor version the client speaks.
    pub minor: u32,
    /// Last lease renewal.
    pub renewed: Instant,
    /// NFSv4.1: sequence id expected by the next CREATE_SESSION.
    pub cs_seq: u32,
    /// NFSv4.1: the last CREATE_SESSION reply, for replays.
    pub cs_reply: Option<Bytes>,
    /// NFSv4.1: RECLAIM_COMPLETE done.
    pub reclaim_complete: bool,
    /// Address the client called from when it introduced itself (for the admin listing).
    pub addr: std::net::IpAddr,
    /// The flavor and principal or uid it introduced itself with (for the admin listing).
    pub auth: std::sync::Arc<str>,
    /// EXCHANGE_ID asked for SP4_MACH_CRED: the operations of [`MACH_CRED_ENFORCED`] must come
    /// from the principal that created the record.
    pub mach_cred: bool,
    /// NFSv4.0: the callback path in use (from the SETCLIENTID that was confirmed).
    pub callback: Option<Callback40>,
    /// NFSv4.0: the callback path of the last SETCLIENTID, in use once it is confirmed.
    pub callback_next: Option<Callback40>,
}

/// An NFSv4.0 client's callback path: where its SETCLIENTID said to call it, and the
/// connection made there at SETCLIENTID_CONFIRM with its CB_NULL probe.
#[derive(Debug, Clone)]
pub struct Callback40 {
    /// cb_program: the program number the client's callback service answers to.
    pub program: u32,
    /// callback_ident: sent back in every CB_COMPOUND, so the client knows whose it is.
    pub ident: u32,
    /// cb_location's address; None for one this server does not call (a netid other than
    /// tcp/tcp6, a caller this server cannot call back under its flavor): the path is down.
    pub addr: Option<SocketAddr>,
    /// Calls go under RPCSEC_GSS (the client introduced itself under Kerberos): with whom,
    /// under what protection.
    pub sec: Option<CallbackSec>,
    /// The connection and the registration of its CB_NULL probe.
    pub conn: Option<(Arc<Outbound>, Arc<Waiter>)>,
    /// The probe's answer once it came: whether the client's service accepted it.
    pub probed: Option<bool>,
    /// Callbacks sent and when (the last few): one left unanswered too long marks the path
    /// down.
    pub sent: Vec<(Arc<Waiter>, Instant)>,
    /// The path failed (a callback went unanswered); it stays down until the client names a
    /// new one with SETCLIENTID, as knfsd's does.
    pub failed: bool,
}

/// How an NFSv4.0 client that introduced itself under RPCSEC_GSS is called back, as knfsd
/// calls it: under a context this server initiates as the service principal the client's
/// SETCLIENTID came to, with the principal it came from, under that call's protection.
#[derive(Debug, Clone)]
pub struct CallbackSec {
    /// The client's principal (`nfs/client.example.com@REALM`).
    pub target: Arc<str>,
    /// The principal of this server the client authenticated to: the one it is called back
    /// as, which the Linux client checks the callback's against.
    pub own: Option<Arc<str>>,
    /// The protection of the SETCLIENTID.
    pub service: sunrpc::gss::wire::GssService,
}

/// Callbacks kept for the unanswered check: older ones have been answered or judged.
const CB40_SENT_KEPT: usize = 16;

impl Callback40 {
    /// Whether calls can go to the client now: its service answered the probe, the
    /// connection is still there and no callback was left unanswered.
    pub fn is_up(&mut self) -> bool {
        let Some((conn, probe)) = &self.conn else {
            return false;
        };
        if conn.is_closed() || self.failed {
            return false;
        }
        if self.probed.is_none() && probe.answered() {
            let reply = probe.wait(Duration::ZERO);
            self.probed = Some(reply.is_some_and(|r| sunrpc::msg::decode_success(r).is_some()));
        }
        self.probed == Some(true)
    }

    /// Records a callback sent, for [`Callback40::is_down`].
    pub fn sent(&mut self, waiter: Arc<Waiter>) {
        self.sent.retain(|(w, _)| !w.answered());
        if self.sent.len() >= CB40_SENT_KEPT {
            self.sent.remove(0);
        }
        self.sent.push((waiter, Instant::now()));
    }

    /// Whether the path was set up and has failed: no connection could be made, the connection
    /// broke, the probe was refused, or a callback went unanswered for `timeout` (RENEW then
    /// says NFS4ERR_CB_PATH_DOWN to a client holding delegations).
    pub fn is_down(&mut self, timeout: Duration) -> bool {
        self.judge_unanswered(timeout);
        self.conn.is_some()
            && !self.is_up()
            && (self.probed.is_some() || self.is_closed() || self.failed)
    }

    /// Marks the path failed when a callback has gone unanswered for `timeout`: no call
    /// goes to it, and no delegation, from then on.
    pub fn judge_unanswered(&mut self, timeout: Duration) {
        if self
            .sent
            .iter()
            .any(|(w, at)| !w.answered() && at.elapsed() > timeout)
        {
            self.failed = true;
        }
    }

    fn is_closed(&self) -> bool {
        self.conn.as_ref().is_some_and(|(c, _)| c.is_closed())
    }
}

/// What SP4_MACH_CRED protects (RFC 8881 section 18.35.3), as knfsd: BIND_CONN_TO_SESSION,
/// EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION and DESTROY_CLIENTID, as bitmap4 words.
pub const MACH_CRED_ENFORCED: [u32; 2] = [
    0,
    1 << (41 - 32) | 1 << (42 - 32) | 1 << (43 - 32) | 1 << (44 - 32) | 1 << (57 - 32),
];

/// What SP4_MACH_CRED allows the machine credential to do for any user, of what the client
/// asks for: CLOSE, OPEN_DOWNGRADE, LOCKU, DELEGRETURN, TEST_STATEID and FREE_STATEID.
pub const MACH_CRED_ALLOWED: [u32; 2] = [
    1 << 4 | 1 << 21 | 1 << 14 | 1 << 8,
    1 << (55 - 32) | 1 << (45 - 32),
];

/// The client records.
#[derive(Debug, Default)]
pub struct Clients {
    map: IdMap<ClientId, ClientRec>,
}

impl Clients {
    /// The record of client `id`.
    pub fn get(&self, id: ClientId) -> Option<&ClientRec> {
        self.map.get(&id)
    }

    /// The record of client `id`, to update.
    pub fn get_mut(&mut self, id: ClientId) -> Option<&mut ClientRec> {
        self.map.get_mut(&id)
    }

    /// Whether client `id` has a record.
    pub fn contains(&self, id: ClientId) -> bool {
        self.map.contains_key(&id)
    }

    /// Adds a record.
    pub fn insert(&mut self, rec: ClientRec) {
        self.map.insert(rec.id, rec);
    }

    /// Removes client `id`'s record.
    pub fn remove(&mut self, id: ClientId) -> Option<ClientRec> {
        self.map.remove(&id)
    }

    /// The confirmed record of the client that calls itself `owner`, if any.
    pub fn confirmed_of(&self, owner: &[u8]) -> Option<&ClientRec> {
        self.map.values().find(|c| c.owner == owner && c.confirmed)
    }

    /// Drops the unconfirmed records of `owner` (a new SETCLIENTID or EXCHANGE_ID replaces them).
    pub fn drop_unconfirmed_of(&mut self, owner: &[u8]) {
        self.map.retain(|_, c| c.owner != owner || c.confirmed);
    }

    /// The other records of the client owner of record `id` (an older instance of the client).
    pub fn others_of_owner(&self, owner: &[u8], id: ClientId) -> Vec<ClientId> {
        self.map
            .values()
            .filter(|o| o.owner == owner && o.id != id)
            .map(|o| o.id)
            .collect()
    }

    /// Whether any record is of `owner`.
    pub fn any_of_owner(&self, owner: &[u8]) -> bool {
        self.map.values().any(|c| c.owner == owner)
    }

    /// The clients whose lease ran out (they keep their state until someone needs it).
    pub fn expired(&self, lease: Duration) -> Vec<ClientId> {
        self.map
            .values()
            .filter(|c| c.renewed.elapsed() > lease)
            .map(|c| c.id)
            .collect()
    }

    /// Whether client `id`'s lease ran out.
    pub fn lease_ran_out(&self, id: ClientId, lease: Duration) -> bool {
        self.map
            .get(&id)
            .is_some_and(|r| r.renewed.elapsed() > lease)
    }

    /// Every record.
    pub fn iter(&self) -> impl Iterator<Item = &ClientRec> {
        self.map.values()
    }

    /// Every record's owner.
    pub fn owners(&self) -> impl Iterator<Item = &Bytes> {
        self.map.values().map(|c| &c.owner)
    }

    /// Number of records (metrics).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there is no record.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
