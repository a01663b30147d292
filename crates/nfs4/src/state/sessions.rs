//! NFSv4.1 sessions and their slot tables, by session id.

use std::time::Instant;

use xdr::Reply;

use super::{ClientId, IdMap};

/// A session id.
pub type SessionId = [u8; 16];

/// One slot of a session's fore channel.
#[derive(Debug, Clone, Default)]
pub struct Slot {
    /// Sequence id of the last request executed in the slot.
    pub seqid: u32,
    /// Reply of that request when the client asked for it to be cached.
    pub reply: Option<Reply>,
    /// A request is executing in the slot.
    pub busy: bool,
    /// Who sent that request ([`crate::ops_client`]'s principal key): a retry must come from
    /// the same principal (RFC 8881 section 2.10.6.1.3.1). None until the slot served one.
    pub principal: Option<u64>,
}

/// An NFSv4.1 session.
#[derive(Debug)]
pub struct Session {
    /// Owning client.
    pub client: u64,
    /// Fore-channel slots.
    pub slots: Vec<Slot>,
    /// Largest request accepted.
    pub max_request: u32,
    /// Largest reply allowed.
    pub max_response: u32,
    /// Largest reply that may be cached.
    pub max_response_cached: u32,
    /// Largest number of operations per COMPOUND.
    pub max_ops: u32,
    /// The client asked for a back channel over the session's connection.
    pub back_channel: bool,
    /// The connection carrying the back channel.
    pub back: Option<std::sync::Arc<dyn sunrpc::BackChannel>>,
    /// Program number for callbacks.
    pub cb_program: u32,
    /// Credential for callbacks.
    pub cb_cred: sunrpc::Credential,
    /// Sequence id of the back channel's slot 0 (the last call sent on it).
    pub cb_seq: u32,
    /// The callback on slot 0 not yet answered, and when it was sent: the slot takes one
    /// call at a time (RFC 8881 section 2.10.6.1).
    pub cb_inflight: Option<(std::sync::Arc<sunrpc::callback::Waiter>, Instant)>,
    /// Minor version of the session (for CB_COMPOUND).
    pub minor: u32,
}

/// The sessions.
#[derive(Debug, Default)]
pub struct Sessions {
    map: IdMap<SessionId, Session>,
}

impl Sessions {
    /// Session `id`, to use or update.
    pub fn get_mut(&mut self, id: &SessionId) -> Option<&mut Session> {
        self.map.get_mut(id)
    }

    /// The client of session `id`.
    pub fn client_of(&self, id: &SessionId) -> Option<ClientId> {
        self.map.get(id).map(|s| s.client)
    }

    /// Whether session `id` exists.
    pub fn contains(&self, id: &SessionId) -> bool {
        self.map.contains_key(id)
    }

    /// Adds session `id`.
    pub fn insert(&mut self, id: SessionId, s: Session) {
        self.map.insert(id, s);
    }

    /// Ends session `id`.
    pub fn remove(&mut self, id: &SessionId) -> Option<Session> {
        self.map.remove(id)
    }

    /// Ends every session of `client`.
    pub fn remove_of(&mut self, client: ClientId) {
        self.map.retain(|_, s| s.client != client);
    }

    /// How many sessions `client` has.
    pub fn count_of(&self, client: ClientId) -> usize {
        self.map.values().filter(|s| s.client == client).count()
    }

    /// Whether `client` has a session.
    pub fn any_of(&self, client: ClientId) -> bool {
        self.map.values().any(|s| s.client == client)
    }

    /// A session of `client` with a back channel, for callbacks.
    pub fn with_back_channel(&self, client: ClientId) -> Option<SessionId> {
        self.map
            .iter()
            .find(|(_, s)| s.client == client && s.back.is_some())
            .map(|(k, _)| *k)
    }

    /// Number of sessions (metrics).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there is no session.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}
