//! Read delegations and their recall: an NFSv3 client that changes a file another client holds
//! a read delegation on is told to retry (NFS3ERR_JUKEBOX) while the server recalls the
//! delegation over the holder's back channel; once it is returned the change goes through.
//! Removing, renaming or linking the file recalls it too, from NFSv3 and from another NFSv4
//! client (NFS4ERR_DELAY), as the local file system would break a lease. A holder turns the
//! opens it made locally into open state with CLAIM_DELEGATE_CUR / CLAIM_DELEG_CUR_FH. A
//! client that asks for a write delegation gets one when nobody else has the file open; then
//! any access by another client, reads and size queries included, recalls it.

mod common;

use common::nfs4_raw::*;
use common::*;
use nfs3wire::*;
use nfs4wire::*;

/// Word `i` of a record.
fn word(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i * 4..i * 4 + 4].try_into().unwrap())
}

/// A 4.1 client with a back channel that opens `name` in the export for reading and gets a
/// read delegation: (the client, the file's handle, the delegation).
fn delegation_holder(fx: &Fixture, name: &str) -> (V4, bytes::Bytes, Stateid4) {
    let path = fx.export.join(name);
    std::fs::write(&path, b"before").unwrap();
    std::os::unix::fs::chown(&path, Some(TEST_UID), Some(TEST_UID)).unwrap();
    let mut a = V4::connect(fx.server.port, 1, "deleg-holder");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);
    let r = a
        .open(
            &dir,
            name,
            "reader",
            OPEN4_SHARE_ACCESS_READ,
            OPEN4_SHARE_DENY_NONE,
            OpenHow::NoCreate,
        )
        .ok("OPEN for reading");
    let fh = r.fh();
    let OpenDelegation4::OpenDelegateRead(d) = &r.get(NfsOpnum4::OP_OPEN).open().delegation else {
        panic!("no read delegation: {}", r.summary());
    };
    (a, fh, d.stateid.clone())
}

/// Reads the CB_COMPOUND the holder gets and checks that it recalls `deleg`.
fn expect_recall(a: &mut V4, deleg: &Stateid4) {
    let (_, cb) = a.next_callback();
    assert_eq!(
        (word(&cb, 3), word(&cb, 4), word(&cb, 5)),
        (CB_PROGRAM, NFS_CB, CB_COMPOUND)
    );
    let recalled = cb.windows(12).any(|w| w == deleg.other.as_slice());
    assert!(recalled, "the callback does not name the delegation");
}

