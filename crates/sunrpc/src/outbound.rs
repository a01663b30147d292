//! A connection this server opens to a client's callback service: NFSv4.0 has no back channel
//! on the client's own connection, the client names an address in SETCLIENTID and the server
//! calls it there (RFC 7530 section 3.3.3). Calls go out in order on one TCP connection, made
//! from a reserved port as the kernel's RPC client makes it; replies go to
//! [`crate::callback::deliver`] under the connection's id, as those of the NFSv4.1 back channel
//! do, so callers wait for them the same way. The connection is not made again once it fails:
//! the caller learns it from [`BackChannel::send_call`] and decides (NFSv4.0: the callback path
//! is down until the client's next SETCLIENTID).
//!
//! A connection may carry its calls under RPCSEC_GSS ([`GssSetup`]): the context is made on
//! the connection before the first call, on a thread that may block (the initiator reads a
//! keytab and reaches the KDC), and callers keep building plain calls and reading plain
//! replies: each call is sealed on its way out and each reply checked and unsealed on its way
//! in, here.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use xdr::Reply;

use crate::callback;
use crate::dispatch::BackChannel;
use crate::gss::client::{ClientError, GssCall, GssClient, Initiator, Initiators};
use crate::gss::wire::GssService;
use crate::msg::{self, AcceptStat};
use crate::record::{record_header, RecordReader};

/// Calls queued before the connection takes no more (a client that does not read).
const QUEUE: usize = 64;

/// Largest reply taken from a client's callback service (CB_GETATTR's is the largest, a few
/// hundred bytes).
const MAX_REPLY: usize = 64 * 1024;

/// Calls under RPCSEC_GSS whose replies are awaited: older ones are forgotten (their replies,
/// if they ever come, are dropped).
const PENDING: usize = 256;

/// What puts a connection's calls under an RPCSEC_GSS context this side initiates (NFSv4.0
/// callbacks to a client that introduced itself under Kerberos, as knfsd makes them).
pub struct GssSetup {
    /// Where the context comes from.
    pub initiators: Arc<dyn Initiators>,
    /// The principal of the service called (`nfs/client.example.com@REALM`).
    pub target: Arc<str>,
    /// The principal this side calls as (None: its default).
    pub own: Option<Arc<str>>,
    /// The protection of every call.
    pub service: GssService,
    /// The program whose NULL procedure carries context creation.
    pub program: u32,
    /// Its version.
    pub version: u32,
}

/// An established context and the sequence numbers of the calls awaiting replies.
struct Sealer {
    client: GssClient<Box<dyn Initiator>>,
    pending: std::collections::VecDeque<(u32, u32)>,
}

impl Sealer {
    /// The call `plain` (any credential) under the context; None for one that is not a call.
    fn seal(&mut self, plain: Bytes) -> Option<Bytes> {
        let (h, args) = msg::decode_call(plain).ok()?;
        let call = self
            .client
            .call(h.xid, h.prog, h.vers, h.proc_, &args.into_rest());
        if self.pending.len() >= PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back((h.xid, call.seq));
        Some(call.msg)
    }

    /// The plain reply for sealed reply `reply`: Ok when the context still serves (a reply
    /// that executed, or one of an accept_stat other than SUCCESS), Err when it does not
    /// (denied, or a verifier or seal that does not check out): the caller delivers the plain
    /// failure and drops the connection. None for a reply to no call awaited.
    fn open(&mut self, reply: Bytes) -> Option<Result<Bytes, Bytes>> {
        let xid = u32::from_be_bytes(reply.get(..4)?.try_into().ok()?);
        let at = self.pending.iter().position(|&(x, _)| x == xid)?;
        let (_, seq) = self.pending.remove(at)?;
        let call = GssCall {
            msg: Bytes::new(),
            seq,
        };
        let mut e = xdr::Encoder::with_capacity(64);
        Some(match self.client.reply(&call, reply) {
            Ok(results) => {
                msg::encode_accepted(&mut e, xid, AcceptStat::Success);
                e.opaque_fixed(&results);
                Ok(e.finish().to_bytes())
            }
            Err(ClientError::NotExecuted(stat)) => {
                e.u32(xid);
                e.u32(msg::REPLY);
                e.u32(0);
                e.u32(msg::flavor::NONE);
                e.u32(0);
                e.u32(stat);
                Ok(e.finish().to_bytes())
            }
            Err(why) => {
                tracing::debug!(error = %why, "RPCSEC_GSS reply on an outbound connection");
                msg::encode_accepted(&mut e, xid, AcceptStat::SystemErr);
                Err(e.finish().to_bytes())
            }
        })
    }
}

