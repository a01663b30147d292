//! Generates the NLM v4 and NSM v1 wire types from the XDR in `spec/` (see spec/README.md).

use std::path::PathBuf;

#[allow(dead_code)]
mod limits {
    include!("src/limits.rs");
}
use limits::*;

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../spec");
    // nlm_deps.x first: `netobj` and the name bounds that nlm_prot.x uses.
    let specs = [
        dir.join("nlm_deps.x"),
        dir.join("nlm_prot.x"),
        dir.join("sm_inter.x"),
    ];
    for s in &specs {
        println!("cargo:rerun-if-changed={}", s.display());
    }
    println!("cargo:rerun-if-changed=src/limits.rs");
    let src = xdrgen::Generator::new()
        // Statuses a peer sends that this code does not know are carried, not refused (an NLM
        // server also decodes the _RES messages and statd's replies of other implementations).
        .open_enum("nlm4_stats")
        .open_enum("sm_res")
        // NLM4_TEST's result is `Denied(holder)` or `Other(status)`.
        .variant_name("nlm4_stats", "nlm4_denied", "Denied")
        .variant_name("nlm4_stats", "default", "Other")
        // Cookies and owner handles up to MAX_NETOBJ_SZ; file handles are NFSv3's.
        .bound("netobj", NLM4_MAX_NETOBJ)
        .bound("nlm4_lock.fh", NLM4_FHSIZE)
        .bound("nlm4_share.fh", NLM4_FHSIZE)
        // RFC 1813's LM_MAXSTRLEN, where FreeBSD's .x writes MAXNAMELEN (one more).
        .bound("nlm4_lock.caller_name", NLM4_MAX_CALLER_NAME)
        .bound("nlm4_share.caller_name", NLM4_MAX_CALLER_NAME)
        .proptest(true)
        .generate(&specs)
        .unwrap_or_else(|e| panic!("xdrgen: {e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("nlm_wire.rs");
    std::fs::write(&out, src).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
