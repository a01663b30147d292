//! NLM v4 calls and a fake client host (port mapper and status monitor) for the tests of
//! NFSv3 locking (nlm.rs) and of its records in the cluster (ha.rs).

use std::sync::mpsc;

use bytes::Bytes;
use nlmwire::*;
use xdr::{Decode, Encode, Encoder};

use super::*;

/// An NLM lock of host `host`, process `svid`, on `fh` from `offset` for `len` bytes.
pub fn nlm_lock(host: &str, svid: u32, fh: &Bytes, offset: u64, len: u64) -> Nlm4Lock {
    Nlm4Lock {
        caller_name: Bytes::from(host.to_string()),
        fh: fh.clone(),
        oh: Bytes::from(format!("{svid}@{host}")),
        svid,
        l_offset: offset,
        l_len: len,
    }
}

/// LOCK arguments for `l` (exclusive, not a reclaim).
pub fn lockargs(l: Nlm4Lock, block: bool) -> Nlm4Lockargs {
    Nlm4Lockargs {
        cookie: Bytes::from_static(b"ck"),
        block,
        exclusive: true,
        alock: l,
        reclaim: false,
        state: 1,
    }
}

/// An NLM v4 call that must be accepted; its decoded result.
pub fn nlm<A: Encode, R: Decode>(c: &mut RpcClient, p: u32, a: &A) -> R {
    match c.call(NLM_PROG, NLM_VERS4, p, a) {
        RpcReply::Success(body) => decode_all(body),
        other => panic!("NLM {p}: {other:?}"),
    }
}

/// NLM4_LOCK of `l`; its status.
pub fn lock(c: &mut RpcClient, l: Nlm4Lock, block: bool) -> Nlm4Stats {
    let r: Nlm4Res = nlm(c, NLM4_LOCK, &lockargs(l, block));
    assert_eq!(r.cookie, Bytes::from_static(b"ck"), "the cookie comes back");
    r.stat.stat
}

/// NLM4_TEST of `l`.
pub fn test(c: &mut RpcClient, l: Nlm4Lock) -> Nlm4Testrply {
    let a = Nlm4Testargs {
        cookie: Bytes::from_static(b"t"),
        exclusive: true,
        alock: l,
    };
    let r: Nlm4Testres = nlm(c, NLM4_TEST, &a);
    r.stat
}

/// NLM4_UNLOCK of `l`; its status.
pub fn unlock(c: &mut RpcClient, l: Nlm4Lock) -> Nlm4Stats {
    let a = Nlm4Unlockargs {
        cookie: Bytes::from_static(b"u"),
        alock: l,
    };
    let r: Nlm4Res = nlm(c, NLM4_UNLOCK, &a);
    r.stat.stat
}

/// A file of the test user in the export, and its NFSv3 handle.
pub fn user_file(fx: &Fixture, name: &str) -> Bytes {
    let p = fx.export.join(name);
    std::fs::write(&p, [0u8; 200]).unwrap();
    std::os::unix::fs::chown(&p, Some(TEST_UID), Some(TEST_UID)).unwrap();
    let (mut c, root) = fx.connect();
    c.lookup_ok(&root, name).data
}

/// A client host's port mapper and status monitor on UDP: the port mapper's port, and the
/// SM_NOTIFY calls the monitor gets.
pub fn notified_host() -> (u16, mpsc::Receiver<(StatChge, std::net::SocketAddr)>) {
    let pmap = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let statd = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let statd_port = statd.local_addr().unwrap().port();
    let pmap_port = pmap.local_addr().unwrap().port();
    let answer = |s: &std::net::UdpSocket, xid: u32, to, result: &dyn Encode| {
        let mut e = Encoder::new();
        sunrpc::msg::encode_accepted(&mut e, xid, sunrpc::msg::AcceptStat::Success);
        result.encode(&mut e);
        s.send_to(&e.finish().to_bytes(), to).unwrap();
    };
    std::thread::spawn(move || loop {
        let mut buf = [0u8; 2048];
        let (n, from) = pmap.recv_from(&mut buf).unwrap();
        let (h, mut d) = sunrpc::msg::decode_call(Bytes::copy_from_slice(&buf[..n])).unwrap();
        let want: Vec<u32> = (0..3).map(|_| d.u32().unwrap()).collect();
        assert_eq!(want, [SM_PROG, SM_VERS, 17], "GETPORT of NSM v1 over UDP");
        answer(&pmap, h.xid, from, &(statd_port as u32));
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || loop {
        let mut buf = [0u8; 2048];
        let (n, from) = statd.recv_from(&mut buf).unwrap();
        let (h, mut d) = sunrpc::msg::decode_call(Bytes::copy_from_slice(&buf[..n])).unwrap();
        assert_eq!((h.prog, h.vers, h.proc_), (SM_PROG, SM_VERS, SM_NOTIFY));
        let a = StatChge::decode(&mut d).unwrap();
        answer(&statd, h.xid, from, &());
        let _ = tx.send((a, from));
    });
    (pmap_port, rx)
}