#[test]
fn nfsv3_changes_recall_nfsv4_read_delegations() {
    let fx = Fixture::new();
    let path = fx.export.join("f");
    // The holder: an NFSv4.1 session with its back channel on its connection, reading "f".
    let (mut a, fh, deleg) = delegation_holder(&fx, "f");

    // An NFSv3 WRITE: not now, the delegation is being recalled.
    let (mut c, root) = fx.connect();
    let v3fh = c.lookup_ok(&root, "f");
    let w = c.write(
        &v3fh,
        0,
        bytes::Bytes::from_static(b"after!"),
        StableHow::FileSync,
    );
    assert_eq!(w.status(), Nfsstat3::NFS3ERR_JUKEBOX, "{w:?}");
    let s = c.setattr(
        &v3fh,
        Sattr3 {
            mode: SetMode3(Some(0o600)),
            ..sattr3()
        },
    );
    assert_eq!(s.status(), Nfsstat3::NFS3ERR_JUKEBOX, "{s:?}");

    // The holder gets CB_COMPOUND(CB_SEQUENCE, CB_RECALL of that delegation) on its connection.
    expect_recall(&mut a, &deleg);

    // Returned: the change goes through.
    a.call(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let w = c.write(
        &v3fh,
        0,
        bytes::Bytes::from_static(b"after!"),
        StableHow::FileSync,
    );
    assert!(matches!(w, Write3res::Ok(_)), "{w:?}");
    assert_eq!(std::fs::read(&path).unwrap(), b"after!");
}

#[test]
fn removing_renaming_or_linking_a_delegated_file_recalls_it() {
    let fx = Fixture::new();
    let (mut a, fh, deleg) = delegation_holder(&fx, "f");
    std::fs::write(fx.export.join("other"), b"x").unwrap();

    // NFSv3: every change of the file's names waits for the recall
    let (mut c, root) = fx.connect();
    let v3fh = c.lookup_ok(&root, "f");
    let r = c.remove(&root, "f");
    assert_eq!(r.status(), Nfsstat3::NFS3ERR_JUKEBOX, "REMOVE: {r:?}");
    let r = c.rename(&root, "f", &root, "g");
    assert_eq!(
        r.status(),
        Nfsstat3::NFS3ERR_JUKEBOX,
        "RENAME of the file: {r:?}"
    );
    let r = c.rename(&root, "other", &root, "f");
    assert_eq!(
        r.status(),
        Nfsstat3::NFS3ERR_JUKEBOX,
        "RENAME over the file: {r:?}"
    );
    let r = c.link(&v3fh, &root, "f2");
    assert_eq!(r.status(), Nfsstat3::NFS3ERR_JUKEBOX, "LINK: {r:?}");
    // a name that is not delegated is not held up
    let r = c.rename(&root, "other", &root, "other2");
    assert_eq!(r.status(), Nfsstat3::NFS3_OK, "unrelated RENAME: {r:?}");
    expect_recall(&mut a, &deleg);

    // another NFSv4.1 client: NFS4ERR_DELAY
    let mut b = V4::session(fx.server.port, 1, "deleg-other");
    let dir = b.path_fh(&fx.export);
    for (what, ops) in [
        ("REMOVE", Ops::new().putfh(&dir).remove("f")),
        ("RENAME", Ops::new().putfh(&dir).savefh().rename("f", "g")),
        (
            "LINK",
            Ops::new().putfh(&fh).savefh().putfh(&dir).link("f3"),
        ),
    ] {
        let r = b.call(ops);
        assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "{what}: {}", r.summary());
    }
    assert!(fx.export.join("f").exists());

    // returned: the NFSv3 REMOVE goes through
    a.call(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let r = c.remove(&root, "f");
    assert_eq!(
        r.status(),
        Nfsstat3::NFS3_OK,
        "REMOVE after the return: {r:?}"
    );
    assert!(!fx.export.join("f").exists());
}

#[test]
fn a_holder_claims_opens_under_its_delegation_and_nobody_else_can() {
    let fx = Fixture::new();
    let (mut a, fh, deleg) = delegation_holder(&fx, "f");
    let dir = a.path_fh(&fx.export);
    let clientid = a.clientid;
    let claim = |a: &mut V4, owner: &str, put: &[u8], claim: OpenClaim4| {
        a.call(Ops::new().putfh(put).open(
            0,
            OPEN4_SHARE_ACCESS_READ,
            OPEN4_SHARE_DENY_NONE,
            clientid,
            owner.as_bytes(),
            &OpenHow::NoCreate,
            &claim,
        ))
    };

    // CLAIM_DELEG_CUR_FH on the file and CLAIM_DELEGATE_CUR by name: open state, no new
    // delegation, and the open stateid reads.
    let r = claim(
        &mut a,
        "local-1",
        &fh,
        OpenClaim4::ClaimDelegCurFh(deleg.clone()),
    )
    .ok("CLAIM_DELEG_CUR_FH");
    let OpenDelegation4::OpenDelegateNone = r.get(NfsOpnum4::OP_OPEN).open().delegation else {
        panic!("a claim grants no delegation: {}", r.summary());
    };
    let open1 = r.open_stateid();
    let by_name = OpenClaim4::ClaimDelegateCur(OpenClaimDelegateCur4 {
        delegate_stateid: deleg.clone(),
        file: "f".into(),
    });
    let open2 = claim(&mut a, "local-2", &dir, by_name)
        .ok("CLAIM_DELEGATE_CUR")
        .open_stateid();
    for sid in [&open1, &open2] {
        a.call(Ops::new().putfh(&fh).read(sid, 0, 6))
            .ok("READ with the claimed open");
    }

    // Creating under a claim, another client's claim, a claim on another file: refused.
    let create = a.call(Ops::new().putfh(&dir).open(
        0,
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        clientid,
        b"local-3",
        &OpenHow::Unchecked(Sattr::default()),
        &OpenClaim4::ClaimDelegateCur(OpenClaimDelegateCur4 {
            delegate_stateid: deleg.clone(),
            file: "f".into(),
        }),
    ));
    assert_eq!(
        create.status,
        Nfsstat4::NFS4ERR_INVAL,
        "{}",
        create.summary()
    );
    let mut b = V4::session(fx.server.port, 1, "deleg-thief");
    let b_id = b.clientid;
    let r = b.call(Ops::new().putfh(&fh).open(
        0,
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        b_id,
        b"thief",
        &OpenHow::NoCreate,
        &OpenClaim4::ClaimDelegCurFh(deleg.clone()),
    ));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_BAD_STATEID,
        "another client's delegation: {}",
        r.summary()
    );
    std::fs::write(fx.export.join("g"), b"other").unwrap();
    let r = claim(
        &mut a,
        "local-4",
        &dir,
        OpenClaim4::ClaimDelegateCur(OpenClaimDelegateCur4 {
            delegate_stateid: deleg.clone(),
            file: "g".into(),
        }),
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_BAD_STATEID,
        "another file: {}",
        r.summary()
    );

    // Nothing to write could have been opened under a read delegation.
    let r = a.call(Ops::new().putfh(&fh).open(
        0,
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        clientid,
        b"local-6",
        &OpenHow::NoCreate,
        &OpenClaim4::ClaimDelegCurFh(deleg.clone()),
    ));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_OPENMODE,
        "a write claim under a read delegation: {}",
        r.summary()
    );

    // Returned: nothing left to claim, and the claimed opens outlive the delegation.
    a.call(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let r = claim(
        &mut a,
        "local-5",
        &fh,
        OpenClaim4::ClaimDelegCurFh(deleg.clone()),
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_BAD_STATEID,
        "a returned delegation: {}",
        r.summary()
    );
    a.call(Ops::new().putfh(&fh).read(&open1, 0, 6))
        .ok("READ after the return");
}

