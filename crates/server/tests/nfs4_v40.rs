//! NFSv4.0 (RFC 7530): client ids, open-owner sequencing and OPEN_CONFIRM with the raw
//! COMPOUND client, and the libnfs tools (which speak NFSv4.0) copying files in and out.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};

use common::nfs4_raw::*;
use common::*;
use nfs4wire::*;

fn open_ops(dir: &[u8], seqid: u32, clientid: u64, owner: &[u8], name: &str) -> Ops {
    Ops::new()
        .putfh(dir)
        .open(
            seqid,
            OPEN4_SHARE_ACCESS_BOTH,
            OPEN4_SHARE_DENY_NONE,
            clientid,
            owner,
            &OpenHow::Unchecked(Sattr::mode(0o644)),
            &OpenClaim4::ClaimNull(name.as_bytes().to_vec().into()),
        )
        .getfh()
}

fn rflags(r: &CompoundRes) -> u32 {
    r.get(NfsOpnum4::OP_OPEN).open().rflags
}

#[test]
fn setclientid_open_confirm_replay_and_bad_seqid() {
    let fx = Fixture::new();
    let mut c = V4::v40(fx.server.port, "v40-client");
    let dir = c.path_fh(&fx.export);
    let id = c.clientid;
    let owner = b"v40-owner";

    // A new open-owner must confirm its first OPEN.
    let r = c.compound(open_ops(&dir, 0, id, owner, "a")).ok("OPEN a");
    assert_ne!(
        rflags(&r) & OPEN4_RESULT_CONFIRM,
        0,
        "no OPEN4_RESULT_CONFIRM"
    );
    let (fh_a, sid) = (r.fh(), r.open_stateid());
    assert_ne!(fh_a, dir, "GETFH after OPEN is not the opened file");
    let r = c
        .compound(Ops::new().putfh(&fh_a).open_confirm(&sid, 1))
        .ok("OPEN_CONFIRM");
    let sid_a = r.stateid(NfsOpnum4::OP_OPEN_CONFIRM);
    assert_eq!(sid_a.other, sid.other);
    assert_eq!(sid_a.seqid, sid.seqid + 1, "OPEN_CONFIRM stateid seqid");

    // The confirmed owner's next OPEN needs no confirmation.
    let first = c.compound(open_ops(&dir, 2, id, owner, "b")).ok("OPEN b");
    assert_eq!(rflags(&first) & OPEN4_RESULT_CONFIRM, 0);
    let fh_b = first.fh();
    assert_ne!(fh_b, dir, "GETFH after OPEN is not the opened file");

    // A retransmission (same seqid) gets the same OPEN result (the same stateid, not a new
    // open); see also replayed_open_leaves_the_opened_file_current.
    let again = c.compound(open_ops(&dir, 2, id, owner, "b"));
    assert_eq!(again.status, Nfsstat4::NFS4_OK, "{}", again.summary());
    assert_eq!(
        again.get(NfsOpnum4::OP_OPEN),
        first.get(NfsOpnum4::OP_OPEN),
        "replayed OPEN differs from the original"
    );

    // Seqids other than the last or the next one: BAD_SEQID, nothing created.
    for bad in [5, 1, 0] {
        let r = c.compound(open_ops(&dir, bad, id, owner, "c"));
        assert_eq!(
            r.status,
            Nfsstat4::NFS4ERR_BAD_SEQID,
            "seqid {bad}: {}",
            r.summary()
        );
    }
    assert!(
        !fx.export.join("c").exists(),
        "OPEN with a bad seqid created the file"
    );
    let r = c
        .compound(Ops::new().putfh(&fh_a).open_confirm(&sid_a, 9))
        .status;
    assert_eq!(
        r,
        Nfsstat4::NFS4ERR_BAD_SEQID,
        "OPEN_CONFIRM with a bad seqid"
    );

    // The owner continues with the next seqid.
    let r = c.compound(open_ops(&dir, 3, id, owner, "c")).ok("OPEN c");
    let (fh_c, sid_c) = (r.fh(), r.open_stateid());
    let r = c
        .compound(
            Ops::new()
                .putfh(&fh_c)
                .write(&sid_c, 0, StableHow4::FileSync4, b"v4.0 data")
                .read(&sid_c, 0, 100),
        )
        .ok("WRITE READ");
    assert_eq!(
        r.get(NfsOpnum4::OP_READ).read(),
        &Read4resok {
            eof: true,
            data: bytes::Bytes::from_static(b"v4.0 data").into()
        }
    );
    assert_eq!(std::fs::read(fx.export.join("c")).unwrap(), b"v4.0 data");
    c.compound(Ops::new().putfh(&fh_c).close(4, &sid_c))
        .ok("CLOSE");
    // The open-owner goes on with the next seqid; an old one is still BAD_SEQID.
    c.compound(open_ops(&dir, 5, id, owner, "c"))
        .ok("OPEN c again");
    let r = c.compound(open_ops(&dir, 3, id, owner, "c"));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BAD_SEQID, "{}", r.summary());

    // RENEW of our client id works; an unknown one is stale.
    c.compound(Ops::new().renew(id)).ok("RENEW");
    let r = c.compound(Ops::new().renew(id ^ 0x7777_0000_0000));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_STALE_CLIENTID,
        "{}",
        r.summary()
    );
    let r = c.compound(open_ops(&dir, 0, id ^ 0x7777_0000_0000, b"x", "d"));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_STALE_CLIENTID,
        "{}",
        r.summary()
    );
}

