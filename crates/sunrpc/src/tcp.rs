//! RPC over TCP (and UDP for the port mapper).
//!
//! Each connection has a reader task that splits records and runs each call on a blocking
//! thread, so many calls run at once and replies leave in completion order. The thread that made
//! a reply writes it to the socket itself (one vectored, non-blocking write of the record
//! marking and the reply's segments) when nothing is queued before it; only what the socket
//! does not take at once is queued for the connection's writer task. A small reply is held
//! instead while the reader is busy with what it read (work on the CPU only: it writes before
//! it next waits), or while the call thread has the connection's next call to run
//! ([`crate::pool::later`]), so that replies finished together leave together (12 clients'
//! 4 KiB WRITEs: 0.86 writes per reply without, 0.18 with; the client wakes as much less
//! often). So a call costs one
//! hand-off (reader to worker thread), not three; and none when the program can complete it
//! without waiting for I/O ([`Dispatcher::dispatch_nonblocking`]: a GETATTR of a cached file,
//! a small READ of cached data, a WRITE to tmpfs), which then runs on the reader; the replies
//! of such calls leave together too, within [`READY_HOLD`] of the first one's start.
//!
//! What one connection can hold is bounded by configuration: `max_in_flight` calls, from the
//! record's arrival until its reply is written, each at most `max_record` bytes in and one reply
//! out; and no new call is read while more than `max_queued_reply_bytes` of replies wait for the
//! socket. A client that stalls mid-record for `record_timeout`, or does not take replies for
//! `write_timeout`, is disconnected, which frees all of it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::sync::Weak;

use bytes::{BufMut, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use xdr::Reply;

use crate::bufpool::{BufPool, MIN_POOLED};
use crate::dispatch::{BackChannel, BulkAlloc, Dispatcher, Origin, TransportKind};
use crate::iothreads::IoThreads;
use crate::pool::CallPool;
use crate::record::RecordReader;

mod out;
mod poll;

use out::{write_queued, Queued, ReplyOut, WRITE_BATCH};
use poll::{poll_for_call, LonePoll};

/// Calls to the client on a TCP connection go out like replies. It holds the connection's
/// output weakly, so a session that outlives its connection does not keep the socket open.
struct TcpBackChannel {
    out: Weak<ReplyOut>,
    id: u64,
}

impl BackChannel for TcpBackChannel {
    fn send_call(&self, msg: Reply) -> bool {
        self.out.upgrade().is_some_and(|o| o.send(msg, None))
    }

    fn id(&self) -> u64 {
        self.id
    }
}

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
    /// Which clients get READ data spliced from the page cache instead of copied.
    pub splice_reads: SpliceReads,
    /// TCP congestion control of every connection (`TCP_CONGESTION`, one the kernel has:
    /// [`congestion_available`]); None: the system's (`net.ipv4.tcp_congestion_control`).
    pub congestion: Option<Arc<str>>,
    /// How long a connection's reader keeps looking for the next call without sleeping once it
    /// has nothing to do (zero: it sleeps at once): a call that arrives meanwhile finds its
    /// CPU running, not halted, at the price of that CPU's time ([`poll_for_call`]).
    pub busy_poll: Duration,
    /// How long a connection's reader looks for the next call of a client that had one call in
    /// flight, once its reply is written ([`LonePoll`]; zero: it sleeps at once); unused
    /// where `busy_poll` is set.
    pub lone_poll: Duration,
    /// Where calls that may block run: these threads, or tokio's blocking pool (None).
    pub calls: Option<CallPool>,
    /// The threads connections are served on, each staying on one; None: the runtime that
    /// accepted them ([`crate::iothreads`]).
    pub io_threads: Option<IoThreads>,
}

