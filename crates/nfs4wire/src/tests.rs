//! Round trips, a hand-built COMPOUND, rejection of bad input and zero-copy decoding.

use bytes::Bytes;
use proptest::prelude::*;
use xdr::{Decode, Decoder, Encode, Encoder, XdrError};

use super::*;

fn encode<T: Encode>(v: &T) -> Bytes {
    let mut e = Encoder::new();
    v.encode(&mut e);
    e.finish().to_bytes()
}

/// Decodes a whole buffer, requiring that nothing is left over.
fn decode<T: Decode>(b: Bytes) -> Result<T, XdrError> {
    let mut d = Decoder::new(b);
    let v = T::decode(&mut d)?;
    assert_eq!(d.remaining(), 0, "bytes left after decoding");
    Ok(v)
}

/// Big-endian words, the way XDR puts 32-bit items on the wire.
fn words(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_be_bytes()).collect()
}

fn round_trip<T: Encode + Decode + PartialEq + std::fmt::Debug>(v: T) -> Result<(), TestCaseError> {
    let b = encode(&v);
    prop_assert_eq!(b.len() % 4, 0);
    prop_assert_eq!(decode::<T>(b), Ok(v));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn open4args_round_trips(v: Open4args) { round_trip(v)?; }

    #[test]
    fn open4res_round_trips(v: Open4res) { round_trip(v)?; }

    #[test]
    fn sequence4args_round_trips(v: Sequence4args) { round_trip(v)?; }

    #[test]
    fn compound4args_round_trips(v: Compound4args) { round_trip(v)?; }

    #[test]
    fn compound4res_round_trips(v: Compound4res) { round_trip(v)?; }

    #[test]
    fn read4res_round_trips(v: Read4res) { round_trip(v)?; }

    #[test]
    fn write4args_round_trips(v: Write4args) { round_trip(v)?; }

    #[test]
    fn fattr4_round_trips(v: Fattr4) { round_trip(v)?; }

    #[test]
    fn open_claim4_round_trips(v: OpenClaim4) { round_trip(v)?; }

    #[test]
    fn createhow4_round_trips(v: Createhow4) { round_trip(v)?; }

    #[test]
    fn stateid4_round_trips(v: Stateid4) { round_trip(v)?; }

    #[test]
    fn nfs_argop4_round_trips(v: NfsArgop4) { round_trip(v)?; }

    #[test]
    fn nfs_resop4_round_trips(v: NfsResop4) { round_trip(v)?; }

    #[test]
    fn readdir4res_round_trips(v: Readdir4res) { round_trip(v)?; }

    #[test]
    fn exchange_id_and_create_session_round_trip(a: ExchangeId4args, b: CreateSession4args, c: ExchangeId4res) {
        round_trip(a)?;
        round_trip(b)?;
        round_trip(c)?;
    }

    #[test]
    fn callback_compound_round_trips(a: CbCompound4args, b: CbCompound4res) {
        round_trip(a)?;
        round_trip(b)?;
    }

    #[test]
    fn garbage_never_panics(v in proptest::collection::vec(any::<u8>(), 0..512)) {
        let b = Bytes::from(v);
        let _ = Compound4args::decode(&mut Decoder::new(b.clone()));
        let _ = Compound4res::decode(&mut Decoder::new(b.clone()));
        let _ = CbCompound4args::decode(&mut Decoder::new(b));
    }
}

/// COMPOUND { tag "test", minorversion 1, [PUTROOTFH, GETATTR {type, size, fileid}] }.
fn putrootfh_getattr() -> Vec<u8> {
    let mut w = Vec::new();
    w.extend(words(&[4]));
    w.extend(b"test");
    w.extend(words(&[
        1,                   // minorversion
        2,                   // two operations
        24,                  // OP_PUTROOTFH (no arguments)
        9,                   // OP_GETATTR
        2,                   // attr_request: a bitmap4 of two words
        (1 << 1) | (1 << 4), // FATTR4_TYPE, FATTR4_SIZE
        1 << (55 - 32),      // FATTR4_MOUNTED_ON_FILEID
    ]));
    w
}

