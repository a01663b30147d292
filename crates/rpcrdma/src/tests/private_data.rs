use proptest::prelude::*;

use crate::private_data::*;

#[test]
fn size_encoding() {
    assert_eq!(encode_size(1024), 0);
    assert_eq!(encode_size(4096), 3);
    assert_eq!(encode_size(65536), 63);
    assert_eq!(encode_size(256 * 1024), 255);
    assert_eq!(decode_size(0), 1024);
    assert_eq!(decode_size(3), 4096);
    assert_eq!(decode_size(63), 65536);
    assert_eq!(decode_size(255), 256 * 1024);
    // out of range: clamped to the encodable range, and rounded down to KiB
    assert_eq!(encode_size(0), 0);
    assert_eq!(encode_size(1 << 20), 255);
    assert_eq!(encode_size(5000), 3);
}

#[test]
fn ours_is_byte_exact() {
    let ours = InlineConfig::default();
    assert_eq!(
        ours.private_data().encode(),
        [0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3]
    );
    let pd = InlineConfig::new(65536, 1024)
        .with_remote_invalidate(true)
        .private_data();
    assert_eq!(pd.encode(), [0xf6, 0xab, 0x0e, 0x18, 1, 1, 63, 0]);
}

#[test]
fn parse_linux_client_private_data() {
    // The Linux client: version 1, Send With Invalidate accepted, 4 KiB each way, and the
    // rest of the CM's private data area zero-filled.
    let mut raw = vec![0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3];
    raw.resize(56, 0);
    let pd = PrivateData::parse(&raw).unwrap();
    assert_eq!(
        pd,
        PrivateData {
            remote_invalidate: true,
            send_size: 4096,
            recv_size: 4096
        }
    );
    assert_eq!(PrivateData::parse(&pd.encode()), Some(pd));
}

#[test]
fn absent_or_garbage_private_data_means_none() {
    assert_eq!(PrivateData::parse(&[]), None);
    assert_eq!(PrivateData::parse(&[0xf6, 0xab, 0x0e, 0x18, 1, 1, 3]), None);
    assert_eq!(
        PrivateData::parse(&[0xf6, 0xab, 0x0e, 0x19, 1, 1, 3, 3]),
        None
    );
    assert_eq!(
        PrivateData::parse(&[0xf6, 0xab, 0x0e, 0x18, 2, 1, 3, 3]),
        None
    );
    assert_eq!(PrivateData::parse(&[0; 56]), None);
    let n = negotiate(InlineConfig::default(), PrivateData::parse(b"garbage!"));
    assert_eq!(
        n,
        Negotiated {
            send: 1024,
            recv: 1024,
            remote_invalidate: false
        }
    );
}

#[test]
fn negotiation_takes_the_minimum_each_way() {
    let peer = PrivateData {
        remote_invalidate: true,
        send_size: 8192,
        recv_size: 2048,
    };
    let n = negotiate(InlineConfig::default(), Some(peer));
    assert_eq!(
        n,
        Negotiated {
            send: 2048,
            recv: 4096,
            remote_invalidate: true
        }
    );
    let big = PrivateData {
        remote_invalidate: false,
        send_size: 256 * 1024,
        recv_size: 256 * 1024,
    };
    let n = negotiate(InlineConfig::new(1 << 20, 1 << 20), Some(big));
    assert_eq!((n.send, n.recv, n.remote_invalidate), (65536, 65536, false));
    let n = negotiate(InlineConfig::new(16384, 8192), Some(big));
    assert_eq!((n.send, n.recv), (16384, 8192));
}

#[test]
fn config_is_rounded_down_and_clamped() {
    let c = InlineConfig::new(5000, 100_000);
    assert_eq!((c.max_send(), c.max_recv()), (4096, 65536));
    let c = InlineConfig::new(0, 1023);
    assert_eq!((c.max_send(), c.max_recv()), (1024, 1024));
    let c = InlineConfig::default();
    assert_eq!((c.max_send(), c.max_recv()), (4096, 4096));
}

proptest! {
    #[test]
    fn parse_never_panics(v in proptest::collection::vec(any::<u8>(), 0..64)) {
        if let Some(pd) = PrivateData::parse(&v) {
            prop_assert_eq!(&pd.encode()[..4], &v[..4]);
            prop_assert!(pd.send_size >= 1024 && pd.recv_size >= 1024);
        }
    }

    #[test]
    fn encodable_sizes_roundtrip(inv: bool, s: u8, r: u8) {
        let pd = PrivateData { remote_invalidate: inv, send_size: decode_size(s), recv_size: decode_size(r) };
        let e = pd.encode();
        prop_assert_eq!((e[6], e[7]), (s, r));
        prop_assert_eq!(PrivateData::parse(&e), Some(pd));
    }

    #[test]
    fn negotiated_sizes_stay_in_range(send in any::<u32>(), recv in any::<u32>(), s: u8, r: u8) {
        let peer = PrivateData { remote_invalidate: false, send_size: decode_size(s), recv_size: decode_size(r) };
        let n = negotiate(InlineConfig::new(send, recv), Some(peer));
        prop_assert!((1024..=65536).contains(&n.send) && n.send & 1023 == 0);
        prop_assert!((1024..=65536).contains(&n.recv) && n.recv & 1023 == 0);
        prop_assert!(n.send <= peer.recv_size && n.recv <= peer.send_size);
    }
}
