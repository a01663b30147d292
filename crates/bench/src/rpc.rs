//! A pipelined ONC RPC (RFC 5531) client over TCP or RPC-over-RDMA ([`crate::rdma`]).
//!
//! Many calls may be in flight on one connection: each call gets its own xid. Over TCP a writer
//! task gathers queued records into vectored writes, and a reader task splits the reply stream
//! into records (RFC 5531 section 11) and hands each reply to the caller waiting on its xid.

use std::collections::{HashMap, VecDeque};
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use sunrpc::gss::client::GssClient;
use sunrpc::gss::wire::GssService;
use sunrpc::msg::AuthSys;
use sunrpc::record::{RecordReader, LAST_FRAGMENT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot};
use xdr::{Decoder, Encoder, Segment};

use crate::rdma::{Expect, RdmaConn};

/// Why a call failed.
#[derive(Debug, Clone)]
pub enum RpcError {
    /// The connection failed or was closed.
    Io(String),
    /// No reply within the call timeout.
    Timeout,
    /// The reply could not be decoded.
    Garbage(String),
    /// The server accepted the call but did not execute it (accept_stat).
    NotAccepted(u32),
    /// The server denied the call (reject_stat, then auth_stat or the version range).
    Denied(u32, u32),
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RpcError::Io(e) => write!(f, "connection: {e}"),
            RpcError::Timeout => write!(f, "no reply in time"),
            RpcError::Garbage(e) => write!(f, "undecodable reply: {e}"),
            RpcError::NotAccepted(s) => write!(f, "call not executed (accept_stat {s})"),
            RpcError::Denied(r, s) => write!(f, "call denied (reject_stat {r}, {s})"),
        }
    }
}

impl std::error::Error for RpcError {}

impl From<xdr::XdrError> for RpcError {
    fn from(e: xdr::XdrError) -> Self {
        RpcError::Garbage(e.to_string())
    }
}

type Waiters = HashMap<u32, oneshot::Sender<Result<Bytes, RpcError>>>;

/// The largest reply record accepted (a 1 MiB READ plus headers, with room to spare).
const MAX_REPLY: usize = 4 << 20;
/// How many queued records one vectored write may gather.
const MAX_BATCH: usize = 64;

/// The transport a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Via {
    /// TCP with record marking.
    Tcp,
    /// RPC-over-RDMA version 1.
    Rdma,
}

impl Via {
    /// Parses `tcp` or `rdma`.
    pub fn parse(s: &str) -> std::result::Result<Via, String> {
        match s {
            "tcp" => Ok(Via::Tcp),
            "rdma" => Ok(Via::Rdma),
            _ => Err(format!("unknown transport {s:?} (tcp, rdma)")),
        }
    }

    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Via::Tcp => "tcp",
            Via::Rdma => "rdma",
        }
    }
}

/// The transport side of a connection.
enum Link {
    Tcp {
        tx: mpsc::UnboundedSender<Vec<Bytes>>,
        waiters: Arc<Mutex<Option<Waiters>>>,
        tasks: Vec<tokio::task::JoinHandle<()>>,
    },
    Rdma(Arc<RdmaConn>),
}

/// One connection to an RPC server.
pub struct RpcConn {
    link: Link,
    next_xid: AtomicU32,
    /// The credential and verifier, encoded once.
    auth: Bytes,
    /// A Kerberos context: calls go under it instead of `auth` (its lock is held while a
    /// call is signed or wrapped and while a reply is checked).
    gss: Option<Mutex<GssClient<gss::Krb5Initiator>>>,
    timeout: Duration,
    /// Reply bytes received (record marks included).
    pub rx_bytes: Arc<AtomicU64>,
    /// Call bytes sent (record marks included).
    pub tx_bytes: AtomicU64,
}

impl Drop for RpcConn {
    fn drop(&mut self) {
        if let Link::Tcp { tasks, .. } = &self.link {
            for t in tasks {
                t.abort();
            }
        }
    }
}