#[test]
fn hand_built_compound_decodes_field_by_field() {
    let wire = Bytes::from(putrootfh_getattr());
    let base = wire.as_ptr() as usize;
    let c: Compound4args = decode(wire.clone()).unwrap();
    assert_eq!(&c.tag[..], b"test");
    assert_eq!(
        c.tag.as_ptr() as usize,
        base + 4,
        "the tag is a slice of the input"
    );
    assert_eq!(c.minorversion, 1);
    assert_eq!(c.argarray.len(), 2);
    assert_eq!(c.argarray[0], NfsArgop4::OpPutrootfh);
    assert_eq!(c.argarray[0].discriminant(), NfsOpnum4::OP_PUTROOTFH);
    match &c.argarray[1] {
        NfsArgop4::OpGetattr(Getattr4args { attr_request }) => {
            assert_eq!(
                attr_request,
                &vec![
                    (1 << FATTR4_TYPE) | (1 << FATTR4_SIZE),
                    1 << (FATTR4_MOUNTED_ON_FILEID - 32)
                ]
            );
        }
        other => panic!("expected GETATTR, got {other:?}"),
    }
    assert_eq!(c.argarray[1].discriminant(), NfsOpnum4::OP_GETATTR);
    // And it encodes back to the same bytes.
    assert_eq!(encode(&c), wire);
}

#[test]
fn a_length_over_its_xdr_bound_is_rejected() {
    // PUTFH with a 129-byte file handle: nfs_fh4 is opaque<NFS4_FHSIZE> (128).
    let mut w = words(&[0, 0, 1, 22, 129]);
    w.extend(vec![0u8; 132]);
    assert_eq!(
        decode::<Compound4args>(Bytes::from(w)),
        Err(XdrError::TooLong { len: 129, max: 128 })
    );
    // An operation count over the 1024 elements allowed for an unbounded array.
    assert_eq!(
        decode::<Compound4args>(Bytes::from(words(&[0, 0, 5000]))),
        Err(XdrError::TooLong {
            len: 5000,
            max: 1024
        })
    );
    // A component over the 4096 bytes the build script allows.
    let mut w = words(&[0, 0, 1, 15, 5000]);
    w.extend(vec![b'a'; 5000]);
    assert_eq!(
        decode::<Compound4args>(Bytes::from(w)),
        Err(XdrError::TooLong {
            len: 5000,
            max: 4096
        })
    );
}

#[test]
fn a_length_over_the_bytes_left_is_rejected_before_allocating() {
    // A tag said to be 100 bytes long, with 8 bytes after it.
    assert_eq!(
        decode::<Compound4args>(Bytes::from(words(&[100, 0, 0]))),
        Err(XdrError::Truncated {
            needed: 100,
            remaining: 8
        })
    );
    // 1000 operations (at least 4 bytes each) with nothing after the count.
    assert_eq!(
        decode::<Compound4args>(Bytes::from(words(&[0, 0, 1000]))),
        Err(XdrError::Truncated {
            needed: 4000,
            remaining: 0
        })
    );
}

#[test]
fn an_unknown_union_arm_is_rejected() {
    // Operation 9999 is not an arm of nfs_argop4 (which has no default arm), although
    // nfs_opnum4 itself is open and carries the number.
    assert_eq!(
        decode::<Compound4args>(Bytes::from(words(&[0, 0, 1, 9999]))),
        Err(XdrError::BadDiscriminant(9999))
    );
    assert_eq!(
        decode::<NfsOpnum4>(Bytes::from(words(&[9999]))),
        Ok(NfsOpnum4(9999))
    );
    // createmode4 is a closed enum: 7 is neither an arm nor a value.
    assert_eq!(
        decode::<Createhow4>(Bytes::from(words(&[7]))),
        Err(XdrError::BadDiscriminant(7))
    );
    // A bool that is neither 0 nor 1.
    assert_eq!(
        decode::<Locker4>(Bytes::from(words(&[2]))),
        Err(XdrError::BadBool(2))
    );
}

