//! Generates the NFSv3, MOUNT v3 and NFSACL v3 wire types from the XDR in `spec/` (see spec/README.md).

use std::path::PathBuf;

#[allow(dead_code)]
mod limits {
    include!("src/limits.rs");
}
use limits::*;

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec");
    let spec = dir.join("nfs3_prot.x");
    // NFSACL (POSIX ACLs over NFSv3) uses nfs3_prot.x's handles, attributes and statuses
    let acl = dir.join("nfs_acl.x");
    println!("cargo:rerun-if-changed={}", spec.display());
    println!("cargo:rerun-if-changed={}", acl.display());
    println!("cargo:rerun-if-changed=src/limits.rs");
    let mut g = xdrgen::Generator::new()
        // Statuses a peer sends that this code does not know are carried, not refused (the
        // benchmark client decodes any server's replies).
        .open_enum("nfsstat3")
        .open_enum("mountstat3")
        // Every result is `X3res::Ok(resok)` or `X3res::Fail(status[, resfail])`.
        .variant_name("nfsstat3", "NFS3_OK", "Ok")
        .variant_name("nfsstat3", "default", "Fail")
        .variant_name("mountstat3", "MNT3_OK", "Ok")
        .variant_name("mountstat3", "default", "Fail")
        // Typedefs that are a procedure's whole argument or result need a codec of their own.
        .newtype("dirpath")
        .newtype("mountlist")
        .newtype("exports")
        // READ and WRITE data.
        .max_opaque(NFS3_MAX_IO)
        // Names decode up to a path's length (the procedure answers NFS3ERR_NAMETOOLONG).
        .bound("filename3", NFS3_MAXPATHLEN)
        .bound("nfspath3", NFS3_MAXPATHLEN)
        .bound("mountres3_ok.auth_flavors", MAX_AUTH_FLAVORS)
        // READ data goes out as a payload (bytes or file pages) without a copy; WRITE data,
        // which a client sends, stays a segment of its own.
        .payload("READ3resok.data")
        .bulk("WRITE3args.data")
        .proptest(true);
    // Optional data spelt as bool unions: `struct PostOpAttr(pub Option<Fattr3>)`.
    for u in [
        "post_op_attr",
        "pre_op_attr",
        "post_op_fh3",
        "sattrguard3",
        "set_mode3",
        "set_uid3",
        "set_gid3",
        "set_size3",
    ] {
        g = g.option_union(u);
    }
    // Linked lists as `Vec`s: a READDIR reply's entries are pushed, not boxed one by one.
    for l in [
        "entry3",
        "entryplus3",
        "mountbody",
        "groupnode",
        "exportnode",
    ] {
        g = g.vec_list(l).bound(l, MAX_LIST_ENTRIES);
    }
    let src = g
        .generate(&[&spec, &acl])
        .unwrap_or_else(|e| panic!("xdrgen: {e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("nfs3_wire.rs");
    std::fs::write(&out, src).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
