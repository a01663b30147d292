//! Overload: 1,000 connections, 10,000 calls in flight, slowloris, a client that never reads its
//! replies, oversized records. The server's memory stays bounded by its configuration (its RSS
//! is printed), other clients keep being served (their NULL round trip p50 / p99 is printed;
//! `cargo test --test overload -- --nocapture` shows the figures), and every limit the server
//! enforces is logged and counted.

// System calls the tests make themselves (signals, limits, device nodes, holes, credentials)
// to set up and check what they test.
#![allow(unsafe_code)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::*;
use nfs3wire::*;

const NFS_V3_NULL: u32 = 0;
const MIB: usize = 1 << 20;

/// Lets this process hold `n` descriptors (1,000 client sockets need more than the usual 1,024
/// soft limit leaves).
fn raise_nofile(n: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the rlimit struct it is given, which lives on our stack.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    let want = n.max(lim.rlim_cur);
    lim.rlim_cur = want;
    lim.rlim_max = lim.rlim_max.max(want);
    // SAFETY: setrlimit only reads the struct; raising the hard limit needs root, as tests have.
    assert_eq!(
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) },
        0,
        "setrlimit NOFILE {n}"
    );
}

/// NULL round trips on a fresh connection: (p50, p99, max).
fn null_latency(port: u16, n: usize) -> (Duration, Duration, Duration) {
    let mut c = RpcClient::connect(port);
    let mut t: Vec<Duration> = (0..n)
        .map(|_| {
            let t0 = Instant::now();
            assert_eq!(c.null(), RpcReply::Success(bytes::Bytes::new()));
            t0.elapsed()
        })
        .collect();
    t.sort();
    (t[n / 2], t[n * 99 / 100], t[n - 1])
}

fn null_record(c: &mut RpcClient) -> (u32, Vec<u8>) {
    let (xid, body) = c.build_call(NFS3_PROGRAM, NFS_V3, NFS_V3_NULL, &Void);
    let mut rec = (0x8000_0000u32 | body.len() as u32).to_be_bytes().to_vec();
    rec.extend_from_slice(&body);
    (xid, rec)
}

fn rss_mib(s: &Server, field: &str) -> f64 {
    s.status_kib(field) as f64 / 1024.0
}

fn events(s: &Server, kind: &str) -> u64 {
    let text = http_get(s.metrics.expect("metrics endpoint"), "/metrics");
    metric(&text, &format!("rnfs_rpc_events_total{{kind=\"{kind}\"}}")).unwrap_or(0)
}

/// Whether the server logs `needle` within 10 s (its log reaches us through a pipe, after the
/// client may already have seen the effect).
fn logged(s: &Server, needle: &str) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if s.log_text().contains(needle) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Waits until the server closes `s` (read returns 0 or an error); how long that took.
fn wait_closed(s: &mut TcpStream, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0u8; 4096];
    while t0.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(t0.elapsed()),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return Some(t0.elapsed()),
        }
    }
    None
}

#[test]
fn thousand_connections_are_all_served() {
    raise_nofile(4096);
    let fx = Fixture::with_metrics();
    let port = fx.server.port;
    let before = rss_mib(&fx.server, "VmRSS");
    let mut conns: Vec<RpcClient> = (0..1000).map(|_| RpcClient::connect(port)).collect();
    // every connection has a call in flight at once, then all replies are read
    let xids: Vec<u32> = conns
        .iter_mut()
        .map(|c| c.send_call(NFS3_PROGRAM, NFS_V3, NFS_V3_NULL, &Void))
        .collect();
    let (p50, p99, max) = null_latency(port, 300);
    for (c, xid) in conns.iter_mut().zip(xids) {
        let (rxid, r) = c.recv_reply();
        assert_eq!(rxid, xid);
        assert_eq!(r, RpcReply::Success(bytes::Bytes::new()));
    }
    let after = rss_mib(&fx.server, "VmRSS");
    let peak = rss_mib(&fx.server, "VmHWM");
    eprintln!(
        "1000 connections: RSS {before:.1} -> {after:.1} MiB (peak {peak:.1}); \
         NULL on another connection p50 {p50:?} p99 {p99:?} max {max:?}"
    );
    // 1,000 idle connections cost their 64 KiB receive buffers and little else
    assert!(
        after - before < 160.0,
        "RSS grew by {:.1} MiB for 1000 connections",
        after - before
    );
    drop(conns);
    assert_serves_new_connection(port);
}

