//! The NLM v4 and NSM v1 wire types generated from Sun's rpcsvc XDR (crates/nlmwire,
//! spec/nlm_prot.x and spec/sm_inter.x): every procedure's argument and result type decoded
//! from arbitrary bytes.
//!
//! Checks: no panic and no allocation beyond the bounds (libFuzzer's -rss_limit); what decodes
//! encodes to as many bytes as it was decoded from, and those bytes decode to the same value (not
//! to the same bytes: the decoder does not insist on zero padding).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nlmwire::*;
use xdr::{Decode, Decoder, Encode, Encoder};

fn round_trip<T: Decode + Encode + PartialEq + std::fmt::Debug>(data: &Bytes) {
    let mut d = Decoder::new(data.clone());
    let Ok(v) = T::decode(&mut d) else {
        return;
    };
    let used = data.len() - d.remaining();
    let mut e = Encoder::new();
    v.encode(&mut e);
    let again = e.finish().to_bytes();
    assert_eq!(again.len(), used, "re-encoded length");
    let mut d = Decoder::new(again);
    assert_eq!(
        T::decode(&mut d).ok().as_ref(),
        Some(&v),
        "re-decoded value"
    );
    assert_eq!(d.remaining(), 0);
}

fuzz_target!(|data: &[u8]| {
    let data = Bytes::copy_from_slice(data);
    // NLM v4 arguments (the _MSG procedures take the same ones; FREE_ALL takes nlm4_notify).
    round_trip::<Nlm4Testargs>(&data);
    round_trip::<Nlm4Lockargs>(&data);
    round_trip::<Nlm4Cancargs>(&data);
    round_trip::<Nlm4Unlockargs>(&data);
    round_trip::<Nlm4Shareargs>(&data);
    round_trip::<Nlm4Notify>(&data);
    // NLM v4 results (and the _RES procedures' arguments).
    round_trip::<Nlm4Testres>(&data);
    round_trip::<Nlm4Res>(&data);
    round_trip::<Nlm4Shareres>(&data);
    // NSM arguments, results and the status callback.
    round_trip::<SmName>(&data);
    round_trip::<Mon>(&data);
    round_trip::<MonId>(&data);
    round_trip::<MyId>(&data);
    round_trip::<StatChge>(&data);
    round_trip::<SmStatRes>(&data);
    round_trip::<SmStat>(&data);
    round_trip::<SmStatus>(&data);
});
