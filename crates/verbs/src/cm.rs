//! The RDMA connection manager: a listening id on an event channel whose descriptor is
//! registered with tokio, connection requests with their private data (RFC 8797), accept and
//! reject, and the events of accepted connections.

use std::io;
use std::net::SocketAddr;
use std::ptr::NonNull;
use std::sync::Arc;

use rdma_mummy_sys as sys;
use tokio::io::unix::AsyncFd;

use crate::cq::{set_nonblocking, watch, BorrowedFd};

/// The event channel all ids of a listener (the listening id and accepted connections) share.
pub(crate) struct EventChannel {
    afd: Option<AsyncFd<BorrowedFd>>,
    ch: NonNull<sys::rdma_event_channel>,
}

// SAFETY: librdmacm event channels may be used from any thread; we read events from one task.
unsafe impl Send for EventChannel {}
// SAFETY: as above.
unsafe impl Sync for EventChannel {}

impl EventChannel {
    /// A new non-blocking channel watched by tokio; must run inside a tokio runtime.
    pub(crate) fn new() -> io::Result<Arc<EventChannel>> {
        // SAFETY: no preconditions; the result is checked.
        let ch = unsafe { sys::rdma_create_event_channel() };
        let ch = NonNull::new(ch).ok_or_else(io::Error::last_os_error)?;
        let mut channel = EventChannel { afd: None, ch };
        // SAFETY: `ch` was just created.
        let fd = unsafe { (*ch.as_ptr()).fd };
        set_nonblocking(fd)?;
        channel.afd = Some(watch(fd)?);
        Ok(Arc::new(channel))
    }

    /// A new id (reliable connections, the TCP port space) on this channel.
    pub(crate) fn create_id(self: &Arc<Self>) -> io::Result<CmId> {
        let mut id: *mut sys::rdma_cm_id = std::ptr::null_mut();
        // SAFETY: the channel is alive; `id` is a valid out-pointer.
        let rc = unsafe {
            sys::rdma_create_id(
                self.ch.as_ptr(),
                &mut id,
                std::ptr::null_mut(),
                sys::rdma_port_space::RDMA_PS_TCP,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(CmId {
            id: NonNull::new(id).ok_or_else(|| io::Error::other("rdma_create_id"))?,
            _channel: self.clone(),
        })
    }

    /// Waits for the next event and hands it to `f` before acknowledging it.
    pub(crate) async fn next<T>(&self, f: impl FnOnce(&sys::rdma_cm_event) -> T) -> io::Result<T> {
        let afd = self.afd.as_ref().expect("cm reactor registration");
        loop {
            let mut guard = afd.readable().await?;
            let mut ev: *mut sys::rdma_cm_event = std::ptr::null_mut();
            // SAFETY: the channel is alive and non-blocking; `ev` is a valid out-pointer.
            let rc = unsafe { sys::rdma_get_cm_event(self.ch.as_ptr(), &mut ev) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    guard.clear_ready();
                    continue;
                }
                return Err(e);
            }
            // SAFETY: `ev` is a valid event until acknowledged below; `f` gets a reference
            // that cannot outlive this call.
            let out = f(unsafe { &*ev });
            // SAFETY: `ev` came from rdma_get_cm_event and is acknowledged exactly once.
            unsafe { sys::rdma_ack_cm_event(ev) };
            return Ok(out);
        }
    }
}

impl Drop for EventChannel {
    fn drop(&mut self) {
        drop(self.afd.take());
        // SAFETY: every id on the channel holds an `Arc` of it, so none is left.
        unsafe { sys::rdma_destroy_event_channel(self.ch.as_ptr()) };
    }
}

/// The private data a connection request or an establishment carries (empty for any other
/// event, or when there is none).
pub(crate) fn conn_private_data(e: &sys::rdma_cm_event) -> Vec<u8> {
    use sys::rdma_cm_event_type as t;
    if e.event != t::RDMA_CM_EVENT_CONNECT_REQUEST && e.event != t::RDMA_CM_EVENT_ESTABLISHED {
        return Vec::new();
    }
    // SAFETY: for these two events `param.conn` is the valid union member and its private
    // data (when present) is `private_data_len` readable bytes.
    let conn = unsafe { &e.param.conn };
    if conn.private_data.is_null() {
        return Vec::new();
    }
    // SAFETY: as above.
    unsafe {
        std::slice::from_raw_parts(
            conn.private_data.cast::<u8>(),
            usize::from(conn.private_data_len),
        )
    }
    .to_vec()
}

/// An owned `rdma_cm_id`, destroyed on drop (with its QP, if one is left).
pub(crate) struct CmId {
    id: NonNull<sys::rdma_cm_id>,
    _channel: Arc<EventChannel>,
}

// SAFETY: librdmacm calls on an id are thread-safe; the id is owned by exactly one `CmId`.
unsafe impl Send for CmId {}
// SAFETY: as above.
unsafe impl Sync for CmId {}

impl CmId {
    pub(crate) fn as_ptr(&self) -> *mut sys::rdma_cm_id {
        self.id.as_ptr()
    }

