//! NFSv4.1 with the raw COMPOUND client: session slots (replay cache, misordered and bad
//! slots), share reservations and byte-range locks between two clients, and the pseudo file
//! system that joins the exports.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path};

use common::nfs4_raw::*;
use common::*;
use nfs4wire::*;

fn components(p: &Path) -> Vec<Vec<u8>> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.as_encoded_bytes().to_vec()),
            _ => None,
        })
        .collect()
}

/// A file under the export owned by the raw client's uid (so it may open it for writing).
fn user_file(fx: &Fixture, name: &str, content: &[u8]) {
    let p = fx.export.join(name);
    std::fs::write(&p, content).unwrap();
    std::os::unix::fs::chown(&p, Some(TEST_UID), Some(TEST_UID)).unwrap();
}

#[test]
fn session_slot_replay_misordered_and_bad_slot() {
    let fx = Fixture::new();
    let mut c = V4::session(fx.server.port, 1, "slots");
    assert!(c.slots.len() >= 2, "need two slots, got {}", c.slots.len());
    let dir = c.path_fh(&fx.export);
    let clientid = c.clientid;
    // A request that cannot be executed twice with the same result: a GUARDED create.
    let create = || {
        Ops::new()
            .putfh(&dir)
            .open(
                0,
                OPEN4_SHARE_ACCESS_BOTH,
                OPEN4_SHARE_DENY_NONE,
                clientid,
                b"owner",
                &OpenHow::Guarded(Sattr::mode(0o640)),
                &OpenClaim4::ClaimNull("once".into()),
            )
            .getfh()
    };
    let first = c.call_slot(1, 1, true, create()).ok("first GUARDED OPEN");
    assert!(fx.export.join("once").is_file());

    // The retransmission (same slot, same seqid) is answered from the slot's reply cache,
    // byte for byte, instead of failing with NFS4ERR_EXIST.
    let again = c.call_slot(1, 1, true, create());
    assert_eq!(
        again.raw,
        first.raw,
        "replay differs: {} vs {}",
        again.summary(),
        first.summary()
    );
    // A new request (next seqid) really executes it again: EXIST.
    let r = c.call_slot(1, 2, false, create());
    assert_eq!(r.status, Nfsstat4::NFS4ERR_EXIST, "{}", r.summary());

    // Sequence ids that are neither the last one nor the next one: misordered.
    for bad in [4, 0, u32::MAX] {
        let r = c.call_slot(1, bad, false, Ops::new().putrootfh());
        assert_eq!(
            r.status,
            Nfsstat4::NFS4ERR_SEQ_MISORDERED,
            "seqid {bad}: {}",
            r.summary()
        );
        assert_eq!(r.results.len(), 1, "{}", r.summary());
        assert_eq!(r.results[0].op, NfsOpnum4::OP_SEQUENCE);
    }
    // The slot is still usable with the expected next seqid.
    c.call_slot(1, 3, false, Ops::new().putrootfh().getfh())
        .ok("slot 1 seqid 3");

    // A slot beyond the table.
    let n = c.slots.len() as u32;
    for slot in [n, n + 1, 1 << 20] {
        let r = c.call_slot(slot, 1, false, Ops::new().putrootfh());
        assert_eq!(
            r.status,
            Nfsstat4::NFS4ERR_BADSLOT,
            "slot {slot}: {}",
            r.summary()
        );
        assert_eq!(r.results.len(), 1);
    }

    // A reply that was not cached cannot be replayed.
    c.call_slot(2, 1, false, Ops::new().putrootfh().getfh())
        .ok("slot 2");
    let r = c.call_slot(2, 1, false, Ops::new().putrootfh().getfh());
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_RETRY_UNCACHED_REP,
        "{}",
        r.summary()
    );

    // Operations other than the session ones need SEQUENCE first.
    let r = c.compound(Ops::new().putrootfh().getfh());
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_OP_NOT_IN_SESSION,
        "{}",
        r.summary()
    );

    // After DESTROY_SESSION the session is gone.
    let sid = c.sessionid;
    c.compound(Ops::new().destroy_session(&sid))
        .ok("DESTROY_SESSION");
    let r = c.call_slot(0, 1, false, Ops::new().putrootfh());
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BADSESSION, "{}", r.summary());
}