#[test]
fn unknown_status_values_are_carried() {
    let r = Compound4res {
        status: Nfsstat4(77777),
        tag: Bytes::new(),
        resarray: vec![],
    };
    let back: Compound4res = decode(encode(&r)).unwrap();
    assert_eq!(back.status, Nfsstat4(77777));
    assert_eq!(back.status.name(), None);
    assert_eq!(format!("{:?}", Nfsstat4::NFS4ERR_STALE), "NFS4ERR_STALE");
    // OPEN4res's default arm keeps whichever error status came.
    let e: Open4res = decode(Bytes::from(words(&[10008]))).unwrap();
    assert_eq!(e, Open4res::Default(Nfsstat4::NFS4ERR_DELAY));
    assert_eq!(e.discriminant(), Nfsstat4::NFS4ERR_DELAY);
}

#[test]
fn opaque_data_is_a_slice_of_the_input_buffer() {
    let w = Write4args {
        stateid: Stateid4 {
            seqid: 1,
            other: [7; 12],
        },
        offset: 4096,
        stable: StableHow4::FileSync4,
        data: Bytes::from_static(b"hello, world"),
    };
    let wire = encode(&w);
    let range = wire.as_ptr() as usize..wire.as_ptr() as usize + wire.len();
    let back: Write4args = decode(wire.clone()).unwrap();
    assert_eq!(back, w);
    let p = back.data.as_ptr() as usize;
    assert!(range.contains(&p) && range.contains(&(p + back.data.len() - 1)));
    // The data starts after the stateid (16), offset (8), stable (4) and length (4).
    assert_eq!(p, wire.as_ptr() as usize + 32);
}

#[test]
fn read_data_is_encoded_as_a_separate_payload_segment() {
    let r = Read4res::Nfs4Ok(Read4resok {
        eof: true,
        data: xdr::Payload::Bytes(Bytes::from_static(b"file data")),
    });
    let mut e = Encoder::new();
    r.encode(&mut e);
    let reply = e.finish();
    assert!(reply
        .segments
        .iter()
        .any(|s| *s == xdr::Segment::Bulk(Bytes::from_static(b"file data"))));
    assert_eq!(decode::<Read4res>(reply.to_bytes()), Ok(r));
}

/// READ_PLUS data is not DDP-eligible (RFC 8267): it must never be a segment an RPC-over-RDMA
/// transport would pair with a Write chunk, though a long one is still not copied.
#[test]
fn read_plus_data_is_part_of_the_body_not_a_bulk_segment() {
    let data = Bytes::from(vec![9u8; 8193]);
    let r = ReadPlusRes4 {
        rpr_eof: false,
        rpr_contents: vec![ReadPlusContent::Nfs4ContentData(Data4 {
            d_offset: 4096,
            d_data: xdr::Payload::Bytes(data.clone()),
        })],
    };
    let mut e = Encoder::new();
    r.encode(&mut e);
    let reply = e.finish();
    assert!(reply
        .segments
        .iter()
        .all(|s| matches!(s, xdr::Segment::Inline(_) | xdr::Segment::BodyPages(_))));
    assert!(reply
        .segments
        .iter()
        .any(|s| s.bytes().is_some_and(|b| b.as_ptr() == data.as_ptr())));
    assert_eq!(reply.wire_len() % 4, 0);
    assert_eq!(decode::<ReadPlusRes4>(reply.to_bytes()), Ok(r));
}