/// Reads one record from a blocking stream.
fn read_record_blocking(s: &mut std::net::TcpStream) -> std::io::Result<Bytes> {
    use std::io::Read;
    let mut records = RecordReader::new(MAX_REPLY);
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        match records.next_record(&mut buf) {
            Ok(Some(m)) => return Ok(m),
            Ok(None) => {}
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
        let want = records.wanted(&buf).max(4);
        let at = buf.len();
        buf.resize(at + want, 0);
        let n = s.read(&mut buf[at..])?;
        buf.truncate(at + n);
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
}

/// Makes the context of `setup` over `s` (blocking, within `limit` per exchange).
fn establish(
    s: &mut std::net::TcpStream,
    setup: &GssSetup,
    limit: Duration,
) -> Result<Sealer, String> {
    use std::io::Write;
    s.set_nonblocking(false).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(limit)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(limit))
        .map_err(|e| e.to_string())?;
    let init = setup
        .initiators
        .initiator(setup.own.as_deref(), &setup.target)
        .map_err(|e| e.to_string())?;
    let mut rpc = |m: Bytes| {
        s.write_all(&record_header(m.len()))?;
        s.write_all(&m)?;
        read_record_blocking(s)
    };
    let client = GssClient::establish(init, setup.service, setup.program, setup.version, &mut rpc)
        .map_err(|e| e.to_string())?;
    s.set_read_timeout(None).map_err(|e| e.to_string())?;
    s.set_write_timeout(None).map_err(|e| e.to_string())?;
    s.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(Sealer {
        client,
        pending: Default::default(),
    })
}

/// An outgoing connection to a client's callback service.
pub struct Outbound {
    tx: mpsc::Sender<Reply>,
    id: u64,
    closed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Outbound(conn {}, closed {})", self.id, self.is_closed())
    }
}

impl Outbound {
    /// Starts connecting to `addr` on the runtime the caller runs in (the transports' runtime:
    /// calls are served on its threads); None outside one. Calls sent before the connection is
    /// up wait for it; one not made within `connect_timeout` closes the channel.
    pub fn connect(addr: SocketAddr, connect_timeout: Duration) -> Option<Arc<Outbound>> {
        Self::connect_with(addr, connect_timeout, None)
    }

    /// As [`Outbound::connect`], the calls going under the RPCSEC_GSS context of `gss` when
    /// given: one that cannot be made (within `connect_timeout` per exchange) closes the
    /// channel.
    pub fn connect_with(
        addr: SocketAddr,
        connect_timeout: Duration,
        gss: Option<GssSetup>,
    ) -> Option<Arc<Outbound>> {
        let rt = tokio::runtime::Handle::try_current().ok()?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let id = callback::next_conn_id();
        let closed = Arc::new(AtomicBool::new(false));
        rt.spawn(run(addr, connect_timeout, gss, rx, id, closed.clone()));
        Some(Arc::new(Outbound { tx, id, closed }))
    }

    /// Whether the connection failed or ended: no call sent on it will be answered.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.tx.is_closed()
    }
}

impl BackChannel for Outbound {
    fn send_call(&self, msg: Reply) -> bool {
        !self.is_closed() && self.tx.try_send(msg).is_ok()
    }

    fn id(&self) -> u64 {
        self.id
    }
}

