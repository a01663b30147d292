//! RFC 8797 CM private data: `rpcrdma::PrivateData::parse` and the inline threshold
//! negotiation.
//!
//! Input: 8 bytes of our configured send/receive sizes, then the peer's private data.
//! Checks: no panic; parsed data re-encodes to bytes that parse to the same value; the
//! negotiated sizes never exceed ours nor the peer's and stay within 1 KiB..64 KiB.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcrdma::private_data::{decode_size, encode_size, MAX_INLINE, MIN_INLINE};
use rpcrdma::{negotiate, InlineConfig, PrivateData};

fuzz_target!(|data: &[u8]| {
    let (ours, peer) = if data.len() >= 8 {
        let s = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        let r = u32::from_be_bytes([data[4], data[5], data[6], data[7]]);
        (
            InlineConfig::new(s, r).with_remote_invalidate(s & 1 == 1),
            &data[8..],
        )
    } else {
        (InlineConfig::default(), data)
    };
    assert!((MIN_INLINE..=MAX_INLINE).contains(&ours.max_send()));
    assert!((MIN_INLINE..=MAX_INLINE).contains(&ours.max_recv()));
    assert_eq!(ours.max_send() % 1024, 0);
    let mine = ours.private_data();
    assert_eq!(
        PrivateData::parse(&mine.encode()),
        Some(mine),
        "our private data round-trips"
    );

    let parsed = PrivateData::parse(peer);
    if let Some(pd) = parsed {
        assert!(peer.len() >= 8);
        assert_eq!(
            PrivateData::parse(&pd.encode()),
            Some(pd),
            "peer data round-trips"
        );
        assert_eq!(&pd.encode()[..5], &peer[..5]);
    }
    let n = negotiate(ours, parsed);
    let (peer_send, peer_recv) = parsed.map_or((1024, 1024), |p| (p.send_size, p.recv_size));
    assert!(n.send <= ours.max_send() && n.send <= peer_recv);
    assert!(n.recv <= ours.max_recv() && n.recv <= peer_send);
    assert!(n.send >= MIN_INLINE && n.recv >= MIN_INLINE);
    for &b in peer.iter().take(4) {
        assert_eq!(encode_size(decode_size(b)), b, "size byte round-trips");
    }
});