#[test]
fn connections_over_the_limit_are_refused_and_logged() {
    let fx = Fixture::with_args(&["--max-connections", "50"]);
    let port = fx.server.port;
    let mut held: Vec<RpcClient> = (0..50).map(|_| RpcClient::connect(port)).collect();
    for c in held.iter_mut() {
        assert_eq!(c.null(), RpcReply::Success(bytes::Bytes::new()));
    }
    // the 51st is accepted by the kernel and closed by the server at once
    let mut extra = TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(
        wait_closed(&mut extra, Duration::from_secs(10)).is_some(),
        "connection over the limit was not closed"
    );
    assert!(events(&fx.server, "tcp_connection_refused") >= 1);
    assert!(logged(&fx.server, "connection limit reached"));
    // the 50 keep being served, and a slot that frees up is usable again
    for c in held.iter_mut().take(5) {
        assert_eq!(c.null(), RpcReply::Success(bytes::Bytes::new()));
    }
    held.pop();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut c = RpcClient::connect(port);
        c.set_read_timeout(Duration::from_secs(2));
        let xid = c.send_call(NFS3_PROGRAM, NFS_V3, NFS_V3_NULL, &Void);
        if let Ok(rec) = c.read_record() {
            assert_eq!(parse_reply(rec).0, xid);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "freed connection slot not reusable"
        );
    }
}

#[test]
fn ten_thousand_calls_in_flight_are_answered() {
    let fx = Fixture::with_metrics();
    let port = fx.server.port;
    let before = rss_mib(&fx.server, "VmRSS");
    // 10 connections pipeline 1,000 calls each (GETATTR and NULL), replies read concurrently
    let (mut c0, root) = fx.connect();
    let t0 = Instant::now();
    let workers: Vec<_> = (0..10)
        .map(|i| {
            let mut c = if i == 0 {
                std::mem::replace(&mut c0, RpcClient::connect(port))
            } else {
                RpcClient::connect(port)
            };
            let getattr = Getattr3args {
                object: root.clone(),
            };
            std::thread::spawn(move || {
                let mut reader = c.reader();
                let mut batch = Vec::with_capacity(1000 * 150);
                let mut xids = Vec::with_capacity(1000);
                for k in 0..1000 {
                    let (xid, body) = if k % 2 == 0 {
                        c.build_call(NFS3_PROGRAM, NFS_V3, NFSPROC3_GETATTR, &getattr)
                    } else {
                        c.build_call(NFS3_PROGRAM, NFS_V3, NFS_V3_NULL, &Void)
                    };
                    batch.extend_from_slice(&(0x8000_0000u32 | body.len() as u32).to_be_bytes());
                    batch.extend_from_slice(&body);
                    xids.push(xid);
                }
                let sender = std::thread::spawn(move || c.send_raw(&batch).map(|_| c));
                let mut seen = std::collections::HashSet::new();
                for _ in 0..1000 {
                    let (xid, r) = reader.recv_reply();
                    assert!(matches!(r, RpcReply::Success(_)), "call {xid:#x}: {r:?}");
                    assert!(seen.insert(xid), "xid {xid:#x} answered twice");
                }
                let _c = sender.join().unwrap().expect("send 1000 calls");
                assert!(
                    xids.iter().all(|x| seen.contains(x)),
                    "a call went unanswered"
                );
            })
        })
        .collect();
    let (p50, p99, max) = null_latency(port, 200);
    for w in workers {
        w.join().unwrap();
    }
    let dt = t0.elapsed();
    let after = rss_mib(&fx.server, "VmRSS");
    let peak = rss_mib(&fx.server, "VmHWM");
    eprintln!(
        "10,000 calls pipelined on 10 connections in {dt:?}: RSS {before:.1} -> {after:.1} MiB \
         (peak {peak:.1}); NULL on another connection meanwhile p50 {p50:?} p99 {p99:?} max {max:?}"
    );
    assert!(
        peak - before < 200.0,
        "peak RSS grew by {:.1} MiB",
        peak - before
    );
}

