//! A 256 MiB file written with pipelined 1 MiB UNSTABLE WRITEs, committed, and read back with
//! pipelined 1 MiB READs; per-chunk checksums must match.

mod common;

use std::collections::HashMap;
use std::hash::Hasher;
use std::time::Instant;

use bytes::Bytes;
use common::*;
use nfs3wire::*;

const SIZE: usize = 256 << 20;
const CHUNK: usize = 1 << 20;
const CHUNKS: usize = SIZE / CHUNK;
/// Calls in flight at once on the connection.
const WINDOW: usize = 16;

fn checksum(data: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(data);
    h.finish()
}

fn chunk(i: usize) -> Bytes {
    Bytes::from(pattern(0x5eed_0000 + i as u64, CHUNK))
}

fn accepted(r: RpcReply, what: &str) -> Bytes {
    match r {
        RpcReply::Success(b) => b,
        other => panic!("{what} not accepted: {other:?}"),
    }
}

#[test]
fn write_256mib_unstable_commit_and_read_back() {
    let fx = Fixture::new();
    let (mut c, root) = fx.connect();
    let fh = c.create_ok(&root, "big", 0o644);
    let info = c.fsinfo(&root).expect_ok("FSINFO");
    assert!(info.wtmax as usize >= CHUNK && info.rtmax as usize >= CHUNK);

    // WRITE, UNSTABLE, WINDOW calls in flight.
    let t0 = Instant::now();
    let mut written = vec![0u64; CHUNKS];
    let mut inflight: HashMap<u32, usize> = HashMap::new();
    let (mut next, mut done) = (0, 0);
    let mut verf: Option<[u8; 8]> = None;
    while done < CHUNKS {
        while next < CHUNKS && inflight.len() < WINDOW {
            let data = chunk(next);
            written[next] = checksum(&data);
            let args = write_args(&fh, (next * CHUNK) as u64, data, StableHow::Unstable);
            let xid = c.send_call(NFS3_PROGRAM, NFS_V3, NFSPROC3_WRITE, &args);
            inflight.insert(xid, next);
            next += 1;
        }
        let (xid, r) = c.recv_reply();
        let i = inflight.remove(&xid).expect("reply to an unknown xid");
        let w = decode_all::<Write3res>(accepted(r, "WRITE")).expect_ok("WRITE");
        assert_eq!(w.count as usize, CHUNK, "short write of chunk {i}");
        assert_eq!(
            *verf.get_or_insert(w.verf),
            w.verf,
            "write verifier changed"
        );
        done += 1;
    }
    let cm = c.commit(&fh).expect_ok("COMMIT");
    assert_eq!(Some(cm.verf), verf, "COMMIT verifier differs from WRITE's");
    let write_time = t0.elapsed();
    assert_eq!(c.getattr(&fh).expect_ok("GETATTR").size, SIZE as u64);
    assert_eq!(
        std::fs::metadata(fx.export.join("big")).unwrap().len(),
        SIZE as u64
    );

    // READ it back, WINDOW calls in flight.
    let t1 = Instant::now();
    let mut read = vec![0u64; CHUNKS];
    let (mut next, mut done) = (0, 0);
    while done < CHUNKS {
        while next < CHUNKS && inflight.len() < WINDOW {
            let args = Read3args {
                file: fh.clone(),
                offset: (next * CHUNK) as u64,
                count: CHUNK as u32,
            };
            let xid = c.send_call(NFS3_PROGRAM, NFS_V3, NFSPROC3_READ, &args);
            inflight.insert(xid, next);
            next += 1;
        }
        let (xid, r) = c.recv_reply();
        let i = inflight.remove(&xid).expect("reply to an unknown xid");
        let rd = decode_all::<Read3res>(accepted(r, "READ")).expect_ok("READ");
        assert_eq!(rd.data.len(), CHUNK, "short read of chunk {i}");
        assert_eq!(rd.count as usize, CHUNK);
        assert_eq!(rd.eof, i == CHUNKS - 1, "eof flag of chunk {i}");
        read[i] = checksum(rd.data.in_memory().expect("decoded"));
        done += 1;
    }
    let read_time = t1.elapsed();
    // Past the end: nothing, eof.
    let tail = c.read(&fh, SIZE as u64, 4096).expect_ok("READ past end");
    assert!(tail.data.is_empty() && tail.eof);

    for i in 0..CHUNKS {
        assert_eq!(read[i], written[i], "checksum of chunk {i} differs");
    }
    let total = |v: &[u64]| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for x in v {
            h.write_u64(*x);
        }
        h.finish()
    };
    assert_eq!(total(&read), total(&written));
    eprintln!(
        "256 MiB: write+commit {:.1} s, read {:.1} s (debug build)",
        write_time.as_secs_f64(),
        read_time.as_secs_f64()
    );
}
