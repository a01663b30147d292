//! Calls this server makes to other hosts' RPC services: a client's rpcbind (to find its lock
//! manager and status monitor), its lockd (NLM grants and asynchronous results) and its statd
//! (reboot notifications). One call at a time per socket, over UDP or TCP (a connection kept
//! for the next call to the same peer), each attempt bounded by a timeout; replies are matched
//! by transaction id and bounded in size.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use xdr::{Decoder, Encode, Encoder};

use crate::msg::{self, Credential};

/// The port mapper's program number and the version (2) spoken to it.
pub const PMAP_PROGRAM: u32 = 100_000;
/// PMAP version 2.
pub const PMAP_V2: u32 = 2;
/// PMAPPROC_GETPORT.
pub const PMAPPROC_GETPORT: u32 = 3;
/// The port mapper's well-known port.
pub const PMAP_PORT: u16 = 111;
/// IPPROTO_TCP, as the port mapper numbers protocols.
pub const IPPROTO_TCP: u32 = 6;
/// IPPROTO_UDP.
pub const IPPROTO_UDP: u32 = 17;

/// Largest reply accepted (the replies these calls get are a few words).
const MAX_REPLY: usize = 64 * 1024;

/// The transport of an outgoing call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// One datagram each way, retransmitted on timeout.
    Udp,
    /// Record marking on a connection kept between calls to the same peer.
    Tcp,
}

impl Proto {
    /// The port mapper's number for the protocol.
    pub fn ipproto(self) -> u32 {
        match self {
            Proto::Udp => IPPROTO_UDP,
            Proto::Tcp => IPPROTO_TCP,
        }
    }
}

/// Why an outgoing call has no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The network failed (refused, unreachable, reset).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// No reply in time, after every attempt.
    #[error("no reply")]
    Timeout,
    /// The peer answered with an error (not SUCCESS), or a reply that is not one.
    #[error("call rejected or reply malformed")]
    Rejected,
    /// The port mapper does not know the program.
    #[error("program not registered")]
    NotRegistered,
}

/// How an outgoing call is made.
#[derive(Debug, Clone)]
pub struct CallOpts {
    /// UDP or TCP.
    pub proto: Proto,
    /// Time an attempt waits for its reply.
    pub timeout: Duration,
    /// Attempts in all (UDP retransmits; TCP reconnects).
    pub tries: u32,
    /// Credential sent.
    pub cred: Credential,
    /// The local address calls come from (the address a client called this server at,
    /// which it checks calls back against); None: as routing chooses.
    pub from: Option<IpAddr>,
    /// Call from a reserved port (below 1024), as kernel and rpc.statd peers expect of
    /// calls from a server's lock manager and status monitor; an unprivileged process falls
    /// back to any port.
    pub reserved_port: bool,
}

impl CallOpts {
    /// `tries` attempts of `timeout` each over `proto`, with AUTH_NONE.
    pub fn new(proto: Proto, timeout: Duration, tries: u32) -> Self {
        CallOpts {
            proto,
            timeout,
            tries: tries.max(1),
            cred: Credential::None,
            from: None,
            reserved_port: false,
        }
    }

    /// The same, from `from` (when known) and a reserved port.
    pub fn from_server(mut self, from: Option<IpAddr>) -> Self {
        self.from = from;
        self.reserved_port = true;
        self
    }
}

/// Makes the call `prog`/`vers`/`proc_` with arguments `args` to `addr` and returns a
/// decoder at the start of its results.
pub async fn call(
    addr: SocketAddr,
    prog: u32,
    vers: u32,
    proc_: u32,
    args: &(dyn Encode + Sync),
    opts: &CallOpts,
) -> Result<Decoder, CallError> {
    let xid = crate::callback::next_xid();
    let mut e = Encoder::new();
    msg::encode_call(&mut e, xid, prog, vers, proc_, &opts.cred);
    args.encode(&mut e);
    let body = e.finish().to_bytes();
    let reply = match opts.proto {
        Proto::Udp => udp_exchange(addr, xid, &body, opts).await?,
        Proto::Tcp => tcp_exchange(addr, xid, &body, opts).await?,
    };
    msg::decode_success(reply).ok_or(CallError::Rejected)
}

/// The port at which `host`'s port mapper says `prog`/`vers` listens over `proto`.
pub async fn getport(
    host: IpAddr,
    prog: u32,
    vers: u32,
    proto: Proto,
    opts: &CallOpts,
) -> Result<u16, CallError> {
    getport_at(SocketAddr::new(host, PMAP_PORT), prog, vers, proto, opts).await
}

