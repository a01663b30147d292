//! The NFSv4 wire types generated from the RFCs' XDR (crates/nfs4wire, spec/*.x): COMPOUND4args,
//! COMPOUND4res and CB_COMPOUND4args decoded from arbitrary bytes, and the flexible files
//! bodies (RFC 8435) carried as opaque data inside them: ff_layoutreturn4 (a client's error
//! and statistics reports, which the MDS decodes), ff_layout4 and ff_device_addr4.
//!
//! Checks: no panic and no allocation beyond the bounds (libFuzzer's -rss_limit); what decodes
//! encodes to as many bytes as it was decoded from, and those bytes decode to the same value.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use nfs4wire::{
    CbCompound4args, Compound4args, Compound4res, FfDeviceAddr4, FfLayout4, FfLayoutreturn4,
};
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
    round_trip::<Compound4args>(&data);
    round_trip::<Compound4res>(&data);
    round_trip::<CbCompound4args>(&data);
    round_trip::<FfLayoutreturn4>(&data);
    round_trip::<FfLayout4>(&data);
    round_trip::<FfDeviceAddr4>(&data);
});
