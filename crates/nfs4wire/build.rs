//! Generates the NFSv4 wire types from the XDR in `spec/` (see spec/README.md).

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec");
    let files = [
        root.join("nfs4_prot.x"),
        root.join("nfs4_xattr.x"),
        root.join("nfs4_flexfiles.x"),
        root.join("rpc_deps.x"),
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let src = xdrgen::Generator::new()
        // Status and operation numbers must be carried even when this code does not know
        // them (an unknown operation gets NFS4ERR_OP_ILLEGAL, not a decode failure).
        .open_enum("nfsstat4")
        .open_enum("nfs_opnum4")
        .open_enum("nfs_cb_opnum4")
        // A layout type this server does not know is NFS4ERR_UNKNOWN_LAYOUTTYPE, not BADXDR.
        .open_enum("layouttype4")
        // RFC 8435 section 5: the flexible files layout type, which its XDR adds to
        // layouttype4 as prose, not as a `///` line.
        .extend_enum("layouttype4", "LAYOUT4_FLEX_FILES = 0x4")
        // RFC 8276 XDR: the lines it asks (in comments) to add to nfsstat4, nfs_opnum4,
        // nfs_argop4 and nfs_resop4 (given there as comments in the .x text).
        .extend_enum(
            "nfsstat4",
            "NFS4ERR_NOXATTR = 10095, NFS4ERR_XATTR2BIG = 10096",
        )
        .extend_enum(
            "nfs_opnum4",
            "OP_GETXATTR = 72, OP_SETXATTR = 73, OP_LISTXATTRS = 74, OP_REMOVEXATTR = 75",
        )
        .extend_union(
            "nfs_argop4",
            "case OP_GETXATTR:      GETXATTR4args opgetxattr;
             case OP_SETXATTR:      SETXATTR4args opsetxattr;
             case OP_LISTXATTRS:    LISTXATTRS4args oplistxattrs;
             case OP_REMOVEXATTR:   REMOVEXATTR4args opremovexattr;",
        )
        .extend_union(
            "nfs_resop4",
            "case OP_GETXATTR:      GETXATTR4res opgetxattr;
             case OP_SETXATTR:      SETXATTR4res opsetxattr;
             case OP_LISTXATTRS:    LISTXATTRS4res oplistxattrs;
             case OP_REMOVEXATTR:   REMOVEXATTR4res opremovexattr;",
        )
        // Unbounded `<>` items: 1 MiB of bytes, 1024 elements, unless named here.
        .max_opaque(1 << 20)
        .max_array(1024)
        // A file name or other component: far below 1 MiB.
        .bound("component4", 4096)
        // WRITE and xattr payloads may be larger than the 1 MiB default.
        .bound("WRITE4args.data", 16 << 20)
        .bound("xattrvalue4", 16 << 20)
        // A READDIR reply can hold more than 1024 entries, pushed to and read from a Vec
        // rather than boxed one by one.
        .vec_list("entry4")
        .bound("entry4", 1 << 16)
        // READ and READ_PLUS data go out as a payload (bytes or file pages) without a copy;
        // READ_PLUS data is not DDP-eligible (RFC 8267 4.2.1 names only READ's): over RDMA it
        // travels in the body (inline or the Reply chunk), never in a Write chunk.
        .payload("READ4resok.data")
        .body_payload("data4.d_data")
        // WRITE data, which a client sends, stays a segment of its own: not copied into the
        // encoder's buffer.
        .bulk("WRITE4args.data")
        .proptest(true)
        .generate(&files)
        .unwrap_or_else(|e| panic!("xdrgen: {e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("nfs4_wire.rs");
    std::fs::write(&out, src).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