/// As [`getport`], asking the port mapper at `pmap` (a host's, on a port other than 111).
pub async fn getport_at(
    pmap: SocketAddr,
    prog: u32,
    vers: u32,
    proto: Proto,
    opts: &CallOpts,
) -> Result<u16, CallError> {
    let args = GetportArgs {
        prog,
        vers,
        prot: proto.ipproto(),
    };
    let mut d = call(pmap, PMAP_PROGRAM, PMAP_V2, PMAPPROC_GETPORT, &args, opts).await?;
    match d.u32().map_err(|_| CallError::Rejected)? {
        0 => Err(CallError::NotRegistered),
        p => u16::try_from(p).map_err(|_| CallError::Rejected),
    }
}

/// PMAPPROC_GETPORT's `mapping` argument (the port field is ignored).
struct GetportArgs {
    prog: u32,
    vers: u32,
    prot: u32,
}

impl Encode for GetportArgs {
    fn encode(&self, e: &mut Encoder) {
        e.u32(self.prog);
        e.u32(self.vers);
        e.u32(self.prot);
        e.u32(0);
    }
}

/// The local addresses to try for a call to `addr`: from `opts.from` (or any address of the
/// family), a reserved port first when asked, then any port.
fn sources(
    addr: SocketAddr,
    from: Option<IpAddr>,
    reserved_port: bool,
) -> impl Iterator<Item = SocketAddr> {
    let ip = match (from, addr) {
        (Some(ip), _) if ip.is_ipv4() == addr.is_ipv4() => ip,
        (_, SocketAddr::V4(_)) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        (_, SocketAddr::V6(_)) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let reserved = if reserved_port { 665..1024 } else { 0..0 };
    reserved
        .rev()
        .chain(std::iter::once(0))
        .map(move |p| SocketAddr::new(ip, p))
}

/// What a failed bind (or connect) from `src`, one of [`sources`], leaves to try: the next
/// source (None), the first unprivileged one, or nothing more (`src` itself: the error stands).
fn next_source(e: &io::Error, src: SocketAddr) -> Option<SocketAddr> {
    match e.kind() {
        // a port below 1024 needs privilege this process lacks: the first unprivileged one
        io::ErrorKind::PermissionDenied if src.port() != 0 => Some(SocketAddr::new(src.ip(), 0)),
        // the port is taken (or the 4-tuple still in TIME_WAIT): the next one
        io::ErrorKind::AddrInUse | io::ErrorKind::AddrNotAvailable => None,
        _ => Some(src),
    }
}

/// Binds with the first of [`sources`] that is free; a port below 1024 that needs privilege
/// this process lacks ends the search for one, and an error that is not about the port (a
/// refused connection) ends the search.
pub(crate) fn bind_first<T>(
    addr: SocketAddr,
    from: Option<IpAddr>,
    reserved_port: bool,
    bind: impl Fn(SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = io::Error::other("no local address");
    for src in sources(addr, from, reserved_port) {
        match bind(src) {
            Ok(t) => return Ok(t),
            Err(e) => match next_source(&e, src) {
                None => last = e,
                Some(any) if any != src => return bind(any),
                Some(_) => return Err(e),
            },
        }
    }
    Err(last)
}

/// A TCP socket to `addr` from the first of [`sources`] that binds and on which `connect`
/// succeeds. Each socket may share its port with connections to other peers and with those
/// in TIME_WAIT (SO_REUSEADDR): a port is spent only for the 4-tuple it connected, so
/// connections closed by this side in the last minute (per-call connections, a killed
/// instance's) leave the rest of the reserved range usable, where without it a few hundred
/// calls a minute would drive every call to an unprivileged port that `secure` servers refuse.
/// A connect that finds its 4-tuple still in use (EADDRNOTAVAIL) moves on to the next port.
pub(crate) fn tcp_socket_from_first(
    addr: SocketAddr,
    from: Option<IpAddr>,
    reserved_port: bool,
    connect: impl Fn(&socket2::Socket) -> io::Result<()>,
) -> io::Result<socket2::Socket> {
    let attempt = |src: SocketAddr| -> io::Result<socket2::Socket> {
        let s = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        s.set_reuse_address(true)?;
        s.bind(&src.into())?;
        connect(&s)?;
        Ok(s)
    };
    bind_first(addr, from, reserved_port, attempt)
}

/// Whether `reply` answers transaction `xid`.
fn answers(reply: &[u8], xid: u32) -> bool {
    reply.len() >= 8 && reply[..4] == xid.to_be_bytes() && reply[4..8] == 1u32.to_be_bytes()
}

async fn udp_exchange(
    addr: SocketAddr,
    xid: u32,
    body: &Bytes,
    opts: &CallOpts,
) -> Result<Bytes, CallError> {
    let std_sock = bind_first(addr, opts.from, opts.reserved_port, |src| {
        let s = std::net::UdpSocket::bind(src)?;
        s.set_nonblocking(true)?;
        Ok(s)
    })?;
    let sock = UdpSocket::from_std(std_sock)?;
    sock.connect(addr).await?;
    let mut buf = vec![0u8; MAX_REPLY];
    for _ in 0..opts.tries {
        sock.send(body).await?;
        let deadline = tokio::time::Instant::now() + opts.timeout;
        loop {
            match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
                Err(_) => break,
                Ok(Err(e)) => return Err(e.into()),
                Ok(Ok(n)) if answers(&buf[..n], xid) => {
                    return Ok(Bytes::copy_from_slice(&buf[..n]))
                }
                // A late reply to an earlier transmission of another call: not ours.
                Ok(Ok(_)) => {}
            }
        }
    }
    Err(CallError::Timeout)
}

async fn tcp_exchange(
    addr: SocketAddr,
    xid: u32,
    body: &Bytes,
    opts: &CallOpts,
) -> Result<Bytes, CallError> {
    let mut last = CallError::Timeout;
    for _ in 0..opts.tries {
        match tokio::time::timeout(opts.timeout, tcp_once(addr, xid, body, opts)).await {
            Ok(Ok(r)) => return Ok(r),
            Ok(Err(e)) => last = e,
            Err(_) => last = CallError::Timeout,
        }
    }
    Err(last)
}

/// A TCP connection to `addr` from `from` (any local address when `None`), from a reserved
/// port (below 1024) with `reserved_port` when this process may bind one, as the kernel's
/// client connects: servers that require one (`secure` exports) take it.
pub async fn tcp_connect(
    addr: SocketAddr,
    from: Option<IpAddr>,
    reserved_port: bool,
) -> io::Result<TcpStream> {
    // started without blocking: a 4-tuple in use shows at once, the rest when it is writable
    let sock = tcp_socket_from_first(addr, from, reserved_port, |s| {
        s.set_nonblocking(true)?;
        match s.connect(&addr.into()) {
            Err(e) if e.raw_os_error() != Some(libc::EINPROGRESS) => Err(e),
            _ => Ok(()),
        }
    })?;
    sock.set_tcp_nodelay(true)?;
    let stream = TcpStream::from_std(sock.into())?;
    stream.writable().await?;
    match stream.take_error()? {
        Some(e) => Err(e),
        None => Ok(stream),
    }
}

/// What a kept connection serves: calls to one peer from one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ConnKey {
    addr: SocketAddr,
    from: Option<IpAddr>,
    reserved_port: bool,
}