/// The credential the benchmark calls with.
#[derive(Debug, Clone)]
pub struct Cred {
    /// AUTH_SYS uid.
    pub uid: u32,
    /// AUTH_SYS gid.
    pub gid: u32,
    /// Calls under RPCSEC_GSS instead, with this Kerberos service.
    pub krb5: Option<Krb5>,
}

/// Kerberos for the benchmark's calls: the default principal's credentials (the ticket cache,
/// or the client keytab `KRB5_CLIENT_KTNAME` names), a context per connection.
#[derive(Debug, Clone)]
pub struct Krb5 {
    /// krb5, krb5i or krb5p.
    pub service: GssService,
    /// The server's service name, `nfs@HOST` (HOST: the name its key is for).
    pub target: Arc<str>,
}

impl Krb5 {
    /// Parses `krb5`, `krb5i` or `krb5p`.
    pub fn parse_service(s: &str) -> std::result::Result<GssService, String> {
        [GssService::None, GssService::Integrity, GssService::Privacy]
            .into_iter()
            .find(|g| g.krb5_name() == s)
            .ok_or_else(|| format!("unknown Kerberos flavor {s:?} (krb5, krb5i, krb5p)"))
    }
}

impl RpcConn {
    /// Connects to `addr` over TCP; calls carry AUTH_SYS `cred` and fail after `timeout`.
    pub async fn connect(addr: SocketAddr, cred: Cred, timeout: Duration) -> io::Result<RpcConn> {
        Self::open(Via::Tcp, addr, cred, timeout).await
    }

    /// Connects to `addr` over `via`; calls carry AUTH_SYS `cred` and fail after `timeout`.
    pub async fn open(
        via: Via,
        addr: SocketAddr,
        cred: Cred,
        timeout: Duration,
    ) -> io::Result<RpcConn> {
        Self::open_from(via, addr, cred, timeout, false).await
    }

    /// As [`RpcConn::open`], over TCP from a reserved port (below 1024) with `reserved_port`
    /// when this process may bind one, as the kernel's client connects.
    pub async fn open_from(
        via: Via,
        addr: SocketAddr,
        cred: Cred,
        timeout: Duration,
        reserved_port: bool,
    ) -> io::Result<RpcConn> {
        let rx_bytes = Arc::new(AtomicU64::new(0));
        let link = match via {
            Via::Tcp => Self::tcp(addr, rx_bytes.clone(), reserved_port).await?,
            Via::Rdma => Link::Rdma(
                RdmaConn::connect(addr, rx_bytes.clone())
                    .await
                    .map_err(|e| io::Error::other(e.to_string()))?,
            ),
        };
        let gss = match &cred.krb5 {
            None => None,
            Some(k) => Some(Mutex::new(establish(addr, k.clone(), timeout).await?)),
        };
        Ok(RpcConn {
            link,
            next_xid: AtomicU32::new(xid_seed()),
            gss,
            auth: auth_sys(&cred),
            timeout,
            rx_bytes,
            tx_bytes: AtomicU64::new(0),
        })
    }

    async fn tcp(
        addr: SocketAddr,
        rx_bytes: Arc<AtomicU64>,
        reserved_port: bool,
    ) -> io::Result<Link> {
        let stream = sunrpc::client::tcp_connect(addr, None, reserved_port).await?;
        stream.set_nodelay(true)?;
        let (rd, wr) = stream.into_split();
        let (tx, rx) = mpsc::unbounded_channel();
        let waiters: Arc<Mutex<Option<Waiters>>> = Arc::new(Mutex::new(Some(HashMap::new())));
        let w2 = waiters.clone();
        let writer = tokio::spawn(async move {
            if let Err(e) = write_loop(wr, rx).await {
                fail_all(&w2, RpcError::Io(format!("write: {e}")));
            }
        });
        let w3 = waiters.clone();
        let reader = tokio::spawn(async move {
            let e = read_loop(rd, &w3, &rx_bytes).await;
            fail_all(&w3, RpcError::Io(format!("read: {e}")));
        });
        Ok(Link::Tcp {
            tx,
            waiters,
            tasks: vec![writer, reader],
        })
    }

