//! Seeds of nfs4_compound: NFSv4.0 to 4.2 COMPOUNDs, stateless and with client state.

use super::*;
/// The COMPOUND reply in an RPC reply (which must be an accepted, successful one).
fn results(reply: &Bytes) -> Compound4res {
    let mut d = sunrpc::msg::decode_success(reply.clone()).expect("call not accepted");
    <Compound4res as xdr::Decode>::decode(&mut d).expect("a COMPOUND4res")
}

/// A stateid as the seeds carry it.
fn sid(s: &Stateid4) -> (u32, [u8; 12]) {
    (s.seqid, s.other)
}

struct V4 {
    /// Compound bodies of the seed so far.
    bodies: Vec<Vec<u8>>,
    selector: u8,
}

impl V4 {
    fn new(selector: u8) -> Self {
        V4 {
            bodies: Vec::new(),
            selector,
        }
    }
    fn input(&self) -> Vec<u8> {
        let mut v = vec![self.selector];
        v.extend(harness::join_frames(&self.bodies));
        v
    }
    /// Adds a compound and runs the whole seed; returns the last reply.
    fn push(&mut self, minor: u32, ops: &[Vec<u8>]) -> Bytes {
        self.bodies.push(v4::compound(b"seed", minor, ops));
        let replies = harness::run_compounds(&self.input());
        replies.last().cloned().flatten().expect("a reply")
    }
}

/// EXCHANGE_ID, CREATE_SESSION and (optionally) RECLAIM_COMPLETE; returns the client id and
/// session id.
fn session(s: &mut V4, minor: u32, owner: &[u8], reclaim_complete: bool) -> (u64, [u8; 16]) {
    let r = s.push(minor, &[v4::exchange_id(*b"verifier", owner, 0)]);
    let [NfsResop4::OpExchangeId(ExchangeId4res::Nfs4Ok(ok))] = &results(&r).resarray[..] else {
        panic!("EXCHANGE_ID failed");
    };
    let (clid, seq) = (ok.eir_clientid, ok.eir_sequenceid);
    let r = s.push(minor, &[v4::create_session(clid, seq, 0)]);
    let [NfsResop4::OpCreateSession(CreateSession4res::Nfs4Ok(ok))] = &results(&r).resarray[..]
    else {
        panic!("CREATE_SESSION failed");
    };
    let sid = ok.csr_sessionid;
    if reclaim_complete {
        let r = s.push(
            minor,
            &[v4::sequence(&sid, 1, 0, false), v4::reclaim_complete(false)],
        );
        assert_eq!(
            results(&r).status,
            Nfsstat4::NFS4_OK,
            "RECLAIM_COMPLETE failed"
        );
    }
    (clid, sid)
}