#[test]
fn create_session_sequence_replay_and_exchange_id_confirmed() {
    let fx = Fixture::new();
    let mut c = V4::connect(fx.server.port, 1, "cs-replay");
    let verf = boot_verifier(b"cs-replay");
    let r = c
        .compound(Ops::new().exchange_id(verf, b"cs-replay", EXCHGID4_FLAG_USE_NON_PNFS))
        .ok("EXCHANGE_ID");
    let ok = r.get(NfsOpnum4::OP_EXCHANGE_ID).exchange_id();
    let (clientid, seqid) = (ok.eir_clientid, ok.eir_sequenceid);
    assert_eq!(
        ok.eir_flags & EXCHGID4_FLAG_CONFIRMED_R,
        0,
        "new client reported as confirmed"
    );
    let first = c
        .compound(Ops::new().create_session(clientid, seqid, 4))
        .ok("CREATE_SESSION");
    // A retransmitted CREATE_SESSION (same sequence id) gets the same session.
    let again = c
        .compound(Ops::new().create_session(clientid, seqid, 4))
        .ok("CREATE_SESSION replay");
    assert_eq!(again.raw, first.raw);
    // One too far ahead is misordered.
    let r = c.compound(Ops::new().create_session(clientid, seqid.wrapping_add(2), 4));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_SEQ_MISORDERED,
        "{}",
        r.summary()
    );
    // The same owner and verifier again: the record is now confirmed.
    let r = c
        .compound(Ops::new().exchange_id(verf, b"cs-replay", EXCHGID4_FLAG_USE_NON_PNFS))
        .ok("EXCHANGE_ID again");
    let ok = r.get(NfsOpnum4::OP_EXCHANGE_ID).exchange_id();
    assert_eq!(ok.eir_clientid, clientid);
    assert_ne!(
        ok.eir_flags & EXCHGID4_FLAG_CONFIRMED_R,
        0,
        "EXCHGID4_FLAG_CONFIRMED_R missing"
    );
    // An unknown client id.
    let r = c.compound(Ops::new().create_session(clientid ^ 0xdead_0000_0000, 1, 4));
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_STALE_CLIENTID,
        "{}",
        r.summary()
    );
}

#[test]
fn open_create_modes_write_read_close() {
    let fx = Fixture::new();
    let mut c = V4::session(fx.server.port, 1, "opens");
    let dir = c.path_fh(&fx.export);

    // UNCHECKED create, twice: the second open finds the file and keeps its content.
    let (fh, sid) = c.open_ok(
        &dir,
        "u",
        "o1",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o600)),
    );
    let data = pattern(11, 300_000);
    c.write_all(&fh, &sid, 0, &data);
    c.close_ok(&fh, &sid);
    let md = std::fs::metadata(fx.export.join("u")).unwrap();
    assert_eq!(md.mode() & 0o7777, 0o600);
    assert_eq!((md.uid(), md.len()), (TEST_UID, data.len() as u64));
    let (fh2, sid) = c.open_ok(
        &dir,
        "u",
        "o1",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o644)),
    );
    assert_eq!(fh2, fh);
    let mut back = Vec::new();
    loop {
        let r = c
            .call(
                Ops::new()
                    .putfh(&fh)
                    .read(&sid, back.len() as u64, 128 * 1024),
            )
            .ok("READ");
        let Read4resok { eof, data } = r.get(NfsOpnum4::OP_READ).read();
        let data = payload(data);
        back.extend_from_slice(data);
        if *eof {
            break;
        }
        assert!(!data.is_empty(), "empty READ before eof");
    }
    assert!(back == data, "data read back differs");
    // Opened for reading only: WRITE is refused.
    let r = c.call(
        Ops::new()
            .putfh(&fh)
            .write(&sid, 0, StableHow4::FileSync4, b"x"),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_OPENMODE, "{}", r.summary());
    c.close_ok(&fh, &sid);
    // The stateid is gone after CLOSE.
    let r = c.call(Ops::new().putfh(&fh).read(&sid, 0, 10));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_BAD_STATEID, "{}", r.summary());

    // GUARDED create of an existing name: EXIST.
    let r = c.open(
        &dir,
        "u",
        "o1",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Guarded(Sattr::mode(0o644)),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_EXIST, "{}", r.summary());

    // EXCLUSIVE4_1: the same verifier again is the same create (success, same file); another
    // verifier is EXIST.
    let v = *b"verifier";
    let how = OpenHow::Exclusive41(v, Sattr::mode(0o604));
    let (xfh, xsid) = c.open_ok(
        &dir,
        "x",
        "o2",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        how.clone(),
    );
    c.close_ok(&xfh, &xsid);
    assert_eq!(
        std::fs::metadata(fx.export.join("x")).unwrap().mode() & 0o7777,
        0o604
    );
    let (xfh2, xsid) = c.open_ok(
        &dir,
        "x",
        "o2",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        how,
    );
    assert_eq!(xfh2, xfh);
    c.close_ok(&xfh2, &xsid);
    let r = c.open(
        &dir,
        "x",
        "o2",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Exclusive41(*b"otherver", Sattr::default()),
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_EXIST, "{}", r.summary());

    // NOCREATE of a missing name.
    let r = c.open(
        &dir,
        "missing",
        "o1",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_NOENT, "{}", r.summary());
    c.destroy();
}

