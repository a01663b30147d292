//! RPC over TCP (and UDP for the port mapper).
//!
//! Each connection has a reader that splits records and starts one blocking task per call, so
//! many calls run at once and replies leave in completion order, and a writer that sends each
//! reply's segments with one vectored write. Bounded channels give backpressure: a client that
//! stops reading its replies stops being read from.
//!
//! What one connection can hold is bounded by configuration: `max_in_flight` calls, from the
//! record's arrival until its reply is written, each at most `max_record` bytes in and one reply
//! out; and no new call is read while more than `max_queued_reply_bytes` of replies wait for the
//! socket. A client that stalls mid-record for `record_timeout`, or does not take replies for
//! `write_timeout`, is disconnected, which frees all of it.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{mpsc, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use xdr::{Reply, Segment};

use crate::dispatch::{BackChannel, Dispatcher, TransportKind};

/// Calls to the client on a TCP connection share the reply queue with ordinary replies.
/// It holds the queue weakly, so a session that outlives its connection does not keep the
/// connection's writer (and socket) alive.
struct TcpBackChannel {
    tx: mpsc::WeakSender<Queued>,
}

impl BackChannel for TcpBackChannel {
    fn send_call(&self, msg: Reply) -> bool {
        self.tx
            .upgrade()
            .is_some_and(|tx| tx.try_send((msg, None)).is_ok())
    }
}

/// A message for the writer, with the in-flight permit of its call (released once written).
type Queued = (Reply, Option<OwnedSemaphorePermit>);

/// Reply bytes of one connection waiting for the socket; the reader waits while over the limit.
#[derive(Default)]
struct Backlog {
    bytes: AtomicUsize,
    drained: Notify,
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
    /// Reply bytes queued per connection above which no new call is read from it.
    pub max_queued_reply_bytes: usize,
    /// A record begun but not completed within this time closes the connection (slowloris).
    pub record_timeout: Duration,
    /// A socket that accepts no reply bytes for this long closes the connection.
    pub write_timeout: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            max_record: (1 << 20) + 64 * 1024,
            max_connections: 4096,
            max_in_flight: 128,
            max_total_in_flight: 1024,
            max_queued_reply_bytes: 16 << 20,
            record_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(60),
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
    let (tx, rx) = mpsc::channel::<Queued>(cfg.max_in_flight.max(1));
    let backlog = Arc::new(Backlog::default());
    let writer = tokio::spawn(write_replies(wr, rx, cfg.write_timeout, backlog.clone()));
    let in_flight = Arc::new(Semaphore::new(cfg.max_in_flight.max(1)));
    let back: Arc<dyn BackChannel> = Arc::new(TcpBackChannel { tx: tx.downgrade() });
    let mut rr = RecordReader::new(cfg.max_record);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    // When the record being received began (None between records: idle is allowed).
    let mut record_start: Option<Instant> = None;
    let result = 'conn: loop {
        let rec = match rr.next_record(&mut buf) {
            Ok(Some(r)) => r,
            Ok(None) => {
                let want = rr.wanted(&buf).max(4096);
                buf.reserve(want.max(64 * 1024));
                let deadline = if rr.mid_record(&buf) {
                    *record_start.get_or_insert_with(Instant::now) + cfg.record_timeout
                } else {
                    record_start = None;
                    // idle between records: no limit (far enough never to fire)
                    Instant::now() + Duration::from_secs(365 * 24 * 3600)
                };
                tokio::select! {
                    r = rd.read_buf(&mut buf) => match r {
                        Ok(0) => break Ok(()),
                        Ok(_) => continue,
                        Err(e) => break Err(e),
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        tracing::warn!(%peer, timeout = ?cfg.record_timeout, received = buf.len(),
                            "record not completed in time, closing connection");
                        disp.metrics().count_error("tcp_record_timeout");
                        break Err(io::ErrorKind::TimedOut.into());
                    }
                    // the writer gave up (a client that does not read): stop reading too
                    _ = tx.closed() => break Ok(()),
                }
            }
            Err(e) => {
                tracing::warn!(%peer, error = %e, "bad record, closing connection");
                disp.metrics().count_error("tcp_bad_record");
                break Err(io::Error::new(io::ErrorKind::InvalidData, e));
            }
        };
        record_start = None;
        // Replies to our back-channel calls: nothing waits for them.
        if rec.len() >= 8 && rec[4..8] == [0, 0, 0, 1] {
            disp.metrics().count_error("backchannel_reply");
            continue;
        }
        // a client that does not read its replies is not read from either
        loop {
            let drained = backlog.drained.notified();
            if backlog.bytes.load(Ordering::Acquire) <= cfg.max_queued_reply_bytes {
                break;
            }
            tokio::select! {
                _ = drained => {}
                _ = tx.closed() => break 'conn Ok(()),
            }
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
        let backlog = backlog.clone();
        // The call runs on a blocking thread; queueing its reply waits asynchronously, so a
        // client that stops reading holds its own permits, not a thread or the global ones.
        let work = tokio::task::spawn_blocking(move || {
            let reply = disp.dispatch_with(rec, peer, TransportKind::Tcp, Some(back));
            drop(global);
            reply
        });
        tokio::spawn(async move {
            if let Ok(Some(reply)) = work.await {
                backlog.bytes.fetch_add(reply.wire_len(), Ordering::AcqRel);
                // the permit travels with the reply: the call counts until it is written
                let _ = tx.send((reply, Some(permit))).await;
            }
        });
    };
    drop(tx);
    let _ = writer.await;
    result
}

static ZEROS: [u8; 4] = [0; 4];

async fn write_replies(
    mut wr: tokio::net::tcp::OwnedWriteHalf,
    mut rx: mpsc::Receiver<Queued>,
    timeout: Duration,
    backlog: Arc<Backlog>,
) -> io::Result<()> {
    let mut batch: Vec<Queued> = Vec::with_capacity(16);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        while batch.len() < 16 {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        let headers: Vec<[u8; 4]> = batch
            .iter()
            .map(|(r, _)| record_header(r.wire_len()))
            .collect();
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(batch.len() * 4);
        for ((r, _), h) in batch.iter().zip(headers.iter()) {
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
        if let Err(e) = write_all_vectored(&mut wr, &mut slices, timeout).await {
            if e.kind() == io::ErrorKind::TimedOut {
                tracing::warn!(peer = ?wr.peer_addr().ok(), ?timeout,
                    "client took no reply bytes in time, closing connection");
            }
            return Err(e);
        }
        drop(slices);
        let written: usize = batch
            .iter()
            .filter(|(_, p)| p.is_some())
            .map(|(r, _)| r.wire_len())
            .sum();
        backlog.bytes.fetch_sub(written, Ordering::AcqRel);
        backlog.drained.notify_one();
        // releases the written calls' in-flight permits
        batch.clear();
    }
    wr.shutdown().await
}

async fn write_all_vectored(
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
    mut slices: &mut [IoSlice<'_>],
    timeout: Duration,
) -> io::Result<()> {
    while !slices.is_empty() {
        let n = match tokio::time::timeout(timeout, wr.write_vectored(slices)).await {
            Ok(r) => r?,
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        };
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