async fn run(
    addr: SocketAddr,
    connect_timeout: Duration,
    gss: Option<GssSetup>,
    mut rx: mpsc::Receiver<Reply>,
    id: u64,
    closed: Arc<AtomicBool>,
) {
    let stream = match tokio::time::timeout(
        connect_timeout,
        crate::client::tcp_connect(addr, None, true),
    )
    .await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%addr, error = %e, "callback connection refused");
            closed.store(true, Ordering::Release);
            return;
        }
        Err(_) => {
            tracing::debug!(%addr, "callback connection timed out");
            closed.store(true, Ordering::Release);
            return;
        }
    };
    let _ = stream.set_nodelay(true);
    let (stream, sealer) = match gss {
        None => (stream, None),
        Some(setup) => {
            let made = match stream.into_std() {
                Ok(mut s) => tokio::task::spawn_blocking(move || {
                    establish(&mut s, &setup, connect_timeout).map(|c| (s, c))
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string())),
                Err(e) => Err(e.to_string()),
            };
            match made.and_then(|(s, c)| {
                tokio::net::TcpStream::from_std(s)
                    .map(|s| (s, c))
                    .map_err(|e| e.to_string())
            }) {
                Ok((s, c)) => (s, Some(Arc::new(parking_lot::Mutex::new(c)))),
                Err(e) => {
                    tracing::info!(%addr, error = %e, "no RPCSEC_GSS context with a callback service");
                    closed.store(true, Ordering::Release);
                    return;
                }
            }
        }
    };
    let (mut r, mut w) = stream.into_split();
    let opener = sealer.clone();
    let reader = async move {
        let mut records = RecordReader::new(MAX_REPLY);
        let mut buf = BytesMut::with_capacity(4096);
        loop {
            match records.next_record(&mut buf) {
                Ok(Some(msg)) => {
                    let Some(o) = &opener else {
                        callback::deliver(id, msg);
                        continue;
                    };
                    let opened = o.lock().open(msg);
                    match opened {
                        Some(Ok(plain)) => {
                            callback::deliver(id, plain);
                        }
                        Some(Err(failed)) => {
                            callback::deliver(id, failed);
                            return;
                        }
                        None => {}
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(%addr, error = %e, "bad record from a callback service");
                    return;
                }
            }
            buf.reserve(records.wanted(&buf).max(512));
            match r.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    let writer = async move {
        while let Some(msg) = rx.recv().await {
            let body = match &sealer {
                None => msg.to_bytes(),
                Some(c) => match c.lock().seal(msg.to_bytes()) {
                    Some(b) => b,
                    None => continue,
                },
            };
            if w.write_all(&record_header(body.len())).await.is_err()
                || w.write_all(&body).await.is_err()
            {
                return;
            }
        }
        // every sender is gone: the channel is no longer wanted
        let _ = w.shutdown().await;
    };
    tokio::select! {
        _ = reader => {}
        _ = writer => {}
    }
    closed.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gss::mech::GssError;
    use tokio::net::TcpListener;

    fn call(xid: u32) -> Reply {
        let mut e = xdr::Encoder::with_capacity(64);
        crate::msg::encode_call(&mut e, xid, 0x4000_0000, 1, 0, &crate::Credential::None);
        e.finish()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_go_out_in_records_and_replies_reach_their_waiters() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let out = Outbound::connect(addr, Duration::from_secs(5)).unwrap();
        let xid = callback::next_xid();
        let waiter = callback::expect(out.id(), xid);
        assert!(out.send_call(call(xid)));
        let (mut s, _) = l.accept().await.unwrap();
        let mut hdr = [0u8; 4];
        s.read_exact(&mut hdr).await.unwrap();
        let len = (u32::from_be_bytes(hdr) & 0x7fff_ffff) as usize;
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).await.unwrap();
        assert_eq!(body[..4], xid.to_be_bytes());
        // a reply in two fragments
        let reply = [xid.to_be_bytes(), 1u32.to_be_bytes(), 0u32.to_be_bytes()].concat();
        s.write_all(&4u32.to_be_bytes()).await.unwrap();
        s.write_all(&reply[..4]).await.unwrap();
        s.write_all(&(0x8000_0000u32 | 8).to_be_bytes())
            .await
            .unwrap();
        s.write_all(&reply[4..]).await.unwrap();
        let got = tokio::task::spawn_blocking(move || waiter.wait(Duration::from_secs(5)))
            .await
            .unwrap();
        assert_eq!(got.as_deref(), Some(&reply[..]));
        drop(s);
        for _ in 0..100 {
            if out.is_closed() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(out.is_closed(), "the client's close is not seen");
        assert!(!out.send_call(call(callback::next_xid())));
    }

    /// A stand-in mechanism: its "MIC" of a message is the message reversed.
    struct Mirror;

    impl Initiator for Mirror {
        fn step(&mut self, token: Option<&[u8]>) -> Result<(Vec<u8>, bool), GssError> {
            Ok((vec![1, 2, 3, 4], token.is_some()))
        }
        fn get_mic(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
            Ok(msg.iter().rev().copied().collect())
        }
        fn verify_mic(&mut self, msg: &[u8], mic: &[u8]) -> Result<(), GssError> {
            match msg.iter().rev().eq(mic.iter()) {
                true => Ok(()),
                false => Err(GssError::FAILURE),
            }
        }
        fn wrap(&mut self, msg: &[u8]) -> Result<Vec<u8>, GssError> {
            Ok(msg.to_vec())
        }
        fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, GssError> {
            Ok(token.to_vec())
        }
    }

    /// An accepted reply to `xid` with RPCSEC_GSS verifier `verf`, status `stat`, and `body`.
    fn gss_reply(xid: u32, verf: &[u8], stat: u32, body: &[u8]) -> Bytes {
        let mut e = xdr::Encoder::new();
        for w in [xid, msg::REPLY, 0, msg::flavor::RPCSEC_GSS] {
            e.u32(w);
        }
        e.opaque(verf);
        e.u32(stat);
        e.opaque_fixed(body);
        e.finish().to_bytes()
    }

    #[test]
    fn sealed_replies_are_checked_before_they_are_delivered() {
        use crate::gss::wire::{seq_bytes, InitRes};
        let window = 8u32;
        let mut rpc = |_call: Bytes| {
            let mut e = xdr::Encoder::new();
            InitRes {
                handle: Bytes::from_static(b"ctx1"),
                major: 0,
                minor: 0,
                seq_window: window,
                token: Bytes::from_static(b"ok"),
            }
            .encode(&mut e);
            let mic: Vec<u8> = seq_bytes(window).iter().rev().copied().collect();
            Ok(gss_reply(1, &mic, 0, &e.finish().to_bytes()))
        };
        let init: Box<dyn Initiator> = Box::new(Mirror);
        let client =
            GssClient::establish(init, GssService::None, 0x4000_0000, 1, &mut rpc).unwrap();
        let mut s = Sealer {
            client,
            pending: Default::default(),
        };
        let sealed = s.seal(call(70).to_bytes()).expect("a call");
        let (h, _) = msg::decode_call(sealed).unwrap();
        let seq = h.gss.expect("an RPCSEC_GSS credential").cred.seq;
        let good: Vec<u8> = seq_bytes(seq).iter().rev().copied().collect();
        // a reply to no call awaited is dropped
        assert!(s.open(gss_reply(71, &good, 0, b"")).is_none());
        // a checked reply comes out plain, with its results
        let plain = s
            .open(gss_reply(70, &good, 0, &[0, 0, 0, 9]))
            .unwrap()
            .unwrap();
        let mut d = msg::decode_success(plain).expect("a plain SUCCESS");
        assert_eq!(d.u32().unwrap(), 9);
        // a verifier that does not check out: a failure, and the connection is to go
        s.seal(call(72).to_bytes()).unwrap();
        let failed = s
            .open(gss_reply(72, b"forged!!", 0, b""))
            .unwrap()
            .unwrap_err();
        assert!(msg::decode_success(failed).is_none());
        // a call the service did not execute is no reason to drop it
        s.seal(call(73).to_bytes()).unwrap();
        let refused = s.open(gss_reply(73, b"", AcceptStat::GarbageArgs as u32, b""));
        assert!(msg::decode_success(refused.unwrap().unwrap()).is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_that_cannot_be_made_closes_the_channel() {
        // a port nothing listens on
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        let out = Outbound::connect(addr, Duration::from_secs(5)).unwrap();
        for _ in 0..100 {
            if out.is_closed() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(out.is_closed());
    }
}
