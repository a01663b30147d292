//! Calls this server makes to other hosts' RPC services: a client's rpcbind (to find its lock
//! manager and status monitor), its lockd (NLM grants and asynchronous results) and its statd
//! (reboot notifications). One call at a time per socket, over UDP or TCP, each attempt
//! bounded by a timeout; replies are matched by transaction id and bounded in size.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

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
    /// A connection per call, record marking.
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

/// Binds with the first of [`sources`] that is free; a port below 1024 that needs privilege
/// this process lacks ends the search for one.
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
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied && src.port() != 0 => {
                return bind(SocketAddr::new(src.ip(), 0));
            }
            Err(e) => last = e,
        }
    }
    Err(last)
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
    let sock = bind_first(addr, from, reserved_port, |src| {
        let s = if src.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        s.bind(src)?;
        Ok(s)
    })?;
    sock.connect(addr).await
}

async fn tcp_once(
    addr: SocketAddr,
    xid: u32,
    body: &Bytes,
    opts: &CallOpts,
) -> Result<Bytes, CallError> {
    let mut s = tcp_connect(addr, opts.from, opts.reserved_port).await?;
    s.write_all(&crate::record::record_header(body.len()))
        .await?;
    s.write_all(body).await?;
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
}
