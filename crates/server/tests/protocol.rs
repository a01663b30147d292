//! RPC and NFSv3 protocol behaviour of the running server, driven by the raw client: malformed
//! calls, pipelining, large directories with cookie continuation, restarts and metrics.

mod common;

use std::collections::HashMap;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use nfs3wire::*;
use xdr::Encoder;

// ---------------------------------------------------------------------------------------------
// Malformed calls
// ---------------------------------------------------------------------------------------------

/// Whether the connection produced no reply: the read timed out or the server closed it.
fn no_reply(c: &mut RpcClient, wait: Duration) -> Result<(), String> {
    c.set_read_timeout(wait);
    match c.read_record() {
        Ok(r) => Err(format!("unexpected reply {:?}", parse_reply(r))),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::WouldBlock
                    | ErrorKind::TimedOut
                    | ErrorKind::UnexpectedEof
                    | ErrorKind::ConnectionReset
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(format!("unexpected error {e}")),
    }
}

/// A record holding only the start of a call header gets no reply.
fn case_truncated_header(port: u16) {
    for cut in [0usize, 3, 8, 10] {
        let mut c = RpcClient::connect(port);
        let (_, body) = c.build_call(NFS3_PROGRAM, NFS_V3, 0, &Void);
        c.send_record(&body[..cut]).unwrap();
        if let Err(e) = no_reply(&mut c, Duration::from_secs(2)) {
            panic!("call header cut at {cut} bytes: {e}");
        }
    }
    assert_serves_new_connection(port);
}

/// A credential body whose length is 0xffffffff gets AUTH_ERROR / AUTH_BADCRED.
fn case_huge_credential(port: u16) {
    let mut c = RpcClient::connect(port);
    let xid = 0x1234_5678;
    let mut e = Encoder::new();
    e.u32(xid);
    e.u32(0); // CALL
    e.u32(2); // rpcvers
    e.u32(NFS3_PROGRAM);
    e.u32(NFS_V3);
    e.u32(0); // NULL
    e.u32(1); // AUTH_SYS
    e.u32(0xffff_ffff); // credential length
    e.u32(0);
    e.u32(0);
    c.send_record(&e.finish().to_bytes()).unwrap();
    let (rxid, r) = c.recv_reply();
    assert_eq!(rxid, xid);
    assert_eq!(r, RpcReply::AuthError(AUTH_BADCRED));
    assert_serves_new_connection(port);
}

fn case_unknown_program(port: u16) {
    let mut c = RpcClient::connect(port);
    assert_eq!(c.call(0x2000_0001, 1, 0, &Void), RpcReply::ProgUnavail);
    // The connection is still usable.
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    assert_serves_new_connection(port);
}

fn case_unknown_version(port: u16) {
    let mut c = RpcClient::connect(port);
    // MOUNT serves version 3 only.
    for v in [1, 2, 4] {
        assert_eq!(
            c.call(MOUNTPROG, v, 0, &Void),
            RpcReply::ProgMismatch { low: 3, high: 3 },
            "MOUNT version {v}"
        );
    }
    // NFS serves version 3, and version 4 once NFSv4 is registered: the range in the reply
    // must be exactly what is served.
    let high = match c.call(NFS3_PROGRAM, 4, 0, &Void) {
        RpcReply::Success(b) if b.is_empty() => 4,
        RpcReply::ProgMismatch { low: 3, high: 3 } => 3,
        other => panic!("NFS version 4 NULL: {other:?}"),
    };
    for v in [2, 5, 0x7fff_ffff] {
        assert_eq!(
            c.call(NFS3_PROGRAM, v, 0, &Void),
            RpcReply::ProgMismatch { low: 3, high },
            "NFS version {v}"
        );
    }
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    assert_serves_new_connection(port);
}

fn case_unknown_procedure(port: u16) {
    let mut c = RpcClient::connect(port);
    assert_eq!(
        c.call(NFS3_PROGRAM, NFS_V3, 99, &Void),
        RpcReply::ProcUnavail
    );
    assert_eq!(
        c.call(MOUNTPROG, MOUNTVERS3, 99, &Void),
        RpcReply::ProcUnavail
    );
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    assert_serves_new_connection(port);
}