/// RFC 7530 section 9.1 (a retransmitted seqid-mutating request gets the cached reply) and
/// section 16.16.5 (OPEN makes the opened file the current filehandle): a client that sends
/// PUTFH OPEN GETFH (as the Linux client does) and retransmits it must get the file's handle
/// from GETFH again, not the directory's.
#[test]
fn replayed_open_leaves_the_opened_file_current() {
    let fx = Fixture::new();
    let mut c = V4::v40(fx.server.port, "v40-replay-fh");
    let dir = c.path_fh(&fx.export);
    let id = c.clientid;
    let r = c.compound(open_ops(&dir, 0, id, b"o", "a")).ok("OPEN a");
    let sid = r.open_stateid();
    c.compound(Ops::new().putfh(&r.fh()).open_confirm(&sid, 1))
        .ok("OPEN_CONFIRM");
    let first = c.compound(open_ops(&dir, 2, id, b"o", "b")).ok("OPEN b");
    let again = c
        .compound(open_ops(&dir, 2, id, b"o", "b"))
        .ok("OPEN b again");
    assert_ne!(
        again.fh(),
        dir,
        "GETFH after the replayed OPEN returned the directory"
    );
    assert_eq!(again.fh(), first.fh());
    assert_eq!(again.raw, first.raw, "replayed COMPOUND differs");
}

/// RFC 7530 section 9.1 (the server keeps an owner's last reply for a retransmission of its
/// last seqid-mutating request) and 16.2.5 (CLOSE): a retransmitted CLOSE, e.g. after a
/// reconnection from another port (the RPC duplicate request cache is keyed by the peer), gets
/// the cached NFS4_OK reply, not NFS4ERR_BAD_STATEID because the open is gone.
#[test]
fn replayed_close_gets_the_cached_reply() {
    let fx = Fixture::new();
    let mut c = V4::v40(fx.server.port, "v40-replay-close");
    let dir = c.path_fh(&fx.export);
    let id = c.clientid;
    let r = c.compound(open_ops(&dir, 0, id, b"o", "a")).ok("OPEN a");
    let (fh, sid) = (r.fh(), r.open_stateid());
    let sid = c
        .compound(Ops::new().putfh(&fh).open_confirm(&sid, 1))
        .ok("OPEN_CONFIRM")
        .stateid(NfsOpnum4::OP_OPEN_CONFIRM);
    let first = c.compound(Ops::new().putfh(&fh).close(2, &sid)).ok("CLOSE");
    let again = c.compound(Ops::new().putfh(&fh).close(2, &sid));
    assert_eq!(
        again.status,
        Nfsstat4::NFS4_OK,
        "retransmitted CLOSE: {}",
        again.summary()
    );
    assert_eq!(again.raw, first.raw, "replayed CLOSE differs");
}

#[test]
fn setclientid_confirm_with_wrong_verifier_is_stale() {
    let fx = Fixture::new();
    let mut c = V4::connect(fx.server.port, 0, "v40-unconfirmed");
    let r = c
        .compound(Ops::new().setclientid(*b"bootverf", b"v40-unconfirmed"))
        .ok("SETCLIENTID");
    let Setclientid4resok {
        clientid,
        setclientid_confirm: confirm,
    } = *r.get(NfsOpnum4::OP_SETCLIENTID).setclientid();
    let mut wrong = confirm;
    wrong[7] ^= 0xff;
    let r = c.compound(Ops::new().setclientid_confirm(clientid, wrong));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_STALE_CLIENTID,
        "{}",
        r.summary()
    );
    // Unconfirmed: OPEN is refused.
    let dir = c.path_fh(&fx.export);
    let r = c.compound(open_ops(&dir, 0, clientid, b"o", "f"));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_STALE_CLIENTID,
        "{}",
        r.summary()
    );
    c.compound(Ops::new().setclientid_confirm(clientid, confirm))
        .ok("SETCLIENTID_CONFIRM");
    c.compound(open_ops(&dir, 0, clientid, b"o", "f"))
        .ok("OPEN after confirmation");
}

