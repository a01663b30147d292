//! Crash consistency: the server is killed with SIGKILL in the middle of a write workload. Every
//! write it acknowledged as FILE_SYNC, and every UNSTABLE write that a successful COMMIT with the
//! same verifier covered, is in the files afterwards (checked against checksums of what was
//! written); the write verifier changes, which tells the client to resend its other unstable
//! writes; and a client that does so ends with exactly its data. (NFSv4 state after a crash:
//! nfs4_reclaim.rs; the kernel client: the `crash` case of tests/vm.)

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use nfs3wire::*;

const CHUNK: usize = 64 * 1024;
const FILES: usize = 4;

/// One WRITE the client made: where, what (checksummed), how it was acknowledged.
#[derive(Clone)]
struct Sent {
    file: usize,
    offset: u64,
    seed: u64,
    verf: Writeverf3,
    /// FILE_SYNC acknowledged, or covered by a COMMIT that returned the same verifier.
    durable: bool,
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// One call and its reply, or the transport error (the server is gone).
fn try_call<A: xdr::Encode, R: xdr::Decode>(
    c: &mut RpcClient,
    p: u32,
    args: &A,
) -> std::io::Result<R> {
    let xid = c.send_call(NFS3_PROGRAM, NFS_V3, p, args);
    let rec = c.read_record()?;
    let (rxid, r) = parse_reply(rec);
    assert_eq!(rxid, xid);
    match r {
        RpcReply::Success(body) => Ok(decode_all(body)),
        other => panic!("procedure {p} not accepted: {other:?}"),
    }
}

#[test]
fn acknowledged_writes_survive_sigkill_and_unstable_ones_are_resent() {
    let mut fx = Fixture::new();
    let (mut c, root) = fx.connect();
    let fhs: Vec<NfsFh3> = (0..FILES)
        .map(|i| c.create_ok(&root, format!("f{i}"), 0o644))
        .collect();
    let log: Arc<Mutex<Vec<Sent>>> = Arc::default();
    let done = Arc::new(AtomicUsize::new(0));
    let (log2, done2, fhs2) = (log.clone(), done.clone(), fhs.clone());
    // the client: appends 64 KiB chunks round-robin over the files, every third FILE_SYNC and
    // the others UNSTABLE with a COMMIT of every file after each 8 writes, until the server dies
    let workload = std::thread::spawn(move || {
        c.set_read_timeout(Duration::from_secs(30));
        for i in 0.. {
            let file = i % FILES;
            let offset = ((i / FILES) * CHUNK) as u64;
            let seed = 1000 + i as u64;
            let stable = if i % 3 == 0 {
                StableHow::FileSync
            } else {
                StableHow::Unstable
            };
            let data = Bytes::from(pattern(seed, CHUNK));
            // logged before it is sent: a WRITE the server executed but never answered is
            // in the file, and the client resends it like any unacknowledged write
            log2.lock().unwrap().push(Sent {
                file,
                offset,
                seed,
                verf: [0; 8],
                durable: false,
            });
            let r: std::io::Result<Write3res> = try_call(
                &mut c,
                NFSPROC3_WRITE,
                &write_args(&fhs2[file], offset, data, stable),
            );
            let Ok(r) = r else { return };
            let ok = r.expect_ok("WRITE");
            assert_eq!(ok.count as usize, CHUNK);
            if let Some(last) = log2.lock().unwrap().last_mut() {
                last.verf = ok.verf;
                last.durable = ok.committed == StableHow::FileSync;
            }
            done2.fetch_add(1, Ordering::Release);
            if i % 8 == 7 {
                for (f, fh) in fhs2.iter().enumerate() {
                    let args = Commit3args {
                        file: fh.clone(),
                        offset: 0,
                        count: 0,
                    };
                    let r: std::io::Result<Commit3res> = try_call(&mut c, NFSPROC3_COMMIT, &args);
                    let Ok(r) = r else { return };
                    let verf = r.expect_ok("COMMIT").verf;
                    for s in log2.lock().unwrap().iter_mut() {
                        if s.file == f && s.verf == verf {
                            s.durable = true;
                        }
                    }
                }
            }
        }
    });
    let t0 = Instant::now();
    while done.load(Ordering::Acquire) < 300 {
        assert!(t0.elapsed() < Duration::from_secs(120), "workload too slow");
        std::thread::sleep(Duration::from_millis(5));
    }
    fx.server.crash_and_restart();
    workload.join().unwrap();
    let sent = log.lock().unwrap().clone();
    let old_verf = sent[0].verf;
    assert_ne!(old_verf, [0; 8]);
    let durable = sent.iter().filter(|s| s.durable).count();
    eprintln!(
        "killed after {} writes sent, {durable} of them acknowledged FILE_SYNC or committed",
        sent.len()
    );
    assert!(
        durable >= 100,
        "too few durable writes to check ({durable})"
    );

    // Every durable write is in the file, byte for byte.
    let on_disk: Vec<Vec<u8>> = (0..FILES)
        .map(|i| std::fs::read(fx.export.join(format!("f{i}"))).unwrap())
        .collect();
    for s in sent.iter().filter(|s| s.durable) {
        let f = &on_disk[s.file];
        let at = s.offset as usize;
        assert!(
            f.len() >= at + CHUNK,
            "f{} is {} bytes: lost the durable write at {}",
            s.file,
            f.len(),
            s.offset
        );
        assert_eq!(
            fnv(&f[at..at + CHUNK]),
            fnv(&pattern(s.seed, CHUNK)),
            "durable write to f{} at {} is not on disk",
            s.file,
            s.offset
        );
    }

    // The restarted server has a new verifier: the client resends what was not durable and
    // commits; then every file is exactly what the client wrote.
    let mut c = fx.server.client();
    let new_verf = c.commit(&fhs[0]).expect_ok("COMMIT after restart").verf;
    assert_ne!(
        new_verf, old_verf,
        "write verifier unchanged across a crash"
    );
    let mut resent = 0;
    for s in sent.iter().filter(|s| !s.durable) {
        let data = Bytes::from(pattern(s.seed, CHUNK));
        let w = c
            .write(&fhs[s.file], s.offset, data, StableHow::Unstable)
            .expect_ok("WRITE resent");
        assert_eq!(w.verf, new_verf);
        resent += 1;
    }
    let mut want: HashMap<usize, Vec<u8>> = HashMap::new();
    for s in &sent {
        let f = want.entry(s.file).or_default();
        let end = s.offset as usize + CHUNK;
        if f.len() < end {
            f.resize(end, 0);
        }
        f[s.offset as usize..end].copy_from_slice(&pattern(s.seed, CHUNK));
    }
    for (i, fh) in fhs.iter().enumerate() {
        assert_eq!(c.commit(fh).expect_ok("COMMIT").verf, new_verf);
        let got = c.read_all(fh, 1 << 20);
        let w = want.remove(&i).unwrap_or_default();
        assert_eq!(got.len(), w.len(), "f{i} length after resending");
        assert!(got == w, "f{i} differs from what the client wrote");
    }
    eprintln!("resent {resent} unstable writes; all {FILES} files match");
}
