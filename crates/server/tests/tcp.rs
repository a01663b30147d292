//! TCP connection options of the running server: the congestion control it sets on each
//! connection (`--tcp-congestion`) and busy polling for the next call (`--tcp-busy-poll`).

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;

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