    /// Calls `prog`/`vers`/`proc_` with arguments written by `args`; returns the procedure's
    /// result bytes (everything after accept_stat SUCCESS). The reply must fit the inline size
    /// over RDMA.
    pub async fn call(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        args: impl FnOnce(&mut Encoder),
    ) -> Result<Bytes, RpcError> {
        self.call_expect(prog, vers, proc_, Expect::Small, args)
            .await
    }

    /// [`RpcConn::call`] of a procedure whose reply has the shape `expect` (RPC-over-RDMA
    /// provisions a Write or Reply chunk for it).
    pub async fn call_expect(
        &self,
        prog: u32,
        vers: u32,
        proc_: u32,
        expect: Expect,
        args: impl FnOnce(&mut Encoder),
    ) -> Result<Bytes, RpcError> {
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        if let Some(g) = &self.gss {
            return self.call_gss(g, xid, prog, vers, proc_, expect, args).await;
        }
        let mut e = Encoder::with_capacity(256);
        let (tx, waiters) = match &self.link {
            Link::Tcp { tx, waiters, .. } => (tx, waiters),
            Link::Rdma(r) => {
                encode_call(&mut e, xid, prog, vers, proc_, &self.auth, args);
                let msg = e.finish();
                self.tx_bytes
                    .fetch_add(msg.wire_len() as u64, Ordering::Relaxed);
                return parse_reply(r.call(xid, msg, expect, self.timeout).await?);
            }
        };
        e.u32(0); // record mark, set below
        encode_call(&mut e, xid, prog, vers, proc_, &self.auth, args);
        let msg = e.finish();
        let len = msg.wire_len() - 4;
        let mut bufs = Vec::with_capacity(msg.segments.len() + 1);
        for (i, s) in msg.segments.into_iter().enumerate() {
            match s {
                Segment::Inline(b) if i == 0 => {
                    let mut b = BytesMut::from(&b[..]);
                    b[..4].copy_from_slice(&(LAST_FRAGMENT | len as u32).to_be_bytes());
                    bufs.push(b.freeze());
                }
                Segment::Inline(b) => bufs.push(b),
                Segment::Bulk(b) => {
                    let pad = xdr::pad4(b.len()) - b.len();
                    bufs.push(b);
                    if pad > 0 {
                        bufs.push(Bytes::from_static(&[0u8; 3][..pad]));
                    }
                }
                Segment::Pages(_) | Segment::BodyPages(_) => {
                    return Err(RpcError::Io("calls are encoded from memory only".into()))
                }
            }
        }
        parse_reply(self.exchange(tx, waiters, xid, bufs, len + 4).await?)
    }

    /// Sends the record `bufs` (`len` bytes, its mark included) of call `xid` over TCP and
    /// waits for the reply message.
    async fn exchange(
        &self,
        tx: &mpsc::UnboundedSender<Vec<Bytes>>,
        waiters: &Mutex<Option<Waiters>>,
        xid: u32,
        bufs: Vec<Bytes>,
        len: usize,
    ) -> Result<Bytes, RpcError> {
        let (otx, orx) = oneshot::channel();
        {
            let mut w = waiters.lock();
            match w.as_mut() {
                Some(m) => {
                    m.insert(xid, otx);
                }
                None => return Err(RpcError::Io("connection closed".into())),
            }
        }
        self.tx_bytes.fetch_add(len as u64, Ordering::Relaxed);
        if tx.send(bufs).is_err() {
            forget(waiters, xid);
            return Err(RpcError::Io("connection closed".into()));
        }
        match tokio::time::timeout(self.timeout, orx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(RpcError::Io("connection closed".into())),
            Err(_) => {
                forget(waiters, xid);
                Err(RpcError::Timeout)
            }
        }
    }