#[test]
fn v40_locks_with_lock_owner_seqids() {
    let fx = Fixture::new();
    let mut c = V4::v40(fx.server.port, "v40-locks");
    let mut d = V4::v40(fx.server.port, "v40-locks-other");
    let dir = c.path_fh(&fx.export);
    let id = c.clientid;
    let r = c.compound(open_ops(&dir, 0, id, b"oo", "f")).ok("OPEN");
    let (fh, sid) = (r.fh(), r.open_stateid());
    let sid = c
        .compound(Ops::new().putfh(&fh).open_confirm(&sid, 1))
        .ok("OPEN_CONFIRM")
        .stateid(NfsOpnum4::OP_OPEN_CONFIRM);
    let new = new_lock_owner(2, &sid, 0, id, b"lo");
    let lsid = c
        .compound(
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::WriteLt, 0, 10, &new),
        )
        .ok("LOCK")
        .stateid(NfsOpnum4::OP_LOCK);
    let r =
        d.compound(
            Ops::new()
                .putfh(&fh)
                .lockt(NfsLockType4::ReadLt, 5, 1, d.clientid, b"other"),
        );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DENIED, "{}", r.summary());
    // The lock-owner's seqids: 1 is next, 0 a replay, 7 bad.
    let exist = |seqid| exist_lock_owner(&lsid, seqid);
    let r = c.compound(
        Ops::new()
            .putfh(&fh)
            .lock(NfsLockType4::WriteLt, 20, 10, &exist(7)),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BAD_SEQID, "{}", r.summary());
    let lsid2 = c
        .compound(
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::WriteLt, 20, 10, &exist(1)),
        )
        .ok("LOCK existing owner")
        .stateid(NfsOpnum4::OP_LOCK);
    assert_eq!(lsid2.other, lsid.other);
    c.compound(
        Ops::new()
            .putfh(&fh)
            .locku(NfsLockType4::WriteLt, 2, &lsid2, 0, u64::MAX),
    )
    .ok("LOCKU");
    d.compound(Ops::new().putfh(&fh).lockt(
        NfsLockType4::WriteLt,
        0,
        u64::MAX,
        d.clientid,
        b"other",
    ))
    .ok("LOCKT after LOCKU");
}

// ---------------------------------------------------------------------------------------------
// libnfs (NFSv4.0)
// ---------------------------------------------------------------------------------------------