/// A 4.1 client with a back channel that opens `name` for reading and writing and asks for a
/// write delegation: (the client, the file's handle, the open stateid, the OPEN's result).
fn open_wanting_write_deleg(fx: &Fixture, a: &mut V4, name: &str) -> (bytes::Bytes, CompoundRes) {
    let dir = a.path_fh(&fx.export);
    let r = a.open(
        &dir,
        name,
        "writer",
        OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::default()),
    );
    let r = r.ok(&format!("OPEN {name} wanting a write delegation"));
    (r.fh(), r)
}

#[test]
fn a_write_delegation_is_granted_on_request_and_any_access_of_another_client_recalls_it() {
    let fx = Fixture::new();
    let mut a = V4::connect(fx.server.port, 1, "write-holder");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);

    // Not asked for: none (an open for writing gets no read delegation either).
    let r = a.open(
        &dir,
        "plain",
        "writer",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::default()),
    );
    let OpenDelegation4::OpenDelegateNone = r.ok("OPEN").get(NfsOpnum4::OP_OPEN).open().delegation
    else {
        panic!("a delegation nobody asked for");
    };

    // Asked for on a file nobody else has open: granted, and its stateid writes and reads.
    let (fh, r) = open_wanting_write_deleg(&fx, &mut a, "f");
    let OpenDelegation4::OpenDelegateWrite(d) = &r.get(NfsOpnum4::OP_OPEN).open().delegation else {
        panic!("no write delegation: {}", r.summary());
    };
    let deleg = d.stateid.clone();
    a.call(
        Ops::new()
            .putfh(&fh)
            .write(&deleg, 0, StableHow4::FileSync4, b"cached"),
    )
    .ok("WRITE with the delegation");
    a.call(Ops::new().putfh(&fh).read(&deleg, 0, 6))
        .ok("READ with the delegation");
    a.call(Ops::new().putfh(&fh).getattr(&[FATTR4_SIZE]))
        .ok("the holder's own GETATTR");

    // Another client may not even look: OPEN to read, READ, GETATTR of the size wait for
    // the recall, which goes out once.
    let mut b = V4::session(fx.server.port, 1, "write-other");
    let bdir = b.path_fh(&fx.export);
    let r = b.open(
        &bdir,
        "f",
        "reader",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_DELAY,
        "OPEN to read: {}",
        r.summary()
    );
    expect_recall(&mut a, &deleg);
    let r = b.call(Ops::new().putfh(&fh).read(&ANON_STATEID, 0, 6));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DELAY, "READ: {}", r.summary());
    let r = b.call(Ops::new().putfh(&fh).getattr(&[FATTR4_SIZE, FATTR4_CHANGE]));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_DELAY,
        "GETATTR of the size: {}",
        r.summary()
    );
    b.call(Ops::new().putfh(&fh).getattr(&[FATTR4_MODE]))
        .ok("GETATTR of the mode, which writes do not change");
    let (mut c, root) = fx.connect();
    let v3fh = c.lookup_ok(&root, "f");
    let r = c.read(&v3fh, 0, 6);
    assert_eq!(r.status(), Nfsstat3::NFS3ERR_JUKEBOX, "NFSv3 READ: {r:?}");
    let r = c.getattr(&v3fh);
    assert_eq!(
        r.status(),
        Nfsstat3::NFS3ERR_JUKEBOX,
        "NFSv3 GETATTR: {r:?}"
    );

    // Returned: everybody sees what the holder wrote.
    a.call(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let r = c.read(&v3fh, 0, 6);
    let Read3res::Ok(ok) = r else {
        panic!("NFSv3 READ after the return: {r:?}");
    };
    assert_eq!(&ok.data.in_memory().expect("decoded")[..], b"cached");
    b.open(
        &bdir,
        "f",
        "reader",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    )
    .ok("OPEN to read after the return");

    // Somebody else has the file open: no write delegation, and the answer says why.
    let (_, r) = open_wanting_write_deleg(&fx, &mut a, "f");
    let OpenDelegation4::OpenDelegateNoneExt(_) = r.get(NfsOpnum4::OP_OPEN).open().delegation
    else {
        panic!(
            "a write delegation on a file another client has open: {}",
            r.summary()
        );
    };
}