/// Which clients get READ data as file pages spliced into the socket ([`xdr::Segment::Pages`],
/// no copy in the server) rather than copied into a buffer that is then written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpliceReads {
    /// Clients on other addresses than loopback ones: a client across a network gets the pages
    /// from the NIC, and the server does no copy at all (as the in-kernel server sends READ
    /// data). To a loopback client splicing gains nothing where the connection is paced from
    /// TCP's timers (BBR without an fq qdisc: each spliced burst waits for them), and 1.2-1.3x
    /// where it is not (cubic): docs/benchmarks.md, "Loopback clients".
    #[default]
    Remote,
    /// Every client.
    Always,
    /// No client: READ data is always copied.
    Never,
}

impl SpliceReads {
    /// Whether a client at `peer` gets spliced READ data.
    pub fn applies_to(self, peer: SocketAddr) -> bool {
        match self {
            SpliceReads::Remote => !peer.ip().to_canonical().is_loopback(),
            SpliceReads::Always => true,
            SpliceReads::Never => false,
        }
    }
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
            splice_reads: SpliceReads::default(),
            congestion: None,
            busy_poll: Duration::ZERO,
            lone_poll: Duration::ZERO,
            calls: None,
            io_threads: None,
        }
    }
}

/// Fills `dst` from `rd`: Ok(true) when full, Ok(false) when the client closed the connection
/// or its output died; a timed-out error at `deadline`.
async fn read_exact_by(
    rd: &mut tokio::net::tcp::OwnedReadHalf,
    dst: &mut [u8],
    deadline: Instant,
    out: &ReplyOut,
) -> io::Result<bool> {
    let mut done = 0;
    while done < dst.len() {
        tokio::select! {
            r = rd.read(&mut dst[done..]) => match r? {
                0 => return Ok(false),
                n => done += n,
            },
            _ = tokio::time::sleep_until(deadline) => return Err(io::ErrorKind::TimedOut.into()),
            _ = out.dead.notified() => return Ok(false),
        }
    }
    Ok(true)
}

/// Bytes read from a socket at once into the receive buffer: a call carrying 64 KiB of data
/// and its headers fits, and is split off with no copy; one larger has this much of its head
/// copied into a pooled buffer (one call at a time, 64 KiB WRITEs took 0.88-0.93 of the time
/// they took with 64 KiB chunks, `rnfs-bench latency`, 9-11 alternated runs).
const READ_CHUNK: usize = 68 * 1024;

/// Size of the pooled READ buffers: the largest READ (1 MiB).
const BULK_SIZE: usize = 1 << 20;
/// Pooled buffers kept while unused, per pool (READ payloads; large calls): at most 64 MiB and
/// 68 MiB idle with the default record size. The kernel client keeps dozens of 1 MiB WRITEs in
/// flight; with fewer kept, each one beyond them was new memory, faulted in page by page.
const BULK_KEEP: usize = 64;

/// Reply bytes the reader keeps before writing them (see [`Ready`]).
const READY_BYTES: usize = 256 * 1024;

/// How long after the reader started the first of the calls it ran their replies leave
/// together at the latest. One write for all the calls of a read made a convoy when they were
/// slow: 12 clients' 4 KiB WRITEs on one connection, run on the reader, went 12 out, 12 back,
/// a CPU idle in two (65k ops/s); written after each call, the reader's CPU went to its writes
/// (99k); held 10-20 µs, 102-125k (40 µs: 67-78k). 4 KiB random reads, 4 in flight on each of
/// 8 connections, want their 4 replies in one write: 10 µs cost them 4 %, 20 µs nothing
/// measurable (`bench/ab`, 9 runs), at 1.74x the 12 clients' writes and 1.16x their reads (10
/// µs: 1.61x reads). A call slower than this has its reply written at once.
const READY_HOLD: Duration = Duration::from_micros(20);

/// Replies of calls the reader ran itself, written together: when it is about to wait, when
/// they fill a write, or [`READY_HOLD`] after the first of their calls started.
#[derive(Default)]
struct Ready {
    replies: Vec<Queued>,
    bytes: usize,
    since: Option<Instant>,
}

