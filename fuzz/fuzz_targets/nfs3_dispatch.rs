//! NFSv3 and MOUNT end to end: every `nfs3::types::*Args` decoder, then the whole
//! `sunrpc::Dispatcher` with NFSv3, MOUNT and NFSv4 registered over a `vfs::Vfs` exporting a
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
use nfs3::types::*;
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
        1 => roundtrip::<GetattrArgs>(a),
        2 => roundtrip::<SetattrArgs>(a),
        3 => roundtrip::<LookupArgs>(a),
        4 => roundtrip::<AccessArgs>(a),
        5 => roundtrip::<ReadlinkArgs>(a),
        6 => roundtrip::<ReadArgs>(a),
        7 => roundtrip::<WriteArgs>(a),
        8 => roundtrip::<CreateArgs>(a),
        9 => roundtrip::<MkdirArgs>(a),
        10 => roundtrip::<SymlinkArgs>(a),
        11 => roundtrip::<MknodArgs>(a),
        12 => roundtrip::<RemoveArgs>(a),
        13 => roundtrip::<RmdirArgs>(a),
        14 => roundtrip::<RenameArgs>(a),
        15 => roundtrip::<LinkArgs>(a),
        16 => roundtrip::<ReaddirArgs>(a),
        17 => roundtrip::<ReaddirplusArgs>(a),
        18 => roundtrip::<FsstatArgs>(a),
        19 => roundtrip::<FsinfoArgs>(a),
        20 => roundtrip::<PathconfArgs>(a),
        21 => roundtrip::<CommitArgs>(a),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    for m in harness::frames(data) {
        if let Ok((h, args)) = sunrpc::msg::decode_call(Bytes::copy_from_slice(m)) {
            let a = args.into_rest();
            match (h.prog, h.vers) {
                (NFS_PROGRAM, NFS_V3) => nfs3_args(h.proc_, &a),
                (MOUNT_PROGRAM, MOUNT_V3) if h.proc_ == 1 || h.proc_ == 3 => {
                    roundtrip::<MntArgs>(&a)
                }
                _ => {}
            }
        }
    }
    harness::run_stream(data);
});