#[test]
fn a_write_delegation_is_not_granted_to_a_reader_nor_a_read_delegation_to_a_writer() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("f"), b"x").unwrap();
    std::os::unix::fs::chown(fx.export.join("f"), Some(TEST_UID), Some(TEST_UID)).unwrap();
    let mut a = V4::connect(fx.server.port, 1, "want-mismatch");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);
    for (access, what) in [
        (
            OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
            "write delegation for reading",
        ),
        (
            OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
            "read delegation for writing",
        ),
        (
            OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
            "no delegation wanted",
        ),
    ] {
        let r = a
            .open(
                &dir,
                "f",
                what,
                access,
                OPEN4_SHARE_DENY_NONE,
                OpenHow::NoCreate,
            )
            .ok(what);
        let OpenDelegation4::OpenDelegateNoneExt(_) = r.get(NfsOpnum4::OP_OPEN).open().delegation
        else {
            panic!("{what}: {}", r.summary());
        };
    }
}

/// Answers CB_COMPOUND(CB_SEQUENCE, CB_GETATTR) `xid` with the file's change attribute and size.
fn answer_cb_getattr(a: &mut V4, xid: u32, change: u64, size: u64) {
    a.answer_callback(
        xid,
        NfsCbResop4::OpCbGetattr(CbGetattr4res::Nfs4Ok(CbGetattr4resok {
            obj_attributes: fattr(&[(FATTR4_CHANGE, &change), (FATTR4_SIZE, &size)]),
        })),
    );
}

