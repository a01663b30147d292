//! The output side of a TCP connection: replies written by whichever thread made them, at once
//! when nothing is queued before them and the socket takes them, else queued for the
//! connection's writer task; small ones held to leave together.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use smallvec::SmallVec;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use xdr::{Reply, Segment};

use crate::record::record_header;

/// A record for the socket, with the in-flight permit of its call (released once written).
pub(super) type Queued = (Reply, Option<OwnedSemaphorePermit>);

/// Replies in a batch the writer task sends with one vectored write.
pub(super) const WRITE_BATCH: usize = 16;

/// The output side of a connection, shared by the threads that make replies and the writer task.
pub(super) struct ReplyOut {
    pub(super) half: OwnedWriteHalf,
    pub(super) state: parking_lot::Mutex<OutState>,
    /// Wakes the writer task: records were queued, or the connection is closing.
    pub(super) wake: Notify,
    /// Wakes the reader: queued bytes went down.
    pub(super) drained: Notify,
    /// Wakes the reader: the socket failed or the client stopped taking replies.
    pub(super) dead: Notify,
    /// Queued record bytes, readable without the lock.
    pub(super) queued_bytes: AtomicUsize,
}

#[derive(Default)]
pub(super) struct OutState {
    pub(super) queue: VecDeque<Queued>,
    /// Bytes of the first queued record already written.
    pub(super) offset: usize,
    /// Nothing more is written (a write failed or timed out); queued records were dropped.
    pub(super) failed: bool,
    /// The reader is done and every call has finished: the writer exits once the queue is empty.
    pub(super) closing: bool,
    /// A thread is writing to the socket outside the lock ([`ReplyOut::send_batch`]): records
    /// queued meanwhile are its to send next, not the writer task's.
    pub(super) writing: bool,
    /// Replies of calls finished while the reader was busy, for it to send with its own.
    pub(super) held: Vec<Queued>,
    /// The reader is handling what it read and will write before it next waits.
    pub(super) reader_busy: bool,
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
    pub(super) fn new(half: OwnedWriteHalf) -> Self {
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
    pub(super) fn send(&self, reply: Reply, permit: Option<OwnedSemaphorePermit>) -> bool {
        self.send_batch(&mut vec![(reply, permit)])
    }

    /// A call thread's reply. A small one is held, to leave in one write with others: for the
    /// reader when it is busy (it writes before it next waits), or for the connection's next
    /// call when this thread runs it next ([`crate::pool::later`]); either wait is bounded by
    /// work on the CPU or by the pool's watcher, never by I/O. Else it is sent.
    pub(super) fn finish_call(self: &Arc<Self>, q: Queued) -> bool {
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

    /// The reader is done and every call has finished: the writer task ends once the queue
    /// is empty.
    pub(super) fn close(&self) {
        self.state.lock().closing = true;
        self.wake.notify_one();
    }

    /// Reply bytes queued for the writer task.
    pub(super) fn queued_bytes(&self) -> usize {
        self.queued_bytes.load(Ordering::Acquire)
    }

    /// The reader starts on what it read.
    pub(super) fn reader_busy(&self) {
        self.state.lock().reader_busy = true;
    }

    /// The reader is about to wait: writes `ready` and what it held.
    pub(super) fn reader_idle(&self, ready: &mut Vec<Queued>) {
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
    pub(super) fn send_batch(&self, batch: &mut Vec<Queued>) -> bool {
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
pub(super) async fn write_queued(out: Arc<ReplyOut>, timeout: Duration) -> io::Result<()> {
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