    /// The per-call timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A call under the connection's Kerberos context: its arguments signed or wrapped whole
    /// (as the Linux client does, no payload travels apart from them), the reply checked.
    #[allow(clippy::too_many_arguments)]
    async fn call_gss(
        &self,
        g: &Mutex<GssClient<gss::Krb5Initiator>>,
        xid: u32,
        prog: u32,
        vers: u32,
        proc_: u32,
        expect: Expect,
        args: impl FnOnce(&mut Encoder),
    ) -> Result<Bytes, RpcError> {
        let mut a = Encoder::with_capacity(256);
        args(&mut a);
        let a = a.finish().to_bytes();
        let call = g.lock().call(xid, prog, vers, proc_, &a);
        let reply = self.send_raw(xid, call.msg.clone(), expect).await?;
        g.lock()
            .reply(&call, reply)
            .map_err(|e| RpcError::Garbage(format!("RPCSEC_GSS reply: {e}")))
    }

    /// Sends a whole call message and returns the whole reply message.
    async fn send_raw(&self, xid: u32, msg: Bytes, expect: Expect) -> Result<Bytes, RpcError> {
        let (tx, waiters) = match &self.link {
            Link::Tcp { tx, waiters, .. } => (tx, waiters),
            Link::Rdma(r) => {
                let msg = xdr::Reply {
                    segments: vec![Segment::Inline(msg)],
                };
                self.tx_bytes
                    .fetch_add(msg.wire_len() as u64, Ordering::Relaxed);
                return r.call(xid, msg, expect, self.timeout).await;
            }
        };
        let mark = Bytes::copy_from_slice(&(LAST_FRAGMENT | msg.len() as u32).to_be_bytes());
        let len = msg.len() + 4;
        self.exchange(tx, waiters, xid, vec![mark, msg], len).await
    }
}

/// A Kerberos context with the server at `addr`, established over a TCP connection of its own
/// (contexts are the server's, not the connection's: the one calls are made on may be RDMA).
async fn establish(
    addr: SocketAddr,
    k: Krb5,
    timeout: Duration,
) -> io::Result<GssClient<gss::Krb5Initiator>> {
    tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr)?;
        s.set_read_timeout(Some(timeout))?;
        let init = gss::Krb5Initiator::new(None, &k.target)
            .map_err(|e| io::Error::other(format!("Kerberos credentials: {e}")))?;
        let mut rpc = |m: Bytes| -> io::Result<Bytes> {
            s.write_all(&(LAST_FRAGMENT | m.len() as u32).to_be_bytes())?;
            s.write_all(&m)?;
            let mut h = [0u8; 4];
            s.read_exact(&mut h)?;
            let len = (u32::from_be_bytes(h) & !LAST_FRAGMENT) as usize;
            if len > 1 << 20 {
                return Err(io::Error::other("INIT reply too large"));
            }
            let mut v = vec![0u8; len];
            s.read_exact(&mut v)?;
            Ok(Bytes::from(v))
        };
        GssClient::establish(init, k.service, NFS_PROGRAM, 3, &mut rpc)
            .map_err(|e| io::Error::other(format!("RPCSEC_GSS context: {e}")))
    })
    .await
    .map_err(io::Error::other)?
}

/// The NFS program number, whose NULL procedure creates contexts.
const NFS_PROGRAM: u32 = 100003;

fn forget(waiters: &Mutex<Option<Waiters>>, xid: u32) {
    if let Some(m) = waiters.lock().as_mut() {
        m.remove(&xid);
    }
}

/// An RPC call header from its xid on (RFC 5531), then the arguments `args` writes.
fn encode_call(
    e: &mut Encoder,
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    auth: &[u8],
    args: impl FnOnce(&mut Encoder),
) {
    e.u32(xid);
    e.u32(sunrpc::msg::CALL);
    e.u32(sunrpc::msg::RPC_VERS);
    e.u32(prog);
    e.u32(vers);
    e.u32(proc_);
    e.opaque_fixed(auth);
    args(e);
}

/// The AUTH_SYS credential `cred` and an AUTH_NONE verifier, encoded once per connection.
fn auth_sys(cred: &Cred) -> Bytes {
    let mut e = Encoder::with_capacity(128);
    let mut body = Encoder::with_capacity(64);
    AuthSys {
        stamp: std::process::id(),
        machine: Bytes::from_static(b"rnfs-bench"),
        uid: cred.uid,
        gid: cred.gid,
        gids: vec![cred.gid],
    }
    .encode(&mut body);
    e.u32(sunrpc::msg::flavor::SYS);
    e.opaque(&body.finish().to_bytes());
    e.u32(sunrpc::msg::flavor::NONE);
    e.u32(0);
    e.finish().to_bytes()
}