    pub(crate) fn key(&self) -> usize {
        self.id.as_ptr() as usize
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: the id is ours; events for it are acknowledged as soon as they are read, so
        // rdma_destroy_id does not wait. A QP still on it is destroyed first.
        unsafe {
            if !(*self.id.as_ptr()).qp.is_null() {
                sys::rdma_destroy_qp(self.id.as_ptr());
            }
            sys::rdma_destroy_id(self.id.as_ptr());
        }
    }
}

fn sockaddr_to_std(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: `sa` points into an rdma_cm_id's route, which is a sockaddr_storage-sized union;
    // the family says which view is valid.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let s = &*(sa as *const libc::sockaddr_in);
                Some(SocketAddr::from((
                    u32::from_be(s.sin_addr.s_addr).to_be_bytes(),
                    u16::from_be(s.sin_port),
                )))
            }
            libc::AF_INET6 => {
                let s = &*(sa as *const libc::sockaddr_in6);
                Some(SocketAddr::from((
                    s.sin6_addr.s6_addr,
                    u16::from_be(s.sin6_port),
                )))
            }
            _ => None,
        }
    }
}

pub(crate) fn std_to_sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let s = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = a.port().to_be();
            s.sin_addr.s_addr = u32::from_ne_bytes(a.ip().octets());
            (
                ss,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        }
        SocketAddr::V6(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in6.
            let s = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = a.port().to_be();
            s.sin6_addr.s6_addr = a.ip().octets();
            s.sin6_scope_id = a.scope_id();
            (
                ss,
                std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
            )
        }
    }
}

/// A listening RDMA-CM id (reliable connections, the TCP port space).
pub struct Listener {
    id: CmId,
    channel: Arc<EventChannel>,
    addr: SocketAddr,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// An id an event is about, for matching with accepted connections ([`crate::Endpoint::key`]).
pub type IdKey = usize;

/// A connection-manager event, acknowledged already.
#[derive(Debug)]
pub enum CmEvent {
    /// A client wants to connect; accept it with [`crate::Device::accept`] or drop it to reject.
    ConnectRequest(ConnectRequest),
    /// An accepted connection is established.
    Established(IdKey),
    /// The peer disconnected (or the connection failed after being established).
    Disconnected(IdKey),
    /// The device under a connection (or the listener) went away.
    DeviceRemoval(IdKey),
    /// An accepted connection did not get established (`what` names the event).
    Failed {
        /// The id.
        id: IdKey,
        /// Which event (rejected, unreachable, connect error...).
        what: &'static str,
        /// The event's status.
        status: i32,
    },
    /// Any other event (time-wait exit, address change...).
    Other {
        /// The id.
        id: IdKey,
        /// The event's name.
        what: &'static str,
    },
}

/// A connection request: the new id, the peer's private data and RDMA Read resources.
pub struct ConnectRequest {
    pub(crate) id: Option<CmId>,
    /// The private data the peer sent (the whole CM private data area; for RPC-over-RDMA the
    /// first 8 bytes are RFC 8797's).
    pub private_data: Vec<u8>,
    /// RDMA Reads the peer can serve at once (bounds our initiator depth).
    pub responder_resources: u8,
    /// RDMA Reads the peer wants to have outstanding towards us.
    pub initiator_depth: u8,
    /// The peer's address.
    pub peer: Option<SocketAddr>,
    /// Our address the request arrived on.
    pub local: Option<SocketAddr>,
    device: usize,
}

impl std::fmt::Debug for ConnectRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectRequest")
            .field("peer", &self.peer)
            .field("local", &self.local)
            .field("private_data", &self.private_data)
            .finish_non_exhaustive()
    }
}

impl ConnectRequest {
    /// The device the request arrived on (compare with [`crate::Device::key`]).
    pub fn device_key(&self) -> usize {
        self.device
    }

    /// The key later events about this connection carry.
    pub fn key(&self) -> IdKey {
        self.id.as_ref().map_or(0, CmId::key)
    }

    /// Refuses the connection (also done when the request is dropped without accepting).
    pub fn reject(mut self) {
        self.reject_inner();
    }

    fn reject_inner(&mut self) {
        if let Some(id) = self.id.take() {
            // SAFETY: the id is a connection request id not accepted yet.
            unsafe { sys::rdma_reject(id.as_ptr(), std::ptr::null(), 0) };
            drop(id);
        }
    }
}

impl Drop for ConnectRequest {
    fn drop(&mut self) {
        self.reject_inner();
    }
}

