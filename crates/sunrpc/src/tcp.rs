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

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use std::collections::VecDeque;
use std::sync::Weak;

use bytes::{BufMut, BytesMut};
use smallvec::SmallVec;
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream, UdpSocket};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use xdr::{Reply, Segment};

use crate::bufpool::{BufPool, MIN_POOLED};
use crate::dispatch::{BackChannel, BulkAlloc, Dispatcher, Origin, TransportKind};
use crate::iothreads::IoThreads;
use crate::pool::CallPool;
use crate::record::{record_header, RecordReader};

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

/// A record for the socket, with the in-flight permit of its call (released once written).
type Queued = (Reply, Option<OwnedSemaphorePermit>);

/// Replies in a batch the writer task sends with one vectored write.
const WRITE_BATCH: usize = 16;

/// The output side of a connection, shared by the threads that make replies and the writer task.
struct ReplyOut {
    half: OwnedWriteHalf,
    state: parking_lot::Mutex<OutState>,
    /// Wakes the writer task: records were queued, or the connection is closing.
    wake: Notify,
    /// Wakes the reader: queued bytes went down.
    drained: Notify,
    /// Wakes the reader: the socket failed or the client stopped taking replies.
    dead: Notify,
    /// Queued record bytes, readable without the lock.
    queued_bytes: AtomicUsize,
}

#[derive(Default)]
struct OutState {
    queue: VecDeque<Queued>,
    /// Bytes of the first queued record already written.
    offset: usize,
    /// Nothing more is written (a write failed or timed out); queued records were dropped.
    failed: bool,
    /// The reader is done and every call has finished: the writer exits once the queue is empty.
    closing: bool,
    /// A thread is writing to the socket outside the lock ([`ReplyOut::send_batch`]): records
    /// queued meanwhile are its to send next, not the writer task's.
    writing: bool,
    /// Replies of calls finished while the reader was busy, for it to send with its own.
    held: Vec<Queued>,
    /// The reader is handling what it read and will write before it next waits.
    reader_busy: bool,
}

/// Largest reply a call thread leaves for the busy reader: a larger one's copy would hold up
/// the reader (1 MiB READ replies left for it took sequential reads at 4 in flight from 2.7 to
/// 2.4 GB/s), and it gains nothing from sharing a write.
const HOLD_MAX_BYTES: usize = 16 * 1024;

static ZEROS: [u8; 4] = [0; 4];

/// Queued output from some offset on: the bytes in memory in order, and the file pages that go
/// between them, each with the index in `mem` it goes before and how many of its bytes are
/// still to go. Memory runs are slices of `mem`, so a reply without pages costs one vector.
struct Parts<'a> {
    /// Inline on the stack for a few records of a few segments: a reply's send allocates
    /// nothing of its own.
    mem: SmallVec<[IoSlice<'a>; 8]>,
    pages: Vec<(usize, &'a dyn xdr::Pages, usize)>,
}

/// The pieces of `records` (record marking included), skipping the first `offset` bytes.
fn record_parts<'a>(
    records: impl Iterator<Item = &'a Reply>,
    headers: &'a [[u8; 4]],
    mut offset: usize,
) -> Parts<'a> {
    let mut out = Parts {
        mem: SmallVec::with_capacity(headers.len() * 4),
        pages: Vec::new(),
    };
    let push = |b: &'a [u8], out: &mut Parts<'a>, offset: &mut usize| {
        if *offset >= b.len() {
            *offset -= b.len();
        } else {
            out.mem.push(IoSlice::new(&b[*offset..]));
            *offset = 0;
        }
    };
    for (r, h) in records.zip(headers) {
        push(h, &mut out, &mut offset);
        for s in &r.segments {
            match s {
                Segment::Inline(b) | Segment::Bulk(b) => push(b, &mut out, &mut offset),
                Segment::Pages(p) | Segment::BodyPages(p) if offset >= p.len() => offset -= p.len(),
                Segment::Pages(p) | Segment::BodyPages(p) => {
                    out.pages
                        .push((out.mem.len(), p.as_ref(), p.len() - offset));
                    offset = 0;
                }
            }
            push(&ZEROS[..s.padding()], &mut out, &mut offset);
        }
    }
    out
}