#[test]
fn share_reservations_between_two_clients() {
    let fx = Fixture::new();
    user_file(&fx, "shared", b"shared content");
    let mut a = V4::session(fx.server.port, 1, "share-a");
    let mut b = V4::session(fx.server.port, 1, "share-b");
    let dir = a.path_fh(&fx.export);

    let (fh, asid) = a.open_ok(
        &dir,
        "shared",
        "a",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_WRITE,
        OpenHow::NoCreate,
    );
    // B may not open for writing while A denies writes.
    for access in [OPEN4_SHARE_ACCESS_WRITE, OPEN4_SHARE_ACCESS_BOTH] {
        let r = b.open(
            &dir,
            "shared",
            "b",
            access,
            OPEN4_SHARE_DENY_NONE,
            OpenHow::NoCreate,
        );
        assert_eq!(
            r.status,
            Nfsstat4::NFS4ERR_SHARE_DENIED,
            "access {access}: {}",
            r.summary()
        );
    }
    // Nor deny reads that A holds.
    let r = b.open(
        &dir,
        "shared",
        "b",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_READ,
        OpenHow::NoCreate,
    );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_SHARE_DENIED, "{}", r.summary());
    // Reading is fine.
    let (_, bsid) = b.open_ok(
        &dir,
        "shared",
        "b",
        OPEN4_SHARE_ACCESS_READ,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    let r = b
        .call(Ops::new().putfh(&fh).read(&bsid, 0, 100))
        .ok("READ by B");
    assert_eq!(
        r.get(NfsOpnum4::OP_READ).read(),
        &Read4resok {
            eof: true,
            data: bytes::Bytes::from_static(b"shared content").into()
        }
    );
    // Anonymous writes are refused under DENY_WRITE too (RFC 8881 section 9.7).
    let r = b.call(
        Ops::new()
            .putfh(&fh)
            .write(&ANON_STATEID, 0, StableHow4::FileSync4, b"X"),
    );
    assert_ne!(
        r.status,
        Nfsstat4::NFS4_OK,
        "anonymous WRITE under DENY_WRITE succeeded"
    );
    assert_eq!(
        std::fs::read(fx.export.join("shared")).unwrap(),
        b"shared content"
    );

    // Once A closes, B may write.
    a.close_ok(&fh, &asid);
    let (_, bw) = b.open_ok(
        &dir,
        "shared",
        "b2",
        OPEN4_SHARE_ACCESS_WRITE,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    b.write_all(&fh, &bw, 0, b"SHARED");
    assert_eq!(
        std::fs::read(fx.export.join("shared")).unwrap(),
        b"SHARED content"
    );
}

#[test]
fn byte_range_locks_between_two_clients() {
    let fx = Fixture::new();
    user_file(&fx, "locked", &[0u8; 200]);
    let mut a = V4::session(fx.server.port, 1, "lock-a");
    let mut b = V4::session(fx.server.port, 1, "lock-b");
    let dir = a.path_fh(&fx.export);
    let (fh, a_open) = a.open_ok(
        &dir,
        "locked",
        "a-open",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );
    let (_, b_open) = b.open_ok(
        &dir,
        "locked",
        "b-open",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::NoCreate,
    );

    let a_locker = new_lock_owner(0, &a_open, 0, a.clientid, b"a-lock");
    let r = a
        .call(
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::WriteLt, 0, 100, &a_locker),
        )
        .ok("LOCK by A");
    let a_lock = r.stateid(NfsOpnum4::OP_LOCK);

    let a_holds = Lock4denied {
        offset: 0,
        length: 100,
        locktype: NfsLockType4::WriteLt,
        owner: StateOwner4 {
            clientid: a.clientid,
            owner: bytes::Bytes::from_static(b"a-lock"),
        },
    };
    let b_locker = new_lock_owner(0, &b_open, 0, b.clientid, b"b-lock");
    for (what, ops) in [
        (
            "LOCK",
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::WriteLt, 50, 10, &b_locker),
        ),
        (
            "LOCK (read)",
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::ReadLt, 99, 1, &b_locker),
        ),
        (
            "LOCKT",
            Ops::new()
                .putfh(&fh)
                .lockt(NfsLockType4::WriteLt, 50, 10, b.clientid, b"b-lock"),
        ),
        (
            "LOCKT (read, to EOF)",
            Ops::new()
                .putfh(&fh)
                .lockt(NfsLockType4::ReadLt, 10, u64::MAX, b.clientid, b"b-lock"),
        ),
    ] {
        let r = b.call(ops);
        assert_eq!(
            r.status,
            Nfsstat4::NFS4ERR_DENIED,
            "{what} by B: {}",
            r.summary()
        );
        assert_eq!(r.last().denied(), &a_holds, "{what} by B");
    }
    // Outside A's range, and A testing its own lock, are fine.
    b.call(
        Ops::new()
            .putfh(&fh)
            .lockt(NfsLockType4::WriteLt, 100, 50, b.clientid, b"b-lock"),
    )
    .ok("LOCKT beyond A's range");
    a.call(
        Ops::new()
            .putfh(&fh)
            .lockt(NfsLockType4::WriteLt, 50, 10, a.clientid, b"a-lock"),
    )
    .ok("LOCKT by the holder");

    // A unlocks; B gets its lock, and now A is the one denied, with B's range.
    let r = a
        .call(
            Ops::new()
                .putfh(&fh)
                .locku(NfsLockType4::WriteLt, 0, &a_lock, 0, 100),
        )
        .ok("LOCKU by A");
    let a_unlocked = r.stateid(NfsOpnum4::OP_LOCKU);
    assert_eq!(a_unlocked.other, a_lock.other);
    assert!(a_unlocked.seqid > a_lock.seqid, "LOCKU did not bump seqid");
    let r = b
        .call(
            Ops::new()
                .putfh(&fh)
                .lock(NfsLockType4::WriteLt, 50, 10, &b_locker),
        )
        .ok("LOCK by B after LOCKU");
    let b_lock = r.stateid(NfsOpnum4::OP_LOCK);
    let r =
        a.call(
            Ops::new()
                .putfh(&fh)
                .lockt(NfsLockType4::ReadLt, 0, 100, a.clientid, b"a-lock"),
        );
    assert_eq!(r.status, Nfsstat4::NFS4ERR_DENIED, "{}", r.summary());
    assert_eq!(
        r.last().denied(),
        &Lock4denied {
            offset: 50,
            length: 10,
            locktype: NfsLockType4::WriteLt,
            owner: StateOwner4 {
                clientid: b.clientid,
                owner: bytes::Bytes::from_static(b"b-lock"),
            },
        }
    );
    // An existing lock-owner extends its locks with exist_lock_owner4.
    let r = a
        .call(Ops::new().putfh(&fh).lock(
            NfsLockType4::WriteLt,
            100,
            50,
            &exist_lock_owner(&a_unlocked, 0),
        ))
        .ok("LOCK by A, existing lock-owner");
    assert_eq!(r.stateid(NfsOpnum4::OP_LOCK).other, a_lock.other);

    // B cannot CLOSE while its lock-owner holds locks.
    let r = b.call(Ops::new().putfh(&fh).close(0, &b_open));
    assert_eq!(r.status, Nfsstat4::NFS4ERR_LOCKS_HELD, "{}", r.summary());
    b.call(
        Ops::new()
            .putfh(&fh)
            .locku(NfsLockType4::WriteLt, 0, &b_lock, 50, 10),
    )
    .ok("LOCKU by B");
    b.close_ok(&fh, &b_open);
}