fn case_garbage_args(port: u16) {
    let mut c = RpcClient::connect(port);
    let getattr = NFSPROC3_GETATTR;
    // No arguments at all.
    assert_eq!(
        c.call(NFS3_PROGRAM, NFS_V3, getattr, &Void),
        RpcReply::GarbageArgs
    );
    // A handle longer than NFS3_FHSIZE.
    assert_eq!(
        c.call(NFS3_PROGRAM, NFS_V3, getattr, &1000u32),
        RpcReply::GarbageArgs
    );
    // A handle length promising more bytes than the call holds.
    assert_eq!(
        c.call(NFS3_PROGRAM, NFS_V3, getattr, &32u32),
        RpcReply::GarbageArgs
    );
    // A MOUNT path longer than MNTPATHLEN.
    assert_eq!(
        c.call(MOUNTPROG, MOUNTVERS3, MOUNTPROC_MNT, &5000u32),
        RpcReply::GarbageArgs
    );
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    assert_serves_new_connection(port);
}

/// A record-marking header announcing 2 GiB makes the server close the connection.
fn case_huge_record(port: u16) {
    for hdr in [0xffff_ffffu32, 0x7fff_ffff] {
        let mut c = RpcClient::connect(port);
        let mut v = hdr.to_be_bytes().to_vec();
        v.extend_from_slice(&[0; 64]);
        c.send_raw(&v).unwrap();
        c.set_read_timeout(Duration::from_secs(20));
        let mut buf = [0u8; 16];
        match c.read_raw(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!("record header {hdr:#x}: server sent {n} bytes instead of closing"),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            Err(e) => panic!("record header {hdr:#x}: connection not closed: {e}"),
        }
    }
    assert_serves_new_connection(port);
}

fn case_rpc_version(port: u16) {
    let mut c = RpcClient::connect(port);
    let (xid, mut body) = c.build_call(NFS3_PROGRAM, NFS_V3, 0, &Void);
    body[8..12].copy_from_slice(&3u32.to_be_bytes());
    c.send_record(&body).unwrap();
    let (rxid, r) = c.recv_reply();
    assert_eq!(rxid, xid);
    assert_eq!(r, RpcReply::RpcMismatch { low: 2, high: 2 });
    assert_serves_new_connection(port);
}

#[test]
fn truncated_call_header_gets_no_reply() {
    let fx = Fixture::new();
    case_truncated_header(fx.server.port);
}

#[test]
fn huge_credential_length_is_auth_error() {
    let fx = Fixture::new();
    case_huge_credential(fx.server.port);
}

#[test]
fn unknown_program_is_prog_unavail() {
    let fx = Fixture::new();
    case_unknown_program(fx.server.port);
}

#[test]
fn unknown_version_is_prog_mismatch() {
    let fx = Fixture::new();
    case_unknown_version(fx.server.port);
}

#[test]
fn unknown_procedure_is_proc_unavail() {
    let fx = Fixture::new();
    case_unknown_procedure(fx.server.port);
}

#[test]
fn garbage_arguments_are_garbage_args() {
    let fx = Fixture::new();
    case_garbage_args(fx.server.port);
}

#[test]
fn two_gib_record_closes_connection() {
    let fx = Fixture::new();
    case_huge_record(fx.server.port);
}

#[test]
fn wrong_rpc_version_is_rpc_mismatch() {
    let fx = Fixture::new();
    case_rpc_version(fx.server.port);
}

/// All malformed inputs against one server, then a NULL on a new connection still works.
#[test]
fn all_malformed_calls_in_sequence_then_null() {
    let mut fx = Fixture::new();
    let port = fx.server.port;
    case_truncated_header(port);
    case_huge_credential(port);
    case_unknown_program(port);
    case_unknown_version(port);
    case_unknown_procedure(port);
    case_garbage_args(port);
    case_huge_record(port);
    case_rpc_version(port);
    assert!(fx.server.is_running(), "rnfsd died");
    assert_serves_new_connection(port);
    // And real work still works.
    let (mut c, root) = fx.connect();
    c.getattr(&root).expect_ok("GETATTR after malformed calls");
}

// ---------------------------------------------------------------------------------------------
// Pipelining
// ---------------------------------------------------------------------------------------------