pub(crate) fn nfs4_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    let attrs3 = [v4::ATTRS[0], v4::ATTRS[1], 1 << 18];
    let cur = v4::CURRENT;
    let anon = v4::ANON;

    // Stateless NFSv4.0 compounds.
    let single: Vec<(&str, u8, u32, Vec<Vec<u8>>)> = vec![
        (
            "v40_putrootfh_getattr",
            0,
            0,
            vec![v4::putrootfh(), v4::getattr(&v4::ATTRS), v4::getfh()],
        ),
        (
            "v40_lookup_path",
            1,
            0,
            vec![
                v4::putrootfh(),
                v4::lookup(b"tmp"),
                v4::lookup(b"rnfs-fuzz"),
                v4::getattr(&v4::ATTRS),
                v4::lookup(b"export"),
                v4::getfh(),
                v4::getattr(&v4::ATTRS),
                v4::lookupp(),
                v4::getfh(),
            ],
        ),
        (
            "v40_readdir_pseudo",
            0,
            0,
            vec![v4::putrootfh(), v4::readdir(0, 1024, 4096, &v4::ATTRS)],
        ),
        (
            "v40_readdir_root",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::readdir(0, 1024, 8192, &v4::ATTRS),
            ],
        ),
        (
            "v40_readdir_dir_small",
            1,
            0,
            vec![v4::putfh(b"@FH@DIR_"), v4::readdir(0, 64, 200, &[1 << 20])],
        ),
        (
            "v40_read_anon",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::read(anon, 0, 4096),
                v4::getattr(&v4::ATTRS),
            ],
        ),
        (
            "v40_write_anon",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::write(anon, 5, StableHow4::FileSync4, b"data"),
                v4::commit(0, 0),
                v4::getattr(&v4::ATTRS),
            ],
        ),
        (
            "v40_readlink",
            1,
            0,
            vec![
                v4::putfh(b"@FH@LINK"),
                v4::readlink(),
                v4::getattr(&v4::ATTRS),
            ],
        ),
        (
            "v40_access_verify",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::access(0x3f),
                v4::verify(true, NfsFtype4::Nf4reg),
                v4::verify(false, NfsFtype4::Nf4dir),
            ],
        ),
        (
            "v40_secinfo",
            0,
            0,
            vec![v4::putfh(b"@FH@ROOT"), v4::secinfo(b"file")],
        ),
        (
            "v40_savefh_restorefh",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::savefh(),
                v4::putfh(b"@FH@FILE"),
                v4::restorefh(),
                v4::getfh(),
            ],
        ),
        (
            "v40_create_remove",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::create(Createtype4::Nf4dir, b"d40"),
                v4::getfh(),
                v4::putfh(b"@FH@ROOT"),
                v4::create(v4::symlink(b"file"), b"l40"),
                v4::putfh(b"@FH@ROOT"),
                v4::remove(b"d40"),
                v4::remove(b"l40"),
            ],
        ),
        (
            "v40_rename_link",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::savefh(),
                v4::putfh(b"@FH@DIR_"),
                v4::link(b"hard40"),
                v4::putfh(b"@FH@DIR_"),
                v4::savefh(),
                v4::putfh(b"@FH@ROOT"),
                v4::rename(b"hard40", b"moved40"),
            ],
        ),
        (
            "v40_setattr_anon",
            1,
            0,
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::setattr_size(anon, 70000),
                v4::setattr(anon, 1000, 0o600),
            ],
        ),
        (
            "v40_ro_write",
            1,
            0,
            vec![
                v4::putfh(b"@FH@ROFL"),
                v4::write(anon, 0, StableHow4::Unstable4, b"x"),
            ],
        ),
        (
            "v40_putpubfh_illegal",
            2,
            0,
            vec![v4::putpubfh(), v4::bare(NfsOpnum4::OP_ILLEGAL), v4::getfh()],
        ),
        ("v40_nofilehandle", 2, 0, vec![v4::getattr(&v4::ATTRS)]),
        ("v43_minor_mismatch", 0, 3, vec![v4::putrootfh()]),
        ("v41_no_sequence", 0, 1, vec![v4::putrootfh()]),
        (
            "v42_xattr_unsupported_ops",
            0,
            2,
            vec![
                v4::bare(NfsOpnum4::OP_WRITE_SAME),
                v4::bare(NfsOpnum4::OP_LAYOUTGET),
            ],
        ),
        ("v40_empty", 3, 0, vec![]),
    ];
    for (name, sel, minor, ops) in single {
        let mut s = V4::new(sel);
        s.bodies.push(v4::compound(b"seed", minor, &ops));
        out.push((name.into(), s.input()));
    }

    // NFSv4.0 client: SETCLIENTID, confirm, OPEN, OPEN_CONFIRM, WRITE, LOCK, LOCKU, CLOSE.
    {
        let mut s = V4::new(1);
        let r = s.push(0, &[v4::setclientid(*b"verifier", b"fuzz-v40")]);
        let [NfsResop4::OpSetclientid(Setclientid4res::Nfs4Ok(ok))] = &results(&r).resarray[..]
        else {
            panic!("SETCLIENTID failed");
        };
        let (clid, confirm) = (ok.clientid, ok.setclientid_confirm);
        s.push(0, &[v4::setclientid_confirm(clid, confirm)]);
        out.push(("v40_setclientid_confirm".into(), s.input()));
        let r = s.push(
            0,
            &[
                v4::putfh(b"@FH@ROOT"),
                v4::open(
                    0,
                    3,
                    0,
                    clid,
                    b"owner40",
                    v4::How::NoCreate,
                    v4::Claim::Null(b"file"),
                ),
                v4::getfh(),
            ],
        );
        let res = results(&r);
        let Some(NfsResop4::OpOpen(Open4res::Nfs4Ok(ok))) = res.resarray.get(1) else {
            panic!("v4.0 OPEN failed: {res:?}");
        };
        let osid = sid(&ok.stateid);
        let r = s.push(0, &[v4::putfh(b"@FH@FILE"), v4::open_confirm(osid, 1)]);
        let Some(NfsResop4::OpOpenConfirm(OpenConfirm4res::Nfs4Ok(ok))) =
            results(&r).resarray.get(1).cloned()
        else {
            panic!("OPEN_CONFIRM failed");
        };
        let osid = sid(&ok.open_stateid);
        out.push(("v40_open_confirm".into(), s.input()));
        let r = s.push(
            0,
            &[
                v4::putfh(b"@FH@FILE"),
                v4::write(osid, 0, StableHow4::Unstable4, b"v40 data"),
                v4::read(osid, 0, 64),
            ],
        );
        assert_eq!(
            results(&r).status,
            Nfsstat4::NFS4_OK,
            "v4.0 WRITE/READ failed"
        );
        let r = s.push(
            0,
            &[
                v4::putfh(b"@FH@FILE"),
                v4::lock_new(
                    NfsLockType4::WriteLt,
                    0,
                    100,
                    2,
                    osid,
                    0,
                    clid,
                    b"lockowner40",
                ),
            ],
        );
        let res = results(&r);
        s.push(
            0,
            &[
                v4::putfh(b"@FH@FILE"),
                v4::lockt(NfsLockType4::ReadLt, 50, 10, clid, b"other"),
            ],
        );
        out.push(("v40_write_lock".into(), s.input()));
        if let Some(NfsResop4::OpLock(Lock4res::Nfs4Ok(ok))) = res.resarray.get(1) {
            let lsid = sid(&ok.lock_stateid);
            s.push(
                0,
                &[
                    v4::putfh(b"@FH@FILE"),
                    v4::locku(NfsLockType4::WriteLt, 1, lsid, 0, 100),
                ],
            );
        }
        s.push(
            0,
            &[v4::putfh(b"@FH@FILE"), v4::open_downgrade(osid, 3, 1, 0)],
        );
        s.push(0, &[v4::renew(clid)]);
        s.push(
            0,
            &[v4::putfh(b"@FH@FILE"), v4::close(4, (osid.0 + 1, osid.1))],
        );
        s.push(0, &[v4::release_lockowner(clid, b"lockowner40")]);
        out.push(("v40_full_open_lock_close".into(), s.input()));
    }

    // NFSv4.1 / 4.2 sessions.
    for minor in [1u32, 2] {
        let mut s = V4::new(1);
        let (clid, sid) = session(&mut s, minor, format!("fuzz-v4{minor}").as_bytes(), false);
        out.push((format!("v4{minor}_exchange_id_create_session"), s.input()));
        let r = s.push(
            minor,
            &[v4::sequence(&sid, 1, 0, true), v4::reclaim_complete(false)],
        );
        assert_eq!(results(&r).status, Nfsstat4::NFS4_OK);
        let seq = 2;
        let mut step = |s: &mut V4, name: &str, ops: Vec<Vec<u8>>| {
            let mut all = vec![v4::sequence(&sid, seq, 0, true)];
            all.extend(ops);
            let mut t = V4::new(s.selector);
            t.bodies = s.bodies.clone();
            t.push(minor, &all);
            out.push((format!("v4{minor}_{name}"), t.input()));
        };
        step(
            &mut s,
            "getattr_root",
            vec![
                v4::putrootfh(),
                v4::getattr(&attrs3),
                v4::secinfo_no_name(SecinfoStyle4::SecinfoStyle4CurrentFh),
            ],
        );
        step(
            &mut s,
            "open_create_write_close",
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::open(
                    0,
                    3,
                    0,
                    clid,
                    b"o1",
                    v4::How::Unchecked(0o644),
                    v4::Claim::Null(b"new41"),
                ),
                v4::write(cur, 0, StableHow4::DataSync4, b"hello nfs4"),
                v4::commit(0, 0),
                v4::getattr(&v4::ATTRS),
                v4::close(0, cur),
            ],
        );
        step(
            &mut s,
            "open_exclusive41",
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::open(
                    0,
                    2,
                    0,
                    clid,
                    b"o2",
                    v4::How::Exclusive41(*b"excl-ver", 0o600),
                    v4::Claim::Null(b"ex41"),
                ),
                v4::getattr(&v4::ATTRS),
                v4::close(0, cur),
            ],
        );
        step(
            &mut s,
            "open_fh_read_lock",
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::open(0, 3, 0, clid, b"o3", v4::How::NoCreate, v4::Claim::Fh),
                v4::read(cur, 0, 128),
                v4::lock_new(NfsLockType4::WriteLt, 0, 10, 0, cur, 0, clid, b"lo3"),
                v4::lockt(NfsLockType4::WriteLt, 50, 1, clid, b"other"),
                v4::locku(NfsLockType4::WriteLt, 0, cur, 0, 10),
                v4::test_stateid(&[cur, anon]),
                v4::close(0, cur),
            ],
        );
        step(
            &mut s,
            "reclaim_previous",
            vec![
                v4::putfh(b"@FH@FILE"),
                v4::open(
                    0,
                    1,
                    0,
                    clid,
                    b"o4",
                    v4::How::NoCreate,
                    v4::Claim::Previous(OpenDelegationType4::OpenDelegateNone),
                ),
            ],
        );
        step(
            &mut s,
            "readdir",
            vec![v4::putfh(b"@FH@DIR_"), v4::readdir(0, 4096, 4096, &attrs3)],
        );
        step(
            &mut s,
            "create_link_rename_remove",
            vec![
                v4::putfh(b"@FH@ROOT"),
                v4::create(Createtype4::Nf4dir, b"d41"),
                v4::putfh(b"@FH@ROOT"),
                v4::create(Createtype4::Nf4fifo, b"fifo41"),
                v4::putfh(b"@FH@FILE"),
                v4::savefh(),
                v4::putfh(b"@FH@ROOT"),
                v4::link(b"h41"),
                v4::putfh(b"@FH@ROOT"),
                v4::savefh(),
                v4::rename(b"h41", b"h42"),
                v4::remove(b"h42"),
                v4::remove(b"d41"),
            ],
        );
        step(
            &mut s,
            "misc_session_ops",
            vec![
                v4::bind_conn(&sid, ChannelDirFromClient4::Cdfc4ForeOrBoth),
                v4::backchannel_ctl(),
                v4::free_stateid(anon),
                v4::delegreturn(anon),
            ],
        );
        if minor == 2 {
            step(
                &mut s,
                "read_plus_seek",
                vec![
                    v4::putfh(b"@FH@FILE"),
                    v4::read_plus(anon, 0, 65536),
                    v4::seek(anon, 0, DataContent4::Nfs4ContentHole),
                    v4::seek(anon, 5000, DataContent4::Nfs4ContentData),
                ],
            );
            step(
                &mut s,
                "allocate_copy_clone",
                vec![
                    v4::putfh(b"@FH@ROOT"),
                    v4::open(
                        0,
                        3,
                        0,
                        clid,
                        b"o5",
                        v4::How::Unchecked(0o644),
                        v4::Claim::Null(b"dst42"),
                    ),
                    v4::allocate(cur, 0, 8192),
                    v4::deallocate(cur, 0, 4096),
                    v4::savefh(),
                    v4::putfh(b"@FH@FILE"),
                    v4::savefh(),
                    v4::restorefh(),
                    v4::putfh(b"@FH@FILE"),
                    v4::savefh(),
                    v4::putfh(b"@FH@ROOT"),
                    v4::lookup(b"dst42"),
                    v4::copy(anon, cur, 0, 0, 4096),
                    v4::clone_op(anon, cur, 0, 8192, 4096),
                ],
            );
            step(
                &mut s,
                "xattrs",
                vec![
                    v4::putfh(b"@FH@FILE"),
                    v4::getxattr(b"fuzz"),
                    v4::listxattrs(0, 4096),
                    v4::setxattr(SetxattrOption4::Setxattr4Create, b"new", b"value"),
                    v4::setxattr(SetxattrOption4::Setxattr4Replace, b"new", b"other"),
                    v4::removexattr(b"new"),
                    v4::getattr(&attrs3),
                ],
            );
        }
        let mut t = V4::new(1);
        t.bodies = s.bodies.clone();
        t.push(
            minor,
            &[v4::sequence(&sid, seq, 0, false), v4::destroy_session(&sid)],
        );
        t.push(minor, &[v4::destroy_clientid(clid)]);
        out.push((format!("v4{minor}_destroy"), t.input()));
        // Replay of the last request and a misordered one.
        let mut t = V4::new(1);
        t.bodies = s.bodies.clone();
        t.push(minor, &[v4::sequence(&sid, 1, 0, false), v4::putrootfh()]);
        t.push(minor, &[v4::sequence(&sid, 9, 0, false), v4::putrootfh()]);
        t.push(minor, &[v4::sequence(&sid, 1, 5, false), v4::putrootfh()]);
        out.push((format!("v4{minor}_sequence_misordered"), t.input()));
    }
    let _ = build::NFS;
    out
}