#[test]
fn pseudo_fs_readdir_lookupp_and_mounted_on_fileid() {
    let fx = Fixture::new();
    std::fs::write(fx.export.join("inside"), b"x").unwrap();
    let mut c = V4::session(fx.server.port, 1, "pseudo");
    let comps = components(&fx.export);
    assert!(comps.len() >= 2, "export {:?} too shallow", fx.export);
    let bits = [
        FATTR4_TYPE,
        FATTR4_FSID,
        FATTR4_FILEID,
        FATTR4_MOUNTED_ON_FILEID,
        FATTR4_RDATTR_ERROR,
    ];

    // The root lists the first component of the export path (and nothing outside exports).
    let r = c
        .call(
            Ops::new()
                .putrootfh()
                .getfh()
                .getattr(&bits)
                .readdir(0, [0; 8], 8192, 32768, &bits),
        )
        .ok("PUTROOTFH READDIR");
    let root_fh = r.fh();
    let root_attrs = r.attrs();
    assert_eq!(root_attrs.ftype, Some(NfsFtype4::Nf4dir));
    let list = &r.get(NfsOpnum4::OP_READDIR).readdir().reply;
    assert!(list.eof);
    let listed = entries(list);
    let names: Vec<&[u8]> = listed.iter().map(|e| &e.name[..]).collect();
    assert_eq!(names, vec![&comps[0][..]], "root listing");
    assert_eq!(Attrs::of(&listed[0].attrs).ftype, Some(NfsFtype4::Nf4dir));

    // Walk down to the export; the export root has the export's own fileid and another fsid.
    let mut ops = Ops::new().putrootfh();
    for comp in &comps {
        ops = ops.lookup(comp);
    }
    let r = c
        .call(ops.getfh().getattr(&bits))
        .ok("LOOKUP to the export");
    let export_fh = r.fh();
    let export_attrs = r.attrs();
    let ino = std::fs::metadata(&fx.export).unwrap().ino();
    assert_eq!(export_attrs.fileid, Some(ino));
    assert_eq!(export_attrs.ftype, Some(NfsFtype4::Nf4dir));
    assert_ne!(
        export_attrs.fsid, root_attrs.fsid,
        "export shares the pseudo fsid"
    );
    assert!(export_attrs.mounted_on_fileid.is_some());
    assert_eq!(export_fh, c.path_fh(&fx.export));

    // A file inside: mounted_on_fileid is its own fileid.
    let r = c
        .call(Ops::new().putfh(&export_fh).lookup("inside").getattr(&bits))
        .ok("GETATTR inside");
    let a = r.attrs();
    let ino = std::fs::metadata(fx.export.join("inside")).unwrap().ino();
    assert_eq!((a.fileid, a.mounted_on_fileid), (Some(ino), Some(ino)));

    // LOOKUPP from the export root leads back into the pseudo tree, to the directory that
    // lists the export's last component, and on up to the root.
    let r = c
        .call(
            Ops::new()
                .putfh(&export_fh)
                .lookupp()
                .getfh()
                .getattr(&bits)
                .readdir(0, [0; 8], 8192, 32768, &bits),
        )
        .ok("LOOKUPP from the export root");
    let parent_fh = r.fh();
    let parent = r.attrs();
    assert_ne!(parent_fh, export_fh);
    assert_eq!(parent.fsid, root_attrs.fsid, "LOOKUPP left the pseudo fs");
    let listed = entries(&r.get(NfsOpnum4::OP_READDIR).readdir().reply);
    let last = comps.last().unwrap();
    let e = listed
        .iter()
        .find(|e| e.name[..] == last[..])
        .unwrap_or_else(|| panic!("export not listed in its pseudo parent: {listed:?}"));
    // READDIR reports the export root's attributes, and the same mounted_on_fileid as GETATTR.
    let e = Attrs::of(&e.attrs);
    assert_eq!(e.fileid, export_attrs.fileid);
    assert_eq!(e.mounted_on_fileid, export_attrs.mounted_on_fileid);

    let mut ops = Ops::new().putfh(&export_fh);
    for _ in 0..comps.len() {
        ops = ops.lookupp();
    }
    let r = c.call(ops.getfh()).ok("LOOKUPP to the root");
    assert_eq!(r.fh(), root_fh);
    // Above the root there is nothing.
    let r = c.call(Ops::new().putrootfh().lookupp());
    assert_eq!(r.status, Nfsstat4::NFS4ERR_NOENT, "{}", r.summary());
    // Pseudo directories are read-only.
    let r = c.call(
        Ops::new()
            .putfh(&parent_fh)
            .mkdir("new", &Sattr::mode(0o755)),
    );
    assert_ne!(
        r.status,
        Nfsstat4::NFS4_OK,
        "CREATE in a pseudo directory succeeded"
    );
}