#[test]
fn pipelined_calls_answered_with_right_xids() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("f"), b"pipelined").unwrap();
    let (mut c, root) = fx.connect();
    let f = c.lookup_ok(&root, "f");

    // Two calls in a single write.
    let (x1, b1) = c.build_call(NFS3_PROGRAM, NFS_V3, 0, &Void);
    let (x2, b2) = c.build_call(
        NFS3_PROGRAM,
        NFS_V3,
        NFSPROC3_GETATTR,
        &Getattr3args { object: f.clone() },
    );
    let mut both = Vec::new();
    for b in [&b1, &b2] {
        both.extend_from_slice(&(0x8000_0000u32 | b.len() as u32).to_be_bytes());
        both.extend_from_slice(b);
    }
    c.send_raw(&both).unwrap();
    let mut got = HashMap::new();
    for _ in 0..2 {
        let (xid, r) = c.recv_reply();
        assert!(got.insert(xid, r).is_none(), "xid {xid} answered twice");
    }
    assert_eq!(got[&x1], RpcReply::Success(Bytes::new()));
    let RpcReply::Success(body) = &got[&x2] else {
        panic!("GETATTR not accepted: {:?}", got[&x2]);
    };
    let a: Getattr3res = decode_all(body.clone());
    assert_eq!(a.expect_ok("GETATTR").size, 9);

    // Many calls of different kinds in flight at once, answered in any order.
    let mut want = HashMap::new();
    for i in 0..64u64 {
        let xid = match i % 3 {
            0 => c.send_call(NFS3_PROGRAM, NFS_V3, 0, &Void),
            1 => c.send_call(
                NFS3_PROGRAM,
                NFS_V3,
                NFSPROC3_GETATTR,
                &Getattr3args { object: f.clone() },
            ),
            _ => c.send_call(
                NFS3_PROGRAM,
                NFS_V3,
                NFSPROC3_READ,
                &Read3args {
                    file: f.clone(),
                    offset: i % 9,
                    count: 1,
                },
            ),
        };
        want.insert(xid, i);
    }
    for _ in 0..64 {
        let (xid, r) = c.recv_reply();
        let i = want
            .remove(&xid)
            .expect("reply for an unknown or repeated xid");
        let RpcReply::Success(body) = r else {
            panic!("call {i} not accepted: {r:?}");
        };
        match i % 3 {
            0 => assert!(body.is_empty()),
            1 => assert_eq!(decode_all::<Getattr3res>(body).expect_ok("GETATTR").size, 9),
            _ => {
                let r = decode_all::<Read3res>(body).expect_ok("READ");
                let off = (i % 9) as usize;
                assert_eq!(
                    &r.data.in_memory().expect("decoded")[..],
                    &b"pipelined"[off..off + 1]
                );
            }
        }
    }
    assert!(want.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Large directories
// ---------------------------------------------------------------------------------------------

const DIR_ENTRIES: usize = 10_000;
const SMALL_COUNT: u32 = 4096;

fn big_dir_fixture() -> (Fixture, RpcClient, NfsFh3) {
    let fx = Fixture::new();
    let dir = fx.export.join("big");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..DIR_ENTRIES {
        std::fs::File::create(dir.join(format!("entry-{i:05}"))).unwrap();
    }
    let (mut c, root) = fx.connect();
    let d = c.lookup_ok(&root, "big");
    (fx, c, d)
}

fn check_names(seen: &HashMap<Vec<u8>, u32>) {
    let dups: Vec<_> = seen
        .iter()
        .filter(|(_, n)| **n != 1)
        .map(|(k, n)| (String::from_utf8_lossy(k).into_owned(), *n))
        .collect();
    assert!(dups.is_empty(), "names not seen exactly once: {dups:?}");
    for i in 0..DIR_ENTRIES {
        assert!(
            seen.contains_key(format!("entry-{i:05}").as_bytes()),
            "entry-{i:05} missing"
        );
    }
    assert!(seen.contains_key(&b"."[..]), "\".\" missing");
    assert!(seen.contains_key(&b".."[..]), "\"..\" missing");
    assert_eq!(seen.len(), DIR_ENTRIES + 2);
}

fn flip(v: [u8; 8]) -> [u8; 8] {
    let mut v = v;
    v[7] ^= 0x01;
    v
}

#[test]
fn readdir_10000_entries_with_cookie_continuation() {
    let (_fx, mut c, d) = big_dir_fixture();
    let mut seen: HashMap<Vec<u8>, u32> = HashMap::new();
    let (mut cookie, mut verf) = (0u64, [0u8; 8]);
    let mut calls = 0;
    let mut second_page: Option<(u64, [u8; 8])> = None;
    loop {
        let res = c.readdir(&d, cookie, verf, SMALL_COUNT);
        let wire = encode(&res).len();
        let r = res.expect_ok("READDIR");
        calls += 1;
        assert!(
            wire <= SMALL_COUNT as usize,
            "READDIR reply of {wire} bytes exceeds count {SMALL_COUNT}"
        );
        if calls > 1 {
            assert_eq!(r.cookieverf, verf, "cookie verifier changed between calls");
        }
        verf = r.cookieverf;
        for e in &r.reply.entries {
            *seen.entry(e.name.to_vec()).or_default() += 1;
            cookie = e.cookie;
        }
        if r.reply.eof {
            break;
        }
        assert!(!r.reply.entries.is_empty(), "empty READDIR page before eof");
        if calls == 1 {
            second_page = Some((cookie, verf));
        }
        assert!(calls < 5 * DIR_ENTRIES, "READDIR does not terminate");
    }
    assert!(
        calls >= 50,
        "only {calls} READDIR calls for {DIR_ENTRIES} entries"
    );
    check_names(&seen);

    // A later call with a verifier that does not match gets NFS3ERR_BAD_COOKIE.
    let (ck, v) = second_page.unwrap();
    assert_ne!(v, [0; 8]);
    assert_eq!(
        c.readdir(&d, ck, flip(v), SMALL_COUNT).status(),
        Nfsstat3::NFS3ERR_BAD_COOKIE
    );
    // ...while the right verifier still continues from there.
    let r = c
        .readdir(&d, ck, v, SMALL_COUNT)
        .expect_ok("READDIR resume");
    assert!(!r.reply.entries.is_empty());
    assert!(r.reply.entries.iter().all(|e| e.name != b"."[..]));
}

#[test]
fn readdirplus_10000_entries_with_cookie_continuation() {
    let (_fx, mut c, d) = big_dir_fixture();
    let dir_attr = c.getattr(&d).expect_ok("GETATTR dir");
    let mut seen: HashMap<Vec<u8>, u32> = HashMap::new();
    let (mut cookie, mut verf) = (0u64, [0u8; 8]);
    let mut calls = 0;
    let mut second_page: Option<(u64, [u8; 8])> = None;
    let mut sampled = Vec::new();
    loop {
        let res = c.readdirplus(&d, cookie, verf, SMALL_COUNT, SMALL_COUNT);
        let wire = encode(&res).len();
        let r = res.expect_ok("READDIRPLUS");
        calls += 1;
        assert!(
            wire <= SMALL_COUNT as usize,
            "READDIRPLUS reply of {wire} bytes exceeds maxcount {SMALL_COUNT}"
        );
        if calls > 1 {
            assert_eq!(r.cookieverf, verf, "cookie verifier changed between calls");
        }
        verf = r.cookieverf;
        for e in &r.reply.entries {
            *seen.entry(e.name.to_vec()).or_default() += 1;
            cookie = e.cookie;
            let a = e
                .name_attributes
                .0
                .as_ref()
                .unwrap_or_else(|| panic!("no attributes for {:?}", e.name));
            let fh = e
                .name_handle
                .0
                .as_ref()
                .unwrap_or_else(|| panic!("no handle for {:?}", e.name));
            if e.name.starts_with(b"entry-") {
                assert_eq!(a.r#type, Ftype3::Nf3reg);
                assert_eq!(a.size, 0);
                assert_eq!(a.fileid, e.fileid);
                if e.name.ends_with(b"000") {
                    sampled.push((fh.clone(), e.fileid));
                }
            } else if &e.name[..] == b"." {
                assert_eq!(a.fileid, dir_attr.fileid);
                assert_eq!(fh, &d);
            }
        }
        if r.reply.eof {
            break;
        }
        assert!(
            !r.reply.entries.is_empty(),
            "empty READDIRPLUS page before eof"
        );
        if calls == 1 {
            second_page = Some((cookie, verf));
        }
        assert!(calls < 5 * DIR_ENTRIES, "READDIRPLUS does not terminate");
    }
    assert!(
        calls >= 200,
        "only {calls} READDIRPLUS calls for {DIR_ENTRIES} entries"
    );
    check_names(&seen);
    // The handles returned work.
    assert!(!sampled.is_empty());
    for (fh, fileid) in sampled {
        assert_eq!(c.getattr(&fh).expect_ok("GETATTR entry").fileid, fileid);
    }

    let (ck, v) = second_page.unwrap();
    assert_eq!(
        c.readdirplus(&d, ck, flip(v), SMALL_COUNT, SMALL_COUNT)
            .status(),
        Nfsstat3::NFS3ERR_BAD_COOKIE
    );
    c.readdirplus(&d, ck, v, SMALL_COUNT, SMALL_COUNT)
        .expect_ok("READDIRPLUS resume");
}

// ---------------------------------------------------------------------------------------------
// Restart
// ---------------------------------------------------------------------------------------------

#[test]
fn restart_keeps_handles_and_changes_write_verifier() {
    let mut fx = Fixture::new();
    let (mut c, root) = fx.connect();
    let fh = c.create_ok(&root, "unstable", 0o644);
    let sub = c
        .mkdir(&root, "sub", 0o755)
        .expect_ok("MKDIR")
        .obj
        .0
        .unwrap();
    let data = pattern(7, 3 * 1024 * 1024 + 123);
    let mut verf = None;
    for (i, chunk) in data.chunks(1 << 20).enumerate() {
        let w = c
            .write(
                &fh,
                (i << 20) as u64,
                Bytes::copy_from_slice(chunk),
                StableHow::Unstable,
            )
            .expect_ok("WRITE");
        assert_eq!(w.count as usize, chunk.len());
        assert_eq!(*verf.get_or_insert(w.verf), w.verf, "verifier changed");
    }
    let old = verf.unwrap();
    assert_eq!(c.commit(&fh).expect_ok("COMMIT").verf, old);
    // Written but not committed: the verifier must change at restart.
    let tail = c
        .write(&fh, 0, Bytes::from_static(b"X"), StableHow::Unstable)
        .expect_ok("WRITE");
    assert_eq!(tail.verf, old);
    drop(c);

    fx.server.restart();

    // No MNT: the old handles are used as they are.
    let mut c = fx.server.client();
    let a = c.getattr(&fh).expect_ok("GETATTR old handle after restart");
    assert_eq!(a.size, data.len() as u64);
    assert_eq!(a.r#type, Ftype3::Nf3reg);
    let got = c.read_all(&fh, 1 << 20);
    assert_eq!(got[0], b'X');
    assert_eq!(&got[1..], &data[1..], "file content after restart");
    assert_eq!(
        c.getattr(&sub).expect_ok("GETATTR dir").r#type,
        Ftype3::Nf3dir
    );
    c.getattr(&root).expect_ok("GETATTR root after restart");
    assert_eq!(c.lookup_ok(&root, "unstable"), fh, "handle changed");

    let w = c
        .write(&fh, 0, Bytes::from_static(b"Y"), StableHow::Unstable)
        .expect_ok("WRITE after restart");
    assert_ne!(w.verf, old, "write verifier unchanged across restart");
    let cm = c.commit(&fh).expect_ok("COMMIT after restart");
    assert_eq!(cm.verf, w.verf);
    assert_ne!(cm.verf, old);
}

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

#[test]
fn metrics_count_getattr_calls() {
    let fx = Fixture::with_metrics();
    let addr = fx
        .server
        .metrics
        .expect("ready line has no metrics address");
    let (mut c, root) = fx.connect();
    for _ in 0..7 {
        c.getattr(&root).expect_ok("GETATTR");
    }
    let resp = http_get(addr, "/metrics");
    assert!(resp.starts_with("HTTP/1.1 200"), "response: {resp}");
    let getattr = r#"rnfs_rpc_calls_total{program="nfs",proc="GETATTR"}"#;
    let mnt = r#"rnfs_rpc_calls_total{program="mount",proc="MNT"}"#;
    let n = metric(&resp, getattr).unwrap_or_else(|| panic!("{getattr} missing:\n{resp}"));
    assert!(n > 0);
    assert_eq!(n, 7, "GETATTR count");
    assert_eq!(metric(&resp, mnt), Some(1), "MNT count");
    // The process's own figures, for memory per connection and CPU per byte.
    let rss = metric(&resp, "rnfs_process_resident_bytes ").expect("resident bytes");
    assert!(rss > (1 << 20) && rss < (1 << 32), "resident {rss}");
    assert!(metric(&resp, "rnfs_process_cpu_seconds_total ").is_some());
    // Another path is 404.
    assert!(http_get(addr, "/nope").starts_with("HTTP/1.1 404"));
}

// ---------------------------------------------------------------------------------------------
// More RPC and NFS semantics
// ---------------------------------------------------------------------------------------------

#[test]
fn fragmented_record_is_joined() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("f"), b"fragments").unwrap();
    let (mut c, root) = fx.connect();
    let f = c.lookup_ok(&root, "f");
    let (xid, body) = c.build_call(
        NFS3_PROGRAM,
        NFS_V3,
        NFSPROC3_GETATTR,
        &Getattr3args { object: f },
    );
    // Three fragments: 5 bytes, 7 bytes, the rest (last).
    let mut raw = Vec::new();
    let (a, rest) = body.split_at(5);
    let (b, rest) = rest.split_at(7);
    for (frag, last) in [(a, false), (b, false), (rest, true)] {
        let hdr = frag.len() as u32 | if last { 0x8000_0000 } else { 0 };
        raw.extend_from_slice(&hdr.to_be_bytes());
        raw.extend_from_slice(frag);
    }
    c.send_raw(&raw).unwrap();
    let (rxid, r) = c.recv_reply();
    assert_eq!(rxid, xid);
    let RpcReply::Success(body) = r else {
        panic!("not accepted: {r:?}");
    };
    assert_eq!(decode_all::<Getattr3res>(body).expect_ok("GETATTR").size, 9);
}

#[test]
fn too_many_groups_is_auth_error() {
    let fx = Fixture::new();
    let mut c = fx.server.client();
    c.cred = sunrpc::msg::Credential::Sys(sunrpc::msg::AuthSys {
        stamp: 0,
        machine: Bytes::from_static(b"m"),
        uid: 1000,
        gid: 1000,
        gids: (0..17).collect(),
    });
    assert_eq!(c.null(), RpcReply::AuthError(AUTH_BADCRED));
    // Sixteen are fine.
    c.cred = sunrpc::msg::Credential::Sys(sunrpc::msg::AuthSys {
        stamp: 0,
        machine: Bytes::from_static(b"m"),
        uid: 1000,
        gid: 1000,
        gids: (0..16).collect(),
    });
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
}

/// A retransmitted non-idempotent call (same xid, same connection) gets the first reply again
/// instead of being executed twice.
#[test]
fn duplicate_request_cache_replays_remove() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("victim"), b"x").unwrap();
    let (mut c, root) = fx.connect();
    let args = Remove3args {
        object: Diropargs3 {
            dir: root.clone(),
            name: Bytes::from_static(b"victim"),
        },
    };
    let (xid, body) = c.build_call(NFS3_PROGRAM, NFS_V3, NFSPROC3_REMOVE, &args);
    c.send_record(&body).unwrap();
    let first = c.read_record().unwrap();
    assert_eq!(parse_reply(first.clone()).0, xid);
    let RpcReply::Success(res) = parse_reply(first.clone()).1 else {
        panic!("REMOVE not accepted");
    };
    decode_all::<Remove3res>(res).expect_ok("first REMOVE");
    assert!(!fx.export.join("victim").exists());

    c.send_record(&body).unwrap();
    let second = c.read_record().unwrap();
    assert_eq!(second, first, "retransmission answered differently");

    // A new xid is a new call.
    assert_eq!(c.remove(&root, "victim").status(), Nfsstat3::NFS3ERR_NOENT);
}