/// A first xid that differs between runs, so that a server's DRC never mixes runs.
fn xid_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(1)
}

/// Checks the reply header and returns the result bytes of an executed call.
fn parse_reply(rec: Bytes) -> Result<Bytes, RpcError> {
    let mut d = Decoder::new(rec);
    let _xid = d.u32()?;
    if d.u32()? != sunrpc::msg::REPLY {
        return Err(RpcError::Garbage("not a reply".into()));
    }
    match d.u32()? {
        0 => {
            let _flavor = d.u32()?;
            d.opaque(400)?;
            match d.u32()? {
                0 => Ok(d.into_rest()),
                s => Err(RpcError::NotAccepted(s)),
            }
        }
        _ => {
            let r = d.u32()?;
            let s = d.u32().unwrap_or(0);
            Err(RpcError::Denied(r, s))
        }
    }
}

fn fail_all(w: &Mutex<Option<Waiters>>, e: RpcError) {
    if let Some(m) = w.lock().take() {
        for (_, tx) in m {
            let _ = tx.send(Err(e.clone()));
        }
    }
}

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::UnboundedReceiver<Vec<Bytes>>,
) -> io::Result<()> {
    let mut q: VecDeque<Bytes> = VecDeque::new();
    while let Some(first) = rx.recv().await {
        q.extend(first);
        let mut n = 1;
        while n < MAX_BATCH {
            match rx.try_recv() {
                Ok(more) => {
                    q.extend(more);
                    n += 1;
                }
                Err(_) => break,
            }
        }
        while !q.is_empty() {
            let written = {
                let slices: Vec<IoSlice<'_>> =
                    q.iter().take(256).map(|b| IoSlice::new(b)).collect();
                wr.write_vectored(&slices).await?
            };
            if written == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            let mut left = written;
            while left > 0 {
                let front = q.front_mut().expect("wrote more than queued");
                if front.len() <= left {
                    left -= front.len();
                    q.pop_front();
                } else {
                    bytes::Buf::advance(front, left);
                    left = 0;
                }
            }
        }
    }
    wr.shutdown().await
}

/// Replies of at least this many bytes (READs) are received into pooled buffers.
const POOLED_REPLY: usize = sunrpc::bufpool::MIN_POOLED;

/// Bytes read from the socket at once into the shared buffer: a large reply's head, not all of
/// it, so that the rest goes straight into a pooled buffer.
const READ_CHUNK: usize = 64 * 1024;

/// Hands the reply `rec` to the call waiting on its xid; an error ends the connection.
fn deliver(rec: Bytes, waiters: &Mutex<Option<Waiters>>) -> Result<(), String> {
    if rec.len() < 4 {
        return Err("reply shorter than an xid".into());
    }
    let xid = u32::from_be_bytes([rec[0], rec[1], rec[2], rec[3]]);
    let tx = waiters.lock().as_mut().and_then(|m| m.remove(&xid));
    if let Some(tx) = tx {
        let _ = tx.send(Ok(rec));
    }
    Ok(())
}