/// RFC 8881 section 5.8.2 (attribute 55, mounted_on_fileid): for the root of a file system it
/// is the fileid of the directory it is mounted on, the mount point (an entry of the parent
/// directory, which a READDIR of the parent reports, and which Linux shows as the entry's d_ino),
/// not the parent directory itself.
#[test]
fn pseudo_fs_mounted_on_fileid_is_not_the_parent_directory() {
    let fx = Fixture::new();
    let mut c = V4::session(fx.server.port, 1, "mounted-on");
    let export_fh = c.path_fh(&fx.export);
    let bits = [FATTR4_FSID, FATTR4_FILEID, FATTR4_MOUNTED_ON_FILEID];
    let export = c.getattr(&export_fh, &bits);
    let r = c
        .call(Ops::new().putfh(&export_fh).lookupp().getattr(&bits))
        .ok("LOOKUPP");
    let parent = r.attrs();
    assert_ne!(
        export.mounted_on_fileid, parent.fileid,
        "mounted_on_fileid of the export root is the fileid of the pseudo directory that \
         contains it (so READDIR of that directory lists the export with the same fileid as \
         the directory itself)"
    );
}

/// owner / owner_group: numeric strings by default; `name@domain` with --idmap-domain, with
/// numbers kept for ids without a name, and names of other domains refused (BADOWNER).
#[test]
fn owner_strings_numeric_or_mapped_to_names() {
    for (domain, root_owner) in [(None, "0"), (Some("example.org"), "root@example.org")] {
        let args: Vec<&str> = domain
            .map(|d| vec!["--idmap-domain", d])
            .unwrap_or_default();
        let fx = Fixture::with_args(&args);
        std::fs::write(fx.export.join("rootfile"), b"x").unwrap();
        std::fs::write(fx.export.join("nameless"), b"x").unwrap();
        std::os::unix::fs::chown(fx.export.join("nameless"), Some(3_999_999), Some(3_999_999))
            .unwrap();
        let mut c = V4::session(fx.server.port, 1, "idmap");
        let owner_bits = [FATTR4_OWNER, FATTR4_OWNER_GROUP];
        let f = c.path_fh(&fx.export.join("rootfile"));
        let a = c.getattr(&f, &owner_bits);
        assert_eq!(a.owner.as_deref(), Some(root_owner), "{domain:?}");
        assert_eq!(a.group.as_deref(), Some(root_owner), "{domain:?}");
        let n = c.path_fh(&fx.export.join("nameless"));
        let a = c.getattr(&n, &owner_bits);
        assert_eq!(a.owner.as_deref(), Some("3999999"), "{domain:?}");
        // SETATTR as root (squashed to nobody: EPERM for a chown), so only the parsing is
        // observable: a foreign name is BADOWNER whatever the domain, a number is parsed
        let set = |owner: &str| Sattr {
            owner: Some(owner.to_string()),
            ..Default::default()
        };
        let r = c.call(
            Ops::new()
                .putfh(&f)
                .setattr(&ANON_STATEID, &set("root@elsewhere.org")),
        );
        assert_eq!(
            r.status,
            Nfsstat4::NFS4ERR_BADOWNER,
            "{domain:?}: {}",
            r.summary()
        );
        let r = c.call(Ops::new().putfh(&f).setattr(&ANON_STATEID, &set("0")));
        assert_ne!(
            r.status,
            Nfsstat4::NFS4ERR_BADOWNER,
            "{domain:?}: {}",
            r.summary()
        );
        if domain.is_some() {
            let r = c.call(
                Ops::new()
                    .putfh(&f)
                    .setattr(&ANON_STATEID, &set("root@example.org")),
            );
            assert_ne!(r.status, Nfsstat4::NFS4ERR_BADOWNER, "{}", r.summary());
        }
    }
}

