//! TCP connection options of the running server: the congestion control it sets on each
//! connection (`--tcp-congestion`), polling for the next call (`--tcp-busy-poll`, and
//! `--tcp-lone-poll` for clients with one call at a time) and the threads connections are
//! served on (`--tcp-threads`); and WRITEs to files in memory run on those threads.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use nfs3wire::StableHow;

/// The congestion control `ss` reports for the server's end of each established connection
/// on `port`.
fn server_congestion(port: u16) -> Vec<String> {
    let out = std::process::Command::new("ss")
        .args([
            "-tin",
            "state",
            "established",
            &format!("( sport = :{port} )"),
        ])
        .output()
        .expect("ss (iproute2) runs");
    assert!(out.status.success(), "ss: {out:?}");
    // each connection: its addresses, then a line of TCP details that starts with the algorithm
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(char::is_whitespace))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn connections_get_the_congestion_control_named_and_a_name_the_kernel_lacks_stops_rnfsd() {
    let system = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    // reno is built into every kernel; with reno the system's, ask for cubic
    let wanted = if system.trim() == "reno" {
        "cubic"
    } else {
        "reno"
    };
    let fx = Fixture::with_args(&["--tcp-congestion", wanted]);
    let (mut c, _root) = fx.connect();
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    let mut other = fx.server.client();
    assert_eq!(other.null(), RpcReply::Success(Bytes::new()));
    assert_eq!(server_congestion(fx.server.port), [wanted, wanted]);

    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rnfsd"))
        .arg("--export")
        .arg(tmp.path())
        .arg("--state-dir")
        .arg(tmp.path().join("state"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--no-portmap",
            "--no-admin",
            "--no-rdma",
        ])
        .args(["--tcp-congestion", "no-such-algorithm"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "rnfsd served with an unknown algorithm"
    );
    let err = strip_ansi(&String::from_utf8_lossy(&out.stderr));
    assert!(err.contains("--tcp-congestion no-such-algorithm"), "{err}");
}

#[test]
fn busy_polling_readers_answer_every_connection_and_let_closed_ones_go() {
    // a budget far longer than the test's pauses: a reader still polling when the next call
    // comes, one at a time over the process (the others sleep as without the option)
    let fx = Fixture::with_args(&["--tcp-busy-poll", "200000"]);
    let data = pattern(0, 100_000);
    std::fs::write(fx.export.join("f"), &data).unwrap();
    let (mut a, root) = fx.connect();
    let (mut b, _) = fx.connect();
    let fh = a.lookup_ok(&root, "f");
    for i in 0..20u64 {
        let c = if i % 2 == 0 { &mut a } else { &mut b };
        assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
        let off = i * 4096;
        let r = c.read(&fh, off, 8192).expect_ok("READ");
        let got = r.data.in_memory().expect("decoded");
        assert!(
            got[..] == data[off as usize..off as usize + 8192],
            "READ at {off}"
        );
    }
    // a connection closed while its reader polls ends; the server serves the next one
    drop(a);
    drop(b);
    std::thread::sleep(Duration::from_millis(50));
    let mut c = fx.server.client();
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
}

/// The lone polls of `fx`'s server so far, and those that found the next call.
fn lone_polls(fx: &Fixture) -> (u64, u64) {
    let m = http_get(fx.server.metrics.expect("metrics endpoint"), "/metrics");
    let get = |kind: &str| {
        metric(&m, &format!("rnfs_rpc_events_total{{kind=\"{kind}\"}}"))
            .unwrap_or_else(|| panic!("no {kind} in {m}"))
    };
    (get("tcp_lone_poll"), get("tcp_lone_poll_found"))
}

#[test]
fn a_client_with_one_call_at_a_time_finds_the_reader_polling_and_one_with_two_does_not() {
    const ROUNDS: u64 = 200;
    // a budget far longer than the client takes between calls: every poll finds the next call
    let fx = Fixture::with_args(&["--tcp-lone-poll", "200000"]);
    let mut c = fx.server.client();
    assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    let before = lone_polls(&fx);
    for _ in 0..ROUNDS {
        assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    }
    let (polls, found) = lone_polls(&fx);
    let (polls, found) = (polls - before.0, found - before.1);
    assert!(polls >= ROUNDS, "{polls} polls for {ROUNDS} lone calls");
    assert!(
        found >= ROUNDS,
        "{found} of {polls} polls found the next call"
    );

    // two calls in flight (sent in one write): no poll after them
    let before = lone_polls(&fx);
    for _ in 0..ROUNDS {
        let mut both = Vec::new();
        for _ in 0..2 {
            let (_, body) = c.build_call(
                nfs3wire::NFS3_PROGRAM,
                nfs3wire::NFS_V3,
                nfs3wire::NFSPROC3_NULL,
                &Void,
            );
            both.extend_from_slice(&(0x8000_0000u32 | body.len() as u32).to_be_bytes());
            both.extend_from_slice(&body);
        }
        c.send_raw(&both).unwrap();
        for _ in 0..2 {
            assert_eq!(c.recv_reply().1, RpcReply::Success(Bytes::new()));
        }
    }
    let after = lone_polls(&fx);
    assert!(
        after.0 - before.0 <= 2,
        "{} polls after pairs of calls",
        after.0 - before.0
    );

    // a client slower than the budget: polls find nothing, and the reader polls less and less
    let fx = Fixture::with_args(&["--tcp-lone-poll", "50"]);
    let mut c = fx.server.client();
    let before = lone_polls(&fx);
    for _ in 0..ROUNDS {
        assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
        std::thread::sleep(Duration::from_millis(1));
    }
    let (polls, found) = lone_polls(&fx);
    let (polls, found) = (polls - before.0, found - before.1);
    // a reader kept off its CPU between the reply and its first look may still find the next
    // call at once; each such find starts the back-off over (at most 8 polls to 63 skipped)
    assert!(
        found <= 2,
        "{found} polls of 50 us found a call sent 1 ms after the reply"
    );
    assert!(
        polls > 0 && polls <= 12 + 8 * found,
        "{polls} polls for {ROUNDS} calls 1 ms apart, {found} found"
    );

    // no budget: no polls
    let fx = Fixture::with_args(&["--tcp-lone-poll", "0"]);
    let mut c = fx.server.client();
    for _ in 0..20 {
        assert_eq!(c.null(), RpcReply::Success(Bytes::new()));
    }
    assert_eq!(lone_polls(&fx), (0, 0));
}

/// Names of the server's threads that serve TCP connections, sorted.
fn tcp_threads(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .filter(|n| n.starts_with("rnfsd-tcp"))
        .collect();
    names.sort();
    names
}

#[test]
fn connections_are_served_on_the_tcp_threads_asked_for_or_on_the_shared_runtime() {
    let data = pattern(3, 64 * 1024);
    for (threads, expect) in [
        ("3", &["rnfsd-tcp-0", "rnfsd-tcp-1", "rnfsd-tcp-2"][..]),
        ("0", &[][..]),
    ] {
        let fx = Fixture::with_args(&["--tcp-threads", threads]);
        assert_eq!(
            tcp_threads(fx.server.pid()),
            expect,
            "--tcp-threads {threads}"
        );
        std::fs::write(fx.export.join("f"), &data).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fx.export.join("f"), std::fs::Permissions::from_mode(0o666))
            .unwrap();
        // more connections than threads, used in turn: calls run on the connection's thread
        // (READ, GETATTR) and on call threads (WRITE), replies from both on each socket
        let mut conns: Vec<_> = (0..7).map(|_| fx.connect()).collect();
        let fh = {
            let (c, root) = &mut conns[0];
            c.lookup_ok(root, "f")
        };
        // each thread's connections, as the metrics show them: 7 spread 3, 2, 2
        let text = http_get(fx.server.metrics.unwrap(), "/metrics");
        let mut spread: Vec<u64> = (0..expect.len())
            .map(|t| {
                let name = format!("rnfs_tcp_thread_connections{{thread=\"{t}\"}}");
                metric(&text, &name).unwrap_or_else(|| panic!("{name} in {text}"))
            })
            .collect();
        spread.sort();
        match expect.len() {
            0 => assert!(!text.contains("rnfs_tcp_thread_connections"), "{text}"),
            _ => assert_eq!(spread, [2, 2, 3]),
        }
        for round in 0..3u64 {
            for (i, (c, _)) in conns.iter_mut().enumerate() {
                let off = (round * 7 + i as u64) * 1024;
                let r = c.read(&fh, off, 1024).expect_ok("READ");
                let got = r.data.in_memory().expect("decoded");
                assert!(
                    got[..] == data[off as usize..off as usize + 1024],
                    "READ at {off}"
                );
                let same = Bytes::copy_from_slice(&data[off as usize..off as usize + 1024]);
                let w = c.write(&fh, off, same, StableHow::FileSync);
                assert_eq!(w.expect_ok("WRITE").count, 1024);
            }
        }
        drop(conns);
        assert_serves_new_connection(fx.server.port);
    }
}

