//! Read delegations and their recall: an NFSv3 client that changes a file another client holds
//! a read delegation on is told to retry (NFS3ERR_JUKEBOX) while the server recalls the
//! delegation over the holder's back channel; once it is returned the change goes through.

mod common;

use common::nfs4_raw::*;
use common::*;
use nfs3::types::*;

/// Word `i` of a record.
fn word(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i * 4..i * 4 + 4].try_into().unwrap())
}

#[test]
fn nfsv3_changes_recall_nfsv4_read_delegations() {
    let fx = Fixture::new();
    let path = fx.export.join("f");
    std::fs::write(&path, b"before").unwrap();
    std::os::unix::fs::chown(&path, Some(TEST_UID), Some(TEST_UID)).unwrap();

    // The holder: an NFSv4.1 session with its back channel on its connection, reading "f".
    let mut a = V4::connect(fx.server.port, 1, "deleg-holder");
    a.establish_back_channel(8);
    let dir = a.path_fh(&fx.export);
    let r = a
        .open(
            &dir,
            "f",
            "reader",
            share::ACCESS_READ,
            share::DENY_NONE,
            OpenHow::NoCreate,
        )
        .ok("OPEN for reading");
    let fh = r.fh();
    let Res::Open {
        delegation: 1,
        deleg: Some(deleg),
        ..
    } = r.get(op::OPEN).res
    else {
        panic!("no read delegation: {}", r.summary());
    };

    // An NFSv3 WRITE: not now, the delegation is being recalled.
    let (mut c, root) = fx.connect();
    let v3fh = c.lookup_ok(&root, "f");
    let w = c.write(
        &v3fh,
        0,
        bytes::Bytes::from_static(b"after!"),
        StableHow::FileSync,
    );
    assert_eq!(w.status(), Nfsstat3::Jukebox, "{w:?}");
    let s = c.setattr(
        &v3fh,
        Sattr3 {
            mode: Some(0o600),
            ..Default::default()
        },
    );
    assert_eq!(s.status(), Nfsstat3::Jukebox, "{s:?}");

    // The holder gets CB_COMPOUND(CB_SEQUENCE, CB_RECALL of that delegation) on its connection.
    let cb = a
        .rpc
        .read_record()
        .expect("a callback on the holder's connection");
    assert_eq!(word(&cb, 1), 0, "not an RPC call");
    assert_eq!(
        (word(&cb, 3), word(&cb, 4), word(&cb, 5)),
        (0x4000_0000, 1, 1)
    );
    let recalled = cb.windows(12).any(|w| w == deleg.other.as_slice());
    assert!(recalled, "the callback does not name the delegation");

    // Returned: the change goes through.
    a.call(Ops::new().putfh(&fh).delegreturn(&deleg))
        .ok("DELEGRETURN");
    let w = c.write(
        &v3fh,
        0,
        bytes::Bytes::from_static(b"after!"),
        StableHow::FileSync,
    );
    assert!(matches!(w, WriteRes::Ok(_)), "{w:?}");
    assert_eq!(std::fs::read(&path).unwrap(), b"after!");
}
