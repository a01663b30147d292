//! NFSv3, MOUNT and NFSACL end to end: every `nfs3wire::*Args` decoder, then the whole
//! `sunrpc::Dispatcher` with NFSv3, MOUNT, NFSACL and NFSv4 registered over a `vfs::Vfs` exporting a
//! scratch directory (see fuzz/harness/src/env.rs).
//!
//! Input: up to 16 RPC call messages, each behind a 4-byte record-marking length word. Markers
//! (an opaque of length 8 holding e.g. `@FH@ROOT`, `@EXPORT@`) are replaced by this process's
//! handles and export paths before dispatch, so seeds stay valid across processes.
//!
//! Checks: no panic, overflow, hang or runaway allocation; the argument type of the called
//! procedure round-trips (decode, encode, decode gives the same value); every reply is a whole
//! number of XDR words and echoes the xid.
#![no_main]

use std::fmt::Debug;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs3wire::*;
use xdr::{Decode, Decoder, Encode, Encoder};

fn roundtrip<T: Decode + Encode + PartialEq + Debug>(args: &Bytes) {
    let Ok(v) = T::decode(&mut Decoder::new(args.clone())) else {
        return;
    };
    let mut e = Encoder::new();
    e.encode(&v);
    let b = e.finish().to_bytes();
    let back = T::decode(&mut Decoder::new(b)).expect("re-encoded arguments decode");
    assert_eq!(v, back, "arguments do not round-trip");
}

fn nfs3_args(proc_: u32, a: &Bytes) {
    match proc_ {
        1 => roundtrip::<Getattr3args>(a),
        2 => roundtrip::<Setattr3args>(a),
        3 => roundtrip::<Lookup3args>(a),
        4 => roundtrip::<Access3args>(a),
        5 => roundtrip::<Readlink3args>(a),
        6 => roundtrip::<Read3args>(a),
        7 => roundtrip::<Write3args>(a),
        8 => roundtrip::<Create3args>(a),
        9 => roundtrip::<Mkdir3args>(a),
        10 => roundtrip::<Symlink3args>(a),
        11 => roundtrip::<Mknod3args>(a),
        12 => roundtrip::<Remove3args>(a),
        13 => roundtrip::<Rmdir3args>(a),
        14 => roundtrip::<Rename3args>(a),
        15 => roundtrip::<Link3args>(a),
        16 => roundtrip::<Readdir3args>(a),
        17 => roundtrip::<Readdirplus3args>(a),
        18 => roundtrip::<Fsstat3args>(a),
        19 => roundtrip::<Fsinfo3args>(a),
        20 => roundtrip::<Pathconf3args>(a),
        21 => roundtrip::<Commit3args>(a),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    for m in harness::frames(data) {
        if let Ok((h, args)) = sunrpc::msg::decode_call(Bytes::copy_from_slice(m)) {
            let a = args.into_rest();
            match (h.prog, h.vers) {
                (NFS3_PROGRAM, NFS_V3) => nfs3_args(h.proc_, &a),
                (MOUNTPROG, MOUNTVERS3)
                    if h.proc_ == MOUNTPROC_MNT || h.proc_ == MOUNTPROC_UMNT =>
                {
                    roundtrip::<Dirpath>(&a)
                }
                (NFS_ACL_PROGRAM, NFS_ACL_V3) => match h.proc_ {
                    ACLPROC3_GETACL => roundtrip::<Getacl3args>(&a),
                    ACLPROC3_SETACL => roundtrip::<Setacl3args>(&a),
                    _ => {}
                },
                _ => {}
            }
        }
    }
    harness::run_stream(data);
});