#[test]
fn exclusive_create_is_idempotent_per_verifier() {
    let fx = Fixture::new();
    let (mut c, root) = fx.connect();
    let excl = |verf: [u8; 8]| Create3args {
        r#where: Diropargs3 {
            dir: root.clone(),
            name: Bytes::from_static(b"excl"),
        },
        how: Createhow3::Exclusive(verf),
    };
    let v1 = *b"verif-01";
    let a: Create3res = c.nfs(NFSPROC3_CREATE, &excl(v1));
    let fh1 = a.expect_ok("EXCLUSIVE CREATE").obj.0.unwrap();
    // The same verifier again (a retry with a new xid) succeeds with the same file.
    let b: Create3res = c.nfs(NFSPROC3_CREATE, &excl(v1));
    assert_eq!(b.expect_ok("EXCLUSIVE CREATE retry").obj.0.unwrap(), fh1);
    // Another verifier is another client: EXIST.
    let d: Create3res = c.nfs(NFSPROC3_CREATE, &excl(*b"verif-02"));
    assert_eq!(d.status(), Nfsstat3::NFS3ERR_EXIST);
    // GUARDED on an existing name is EXIST too; UNCHECKED is fine.
    assert_eq!(
        c.create(&root, "excl", 0o644).status(),
        Nfsstat3::NFS3ERR_EXIST
    );
    let u: Create3res = c.nfs(
        NFSPROC3_CREATE,
        &Create3args {
            r#where: Diropargs3 {
                dir: root.clone(),
                name: Bytes::from_static(b"excl"),
            },
            how: Createhow3::Unchecked(sattr3()),
        },
    );
    assert_eq!(u.expect_ok("UNCHECKED CREATE").obj.0.unwrap(), fh1);
}