#[test]
fn another_clients_getattr_asks_the_write_delegation_holder_for_size_and_change() {
    let fx = Fixture::new();
    let mut a = V4::connect(fx.server.port, 1, "cb-getattr-holder");
    a.establish_back_channel(8);
    let (fh, r) = open_wanting_write_deleg(&fx, &mut a, "f");
    let OpenDelegation4::OpenDelegateWrite(d) = &r.get(NfsOpnum4::OP_OPEN).open().delegation else {
        panic!("no write delegation: {}", r.summary());
    };
    let deleg = d.stateid.clone();
    let before = a.getattr(&fh, &[FATTR4_CHANGE, FATTR4_SIZE]);
    let change0 = before.change.expect("change");
    assert_eq!(before.size, Some(0));

    // Another client's GETATTR waits for the holder's answer (a thread plays that client);
    // returns the callback's XID and the GETATTR's result.
    let mut b = V4::session(fx.server.port, 1, "cb-getattr-other");
    let mut ask = |a: &mut V4, answer: Option<(u64, u64)>| {
        let fhb = fh.clone();
        let mut other = std::mem::replace(&mut b, V4::session(fx.server.port, 1, "cb-spare"));
        let t = std::thread::spawn(move || {
            let r = other.call(
                Ops::new()
                    .putfh(&fhb)
                    .getattr(&[FATTR4_CHANGE, FATTR4_SIZE]),
            );
            (other, r)
        });
        let (xid, cb) = a.next_callback();
        assert!(
            cb.windows(fh.len()).any(|w| w == &fh[..]),
            "the callback names the file"
        );
        if let Some((change, size)) = answer {
            answer_cb_getattr(a, xid, change, size);
        }
        let (other, r) = t.join().expect("the other client");
        b = other;
        (xid, r)
    };
    let seen = |r: CompoundRes, what: &str| {
        let a = r.ok(what).attrs();
        (a.change.expect("change"), a.size.expect("size"))
    };

    // Nothing changed under the delegation: the file as it is.
    assert_eq!(
        seen(ask(&mut a, Some((change0, 0))).1, "unchanged"),
        (change0, 0)
    );

    // The holder has written 5 bytes it keeps: their size, and a change attribute that moved.
    let (change1, size1) = seen(ask(&mut a, Some((change0 + 1, 5))).1, "changed");
    assert_eq!(size1, 5);
    assert!(
        change1 > change0,
        "the change attribute moves: {change0} -> {change1}"
    );
    // The same answer again: the same change attribute (it moves with the holder's changes,
    // not with every look).
    assert_eq!(
        seen(ask(&mut a, Some((change0 + 1, 5))).1, "same"),
        (change1, 5)
    );
    // Once changed, always shown as changed while the delegation lasts, even when the
    // holder's answer looks like the file again (it truncated what it had written); the
    // change attribute only grows.
    let (change2, size2) = seen(ask(&mut a, Some((change0, 0))).1, "truncated");
    assert_eq!(size2, 0);
    assert!(change2 > change1, "{change1} -> {change2}");

    // No answer in time: the client is told to retry, and the delegation is to be recalled.
    // The recall waits for the back channel's slot, which the unanswered CB_GETATTR holds
    // until its late answer comes; the next try sends it.
    let (silent, r) = ask(&mut a, None);
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_DELAY,
        "GETATTR, holder silent: {}",
        r.summary()
    );
    answer_cb_getattr(&mut a, silent, change0, 0);
    // (the server may see the next GETATTR before that answer: then it is told to wait again)
    let mut tries = 0;
    loop {
        let r = b.call(Ops::new().putfh(&fh).getattr(&[FATTR4_CHANGE, FATTR4_SIZE]));
        assert_eq!(
            r.status,
            Nfsstat4::NFS4ERR_DELAY,
            "GETATTR while recalled: {}",
            r.summary()
        );
        if a.rpc.readable_within(std::time::Duration::from_millis(100)) {
            break;
        }
        tries += 1;
        assert!(tries < 50, "the recall never went out");
    }
    expect_recall(&mut a, &deleg);
    a.call(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let after = b.getattr(&fh, &[FATTR4_SIZE]);
    assert_eq!(
        after.size,
        Some(0),
        "the holder wrote nothing before returning it"
    );
}

#[test]
fn with_write_delegations_on_an_open_for_reading_and_writing_gets_one_unasked() {
    let fx = Fixture::with_args(&["--write-delegations"]);
    let mut a = V4::connect(fx.server.port, 1, "unasked-writer");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);
    let open = |a: &mut V4, name: &str, access: u32| {
        let r = a
            .open(
                &dir,
                name,
                "w",
                access,
                OPEN4_SHARE_DENY_NONE,
                OpenHow::Unchecked(Sattr::default()),
            )
            .ok(name);
        r.get(NfsOpnum4::OP_OPEN).open().delegation.discriminant()
    };
    assert_eq!(
        open(&mut a, "both", OPEN4_SHARE_ACCESS_BOTH),
        OpenDelegationType4::OpenDelegateWrite,
        "write delegation"
    );
    assert_eq!(
        open(&mut a, "write-only", OPEN4_SHARE_ACCESS_WRITE),
        OpenDelegationType4::OpenDelegateNone,
        "none: it could not read"
    );
    assert_eq!(
        open(&mut a, "read-only", OPEN4_SHARE_ACCESS_READ),
        OpenDelegationType4::OpenDelegateRead,
        "read delegation"
    );
}