/// Writes `parts` to the socket without blocking: each run of memory with one vectored write,
/// file pages spliced. Returns the bytes written; `WouldBlock` only when none were.
fn write_parts(sock: &TcpStream, parts: &Parts<'_>) -> io::Result<usize> {
    let mut done = 0;
    let mut at = 0; // next memory slice
    let mut pages = parts.pages.iter().peekable();
    loop {
        let until = pages.peek().map_or(parts.mem.len(), |(i, ..)| *i);
        let (n, want) = if at < until {
            let run = &parts.mem[at..until];
            at = until;
            let want = run.iter().map(|s| s.len()).sum::<usize>();
            // headers before spliced data wait for it (MSG_MORE), so that they leave in one
            // segment with its start rather than in a small one of their own
            let res = match pages.peek().is_some() {
                false => sock.try_write_vectored(run),
                true => sock.try_io(tokio::io::Interest::WRITABLE, || {
                    socket2::SockRef::from(sock).send_vectored_with_flags(run, libc::MSG_MORE)
                }),
            };
            (res, want)
        } else if let Some((_, p, left)) = pages.next() {
            let more = at < parts.mem.len() || pages.peek().is_some();
            let res = sock.try_io(tokio::io::Interest::WRITABLE, || {
                p.splice_to(sock.as_fd(), *left, more)
            });
            (res, *left)
        } else {
            break;
        };
        match n {
            Ok(n) => {
                done += n;
                if n < want {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && done > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

impl ReplyOut {
    fn new(half: OwnedWriteHalf) -> Self {
        Self {
            half,
            state: parking_lot::Mutex::new(OutState::default()),
            wake: Notify::new(),
            drained: Notify::new(),
            dead: Notify::new(),
            queued_bytes: AtomicUsize::new(0),
        }
    }

    /// Writes `reply` now if the socket takes it and nothing is queued before it, else queues
    /// (the rest of) it for the writer task. False when the connection can send no more.
    fn send(&self, reply: Reply, permit: Option<OwnedSemaphorePermit>) -> bool {
        self.send_batch(&mut vec![(reply, permit)])
    }

    /// A call thread's reply. A small one is held, to leave in one write with others: for the
    /// reader when it is busy (it writes before it next waits), or for the connection's next
    /// call when this thread runs it next ([`crate::pool::later`]); either wait is bounded by
    /// work on the CPU or by the pool's watcher, never by I/O. Else it is sent.
    fn finish_call(self: &Arc<Self>, q: Queued) -> bool {
        let small = q.0.wire_len() <= HOLD_MAX_BYTES;
        let next = small && crate::pool::next_is_same_key();
        let mut st = self.state.lock();
        if small && (st.reader_busy || next) && !st.failed && !st.closing {
            let first = st.held.is_empty();
            st.held.push(q);
            drop(st);
            if next && first {
                let me = self.clone();
                crate::pool::later(move || me.flush_held());
            }
            return true;
        }
        drop(st);
        self.send_batch(&mut vec![q])
    }

    /// Sends the replies held, if any.
    fn flush_held(&self) {
        if !self.state.lock().held.is_empty() {
            self.send_batch(&mut Vec::new());
        }
    }

    /// The reader starts on what it read.
    fn reader_busy(&self) {
        self.state.lock().reader_busy = true;
    }

    /// The reader is about to wait: writes `ready` and what it held.
    fn reader_idle(&self, ready: &mut Vec<Queued>) {
        let mut st = self.state.lock();
        st.reader_busy = false;
        if ready.is_empty() && st.held.is_empty() {
            return;
        }
        drop(st);
        self.send_batch(ready);
    }

    /// [`ReplyOut::send`] for several records at once (one vectored write); empties `batch`.
    ///
    /// The socket is written outside the lock, and a thread that finds another writing leaves
    /// its records in the queue for that one, which sends them after its own before it returns:
    /// replies finished at the same time leave in one write, and no thread waits for another's
    /// write (12 clients' 4 KiB WRITEs: 0.5-0.9 lock spins per reply when the lock was held
    /// over the write).
    fn send_batch(&self, batch: &mut Vec<Queued>) -> bool {
        let mut st = self.state.lock();
        if st.failed || st.closing {
            batch.clear();
            return false;
        }
        if st.writing || !st.queue.is_empty() {
            // behind the writing thread, or behind the writer task's backlog
            self.queue_held(&mut st);
            let n: usize = batch.iter().map(|(r, _)| 4 + r.wire_len()).sum();
            st.queue.extend(batch.drain(..));
            self.queued_bytes.fetch_add(n, Ordering::AcqRel);
            let backlog = !st.writing;
            drop(st);
            if backlog {
                self.wake.notify_one();
            }
            return true;
        }
        st.writing = true;
        // held replies go with these, WRITE_BATCH records to a write (one write of them all
        // could pass the system's limit of vectors), the rest right after
        let room = WRITE_BATCH.saturating_sub(batch.len()).min(st.held.len());
        batch.extend(st.held.drain(..room));
        self.queue_held(&mut st);
        drop(st);
        // the caller's vector, whose capacity it keeps for its next batch
        let mine = batch;
        loop {
            let headers: SmallVec<[[u8; 4]; 4]> = mine
                .iter()
                .map(|(r, _)| record_header(r.wire_len()))
                .collect();
            let total: usize = mine.iter().map(|(r, _)| 4 + r.wire_len()).sum();
            let res = if total == 0 {
                Ok(0) // the reader's flush of replies another writer took meanwhile
            } else {
                let parts = record_parts(mine.iter().map(|(r, _)| r), &headers, 0);
                write_parts(self.half.as_ref(), &parts)
            };
            let mut st = self.state.lock();
            let written = match res {
                Ok(n) if n == total => {
                    self.queue_held(&mut st);
                    if st.queue.is_empty() {
                        st.writing = false;
                        // a closing connection's writer task waits for the last writer to end
                        let closing = st.closing;
                        drop(st);
                        if closing {
                            self.wake.notify_one();
                        }
                        mine.clear(); // releases the calls' in-flight permits
                        return true;
                    }
                    // what others left meanwhile: whole records, none of it written yet
                    let k = st.queue.len().min(WRITE_BATCH);
                    let more: Vec<Queued> = st.queue.drain(..k).collect();
                    let n: usize = more.iter().map(|(r, _)| 4 + r.wire_len()).sum();
                    self.queued_bytes.fetch_sub(n, Ordering::AcqRel);
                    drop(st);
                    mine.clear(); // releases the calls' in-flight permits
                    mine.extend(more);
                    self.drained.notify_one();
                    continue;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
                Err(_) => {
                    st.writing = false;
                    self.fail(&mut st);
                    drop(st);
                    mine.clear();
                    return false;
                }
            };
            // the socket is full: what is left goes before the others' records, to the writer
            // task; records written whole are done, the one written in part heads the queue
            let mut rest = Vec::with_capacity(mine.len());
            let (mut skip, mut left) = (written, 0);
            st.offset = 0;
            for (r, permit) in mine.drain(..) {
                let len = 4 + r.wire_len();
                if skip >= len {
                    skip -= len;
                    continue;
                }
                if rest.is_empty() {
                    st.offset = skip;
                }
                left += len - skip;
                skip = 0;
                rest.push((r, permit));
            }
            for q in rest.into_iter().rev() {
                st.queue.push_front(q);
            }
            self.queued_bytes.fetch_add(left, Ordering::AcqRel);
            st.writing = false;
            drop(st);
            self.wake.notify_one();
            return true;
        }
    }

    /// Moves the held replies to the end of the queue.
    fn queue_held(&self, st: &mut OutState) {
        if !st.held.is_empty() {
            let n: usize = st.held.iter().map(|(r, _)| 4 + r.wire_len()).sum();
            st.queue.extend(st.held.drain(..));
            self.queued_bytes.fetch_add(n, Ordering::AcqRel);
        }
    }

    /// Marks the output failed and drops what was queued (releasing its calls' permits).
    fn fail(&self, st: &mut OutState) {
        st.failed = true;
        st.queue.clear();
        st.held.clear();
        st.offset = 0;
        self.queued_bytes.store(0, Ordering::Release);
        self.dead.notify_one();
        self.drained.notify_one();
        self.wake.notify_one();
    }

    /// One non-blocking vectored write of queued records; Ok(false) when the socket is full.
    fn write_queued(&self) -> io::Result<bool> {
        let mut st = self.state.lock();
        if st.failed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let n_rec = st.queue.len().min(WRITE_BATCH);
        let headers: Vec<[u8; 4]> = st
            .queue
            .iter()
            .take(n_rec)
            .map(|(r, _)| record_header(r.wire_len()))
            .collect();
        let res = {
            let parts = record_parts(st.queue.iter().map(|(r, _)| r), &headers, st.offset);
            write_parts(self.half.as_ref(), &parts)
        };
        let mut n = match res {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => {
                self.fail(&mut st);
                return Err(e);
            }
        };
        self.queued_bytes.fetch_sub(n, Ordering::AcqRel);
        while let Some((r, _)) = st.queue.front() {
            let left = 4 + r.wire_len() - st.offset;
            if n < left {
                st.offset += n;
                break;
            }
            n -= left;
            st.offset = 0;
            st.queue.pop_front(); // releases the call's in-flight permit
        }
        drop(st);
        self.drained.notify_one();
        Ok(true)
    }
}

/// The connection's writer task: sends what [`ReplyOut::send`] could not, waiting for the
/// socket; gives up on a client that takes nothing for `timeout`.
async fn write_queued(out: Arc<ReplyOut>, timeout: Duration) -> io::Result<()> {
    loop {
        let woken = out.wake.notified();
        let idle = {
            let st = out.state.lock();
            if st.failed {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            if st.queue.is_empty() && st.closing && !st.writing {
                return Ok(());
            }
            // a thread writing sends the queue itself, or wakes this task with what is left
            st.queue.is_empty() || st.writing
        };
        if idle {
            woken.await;
            continue;
        }
        if out.write_queued()? {
            continue;
        }
        match tokio::time::timeout(timeout, out.half.writable()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let mut st = out.state.lock();
                out.fail(&mut st);
                return Err(e);
            }
            Err(_) => {
                tracing::warn!(peer = ?out.half.peer_addr().ok(), ?timeout,
                    "client took no reply bytes in time, closing connection");
                let mut st = out.state.lock();
                out.fail(&mut st);
                return Err(io::ErrorKind::TimedOut.into());
            }
        }
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

/// Looks for bytes on `sock` for up to `budget` without sleeping: a non-blocking peek, then a
/// yield to the CPU's other threads and to the runtime's other tasks (whose worker meanwhile
/// polls for I/O without sleeping), in a loop; ends when there are bytes, or the peer closed, or the socket has an error (which
/// the read that follows reports), or at `budget`. The read that follows finds the socket
/// ready. Where waking a sleeping CPU is slow (a virtual CPU halted into its hypervisor takes
/// tens of microseconds) a client's next call is then answered without that wake.
async fn poll_for_call(sock: &TcpStream, budget: Duration) -> Option<bool> {
    /// Readers polling now: one at a time, so that polling costs at most one CPU and other
    /// connections' readers sleep as without it (randread at 32 in flight over 8 connections,
    /// each polling: 0.82x).
    static POLLING: AtomicUsize = AtomicUsize::new(0);
    struct Turn;
    impl Drop for Turn {
        fn drop(&mut self) {
            POLLING.fetch_sub(1, Ordering::AcqRel);
        }
    }
    if POLLING
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return None;
    }
    let _turn = Turn;
    let until = std::time::Instant::now() + budget;
    let mut probe = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    loop {
        let peeked = socket2::SockRef::from(sock)
            .recv_with_flags(&mut probe, libc::MSG_PEEK | libc::MSG_DONTWAIT);
        match peeked {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            _ => return Some(true),
        }
        // other threads first: on the CPU this one holds, a call thread or the client may wait
        // to run (the server confined to one CPU: first writes at 0.41x Chimera without it)
        std::thread::yield_now();
        tokio::task::yield_now().await;
        // after the yields, which on a busy CPU can outlast the budget many times: what came
        // meanwhile was not found by polling, and counts as a miss
        if std::time::Instant::now() >= until {
            return Some(false);
        }
    }
}

/// When a connection's reader looks for the next call of a client that has one call at a time
/// in flight ([`TcpConfig::lone_poll`]): each time its reply went out, unless polls found
/// nothing lately; then it skips 1, 3, 7 ... 63 such chances before polling again, so a
/// client that thinks longer than the budget costs the server almost no polling.
struct LonePoll {
    budget: Duration,
    misses: u32,
    skip: u32,
}

impl LonePoll {
    fn new(budget: Duration) -> Self {
        Self {
            budget,
            misses: 0,
            skip: 0,
        }
    }

    /// Whether to poll now, `lone` telling whether the call just answered was the only one.
    fn wants(&mut self, lone: bool) -> bool {
        if !lone || self.budget.is_zero() {
            return false;
        }
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        true
    }

    /// The poll found the next call (or the connection's end), or nothing within the budget.
    fn polled(&mut self, hit: bool) {
        if hit {
            self.misses = 0;
        } else {
            self.misses = (self.misses + 1).min(6);
            self.skip = (1 << self.misses) - 1;
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
                    } else if !mid
                        && lone.wants(
                            calls_read == 1 && in_flight.available_permits() == max_in_flight,
                        )
                    {
                        if let Some(hit) = poll_for_call(rd.as_ref(), lone.budget).await {
                            lone.polled(hit);
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
            if out.queued_bytes.load(Ordering::Acquire) <= cfg.max_queued_reply_bytes {
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
    out.state.lock().closing = true;
    out.wake.notify_one();
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