/// Runs a libnfs tool with a time limit; it must succeed.
fn run(tool: &str, args: &[&str]) -> Output {
    let out = Command::new("timeout")
        .arg("120")
        .arg(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} (is libnfs-utils installed?): {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed with {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn v4_url(fx: &Fixture, p: &Path) -> String {
    format!(
        "nfs://127.0.0.1{}?version=4&nfsport={}",
        p.display(),
        fx.server.port
    )
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// libnfs 4.0 (Debian 12's libnfs-utils) cannot encode an NFSv4 WRITE of 4 KiB or more ("ZDR
/// error: Failed to encode COMPOUND4args", before anything is sent), and nfs-cp writes in
/// 1 MiB calls: over NFSv4 it can only copy files smaller than that into the server. Reads
/// have no such limit.
const LIBNFS_V4_MAX_WRITE: usize = 3900;

#[test]
fn libnfs_v4_cp_in_and_out_and_ls() {
    let fx = Fixture::new();
    let small = pattern(44, LIBNFS_V4_MAX_WRITE - 3);
    let local_in = fx.tmp.path().join("local-in");
    std::fs::write(&local_in, &small).unwrap();
    run(
        "nfs-cp",
        &[path_str(&local_in), &v4_url(&fx, &fx.export.join("in.bin"))],
    );
    let on_server = std::fs::read(fx.export.join("in.bin")).unwrap();
    assert!(on_server == small, "content differs after nfs-cp in (v4)");
    // Created as the squashed root user with nfs-cp's mode (EXCLUSIVE4 create, then SETATTR).
    let md = std::fs::metadata(fx.export.join("in.bin")).unwrap();
    assert_eq!((md.uid(), md.mode() & 0o7777), (65534, 0o660));

    // Out: a file of several READs, not a multiple of 4.
    let big = pattern(45, 3 * 1024 * 1024 + 5);
    std::fs::write(fx.export.join("big.bin"), &big).unwrap();
    let local_out = fx.tmp.path().join("local-out");
    run(
        "nfs-cp",
        &[
            &v4_url(&fx, &fx.export.join("big.bin")),
            path_str(&local_out),
        ],
    );
    let back = std::fs::read(&local_out).unwrap();
    assert_eq!(back.len(), big.len());
    assert!(back == big, "content differs after nfs-cp out (v4)");

    std::fs::create_dir(fx.export.join("sub")).unwrap();
    let out = run("nfs-ls", &[&v4_url(&fx, &fx.export)]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().last() == Some("big.bin"))
        .unwrap_or_else(|| panic!("big.bin not listed:\n{text}"));
    assert!(
        line.split_whitespace().any(|w| w == big.len().to_string()),
        "size: {line}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with('d') && l.ends_with(" sub")),
        "sub not listed as a directory:\n{text}"
    );
    assert!(text.contains("in.bin"), "{text}");
}

/// An NFSv4.0 client's callback service: a listener at a universal address, and the server's
/// connection to it once made.
struct CallbackService {
    listener: std::net::TcpListener,
    conn: Option<std::net::TcpStream>,
}

impl CallbackService {
    fn new() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        CallbackService {
            listener,
            conn: None,
        }
    }

    /// Its address as SETCLIENTID names it ("h1.h2.h3.h4.p1.p2").
    fn uaddr(&self) -> String {
        let port = self.listener.local_addr().unwrap().port();
        format!("127.0.0.1.{}.{}", port >> 8, port & 0xff)
    }

    /// Waits (10 s at most) for the server's connection, which must come from a reserved port.
    fn accept(&mut self) {
        self.listener.set_nonblocking(true).unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let (s, peer) = loop {
            match self.listener.accept() {
                Ok(x) => break x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(
                        std::time::Instant::now() < end,
                        "the server did not connect"
                    );
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        assert!(
            peer.port() < 1024,
            "callback connection from port {}",
            peer.port()
        );
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        self.conn = Some(s);
    }

    /// The next call: (xid, procedure, credential flavor, the arguments after the header).
    fn next_call(&mut self) -> (u32, u32, u32, Vec<u8>) {
        use std::io::Read;
        let s = self.conn.as_mut().expect("no callback connection");
        let mut rec = Vec::new();
        loop {
            let mut hdr = [0u8; 4];
            s.read_exact(&mut hdr).expect("no callback call came");
            let h = u32::from_be_bytes(hdr);
            let at = rec.len();
            rec.resize(at + (h & 0x7fff_ffff) as usize, 0);
            s.read_exact(&mut rec[at..]).unwrap();
            if h & 0x8000_0000 != 0 {
                break;
            }
        }
        let w = |i: usize| u32::from_be_bytes(rec[i..i + 4].try_into().unwrap());
        assert_eq!(
            (w(4), w(8), w(12), w(16)),
            (0, 2, CB_PROGRAM, 1),
            "not a callback call"
        );
        let (proc_, flavor, cred_len) = (w(20), w(24), w(28) as usize);
        let verf_at = 32 + cred_len.div_ceil(4) * 4;
        let args_at = verf_at + 8 + (w(verf_at + 4) as usize).div_ceil(4) * 4;
        (w(0), proc_, flavor, rec[args_at..].to_vec())
    }

    /// Answers call `xid` with `body` (SUCCESS).
    fn reply(&mut self, xid: u32, body: &[u32]) {
        use std::io::Write;
        let mut words = vec![xid, 1, 0, 0, 0, 0];
        words.extend_from_slice(body);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_be_bytes()).collect();
        let s = self.conn.as_mut().unwrap();
        s.write_all(&(0x8000_0000u32 | bytes.len() as u32).to_be_bytes())
            .unwrap();
        s.write_all(&bytes).unwrap();
    }
}

/// A read-only OPEN by `owner` (seqid `seqid`) of `name`: (handle, open stateid, delegation).
fn open_read(
    c: &mut V4,
    dir: &[u8],
    seqid: u32,
    owner: &[u8],
    name: &str,
) -> (bytes::Bytes, Stateid4, Option<Stateid4>) {
    let r = c
        .compound(
            Ops::new()
                .putfh(dir)
                .open(
                    seqid,
                    OPEN4_SHARE_ACCESS_READ,
                    OPEN4_SHARE_DENY_NONE,
                    c.clientid,
                    owner,
                    &OpenHow::NoCreate,
                    &OpenClaim4::ClaimNull(name.as_bytes().to_vec().into()),
                )
                .getfh(),
        )
        .ok(&format!("OPEN {name}"));
    let deleg = match &r.get(NfsOpnum4::OP_OPEN).open().delegation {
        OpenDelegation4::OpenDelegateRead(d) => Some(d.stateid.clone()),
        OpenDelegation4::OpenDelegateNone => None,
        other => panic!("OPEN {name}: {other:?}"),
    };
    (r.fh(), r.open_stateid(), deleg)
}

/// An NFSv4.0 client with a callback service at `ident`, whose CB_NULL probe was answered.
fn v40_with_callback(fx: &Fixture, owner: &str, ident: u32) -> (V4, CallbackService) {
    let mut cb = CallbackService::new();
    let mut a = V4::connect(fx.server.port, 0, owner);
    let mut verf = [0u8; 8];
    verf[..owner.len().min(8)].copy_from_slice(&owner.as_bytes()[..owner.len().min(8)]);
    let r = a
        .compound(Ops::new().setclientid_at(verf, owner.as_bytes(), &cb.uaddr(), ident))
        .ok("SETCLIENTID");
    let ok = r.get(NfsOpnum4::OP_SETCLIENTID).setclientid();
    a.clientid = ok.clientid;
    a.compound(Ops::new().setclientid_confirm(ok.clientid, ok.setclientid_confirm))
        .ok("SETCLIENTID_CONFIRM");
    // The confirmation makes the server connect and probe with CB_NULL (AUTH_NONE or SYS).
    cb.accept();
    let (xid, proc_, flavor, _) = cb.next_call();
    assert_eq!(proc_, 0, "the first call is not CB_NULL");
    assert!(flavor <= 1, "CB_NULL flavor {flavor}");
    cb.reply(xid, &[]);
    (a, cb)
}

/// OPEN of `name` for reading by confirmed `owner` until it comes with a read delegation (the
/// probe's answer reaches the server a moment after it was sent): (handle, delegation, next
/// seqid).
fn open_read_delegated(
    a: &mut V4,
    dir: &[u8],
    mut seqid: u32,
    owner: &[u8],
    name: &str,
) -> (bytes::Bytes, Stateid4, u32) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let (fh, sid, deleg) = open_read(a, dir, seqid, owner, name);
        seqid += 1;
        if let Some(d) = deleg {
            return (fh, d, seqid);
        }
        a.compound(Ops::new().putfh(&fh).close(seqid, &sid))
            .ok("CLOSE");
        seqid += 1;
        assert!(
            std::time::Instant::now() < end,
            "no read delegation with the callback path up"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A new open-owner's first OPEN of `name` and its OPEN_CONFIRM and CLOSE: the owner is then
/// confirmed (its next seqid is 3). Returns whether the OPEN came with a delegation.
fn confirm_owner(a: &mut V4, dir: &[u8], owner: &[u8], name: &str) -> bool {
    let (fh, sid, deleg) = open_read(a, dir, 0, owner, name);
    let sid = a
        .compound(Ops::new().putfh(&fh).open_confirm(&sid, 1))
        .ok("OPEN_CONFIRM")
        .stateid(NfsOpnum4::OP_OPEN_CONFIRM);
    a.compound(Ops::new().putfh(&fh).close(2, &sid)).ok("CLOSE");
    deleg.is_some()
}

/// RENEWs (each must succeed or say NFS4ERR_CB_PATH_DOWN) until one says the callback path is
/// down, within 5 s.
fn renew_until_path_down(a: &mut V4) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let r = a.compound(Ops::new().renew(a.clientid));
        if r.status == Nfsstat4::NFS4ERR_CB_PATH_DOWN {
            return;
        }
        assert_eq!(r.status, Nfsstat4::NFS4_OK);
        assert!(
            std::time::Instant::now() < end,
            "RENEW never said CB_PATH_DOWN"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Another 4.0 client's OPEN of `name` for writing: its COMPOUND result.
fn open_write(b: &mut V4, dir: &[u8], name: &str) -> CompoundRes {
    b.compound(Ops::new().putfh(dir).open(
        0,
        OPEN4_SHARE_ACCESS_WRITE,
        OPEN4_SHARE_DENY_NONE,
        b.clientid,
        b"w",
        &OpenHow::NoCreate,
        &OpenClaim4::ClaimNull(name.as_bytes().to_vec().into()),
    ))
}

#[test]
fn a_v40_client_is_called_back_at_its_callback_address_to_recall_a_delegation() {
    let fx = Fixture::new();
    for n in ["f", "g"] {
        std::fs::write(fx.export.join(n), b"before").unwrap();
        std::os::unix::fs::chown(fx.export.join(n), Some(TEST_UID), Some(TEST_UID)).unwrap();
    }
    let (mut a, mut cb) = v40_with_callback(&fx, "v40-cb-holder", 77);

    // An open-owner's first OPEN is confirmed before it may get a delegation (as knfsd).
    let dir = a.path_fh(&fx.export);
    let owner = b"v40-cb-owner";
    assert!(
        !confirm_owner(&mut a, &dir, owner, "f"),
        "a delegation to an unconfirmed open-owner"
    );
    let (fh, deleg, mut seqid) = open_read_delegated(&mut a, &dir, 3, owner, "f");
    a.compound(Ops::new().renew(a.clientid)).ok("RENEW");

    // Another client's write: NFS4ERR_DELAY while the holder is called back at its address.
    let mut b = V4::v40(fx.server.port, "v40-cb-writer");
    let bdir = b.path_fh(&fx.export);
    let r = open_write(&mut b, &bdir, "f");
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
    let (xid, proc_, flavor, args) = cb.next_call();
    assert_eq!((proc_, flavor), (1, 1), "CB_COMPOUND under AUTH_SYS");
    let w = |i: usize| u32::from_be_bytes(args[i..i + 4].try_into().unwrap());
    // tag (empty), minorversion 0, callback_ident, one operation: CB_RECALL of the delegation
    assert_eq!(
        (w(0), w(4), w(8), w(12), w(16)),
        (0, 0, 77, 1, 4),
        "not a 4.0 CB_RECALL"
    );
    assert_eq!(&args[24..36], deleg.other.as_slice(), "another stateid");
    cb.reply(xid, &[0, 0, 1, 4, 0]);
    // the holder returns it; the writer's OPEN then goes through
    a.compound(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let r = open_write(&mut b, &bdir, "f");
    assert_eq!(r.status, Nfsstat4::NFS4_OK, "{}", r.summary());

    // With a delegation held, a callback connection that breaks makes RENEW say
    // NFS4ERR_CB_PATH_DOWN (the lease renewed all the same), and no new delegation is granted.
    let (_, _, held) = open_read(&mut a, &dir, seqid, owner, "g");
    seqid += 1;
    assert!(held.is_some(), "no delegation of g");
    cb.conn = None;
    renew_until_path_down(&mut a);
    let (_, _, again) = open_read(&mut a, &dir, seqid, owner, "f");
    assert!(again.is_none(), "a delegation with the callback path down");
}

#[test]
fn a_v40_client_whose_callback_address_does_not_answer_gets_no_delegation() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("f"), b"data").unwrap();
    // the default SETCLIENTID names port 0; this one a port nothing listens on
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    let mut a = V4::connect(fx.server.port, 0, "v40-nocb");
    let r = a
        .compound(Ops::new().setclientid_at(
            *b"v40-nocb",
            b"v40-nocb",
            &format!("127.0.0.1.{}.{}", port >> 8, port & 0xff),
            5,
        ))
        .ok("SETCLIENTID");
    let ok = r.get(NfsOpnum4::OP_SETCLIENTID).setclientid();
    a.clientid = ok.clientid;
    a.compound(Ops::new().setclientid_confirm(ok.clientid, ok.setclientid_confirm))
        .ok("SETCLIENTID_CONFIRM");
    let dir = a.path_fh(&fx.export);
    let (fh, sid, _) = open_read(&mut a, &dir, 0, b"o", "f");
    let sid = a
        .compound(Ops::new().putfh(&fh).open_confirm(&sid, 1))
        .ok("OPEN_CONFIRM")
        .stateid(NfsOpnum4::OP_OPEN_CONFIRM);
    a.compound(Ops::new().putfh(&fh).close(2, &sid)).ok("CLOSE");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (_, _, deleg) = open_read(&mut a, &dir, 3, b"o", "f");
    assert!(deleg.is_none(), "a delegation without a callback path");
    // holding none, RENEW has nothing to report
    a.compound(Ops::new().renew(a.clientid)).ok("RENEW");
}

#[test]
fn a_recall_left_unanswered_makes_renew_say_the_callback_path_is_down() {
    // a 10 s lease: an answer is due within a tenth of it
    let fx = Fixture::with_args(&["--lease-time", "10"]);
    std::fs::write(fx.export.join("f"), b"data").unwrap();
    std::os::unix::fs::chown(fx.export.join("f"), Some(TEST_UID), Some(TEST_UID)).unwrap();
    let (mut a, mut cb) = v40_with_callback(&fx, "v40-mute", 9);
    let dir = a.path_fh(&fx.export);
    confirm_owner(&mut a, &dir, b"o", "f");
    let (fh, deleg, seqid) = open_read_delegated(&mut a, &dir, 3, b"o", "f");
    let mut b = V4::v40(fx.server.port, "v40-mute-writer");
    let bdir = b.path_fh(&fx.export);
    let r = open_write(&mut b, &bdir, "f");
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
    // the recall comes and is not answered: past a tenth of the lease the path is down, for
    // delegations at once (before any RENEW), and RENEW says so
    std::fs::write(fx.export.join("g"), b"data").unwrap();
    let (_, proc_, _, _) = cb.next_call();
    assert_eq!(proc_, 1);
    std::thread::sleep(std::time::Duration::from_millis(1300));
    let (gfh, gsid, gdeleg) = open_read(&mut a, &dir, seqid, b"o", "g");
    assert!(gdeleg.is_none(), "a delegation with a recall unanswered");
    a.compound(Ops::new().putfh(&gfh).close(seqid + 1, &gsid))
        .ok("CLOSE");
    let seqid = seqid + 2;
    renew_until_path_down(&mut a);
    // within the lease the holder may still return it, and gets no new one
    a.compound(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let (_, _, again) = open_read(&mut a, &dir, seqid, b"o", "f");
    assert!(again.is_none(), "a delegation on a path found down");
}

/// A call that reached [`GssCallbackService`]: procedure, the caller's principal and
/// protection under RPCSEC_GSS (None for another flavor), and the arguments.
#[derive(Debug, Clone)]
struct CbCall {
    proc_: u32,
    gss: Option<(String, sunrpc::gss::wire::GssService)>,
    args: bytes::Bytes,
}

/// The callback program as a client host serves it: answers CB_NULL, and CB_COMPOUND with
/// NFS4_OK for its one operation; records every call.
struct CbProgram {
    calls: std::sync::mpsc::Sender<CbCall>,
}

impl sunrpc::Program for CbProgram {
    fn program(&self) -> u32 {
        CB_PROGRAM
    }
    fn versions(&self) -> (u32, u32) {
        (1, 1)
    }
    fn proc_name(&self, _vers: u32, proc_: u32) -> Option<&'static str> {
        ["CB_NULL", "CB_COMPOUND"].get(proc_ as usize).copied()
    }
    fn call(
        &self,
        ctx: &sunrpc::CallContext,
        mut args: xdr::Decoder,
        reply: &mut xdr::Encoder,
    ) -> Result<(), sunrpc::ProcError> {
        let gss = ctx
            .gss
            .as_ref()
            .map(|g| (g.peer.principal.to_string(), g.service));
        let all = args.clone().into_rest();
        if ctx.proc_ == 1 {
            // tag, minorversion, callback_ident, one operation: answer it with NFS4_OK
            let garbage = |_| sunrpc::ProcError::GarbageArgs;
            args.opaque(64).map_err(garbage)?;
            args.u32().map_err(garbage)?;
            args.u32().map_err(garbage)?;
            args.u32().map_err(garbage)?;
            let op = args.u32().map_err(garbage)?;
            for w in [0, 0, 1, op, 0] {
                reply.u32(w);
            }
        }
        let _ = self.calls.send(CbCall {
            proc_: ctx.proc_,
            gss,
            args: all,
        });
        Ok(())
    }
}

/// A client host's NFSv4.0 callback service that accepts RPCSEC_GSS with the keys of the
/// realm's client keytab (where [`kerberos::CLIENT_HOST`] is): sunrpc's dispatcher and the
/// Kerberos acceptor rnfsd itself uses, on a runtime of its own.
struct GssCallbackService {
    addr: std::net::SocketAddr,
    calls: std::sync::mpsc::Receiver<CbCall>,
    _rt: tokio::runtime::Runtime,
}

impl GssCallbackService {
    fn start() -> Self {
        let realm = kerberos::realm();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (tx, calls) = std::sync::mpsc::channel();
        let acceptor = gss::Krb5Acceptor::new(
            &realm.client_keytab.display().to_string(),
            None,
            Default::default(),
        )
        .expect("acceptor credentials of the client host");
        let mut disp = sunrpc::Dispatcher::new(64, Default::default());
        disp.set_gss(std::sync::Arc::new(sunrpc::gss::GssServer::new(
            std::sync::Arc::new(acceptor),
            64,
        )));
        disp.register(std::sync::Arc::new(CbProgram { calls: tx }));
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(sunrpc::tcp::serve_tcp(
            listener,
            std::sync::Arc::new(disp),
            Default::default(),
        ));
        GssCallbackService {
            addr,
            calls,
            _rt: rt,
        }
    }

    fn uaddr(&self) -> String {
        let port = self.addr.port();
        format!("127.0.0.1.{}.{}", port >> 8, port & 0xff)
    }

    /// The next call, within 10 s.
    fn next_call(&self) -> CbCall {
        self.calls
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("no callback came")
    }
}

/// SETCLIENTID at `uaddr` and its confirmation, by `a`.
fn setclientid_at(a: &mut V4, owner: &str, uaddr: &str, ident: u32) {
    let mut verf = [0u8; 8];
    verf[..owner.len().min(8)].copy_from_slice(&owner.as_bytes()[..owner.len().min(8)]);
    let r = a
        .compound(Ops::new().setclientid_at(verf, owner.as_bytes(), uaddr, ident))
        .ok("SETCLIENTID");
    let ok = r.get(NfsOpnum4::OP_SETCLIENTID).setclientid();
    a.clientid = ok.clientid;
    a.compound(Ops::new().setclientid_confirm(ok.clientid, ok.setclientid_confirm))
        .ok("SETCLIENTID_CONFIRM");
}

#[test]
fn a_v40_kerberos_client_is_called_back_under_rpcsec_gss_as_the_servers_principal() {
    use sunrpc::gss::wire::GssService;
    let mut args = kerberos::server_args();
    args.extend(["--lease-time", "10"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let fx = Fixture::with_options_args(0o777, "rw,insecure,sec=krb5:krb5i:krb5p:sys", &args);
    let cbs = GssCallbackService::start();
    let names = ["none", "integrity", "privacy"];
    for (i, svc) in [GssService::None, GssService::Integrity, GssService::Privacy]
        .into_iter()
        .enumerate()
    {
        // the server is called by either of its names; it calls back as the one the client
        // authenticated to (which the Linux client checks)
        let (to, server) = match i {
            1 => ("nfs@alias".to_string(), kerberos::SERVER_ALIAS),
            _ => ("nfs@localhost".to_string(), "nfs/localhost"),
        };
        let server = format!("{server}@{}", gss::kdc::REALM);
        let name = format!("f-{}", names[i]);
        std::fs::write(fx.export.join(&name), b"data").unwrap();
        std::os::unix::fs::chown(fx.export.join(&name), Some(TEST_UID), Some(TEST_UID)).unwrap();
        // the client host introduces itself as its nfs/ principal, under `svc`
        let owner = format!("v40-krb5-{}", names[i]);
        let rpc = RpcClient::connect(fx.server.port).with_gss_to(kerberos::CLIENT_HOST, &to, svc);
        let mut a = V4::over(rpc, 0, &owner);
        let ident = 40 + i as u32;
        setclientid_at(&mut a, &owner, &cbs.uaddr(), ident);
        // CB_NULL under a context the server made as its own principal, under `svc`
        let probe = cbs
            .calls
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{svc:?}: no CB_NULL; {}", fx.server.log_text()));
        assert_eq!(probe.proc_, 0, "{svc:?}: not CB_NULL first");
        assert_eq!(
            probe.gss,
            Some((server.clone(), svc)),
            "{svc:?}: the probe's credential"
        );
        let dir = a.path_fh(&fx.export);
        confirm_owner(&mut a, &dir, b"o", &name);
        let (fh, deleg, seqid) = open_read_delegated(&mut a, &dir, 3, b"o", &name);

        // another client's write: the recall comes under the same context, and its sealed
        // answer is taken (the path stays up: RENEW is fine and delegations still come)
        let mut b = V4::v40(fx.server.port, &format!("{owner}-writer"));
        let bdir = b.path_fh(&fx.export);
        let r = open_write(&mut b, &bdir, &name);
        assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{}", r.summary());
        let recall = cbs.next_call();
        assert_eq!(recall.proc_, 1, "{svc:?}: not CB_COMPOUND");
        assert_eq!(
            recall.gss,
            Some((server.clone(), svc)),
            "{svc:?}: the recall's credential"
        );
        let w = |n: usize| u32::from_be_bytes(recall.args[n..n + 4].try_into().unwrap());
        assert_eq!(
            (w(4), w(8), w(12), w(16)),
            (0, ident, 1, 4),
            "not a 4.0 CB_RECALL"
        );
        assert_eq!(
            &recall.args[24..36],
            deleg.other.as_slice(),
            "another stateid"
        );
        std::thread::sleep(std::time::Duration::from_millis(1500));
        a.compound(Ops::new().renew(a.clientid))
            .ok("RENEW after the recall's answer");
        a.compound(Ops::new().putfh(&fh).delegreturn(&deleg))
            .ok("DELEGRETURN");
        let r = open_write(&mut b, &bdir, &name);
        assert_eq!(r.status, Nfsstat4::NFS4_OK, "{}", r.summary());
        let other = format!("g-{}", names[i]);
        std::fs::write(fx.export.join(&other), b"data").unwrap();
        open_read_delegated(&mut a, &dir, seqid, b"o", &other);
    }

    // a user's principal has no key on the client host to be called back with: no
    // connection is made, and no delegation is granted
    let rpc = RpcClient::connect(fx.server.port).with_gss("daemon", GssService::Integrity);
    let mut u = V4::over(rpc, 0, "v40-krb5-user");
    setclientid_at(&mut u, "v40-krb5-user", &cbs.uaddr(), 50);
    std::fs::write(fx.export.join("u"), b"data").unwrap();
    let dir = u.path_fh(&fx.export);
    confirm_owner(&mut u, &dir, b"o", "u");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (_, _, deleg) = open_read(&mut u, &dir, 3, b"o", "u");
    assert!(deleg.is_none(), "a delegation without a callback path");
    assert!(
        cbs.calls.try_recv().is_err(),
        "a callback to a user's principal"
    );
}