pub(crate) fn event_name(ev: u32) -> &'static str {
    use sys::rdma_cm_event_type as t;
    match ev {
        t::RDMA_CM_EVENT_ADDR_RESOLVED => "ADDR_RESOLVED",
        t::RDMA_CM_EVENT_ADDR_ERROR => "ADDR_ERROR",
        t::RDMA_CM_EVENT_ROUTE_RESOLVED => "ROUTE_RESOLVED",
        t::RDMA_CM_EVENT_ROUTE_ERROR => "ROUTE_ERROR",
        t::RDMA_CM_EVENT_CONNECT_REQUEST => "CONNECT_REQUEST",
        t::RDMA_CM_EVENT_CONNECT_RESPONSE => "CONNECT_RESPONSE",
        t::RDMA_CM_EVENT_CONNECT_ERROR => "CONNECT_ERROR",
        t::RDMA_CM_EVENT_UNREACHABLE => "UNREACHABLE",
        t::RDMA_CM_EVENT_REJECTED => "REJECTED",
        t::RDMA_CM_EVENT_ESTABLISHED => "ESTABLISHED",
        t::RDMA_CM_EVENT_DISCONNECTED => "DISCONNECTED",
        t::RDMA_CM_EVENT_DEVICE_REMOVAL => "DEVICE_REMOVAL",
        t::RDMA_CM_EVENT_TIMEWAIT_EXIT => "TIMEWAIT_EXIT",
        t::RDMA_CM_EVENT_ADDR_CHANGE => "ADDR_CHANGE",
        _ => "OTHER",
    }
}

impl Listener {
    /// Listens on `addr` (an unspecified address listens on every RDMA device). Must run
    /// inside a tokio runtime.
    pub fn bind(addr: SocketAddr, backlog: i32) -> io::Result<Listener> {
        let channel = EventChannel::new()?;
        let id = channel.create_id()?;
        let (mut ss, _) = std_to_sockaddr(addr);
        // SAFETY: the id is alive; `ss` holds a valid sockaddr of the right family.
        if unsafe { sys::rdma_bind_addr(id.as_ptr(), &mut ss as *mut _ as *mut _) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the id is bound.
        if unsafe { sys::rdma_listen(id.as_ptr(), backlog) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the id is bound; the returned sockaddr lives inside it.
        let bound =
            sockaddr_to_std(unsafe { sys::rdma_get_local_addr(&*id.as_ptr()) }).unwrap_or(addr);
        Ok(Listener {
            id,
            channel,
            addr: bound,
        })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The listening id's key (events about the listener itself carry it).
    pub fn key(&self) -> IdKey {
        self.id.key()
    }

    /// The next event on the listener or any connection accepted from it.
    pub async fn next(&self) -> io::Result<CmEvent> {
        self.channel.next(|e| self.convert(e)).await
    }

    /// Copies what is needed out of an unacknowledged event from this listener's channel.
    fn convert(&self, e: &sys::rdma_cm_event) -> CmEvent {
        use sys::rdma_cm_event_type as t;
        let key = e.id as usize;
        match e.event {
            t::RDMA_CM_EVENT_CONNECT_REQUEST => {
                // SAFETY: for CONNECT_REQUEST, `param.conn` is the valid union member.
                let conn = unsafe { &e.param.conn };
                let private_data = conn_private_data(e);
                // SAFETY: `e.id` is the new connection's id, now owned by us.
                let id = unsafe { &*e.id };
                ConnectRequest {
                    // SAFETY: route addresses live inside the id.
                    peer: sockaddr_to_std(unsafe { sys::rdma_get_peer_addr(id) }),
                    // SAFETY: as above.
                    local: sockaddr_to_std(unsafe { sys::rdma_get_local_addr(id) }),
                    device: id.verbs as usize,
                    private_data,
                    responder_resources: conn.responder_resources,
                    initiator_depth: conn.initiator_depth,
                    id: NonNull::new(e.id).map(|id| CmId {
                        id,
                        _channel: self.channel.clone(),
                    }),
                }
                .into()
            }
            t::RDMA_CM_EVENT_ESTABLISHED => CmEvent::Established(key),
            t::RDMA_CM_EVENT_DISCONNECTED => CmEvent::Disconnected(key),
            t::RDMA_CM_EVENT_DEVICE_REMOVAL => CmEvent::DeviceRemoval(key),
            t::RDMA_CM_EVENT_REJECTED
            | t::RDMA_CM_EVENT_CONNECT_ERROR
            | t::RDMA_CM_EVENT_UNREACHABLE => CmEvent::Failed {
                id: key,
                what: event_name(e.event),
                status: e.status,
            },
            other => CmEvent::Other {
                id: key,
                what: event_name(other),
            },
        }
    }
}

impl From<ConnectRequest> for CmEvent {
    fn from(r: ConnectRequest) -> Self {
        CmEvent::ConnectRequest(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockaddr_round_trip() {
        for a in ["169.254.77.1:20049", "[fe80::1]:20049", "0.0.0.0:0"] {
            let a: SocketAddr = a.parse().unwrap();
            let (ss, _) = std_to_sockaddr(a);
            assert_eq!(
                sockaddr_to_std(&ss as *const _ as *const libc::sockaddr),
                Some(a)
            );
        }
        assert_eq!(sockaddr_to_std(std::ptr::null()), None);
    }
}