/// A COMPOUND is first tried on the thread that reads the connection, which gives up where it
/// would wait (here PUTFH of a handle not cached since the restart, after SEQUENCE took the
/// slot); it then runs again on a worker as the same request: one answer, the slot's replay
/// cache holds it, and the slot's sequence goes on.
#[test]
fn a_compound_that_gives_up_on_the_reader_runs_again_in_its_slot() {
    let mut fx = Fixture::new();
    user_file(&fx, "f", b"hello world");
    let fh = {
        let mut c = V4::session(fx.server.port, 1, "before");
        c.path_fh(&fx.export.join("f"))
    };
    fx.server.restart();
    let mut c = V4::session(fx.server.port, 1, "after");
    let read = || Ops::new().putfh(&fh).read(&ANON_STATEID, 0, 100);
    let data = |r: &CompoundRes| match &r.results.last().map(|x| &x.res) {
        Some(NfsResop4::OpRead(Read4res::Nfs4Ok(ok))) => (payload(&ok.data).clone(), ok.eof),
        other => panic!("not a READ result: {other:?}"),
    };
    let first = c
        .call_slot(1, 1, true, read())
        .ok("READ of an uncached handle");
    assert_eq!(
        data(&first),
        (bytes::Bytes::from_static(b"hello world"), true)
    );
    // the retransmission is the slot's cached reply, byte for byte
    let again = c.call_slot(1, 1, true, read());
    assert_eq!(again.raw, first.raw, "{}", again.summary());
    // the next request in the slot executes (READs with a special stateid always give up on
    // the reader, which may not release expired clients' state)
    let next = c.call_slot(1, 2, true, read()).ok("next seqid");
    assert_eq!(data(&next).0, data(&first).0);
    let r = c.call_slot(1, 4, false, read());
    assert_eq!(
        r.status,
        Nfsstat4::NFS4ERR_SEQ_MISORDERED,
        "{}",
        r.summary()
    );
}