impl ConnKey {
    fn of(addr: SocketAddr, opts: &CallOpts) -> Self {
        ConnKey {
            addr,
            from: opts.from,
            reserved_port: opts.reserved_port,
        }
    }
}

/// An idle connection and when its last call ended.
struct Idle {
    key: ConnKey,
    stream: std::net::TcpStream,
    since: Instant,
}

/// Connections of finished TCP calls, kept for the next call to the same peer (as the kernel's
/// RPC client keeps its transport): a lock manager granting locks at a high rate then neither
/// connects per call nor leaves a reserved port in TIME_WAIT per call. Streams are kept
/// detached from any runtime, so a call on another runtime can take them.
struct IdleConns {
    conns: parking_lot::Mutex<Vec<Idle>>,
}

/// How long a connection is kept idle (peers close theirs after minutes).
const IDLE_FOR: Duration = Duration::from_secs(30);
/// Idle connections kept in all; the oldest goes first.
const IDLE_MAX: usize = 64;

static IDLE: IdleConns = IdleConns {
    conns: parking_lot::Mutex::new(Vec::new()),
};

impl IdleConns {
    /// The newest live idle connection for `key`.
    fn take(&self, key: ConnKey) -> Option<TcpStream> {
        let mut conns = self.conns.lock();
        conns.retain(|c| c.since.elapsed() < IDLE_FOR);
        while let Some(i) = conns.iter().rposition(|c| c.key == key) {
            let c = conns.remove(i);
            // alive and quiet: nothing to read yet (not closed by the peer, no stray bytes)
            if matches!(c.stream.peek(&mut [0u8; 1]), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
            {
                drop(conns);
                return TcpStream::from_std(c.stream).ok();
            }
        }
        None
    }

    /// Keeps `stream`, whose last call was answered, for the next call to `key`.
    fn put(&self, key: ConnKey, stream: TcpStream) {
        let Ok(stream) = stream.into_std() else {
            return;
        };
        let mut conns = self.conns.lock();
        conns.retain(|c| c.since.elapsed() < IDLE_FOR);
        if conns.len() >= IDLE_MAX {
            conns.remove(0);
        }
        conns.push(Idle {
            key,
            stream,
            since: Instant::now(),
        });
    }
}

/// One attempt: on a kept connection when there is one, else on a new one. A kept connection
/// that fails before the reply (the peer closed it meanwhile) is replaced by a new one at once.
async fn tcp_once(
    addr: SocketAddr,
    xid: u32,
    body: &Bytes,
    opts: &CallOpts,
) -> Result<Bytes, CallError> {
    let key = ConnKey::of(addr, opts);
    if let Some(mut s) = IDLE.take(key) {
        match tcp_exchange_on(&mut s, xid, body).await {
            Ok(r) => {
                IDLE.put(key, s);
                return Ok(r);
            }
            Err(CallError::Io(_)) => {}
            Err(e) => return Err(e),
        }
    }
    let mut s = tcp_connect(addr, opts.from, opts.reserved_port).await?;
    let r = tcp_exchange_on(&mut s, xid, body).await?;
    IDLE.put(key, s);
    Ok(r)
}

/// Sends the call `body` on `s` and reads records until the reply to `xid`.
async fn tcp_exchange_on(s: &mut TcpStream, xid: u32, body: &Bytes) -> Result<Bytes, CallError> {
    // one write: a call in two segments would wait on the peer's delayed ACK
    let mut rec = Vec::with_capacity(4 + body.len());
    rec.extend_from_slice(&crate::record::record_header(body.len()));
    rec.extend_from_slice(body);
    s.write_all(&rec).await?;
    loop {
        let mut reply = Vec::new();
        loop {
            let mut hdr = [0u8; 4];
            s.read_exact(&mut hdr).await?;
            let word = u32::from_be_bytes(hdr);
            let len = (word & 0x7fff_ffff) as usize;
            if reply.len() + len > MAX_REPLY {
                return Err(CallError::Rejected);
            }
            let at = reply.len();
            reply.resize(at + len, 0);
            s.read_exact(&mut reply[at..]).await?;
            if word & 0x8000_0000 != 0 {
                break;
            }
        }
        if answers(&reply, xid) {
            return Ok(Bytes::from(reply));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::sync::Arc;

    /// A UDP service that drops the first datagram and answers the second with `result`.
    async fn flaky_udp(result: u32) -> SocketAddr {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let _ = sock.recv_from(&mut buf).await.unwrap();
            let (n, peer) = sock.recv_from(&mut buf).await.unwrap();
            let (h, _) = msg::decode_call(Bytes::copy_from_slice(&buf[..n])).unwrap();
            // A stray reply first, to another transaction.
            let mut e = Encoder::new();
            msg::encode_accepted(&mut e, h.xid.wrapping_add(1), msg::AcceptStat::Success);
            sock.send_to(&e.finish().to_bytes(), peer).await.unwrap();
            let mut e = Encoder::new();
            msg::encode_accepted(&mut e, h.xid, msg::AcceptStat::Success);
            e.u32(result);
            sock.send_to(&e.finish().to_bytes(), peer).await.unwrap();
        });
        addr
    }

    #[tokio::test]
    async fn udp_retransmits_and_matches_the_xid() {
        let addr = flaky_udp(4045).await;
        let opts = CallOpts::new(Proto::Udp, Duration::from_millis(200), 3);
        let mut d = call(
            addr,
            PMAP_PROGRAM,
            PMAP_V2,
            PMAPPROC_GETPORT,
            &GetportArgs {
                prog: 1,
                vers: 1,
                prot: 17,
            },
            &opts,
        )
        .await
        .unwrap();
        assert_eq!(d.u32().unwrap(), 4045);
    }

    #[tokio::test]
    async fn calls_come_from_the_asked_address_and_a_reserved_port() {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let (n, peer) = sock.recv_from(&mut buf).await.unwrap();
            let (h, _) = msg::decode_call(Bytes::copy_from_slice(&buf[..n])).unwrap();
            let mut e = Encoder::new();
            msg::encode_accepted(&mut e, h.xid, msg::AcceptStat::Success);
            sock.send_to(&e.finish().to_bytes(), peer).await.unwrap();
            let _ = tx.send(peer);
        });
        let opts = CallOpts::new(Proto::Udp, Duration::from_secs(2), 1)
            .from_server(Some("127.0.0.1".parse().unwrap()));
        call(
            addr,
            1,
            1,
            0,
            &GetportArgs {
                prog: 0,
                vers: 0,
                prot: 0,
            },
            &opts,
        )
        .await
        .unwrap();
        let peer = rx.await.unwrap();
        assert_eq!(peer.ip(), "127.0.0.1".parse::<IpAddr>().unwrap());
        // Reserved ports need privilege (the test suite runs as root, as the server does).
        let privileged = std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|_| std::net::TcpListener::bind("127.0.0.1:1"))
            .map(|_| true)
            .or_else(|e| match e.kind() {
                io::ErrorKind::PermissionDenied => Ok(false),
                _ => Ok::<bool, io::Error>(true),
            })
            .unwrap();
        assert_eq!(
            peer.port() < 1024,
            privileged,
            "source port {}",
            peer.port()
        );
    }

    #[tokio::test]
    async fn udp_gives_up_after_its_tries() {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        let opts = CallOpts::new(Proto::Udp, Duration::from_millis(50), 2);
        let r = call(
            addr,
            1,
            1,
            0,
            &GetportArgs {
                prog: 0,
                vers: 0,
                prot: 0,
            },
            &opts,
        )
        .await;
        assert!(matches!(r, Err(CallError::Timeout)), "{r:?}");
        drop(sock);
    }

    #[tokio::test]
    async fn tcp_call_reads_a_fragmented_reply() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut hdr = [0u8; 4];
            s.read_exact(&mut hdr).await.unwrap();
            let mut body = vec![0u8; (u32::from_be_bytes(hdr) & 0x7fff_ffff) as usize];
            s.read_exact(&mut body).await.unwrap();
            let (h, _) = msg::decode_call(Bytes::from(body)).unwrap();
            let mut e = Encoder::new();
            msg::encode_accepted(&mut e, h.xid, msg::AcceptStat::Success);
            e.u32(7);
            let reply = e.finish().to_bytes();
            // Two fragments: the header words, then the result.
            let (a, b) = reply.split_at(8);
            s.write_all(&(a.len() as u32).to_be_bytes()).await.unwrap();
            s.write_all(a).await.unwrap();
            s.write_all(&(0x8000_0000 | b.len() as u32).to_be_bytes())
                .await
                .unwrap();
            s.write_all(b).await.unwrap();
        });
        let opts = CallOpts::new(Proto::Tcp, Duration::from_secs(2), 1);
        let mut d = call(
            addr,
            9,
            9,
            9,
            &GetportArgs {
                prog: 0,
                vers: 0,
                prot: 0,
            },
            &opts,
        )
        .await
        .unwrap();
        assert_eq!(d.u32().unwrap(), 7);
    }

    #[tokio::test]
    async fn an_error_reply_is_rejected() {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = sock.local_addr().unwrap();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let (n, peer) = sock.recv_from(&mut buf).await.unwrap();
            let (h, _) = msg::decode_call(Bytes::copy_from_slice(&buf[..n])).unwrap();
            let mut e = Encoder::new();
            msg::encode_prog_mismatch(&mut e, h.xid, 2, 2);
            sock.send_to(&e.finish().to_bytes(), peer).await.unwrap();
        });
        let opts = CallOpts::new(Proto::Udp, Duration::from_secs(2), 1);
        let r = call(
            addr,
            1,
            1,
            0,
            &GetportArgs {
                prog: 0,
                vers: 0,
                prot: 0,
            },
            &opts,
        )
        .await;
        assert!(matches!(r, Err(CallError::Rejected)), "{r:?}");
    }

    /// Whether this process may bind ports below 1024 (the test suite runs as root, as the
    /// server does; otherwise calls fall back to unprivileged ports).
    fn privileged() -> bool {
        match std::net::TcpListener::bind("127.0.0.1:1") {
            Err(e) => e.kind() != io::ErrorKind::PermissionDenied,
            Ok(_) => true,
        }
    }

    /// A TCP service answering every call with SUCCESS, that closes each connection after
    /// `per_conn` replies; returns its address and the source ports of its connections.
    async fn tcp_service(per_conn: usize) -> (SocketAddr, Arc<Mutex<Vec<u16>>>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let peers = Arc::new(Mutex::new(Vec::new()));
        let seen = peers.clone();
        tokio::spawn(async move {
            loop {
                let (mut s, peer) = l.accept().await.unwrap();
                seen.lock().push(peer.port());
                tokio::spawn(async move {
                    for _ in 0..per_conn {
                        let mut hdr = [0u8; 4];
                        if s.read_exact(&mut hdr).await.is_err() {
                            return;
                        }
                        let mut body = vec![0u8; (u32::from_be_bytes(hdr) & 0x7fff_ffff) as usize];
                        s.read_exact(&mut body).await.unwrap();
                        let (h, _) = msg::decode_call(Bytes::from(body)).unwrap();
                        let mut e = Encoder::new();
                        msg::encode_accepted(&mut e, h.xid, msg::AcceptStat::Success);
                        let reply = e.finish().to_bytes();
                        let mut rec = crate::record::record_header(reply.len()).to_vec();
                        rec.extend_from_slice(&reply);
                        s.write_all(&rec).await.unwrap();
                    }
                });
            }
        });
        (addr, peers)
    }

    async fn null_call(addr: SocketAddr, opts: &CallOpts) -> Result<Decoder, CallError> {
        let args = GetportArgs {
            prog: 0,
            vers: 0,
            prot: 0,
        };
        call(addr, 1, 1, 0, &args, opts).await
    }

    #[tokio::test]
    async fn tcp_calls_to_one_peer_share_a_connection_from_a_reserved_port() {
        let (addr, peers) = tcp_service(usize::MAX).await;
        let opts = CallOpts::new(Proto::Tcp, Duration::from_secs(5), 1).from_server(None);
        // more calls than there are reserved ports: one connection each would exhaust them
        for _ in 0..500 {
            null_call(addr, &opts).await.unwrap();
        }
        let peers = peers.lock().clone();
        assert_eq!(peers.len(), 1, "connections {peers:?}");
        assert_eq!(peers[0] < 1024, privileged(), "source port {}", peers[0]);
    }

    #[tokio::test]
    async fn a_kept_connection_the_peer_closed_is_replaced_within_the_call() {
        let (addr, peers) = tcp_service(3).await;
        // one try each: a stale connection must not cost the call
        let opts = CallOpts::new(Proto::Tcp, Duration::from_secs(5), 1);
        for i in 0..10 {
            null_call(addr, &opts)
                .await
                .unwrap_or_else(|e| panic!("call {i}: {e}"));
            // let the peer's close arrive, as between calls seconds apart
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(peers.lock().len(), 4, "3 calls per connection");
    }

    #[test]
    fn reserved_ports_are_shared_between_peers_and_skipped_per_peer_when_taken() {
        let connect = |to: &std::net::TcpListener| {
            let addr = to.local_addr().unwrap();
            let s = tcp_socket_from_first(addr, None, true, |s| s.connect(&addr.into())).unwrap();
            let port = s.local_addr().unwrap().as_socket().unwrap().port();
            (s, port)
        };
        let a = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let b = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        if !privileged() {
            assert!(connect(&a).1 >= 1024);
            return;
        }
        // every reserved port connected to `a`: each next connection to `a` finds its 4-tuple
        // taken and moves on to the next port, until the first unprivileged one
        let mut to_a = Vec::new();
        let mut accepted = Vec::new();
        let mut ports = std::collections::BTreeSet::new();
        loop {
            let (s, port) = connect(&a);
            accepted.push(a.accept().unwrap().0);
            to_a.push(s);
            if port >= 1024 {
                break;
            }
            assert!(ports.insert(port), "port {port} twice");
        }
        // other processes may hold a few reserved ports; all the rest were used
        let unused = 359 - ports.len();
        assert!(
            unused < 16,
            "{unused} reserved ports left unused: {ports:?}"
        );
        // the same ports still serve a connection to another peer
        let (_to_b, port_b) = connect(&b);
        assert!(port_b < 1024, "source port {port_b}");
        // the peer closes first: the TIME_WAIT states are its own, not the reserved ports'
        drop(accepted);
        std::thread::sleep(Duration::from_millis(100));
    }
}