/// Splits the reply stream into records. Large replies (READ data) are received into buffers
/// of a pool that get reused once the caller drops the reply: fresh 1 MiB buffers page-fault
/// in for every reply and made the client, not the server, the limit of a sequential read.
async fn read_loop(
    mut rd: OwnedReadHalf,
    waiters: &Mutex<Option<Waiters>>,
    rx_bytes: &AtomicU64,
) -> String {
    use bytes::BufMut;
    use sunrpc::dispatch::BulkAlloc;
    let mut rr = RecordReader::new(MAX_REPLY);
    let pool = sunrpc::bufpool::BufPool::new(MAX_REPLY, 16);
    let mut buf = BytesMut::with_capacity(256 * 1024);
    loop {
        let pooled = rr
            .large_single(&buf, POOLED_REPLY)
            .and_then(|len| Some((len, pool.alloc(len)?)));
        if let Some((len, mut big)) = pooled {
            let have = buf.len() - 4;
            big.as_mut_slice()[..have].copy_from_slice(&buf[4..]);
            buf.clear();
            if let Err(e) = rd.read_exact(&mut big.as_mut_slice()[have..len]).await {
                return e.to_string();
            }
            rx_bytes.fetch_add((len - have) as u64, Ordering::Relaxed);
            if let Err(e) = deliver(big.freeze(len), waiters) {
                return e;
            }
            continue;
        }
        match rr.next_record(&mut buf) {
            Err(e) => return e.to_string(),
            Ok(Some(rec)) => {
                if let Err(e) = deliver(rec, waiters) {
                    return e;
                }
                continue;
            }
            Ok(None) => {}
        }
        let want = rr.wanted(&buf).max(READ_CHUNK);
        if buf.capacity() - buf.len() < want {
            buf.reserve(want);
        }
        match rd.read_buf(&mut (&mut buf).limit(READ_CHUNK)).await {
            Ok(0) => return "closed by the server".into(),
            Ok(n) => {
                rx_bytes.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) => return e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A server that answers each call with `proc_` bytes of a pattern, the reply cut into
    /// fragments of at most `frag` bytes (the call's version), in the order the calls came.
    async fn pattern_server(l: TcpListener) {
        let (mut s, _) = l.accept().await.expect("accept");
        let mut rr = RecordReader::new(1 << 20);
        let mut buf = BytesMut::new();
        loop {
            let rec = match rr.next_record(&mut buf).expect("a call record") {
                Some(r) => r,
                None => {
                    if s.read_buf(&mut buf).await.expect("read") == 0 {
                        return;
                    }
                    continue;
                }
            };
            let word = |i: usize| u32::from_be_bytes(rec[i..i + 4].try_into().expect("4 bytes"));
            let (xid, frag, len) = (word(0), word(16) as usize, word(20) as usize);
            let mut body = Vec::new();
            for w in [xid, sunrpc::msg::REPLY, 0, 0, 0, 0] {
                body.extend_from_slice(&w.to_be_bytes());
            }
            body.extend((0..len).map(|i| (i % 251) as u8));
            let mut out = Vec::new();
            let mut chunks = body.chunks(frag).peekable();
            while let Some(c) = chunks.next() {
                let last = if chunks.peek().is_none() {
                    LAST_FRAGMENT
                } else {
                    0
                };
                out.extend_from_slice(&(last | c.len() as u32).to_be_bytes());
                out.extend_from_slice(c);
            }
            s.write_all(&out).await.expect("write");
        }
    }

    #[tokio::test]
    async fn replies_of_every_size_and_fragmentation_arrive_whole() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        tokio::spawn(pattern_server(l));
        let cred = Cred {
            uid: 1,
            gid: 1,
            krb5: None,
        };
        let c = Arc::new(
            RpcConn::connect(addr, cred, Duration::from_secs(10))
                .await
                .expect("connect"),
        );
        // (largest fragment, result bytes): small replies, large single-fragment replies
        // (received into pooled buffers, reused), and large replies in several fragments
        let cases = [
            (1 << 20, 0),
            (1 << 20, 100),
            (1 << 20, POOLED_REPLY - 30),
            (1 << 20, POOLED_REPLY),
            (1 << 20, 1 << 20),
            (1 << 20, 1 << 20),
            (64 * 1024, 300 * 1024),
            (4096, 100_000),
            (1 << 20, 5),
        ];
        for round in 0..3 {
            // in flight at once, so replies share the reader's buffer
            let calls: Vec<_> = cases
                .iter()
                .map(|&(frag, len)| {
                    let c = c.clone();
                    tokio::spawn(async move { c.call(1, frag as u32, len as u32, |_| {}).await })
                })
                .collect();
            for ((_, len), call) in cases.iter().zip(calls) {
                let data = call.await.expect("task").expect("reply");
                assert_eq!(data.len(), *len, "round {round}");
                assert!(
                    data.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8),
                    "round {round}: {len} bytes intact"
                );
            }
        }
    }
}