#[test]
fn handle_of_removed_file_is_stale() {
    let fx = Fixture::new();
    let (mut c, root) = fx.connect();
    let f = c.create_ok(&root, "gone", 0o644);
    c.write(&f, 0, Bytes::from_static(b"abc"), StableHow::FileSync)
        .expect_ok("WRITE");
    c.getattr(&f).expect_ok("GETATTR");
    c.remove(&root, "gone").expect_ok("REMOVE");
    assert_eq!(c.getattr(&f).status(), Nfsstat3::NFS3ERR_STALE);
    assert_eq!(c.read(&f, 0, 3).status(), Nfsstat3::NFS3ERR_STALE);
    // A new file of the same name has another handle; the old one stays stale.
    let g = c.create_ok(&root, "gone", 0o644);
    assert_ne!(g, f);
    assert_eq!(c.getattr(&f).status(), Nfsstat3::NFS3ERR_STALE);
}

/// A directory's (size, mtime, ctime), from a wcc_attr or a fattr3: what NFSv3's wcc data lets
/// a client compare its cache with.
type DirKey = (u64, u32, u32, u32, u32);

fn dir_key(size: u64, m: &Nfstime3, c: &Nfstime3) -> DirKey {
    (size, m.seconds, m.nseconds, c.seconds, c.nseconds)
}

