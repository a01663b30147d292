//! The TCP transport's reply path: records whole and in order however the socket takes them.
use super::*;
use crate::record::record_header;
use std::sync::atomic::Ordering;
use tokio::io::AsyncReadExt;

/// Record `i` of the test: `len` bytes of `i`.
fn record(i: u8, len: usize) -> Reply {
    let mut e = xdr::Encoder::new();
    e.opaque_fixed(&vec![i; len]);
    e.finish()
}

/// A connection whose send buffer holds 16 KiB, its reply output with a writer task, and
/// the peer that reads it.
async fn small_socket() -> (
    TcpStream,
    tokio::net::tcp::OwnedReadHalf,
    Arc<ReplyOut>,
    tokio::task::JoinHandle<io::Result<()>>,
) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.set_send_buffer_size(16 * 1024).expect("sndbuf");
    let (client, accepted) = tokio::join!(sock.connect(l.local_addr().expect("addr")), l.accept());
    let (peer, _) = accepted.expect("accept");
    let (rd, wr) = client.expect("connect").into_split();
    let out = Arc::new(ReplyOut::new(wr));
    let writer = tokio::spawn(write_queued(out.clone(), Duration::from_secs(10)));
    (peer, rd, out, writer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_the_socket_takes_in_part_arrive_whole_and_in_order() {
    let (mut peer, _rd, out, writer) = small_socket().await;
    // batches far larger than the socket takes at once, while nobody reads: written in
    // part, the rest queued behind; then single records queued after them
    let sizes = [4, 100_000, 8, 300_000, 12, 64 * 1024, 1, 200_000];
    let mut expect = Vec::new();
    let mut batch = Vec::new();
    for (i, &len) in sizes.iter().enumerate() {
        let len = xdr::pad4(len);
        expect.extend_from_slice(&record_header(len));
        expect.extend(std::iter::repeat_n(i as u8, len));
        batch.push((record(i as u8, len), None));
        if i % 3 == 2 {
            assert!(out.send_batch(&mut batch));
            assert!(batch.is_empty());
        }
    }
    assert!(out.send_batch(&mut batch));
    assert!(out.send(record(99, 4), None));
    expect.extend_from_slice(&record_header(4));
    expect.extend([99u8; 4]);
    let mut got = vec![0u8; expect.len()];
    peer.read_exact(&mut got).await.expect("read");
    assert!(got == expect, "records out of order or cut");
    out.state.lock().closing = true;
    out.wake.notify_one();
    writer.await.expect("writer").expect("writer done");
    assert_eq!(out.queued_bytes.load(Ordering::Acquire), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_sent_from_many_threads_at_once_arrive_whole_and_each_threads_in_order() {
    let (mut peer, _rd, out, writer) = small_socket().await;
    // 8 threads (the call pool's) send 200 records each, of up to 1.2 KiB and every 50th of
    // 40 KiB, so that some fill the socket while others are left for the writing thread or
    // the writer task (not more: each fill of this socket may wait for a delayed ACK)
    const THREADS: u8 = 8;
    const EACH: u32 = 200;
    let senders: Vec<_> = (0..THREADS)
        .map(|t| {
            let out = out.clone();
            std::thread::spawn(move || {
                for n in 0..EACH {
                    let len = match n % 50 {
                        49 => 40 * 1024,
                        _ => 8 + 4 * ((n as usize * 7919 + t as usize * 104_729) % 300),
                    };
                    let mut e = xdr::Encoder::new();
                    let mut body = vec![t; len];
                    body[..4].copy_from_slice(&n.to_be_bytes());
                    e.opaque_fixed(&body);
                    assert!(out.send(e.finish(), None));
                }
            })
        })
        .collect();
    let mut next = [0u32; THREADS as usize];
    // records left queued with nobody to write them would hang the reads
    let read_all = async {
        for _ in 0..THREADS as u32 * EACH {
            let mut h = [0u8; 4];
            peer.read_exact(&mut h).await.expect("header");
            let mark = u32::from_be_bytes(h);
            assert!(mark & 0x8000_0000 != 0, "last-fragment bit");
            let mut body = vec![0u8; (mark & 0x7fff_ffff) as usize];
            peer.read_exact(&mut body).await.expect("body");
            let t = body[4];
            assert!(
                body[4..].iter().all(|&b| b == t),
                "a record mixed with another"
            );
            let n = u32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
            assert_eq!(n, next[t as usize], "thread {t}'s records out of order");
            next[t as usize] += 1;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read_all)
        .await
        .expect("every record arrives");
    for s in senders {
        s.join().expect("sender");
    }
    out.state.lock().closing = true;
    out.wake.notify_one();
    writer.await.expect("writer").expect("writer done");
    assert_eq!(out.queued_bytes.load(Ordering::Acquire), 0);
    assert!(!out.state.lock().writing);
}

/// File pages stand-in: bytes in memory sent at most 7,000 per call, so that a payload
/// leaves in many pieces, some of them cut by a full socket.
#[derive(Debug)]
struct MemPages {
    data: bytes::Bytes,
    sent: parking_lot::Mutex<usize>,
}

impl xdr::Pages for MemPages {
    fn len(&self) -> usize {
        self.data.len()
    }

    fn splice_to(
        &self,
        to: std::os::fd::BorrowedFd<'_>,
        max: usize,
        more: bool,
    ) -> io::Result<usize> {
        let mut sent = self.sent.lock();
        assert_eq!(
            max,
            self.data.len() - *sent,
            "the writer's count of what is left"
        );
        let end = (*sent + max.min(7000)).min(self.data.len());
        let flags = libc::MSG_DONTWAIT | if more { libc::MSG_MORE } else { 0 };
        let n = socket2::SockRef::from(&to).send_with_flags(&self.data[*sent..end], flags)?;
        *sent += n;
        Ok(n)
    }

    fn to_bytes(&self) -> io::Result<bytes::Bytes> {
        Ok(self.data.slice(*self.sent.lock()..))
    }
}

/// A payload whose first send waits until the test lets it go: its sender is then caught
/// in the middle of writing to the socket.
#[derive(Debug)]
struct GatedPages {
    data: bytes::Bytes,
    entered: std::sync::mpsc::SyncSender<()>,
    go: parking_lot::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl xdr::Pages for GatedPages {
    fn len(&self) -> usize {
        self.data.len()
    }

    fn splice_to(
        &self,
        to: std::os::fd::BorrowedFd<'_>,
        max: usize,
        _more: bool,
    ) -> io::Result<usize> {
        if let Some(go) = self.go.lock().take() {
            self.entered.send(()).expect("test waits");
            go.recv().expect("test lets it go");
        }
        let start = self.data.len() - max;
        socket2::SockRef::from(&to).send_with_flags(&self.data[start..], libc::MSG_DONTWAIT)
    }

    fn to_bytes(&self) -> io::Result<bytes::Bytes> {
        Ok(self.data.clone())
    }
}

/// A record of `len` bytes of `byte` whose first send waits: the receiver says when its
/// sender is caught writing, the sender lets it go on.
fn gated_record(
    byte: u8,
    len: usize,
) -> (
    Reply,
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
) {
    let (entered_tx, entered) = std::sync::mpsc::sync_channel(1);
    let (go, go_rx) = std::sync::mpsc::channel();
    let mut e = xdr::Encoder::new();
    e.opaque_payload(xdr::Payload::Pages(Arc::new(GatedPages {
        data: bytes::Bytes::from(vec![byte; len]),
        entered: entered_tx,
        go: parking_lot::Mutex::new(Some(go_rx)),
    })));
    (e.finish(), entered, go)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_finished_while_another_is_written_is_sent_by_the_writing_thread() {
    let (mut peer, _rd, out, writer) = small_socket().await;
    let (first, entered, go) = gated_record(1, 1000);
    let first_len = first.wire_len();
    let out1 = out.clone();
    let a = std::thread::spawn(move || assert!(out1.send(first, None)));
    entered
        .recv_timeout(Duration::from_secs(10))
        .expect("the first sender is writing");
    // the second finds it writing: its record is left for it, at once, with no wait
    let out2 = out.clone();
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        assert!(out2.send(record(2, 8), None));
        done_tx.send(()).expect("test waits");
    });
    done.recv_timeout(Duration::from_secs(10))
        .expect("the second send returned while the first was writing");
    {
        let st = out.state.lock();
        assert!(st.writing);
        assert_eq!(st.queue.len(), 1);
    }
    go.send(()).expect("first sender waits");
    a.join().expect("first sender");
    let mut got = vec![0u8; 4 + first_len + 4 + 8];
    tokio::time::timeout(Duration::from_secs(10), peer.read_exact(&mut got))
        .await
        .expect("both records arrive")
        .expect("read");
    assert_eq!(got[4 + 4..4 + 4 + 1000], [1u8; 1000]);
    assert_eq!(
        got[4 + first_len..],
        [&record_header(8)[..], &[2u8; 8]].concat()
    );
    {
        let st = out.state.lock();
        assert!(st.queue.is_empty() && !st.writing);
    }
    out.state.lock().closing = true;
    out.wake.notify_one();
    writer.await.expect("writer").expect("writer done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_task_of_a_closing_connection_ends_after_the_last_writing_thread() {
    let (mut peer, _rd, out, writer) = small_socket().await;
    let (rec, entered, go) = gated_record(3, 100);
    let len = 4 + rec.wire_len();
    let out1 = out.clone();
    // a back-channel call has no in-flight permit: the connection may close while it is
    // being written
    let a = std::thread::spawn(move || assert!(out1.send(rec, None)));
    entered
        .recv_timeout(Duration::from_secs(10))
        .expect("the sender is writing");
    out.state.lock().closing = true;
    out.wake.notify_one();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !writer.is_finished(),
        "the writer task left while a thread was writing"
    );
    go.send(()).expect("sender waits");
    a.join().expect("sender");
    tokio::time::timeout(Duration::from_secs(10), writer)
        .await
        .expect("the writer task ends")
        .expect("writer")
        .expect("writer done");
    let mut got = vec![0u8; len];
    peer.read_exact(&mut got).await.expect("the record arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_with_spliced_payloads_arrive_whole_and_in_order() {
    let (mut peer, _rd, out, writer) = small_socket().await;
    // records of a header, a spliced payload of a length that needs padding, a bulk
    // payload and a trailer, sent in batches while nobody reads
    let mut expect = Vec::new();
    let mut batch = Vec::new();
    for (i, len) in [1usize, 70_001, 5, 300_002, 0, 65_536, 3]
        .into_iter()
        .enumerate()
    {
        let i = i as u8;
        let pages = bytes::Bytes::from(vec![i.wrapping_add(100); len]);
        let mut e = xdr::Encoder::new();
        e.u32(i as u32);
        e.opaque_payload(xdr::Payload::Pages(Arc::new(MemPages {
            data: pages.clone(),
            sent: parking_lot::Mutex::new(0),
        })));
        e.opaque_bulk(bytes::Bytes::from(vec![i; len % 7]));
        e.u32(0xdead_0000 | i as u32);
        let r = e.finish();
        let mut body = (i as u32).to_be_bytes().to_vec();
        body.extend_from_slice(&(len as u32).to_be_bytes());
        body.extend_from_slice(&pages);
        body.resize(body.len() + xdr::pad4(len) - len, 0);
        body.extend_from_slice(&((len % 7) as u32).to_be_bytes());
        body.extend(std::iter::repeat_n(i, len % 7));
        body.resize(body.len() + xdr::pad4(len % 7) - len % 7, 0);
        body.extend_from_slice(&(0xdead_0000u32 | i as u32).to_be_bytes());
        assert_eq!(r.wire_len(), body.len());
        expect.extend_from_slice(&record_header(body.len()));
        expect.extend_from_slice(&body);
        batch.push((r, None));
        if i % 2 == 1 {
            assert!(out.send_batch(&mut batch));
        }
    }
    assert!(out.send_batch(&mut batch));
    let mut got = vec![0u8; expect.len()];
    tokio::time::timeout(Duration::from_secs(20), peer.read_exact(&mut got))
        .await
        .expect("records stopped coming")
        .expect("read");
    assert!(got == expect, "records out of order or cut");
    out.state.lock().closing = true;
    out.wake.notify_one();
    writer.await.expect("writer").expect("writer done");
    assert_eq!(out.queued_bytes.load(Ordering::Acquire), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_finished_while_the_reader_is_busy_leaves_with_the_readers_next_write() {
    let (mut peer, _rd, out, writer) = small_socket().await;
    out.reader_busy();
    let out1 = out.clone();
    std::thread::spawn(move || assert!(out1.finish_call((record(1, 8), None))))
        .join()
        .expect("call thread");
    {
        let st = out.state.lock();
        assert_eq!(st.held.len(), 1, "held for the reader");
        assert!(st.queue.is_empty() && !st.writing);
    }
    let mut nothing = [0u8; 1];
    assert!(
        tokio::time::timeout(Duration::from_millis(50), peer.read(&mut nothing))
            .await
            .is_err(),
        "a held reply was written before the reader wrote"
    );
    // the reader goes to wait: its own reply and the held one leave together
    let mut ready = vec![(record(2, 4), None)];
    out.reader_idle(&mut ready);
    assert!(ready.is_empty());
    let mut got = vec![0u8; 4 + 4 + 4 + 8];
    tokio::time::timeout(Duration::from_secs(10), peer.read_exact(&mut got))
        .await
        .expect("both records arrive")
        .expect("read");
    let expect = [
        &record_header(4)[..],
        &[2u8; 4],
        &record_header(8),
        &[1u8; 8],
    ]
    .concat();
    assert_eq!(got, expect);
    // idle: a reply goes out from its thread at once
    assert!(out.finish_call((record(3, 4), None)));
    let mut got = vec![0u8; 8];
    tokio::time::timeout(Duration::from_secs(10), peer.read_exact(&mut got))
        .await
        .expect("the idle reader's connection writes at once")
        .expect("read");
    assert_eq!(got, [&record_header(4)[..], &[3u8; 4]].concat());
    // the reader idle with nothing of its own still sends what it held
    out.reader_busy();
    assert!(out.finish_call((record(4, 4), None)));
    out.reader_idle(&mut Vec::new());
    tokio::time::timeout(Duration::from_secs(10), peer.read_exact(&mut got))
        .await
        .expect("the held reply leaves when the reader waits")
        .expect("read");
    assert_eq!(got, [&record_header(4)[..], &[4u8; 4]].concat());
    out.state.lock().closing = true;
    out.wake.notify_one();
    writer.await.expect("writer").expect("writer done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_held_replies_than_a_write_takes_all_arrive() {
    let (mut peer, _rd, out, writer) = small_socket().await;
    out.reader_busy();
    const N: u8 = 40;
    for i in 0..N {
        assert!(out.finish_call((record(i, 4), None)));
    }
    assert_eq!(out.state.lock().held.len(), usize::from(N));
    out.reader_idle(&mut vec![(record(N, 4), None)]);
    let mut got = vec![0u8; usize::from(N + 1) * 8];
    tokio::time::timeout(Duration::from_secs(10), peer.read_exact(&mut got))
        .await
        .expect("every held reply arrives")
        .expect("read");
    let mut seen: Vec<u8> = got.chunks(8).map(|r| r[4]).collect();
    seen.sort_unstable();
    assert_eq!(seen, (0..=N).collect::<Vec<_>>());
    {
        let st = out.state.lock();
        assert!(st.held.is_empty() && st.queue.is_empty() && !st.writing);
    }
    out.state.lock().closing = true;
    out.wake.notify_one();
    writer.await.expect("writer").expect("writer done");
}

/// The congestion control of a connected socket, as the kernel reports it.
fn congestion_of(sock: &TcpStream) -> String {
    let name = socket2::SockRef::from(sock)
        .tcp_congestion()
        .expect("TCP_CONGESTION");
    String::from_utf8_lossy(&name)
        .trim_end_matches('\0')
        .to_string()
}

#[tokio::test]
async fn accepted_connections_get_the_congestion_control_configured_or_the_systems() {
    let system = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .expect("the system's congestion control")
        .trim()
        .to_string();
    // reno is built into every kernel; the other case leaves the system's alone
    let wanted = if system == "reno" { "cubic" } else { "reno" };
    for (congestion, expect) in [(Some(wanted), wanted), (None, system.as_str())] {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let (client, accepted) = tokio::join!(
            TcpStream::connect(l.local_addr().expect("addr")),
            l.accept()
        );
        let _client = client.expect("connect");
        let (sock, _) = accepted.expect("accept");
        let cfg = TcpConfig {
            congestion: congestion.map(Arc::from),
            ..TcpConfig::default()
        };
        tune(&sock, &cfg);
        assert_eq!(congestion_of(&sock), expect, "configured {congestion:?}");
        assert!(sock.nodelay().expect("nodelay"));
    }
}

#[test]
fn only_a_congestion_control_the_kernel_has_is_available() {
    congestion_available("reno").expect("reno is built into the kernel");
    let e = congestion_available("no-such-algorithm").expect_err("an unknown name");
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT), "{e}");
}

/// A connected pair: (accepted, client).
async fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let (client, accepted) = tokio::join!(
        TcpStream::connect(l.local_addr().expect("addr")),
        l.accept()
    );
    (accepted.expect("accept").0, client.expect("connect"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_for_a_call_ends_when_bytes_come_at_its_budget_or_when_another_polls() {
    use tokio::io::AsyncWriteExt;
    let (mut server, mut client) = pair().await;
    // nothing comes: it ends at its budget
    let t = std::time::Instant::now();
    assert_eq!(
        poll_for_call(&server, Duration::from_millis(30)).await,
        Some(false)
    );
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(30) && took < Duration::from_secs(5),
        "{took:?}"
    );

    // bytes come: it ends then, long before its budget, and leaves them to be read
    let writer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.write_all(b"call").await.expect("write");
        client
    });
    let t = std::time::Instant::now();
    assert_eq!(
        poll_for_call(&server, Duration::from_secs(30)).await,
        Some(true)
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let mut client = writer.await.expect("writer");
    let mut got = [0u8; 4];
    server.read_exact(&mut got).await.expect("read");
    assert_eq!(&got, b"call");

    // one reader polls at a time: another's poll ends at once, a later one polls again
    let (other, _other_client) = pair().await;
    let first = poll_for_call(&server, Duration::from_secs(30));
    tokio::pin!(first);
    // the first takes the turn and polls (yielding), without bytes it does not end
    assert!(tokio::time::timeout(Duration::from_millis(50), &mut first)
        .await
        .is_err());
    let t = std::time::Instant::now();
    assert_eq!(poll_for_call(&other, Duration::from_secs(30)).await, None);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // the peer closes: the first ends (the read that follows sees the end)
    client.shutdown().await.expect("shutdown");
    drop(client);
    let ended = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .expect("a closed connection ends the poll");
    assert_eq!(ended, Some(true), "the end of the connection is not a miss");
    let t = std::time::Instant::now();
    assert_eq!(
        poll_for_call(&other, Duration::from_millis(30)).await,
        Some(false)
    );
    assert!(
        t.elapsed() >= Duration::from_millis(30),
        "the turn was not given back"
    );
}

#[test]
fn lone_polling_backs_off_after_polls_that_find_nothing_and_resumes_after_one_that_does() {
    let mut lone = LonePoll::new(Duration::from_micros(50));
    // a call that was not alone on its connection is not followed by a poll
    assert!(!lone.wants(false));
    assert!(lone.wants(true));
    // each miss doubles the chances skipped: 1, 3, 7, ... up to 63
    let mut skipped = Vec::new();
    for _ in 0..8 {
        lone.polled(false);
        let mut n = 0;
        while !lone.wants(true) {
            n += 1;
            assert!(n < 1000, "never polls again");
        }
        skipped.push(n);
    }
    assert_eq!(skipped, [1, 3, 7, 15, 31, 63, 63, 63]);
    // calls not alone do not use up the skipped chances
    lone.polled(false);
    for _ in 0..100 {
        assert!(!lone.wants(false));
    }
    assert!(
        !lone.wants(true),
        "the skips were spent on calls that were not alone"
    );
    // a hit: it polls after every lone call again
    for _ in 0..62 {
        lone.wants(true);
    }
    assert!(lone.wants(true));
    lone.polled(true);
    assert!(lone.wants(true));
    assert!(lone.wants(true));
    // a zero budget never polls
    assert!(!LonePoll::new(Duration::ZERO).wants(true));
}

/// Answers with the name of the thread that ran the call: procedure 1 on the connection's
/// reader (it needs no waiting), procedure 2 only on a thread that may block.
struct WhereRan;

impl crate::dispatch::Program for WhereRan {
    fn program(&self) -> u32 {
        400_100
    }
    fn versions(&self) -> (u32, u32) {
        (1, 1)
    }
    fn proc_name(&self, _: u32, p: u32) -> Option<&'static str> {
        [None, Some("reader"), Some("blocking")][p.min(2) as usize]
    }
    fn call(
        &self,
        _: &crate::dispatch::CallContext,
        _: xdr::Decoder,
        r: &mut xdr::Encoder,
    ) -> Result<(), crate::dispatch::ProcError> {
        r.opaque(std::thread::current().name().unwrap_or("").as_bytes());
        Ok(())
    }
    fn call_nonblocking(
        &self,
        ctx: &crate::dispatch::CallContext,
        a: xdr::Decoder,
        r: &mut xdr::Encoder,
    ) -> Option<Result<(), crate::dispatch::ProcError>> {
        (ctx.proc_ == 1).then(|| self.call(ctx, a, r))
    }
}

/// A call record (marking and message) of procedure `proc_` of program `prog` version 1.
fn call_record(xid: u32, prog: u32, proc_: u32) -> Vec<u8> {
    let mut e = xdr::Encoder::new();
    crate::msg::encode_call(&mut e, xid, prog, 1, proc_, &crate::msg::Credential::None);
    let body = e.finish().to_bytes();
    let mut call = record_header(body.len()).to_vec();
    call.extend_from_slice(&body);
    call
}

/// The next reply on `sock`: its xid and its accepted results.
fn read_reply(sock: &mut std::net::TcpStream) -> (u32, xdr::Decoder) {
    use std::io::Read;
    let mut h = [0u8; 4];
    sock.read_exact(&mut h).expect("reply header");
    let mut reply = vec![0u8; (u32::from_be_bytes(h) & 0x7fff_ffff) as usize];
    sock.read_exact(&mut reply).expect("reply");
    let xid = u32::from_be_bytes([reply[0], reply[1], reply[2], reply[3]]);
    (
        xid,
        crate::msg::decode_success(reply.into()).expect("accepted"),
    )
}

/// Calls procedure `proc_` of [`WhereRan`] on `sock`: the name of the thread that ran it.
fn where_ran(sock: &mut std::net::TcpStream, proc_: u32) -> String {
    use std::io::Write;
    sock.write_all(&call_record(7, 400_100, proc_))
        .expect("send");
    let (_, mut d) = read_reply(sock);
    String::from_utf8(d.opaque(64).expect("name").to_vec()).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_served_on_the_least_loaded_connection_thread_each_staying_there() {
    let mut d = Dispatcher::new(16, Arc::new(crate::metrics::RpcMetrics::default()));
    d.register(Arc::new(WhereRan));
    let threads = IoThreads::new("iot-tcp", 2, None).expect("threads");
    let cfg = TcpConfig {
        io_threads: Some(threads.clone()),
        ..TcpConfig::default()
    };
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(serve_tcp(l, Arc::new(d), cfg));
    let names = tokio::task::spawn_blocking(move || {
        let mut socks: Vec<_> = (0..4)
            .map(|_| std::net::TcpStream::connect(addr).expect("connect"))
            .collect();
        let mut names = Vec::new();
        for _ in 0..3 {
            for s in socks.iter_mut() {
                names.push(where_ran(s, 1));
            }
        }
        // a call run on a call thread: its reply goes out on the connection's thread's socket
        let blocking = where_ran(&mut socks[0], 2);
        assert!(!blocking.starts_with("iot-tcp"), "{blocking}");
        names
    })
    .await
    .expect("client");
    // connected in turn, each to the thread with fewer: two and two; a connection's calls
    // run on its thread every time
    let first: Vec<_> = names[..4].to_vec();
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(sorted, ["iot-tcp-0", "iot-tcp-0", "iot-tcp-1", "iot-tcp-1"]);
    for round in names.chunks(4) {
        assert_eq!(round, first.as_slice());
    }
    // the clients closed: their connections leave the threads
    tokio::task::spawn_blocking(move || threads.wait_idle())
        .await
        .expect("connections left");
}

/// Procedure 1 takes 2 ms; procedure 2 waits (up to 10 s) until the test has seen the reply
/// of a call before it, and answers whether it saw it. Both run on the reader.
#[derive(Default)]
struct Paced {
    seen: parking_lot::Mutex<bool>,
    told: parking_lot::Condvar,
}

impl crate::dispatch::Program for Paced {
    fn program(&self) -> u32 {
        400_101
    }
    fn versions(&self) -> (u32, u32) {
        (1, 1)
    }
    fn proc_name(&self, _: u32, p: u32) -> Option<&'static str> {
        [None, Some("slow"), Some("gated")][p.min(2) as usize]
    }
    fn call(
        &self,
        ctx: &crate::dispatch::CallContext,
        _: xdr::Decoder,
        r: &mut xdr::Encoder,
    ) -> Result<(), crate::dispatch::ProcError> {
        if ctx.proc_ == 1 {
            std::thread::sleep(Duration::from_millis(2));
            r.u32(1);
            return Ok(());
        }
        let mut seen = self.seen.lock();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !*seen && !self.told.wait_until(&mut seen, deadline).timed_out() {}
        r.u32(u32::from(*seen));
        Ok(())
    }
    fn call_nonblocking(
        &self,
        ctx: &crate::dispatch::CallContext,
        a: xdr::Decoder,
        r: &mut xdr::Encoder,
    ) -> Option<Result<(), crate::dispatch::ProcError>> {
        Some(self.call(ctx, a, r))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_of_a_slow_call_run_on_the_reader_does_not_wait_for_the_next_call() {
    use std::io::Write;
    let paced = Arc::new(Paced::default());
    let mut d = Dispatcher::new(16, Arc::new(crate::metrics::RpcMetrics::default()));
    d.register(paced.clone());
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    tokio::spawn(serve_tcp(l, Arc::new(d), TcpConfig::default()));
    let gated = tokio::task::spawn_blocking(move || {
        let mut sock = std::net::TcpStream::connect(addr).expect("connect");
        // both calls in one write: the reader runs them one after the other
        let mut calls = call_record(1, 400_101, 1);
        calls.extend(call_record(2, 400_101, 2));
        sock.write_all(&calls).expect("send");
        let mut answer = || {
            let (xid, mut d) = read_reply(&mut sock);
            (xid, d.u32().expect("result"))
        };
        assert_eq!(
            answer(),
            (1, 1),
            "the slow call's reply, while the next one runs"
        );
        *paced.seen.lock() = true;
        paced.told.notify_all();
        answer()
    })
    .await
    .expect("client");
    assert_eq!(
        gated,
        (2, 1),
        "the gated call saw the slow one's reply arrive"
    );
}