impl Ready {
    /// Adds the reply of a call started at `started`; writes them all when they are enough,
    /// or when the first call started long enough ago.
    fn push(&mut self, out: &ReplyOut, q: Queued, started: Instant) {
        self.bytes += q.0.wire_len();
        self.replies.push(q);
        let since = *self.since.get_or_insert(started);
        if self.replies.len() >= WRITE_BATCH
            || self.bytes >= READY_BYTES
            || since.elapsed() >= READY_HOLD
        {
            // still busy: what call threads finish meanwhile stays for the reader
            out.send_batch(&mut self.replies);
            self.bytes = 0;
            self.since = None;
        }
    }

    /// Writes them, and what call threads held for the reader (it is about to wait).
    fn flush(&mut self, out: &ReplyOut) {
        out.reader_idle(&mut self.replies);
        self.bytes = 0;
        self.since = None;
    }
}

/// A permit of `sem`; the replies waiting in `ready` hold permits, so they are written before
/// waiting for one. None when the semaphore is closed.
async fn acquire(
    sem: &Arc<Semaphore>,
    out: &ReplyOut,
    ready: &mut Ready,
) -> Option<OwnedSemaphorePermit> {
    if let Ok(p) = sem.clone().try_acquire_owned() {
        return Some(p);
    }
    ready.flush(out);
    sem.clone().acquire_owned().await.ok()
}

/// Whether the kernel gives connections the congestion control `name` (loaded, and allowed
/// to this process): the error it returns otherwise.
pub fn congestion_available(name: &str) -> io::Result<()> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_tcp_congestion(name.as_bytes())
}