/// Operations that change nothing use the current object as an earlier one of the COMPOUND
/// found it (LOOKUP's attributes serve GETFH and GETATTR); one that changes something makes
/// the next look again: a GETATTR after SETATTR or WRITE in the same COMPOUND shows the change,
/// and after a RESTOREFH the restored object's own attributes.
#[test]
fn attributes_within_a_compound_follow_its_changes() {
    let fx = Fixture::new();
    user_file(&fx, "f", b"hello");
    let mut c = V4::session(fx.server.port, 1, "current-object");
    let root = c.path_fh(&fx.export);
    let bits = [FATTR4_SIZE, FATTR4_MODE, FATTR4_FILEID];
    let getattrs = |r: &CompoundRes| -> Vec<Attrs> {
        r.results
            .iter()
            .filter(|x| x.op == NfsOpnum4::OP_GETATTR)
            .map(|x| Attrs::of(&x.getattr().obj_attributes))
            .collect()
    };
    let r = c
        .call(
            Ops::new()
                .putfh(&root)
                .savefh()
                .lookup("f")
                .getfh()
                .getattr(&bits)
                .setattr(&ANON_STATEID, &Sattr::mode(0o640))
                .getattr(&bits)
                .write(&ANON_STATEID, 5, StableHow4::FileSync4, b", world")
                .getattr(&bits)
                .restorefh()
                .getattr(&bits),
        )
        .ok("LOOKUP, SETATTR, WRITE with GETATTRs between");
    let a = getattrs(&r);
    assert_eq!(a.len(), 4, "{}", r.summary());
    let ino = std::fs::metadata(fx.export.join("f")).unwrap().ino();
    assert_eq!(
        (a[0].size, a[0].fileid),
        (Some(5), Some(ino)),
        "after LOOKUP"
    );
    assert_ne!(a[0].mode, Some(0o640));
    assert_eq!(a[1].mode, Some(0o640), "after SETATTR");
    assert_eq!(a[1].size, Some(5));
    assert_eq!(a[2].size, Some(12), "after WRITE");
    assert_eq!(a[2].mode, Some(0o640));
    // the export root, not the file LOOKUP found
    let root_ino = std::fs::metadata(&fx.export).unwrap().ino();
    assert_eq!(a[3].fileid, Some(root_ino), "after RESTOREFH");
    assert_eq!(r.fh(), c.path_fh(&fx.export.join("f")));
    assert_eq!(std::fs::read(fx.export.join("f")).unwrap(), b"hello, world");
}