/// The (before, after) of one change's wcc data.
fn wcc_keys(w: &WccData, what: &str) -> (DirKey, DirKey) {
    let pre = w
        .before
        .0
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: no pre-op attributes"));
    let post = attrs(&w.after);
    (
        dir_key(pre.size, &pre.mtime, &pre.ctime),
        dir_key(post.size, &post.mtime, &post.ctime),
    )
}

/// Every kind of name change (CREATE, MKDIR, SYMLINK, MKNOD, LINK, RENAME, REMOVE, RMDIR) made
/// by four clients in one directory at once: each reply's wcc data is that change's own, so
/// the changes' (before, after) pairs chain, each one's before the previous one's after, from
/// the directory as it was before the first to the directory as it is after the last (the
/// directory's ctime, read before every change, is fine-grained, so no two states repeat:
/// Linux 6.13's multigrain timestamps, which the test checks first).
#[test]
fn directory_wcc_of_every_name_change_chains_under_concurrent_clients() {
    const CLIENTS: usize = 4;
    const ROUNDS: usize = 12;
    let fx = Fixture::new();
    let probe = fx.tmp.path().join("ctime-probe");
    std::fs::create_dir(&probe).unwrap();
    let ctime = || {
        let m = std::fs::metadata(&probe).unwrap();
        (m.ctime(), m.ctime_nsec())
    };
    for i in 0..3 {
        let before = ctime();
        std::fs::create_dir(probe.join(i.to_string())).unwrap();
        assert_ne!(
            before,
            ctime(),
            "the file system of {} gives directories coarse ctimes (a kernel before 6.13?): \
             changes cannot be told apart by their wcc data",
            fx.tmp.path().display()
        );
    }
    let (mut c0, root) = fx.connect();
    let target = c0.create_ok(&root, "link-target", 0o644);
    let start = attrs_key(&c0.getattr(&root).expect_ok("GETATTR"));
    let clients: Vec<_> = (0..CLIENTS).map(|_| fx.connect()).collect();
    let edges: Vec<(DirKey, DirKey)> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(t, (mut c, root))| {
                let target = target.clone();
                s.spawn(move || {
                    let mut e = Vec::new();
                    for i in 0..ROUNDS {
                        let n = |k: &str| format!("{k}{t}-{i}");
                        let ok = c.create(&root, n("f"), 0o644).expect_ok("CREATE");
                        e.push(wcc_keys(&ok.dir_wcc, "CREATE"));
                        let ok = c.mkdir(&root, n("d"), 0o755).expect_ok("MKDIR");
                        e.push(wcc_keys(&ok.dir_wcc, "MKDIR"));
                        let ok = c.symlink(&root, n("s"), "f").expect_ok("SYMLINK");
                        e.push(wcc_keys(&ok.dir_wcc, "SYMLINK"));
                        let ok = c.mkfifo(&root, n("p")).expect_ok("MKNOD");
                        e.push(wcc_keys(&ok.dir_wcc, "MKNOD"));
                        let ok = c.link(&target, &root, n("l")).expect_ok("LINK");
                        e.push(wcc_keys(&ok.linkdir_wcc, "LINK"));
                        let ok = c.rename(&root, n("f"), &root, n("g")).expect_ok("RENAME");
                        let (from, to) = (
                            wcc_keys(&ok.fromdir_wcc, "RENAME"),
                            wcc_keys(&ok.todir_wcc, "RENAME"),
                        );
                        // one directory: one change, reported twice
                        assert_eq!(from, to, "RENAME in one directory");
                        e.push(from);
                        let ok = c.remove(&root, n("g")).expect_ok("REMOVE");
                        e.push(wcc_keys(&ok, "REMOVE"));
                        let ok = c.rmdir(&root, n("d")).expect_ok("RMDIR");
                        e.push(wcc_keys(&ok, "RMDIR"));
                    }
                    e
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let end = attrs_key(&c0.getattr(&root).expect_ok("GETATTR"));
    let mut next: HashMap<DirKey, DirKey> = HashMap::new();
    for (pre, post) in &edges {
        assert_ne!(pre, post, "a change that did not change the directory");
        if let Some(other) = next.insert(*pre, *post) {
            panic!("two changes report the same directory before them: {pre:?} (after: {post:?}, {other:?})");
        }
    }
    let mut at = start;
    let mut walked = 0;
    while let Some(post) = next.get(&at) {
        at = *post;
        walked += 1;
    }
    assert_eq!(
        (walked, at),
        (edges.len(), end),
        "the changes' wcc data do not chain from the directory before them to the one after"
    );
}

fn attrs_key(a: &Fattr3) -> DirKey {
    dir_key(a.size, &a.mtime, &a.ctime)
}

/// The wcc data of a change to a directory is that change's own (RFC 1813 section 2.6): its
/// pre-operation attributes are the directory's just before it and its post-operation ones
/// just after, with no other change through the server in between, so a client whose cached
/// attributes equal the pre-operation ones keeps its cached entries. Four clients create files
/// in one directory at once; the directory's (size, mtime, ctime) only grow, so no two changes
/// that changed something can report the same state before them, or after them.
#[test]
fn directory_wcc_is_each_changes_own_under_concurrent_creates() {
    const CLIENTS: usize = 4;
    const FILES: usize = 40;
    let fx = Fixture::new();
    let clients: Vec<_> = (0..CLIENTS).map(|_| fx.connect()).collect();
    // what a wcc_attr holds (size, mtime, ctime), from the pre- or the post-operation side
    let key = |size: u64, m: &Nfstime3, c: &Nfstime3| {
        (size, m.seconds, m.nseconds, c.seconds, c.nseconds)
    };
    let pairs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(t, (mut c, root))| {
                s.spawn(move || {
                    (0..FILES)
                        .map(|i| {
                            let ok = c
                                .create(&root, format!("c{t}-{i}"), 0o644)
                                .expect_ok("CREATE");
                            let pre = ok.dir_wcc.before.0.expect("pre-operation attributes");
                            let post = ok.dir_wcc.after.0.expect("post-operation attributes");
                            (
                                key(pre.size, &pre.mtime, &pre.ctime),
                                key(post.size, &post.mtime, &post.ctime),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let changed: Vec<_> = pairs.iter().filter(|(pre, post)| pre != post).collect();
    assert!(
        changed.len() >= pairs.len() / 2,
        "only {} of {} creates changed the directory's attributes: nothing to judge by",
        changed.len(),
        pairs.len()
    );
    let mut before = std::collections::HashSet::new();
    let mut after = std::collections::HashSet::new();
    for (pre, post) in &changed {
        assert!(
            before.insert(*pre),
            "two creates report the same directory before them: {pre:?}"
        );
        assert!(
            after.insert(*post),
            "two creates report the same directory after them: {post:?}"
        );
    }
}
