//! A connection this server opens to a client's callback service: NFSv4.0 has no back channel
//! on the client's own connection, the client names an address in SETCLIENTID and the server
//! calls it there (RFC 7530 section 3.3.3). Calls go out in order on one TCP connection, made
//! from a reserved port as the kernel's RPC client makes it; replies go to
//! [`crate::callback::deliver`] under the connection's id, as those of the NFSv4.1 back channel
//! do, so callers wait for them the same way. The connection is not made again once it fails:
//! the caller learns it from [`BackChannel::send_call`] and decides (NFSv4.0: the callback path
//! is down until the client's next SETCLIENTID).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use xdr::Reply;

use crate::callback;
use crate::dispatch::BackChannel;
use crate::record::{record_header, RecordReader};

/// Calls queued before the connection takes no more (a client that does not read).
const QUEUE: usize = 64;

/// Largest reply taken from a client's callback service (CB_GETATTR's is the largest, a few
/// hundred bytes).
const MAX_REPLY: usize = 64 * 1024;

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
        let rt = tokio::runtime::Handle::try_current().ok()?;
        let (tx, rx) = mpsc::channel(QUEUE);
        let id = callback::next_conn_id();
        let closed = Arc::new(AtomicBool::new(false));
        rt.spawn(run(addr, connect_timeout, rx, id, closed.clone()));
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
    let (mut r, mut w) = stream.into_split();
    let reader = async move {
        let mut records = RecordReader::new(MAX_REPLY);
        let mut buf = BytesMut::with_capacity(4096);
        loop {
            match records.next_record(&mut buf) {
                Ok(Some(msg)) => {
                    callback::deliver(id, msg);
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
            let body = msg.to_bytes();
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