/// READ and WRITE of what is not a regular file: ISDIR for a directory; from NFSv4.1 SYMLINK
/// for a symbolic link and WRONG_TYPE for the rest (RFC 8881 sections 18.22.3, 18.32.3);
/// NFSv4.0 answers INVAL for both (RFC 7530).
#[test]
fn read_and_write_of_other_types() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.export.join("d")).unwrap();
    std::os::unix::fs::symlink("d", fx.export.join("l")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(fx.export.join("p"))
        .status()
        .unwrap();
    assert!(made.success());
    for minor in [0, 1] {
        let mut c = match minor {
            0 => V4::v40(fx.server.port, "types-40"),
            _ => V4::session(fx.server.port, minor, "types-41"),
        };
        for (name, want) in [
            ("d", Nfsstat4::NFS4ERR_ISDIR),
            (
                "l",
                [Nfsstat4::NFS4ERR_INVAL, Nfsstat4::NFS4ERR_SYMLINK][minor as usize],
            ),
            (
                "p",
                [Nfsstat4::NFS4ERR_INVAL, Nfsstat4::NFS4ERR_WRONG_TYPE][minor as usize],
            ),
        ] {
            let fh = c.path_fh(&fx.export.join(name));
            let r = c.call(Ops::new().putfh(&fh).read(&ANON_STATEID, 0, 10));
            assert_eq!(r.status, want, "4.{minor} READ of {name}: {}", r.summary());
            let r = c.call(Ops::new().putfh(&fh).write(
                &ANON_STATEID,
                0,
                StableHow4::FileSync4,
                b"x",
            ));
            assert_eq!(r.status, want, "4.{minor} WRITE of {name}: {}", r.summary());
        }
    }
}

/// Creates, removes and renames report their directory's change as atomic (change_info4,
/// RFC 8881 section 3.3.6): no other change through the server lies between `before` and
/// `after`, so while nothing else changes the directory each change's `before` is the
/// previous one's `after`, and a client keeps its cached entries and access rights instead of
/// asking again (the Linux client does when `atomic` is false).
#[test]
fn directory_changes_are_reported_atomically() {
    let fx = Fixture::new();
    let mut c = V4::session(fx.server.port, 1, "cinfo");
    let dir = c.path_fh(&fx.export);
    let mut cinfos: Vec<(&str, ChangeInfo4)> = Vec::new();
    let r = c.open(
        &dir,
        "a",
        "o",
        OPEN4_SHARE_ACCESS_BOTH,
        OPEN4_SHARE_DENY_NONE,
        OpenHow::Unchecked(Sattr::mode(0o600)),
    );
    let r = r.ok("OPEN a");
    cinfos.push(("OPEN", r.get(NfsOpnum4::OP_OPEN).open().cinfo.clone()));
    c.close_ok(&r.fh(), &r.open_stateid());
    let r = c
        .call(Ops::new().putfh(&dir).mkdir("d", &Sattr::mode(0o755)))
        .ok("CREATE d");
    cinfos.push(("CREATE", r.get(NfsOpnum4::OP_CREATE).create().cinfo.clone()));
    let r = c
        .call(Ops::new().putfh(&dir).savefh().putfh(&dir).rename("a", "b"))
        .ok("RENAME a b");
    let rn = r.get(NfsOpnum4::OP_RENAME).rename();
    assert_eq!(rn.source_cinfo, rn.target_cinfo, "one directory");
    cinfos.push(("RENAME", rn.source_cinfo.clone()));
    for name in ["b", "d"] {
        let r = c.call(Ops::new().putfh(&dir).remove(name)).ok("REMOVE");
        cinfos.push(("REMOVE", r.get(NfsOpnum4::OP_REMOVE).remove().cinfo.clone()));
    }
    // (whether `after` differs from `before` is the file system's timestamp granularity)
    for (op, ci) in &cinfos {
        assert!(ci.atomic, "{op}: {ci:?}");
    }
    for w in cinfos.windows(2) {
        assert_eq!(w[1].1.before, w[0].1.after, "{} after {}", w[1].0, w[0].0);
    }
}