#[test]
fn write_data_is_encoded_as_a_separate_bulk_segment() {
    let data = Bytes::from(vec![5u8; 4097]);
    let args = Compound4args {
        tag: Bytes::new(),
        minorversion: 1,
        argarray: vec![
            NfsArgop4::OpPutfh(Putfh4args {
                object: Bytes::from_static(b"fh"),
            }),
            NfsArgop4::OpWrite(Write4args {
                stateid: Stateid4 {
                    seqid: 1,
                    other: [0; 12],
                },
                offset: 0,
                stable: StableHow4::Unstable4,
                data: data.clone(),
            }),
        ],
    };
    let mut e = Encoder::new();
    args.encode(&mut e);
    let reply = e.finish();
    // The data is the caller's buffer itself (no copy), padded on the wire.
    let bulk: Vec<_> = reply
        .segments
        .iter()
        .filter_map(|s| match s {
            xdr::Segment::Bulk(b) => Some(b),
            _ => None,
        })
        .collect();
    assert_eq!(bulk.len(), 1);
    assert_eq!(bulk[0].as_ptr(), data.as_ptr());
    assert_eq!(reply.wire_len() % 4, 0);
    assert_eq!(decode::<Compound4args>(reply.to_bytes()), Ok(args));
}

fn entries(n: u64) -> Vec<Entry4> {
    let attrs = Fattr4 {
        attrmask: vec![],
        attr_vals: Bytes::new(),
    };
    (1..=n)
        .map(|cookie| Entry4 {
            cookie,
            name: Bytes::from_static(b"f"),
            attrs: attrs.clone(),
        })
        .collect()
}

#[test]
fn a_long_readdir_list_is_a_vec_with_the_list_encoding() {
    // 65536 entries: the most the build script allows, as a Vec (no node per entry)
    let res = Readdir4res::Nfs4Ok(Readdir4resok {
        cookieverf: [1; 8],
        reply: Dirlist4 {
            entries: entries(65536),
            eof: true,
        },
    });
    let wire = encode(&res);
    // status, verifier, then per entry: TRUE, cookie, name "f", empty fattr4; FALSE, eof
    assert_eq!(wire.len(), 4 + 8 + 65536 * (4 + 8 + 8 + 8) + 4 + 4);
    assert_eq!(&wire[12..16], &[0, 0, 0, 1]);
    assert_eq!(&wire[wire.len() - 8..], &[0, 0, 0, 0, 0, 0, 0, 1]);
    let back: Readdir4res = decode(wire).unwrap();
    assert_eq!(back, res);
}

#[test]
fn a_readdir_list_over_its_bound_is_rejected() {
    // 65537 entries, each: more-flag, cookie, name "f", empty fattr4; then the end and eof
    let mut w = Vec::new();
    for i in 0..65537u32 {
        w.extend(words(&[1, 0, i, 1]));
        w.extend(b"f\0\0\0");
        w.extend(words(&[0, 0]));
    }
    w.extend(words(&[0, 1]));
    assert_eq!(
        decode::<Dirlist4>(Bytes::from(w)),
        Err(XdrError::TooLong {
            len: 65537,
            max: 65536
        })
    );
}

#[test]
fn rfc8276_operations_and_errors_are_merged_in() {
    assert_eq!(NfsOpnum4::OP_GETXATTR, NfsOpnum4(72));
    assert_eq!(NfsOpnum4::OP_REMOVEXATTR, NfsOpnum4(75));
    assert_eq!(Nfsstat4::NFS4ERR_NOXATTR, Nfsstat4(10095));
    assert_eq!(Nfsstat4::NFS4ERR_XATTR2BIG, Nfsstat4(10096));
    let op = NfsArgop4::OpSetxattr(Setxattr4args {
        sxa_option: SetxattrOption4::Setxattr4Create,
        sxa_key: Bytes::from_static(b"user.k"),
        sxa_value: Bytes::from_static(b"v"),
    });
    let wire = encode(&op);
    assert_eq!(&wire[..8], &words(&[73, 1])[..]);
    assert_eq!(decode::<NfsArgop4>(wire), Ok(op));
    assert_eq!(FATTR4_XATTR_SUPPORT, 82);
    assert_eq!(ACCESS4_XAREAD, 0x40);
}

