//! ACLs against the running server (docs/acl.md): NFSv4 `acl`/`dacl` GETATTR and SETATTR and
//! NFSv3's NFSACL GETACL/SETACL on the export's POSIX ACLs, each change checked with the
//! server-side `getfacl`, the permission checks that follow an ACL (ACCESS, READ, WRITE as a
//! named user, a mask, a DENY), default ACLs inherited by files made over NFS, `no_acl`, and
//! the errors knfsd gives for what POSIX ACLs cannot hold.

mod common;

use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use common::nfs4_raw::*;
use common::*;
use nfs3wire::*;
use nfs4wire as w;

/// A user and group the tests give access through ACLs (not the files' owner or group).
const ALICE: u32 = 2101;
const BOB: u32 = 2102;
const STAFF: u32 = 2200;

const ALLOW: u32 = w::ACE4_ACCESS_ALLOWED_ACE_TYPE;
const DENY: u32 = w::ACE4_ACCESS_DENIED_ACE_TYPE;
const R: u32 = w::ACE4_READ_DATA;
const WR: u32 = w::ACE4_WRITE_DATA | w::ACE4_APPEND_DATA;
const X: u32 = w::ACE4_EXECUTE;
const INHERIT: u32 = w::ACE4_FILE_INHERIT_ACE | w::ACE4_DIRECTORY_INHERIT_ACE;