#[test]
fn a_write_delegation_on_a_truncating_open_starts_from_the_truncated_file() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("t"), b"old content").unwrap();
    std::os::unix::fs::chown(fx.export.join("t"), Some(TEST_UID), Some(TEST_UID)).unwrap();
    let mut a = V4::connect(fx.server.port, 1, "trunc-holder");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);
    // O_TRUNC without O_CREAT's exclusivity: OPEN UNCHECKED with size 0 on the existing file
    let r = a
        .open(
            &dir,
            "t",
            "writer",
            OPEN4_SHARE_ACCESS_BOTH | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG,
            OPEN4_SHARE_DENY_NONE,
            OpenHow::Unchecked(Sattr {
                size: Some(0),
                ..Default::default()
            }),
        )
        .ok("OPEN with truncation");
    let fh = r.fh();
    let OpenDelegation4::OpenDelegateWrite(_) = r.get(NfsOpnum4::OP_OPEN).open().delegation else {
        panic!("no write delegation: {}", r.summary());
    };
    // What the holder knows after its OPEN is what it answers CB_GETATTR with while it has
    // changed nothing: the other client then sees the file as it is, not "modified".
    let after = a.getattr(&fh, &[FATTR4_CHANGE, FATTR4_SIZE]);
    let (change, size) = (after.change.unwrap(), after.size.unwrap());
    assert_eq!(size, 0);
    let mut b = V4::session(fx.server.port, 1, "trunc-other");
    let fhb = fh.clone();
    let t = std::thread::spawn(move || {
        b.call(
            Ops::new()
                .putfh(&fhb)
                .getattr(&[FATTR4_CHANGE, FATTR4_SIZE]),
        )
        .ok("GETATTR")
        .attrs()
    });
    let (xid, _) = a.next_callback();
    answer_cb_getattr(&mut a, xid, change, size);
    let seen = t.join().expect("the other client");
    assert_eq!((seen.change, seen.size), (Some(change), Some(0)));
}

/// The status flags of the SEQUENCE the holder sends alone.
fn sequence_flags(a: &mut V4) -> u32 {
    let r = a.call(Ops::new());
    r.get(NfsOpnum4::OP_SEQUENCE).sequence().sr_status_flags
}

#[test]
fn a_delegation_not_returned_within_a_lease_is_revoked_and_sequence_says_so_until_freed() {
    let fx = Fixture::with_args(&["--lease-time", "5"]);
    let (mut a, _fh, deleg) = delegation_holder(&fx, "f");
    let (mut c, root) = fx.connect();
    let v3fh = c.lookup_ok(&root, "f");
    let write = |c: &mut RpcClient| {
        c.write(
            &v3fh,
            0,
            bytes::Bytes::from_static(b"after!"),
            StableHow::FileSync,
        )
    };
    assert_eq!(write(&mut c).status(), Nfsstat3::NFS3ERR_JUKEBOX);
    expect_recall(&mut a, &deleg);
    // The holder keeps its lease (SEQUENCE every second) but never returns the delegation.
    let recalled = std::time::Instant::now();
    while recalled.elapsed() < std::time::Duration::from_millis(5_500) {
        assert_eq!(
            sequence_flags(&mut a) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
            0
        );
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    // A lease after the recall the conflicting WRITE revokes it and goes through.
    let w = write(&mut c);
    assert!(matches!(w, Write3res::Ok(_)), "{w:?}");
    assert_eq!(std::fs::read(fx.export.join("f")).unwrap(), b"after!");
    assert_eq!(
        sequence_flags(&mut a) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
        SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
        "SEQUENCE does not report the revoked delegation"
    );
    // FREE_STATEID of the revoked delegation clears the flag.
    a.call(Ops::new().free_stateid(&deleg))
        .ok("FREE_STATEID of the revoked delegation");
    assert_eq!(
        sequence_flags(&mut a) & SEQ4_STATUS_RECALLABLE_STATE_REVOKED,
        0
    );
}