/// What every accepted connection gets: replies leave at once (no Nagle delay), and the
/// congestion control configured ([`TcpConfig::congestion`]).
fn tune(sock: &TcpStream, cfg: &TcpConfig) {
    let _ = sock.set_nodelay(true);
    if let Some(cc) = &cfg.congestion {
        // checked at start-up (congestion_available): a refusal here is a module unloaded since
        if let Err(e) = socket2::SockRef::from(sock).set_tcp_congestion(cc.as_bytes()) {
            tracing::debug!(error = %e, congestion = %cc, "TCP_CONGESTION refused");
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
    // READ payloads of every connection of the listener; idle memory is bounded by the count
    let bulk: Arc<dyn BulkAlloc> = Arc::new(BufPool::new(BULK_SIZE, BULK_KEEP));
    // large calls (WRITEs) of every connection, up to the largest record
    let recv_pool = BufPool::new(cfg.max_record, BULK_KEEP);
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
        tune(&sock, &cfg);
        let disp = disp.clone();
        let cfg = cfg.clone();
        let gauge = gauge.clone();
        let total = total.clone();
        let bulk = bulk.clone();
        let recv_pool = recv_pool.clone();
        gauge.inc();
        // the socket is registered with the runtime of the thread that serves it (a connection
        // thread's, or this one's), when its task is first polled there
        let sock = sock.into_std();
        let threads = cfg.io_threads.clone();
        let serve = async move {
            let pools = (bulk, recv_pool);
            let served = match sock.and_then(TcpStream::from_std) {
                Ok(s) => serve_connection(s, peer, disp, cfg, total, pools).await,
                Err(e) => Err(e),
            };
            if let Err(e) = served {
                tracing::debug!(%peer, error = %e, "connection closed");
            }
            gauge.dec();
            drop(permit);
        };
        match threads {
            None => drop(tokio::spawn(serve)),
            Some(t) => t.spawn(serve),
        }
    }
}

async fn serve_connection(
    sock: TcpStream,
    peer: SocketAddr,
    disp: Arc<Dispatcher>,
    cfg: TcpConfig,
    total: Arc<Semaphore>,
    (bulk, recv_pool): (Arc<dyn BulkAlloc>, BufPool),
) -> io::Result<()> {
    let local = sock.local_addr().ok();
    let client = disp.metrics().client(peer);
    let (mut rd, wr) = sock.into_split();
    let out = Arc::new(ReplyOut::new(wr));
    let writer = tokio::spawn(write_queued(out.clone(), cfg.write_timeout));
    let max_in_flight = cfg.max_in_flight.clamp(1, Semaphore::MAX_PERMITS);
    let in_flight = Arc::new(Semaphore::new(max_in_flight));
    let back: Arc<dyn BackChannel> = Arc::new(TcpBackChannel {
        out: Arc::downgrade(&out),
        id: crate::callback::next_conn_id(),
    });
    let mut rr = RecordReader::new(cfg.max_record);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    // When the record being received began (None between records: idle is allowed).
    let mut record_start: Option<Instant> = None;
    let connected = Instant::now();
    // Replies of calls run on this task, written together before it next waits: the calls of
    // one read get one write, not one each.
    let mut ready = Ready::default();
    let mut lone = LonePoll::new(cfg.lone_poll);
    let (polls, found) = (
        disp.metrics().counter("tcp_lone_poll"),
        disp.metrics().counter("tcp_lone_poll_found"),
    );
    // calls read since the reader last found nothing to read
    let mut calls_read = 0u32;
    let result = 'conn: loop {
        // A large call (a WRITE) is received into a pooled buffer: the receive buffer would
        // otherwise be new memory for each one, its payload being still in use.
        let pooled = rr
            .large_single(&buf, MIN_POOLED)
            .and_then(|len| Some((len, recv_pool.alloc(len)?)));
        let rec = if let Some((len, mut big)) = pooled {
            ready.flush(&out);
            let have = buf.len() - 4;
            big.as_mut_slice()[..have].copy_from_slice(&buf[4..]);
            buf.clear();
            let start = *record_start.get_or_insert_with(Instant::now);
            let rest = &mut big.as_mut_slice()[have..len];
            match read_exact_by(&mut rd, rest, start + cfg.record_timeout, &out).await {
                Ok(true) => big.freeze(len),
                Ok(false) => break Ok(()),
                Err(e) => {
                    if e.kind() == io::ErrorKind::TimedOut {
                        tracing::warn!(%peer, timeout = ?cfg.record_timeout,
                            "record not completed in time, closing connection");
                        disp.metrics().count_error("tcp_record_timeout");
                    }
                    break Err(e);
                }
            }
        } else {
            match rr.next_record(&mut buf) {
                Ok(Some(r)) => r,
                Ok(None) => {
                    ready.flush(&out);
                    let want = rr.wanted(&buf).max(4096);
                    buf.reserve(want.max(READ_CHUNK));
                    // idle between records: no limit, and no timer to arm and disarm per wait
                    let mid = rr.mid_record(&buf);
                    let deadline = match mid {
                        true => *record_start.get_or_insert_with(Instant::now) + cfg.record_timeout,
                        false => {
                            record_start = None;
                            connected
                        }
                    };
                    if !cfg.busy_poll.is_zero() {
                        // replies are out (flush above): only the next call is awaited
                        poll_for_call(rd.as_ref(), cfg.busy_poll).await;
                    } else if !mid {
                        let alone =
                            calls_read == 1 && in_flight.available_permits() == max_in_flight;
                        if let Some(hit) = lone.after_reply(rd.as_ref(), alone).await {
                            polls.inc();
                            if hit {
                                found.inc();
                            }
                        }
                    }
                    calls_read = 0;
                    // at most a chunk: the head of a large call, not the whole of it, so that
                    // the rest goes straight into a pooled buffer
                    let mut chunk = (&mut buf).limit(READ_CHUNK);
                    tokio::select! {
                        r = rd.read_buf(&mut chunk) => match r {
                            Ok(0) => break Ok(()),
                            Ok(_) => {
                                out.reader_busy();
                                continue;
                            }
                            Err(e) => break Err(e),
                        },
                        _ = tokio::time::sleep_until(deadline), if mid => {
                            tracing::warn!(%peer, timeout = ?cfg.record_timeout,
                                received = buf.len(),
                                "record not completed in time, closing connection");
                            disp.metrics().count_error("tcp_record_timeout");
                            break Err(io::ErrorKind::TimedOut.into());
                        }
                        // the writer gave up (a client that does not read): stop reading too
                        _ = out.dead.notified() => break Ok(()),
                    }
                }
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "bad record, closing connection");
                    disp.metrics().count_error("tcp_bad_record");
                    break Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            }
        };
        record_start = None;
        // Replies to our back-channel calls go to whoever waits for one (CB_GETATTR).
        if rec.len() >= 8 && rec[4..8] == [0, 0, 0, 1] {
            if !crate::callback::deliver(back.id(), rec) {
                disp.metrics().count_error("backchannel_reply");
            }
            continue;
        }
        // a client that does not read its replies is not read from either
        loop {
            let drained = out.drained.notified();
            if out.queued_bytes() <= cfg.max_queued_reply_bytes {
                break;
            }
            ready.flush(&out);
            tokio::select! {
                _ = drained => {}
                _ = out.dead.notified() => break 'conn Ok(()),
            }
        }
        let Some(permit) = acquire(&in_flight, &out, &mut ready).await else {
            break Ok(());
        };
        let Some(global) = acquire(&total, &out, &mut ready).await else {
            break Ok(());
        };
        let disp = disp.clone();
        let origin = Origin {
            peer,
            local,
            transport: TransportKind::Tcp,
            back: Some(back.clone()),
            bulk: Some(bulk.clone()),
            pages: cfg.splice_reads.applies_to(peer),
            client: Some(client.clone()),
        };
        // A call that needs nothing but memory (a cached file's attributes, data in the page
        // cache) runs here: handing it to a thread costs as much as the call. With nothing of
        // the connection received behind it, a longer one does too (a large READ): it holds
        // up no other call of the connection.
        let alone = buf.is_empty();
        calls_read += 1;
        let started = Instant::now();
        if let Some(reply) = disp.dispatch_nonblocking(&rec, &origin, alone) {
            drop(global);
            if let Some(reply) = reply {
                ready.push(&out, (reply, Some(permit)), started);
            }
            continue;
        }
        let out = out.clone();
        // The call runs on a blocking thread, which also writes its reply (or queues it, and
        // the in-flight permit with it: the call counts until its reply is written); first it
        // takes a permit of its kind (crate::admission), waiting for one as a task.
        let admitted = match disp.admission_for(&rec) {
            None => Ok(None),
            Some(k) => k.clone().try_acquire_owned().map(Some).map_err(|_| k),
        };
        if admitted.is_err() {
            disp.metrics().count_error("export_wait");
        }
        let pool = cfg.calls.clone();
        let key = back.id();
        let run = move |admitted: Option<tokio::sync::OwnedSemaphorePermit>| {
            let call = move || {
                let reply = disp.dispatch_from(rec, origin);
                drop(admitted);
                drop(global);
                if let Some(reply) = reply {
                    out.finish_call((reply, Some(permit)));
                }
            };
            match pool {
                Some(p) => p.run_keyed(key, call),
                None => drop(tokio::task::spawn_blocking(call)),
            }
        };
        match admitted {
            Ok(p) => run(p),
            Err(k) => {
                tokio::spawn(async move { run(k.acquire_owned().await.ok()) });
            }
        }
    };
    ready.flush(&out);
    // every call finishes (its reply written or dropped) before the writer is told to close
    let _all = in_flight.acquire_many(max_in_flight as u32).await;
    out.close();
    let _ = writer.await;
    result
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

#[cfg(test)]
mod tests;