/// The server-side `getfacl` of `path`: its entries, numeric, without comments.
fn getfacl(path: &Path, default: bool) -> Vec<String> {
    let mut cmd = Command::new("getfacl");
    cmd.args(["-n", "-c", "-p", "-E"]);
    if default {
        cmd.arg("-d");
    }
    let out = cmd.arg(path).output().expect("getfacl (the acl package)");
    assert!(
        out.status.success(),
        "getfacl {}: {:?}",
        path.display(),
        out
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn setfacl(path: &Path, args: &[&str]) {
    let out = Command::new("setfacl")
        .args(args)
        .arg(path)
        .output()
        .expect("setfacl (the acl package)");
    assert!(out.status.success(), "setfacl {args:?}: {out:?}");
}

fn file(dir: &Path, name: &str, mode: u32, owner: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, b"acl test data\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(&p, Some(owner), Some(owner)).unwrap();
    p
}

/// A directory owned by the tests' client ([`TEST_UID`]), who may set its ACLs.
fn owned_dir(parent: &Path, name: &str) -> std::path::PathBuf {
    let d = parent.join(name);
    std::fs::create_dir(&d).unwrap();
    std::os::unix::fs::chown(&d, Some(TEST_UID), Some(TEST_UID)).unwrap();
    d
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A 4.2 session as root (no_root_squash in these exports) and the export's handle.
fn v4(fx: &Fixture, owner: &str) -> (V4, Bytes) {
    let mut c = V4::session(fx.server.port, 2, owner);
    let dir = c.path_fh(&fx.export);
    (c, dir)
}

fn set_acl(c: &mut V4, fh: &[u8], aces: Vec<w::Nfsace4>) -> CompoundRes {
    let s = Sattr {
        acl: Some(aces),
        ..Default::default()
    };
    c.call(Ops::new().putfh(fh).setattr(&anonymous_stateid(), &s))
}

fn anonymous_stateid() -> w::Stateid4 {
    w::Stateid4 {
        seqid: 0,
        other: [0; 12],
    }
}

fn fixture() -> Fixture {
    Fixture::with_options(0o777, "rw,insecure,no_root_squash")
}

#[test]
fn v4_getattr_maps_the_mode_and_the_posix_acl_as_knfsd() {
    let fx = fixture();
    let p = file(&fx.export, "f", 0o640, TEST_UID);
    let (mut c, dir) = v4(&fx, "acl-get");
    let fh = c.lookup_fh(&dir, "f");
    let a = c.getattr(
        &fh,
        &[
            w::FATTR4_SUPPORTED_ATTRS,
            w::FATTR4_ACLSUPPORT,
            w::FATTR4_ACL,
            w::FATTR4_DACL,
        ],
    );
    let sup = a.supported.unwrap();
    assert!(sup.contains(&w::FATTR4_ACL) && sup.contains(&w::FATTR4_DACL));
    assert!(!sup.contains(&w::FATTR4_SACL));
    assert_eq!(
        a.aclsupport,
        Some(w::ACL4_SUPPORT_ALLOW_ACL | w::ACL4_SUPPORT_DENY_ACL)
    );
    let anyone = w::ACE4_READ_ATTRIBUTES | w::ACE4_READ_ACL | w::ACE4_SYNCHRONIZE;
    let owner_extra = w::ACE4_WRITE_ATTRIBUTES | w::ACE4_WRITE_ACL;
    // 0640, no ACL: the three ALLOWs of knfsd's mapping
    assert_eq!(
        a.acl.unwrap(),
        vec![
            ace(ALLOW, 0, R | WR | anyone | owner_extra, "OWNER@"),
            ace(ALLOW, 0, R | anyone, "GROUP@"),
            ace(ALLOW, 0, anyone, "EVERYONE@"),
        ]
    );
    assert_eq!(a.dacl.as_ref().map(|d| d.na41_flag), Some(0));

    // a named user and a named group, with a mask taking x away
    setfacl(&p, &["-m", &format!("u:{ALICE}:rwx,g:{STAFF}:r,m::rw")]);
    let acl = c.getattr(&fh, &[w::FATTR4_ACL]).acl.unwrap();
    assert!(acl.contains(&ace(ALLOW, 0, R | WR | anyone, &ALICE.to_string())));
    assert!(acl.contains(&ace(
        ALLOW,
        w::ACE4_IDENTIFIER_GROUP,
        R | anyone,
        &STAFF.to_string()
    )));
    // the owning group (r, limited by the mask rw-) is denied nothing other lacks: other has ---
    assert_eq!(acl.last().unwrap(), &ace(ALLOW, 0, anyone, "EVERYONE@"));
}

#[test]
fn v4_setattr_acl_sets_the_posix_acl_and_the_mode_follows() {
    let fx = fixture();
    let p = file(&fx.export, "f", 0o600, TEST_UID);
    let (mut c, dir) = v4(&fx, "acl-set");
    let fh = c.lookup_fh(&dir, "f");
    set_acl(
        &mut c,
        &fh,
        vec![
            ace(ALLOW, 0, R | WR, "OWNER@"),
            ace(ALLOW, 0, R | WR, &ALICE.to_string()),
            ace(ALLOW, w::ACE4_IDENTIFIER_GROUP, R, &STAFF.to_string()),
            ace(ALLOW, 0, R, "GROUP@"),
            ace(ALLOW, 0, 0, "EVERYONE@"),
        ],
    )
    .ok("SETATTR acl");
    assert_eq!(
        getfacl(&p, false),
        strs(&[
            "user::rw-",
            &format!("user:{ALICE}:rw-"),
            "group::r--",
            &format!("group:{STAFF}:r--"),
            "mask::rw-",
            "other::---"
        ])
    );
    // the mode's group bits are the mask
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o660);
    // and GETATTR gives back what was set
    let acl = c.getattr(&fh, &[w::FATTR4_ACL]).acl.unwrap();
    assert!(acl
        .iter()
        .any(|a| a.who == ALICE.to_string().as_bytes() && a.r#type == ALLOW));

    // a mode set afterwards changes the mask, as chmod does
    c.call(
        Ops::new()
            .putfh(&fh)
            .setattr(&anonymous_stateid(), &Sattr::mode(0o640)),
    )
    .ok("SETATTR mode");
    assert!(getfacl(&p, false).contains(&"mask::r--".to_string()));

    // an ACL that is only a mode: no extended ACL left, the mode set
    set_acl(
        &mut c,
        &fh,
        vec![
            ace(ALLOW, 0, R | WR | X, "OWNER@"),
            ace(ALLOW, 0, R | X, "GROUP@"),
            ace(ALLOW, 0, R, "EVERYONE@"),
        ],
    )
    .ok("SETATTR minimal acl");
    assert_eq!(
        getfacl(&p, false),
        strs(&["user::rwx", "group::r-x", "other::r--"])
    );
    assert_eq!(std::fs::metadata(&p).unwrap().mode() & 0o777, 0o754);

    // dacl (4.1+) sets the same way
    let dacl = w::Nfsacl41 {
        na41_flag: 0,
        na41_aces: vec![
            ace(ALLOW, 0, R | WR, "OWNER@"),
            ace(ALLOW, 0, R, &BOB.to_string()),
            ace(ALLOW, 0, 0, "GROUP@"),
            ace(ALLOW, 0, 0, "EVERYONE@"),
        ],
    };
    let f = fattr(&[(w::FATTR4_DACL, &dacl)]);
    c.call(Ops::new().putfh(&fh).setattr_raw(&anonymous_stateid(), f))
        .ok("SETATTR dacl");
    assert!(getfacl(&p, false).contains(&format!("user:{BOB}:r--")));
}

#[test]
fn v4_deny_aces_take_away_what_later_aces_give() {
    let fx = fixture();
    let p = file(&fx.export, "f", 0o666, TEST_UID);
    let (mut c, dir) = v4(&fx, "acl-deny");
    let fh = c.lookup_fh(&dir, "f");
    set_acl(
        &mut c,
        &fh,
        vec![
            ace(DENY, 0, WR, &ALICE.to_string()),
            ace(ALLOW, 0, R | WR, "OWNER@"),
            ace(ALLOW, 0, R | WR, "GROUP@"),
            ace(ALLOW, 0, R | WR, "EVERYONE@"),
        ],
    )
    .ok("SETATTR acl");
    let got = getfacl(&p, false);
    assert!(got.contains(&format!("user:{ALICE}:r--")), "{got:?}");
    assert!(got.contains(&"other::rw-".to_string()), "{got:?}");

    // alice may read but not write, bob (other) may do both: ACCESS and WRITE over NFSv3
    let (mut v3, root) = fx.connect();
    let f3 = v3.lookup_ok(&root, "f");
    v3.set_user(ALICE, ALICE);
    let want = ACCESS3_READ | ACCESS3_MODIFY;
    assert_eq!(access_ok(&mut v3, &f3, want), ACCESS3_READ);
    assert_eq!(
        v3.write(&f3, 0, Bytes::from_static(b"x"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    v3.set_user(BOB, BOB);
    assert_eq!(access_ok(&mut v3, &f3, want), want);
    assert_eq!(
        v3.write(&f3, 0, Bytes::from_static(b"y"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3_OK
    );
}

#[test]
fn permission_checks_follow_a_named_user_a_group_and_the_mask() {
    let fx = fixture();
    // 0600: only the owner, by the mode
    let p = file(&fx.export, "f", 0o600, TEST_UID);
    let (mut c, root) = fx.connect();
    let fh = c.lookup_ok(&root, "f");
    c.set_user(ALICE, ALICE);
    assert_eq!(
        c.read(&fh, 0, 100).status(),
        Nfsstat3::NFS3ERR_ACCES,
        "no ACL yet"
    );
    // a named user entry lets alice read, a group entry lets staff read and write
    setfacl(&p, &["-m", &format!("u:{ALICE}:r,g:{STAFF}:rw")]);
    assert_eq!(
        access_ok(&mut c, &fh, ACCESS3_READ | ACCESS3_MODIFY),
        ACCESS3_READ
    );
    assert_eq!(c.read(&fh, 0, 100).status(), Nfsstat3::NFS3_OK);
    c.set_user(BOB, STAFF);
    assert_eq!(
        access_ok(&mut c, &fh, ACCESS3_READ | ACCESS3_MODIFY),
        ACCESS3_READ | ACCESS3_MODIFY
    );
    assert_eq!(
        c.write(&fh, 0, Bytes::from_static(b"z"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3_OK
    );
    // the mask takes write away from the group entry
    setfacl(&p, &["-m", "m::r"]);
    assert_eq!(
        access_ok(&mut c, &fh, ACCESS3_READ | ACCESS3_MODIFY),
        ACCESS3_READ
    );
    assert_eq!(
        c.write(&fh, 0, Bytes::from_static(b"z"), StableHow::FileSync)
            .status(),
        Nfsstat3::NFS3ERR_ACCES
    );
    // someone else: other has nothing
    c.set_user(3000, 3000);
    assert_eq!(access_ok(&mut c, &fh, ACCESS3_READ), 0);
    assert_eq!(c.read(&fh, 0, 100).status(), Nfsstat3::NFS3ERR_ACCES);
    // a directory's search permission through an ACL (LOOKUP)
    let d = fx.export.join("d");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    file(&d, "inner", 0o644, 0);
    c.set_user(ALICE, ALICE);
    let dh = c.lookup_ok(&root, "d");
    assert_eq!(c.lookup(&dh, "inner").status(), Nfsstat3::NFS3ERR_ACCES);
    setfacl(&d, &["-m", &format!("u:{ALICE}:x")]);
    assert_eq!(c.lookup(&dh, "inner").status(), Nfsstat3::NFS3_OK);
}

#[test]
fn default_acls_are_set_as_inheritable_aces_and_inherited_by_creates() {
    let fx = fixture();
    let d = owned_dir(&fx.export, "proj");
    let (mut c, dir) = v4(&fx, "acl-inherit");
    let dh = c.lookup_fh(&dir, "proj");
    set_acl(
        &mut c,
        &dh,
        vec![
            ace(ALLOW, 0, R | WR | X | w::ACE4_DELETE_CHILD, "OWNER@"),
            ace(ALLOW, 0, R | X, "GROUP@"),
            ace(ALLOW, 0, R | X, "EVERYONE@"),
            ace(
                ALLOW,
                INHERIT | w::ACE4_INHERIT_ONLY_ACE,
                R | WR | X | w::ACE4_DELETE_CHILD,
                "OWNER@",
            ),
            ace(
                ALLOW,
                INHERIT | w::ACE4_INHERIT_ONLY_ACE | w::ACE4_IDENTIFIER_GROUP,
                R | WR | X | w::ACE4_DELETE_CHILD,
                &STAFF.to_string(),
            ),
            ace(ALLOW, INHERIT | w::ACE4_INHERIT_ONLY_ACE, R | X, "GROUP@"),
            ace(ALLOW, INHERIT | w::ACE4_INHERIT_ONLY_ACE, 0, "EVERYONE@"),
        ],
    )
    .ok("SETATTR acl with inheritable ACEs");
    assert_eq!(
        getfacl(&d, true),
        strs(&[
            "user::rwx",
            "group::r-x",
            &format!("group:{STAFF}:rwx"),
            "mask::rwx",
            "other::---"
        ])
    );
    // and GETATTR shows them back as inherit-only ACEs
    let acl = c.getattr(&dh, &[w::FATTR4_ACL]).acl.unwrap();
    assert!(acl
        .iter()
        .any(|a| a.flag & w::ACE4_INHERIT_ONLY_ACE != 0 && a.who == STAFF.to_string().as_bytes()));

    // files and directories made over NFS inherit it, combined with the create's mode (0644:
    // the group class is r--, so staff's entry is masked to r--)
    let (mut v3, root) = fx.connect();
    let ph = v3.lookup_ok(&root, "proj");
    v3.create(&ph, "v3file", 0o644);
    let got = getfacl(&d.join("v3file"), false);
    assert!(got.contains(&format!("group:{STAFF}:rwx")), "{got:?}");
    assert!(got.contains(&"mask::r--".to_string()), "{got:?}");
    assert!(got.contains(&"other::---".to_string()), "{got:?}");
    v3.mkdir(&ph, "v3dir", 0o755);
    assert!(getfacl(&d.join("v3dir"), true).contains(&format!("group:{STAFF}:rwx")));
    let (_, _) = c.open_ok(
        &dh,
        "v4file",
        "o",
        w::OPEN4_SHARE_ACCESS_WRITE,
        0,
        OpenHow::Unchecked(Sattr::mode(0o660)),
    );
    let got = getfacl(&d.join("v4file"), false);
    assert!(got.contains(&format!("group:{STAFF}:rwx")), "{got:?}");
    assert!(got.contains(&"mask::rw-".to_string()), "{got:?}");

    // an ACL without inheritable ACEs removes the default ACL
    set_acl(
        &mut c,
        &dh,
        vec![
            ace(ALLOW, 0, R | WR | X, "OWNER@"),
            ace(ALLOW, 0, 0, "GROUP@"),
            ace(ALLOW, 0, 0, "EVERYONE@"),
        ],
    )
    .ok("SETATTR acl without inheritable ACEs");
    assert!(getfacl(&d, true).is_empty());
}

#[test]
fn v4_what_posix_acls_cannot_hold_gets_knfsds_errors() {
    let fx = fixture();
    file(&fx.export, "f", 0o644, TEST_UID);
    let (mut c, dir) = v4(&fx, "acl-errors");
    let fh = c.lookup_fh(&dir, "f");
    let status = |c: &mut V4, aces| set_acl(c, &fh, aces).status;
    // AUDIT ACEs, an unsupported flag, inheritance on a file: ATTRNOTSUPP
    let audit = vec![ace(w::ACE4_SYSTEM_AUDIT_ACE_TYPE, 0, R, "EVERYONE@")];
    assert_eq!(status(&mut c, audit), w::Nfsstat4::NFS4ERR_ATTRNOTSUPP);
    let flag = vec![ace(ALLOW, w::ACE4_NO_PROPAGATE_INHERIT_ACE, R, "EVERYONE@")];
    assert_eq!(status(&mut c, flag), w::Nfsstat4::NFS4ERR_ATTRNOTSUPP);
    let inherit = vec![ace(ALLOW, w::ACE4_FILE_INHERIT_ACE, R, "EVERYONE@")];
    assert_eq!(status(&mut c, inherit), w::Nfsstat4::NFS4ERR_ATTRNOTSUPP);
    // a name that maps to no one, and a special name POSIX has no entry for
    let unknown = vec![ace(ALLOW, 0, R, "nosuchuser")];
    assert_eq!(status(&mut c, unknown), w::Nfsstat4::NFS4ERR_BADOWNER);
    let special = vec![ace(ALLOW, 0, R, "AUTHENTICATED@")];
    assert_eq!(status(&mut c, special), w::Nfsstat4::NFS4ERR_BADOWNER);
    // thousands of ACEs: more principals than a POSIX ACL holds
    let many: Vec<w::Nfsace4> = (0..2000)
        .map(|u| ace(ALLOW, 0, R, &(10_000 + u).to_string()))
        .collect();
    assert_eq!(status(&mut c, many), w::Nfsstat4::NFS4ERR_NOSPC);
    let too_many: Vec<w::Nfsace4> = (0..3000).map(|_| ace(ALLOW, 0, R, "OWNER@")).collect();
    assert_eq!(status(&mut c, too_many), w::Nfsstat4::NFS4ERR_NOSPC);
    // not the owner
    c.rpc.set_user(ALICE, ALICE);
    let plain = vec![
        ace(ALLOW, 0, R | WR, "OWNER@"),
        ace(ALLOW, 0, R, "GROUP@"),
        ace(ALLOW, 0, R, "EVERYONE@"),
    ];
    assert_eq!(status(&mut c, plain), w::Nfsstat4::NFS4ERR_PERM);
    // sacl is not supported
    let sacl = w::Nfsacl41 {
        na41_flag: 0,
        na41_aces: vec![],
    };
    c.rpc.set_user(0, 0);
    let f = fattr(&[(w::FATTR4_SACL, &sacl)]);
    let r = c.call(Ops::new().putfh(&fh).setattr_raw(&anonymous_stateid(), f));
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_ATTRNOTSUPP);
}

/// GETACL with the mask `mask`.
fn getacl(c: &mut RpcClient, fh: &NfsFh3, mask: u32) -> Getacl3res {
    match c.call(
        NFS_ACL_PROGRAM,
        NFS_ACL_V3,
        ACLPROC3_GETACL,
        &Getacl3args {
            fh: fh.clone(),
            mask,
        },
    ) {
        RpcReply::Success(body) => decode_all(body),
        other => panic!("GETACL not accepted: {other:?}"),
    }
}

fn setacl(c: &mut RpcClient, fh: &NfsFh3, acl: Secattr3) -> RpcReply {
    c.call(
        NFS_ACL_PROGRAM,
        NFS_ACL_V3,
        ACLPROC3_SETACL,
        &Setacl3args {
            fh: fh.clone(),
            acl,
        },
    )
}

/// The ACCESS bits granted.
fn access_ok(c: &mut RpcClient, fh: &NfsFh3, mask: u32) -> u32 {
    match c.access(fh, mask) {
        Access3res::Ok(r) => r.access,
        Access3res::Fail(s, _) => panic!("ACCESS: {s:?}"),
    }
}

fn ent(t: u32, id: u32, perm: u32) -> Aclent3 {
    Aclent3 {
        r#type: t,
        id,
        perm,
    }
}

#[test]
fn nfsacl_getacl_and_setacl_as_the_linux_client_uses_them() {
    let fx = fixture();
    let p = file(&fx.export, "f", 0o640, TEST_UID);
    let d = owned_dir(&fx.export, "d");
    let (mut c, root) = fx.connect();
    let fh = c.lookup_ok(&root, "f");
    let dh = c.lookup_ok(&root, "d");

    // no ACL: the mode's, sent as four entries with a mask
    let all = NFS_ACL | NFS_ACLCNT | NFS_DFACL | NFS_DFACLCNT;
    let Getacl3res::Ok(r) = getacl(&mut c, &fh, all) else {
        panic!("GETACL failed")
    };
    assert_eq!(r.acl.mask, all);
    assert_eq!(r.acl.aclcnt, 4);
    assert_eq!(
        r.acl.aclent,
        vec![
            ent(NFS_ACL_USER_OBJ, 1000, 6),
            ent(NFS_ACL_GROUP_OBJ, 1000, 4),
            ent(NFS_ACL_CLASS, 0, 4),
            ent(NFS_ACL_OTHER, 0, 0)
        ]
    );
    assert_eq!((r.acl.dfaclcnt, r.acl.dfaclent.len()), (0, 0));

    // SETACL as setfacl -m u:alice:rw sends it: the access ACL and no default
    let acl = Secattr3 {
        mask: NFS_ACL | NFS_DFACL,
        aclcnt: 5,
        aclent: vec![
            ent(NFS_ACL_USER_OBJ, 1000, 6),
            ent(NFS_ACL_USER, ALICE, 6),
            ent(NFS_ACL_GROUP_OBJ, 1000, 4),
            ent(NFS_ACL_CLASS, 0, 6),
            ent(NFS_ACL_OTHER, 0, 0),
        ],
        dfaclcnt: 0,
        dfaclent: vec![],
    };
    match setacl(&mut c, &fh, acl) {
        RpcReply::Success(body) => {
            let r: Setacl3res = decode_all(body);
            assert!(matches!(r, Setacl3res::Ok(_)), "{r:?}");
        }
        other => panic!("SETACL not accepted: {other:?}"),
    }
    assert_eq!(
        getfacl(&p, false),
        strs(&[
            "user::rw-",
            &format!("user:{ALICE}:rw-"),
            "group::r--",
            "mask::rw-",
            "other::---"
        ])
    );
    // and the count alone, when only the count is asked
    let Getacl3res::Ok(r) = getacl(&mut c, &fh, NFS_ACLCNT) else {
        panic!("GETACL failed")
    };
    assert_eq!((r.acl.aclcnt, r.acl.aclent.len()), (5, 0));

    // a directory's default ACL, tagged NFS_ACL_DEFAULT
    setfacl(&d, &["-d", "-m", &format!("g:{STAFF}:rwx")]);
    let Getacl3res::Ok(r) = getacl(&mut c, &dh, all) else {
        panic!("GETACL failed")
    };
    assert!(r
        .acl
        .dfaclent
        .iter()
        .all(|e| e.r#type & NFS_ACL_DEFAULT != 0));
    assert!(r
        .acl
        .dfaclent
        .contains(&ent(NFS_ACL_GROUP | NFS_ACL_DEFAULT, STAFF, 7)));
    // setting the access ACL alone removes the default one, as with knfsd
    let minimal = Secattr3 {
        mask: NFS_ACL,
        aclcnt: 4,
        aclent: vec![
            ent(NFS_ACL_USER_OBJ, 0, 7),
            ent(NFS_ACL_GROUP_OBJ, 0, 5),
            ent(NFS_ACL_CLASS, 0, 5),
            ent(NFS_ACL_OTHER, 0, 5),
        ],
        dfaclcnt: 0,
        dfaclent: vec![],
    };
    match setacl(&mut c, &dh, minimal) {
        RpcReply::Success(body) => {
            let r: Setacl3res = decode_all(body);
            assert!(matches!(r, Setacl3res::Ok(_)), "{r:?}");
        }
        other => panic!("SETACL not accepted: {other:?}"),
    }
    assert!(getfacl(&d, true).is_empty());
    assert_eq!(
        getfacl(&d, false),
        strs(&["user::rwx", "group::r-x", "other::r-x"])
    );
}

#[test]
fn nfsacl_bad_input_gets_garbage_args_or_inval() {
    let fx = fixture();
    file(&fx.export, "f", 0o644, TEST_UID);
    let (mut c, root) = fx.connect();
    let fh = c.lookup_ok(&root, "f");
    let base = |aclent: Vec<Aclent3>| Secattr3 {
        mask: NFS_ACL,
        aclcnt: aclent.len() as u32,
        aclent,
        dfaclcnt: 0,
        dfaclent: vec![],
    };
    let good = vec![
        ent(NFS_ACL_USER_OBJ, 0, 6),
        ent(NFS_ACL_USER, ALICE, 6),
        ent(NFS_ACL_GROUP_OBJ, 0, 4),
        ent(NFS_ACL_CLASS, 0, 6),
        ent(NFS_ACL_OTHER, 0, 4),
    ];
    let garbage = |c: &mut RpcClient, a: Secattr3| {
        assert!(
            matches!(setacl(c, &fh, a.clone()), RpcReply::GarbageArgs),
            "{a:?}"
        )
    };
    let mut unknown_tag = good.clone();
    unknown_tag[1].r#type = 0x40;
    garbage(&mut c, base(unknown_tag));
    let mut more_than_count = base(good.clone());
    more_than_count.aclcnt = 3;
    garbage(&mut c, more_than_count);
    let mut count_too_big = base(good.clone());
    count_too_big.aclcnt = 1025;
    garbage(&mut c, count_too_big);
    let mut mask = base(good.clone());
    mask.mask |= 0x100;
    garbage(&mut c, mask);
    // an oversized request: 1,100 entries
    let huge: Vec<Aclent3> = (0..1100).map(|u| ent(NFS_ACL_USER, u, 4)).collect();
    let mut huge = base(huge);
    huge.aclcnt = 1024;
    assert!(!matches!(setacl(&mut c, &fh, huge), RpcReply::Success(_)));

    let status = |c: &mut RpcClient, a: Secattr3| match setacl(c, &fh, a) {
        RpcReply::Success(body) => match decode_all::<Setacl3res>(body) {
            Setacl3res::Ok(_) => Nfsstat3::NFS3_OK,
            Setacl3res::Fail(s, _) => s,
        },
        other => panic!("SETACL: {other:?}"),
    };
    // a named user without a mask, the same user twice: no valid ACL
    let pick = |idx: &[usize]| -> Vec<Aclent3> { idx.iter().map(|&i| good[i].clone()).collect() };
    let no_mask = pick(&[0, 1, 2, 4]);
    assert_eq!(status(&mut c, base(no_mask)), Nfsstat3::NFS3ERR_INVAL);
    let twice = pick(&[0, 1, 1, 2, 3, 4]);
    assert_eq!(status(&mut c, base(twice)), Nfsstat3::NFS3ERR_INVAL);
    // a default ACL on a file
    let mut dflt = base(good.clone());
    dflt.mask = NFS_ACL | NFS_DFACL;
    dflt.dfaclcnt = 4;
    dflt.dfaclent = vec![
        ent(NFS_ACL_USER_OBJ | NFS_ACL_DEFAULT, 0, 7),
        ent(NFS_ACL_GROUP_OBJ | NFS_ACL_DEFAULT, 0, 5),
        ent(NFS_ACL_CLASS | NFS_ACL_DEFAULT, 0, 5),
        ent(NFS_ACL_OTHER | NFS_ACL_DEFAULT, 0, 5),
    ];
    assert_eq!(status(&mut c, dflt), Nfsstat3::NFS3ERR_ACCES);
    // not the owner
    c.set_user(ALICE, ALICE);
    assert_eq!(status(&mut c, base(good.clone())), Nfsstat3::NFS3ERR_PERM);
    // a GETACL mask with undefined bits
    assert!(matches!(
        getacl(&mut c, &fh, 0x10),
        Getacl3res::Fail(Nfsstat3::NFS3ERR_INVAL, _)
    ));
}

#[test]
fn no_acl_hides_acls_but_checks_still_follow_them() {
    let fx = Fixture::with_options(0o777, "rw,insecure,no_root_squash,no_acl");
    let p = file(&fx.export, "f", 0o600, TEST_UID);
    setfacl(&p, &["-m", &format!("u:{ALICE}:r")]);
    let (mut c, dir) = v4(&fx, "no-acl");
    let fh = c.lookup_fh(&dir, "f");
    let a = c.getattr(
        &fh,
        &[
            w::FATTR4_SUPPORTED_ATTRS,
            w::FATTR4_ACLSUPPORT,
            w::FATTR4_ACL,
        ],
    );
    let sup = a.supported.unwrap();
    assert!(!sup.contains(&w::FATTR4_ACL) && !sup.contains(&w::FATTR4_DACL));
    assert_eq!((a.aclsupport, a.acl), (Some(0), None));
    let plain = vec![ace(ALLOW, 0, R, "OWNER@")];
    assert_eq!(
        set_acl(&mut c, &fh, plain).status,
        w::Nfsstat4::NFS4ERR_ATTRNOTSUPP
    );

    let (mut v3, root) = fx.connect();
    let f3 = v3.lookup_ok(&root, "f");
    assert!(matches!(
        getacl(&mut v3, &f3, NFS_ACL),
        Getacl3res::Fail(Nfsstat3::NFS3ERR_NOTSUPP, _)
    ));
    v3.set_user(ALICE, ALICE);
    assert_eq!(v3.read(&f3, 0, 10).status(), Nfsstat3::NFS3_OK);
}

/// A directory with the default ACL `u::rwx,u:ALICE:rwx,g::r-x,g:STAFF:r-x,m::rwx,o::---`.
fn inheriting_dir(fx: &Fixture, name: &str) -> std::path::PathBuf {
    let d = owned_dir(&fx.export, name);
    setfacl(
        &d,
        &[
            "-d",
            "-m",
            &format!("u::rwx,u:{ALICE}:rwx,g::r-x,g:{STAFF}:r-x,m::rwx,o::---"),
        ],
    );
    d
}

#[test]
fn an_exclusive_create_combines_its_mode_with_the_default_acl() {
    // as knfsd: the EXCLUSIVE4_1 file is made with the client's mode, so the default ACL's
    // other::--- stands (a chmod after the create would give other the mode's r--)
    let fx = fixture();
    let d = inheriting_dir(&fx, "i");
    let (mut c, dir) = v4(&fx, "excl-acl");
    let dh = c.lookup_fh(&dir, "i");
    c.open_ok(
        &dh,
        "x",
        "o",
        w::OPEN4_SHARE_ACCESS_WRITE,
        0,
        OpenHow::Exclusive41(*b"excl-acl", Sattr::mode(0o644)),
    );
    let got = getfacl(&d.join("x"), false);
    assert!(got.contains(&"other::---".to_string()), "{got:?}");
    assert!(got.contains(&"mask::r--".to_string()), "{got:?}");
    assert!(got.contains(&format!("user:{ALICE}:rwx")), "{got:?}");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(d.join("x")).unwrap().mode() & 0o777,
        0o640
    );
}

#[test]
fn mode_umask_is_applied_only_where_no_default_acl_decides() {
    use std::os::unix::fs::MetadataExt;
    let fx = fixture();
    let d = inheriting_dir(&fx, "i");
    owned_dir(&fx.export, "plain");
    let (mut c, dir) = v4(&fx, "mode-umask");
    let (ih, ph) = (c.lookup_fh(&dir, "i"), c.lookup_fh(&dir, "plain"));
    let a = c.getattr(&dir, &[w::FATTR4_SUPPORTED_ATTRS]);
    assert!(a.supported.unwrap().contains(&FATTR4_MODE_UMASK));
    let with_umask = |mode| Sattr {
        mode_umask: Some((mode, 0o022)),
        ..Default::default()
    };
    for (h, name) in [(&ih, "f"), (&ph, "f")] {
        c.open_ok(
            h,
            name,
            "o",
            w::OPEN4_SHARE_ACCESS_WRITE,
            0,
            OpenHow::Unchecked(with_umask(0o666)),
        );
        c.call(Ops::new().putfh(h).mkdir("sub", &with_umask(0o777)))
            .ok("CREATE with mode_umask");
    }
    // under the default ACL the umask is not applied: the mask keeps the group's w
    let got = getfacl(&d.join("f"), false);
    assert!(got.contains(&"mask::rw-".to_string()), "{got:?}");
    assert_eq!(
        std::fs::metadata(d.join("f")).unwrap().mode() & 0o777,
        0o660
    );
    assert_eq!(
        std::fs::metadata(d.join("sub")).unwrap().mode() & 0o777,
        0o770
    );
    // and where there is none, it is
    let plain = fx.export.join("plain");
    assert_eq!(
        std::fs::metadata(plain.join("f")).unwrap().mode() & 0o777,
        0o644
    );
    assert_eq!(
        std::fs::metadata(plain.join("sub")).unwrap().mode() & 0o777,
        0o755
    );
    // only creates take it (BADXDR in SETATTR, as knfsd), and it cannot be read
    let f = c.lookup_fh(&dir, "plain");
    let r = c.call(
        Ops::new()
            .putfh(&f)
            .setattr(&anonymous_stateid(), &with_umask(0o600)),
    );
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_BADXDR);
    let r = c.call(Ops::new().putfh(&f).getattr(&[FATTR4_MODE_UMASK]));
    assert_eq!(r.status, w::Nfsstat4::NFS4ERR_INVAL);
    // NFSv4.1 does not have it
    let mut c41 = V4::session(fx.server.port, 1, "mode-umask-41");
    let root = c41.path_fh(&fx.export);
    let a = c41.getattr(&root, &[w::FATTR4_SUPPORTED_ATTRS]);
    assert!(!a.supported.unwrap().contains(&FATTR4_MODE_UMASK));
}
