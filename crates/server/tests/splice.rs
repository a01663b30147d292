//! READ data spliced from the page cache into the socket (`--splice-reads always`: loopback
//! clients otherwise get copies): every byte as in the file, at any offset and size, with
//! replies cut by a full socket, and a bounded number of pipes.

mod common;

use std::collections::HashMap;

use common::*;
use nfs3wire::*;

/// A file of `len` pattern bytes in the export, with its handle.
fn file(
    fx: &Fixture,
    c: &mut RpcClient,
    root: &NfsFh3,
    name: &str,
    len: usize,
) -> (NfsFh3, Vec<u8>) {
    let data = pattern(len as u64, len);
    std::fs::write(fx.export.join(name), &data).unwrap();
    (c.lookup_ok(root, name), data)
}

/// Sends a READ without waiting for its reply; returns its xid.
fn send_read(c: &mut RpcClient, fh: &NfsFh3, offset: u64, count: u32) -> u32 {
    c.send_call(
        NFS3_PROGRAM,
        NFS_V3,
        NFSPROC3_READ,
        &Read3args {
            file: fh.clone(),
            offset,
            count,
        },
    )
}

/// Pipes the server holds open.
fn pipes(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| t.to_string_lossy().starts_with("pipe:"))
        .count()
}

#[test]
fn spliced_reads_return_the_files_bytes_at_any_offset_and_size() {
    let fx = Fixture::with_args(&["--splice-reads", "always"]);
    let (mut c, root) = fx.connect();
    let len = 3 * (1 << 20) + 1234;
    let (fh, data) = file(&fx, &mut c, &root, "f", len);
    let cases: [(usize, u32); 9] = [
        (0, 1 << 20),            // page aligned, the largest READ
        (100, 1 << 20),          // one page more than a MiB of pages
        ((1 << 20) - 3, 65_541), // just above the size that is copied
        (4095, 65_536),
        (12_345, 65_535),      // below it: copied
        (len - 1000, 1 << 20), // short, at the end of the file
        (len - 1, 1 << 20),
        (len, 1 << 20), // at the end: nothing
        (len + 5000, 1 << 20),
    ];
    for (off, count) in cases {
        let r = c.read(&fh, off as u64, count).expect_ok("READ");
        let end = (off + count as usize).min(len).max(off.min(len));
        let want = &data[off.min(len)..end];
        let got = r.data.in_memory().expect("decoded");
        assert_eq!(got.len(), want.len(), "READ of {count} at {off}: length");
        assert!(got[..] == want[..], "READ of {count} at {off}: bytes");
        assert_eq!(r.count as usize, want.len());
        assert_eq!(r.eof, end == len, "READ of {count} at {off}: eof");
        let attr = r.file_attributes.0.expect("post-op attributes");
        assert_eq!(attr.size, len as u64);
    }
    // the file as a whole, in the client's usual READs
    assert!(c.read_all(&fh, 1 << 20) == data);
    assert!(c.read_all(&fh, 256 * 1024) == data);
    assert!(pipes(fx.server.pid()) > 0, "no READ was spliced");
}

#[test]
fn pipelined_spliced_replies_arrive_whole_while_the_client_is_slow() {
    let fx = Fixture::with_args(&["--splice-reads", "always"]);
    let (mut c, root) = fx.connect();
    let len = 8 << 20;
    let (fh, data) = file(&fx, &mut c, &root, "big", len);
    // more than the socket holds: replies are cut, queued and sent on as the client reads
    let mut want = HashMap::new();
    for i in 0..40usize {
        let off = (i * 700_001) % (len - 4096);
        let count = [1 << 20, 65_536, 200_003, 4096][i % 4];
        let xid = send_read(&mut c, &fh, off as u64, count);
        want.insert(xid, (off, count as usize));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    while !want.is_empty() {
        let (xid, r) = c.recv_reply();
        let (off, count) = want
            .remove(&xid)
            .expect("reply for an unknown or repeated xid");
        let RpcReply::Success(body) = r else {
            panic!("READ at {off} not accepted: {r:?}");
        };
        let r = decode_all::<Read3res>(body).expect_ok("READ");
        let end = (off + count).min(len);
        assert!(
            r.data.in_memory().expect("decoded")[..] == data[off..end],
            "READ of {count} at {off}"
        );
    }
    // the pipes went back to the pool: no more than it keeps
    let held = pipes(fx.server.pid());
    assert!(held <= 2 * 128, "{held} pipe ends open");
    // and are used again
    assert!(c.read_all(&fh, 1 << 20) == data);
    assert_eq!(pipes(fx.server.pid()), held, "pipes are reused");
}

#[test]
fn a_client_that_leaves_with_replies_unsent_leaves_no_pipe_behind() {
    let fx = Fixture::with_args(&["--splice-reads", "always"]);
    let (mut c, root) = fx.connect();
    let len = 4 << 20;
    let (fh, data) = file(&fx, &mut c, &root, "f", len);
    assert!(c.read_all(&fh, 1 << 20) == data);
    let before = pipes(fx.server.pid());
    for _ in 0..8 {
        let (mut gone, _) = fx.connect();
        for i in 0..16u64 {
            send_read(&mut gone, &fh, (i % 4) << 20, 1 << 20);
        }
        drop(gone);
    }
    // replies that were never sent close their pipes; at most the pool's worth stay open
    let after = pipes(fx.server.pid());
    assert!(after <= 2 * 128, "{after} pipe ends open, {before} before");
    // the server still serves
    let (mut c, _) = fx.connect();
    let r = c.read(&fh, 5, 1 << 20).expect_ok("READ");
    assert!(r.data.in_memory().expect("decoded")[..] == data[5..(1 << 20) + 5]);
}
