//! RPC over TCP (and UDP for the port mapper).
//!
//! Each connection has a reader that splits records and starts one blocking task per call, so
//! many calls run at once and replies leave in completion order, and a writer that sends each
//! reply's segments with one vectored write. Bounded channels give backpressure: a client that
//! stops reading its replies stops being read from.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{mpsc, Semaphore};
use xdr::{Reply, Segment};

use crate::dispatch::{BackChannel, Dispatcher, TransportKind};

/// Calls to the client on a TCP connection share the reply queue with ordinary replies.
/// It holds the queue weakly, so a session that outlives its connection does not keep the
/// connection's writer (and socket) alive.
struct TcpBackChannel {
    tx: mpsc::WeakSender<Reply>,
}

impl BackChannel for TcpBackChannel {
    fn send_call(&self, msg: Reply) -> bool {
        self.tx.upgrade().is_some_and(|tx| tx.try_send(msg).is_ok())
    }
}
use crate::record::{record_header, RecordReader};

/// Limits of the TCP transport.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// Largest record accepted from a client (a WRITE of the maximum size plus headers).
    pub max_record: usize,
    /// Connections served at once; more are closed on accept.
    pub max_connections: usize,
    /// Calls executing at once per connection; the connection is not read while at the limit.
    pub max_in_flight: usize,
    /// Calls executing at once over all connections of the listener, which bounds the memory
    /// held by calls (each up to `max_record` bytes).
    pub max_total_in_flight: usize,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            max_record: (1 << 20) + 64 * 1024,
            max_connections: 4096,
            max_in_flight: 128,
            max_total_in_flight: 1024,
        }
    }
}

/// Accepts connections on `listener` forever, serving each with `disp`.
pub async fn serve_tcp(
    listener: TcpListener,
    disp: Arc<Dispatcher>,
    cfg: TcpConfig,
) -> io::Result<()> {
    let conns = Arc::new(Semaphore::new(cfg.max_connections));
    let total = Arc::new(Semaphore::new(cfg.max_total_in_flight.max(1)));
    let gauge = disp.metrics().gauge("tcp_connections");
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors and similar: keep serving the others.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            tracing::warn!(%peer, limit = cfg.max_connections, "connection limit reached, closing");
            disp.metrics().count_error("tcp_connection_refused");
            continue;
        };
        let _ = sock.set_nodelay(true);
        let disp = disp.clone();
        let cfg = cfg.clone();
        let gauge = gauge.clone();
        let total = total.clone();
        gauge.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            if let Err(e) = serve_connection(sock, peer, disp, cfg, total).await {
                tracing::debug!(%peer, error = %e, "connection closed");
            }
            gauge.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
    }
}

async fn serve_connection(
    sock: TcpStream,
    peer: SocketAddr,
    disp: Arc<Dispatcher>,
    cfg: TcpConfig,
    total: Arc<Semaphore>,
) -> io::Result<()> {
    let (mut rd, wr) = sock.into_split();
    let (tx, rx) = mpsc::channel::<Reply>(cfg.max_in_flight.max(1));
    let writer = tokio::spawn(write_replies(wr, rx));
    let in_flight = Arc::new(Semaphore::new(cfg.max_in_flight.max(1)));
    let back: Arc<dyn BackChannel> = Arc::new(TcpBackChannel { tx: tx.downgrade() });
    let mut rr = RecordReader::new(cfg.max_record);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let result = loop {
        let rec = match rr.next_record(&mut buf) {
            Ok(Some(r)) => r,
            Ok(None) => {
                let want = rr.wanted(&buf).max(4096);
                buf.reserve(want.max(64 * 1024));
                match rd.read_buf(&mut buf).await {
                    Ok(0) => break Ok(()),
                    Ok(_) => continue,
                    Err(e) => break Err(e),
                }
            }
            Err(e) => {
                tracing::warn!(%peer, error = %e, "bad record, closing connection");
                disp.metrics().count_error("tcp_bad_record");
                break Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        };
        // Replies to our back-channel calls: nothing waits for them.
        if rec.len() >= 8 && rec[4..8] == [0, 0, 0, 1] {
            disp.metrics().count_error("backchannel_reply");
            continue;
        }
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            break Ok(());
        };
        let Ok(global) = total.clone().acquire_owned().await else {
            break Ok(());
        };
        let disp = disp.clone();
        let tx = tx.clone();
        let back = back.clone();
        // The call runs on a blocking thread; queueing its reply waits asynchronously, so a
        // client that stops reading holds its own permits, not a thread or the global ones.
        let work = tokio::task::spawn_blocking(move || {
            let reply = disp.dispatch_with(rec, peer, TransportKind::Tcp, Some(back));
            drop(global);
            reply
        });
        tokio::spawn(async move {
            if let Ok(Some(reply)) = work.await {
                let _ = tx.send(reply).await;
            }
            drop(permit);
        });
    };
    drop(tx);
    let _ = writer.await;
    result
}

static ZEROS: [u8; 4] = [0; 4];

async fn write_replies(
    mut wr: tokio::net::tcp::OwnedWriteHalf,
    mut rx: mpsc::Receiver<Reply>,
) -> io::Result<()> {
    let mut batch: Vec<Reply> = Vec::with_capacity(16);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < 16 {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let headers: Vec<[u8; 4]> = batch.iter().map(|r| record_header(r.wire_len())).collect();
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(batch.len() * 4);
        for (r, h) in batch.iter().zip(headers.iter()) {
            slices.push(IoSlice::new(h));
            for s in &r.segments {
                slices.push(IoSlice::new(s.bytes()));
                if let Segment::Bulk(b) = s {
                    let pad = xdr::pad4(b.len()) - b.len();
                    if pad > 0 {
                        slices.push(IoSlice::new(&ZEROS[..pad]));
                    }
                }
            }
        }
        write_all_vectored(&mut wr, &mut slices).await?;
        drop(slices);
        batch.clear();
    }
    wr.shutdown().await
}

async fn write_all_vectored(
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
    mut slices: &mut [IoSlice<'_>],
) -> io::Result<()> {
    while !slices.is_empty() {
        let n = wr.write_vectored(slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// Serves RPC over UDP on `sock` (each datagram one call), for the port mapper.
pub async fn serve_udp(sock: UdpSocket, disp: Arc<Dispatcher>) -> io::Result<()> {
    let sock = Arc::new(sock);
    let mut buf = vec![0u8; 65536];
    loop {
        let (n, peer) = sock.recv_from(&mut buf).await?;
        let msg = bytes::Bytes::copy_from_slice(&buf[..n]);
        let disp = disp.clone();
        let sock = sock.clone();
        tokio::spawn(async move {
            let reply =
                tokio::task::spawn_blocking(move || disp.dispatch(msg, peer, TransportKind::Udp))
                    .await;
            if let Ok(Some(r)) = reply {
                let _ = sock.send_to(&r.to_bytes(), peer).await;
            }
        });
    }
}
