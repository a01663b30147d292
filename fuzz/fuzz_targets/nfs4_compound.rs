//! NFSv4 COMPOUND arguments through the whole dispatcher (program 100003, version 4,
//! procedure 1) over the scratch export of fuzz/harness/src/env.rs.
//!
//! Input: one byte choosing the credential (0 AUTH_SYS root (squashed), 1 uid 1000, 2
//! AUTH_NONE, 3 uid 65534), then up to 16 COMPOUND4args bodies (tag, minorversion, operations),
//! each behind a 4-byte length word; each is wrapped in a call header and dispatched in turn
//! against fresh NFSv4 state (so a seed can run EXCHANGE_ID, CREATE_SESSION, then SEQUENCE
//! with the ids they returned). Handle markers (`@FH@ROOT`...) are substituted as in
//! nfs3_dispatch.
//!
//! Checks: no panic, overflow, hang or runaway allocation; replies are whole XDR words and echo
//! the xid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    harness::run_compounds(data);
});