/// Bytes the threads of process `pid` whose names start with `prefix` wrote (write system
/// calls of any kind: `wchar` of /proc/PID/task/TID/io).
fn written_by_threads(pid: u32, prefix: &str) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| {
            let t = t.ok()?.path();
            let comm = std::fs::read_to_string(t.join("comm")).ok()?;
            if !comm.starts_with(prefix) {
                return None;
            }
            let io = std::fs::read_to_string(t.join("io")).ok()?;
            io.lines()
                .find_map(|l| l.strip_prefix("wchar: "))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .sum()
}

#[test]
fn writes_to_a_tmpfs_export_run_on_the_connection_thread_and_retransmissions_get_the_first_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let export = tmp.path().join("export");
    std::fs::create_dir(&export).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "mode=777", "tmpfs"])
        .arg(&export)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount -t tmpfs");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(export.clone());
    let server = Server::with_exports(&tmp.path().join("state"), &[&export]);
    let mut c = server.client();
    let root = c.mnt_ok(&export);
    let fh = c.create_ok(&root, "f", 0o666);
    let (tcp, calls) = (
        written_by_threads(server.pid(), "rnfsd-tcp"),
        written_by_threads(server.pid(), "rnfsd-call"),
    );
    for i in 0..16u64 {
        let data = Bytes::from(pattern(i, 64 * 1024));
        c.write(&fh, i * 64 * 1024, data, StableHow::FileSync)
            .expect_ok("WRITE");
    }
    assert_eq!(std::fs::read(export.join("f")).unwrap().len(), 1 << 20);
    // the data went to the file from the connection's thread, not through a call thread
    let tcp = written_by_threads(server.pid(), "rnfsd-tcp") - tcp;
    let calls = written_by_threads(server.pid(), "rnfsd-call") - calls;
    assert!(tcp >= 1 << 20, "connection threads wrote {tcp} bytes");
    assert!(calls < 64 * 1024, "call threads wrote {calls} bytes");

    // a retransmission (same xid) is answered from the duplicate request cache: not written
    // again over what changed the file since
    c.set_xid(7_000);
    let first = c.write(&fh, 0, Bytes::from_static(b"first"), StableHow::FileSync);
    std::fs::write(export.join("f"), b"since").unwrap();
    c.set_xid(7_000);
    let again = c.write(&fh, 0, Bytes::from_static(b"first"), StableHow::FileSync);
    assert_eq!(format!("{again:?}"), format!("{first:?}"));
    assert_eq!(std::fs::read(export.join("f")).unwrap(), b"since");
    // a new call is
    c.write(&fh, 0, Bytes::from_static(b"new"), StableHow::FileSync)
        .expect_ok("WRITE");
    assert_eq!(std::fs::read(export.join("f")).unwrap(), b"newce");

    // NFSv4.1: SEQUENCE, PUTFH, WRITE of 64 KiB at a time, on the connection's thread too
    let mut v4 = common::nfs4_raw::V4::session(server.port, 1, "tmpfs");
    let dir = v4.path_fh(&export);
    let (g, sid) = v4.open_ok(
        &dir,
        "g",
        "o",
        nfs4wire::OPEN4_SHARE_ACCESS_BOTH,
        nfs4wire::OPEN4_SHARE_DENY_NONE,
        common::nfs4_raw::OpenHow::Unchecked(common::nfs4_raw::Sattr::mode(0o600)),
    );
    let (tcp, calls) = (
        written_by_threads(server.pid(), "rnfsd-tcp"),
        written_by_threads(server.pid(), "rnfsd-call"),
    );
    let data = pattern(99, 1 << 20);
    for (i, chunk) in data.chunks(64 * 1024).enumerate() {
        v4.write_all(&g, &sid, (i * 64 * 1024) as u64, chunk);
    }
    assert!(std::fs::read(export.join("g")).unwrap() == data);
    let tcp = written_by_threads(server.pid(), "rnfsd-tcp") - tcp;
    let calls = written_by_threads(server.pid(), "rnfsd-call") - calls;
    assert!(tcp >= 1 << 20, "connection threads wrote {tcp} bytes");
    assert!(calls < 64 * 1024, "call threads wrote {calls} bytes");
}