#[test]
fn constants_and_program_numbers() {
    assert_eq!(NFS4_FHSIZE, 128);
    assert_eq!(NFS4_UINT64_MAX, u64::MAX);
    assert_eq!(NFS4_PROGRAM, 100003);
    assert_eq!(NFS_V4, 4);
    assert_eq!(NFSPROC4_COMPOUND, 1);
    assert_eq!(NFS4_CALLBACK, 0x4000_0000);
    assert_eq!(CB_COMPOUND, 1);
    assert_eq!((AUTH_NONE, AUTH_SYS, RPCSEC_GSS), (0, 1, 6));
    assert_eq!(NfsFtype4::from_i32(2), Some(NfsFtype4::Nf4dir));
}

/// RFC 8435's flexible files layout as the Linux client decodes it
/// (fs/nfs/flexfilelayout/flexfilelayout.c:ff_layout_alloc_lseg): the stripe unit, the
/// mirrors, each with its data servers (device id, efficiency, stateid, handles by version,
/// user and group as decimal strings), the flags and the statistics hint.
#[test]
fn ff_layout4_is_laid_out_as_rfc_8435_says() {
    let ds = FfDataServer4 {
        ffds_deviceid: [7; 16],
        ffds_efficiency: 1,
        ffds_stateid: Stateid4 {
            seqid: 0,
            other: [0; 12],
        },
        ffds_fh_vers: vec![Bytes::from_static(&[0xaa; 8])],
        ffds_user: Bytes::from_static(b"1000"),
        ffds_group: Bytes::from_static(b"100"),
    };
    let layout = FfLayout4 {
        ffl_stripe_unit: 0,
        ffl_mirrors: vec![FfMirror4 {
            ffm_data_servers: vec![ds],
        }],
        ffl_flags: FF_FLAGS_NO_LAYOUTCOMMIT,
        ffl_stats_collect_hint: 0,
    };
    let mut want = words(&[0, 0, 1, 1]); // stripe unit (u64), 1 mirror, 1 data server
    want.extend([7u8; 16]); // device id
    want.extend(words(&[1, 0])); // efficiency, stateid seqid
    want.extend([0u8; 12]); // stateid other
    want.extend(words(&[1, 8])); // one handle of 8 bytes
    want.extend([0xaa; 8]);
    want.extend(words(&[4]));
    want.extend(b"1000");
    want.extend(words(&[3]));
    want.extend(b"100\0");
    want.extend(words(&[1, 0])); // flags, stats hint
    let b = encode(&layout);
    assert_eq!(&b[..], &want[..]);
    assert_eq!(decode::<FfLayout4>(b), Ok(layout));
}

#[test]
fn the_flexible_files_layout_type_and_unknown_ones_decode() {
    assert_eq!(Layouttype4::LAYOUT4_FLEX_FILES, Layouttype4(4));
    assert_eq!(
        decode::<Layouttype4>(Bytes::from(words(&[4]))),
        Ok(Layouttype4::LAYOUT4_FLEX_FILES)
    );
    // a layout type nobody defined is carried, so that the server can answer
    // NFS4ERR_UNKNOWN_LAYOUTTYPE
    let other = decode::<Layouttype4>(Bytes::from(words(&[99])));
    assert_eq!(other, Ok(Layouttype4(99)));
    assert_eq!(encode(&Layouttype4(99))[..], words(&[99])[..]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn flexfiles_types_round_trip(
        a: FfLayout4,
        b: FfDeviceAddr4,
        c: FfLayoutreturn4,
        d: FfLayouthint4,
    ) {
        round_trip(a)?;
        round_trip(b)?;
        round_trip(c)?;
        round_trip(d)?;
    }
}