#[test]
fn slowloris_connections_are_closed_others_served() {
    let fx = Fixture::with_args(&["--record-timeout", "2"]);
    let port = fx.server.port;
    // 200 connections announce a 1 MiB record and send 10 bytes of it, one half-header
    let mut slow: Vec<TcpStream> = (0..200)
        .map(|i| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            if i == 0 {
                s.write_all(&[0x80, 0x00]).unwrap();
            } else {
                s.write_all(&(0x8000_0000u32 | MIB as u32).to_be_bytes())
                    .unwrap();
                s.write_all(&[0u8; 10]).unwrap();
            }
            s
        })
        .collect();
    let (p50, p99, max) = null_latency(port, 200);
    eprintln!("200 slowloris connections: NULL p50 {p50:?} p99 {p99:?} max {max:?}");
    // one of them keeps trickling a byte every 500 ms: the limit is on the whole record
    let t0 = Instant::now();
    let mut closed_at = None;
    while t0.elapsed() < Duration::from_secs(15) {
        if slow[1].write_all(&[0]).is_err() {
            closed_at = Some(t0.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let closed_at = closed_at.expect("a trickling connection was never closed");
    assert!(
        closed_at < Duration::from_secs(8),
        "closed after {closed_at:?}"
    );
    for (i, s) in slow.iter_mut().enumerate() {
        assert!(
            wait_closed(s, Duration::from_secs(10)).is_some(),
            "slow connection {i} still open"
        );
    }
    assert!(events(&fx.server, "tcp_record_timeout") >= 200);
    assert!(fx
        .server
        .log_text()
        .contains("record not completed in time"));
    // an idle connection (no record begun) is not a slow one: it stays open and usable
    let mut idle = RpcClient::connect(port);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(idle.null(), RpcReply::Success(bytes::Bytes::new()));
}

#[test]
fn client_that_never_reads_is_bounded_and_disconnected() {
    let fx = Fixture::with_args(&[
        "--max-in-flight",
        "16",
        "--max-queued-reply-bytes",
        "4194304",
        "--write-timeout",
        "3",
    ]);
    let port = fx.server.port;
    let (mut c, root) = fx.connect();
    let file = c.create_ok(&root, "big", 0o644);
    let data = bytes::Bytes::from(pattern(7, MIB));
    assert!(matches!(
        c.write(&file, 0, data, StableHow::FileSync),
        Write3res::Ok(_)
    ));
    let before = rss_mib(&fx.server, "VmRSS");
    // 2,000 READs of 1 MiB, never reading a reply: 2 GiB the server must not buffer
    let mut hog = RpcClient::connect(port);
    let read = Read3args {
        file: file.clone(),
        offset: 0,
        count: MIB as u32,
    };
    let mut batch = Vec::new();
    for _ in 0..2000 {
        let (_, body) = hog.build_call(NFS3_PROGRAM, NFS_V3, NFSPROC3_READ, &read);
        batch.extend_from_slice(&(0x8000_0000u32 | body.len() as u32).to_be_bytes());
        batch.extend_from_slice(&body);
    }
    let mut raw = hog.reader();
    let sender = std::thread::spawn(move || {
        // blocks once the server stops reading; fails when it disconnects
        let _ = hog.send_raw(&batch);
    });
    std::thread::sleep(Duration::from_secs(1));
    let (p50, p99, max) = null_latency(port, 200);
    // others are served meanwhile, reads included
    let got = c.read_all(&file, MIB as u32);
    assert_eq!(got.len(), MIB);
    let peak = rss_mib(&fx.server, "VmHWM");
    eprintln!(
        "client not reading 2,000 x 1 MiB READs: RSS before {before:.1} MiB, peak {peak:.1} MiB; \
         NULL on another connection p50 {p50:?} p99 {p99:?} max {max:?}"
    );
    // 16 calls in flight of 1 MiB replies plus 4 MiB queued (and socket buffers)
    assert!(
        peak - before < 96.0,
        "peak RSS grew by {:.1} MiB",
        peak - before
    );
    // the server gives up on it after the write timeout
    let t0 = Instant::now();
    let mut closed = false;
    while t0.elapsed() < Duration::from_secs(30) {
        if fx
            .server
            .log_text()
            .contains("client took no reply bytes in time")
        {
            closed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(closed, "a client that never reads was not disconnected");
    drop(raw.read_raw(&mut [0u8; 1]));
    sender.join().unwrap();
    assert_serves_new_connection(port);
}

#[test]
fn oversized_records_close_only_their_connection() {
    let fx = Fixture::with_args(&["--max-record", "65536"]);
    let port = fx.server.port;
    let mut good = RpcClient::connect(port);
    // a single fragment over the limit, and fragments adding up past it
    let mut big = TcpStream::connect(("127.0.0.1", port)).unwrap();
    big.write_all(&(0x8000_0000u32 | 65537).to_be_bytes())
        .unwrap();
    let mut frags = TcpStream::connect(("127.0.0.1", port)).unwrap();
    for _ in 0..3 {
        frags.write_all(&30000u32.to_be_bytes()).unwrap();
        let _ = frags.write_all(&vec![0u8; 30000]);
    }
    assert!(wait_closed(&mut big, Duration::from_secs(10)).is_some());
    assert!(wait_closed(&mut frags, Duration::from_secs(10)).is_some());
    assert!(events(&fx.server, "tcp_bad_record") >= 2);
    assert!(logged(&fx.server, "exceeds the maximum"));
    // a record of exactly the limit is fine
    let (xid, mut rec) = null_record(&mut good);
    let body_len = 65536usize;
    let pad = body_len - (rec.len() - 4);
    rec.extend(std::iter::repeat_n(0u8, pad));
    rec[..4].copy_from_slice(&(0x8000_0000u32 | body_len as u32).to_be_bytes());
    good.send_raw(&rec).unwrap();
    let (rxid, _) = good.recv_reply();
    assert_eq!(rxid, xid);
    assert_eq!(good.null(), RpcReply::Success(bytes::Bytes::new()));
}
